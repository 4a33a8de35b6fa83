"""Extending a bought training plan instead of buying a second one.

SageMaker sells more time on a plan that is Scheduled or Active: SearchTrainingPlanOfferings
with the plan's ARN and DurationHours lists extension offerings, ExtendTrainingPlan buys
one (non-refundable, never cancelled), and the plan keeps its ARN, so the HyperPod
groups bound to it keep running (https://docs.aws.amazon.com/sagemaker/latest/dg/
training-plan-extension.html). A plan entry's `extend` block asks for that: hours
added in total, approved by `naming.extension_name` and capped by its own fee.

This module says two things, both pure (no AWS, no CDK):

- whether an `extend` block is approved (the extension's exact name, like a plan's);
- when an edit only lengthens a plan whose approval names the shorter plan (found the
  way `approval` names what an edit changed), which `extend` block lengthens the bought
  plan instead of buying a second plan under a new name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Protocol

from novapod.capacity import approval, naming
from novapod.capacity.models import PlanRequest


class Extend(Protocol):
    """A plan entry's `extend` block as this module reads it (the config's Extension)."""

    @property
    def duration_hours(self) -> int: ...
    @property
    def max_upfront_fee(self) -> Decimal | None: ...
    @property
    def currency(self) -> str: ...


class PlanEntry(Protocol):
    """A training-plan entry as this module reads it (the config's TrainingPlanSpec):
    a Protocol, so capacity/ never imports the config, which imports it."""

    @property
    def name(self) -> str: ...
    @property
    def existing_arn(self) -> str | None: ...
    @property
    def extend(self) -> Extend | None: ...


# Where a user reads the prices of extensions for a plan they own.
SEARCH_COMMAND = (
    "aws sagemaker search-training-plan-offerings --training-plan-arn ARN --duration-hours {hours}"
)


def plan_name(spec: PlanEntry, environment: str, request: PlanRequest) -> str:
    """The name of the plan an entry buys (its derived name) or adopts (from its ARN)."""
    if spec.existing_arn is not None:
        return spec.existing_arn.rsplit("/", 1)[1]
    return naming.training_plan_name(environment, request)


def extension_problem(
    *,
    plan: str,
    hours: int,
    approve: str | bool | None,
    fee_cap: Decimal | None,
    currency: str,
) -> str | None:
    """Why the extension of `plan` by `hours` in total is not approved; None when it is."""
    name = naming.extension_name(plan, hours)
    if approve is None or approve is False:
        return (
            f"extending training plan {plan} by {hours} h is a non-refundable purchase: after "
            f"reviewing prices (`{SEARCH_COMMAND.format(hours=hours)}` lists them), set approve: "
            f"{name} (this exact extension) and max_upfront_fee"
        )
    if approve is True:
        return (
            f"approve must name the exact extension, not true: set approve: {name}; a change to "
            "the plan or to duration_hours changes this name and needs a new approval"
        )
    if approve == name:
        return None
    cap = f"up to {fee_cap} {currency}" if fee_cap is not None else "an uncapped fee"
    return (
        f"approves {approve} but this config extends training plan {plan} by {hours} h in "
        f"total as {name} ({describe_extension_change(approve, plan, hours)}); that is another "
        f"non-refundable purchase of {cap}, and an extension, once bought, is never undone: "
        f"set approve: {name} to buy it, or undo the edit"
    )


def describe_extension_change(approved: str, plan: str, hours: int) -> str:
    """What separates the approved extension name from the one the config now derives."""
    match = naming.EXTENSION_NAME.match(approved)
    if match is None:
        return f"{approved} is not an extension name novapod derives"
    changes: list[str] = []
    if match.group("plan") != plan:
        changes.append(f"the plan changed from {match.group('plan')} to {plan}")
    was = int(match.group("hours"))
    if was != hours:
        changes.append(f"duration_hours {was} -> {hours}")
    if not changes:
        changes.append("its digest is not the one novapod derives for this plan and these hours")
    return ", ".join(changes)


def lengthening(
    approved: str, environment: str, request: PlanRequest, instance_types: Sequence[str]
) -> int | None:
    """Hours by which `request` lengthens the plan `approved` names, when a longer
    duration is the only edit (same environment, plan, type, count, window, targets)."""
    parts = naming.split_name(approved)
    if parts is None or parts[0] != naming.name_head(environment, request.name):
        return None
    edits = approval.find_edit(parts[1], request, instance_types)
    if edits is None or len(edits) != 1 or edits[0].field != "duration_hours":
        return None
    before, after = edits[0].before, edits[0].after
    if not isinstance(before, int) or not isinstance(after, int) or after <= before:
        return None
    return after - before


def pro_rata_cap(fee_cap: Decimal | None, bought_hours: int, hours: int) -> int | None:
    """The plan's cap scaled to the added hours, in whole units: a starting point for
    the extension's own cap, to check against real prices."""
    if fee_cap is None or bought_hours <= 0:
        return None
    return math.ceil(fee_cap * hours / bought_hours)


def lengthening_advice(
    *,
    approved: str,
    environment: str,
    request: PlanRequest,
    fee_cap: Decimal | None,
    instance_types: Sequence[str],
) -> str | None:
    """The `extend` block that lengthens the approved plan instead of buying a second
    one, when the edit only lengthens it; None otherwise."""
    hours = lengthening(approved, environment, request, instance_types)
    if hours is None:
        return None
    bought = request.duration_hours - hours
    cap = pro_rata_cap(fee_cap, bought, hours)
    block = f"duration_hours: {hours}, approve: {naming.extension_name(approved, hours)}"
    block += f", max_upfront_fee: {cap}" if cap is not None else ", max_upfront_fee: AMOUNT"
    prices = SEARCH_COMMAND.format(hours=hours)
    return (
        f"since the edit only lengthens {approved} by {hours} h, extend that plan instead of "
        f"buying a second one: keep duration_hours: {bought} and add extend: {{{block}}} "
        f"(the cap is the plan's pro rata; `{prices}` shows real prices once it is bought)"
    )


def extension_lines(
    environment: str, requests: Sequence[tuple[PlanEntry, PlanRequest]]
) -> list[str]:
    """One line per plan with an `extend` block, for `novapod plan`."""
    lines: list[str] = []
    for spec, request in requests:
        extend = spec.extend
        if extend is None:
            continue
        plan = plan_name(spec, environment, request)
        cap = (
            f"fee cap {extend.max_upfront_fee} {extend.currency}"
            if extend.max_upfront_fee is not None
            else "no fee cap yet"
        )
        lines.append(
            f"{spec.name}: {plan} ({request.duration_hours} h as bought) extended to "
            f"{request.duration_hours + extend.duration_hours} h in total: "
            f"{naming.extension_name(plan, extend.duration_hours)}, {cap}; "
            "non-refundable, never undone"
        )
    return lines
