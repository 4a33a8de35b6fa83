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
def hooked_clients(event: Callable[[Any], str], hook: Callable[..., None]) -> Iterator[None]:
    """`hook` on botocore's `event(client)` of every client the handler takes meanwhile.

    The handler core reuses its clients (between invocations and tests): the hook is
    registered once per client, under an ID of its own, and unregistered at the end, so
    no later invocation or test sees it.
    """
    real = index._client
    hooked: dict[int, tuple[Any, str]] = {}
    unique_id = f"test-hook-{id(hook)}"

    def client(service: str, **kwargs: Any) -> Any:
        made = real(service, **kwargs)
        if id(made) not in hooked:
            hooked[id(made)] = (made, event(made))
            made.meta.events.register(event(made), hook, unique_id=unique_id)
        return made

    index._client = client  # type: ignore[assignment]
    try:
        yield
    finally:
        index._client = real  # type: ignore[assignment]
        for made, name in hooked.values():
            made.meta.events.unregister(name, unique_id=unique_id)


@contextmanager
def interleaved(actions: dict[tuple[str, int], Callable[[], object]]) -> Iterator[None]:
    counts: dict[str, int] = {}
    pending = dict(actions)

    def hook(model: Any, **_: Any) -> None:
        n = counts.get(model.name, 0)
        counts[model.name] = n + 1
        action = pending.pop((model.name, n), None)
        if action is not None:
            action()

    with hooked_clients(
        lambda made: f"before-call.{made.meta.service_model.endpoint_prefix}", hook
    ):
        yield
    assert not pending, f"never reached: {sorted(pending)}"


@contextmanager
def crashing_before(operation: str) -> Iterator[None]:
    """on_event is killed just before it sends `operation` (SageMaker's)."""

    def crash(**_: Any) -> None:
        raise Crash("on_event killed")

    with hooked_clients(lambda _: f"before-call.sagemaker.{operation}", crash):
        yield
