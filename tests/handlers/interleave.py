"""Deterministic interleavings of two invocations of the TrainingPlan handler.

`interleaved` runs another caller's action just before the handler sends its n-th call
(from 0) of an operation, SageMaker's and the purchase ledger's (DynamoDB) alike,
decided client-side (botocore's before-call event), so no request waits on the fake
meanwhile. `Crash` is the Lambda runtime ending an invocation: no handler code runs
after it, not even an `except Exception`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from novapod.constructs.training_plan.handler import index


class Crash(BaseException):
    """The Lambda runtime ending on_event (timeout, out of memory)."""


@contextmanager
def interleaved(actions: dict[tuple[str, int], Callable[[], object]]) -> Iterator[None]:
    real = index._client
    counts: dict[str, int] = {}
    pending = dict(actions)

    def hook(model: Any, **_: Any) -> None:
        n = counts.get(model.name, 0)
        counts[model.name] = n + 1
        action = pending.pop((model.name, n), None)
        if action is not None:
            action()

    def client(service: str, **kwargs: Any) -> Any:
        made = real(service, **kwargs)
        made.meta.events.register(f"before-call.{made.meta.service_model.endpoint_prefix}", hook)
        return made

    index._client = client  # type: ignore[assignment]
    try:
        yield
    finally:
        index._client = real  # type: ignore[assignment]
    assert not pending, f"never reached: {sorted(pending)}"


@contextmanager
def crashing_before(operation: str) -> Iterator[None]:
    """on_event is killed just before it sends `operation` (SageMaker's)."""
    real = index._client

    def client(service: str, **kwargs: Any) -> Any:
        made = real(service, **kwargs)

        def crash(**_: Any) -> None:
            raise Crash("on_event killed")

        made.meta.events.register(f"before-call.sagemaker.{operation}", crash)
        return made

    index._client = client  # type: ignore[assignment]
    try:
        yield
    finally:
        index._client = real  # type: ignore[assignment]
