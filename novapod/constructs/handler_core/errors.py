"""What a failed AWS call says: its error code, HTTP status, retries and one-line detail.

botocore raises a `ClientError` for the service's own answer: its `response` holds the
error (`Error.Code`, `Error.Message`) and the metadata of the last attempt
(`ResponseMetadata.HTTPStatusCode`, `RetryAttempts`). Every other failure (no
connection, a timeout, an unreadable answer, a request never built) carries no such
answer. Read by shape, without importing botocore, so the purchase ledger (imported at
synth by the table's construct) shares it; what each handler concludes from it (refused,
never sent, ambiguous, keep waiting) stays with the handler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def _answer(exc: BaseException) -> Mapping[str, Any] | None:
    """The service's parsed error answer (a ClientError's `response`), if any."""
    response = getattr(exc, "response", None)
    return response if isinstance(response, Mapping) else None


def error_code(exc: BaseException) -> str | None:
    answer = _answer(exc)
    code = answer.get("Error", {}).get("Code") if answer is not None else None
    return str(code) if code else None


def http_status(exc: BaseException) -> int | None:
    answer = _answer(exc)
    metadata = answer.get("ResponseMetadata", {}) if answer is not None else {}
    status = metadata.get("HTTPStatusCode")
    return int(status) if isinstance(status, int) else None


def retry_attempts(exc: BaseException) -> int:
    """How many times botocore resent the call before this answer (0: sent once)."""
    answer = _answer(exc)
    metadata = answer.get("ResponseMetadata", {}) if answer is not None else {}
    return int(metadata.get("RetryAttempts") or 0)


def error_detail(exc: BaseException, *, tidy: Callable[[str], str] = str) -> str:
    """`Code: message` of the service's answer, else `ExceptionClass: text`; `tidy`
    shapes the service's message (to sit inside a sentence)."""
    answer = _answer(exc)
    if answer is None:
        return f"{type(exc).__name__}: {exc}"
    message = answer.get("Error", {}).get("Message") or "no message"
    return f"{error_code(exc) or 'error'}: {tidy(str(message))}"


def failed(action: str, exc: BaseException) -> str:
    """The sentence of a call that failed (after botocore's retries)."""
    return f"{action} failed ({error_detail(exc)})"
