"""Deterministic names for resources whose name is their identity.

A training plan's name is the only idempotency key CreateTrainingPlan has: the
custom resource describes this name before it buys and adopts what it finds. The
name therefore depends on exactly the inputs that define *what* is bought (instance
type, count, duration, window, target resources) and not on guardrails such as the
fee cap or the choice policy, so raising a cap after a refusal does not change it.
"""

from __future__ import annotations

import hashlib
import json
import re

from novapod.planning import PlanRequest

TRAINING_PLAN_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$")
MAX_NAME = 64
_DIGEST_CHARS = 8


def purchase_inputs(request: PlanRequest) -> dict[str, object]:
    return {
        "instance_type": request.instance_type,
        "instance_count": request.instance_count,
        "duration_hours": request.duration_hours,
        "start_after": request.start_after,
        "end_before": request.end_before,
        "target_resources": sorted(request.target_resources),
    }


def training_plan_name(environment: str, request: PlanRequest) -> str:
    """`novapod-<env>-<plan>-<digest of purchase inputs>`, at most 64 characters."""
    canonical = json.dumps(purchase_inputs(request), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:_DIGEST_CHARS]
    head = f"novapod-{environment}-{request.name}"[: MAX_NAME - _DIGEST_CHARS - 1].rstrip("-")
    name = f"{head}-{digest}"
    if not TRAINING_PLAN_NAME.match(name):  # config patterns make this unreachable
        raise ValueError(f"derived training plan name {name!r} is not a valid plan name")
    return name


def training_plan_name_prefix(environment: str) -> str:
    """Every plan this environment buys starts with this (IAM scoping)."""
    return f"novapod-{environment}-"
