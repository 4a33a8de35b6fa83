"""Requests and answers of the fake control plane checked against botocore's service models.

The fake must refuse what SageMaker, EC2 or CloudFormation would refuse and answer only
what their models define, or the handler tests prove nothing about the real services.
botocore's client-side validation checks types and required members only; this checks
what the model states: required and unknown members, string lengths, enums and patterns,
numeric ranges, list sizes. SageMaker speaks JSON (timestamps as epoch seconds); EC2's
query protocol flattens lists (`ZoneName.1`, `Filter.1.Value.1`), checked by member
names; CloudFormation's query protocol (`Stacks.member.1`) is read back into members and
checked like JSON. S3 (REST-XML) is routed by method, path template and query as the
model declares them (`rest_request`), and XML answers are written from the output shape
(`xml_members`, `header_members`) so their element names are the ones botocore parses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from functools import cache
from typing import Any
from urllib.parse import unquote
from xml.sax.saxutils import escape

import botocore.session
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape

# Smithy patterns may use Unicode classes that Python's `re` lacks; widen them to the
# nearest class `re` has (the fake may accept a little more than the service, never less).
# \p{Z} (separators) is spelled out: `\s` would also let tabs and newlines through. The
# models use it inside [...] only.
_UNICODE_CLASSES = {
    r"\p{L}": r"\w",
    r"\p{N}": r"\w",
    r"\p{Z}": " \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000",
}


@cache
def service_model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


@cache
def _pattern(pattern: str) -> re.Pattern[str]:
    for unicode_class, python_class in _UNICODE_CLASSES.items():
        pattern = pattern.replace(unicode_class, python_class)
    return re.compile(pattern)


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def json_input_errors(service: str, operation: str, params: Mapping[str, Any]) -> list[str]:
    """Constraint violations of a JSON request, worded like the service's ValidationException."""
    shape = service_model(service).operation_model(operation).input_shape
    errors: list[str] = []
    if shape is not None:
        _check(shape, params, "", errors)
    return errors


def json_output_errors(service: str, operation: str, payload: Mapping[str, Any]) -> list[str]:
    """Members of an answer the output shape does not define or constrains otherwise."""
    shape = service_model(service).operation_model(operation).output_shape
    errors: list[str] = []
    if shape is not None:
        _check(shape, payload, "", errors)
    return errors


def validation_message(errors: list[str]) -> str:
    count = len(errors)
    noun = "error" if count == 1 else "errors"
    return f"{count} validation {noun} detected: {'; '.join(errors)}"


def _violation(value: Any, path: str, constraint: str) -> str:
    return f"Value {value!r} at '{path}' failed to satisfy constraint: Member must {constraint}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# Scalar kinds: what a JSON value of that kind must be, and the constraint named if not.
_SCALARS: dict[str, tuple[Any, str]] = {
    "integer": (lambda v: isinstance(v, int) and not isinstance(v, bool), "be a whole number"),
    "long": (lambda v: isinstance(v, int) and not isinstance(v, bool), "be a whole number"),
    "float": (_is_number, "be a number"),
    "double": (_is_number, "be a number"),
    "boolean": (lambda v: isinstance(v, bool), "be a boolean"),
    "timestamp": (_is_number, "be a timestamp in epoch seconds"),
    "blob": (lambda v: isinstance(v, str), "be base64 text"),
}


def _check(shape: Shape, value: Any, path: str, errors: list[str]) -> None:
    kind = shape.type_name
    if kind == "structure":
        _check_structure(shape, value, path, errors)
    elif kind == "list":
        _check_list(shape, value, path, errors)
    elif kind == "map":
        _check_map(shape, value, path, errors)
    elif kind == "string":
        _check_string(shape, value, path, errors)
    elif kind in _SCALARS:
        fits, constraint = _SCALARS[kind]
        if not fits(value):
            errors.append(_violation(value, path, constraint))
        elif kind in ("integer", "long"):
            _check_range(shape, value, path, errors)


def _check_structure(shape: Shape, value: Any, path: str, errors: list[str]) -> None:
    assert isinstance(shape, StructureShape)
    if not isinstance(value, Mapping):
        errors.append(_violation(value, path, "be an object"))
        return
    prefix = f"{path}." if path else ""
    for name in shape.required_members:
        if name not in value:
            errors.append(_violation(None, prefix + _camel(name), "not be null"))
    for name, member_value in value.items():
        member = shape.members.get(name)
        if member is None:
            errors.append(f"'{prefix}{_camel(name)}' is not a member of {shape.name}")
        else:
            _check(member, member_value, prefix + _camel(name), errors)


def _check_list(shape: Shape, value: Any, path: str, errors: list[str]) -> None:
    assert isinstance(shape, ListShape)
    if not isinstance(value, list):
        errors.append(_violation(value, path, "be a list"))
        return
    _check_size(shape, len(value), value, path, errors)
    for index, item in enumerate(value, start=1):
        _check(shape.member, item, f"{path}.{index}.member", errors)


def _check_map(shape: Shape, value: Any, path: str, errors: list[str]) -> None:
    assert isinstance(shape, MapShape)
    if not isinstance(value, Mapping):
        errors.append(_violation(value, path, "be an object"))
        return
    _check_size(shape, len(value), value, path, errors)
    for key, item in value.items():
        _check(shape.key, key, f"{path}.key", errors)
        _check(shape.value, item, f"{path}.{key}", errors)


def _check_string(shape: Shape, value: Any, path: str, errors: list[str]) -> None:
    if not isinstance(value, str):
        errors.append(_violation(value, path, "be a string"))
        return
    enum = shape.metadata.get("enum")
    if enum and value not in enum:
        errors.append(_violation(value, path, f"satisfy enum value set: [{', '.join(enum)}]"))
    _check_size(shape, len(value), value, path, errors)
    pattern = shape.metadata.get("pattern")
    if pattern and not _pattern(pattern).fullmatch(value):
        errors.append(_violation(value, path, f"satisfy regular expression pattern: {pattern}"))


def _check_size(shape: Shape, size: int, value: Any, path: str, errors: list[str]) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and size < low:
        errors.append(_violation(value, path, f"have length greater than or equal to {low}"))
    if high is not None and size > high:
        errors.append(_violation(value, path, f"have length less than or equal to {high}"))


def _check_range(shape: Shape, value: int, path: str, errors: list[str]) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and value < low:
        errors.append(_violation(value, path, f"have value greater than or equal to {low}"))
    if high is not None and value > high:
        errors.append(_violation(value, path, f"have value less than or equal to {high}"))


# --- EC2 query protocol -----------------------------------------------------------------


def _ec2_name(name: str, member: Shape) -> str:
    """The wire name botocore's EC2 serializer gives a member."""
    serialization = member.serialization
    if serialization.get("queryName"):
        return str(serialization["queryName"])
    if serialization.get("name"):
        wire = str(serialization["name"])
        return wire[:1].upper() + wire[1:]
    return name


def ec2_input_errors(operation: str, params: Mapping[str, str]) -> list[str]:
    """Unknown parameters and malformed values of an EC2 query request."""
    shape = service_model("ec2").operation_model(operation).input_shape
    errors: list[str] = []
    for key, value in params.items():
        error = _ec2_param_error(shape, key.split("."), value) if shape is not None else key
        if error is not None:
            errors.append(error.replace("\0", key))
    return errors


def _ec2_param_error(shape: Shape, tokens: list[str], value: str) -> str | None:
    """None when `tokens` name a leaf of `shape` and `value` fits it ("\0" is the key)."""
    while tokens:
        if isinstance(shape, StructureShape):
            wire = {_ec2_name(n, m): m for n, m in shape.members.items()}
            member = wire.get(tokens[0])
            if member is None:
                return "The parameter \0 is not recognized"
            shape, tokens = member, tokens[1:]
        elif isinstance(shape, ListShape):
            if not tokens[0].isdigit() or int(tokens[0]) < 1:
                return "The parameter \0 is not recognized"
            shape, tokens = shape.member, tokens[1:]
        else:
            return "The parameter \0 is not recognized"
    if shape.type_name in ("structure", "list", "map"):
        return "The parameter \0 needs a member or an index"
    if shape.type_name == "boolean" and value not in ("true", "false"):
        return f"Invalid value {value!r} for \0: a boolean is true or false"
    if shape.type_name in ("integer", "long") and not value.lstrip("-").isdigit():
        return f"Invalid value {value!r} for \0: a whole number is expected"
    enum = shape.metadata.get("enum")
    if enum and value not in enum:
        return f"Invalid value {value!r} for \0: one of {', '.join(enum)} is expected"
    return None


# --- query protocol (CloudFormation) ----------------------------------------------------


def query_input(service: str, operation: str, params: Mapping[str, str]) -> dict[str, Any]:
    """A query request's flat parameters as the member structure the service reads.

    Lists arrive as `Name.member.N` (`Name.N` when flattened), structures as `Name.Member`.
    A parameter the input shape does not define is kept under its wire name, so
    `query_input_errors` names it.
    """
    shape = service_model(service).operation_model(operation).input_shape
    tree: dict[str, Any] = {}
    for key, value in sorted(params.items()):
        if shape is None or not _query_place(shape, key.split("."), value, tree):
            tree[key] = value
    members: dict[str, Any] = _query_lists(tree)
    return members


def query_input_errors(service: str, operation: str, params: Mapping[str, str]) -> list[str]:
    """Unknown parameters and constraint violations of a query request, worded as
    the service words a ValidationError ("Value '' at 'nextToken' failed to ...")."""
    shape = service_model(service).operation_model(operation).input_shape
    errors: list[str] = []
    if shape is not None:
        _check(shape, query_input(service, operation, params), "", errors)
    return errors


def _query_place(shape: Shape, tokens: list[str], value: str, into: dict[str, Any]) -> bool:
    """Put `value` at `tokens` of `into` (a structure's dict); False when `shape` has no
    such member. List items are collected in dicts keyed by index (`_query_lists`)."""
    assert isinstance(shape, StructureShape)
    wire = {str(m.serialization.get("name", n)): n for n, m in shape.members.items()}
    name = wire.get(tokens[0])
    if name is None:
        return False
    member, rest = shape.members[name], tokens[1:]
    if isinstance(member, ListShape):
        if not member.serialization.get("flattened"):
            if not rest or rest[0] != "member":
                return False
            rest = rest[1:]
        if not rest or not rest[0].isdigit():
            return False
        items = into.setdefault(name, {})
        if not isinstance(items, dict):
            return False
        index, rest = int(rest[0]), rest[1:]
        if not rest:
            items[index] = _query_scalar(member.member, value)
            return True
        if not isinstance(member.member, StructureShape):
            return False
        return _query_place(member.member, rest, value, items.setdefault(index, {}))
    if isinstance(member, StructureShape):
        return bool(rest) and _query_place(member, rest, value, into.setdefault(name, {}))
    if rest:
        return False
    into[name] = _query_scalar(member, value)
    return True


def _query_lists(tree: Any) -> Any:
    if isinstance(tree, dict) and tree and all(isinstance(k, int) for k in tree):
        return [_query_lists(tree[k]) for k in sorted(tree)]
    if isinstance(tree, dict):
        return {k: _query_lists(v) for k, v in tree.items()}
    return tree


def _query_scalar(shape: Shape, value: str) -> Any:
    """The typed value of a query string (left as text when it does not parse, so the
    constraint check names it)."""
    kind = shape.type_name
    if kind in ("integer", "long") and value.lstrip("-").isdigit():
        return int(value)
    if kind in ("float", "double"):
        try:
            return float(value)
        except ValueError:
            return value
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    if kind == "timestamp":
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return value
    return value


# --- REST-XML protocol (S3) -------------------------------------------------------------


@dataclass(frozen=True)
class RestRequest:
    """A REST request resolved against the model: the operation and its members."""

    operation: str
    params: dict[str, Any]


@cache
def _rest_routes(
    service: str,
) -> tuple[tuple[str, re.Pattern[str], tuple[tuple[str, str], ...], str], ...]:
    """(method, path pattern, static query, operation) for every operation of the model."""
    model = service_model(service)
    routes = []
    for name in model.operation_names:
        http = model.operation_model(name).http
        path, _, query = str(http["requestUri"]).partition("?")
        pattern = re.sub(
            r"\\\{(\w+)(\\\+)?\\\}",
            lambda m: f"(?P<{m.group(1)}>.+)" if m.group(2) else f"(?P<{m.group(1)}>[^/]+)",
            re.escape(path),
        )
        static = tuple(
            (key, value) for key, _, value in (p.partition("=") for p in query.split("&") if p)
        )
        routes.append((str(http["method"]), re.compile(pattern), static, name))
    return tuple(routes)


def rest_request(
    service: str,
    method: str,
    path: str,
    query: Sequence[tuple[str, str]],
    headers: Mapping[str, str],
) -> RestRequest | None:
    """The operation a REST request calls, and its members by name; None when no
    operation, or more than one, fits.

    An operation fits when the method and path template match, its static query
    (`?list-type=2`) is present and its required query members too (GetObject and
    ListParts share GET /{Bucket}/{Key+}; ListParts requires uploadId). The most
    specific fit wins, as the service routes `?acl` to GetObjectAcl, not GetObject.
    """
    model = service_model(service)
    sent = dict(query)
    fits: list[tuple[int, str, dict[str, str]]] = []
    for route_method, pattern, static, name in _rest_routes(service):
        match = pattern.fullmatch(path)
        if route_method != method or match is None:
            continue
        if any(key not in sent or (value and sent[key] != value) for key, value in static):
            continue
        shape = model.operation_model(name).input_shape
        required = [] if shape is None else shape.required_members
        members = {} if shape is None else shape.members
        lowered = {k.lower() for k in headers}
        if any(
            members[r].serialization.get("location") == "querystring"
            and members[r].serialization.get("name") not in sent
            for r in required
        ):
            continue
        # Required header members route too: PUT /{Bucket}/{Key+} is CopyObject only with
        # x-amz-copy-source, else PutObject (both in botocore's S3 model).
        if any(
            members[r].serialization.get("location") == "header"
            and str(members[r].serialization.get("name", r)).lower() not in lowered
            for r in required
        ):
            continue
        labels = {k: unquote(v) for k, v in match.groupdict().items()}
        fits.append((len(static), name, labels))
    if not fits:
        return None
    fits.sort(key=lambda fit: -fit[0])
    if len(fits) > 1 and fits[0][0] == fits[1][0]:
        return None
    _, name, labels = fits[0]
    return RestRequest(
        name, _rest_params(model.operation_model(name).input_shape, labels, sent, headers)
    )


def _rest_params(
    shape: Shape | None,
    labels: Mapping[str, str],
    query: Mapping[str, str],
    headers: Mapping[str, str],
) -> dict[str, Any]:
    if not isinstance(shape, StructureShape):
        return {}
    lowered = {k.lower(): v for k, v in headers.items()}
    params: dict[str, Any] = {}
    for name, member in shape.members.items():
        location = member.serialization.get("location")
        wire = str(member.serialization.get("name", name))
        if location == "uri" and wire in labels:
            params[name] = labels[wire]
        elif location == "querystring" and wire in query:
            params[name] = _query_scalar(member, query[wire])
        elif location == "header" and wire.lower() in lowered:
            params[name] = _query_scalar(member, lowered[wire.lower()])
    return params


# --- XML answers (query and REST-XML) -----------------------------------------------------


def xml_members(service: str, operation: str, payload: Mapping[str, Any]) -> str:
    """The answer's body members as XML elements named by the output shape.

    Timestamps are ISO 8601 with milliseconds, lists wrap their items in `member`
    unless flattened (S3's Contents), as botocore's XML parsers read them. Members
    the shape places in headers are left out (see `header_members`).
    """
    shape = service_model(service).operation_model(operation).output_shape
    assert isinstance(shape, StructureShape)
    return "".join(
        _xml_element(shape.members[name], name, value)
        for name, value in payload.items()
        if name in shape.members and "location" not in shape.members[name].serialization
    )


def header_members(
    service: str, operation: str, payload: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """The answer's header members (GetObject's ETag, Last-Modified, ...) as HTTP headers."""
    shape = service_model(service).operation_model(operation).output_shape
    assert isinstance(shape, StructureShape)
    headers = []
    for name, value in payload.items():
        member = shape.members.get(name)
        if member is not None and member.serialization.get("location") == "header":
            text = (
                format_datetime(value, usegmt=True)
                if isinstance(value, datetime)
                else _xml_text(value)
            )
            headers.append((str(member.serialization["name"]), text))
    return headers


def output_errors(service: str, operation: str, payload: Mapping[str, Any]) -> list[str]:
    """`json_output_errors` for an answer holding datetimes (XML services)."""
    shape = service_model(service).operation_model(operation).output_shape
    errors: list[str] = []
    if shape is not None:
        _check(shape, _epoch(payload), "", errors)
    return errors


def _epoch(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, Mapping):
        return {k: _epoch(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_epoch(v) for v in value]
    return value


def _xml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        utc = value.astimezone(UTC)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    return escape(str(value))


def _xml_element(shape: Shape, name: str, value: Any) -> str:
    tag = str(shape.serialization.get("name", name))
    if isinstance(shape, ListShape):
        item_tag = str(shape.member.serialization.get("name", "member"))
        if shape.serialization.get("flattened"):
            # botocore reads a flattened item under its member's name, else the list's.
            flat = str(shape.member.serialization.get("name", tag))
            return "".join(_xml_element(shape.member, flat, item) for item in value)
        items = "".join(_xml_element(shape.member, item_tag, item) for item in value)
        return f"<{tag}>{items}</{tag}>"
    if isinstance(shape, StructureShape):
        inner = "".join(
            _xml_element(shape.members[k], k, v) for k, v in value.items() if k in shape.members
        )
        return f"<{tag}>{inner}</{tag}>"
    return f"<{tag}>{_xml_text(value)}</{tag}>"


def json_time(value: Any) -> datetime | None:
    """A timestamp member of a JSON-protocol request as botocore sends it (epoch
    seconds), or an ISO 8601 text; None when absent."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return datetime.fromisoformat(str(value))
