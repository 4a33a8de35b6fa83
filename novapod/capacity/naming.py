"""Deterministic names for resources whose name is their identity.

A training plan's name is the only idempotency key CreateTrainingPlan has: the
custom resource describes this name before it buys and adopts what it finds. The
name therefore depends on exactly the inputs that define *what* is bought (instance
type, count, duration, window, target resources) and not on guardrails such as the
fee cap or the choice policy, so raising a cap after a refusal does not change it.

An extension of a bought plan (ExtendTrainingPlan) has no name and no idempotency key
at all; `extension_name` gives it one for the config's approval: the plan's name, the
hours added in total, and a digest of both, so any change to either needs a new
approval.

Any change to how a name is derived (inputs, encoding, digest, truncation) renames every
deployed plan, so each environment would buy its plans again: it needs a migration that
adopts the old names. tests/unit/test_naming.py pins the names as literals.
"""

from __future__ import annotations

import re

from novapod.capacity.models import PlanRequest
from novapod.constructs.handler_core import names

TRAINING_PLAN_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$")
MAX_NAME = 64
_DIGEST_CHARS = names.DIGEST_CHARS


def purchase_inputs(request: PlanRequest) -> dict[str, object]:
    """What is bought. `retry` joins only when set, so names without one never changed."""
    return names.purchase_inputs(
        instance_type=request.instance_type,
        instance_count=request.instance_count,
        duration_hours=request.duration_hours,
        start_after=request.start_after,
        end_before=request.end_before,
        target_resources=request.target_resources,
        retry=request.retry,
    )


# The handler recomputes the same digest from the properties it buys with.
purchase_digest = names.purchase_digest


def name_head(environment: str, plan: str) -> str:
    """`novapod-<env>-<plan>`, cut so that the digest still fits in 64 characters."""
    return f"novapod-{environment}-{plan}"[: MAX_NAME - _DIGEST_CHARS - 1].rstrip("-")


def split_name(name: str) -> tuple[str, str] | None:
    """(head, digest) of a name novapod derives, or None for any other name."""
    head, _, digest = name.rpartition("-")
    if not head.startswith("novapod-") or not re.fullmatch(r"[0-9a-f]{8}", digest):
        return None
    return head, digest


def training_plan_name(environment: str, request: PlanRequest) -> str:
    """`novapod-<env>-<plan>-<digest of purchase inputs>`, at most 64 characters."""
    digest = purchase_digest(purchase_inputs(request))
    name = f"{name_head(environment, request.name)}-{digest}"
    if not TRAINING_PLAN_NAME.match(name):  # config patterns make this unreachable
        raise ValueError(f"derived training plan name {name!r} is not a valid plan name")
    return name


def training_plan_name_prefix(environment: str) -> str:
    """Every plan this environment buys starts with this (IAM scoping)."""
    return f"novapod-{environment}-"


EXTENSION_NAME = re.compile(
    r"^(?P<plan>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63})-ext(?P<hours>[1-9][0-9]*)h-[0-9a-f]{8}$"
)


def extension_inputs(plan_name: str, hours: int) -> dict[str, object]:
    """What an extension buys: hours added in total to the plan of that name."""
    return {"training_plan": plan_name, "extend_hours": hours}


def extension_name(plan_name: str, hours: int) -> str:
    """`<plan name>-ext<hours>h-<digest>`: the approval of extending that plan by `hours`
    in total (beyond the hours it was bought for). The digest makes the name one to copy
    from `novapod plan` or validation, never to type; the readable part says what it buys.
    """
    return f"{plan_name}-ext{hours}h-{purchase_digest(extension_inputs(plan_name, hours))}"
