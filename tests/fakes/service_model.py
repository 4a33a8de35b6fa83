"""Requests and answers of the fake control plane checked against botocore's service models.

The fake must refuse what SageMaker or EC2 would refuse and answer only what their
models define, or the handler tests prove nothing about the real services. botocore's
client-side validation checks types and required members only; this checks what the
model states: required and unknown members, string lengths, enums and patterns, numeric
ranges, list sizes. SageMaker speaks JSON (timestamps as epoch seconds); EC2's query
protocol flattens lists (`ZoneName.1`, `Filter.1.Value.1`), checked by member names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

import botocore.session
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape

# Smithy patterns may use Unicode classes that Python's `re` lacks; widen them to the
# nearest class `re` has (the fake may accept a little more than the service, never less).
_UNICODE_CLASSES = {r"\p{L}": r"\w", r"\p{N}": r"\w", r"\p{Z}": r"\s"}


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
