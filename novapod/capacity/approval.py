"""Purchase approval: the config approves one exact training plan, by its name.

A training plan is a non-refundable purchase, and its deterministic name
(`novapod.capacity.naming`) changes whenever what is bought changes. `purchase.approve`
therefore holds that name: an edit that changes what is bought (instance type, count,
duration, window, targets, retry, the plan's or the environment's name) leaves the
config approving a plan it no longer buys, and validation refuses it until the new
name is approved. The digest is one-way, so to say *what* changed this module
re-derives the digest for the plausible edits of the new request (one input changed,
or two that move together) and names the edit whose digest is the approved one.
Pure functions, no AWS, no CDK.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from novapod.capacity import naming
from novapod.capacity.models import PlanRequest
from novapod.capacity.units import (
    HOURS_PER_DAY,
    PLAN_INSTANCE_COUNTS,
    PLAN_MAX_HOURS,
    PLAN_MIN_HOURS,
    TARGET_RESOURCES,
)

# How far a window edit is searched for, in whole days either way.
_WINDOW_SEARCH_DAYS = 400
_MAX_RETRY_SEARCHED = 20


@dataclass(frozen=True)
class Edit:
    """One purchase input that differs between the approved and the current request."""

    field: str
    before: object
    after: object

    def describe(self) -> str:
        return f"{self.field} {_show(self.before)} -> {_show(self.after)}"


def approval_problem(
    *,
    environment: str,
    request: PlanRequest,
    approve: str | bool | None,
    fee_cap: object,
    currency: str,
    instance_types: Sequence[str],
) -> str | None:
    """Why this purchase is not approved, as one sentence; None when it is."""
    name = naming.training_plan_name(environment, request)
    if approve is None or approve is False:
        return (
            "buying a training plan is a non-refundable purchase: after reviewing prices with "
            f"`novapod offerings CONFIG --plan {request.name}`, set purchase.approve: {name} "
            "(this exact plan) and purchase.max_upfront_fee, or set existing_arn to adopt a "
            "plan you own"
        )
    if approve is True:
        return (
            "approve must name the exact purchase, not true: set approve: "
            f"{name} (the plan `novapod plan` shows and the stack buys); an edit that changes "
            "what is bought changes this name and needs a new approval"
        )
    if approve == name:
        return None
    changes = describe_change(approve, environment, request, instance_types)
    return (
        f"approves {approve} but this config buys {name} ({changes}); that is a new "
        f"non-refundable purchase of up to {fee_cap} {currency}, and {approve}, if it was "
        f"bought, stays paid for: set approve: {name} to buy the new plan, or undo the edit"
    )


def describe_change(
    approved: str, environment: str, request: PlanRequest, instance_types: Sequence[str]
) -> str:
    """What separates the approved plan name from the one this request gets."""
    parts = naming.split_name(approved)
    if parts is None:
        return f"{approved} is not a plan name novapod derives"
    head, digest = parts
    changes: list[str] = []
    current_head = naming.name_head(environment, request.name)
    if head != current_head:
        env_prefix = f"novapod-{environment}-"
        plan_suffix = f"-{request.name}"
        if head.startswith(env_prefix):
            was = head.removeprefix(env_prefix)
            changes.append(f"the plan was renamed from {was} to {request.name}")
        elif head.endswith(plan_suffix) and current_head.endswith(plan_suffix):
            was = head.removeprefix("novapod-").removesuffix(plan_suffix)
            changes.append(f"the environment was renamed from {was} to {environment}")
        else:
            changes.append(f"the environment or plan was renamed: {head} -> {current_head}")
    if digest != naming.purchase_digest(naming.purchase_inputs(request)):
        edits = find_edit(digest, request, instance_types)
        if edits is None:
            changes.append(
                "what is bought changed in more than one of instance type, count, duration, "
                "window and targets"
            )
        else:
            changes.append(", ".join(edit.describe() for edit in edits))
    return "; ".join(changes)


def find_edit(
    digest: str, request: PlanRequest, instance_types: Sequence[str]
) -> tuple[Edit, ...] | None:
    """The edit of `request`'s purchase inputs whose digest is `digest`, if a plausible one is."""
    current = naming.purchase_inputs(request)
    for candidate in _candidates(request, instance_types):
        inputs = dict(current)
        inputs.update(candidate)
        if not inputs.get("retry"):
            inputs.pop("retry", None)
        if naming.purchase_digest(inputs) == digest:
            return tuple(
                Edit(field, value, current.get(field, 0 if field == "retry" else None))
                for field, value in candidate.items()
                if value != current.get(field, 0 if field == "retry" else None)
            )
    return None


def _candidates(request: PlanRequest, instance_types: Sequence[str]) -> Iterator[dict[str, object]]:
    """Plausible approved inputs: one input changed, or two that move together. The
    instance type, count and duration alone are covered by the pairs below (a pair
    keeping one input as it is names only the other)."""
    types = sorted(set(instance_types) | {request.instance_type})
    counts = PLAN_INSTANCE_COUNTS
    durations = range(PLAN_MIN_HOURS, PLAN_MAX_HOURS + 1, HOURS_PER_DAY)
    for key in ("start_after", "end_before"):
        for value in _times(request.start_after if key == "start_after" else request.end_before):
            yield {key: value}
    for targets in _target_sets():
        yield {"target_resources": targets}
    for retry in range(_MAX_RETRY_SEARCHED + 1):
        yield {"retry": retry}
    # Edits that move two inputs together: a bigger job (count and duration), another
    # model (type and count, type and duration), a window shifted as a whole.
    for count, duration in itertools.product(counts, durations):
        yield {"instance_count": count, "duration_hours": duration}
    for instance_type, count in itertools.product(types, counts):
        yield {"instance_type": instance_type, "instance_count": count}
    for instance_type, duration in itertools.product(types, durations):
        yield {"instance_type": instance_type, "duration_hours": duration}
    if request.start_after and request.end_before:
        start = datetime.fromisoformat(request.start_after)
        end = datetime.fromisoformat(request.end_before)
        for days in range(-_WINDOW_SEARCH_DAYS, _WINDOW_SEARCH_DAYS + 1):
            shift = timedelta(days=days)
            yield {
                "start_after": (start + shift).isoformat(),
                "end_before": (end + shift).isoformat(),
            }


def _times(value: str | None) -> Iterator[str | None]:
    """The times a window bound plausibly had: none, or a whole number of days away."""
    yield None
    base = (
        datetime.fromisoformat(value)
        if value
        else datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    )
    for days in range(-_WINDOW_SEARCH_DAYS, _WINDOW_SEARCH_DAYS + 1):
        yield (base + timedelta(days=days)).isoformat()


def _target_sets() -> Iterator[list[str]]:
    for size in range(1, len(TARGET_RESOURCES) + 1):
        for combo in itertools.combinations(sorted(TARGET_RESOURCES), size):
            yield list(combo)


def _show(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)
