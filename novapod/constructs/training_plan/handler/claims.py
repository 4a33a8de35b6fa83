"""Pure decisions over the purchase ledger's items of plans and extensions: no AWS calls.

The ledger (handler_core/ledger.py) says what this environment's handlers claimed,
called and bought; the service says what exists. These functions reconcile the two
without comparing the service's timestamps with the Lambda clock:

- a plan's item settles by DescribeTrainingPlan of its name (the name is unique);
- an extension's item settles by DescribeTrainingPlanExtensionHistory, matched by the
  offering ID the item recorded in `calling` and the number of history entries of that
  offering the ledger had accounted for before the call (`Baseline`): an offering ID can
  come back after a Failed payment frees its slot, so an older Failed entry of the same
  ID is never taken for this attempt's outcome.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ...handler_core import ledger
from ...handler_core.ledger import Entry
from . import marker

PLAN = "plan"
EXTENSION = "extension"
# Data key of on_event's result: is_complete must settle a purchase it cannot see yet.
AWAITING = "Awaiting"
# After an ambiguous purchase call, how long is_complete keeps looking for its result
# before failing with "may have been bought" (AWS may show a plan 30-120 s late).
RECONCILE_SECONDS = 600
# How long an event that lost its claim waits for the winner's claim to move on.
CLAIM_WAIT_SECONDS = 900

AttemptOutcome = Literal["shown", "failed", "unseen"]


def entries_of(history: Sequence[Mapping[str, Any]], offering_id: str) -> list[Mapping[str, Any]]:
    return [e for e in history if e.get("TrainingPlanExtensionOfferingId") == offering_id]


def _counts(history: Sequence[Mapping[str, Any]], offering_id: str) -> tuple[int, int]:
    """(entries of the offering not Failed, entries Failed): the history's order is not
    documented (botocore's model), so attempts are told apart by counts, never by place."""
    listed = entries_of(history, offering_id)
    failed = sum(1 for e in listed if e.get("Status") == "Failed")
    return len(listed) - failed, failed


def baseline_fields(
    history: Sequence[Mapping[str, Any]], offering_id: str, earlier: Sequence[Mapping[str, Any]]
) -> dict[str, int]:
    """The history entries of `offering_id` that are not this attempt's, by kind: those
    listed now, or those the ledger's earlier attempts account for (this item's and the
    plan's other extension items'; a read may lag behind them), whichever is more. An
    attempt released by hand from calling or ambiguous counts as possibly bought and as
    possibly Failed: either way its entry is not taken for this attempt's."""
    shown_now, failed_now = _counts(history, offering_id)
    mine = [a for a in earlier if a.get("OfferingId") == offering_id]
    unsettled = sum(
        1
        for a in mine
        if a.get("State") == ledger.RELEASED and a.get("ReleasedFrom") in ledger.UNSETTLED
    )
    shown = sum(1 for a in mine if a.get("State") == ledger.BOUGHT) + unsettled
    failed = sum(1 for a in mine if a.get("State") == ledger.FAILED) + unsettled
    return {"BaselineShown": max(shown_now, shown), "BaselineFailed": max(failed_now, failed)}


def attempts_of(entries: Sequence[Entry]) -> list[Mapping[str, Any]]:
    """Every attempt the items record: each item's last one and its earlier ones."""
    return [a for e in entries for a in (e.summary(), *e.attempts)]


def released_unsettled(entry: Entry) -> bool:
    """Released by hand from calling or ambiguous: it may have been bought."""
    return entry.state == ledger.RELEASED and entry.get("ReleasedFrom") in ledger.UNSETTLED


def extension_outcome(entry: Entry, history: Sequence[Mapping[str, Any]]) -> AttemptOutcome:
    """What the history says of the attempt `entry` recorded: `shown` (one more entry of
    its offering not Failed than before the call), `failed` (one more only as Failed:
    nothing added), `unseen` (neither yet)."""
    offering = str(entry.get("OfferingId") or "")
    if not offering:
        return "unseen"
    shown, failed = _counts(history, offering)
    if shown > int(entry.get("BaselineShown") or 0):
        return "shown"
    return "failed" if failed > int(entry.get("BaselineFailed") or 0) else "unseen"


def attempt_paid(entry: Entry, history: Sequence[Mapping[str, Any]]) -> bool:
    """The attempt's entry is listed and no longer awaits payment: more entries of the
    offering neither Failed nor Pending than not Failed before the call."""
    offering = str(entry.get("OfferingId") or "")
    paid = sum(
        1 for e in entries_of(history, offering) if e.get("Status") not in ("Failed", "Pending")
    )
    return paid > int(entry.get("BaselineShown") or 0)


def total_of(entry: Entry) -> int:
    """The hours an extension item's approval asks for in total (recorded at the claim;
    else read from its name, `<plan>-ext<hours>h-<digest>`)."""
    total = entry.get("Total")
    if isinstance(total, int):
        return total
    found = re.search(r"-ext(\d+)h-[0-9a-f]{8}$", entry.name)
    return int(found.group(1)) if found else 0


def unresolved_markers(
    markers: Sequence[marker.Marker], history: Sequence[Mapping[str, Any]], seen: int
) -> list[marker.Marker]:
    """Tag markers of an earlier version whose purchase may have happened: resolved only
    when the history lists their offering not Failed, or the plan has their total. A
    Failed entry of the same offering proves nothing (the slot a Failed payment frees can
    come back with the same ID: issue 18's first double purchase)."""
    return [
        m
        for m in markers
        if not (seen >= m.hours or (m.offering_id and _counts(history, m.offering_id)[0] > 0))
    ]


def in_place(history: Sequence[Mapping[str, Any]], seen: int, hours: int) -> bool:
    """An extension adopted without an attempt of ours is ready once the plan has the
    total and no extension it lists awaits payment."""
    return seen >= hours and not any(e.get("Status") == "Pending" for e in history)


def unknown_hours(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """Offering IDs of counted extensions whose DurationHours the history leaves out
    (optional in the API model): how long they extend the plan is unknown."""
    return [
        str(e.get("TrainingPlanExtensionOfferingId", "?"))
        for e in history
        if e.get("Status") != "Failed" and not isinstance(e.get("DurationHours"), int)
    ]


# --- messages -----------------------------------------------------------------------------


def check_plan_command(name: str) -> str:
    return f"aws sagemaker describe-training-plan --training-plan-name {name}"


def release_command(key: str) -> str:
    return f"novapod purchases CONFIG --release {key}"


def ambiguous_plan_message(name: str, entry: Entry, waited: int) -> str:
    return (
        f"training plan {name} may have been bought: the purchase ledger holds {entry.key} "
        f"as {entry.state} ({entry.get('Error') or 'the call was made, its answer is unknown'}) "
        f"and DescribeTrainingPlan has not shown the plan in {waited} s, so no deploy buys it "
        f"again while that item stands; check with `{check_plan_command(name)}` (and the "
        "SageMaker console's training plans) and only if it is certainly not bought, release "
        f"the claim with `{release_command(entry.key)}`, then deploy again"
    )


def ambiguous_extension_message(name: str, plan_arn: str, entry: Entry, waited: int) -> str:
    offering = entry.get("OfferingId") or "?"
    return (
        f"extension {name} may have been bought: the purchase ledger holds {entry.key} as "
        f"{entry.state} (offering {offering}: "
        f"{entry.get('Error') or 'the call was made, its answer is unknown'}) and the plan's "
        f"extension history has not listed a new purchase of {offering} in {waited} s, so no "
        "deploy extends the plan again while that item stands; check with `aws sagemaker "
        f"describe-training-plan-extension-history --training-plan-arn {plan_arn}` and only "
        f"if it lists no new extension {offering}, release the claim with "
        f"`{release_command(entry.key)}`, then deploy again"
    )


def claim_released_message(what: str, entry: Entry, waited: int) -> str:
    """Said only after this event released the other claim with a conditional write:
    that claimant's next write (calling) then fails, so it can no longer buy."""
    return (
        f"{what} was not bought by this event: the purchase ledger showed {entry.key} "
        "claimed by another "
        f"invocation (request {entry.request_id or '?'}) that had not called the service in "
        f"{waited} s, and this event released that claim with a conditional write, so that "
        "invocation can no longer call; deploy again"
    )


def other_attempt_ended_message(what: str, entry: Entry) -> str:
    if released_unsettled(entry):
        return (
            f"{what} was not bought by this event: the purchase ledger holds {entry.key} "
            f"released by hand from {entry.get('ReleasedFrom')}, so its last call may have "
            "bought it; check it with AWS, then deploy again to try anew"
        )
    return (
        f"{what} was not bought by this event: another invocation held the claim and its "
        f"attempt ended {entry.state} "
        f"({entry.get('Error') or entry.get('Detail') or 'no detail'}), which bought nothing; "
        "deploy again to try anew"
    )


def unknown_hours_message(name: str, offerings: Sequence[str]) -> str:
    return (
        f"extension {name} was not bought: the plan's extension history lists "
        f"{', '.join(offerings)} without DurationHours, so how far the plan is extended is "
        "unknown and novapod does not buy on a guess; check the plan's end time with "
        "`aws sagemaker describe-training-plan` and, if the extension is in place, nothing "
        "needs buying (remove extend or raise it past the plan's hours)"
    )


def other_extension_blocks_message(name: str, other: Entry) -> str:
    return (
        f"extension {name} was not bought by this event: the purchase ledger holds "
        f"{other.key} of the same plan as {other.state} "
        f"({other.get('Error') or other.get('Detail') or 'its outcome is not known yet'}), so "
        "how far the plan is extended is unknown; deploy again once it is settled, or check "
        "the plan's extension history and, only if it lists no such purchase, release it with "
        f"`{release_command(other.key)}`"
    )


def failed_extension_message(name: str, entry: Entry) -> str:
    return (
        f"extension {name} was bought but SageMaker lists its purchase of "
        f"{entry.get('OfferingId') or '?'} as Failed (payment failed), which adds no time; "
        f"the purchase ledger records {entry.key} as failed, so the next deploy extends "
        "again under the same approval and cap, or remove extend"
    )


def foreign_plan_message(name: str, owner: str, environment: str) -> str:
    return (
        f"training plan {name} exists but belongs to environment {owner} (its "
        f"novapod:environment tag), not {environment}: novapod never adopts another "
        "environment's plan (two clusters would share one reservation) and bought nothing; "
        "rename this plan or this environment so the derived names differ"
    )


def unusable_bought_plan_message(name: str, problem: str) -> str:
    return (
        f"training plan {name} was bought by this deploy but {problem}; the purchase is "
        "non-refundable and stays in the account (see `novapod purchases`), and a changed "
        "request derives a new plan name, so it buys another plan: fix the request only if "
        "that is what you want"
    )
