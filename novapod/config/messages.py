"""pydantic's validation errors as `field.path: message` sentences that say how to
fix the value."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from novapod import addressing
from novapod.config.base import _CombinedFieldError, _FieldError
from novapod.config.capacity import TRAINING_PLAN_ARN
from novapod.config.eks import PRINCIPAL_ARN
from novapod.config.fields import INSTANCE_TYPE_PATTERN, ZONE_ID_PATTERN, ZONE_NAME
from novapod.config.jobs import FROM_PATTERN, JOB_NAME_PATTERN, LAMBDA_ARN, S3_LOCATION
from novapod.config.monitoring import EMAIL_PATTERN
from novapod.config.nova import MODEL_NAME_PATTERN, ROLE_ARN
from novapod.config.pipeline import BRANCH, CONNECTION_ARN, PIPELINE_NAME, REPOSITORY
from novapod.config.root import NAME_PATTERN, TAG_TEXT
from novapod.facts import eks_facts


def _issues(exc: ValidationError) -> list[tuple[str, str]]:
    issues: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        loc = _path(err["loc"])
        ctx = err.get("ctx") or {}
        cause = ctx.get("error")
        causes = (
            cause.errors
            if isinstance(cause, _CombinedFieldError)
            else [cause]
            if isinstance(cause, _FieldError)
            else []
        )
        for each in causes:
            path = each.path if each.root else ".".join(p for p in (loc, each.path) if p)
            issues.append((path, str(each)))
        if not causes:
            issues.append((loc, _message(err)))
    return issues


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "literal[")) or part in {"str", "int", "[key]"}:
            continue  # pydantic's internal step names for validators, unions and dict keys
        else:
            out += f".{part}" if out else str(part)
    return out


_TYPE_WORDS = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "decimal_type": "a number",
    "decimal_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_NUMBER_PARSING = {"int_parsing", "float_parsing", "decimal_parsing"}

# What a pattern means, for people: "'Dev' does not match <words>".
_DNS_LABEL_WORDS = (
    "a name of lowercase letters, digits and '-' that starts and ends with a letter or digit"
)
_INSTANCE_TYPE_WORDS = "an instance type such as ml.p5.48xlarge"
_PATTERN_WORDS = {
    NAME_PATTERN: (
        "an environment name: lowercase letters, digits and single '-', starting with a "
        "letter and ending with a letter or digit"
    ),
    r"^\d{12}$": 'an AWS account ID: 12 digits, quoted (account: "111122223333")',
    r"^[a-z]{2}(-gov)?-[a-z]+-\d{1,2}$": "a region code such as us-east-1",
    INSTANCE_TYPE_PATTERN: _INSTANCE_TYPE_WORDS,
    r"^subnet-[0-9a-f]{8,17}$": "a subnet ID such as subnet-0123456789abcdef0",
    r"^rtb-[0-9a-f]{8,17}$": "a route table ID such as rtb-0123456789abcdef0",
    r"^vpc-[0-9a-f]{8,17}$": "a VPC ID such as vpc-0123456789abcdef0",
    r"^[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$": f"{_DNS_LABEL_WORDS}, at most 24 characters",
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$": f"{_DNS_LABEL_WORDS}, at most 63 characters",
    PRINCIPAL_ARN: "an IAM role or user ARN such as arn:aws:iam::111122223333:role/admin",
    ROLE_ARN: "an IAM role ARN such as arn:aws:iam::111122223333:role/NovaScientist",
    MODEL_NAME_PATTERN: (
        "a Bedrock model name: letters and digits, single '-' or '_' between them, "
        "at most 63 of each"
    ),
    TRAINING_PLAN_ARN: (
        "a training plan ARN such as arn:aws:sagemaker:us-east-1:111122223333:training-plan/my-plan"
    ),
    EMAIL_PATTERN: "an email address such as platform-team@example.com",
    TAG_TEXT: "tag text: letters, digits, spaces and _ . : / = + - @",
    r"^[A-Z]{3}$": "an ISO 4217 currency code such as USD",
    JOB_NAME_PATTERN: f"a job name: {_DNS_LABEL_WORDS}, at most 34 characters",
    FROM_PATTERN: "base, job:<the name of another job>, or an s3:// checkpoint URI",
    S3_LOCATION: "a key in the data bucket (such as sft/train.jsonl) or an s3:// URI",
    LAMBDA_ARN: (
        "a Lambda function ARN such as arn:aws:lambda:us-east-1:111122223333:function:reward"
    ),
    CONNECTION_ARN: (
        "a connection ARN such as arn:aws:codeconnections:us-east-1:111122223333:connection/"
        "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
    ),
    REPOSITORY: "a repository as owner/name, such as my-org/novapod-envs",
    BRANCH: "a branch name of letters, digits and . _ / -",
    PIPELINE_NAME: (
        "a pipeline name: lowercase letters, digits and '-', starting with a letter, "
        "at most 32 characters"
    ),
}


# Keys an earlier release had, with where their content lives now.
_MOVED_KEYS = {
    ("capacity", "workloads"): (
        "workloads are now the top-level jobs section: move each entry to jobs, "
        "with instance_group (or plan) and data.train (docs/reference/configuration.md: jobs)"
    ),
}


def _message(err: Any) -> str:
    """One pydantic error as a sentence that says how to fix it."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    given = err.get("input")
    field = _field_name(err["loc"])
    if kind == "extra_forbidden":
        return _MOVED_KEYS.get(
            tuple(err["loc"]), "unknown key; remove it or fix its spelling (see `novapod schema`)"
        )
    if kind == "missing":
        return "required; add it"
    if kind == "string_type" and isinstance(given, int | float):
        return _quote_it(field, given)
    if kind in _NUMBER_PARSING and isinstance(given, str):
        return _plain_number(given, whole=kind == "int_parsing")
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]}, got {given!r}"
    if kind == "literal_error":
        return f"{given!r} is not allowed; use one of {ctx.get('expected')}"
    if kind.startswith("string_"):
        return _string_message(kind, ctx, given)
    if kind in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
        bound = next(iter(ctx.values()))
        words = {
            "greater_than_equal": "at least",
            "less_than_equal": "at most",
            "greater_than": "more than",
            "less_than": "less than",
        }
        return f"must be {words[kind]} {bound}, got {given!r}"
    if kind == "too_short" and field in {"zone_ids", "private_subnets"}:
        what = "zone IDs" if field == "zone_ids" else "private subnets, in two zones"
        return (
            f"list at least 2 {what}, because EKS needs subnets in at least two "
            f"Availability Zones; got {ctx.get('actual_length')}"
        )
    if kind in {"too_short", "too_long"}:
        return str(err["msg"]).replace("List", "the list").replace("Value", "the value")
    if kind == "timezone_aware":
        return f"{given} has no UTC offset; write it like 2027-03-01T00:00:00Z"
    if kind == "value_error":
        msg = str(ctx.get("error") or err["msg"])
        return re.sub(r"^Value error, ", "", msg)
    return str(err["msg"])


def _string_message(kind: str, ctx: dict[str, Any], given: Any) -> str:
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern"))
        if pattern == ZONE_ID_PATTERN:
            return _zone_id_hint(str(given))
        words = _PATTERN_WORDS.get(pattern, f"the pattern {pattern}")
        return f"{given!r} does not match {words}"
    if kind in {"string_too_long", "string_too_short"} and isinstance(given, str):
        most = kind == "string_too_long"
        bound = ctx.get("max_length" if most else "min_length")
        return f"{'at most' if most else 'at least'} {bound} characters; got {len(given)}"
    return f"must be a string, got {given!r}"


def _field_name(loc: tuple[int | str, ...]) -> str:
    """The key a value was written under (for "quote it: key: ..." suggestions)."""
    names = [p for p in loc if isinstance(p, str) and _path((p,))]
    return names[-1] if names else ""


def _quote_it(field: str, given: float) -> str:
    """YAML turned a string into a number: say so, and show the quoted form."""
    if isinstance(given, bool):  # yes, no, on, off, true, false
        return f"YAML reads this unquoted word as {str(given).lower()}; put it in quotes"
    written = str(given)
    why = ""
    if field == "account" and isinstance(given, int):
        written, why = _account_as_written(given)
    elif field == "kubernetes_version" and isinstance(given, float):
        # 1.30 arrives as 1.3: the version that reads as this number is the one meant.
        meant = [v for v in eks_facts().supported_versions if _as_float(v) == given]
        written = meant[0] if meant else written
    return f'YAML read this as the number {given}{why}; quote it: {field}: "{written}"'


def _account_as_written(value: int) -> tuple[str, str]:
    """An account ID YAML read as an integer, back to its 12 digits where that is sure.

    YAML 1.1 (PyYAML) reads 012345670123 as an octal number; a 12-digit decimal
    without a leading zero stays itself. Only the message recovers it, never the config.
    """
    if len(str(value)) == 12:
        return str(value), ""
    if 8**9 <= value < 8**11:  # 0 followed by 10 or 11 octal digits
        return format(value, "o").zfill(12), " (digits after a leading 0 are read as octal)"
    return str(value), ""


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _plain_number(given: str, *, whole: bool) -> str:
    digits = re.sub(r"[^0-9.]", "", given)
    example = digits if digits and _as_float(digits) is not None else ""
    if whole and "." in example:
        example = ""
    kind = "a whole number" if whole else "a number"
    hint = f", e.g. {example}" if example else ""
    return f"{given!r} is not {kind}; write a plain number{hint} (no currency sign or separators)"


def _zone_id_hint(given: str) -> str:
    name = ZONE_NAME.match(given)
    if name is None:
        return f"{given!r} is not an Availability Zone ID such as use1-az4"
    region = name["region"]
    example = f"{addressing.zone_id_prefix(region) or 'use1'}-az4"
    return (
        f"{given} is a zone name; use the zone ID, e.g. {example} (aws ec2 "
        f"describe-availability-zones --region {region} shows both)"
    )
