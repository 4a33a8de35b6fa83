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

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ...handler_core import ledger
from ...handler_core.ledger import Entry

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


def baseline(
    history: Sequence[Mapping[str, Any]], offering_id: str, earlier: Sequence[Mapping[str, Any]]
) -> int:
    """History entries of `offering_id` that are not this attempt's: those listed now,
    or those the ledger's earlier attempts of the offering account for (a read may lag
    behind them), whichever is more."""
    known = sum(
        1
        for a in earlier
        if a.get("OfferingId") == offering_id and a.get("State") in (ledger.FAILED, ledger.BOUGHT)
    )
    return max(len(entries_of(history, offering_id)), known)


def extension_outcome(entry: Entry, history: Sequence[Mapping[str, Any]]) -> AttemptOutcome:
    """What the history says of the attempt `entry` recorded: `shown` (listed beyond the
    baseline and not Failed), `failed` (listed beyond it only as Failed: nothing added),
    `unseen` (not listed beyond it yet)."""
    offering = str(entry.get("OfferingId") or "")
    if not offering:
        return "unseen"
    listed = entries_of(history, offering)[int(entry.get("Baseline") or 0) :]
    if any(e.get("Status") != "Failed" for e in listed):
        return "shown"
    return "failed" if listed else "unseen"


def attempt_entry(entry: Entry, history: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The history entry of `entry`'s attempt once listed (the first not Failed)."""
    offering = str(entry.get("OfferingId") or "")
    listed = entries_of(history, offering)[int(entry.get("Baseline") or 0) :]
    return next((e for e in listed if e.get("Status") != "Failed"), None)


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


def claimed_elsewhere_message(what: str, entry: Entry, waited: int) -> str:
    return (
        f"{what} was not bought by this event: the purchase ledger shows {entry.key} claimed "
        f"by another invocation (request {entry.request_id or '?'}) that has not called the "
        f"service in {waited} s; a claim that never reached the service is taken over by "
        "the next deploy, so deploy again"
    )


def other_attempt_ended_message(what: str, entry: Entry) -> str:
    return (
        f"{what} was not bought: another invocation held the claim and its attempt ended "
        f"{entry.state} ({entry.get('Error') or entry.get('Detail') or 'no detail'}), which "
        "bought nothing; deploy again to try anew"
    )


def unknown_hours_message(name: str, offerings: Sequence[str]) -> str:
    return (
        f"extension {name} was not bought: the plan's extension history lists "
        f"{', '.join(offerings)} without DurationHours, so how far the plan is extended is "
        "unknown and novapod does not buy on a guess; check the plan's end time with "
        "`aws sagemaker describe-training-plan` and, if the extension is in place, nothing "
        "needs buying (remove extend or raise it past the plan's hours)"
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
