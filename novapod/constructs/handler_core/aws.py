"""The handlers' boto3 clients and the wrappers of their calls.

`client(service, settings)` returns a client with the handler's retries and timeouts
(`Settings`; None: botocore's defaults), made once and reused: a warm Lambda keeps its
clients between invocations, and a test run between tests (SageMaker's client alone
takes tens of milliseconds to build). A client is reused only while everything boto3
read to make it is unchanged: the service, the settings, and the environment it reads
its credentials, region, endpoint URLs, profile, config files and proxies from
(`environment()`); another environment empties the cache and starts a new boto3
session. Each `client()` call hands the client over with the retry budget of a new
one (botocore's standard retry mode keeps a retry quota per client, which would
otherwise carry one invocation's failures into the next), so as many attempts are sent
as a client made for the call would send. A client of one attempt (a purchase) is also
handed over without its pooled connections: a connection kept from an earlier, frozen
invocation may have been dropped by the far end, and one attempt on it would fail a
purchase that a new connection would have made (boto/botocore#2787).

`call` and `read` wrap one AWS call into the handler's own error, whose sentence says
what failed and why (see `errors`); `ERRORS` is what such a call raises once botocore
has given up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]
from botocore.retries.quota import RetryQuota  # type: ignore[import-untyped]

from . import errors

T = TypeVar("T")

# The service's answer, or botocore's own failure (no connection, a timeout, an
# unreadable answer, a request it could not build).
ERRORS: tuple[type[Exception], ...] = (ClientError, BotoCoreError)

# Read by botocore when it makes a client, beside the AWS_* and BOTO* variables: the
# proxies, the CA bundle (endpoint.py), the TLS key log (httpsession.py) and HOME, where
# ~/.aws/config and ~/.aws/credentials are found.
_READ_VARIABLES = frozenset(
    {"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "SSLKEYLOGFILE", "HOME"}
)


@dataclass(frozen=True)
class Settings:
    """A client's attempts and timeouts, in botocore's standard retry mode."""

    max_attempts: int
    connect_timeout: float
    read_timeout: float

    def config(self) -> Config:
        # `total_max_attempts` counts the first call; botocore's `max_attempts` counts only
        # retries, so `max_attempts: 1` would still send a purchase twice.
        return Config(
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
        )


Environment = tuple[tuple[str, str], ...]


def environment() -> Environment:
    """What boto3 reads from the environment when it makes a client: every AWS_*
    variable (credentials, region, endpoint URLs, profile, config files, ...), botocore's
    own BOTO* switches, the proxies, the CA bundle and HOME."""
    return tuple(
        sorted(
            (name, value)
            for name, value in os.environ.items()
            if name.startswith(("AWS_", "BOTO")) or name.upper() in _READ_VARIABLES
        )
    )


class _Clients:
    """The clients of one environment, by service and settings."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.environment: Environment | None = None
        self.session: Any = None
        self.made: dict[tuple[str, Settings | None], Any] = {}


_CLIENTS = _Clients()


def client(service: str, settings: Settings | None = None) -> Any:
    """The boto3 client of `service` with these settings, reused while the environment
    is the one it was made in, with the retry budget of a new client."""
    key = (service, settings)
    with _CLIENTS.lock:
        current = environment()
        if current != _CLIENTS.environment:
            _CLIENTS.made.clear()
            _CLIENTS.session = boto3.session.Session()
            _CLIENTS.environment = current
        made = _CLIENTS.made.get(key)
        if made is not None and _refill_retry_quota(made):
            if settings is not None and settings.max_attempts == 1:
                made.close()  # its next call opens a new connection; the client stays usable
            return made
        made = _CLIENTS.session.client(
            service, config=settings.config() if settings is not None else None
        )
        if _refill_retry_quota(made):  # botocore as known here: safe to reuse
            _CLIENTS.made[key] = made
        return made


def _refill_retry_quota(made: Any) -> bool:
    """Give `made` the retry quota of a new client; False when its retries are not
    botocore's standard mode as this module knows it (then it is not reused).

    botocore registers the standard mode's retry handler under the unique ID
    `retry-config-<service>` (botocore/retries/standard.py, register_retry_handler);
    the handler's quota checker also releases capacity after each call, so replacing
    its quota resets both.
    """
    if made.meta.config.retries.get("mode") != "standard":
        return False
    service = made.meta.service_model.service_id.hyphenize()
    registered = getattr(made.meta.events, "_emitter", None)
    handlers = getattr(registered, "_unique_id_handlers", None)
    entry = handlers.get(f"retry-config-{service}") if isinstance(handlers, Mapping) else None
    handler = entry.get("handler") if isinstance(entry, Mapping) else None
    checker = getattr(getattr(handler, "__self__", None), "_retry_quota", None)
    if checker is None or not isinstance(getattr(checker, "_quota", None), RetryQuota):
        return False
    checker._quota = RetryQuota()
    return True


# --- calls --------------------------------------------------------------------------------


class ReadError(Exception):
    """A read failed after botocore's retries; `detail` names the error. It says nothing
    about the resource read: a caller that waits keeps waiting. Handlers derive their own
    (with their error class) from it."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def call(action: str, fn: Callable[[], T], error: Callable[[str], Exception]) -> T:
    """`fn()`, or `error("<action> failed (<detail>)")` when the call failed."""
    try:
        return fn()
    except ERRORS as exc:
        raise error(errors.failed(action, exc)) from exc


def read(
    action: str,
    fn: Callable[[], Mapping[str, Any]],
    *,
    not_found: str,
    error: Callable[[str, str], ReadError],
) -> dict[str, Any] | None:
    """`fn()`'s answer, None when the service says `not_found` (its error code), else
    `error("<action> failed (<detail>)", detail)`."""
    try:
        return dict(fn())
    except ERRORS as exc:
        if errors.error_code(exc) == not_found:
            return None
        detail = errors.error_detail(exc)
        raise error(f"{action} failed ({detail})", detail) from exc
