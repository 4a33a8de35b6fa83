"""What every handler computes with: CloudFormation's properties, times, the log line.

CloudFormation hands a custom resource its properties with every scalar as a string
(and an absent optional one sometimes as ""), so the handlers coerce them here, each
raising its own `PropertyError` (the `error` argument) with the same sentence. Times
are UTC and aware; a naive one means UTC. Every handler logs one JSON line per step on
stdout, which Lambda sends to the function's log group (where a `cdk deploy` user
follows a long wait).

Pure: the standard library only, so the constructs may import it at synth.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

# The handler's own PropertyError, from the sentence that names the property.
Refusal = Callable[[str], Exception]

ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


# --- properties ---------------------------------------------------------------------------


def present(raw: Mapping[str, Any], key: str) -> bool:
    return raw.get(key) not in (None, "")


def required_str(raw: Mapping[str, Any], key: str, error: Refusal) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise error(f"{key} is required and must be a non-empty string")
    return value


def optional_str(raw: Mapping[str, Any], key: str, error: Refusal) -> str | None:
    return required_str(raw, key, error) if present(raw, key) else None


def json_value(raw: Mapping[str, Any], key: str, error: Refusal) -> Any:
    """A property that is a list or an object: as CloudFormation passes it, or as the
    JSON string a template can carry instead."""
    value = raw.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise error(f"{key} is a string but not valid JSON") from None
    return value


def whole_number(
    raw: Mapping[str, Any], key: str, low: int, high: int, error: Refusal, *, required: bool
) -> int | None:
    """A whole number within [low, high]; None when absent and not required."""
    if not present(raw, key):
        if required:
            raise error(f"{key} is required")
        return None
    value = raw[key]
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise error(f"{key} must be a whole number, not {value!r}") from None
    if not low <= number <= high:
        raise error(f"{key} must be between {low} and {high}, not {number}")
    return number


# --- times --------------------------------------------------------------------------------


def utc_now() -> datetime:
    """The handlers' clock: aware, UTC (plan windows and the services' times are aware)."""
    return datetime.now(UTC)


def pause(seconds: float) -> None:
    """The handlers' wait between two looks at the same thing."""
    time.sleep(seconds)


def as_utc(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime from a datetime or ISO string; naive means UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(value: Any) -> str:
    """ISO-8601 UTC with a Z, or "" when there is no time."""
    moment = as_utc(value)
    return moment.strftime(ISO_FORMAT) if moment is not None else ""


def timed_out(since: datetime, now: datetime, timeout_seconds: int) -> bool:
    return (now - since).total_seconds() >= timeout_seconds


# --- the log ------------------------------------------------------------------------------


def emit(record: Mapping[str, Any], *, sort_keys: bool = False) -> None:
    """One JSON line on stdout (values JSON cannot hold, such as times, as text)."""
    print(json.dumps(record, default=str, sort_keys=sort_keys))


def log(step: str, message: str, **fields: Any) -> None:
    """One JSON line per step: the step, its sentence, then the fields by name."""
    emit({"step": step, "message": message, **dict(sorted(fields.items()))})
