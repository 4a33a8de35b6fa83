"""Fault matrix of a plan's extension: CloudFormation lifecycles of the TrainingPlan
handler with `extend` properties, against the fake AWS.

ExtendTrainingPlan has no client token, so the invariant is read from the fake's own
record of what it sold: never more extensions bought than approvals sent, and exactly
the expected number of ExtendTrainingPlan requests (faulted ones included). Each
scenario then checks the exact attributes of a success or the message of a failure.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
import pytest

from novapod.capacity.naming import extension_name
from novapod.constructs.training_plan.handler import index
from tests.fakes.aws_control_plane import Fault
from tests.handlers.interleave import Crash, crashing_before, interleaved
from tests.handlers.lifecycle import CREATE_FAILED_MARKER, Outcome, Stack
from tests.handlers.world import PLAN, T0, World, extension_offerings

ARN = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}"
EXT48 = extension_name(PLAN, 48)
EXT96 = extension_name(PLAN, 96)
# The plan bought from tpo-cheap (2030-01-06 to 2030-01-08), as the faults matrix has it.
PLAN_DATA = {
    "PlanArn": ARN,
    "PlanName": PLAN,
    "Status": "Scheduled",
    "AvailabilityZone": "us-east-1b",
    "AvailabilityZoneId": "use1-az6",
    "SubnetIds": "subnet-0b1,subnet-0b2",
    "SubnetId": "subnet-0b1",
    "StartTime": "2030-01-06T00:00:00Z",
    "EndTime": "2030-01-08T00:00:00Z",
    "UpfrontFee": "90000.00",
    "CurrencyCode": "USD",
}
# Extended by 48 h in the update that follows the purchase (at T0 + 30 s).
EXTENDED = {
    **PLAN_DATA,
    "EndTime": "2030-01-10T00:00:00Z",
    "ExtensionName": EXT48,
    "ExtendedHours": "48",
}
EXTENDED_NOW = {**EXTENDED, "ExtendedAt": "2030-01-01T00:00:30Z"}
RERUN = "re-run the deploy, which reads the plan's extensions first and never extends twice"
CHECK = f"`aws sagemaker describe-training-plan-extension-history --training-plan-arn {ARN}`"
# A shorter pending timeout than World.props' 600 s: 5 polls, 30 s apart.
SHORT = {"PendingTimeoutSeconds": "120"}
KEY = f"extension#{EXT48}"
T0_PLUS_DAY = T0 + timedelta(days=1)


def may_have_been_bought(*, waited: int = 120, offering: str = "tpeo-cheap", error: str) -> str:
    """is_complete's sentence when an ambiguous purchase never shows (literal text)."""
    return (
        f"extension {EXT48} may have been bought: the purchase ledger holds {KEY} as ambiguous "
        f"(offering {offering}: {error}) and the plan's extension history has not listed a new "
        f"purchase of {offering} in {waited} s, so no deploy extends the plan again while that "
        f"item stands; check with {CHECK} and only if it lists no new extension {offering}, "
        f"release the claim with `novapod purchases CONFIG --release {KEY}`, then deploy again"
    )


def extension_item(w: World) -> dict[str, Any] | None:
    """The extension's ledger item (plain values), or None."""
    items = [i for i in w.ledger() if i["Purchase"] == KEY]
    return items[0] if items else None


def release(w: World) -> None:
    """What the operator runs after checking (novapod purchases --release), via its code."""
    from novapod.constructs.handler_core import ledger
    from novapod.operate import purchases
    from tests.handlers.world import ENVIRONMENT, LEDGER_TABLE

    book = ledger.Ledger(boto3.client("dynamodb"), LEDGER_TABLE, ENVIRONMENT)
    purchases.release(book, KEY, force=True)  # the fake clock runs in 2030


@contextmanager
def crashing_extend(*, after_sending: bool) -> Iterator[None]:
    """on_event is killed just before ExtendTrainingPlan is sent, or just after it bought."""
    real = index._client

    def client(service: str, **kwargs: Any) -> Any:
        inner = real(service, **kwargs)

        class Crashing:
            def __getattr__(self, name: str) -> Any:
                return getattr(inner, name)

            def extend_training_plan(self, **params: Any) -> Any:
                if after_sending:
                    inner.extend_training_plan(**params)
                raise Crash("on_event killed")

        return Crashing()

    index._client = client  # type: ignore[assignment]
    try:
        yield
    finally:
        index._client = real  # type: ignore[assignment]


def update_event(w: World, stack: Stack, props: dict[str, Any]) -> dict[str, Any]:
    return w.driver.event("Update", props, physical_id=PLAN, old_props=stack.props or {})


@dataclass(frozen=True)
class Expect:
    """calls: ExtendTrainingPlan requests received; bought: extensions the fake sold;
    approvals: distinct extensions approved in the scenario (what adds time, every
    extension bought but Failed ones, never exceeds it); ledger: the extension's ledger
    item at the end as (state, attempt), None when there must be none ("unchecked": not
    checked)."""

    calls: int
    bought: int
    data: dict[str, str] | None = None
    error: str | None = None  # "{URL}" stands for the fake's endpoint URL
    approvals: int = 1
    max_total: int = 48  # the largest total approved: hours added never exceed it
    ledger: tuple[str, int] | str | None = "unchecked"


@dataclass(frozen=True)
class Scenario:
    run: Callable[[World], Outcome]
    expect: Expect


SCENARIOS: dict[str, Scenario] = {}


def scenario(expect: Expect) -> Callable[[Callable[[World], Outcome]], Callable[[World], Outcome]]:
    def register(run: Callable[[World], Outcome]) -> Callable[[World], Outcome]:
        SCENARIOS[run.__name__] = Scenario(run, expect)
        return run

    return register


def bought(w: World) -> Stack:
    """A stack whose plan was bought (without extend) and is Scheduled; offerings set."""
    extension_offerings(w.plane)
    stack = w.stack()
    assert stack.create(w.props()).ok
    return stack


# --- extending ---------------------------------------------------------------------------


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, ledger=("bought", 1)))
def update_extends_the_bought_plan_with_the_cheapest_fitting_offering(w: World) -> Outcome:
    stack = bought(w)
    mark = w.plane.mark()
    outcome = stack.update(w.extend_props())
    assert not stack.rolled_back
    assert w.plane.operations_since(mark, ledger=True) == [
        "DescribeTrainingPlan",
        "GetItem",  # plan#: bought by the create
        "DescribeTrainingPlanExtensionHistory",
        "GetItem",  # extension#: not in the ledger
        "ListTags",  # no purchase marked by an earlier novapod version
        "Query",  # the plan's other extensions in the ledger: none
        "PutItem",  # claimed before the search
        "SearchTrainingPlanOfferings",
        "PutItem",  # calling, with the offering, right before the purchase
        "ExtendTrainingPlan",
        "PutItem",  # bought
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
        "DescribeTrainingPlanExtensionHistory",  # Pending (payment)
        "GetItem",
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
        "DescribeTrainingPlanExtensionHistory",  # Scheduled
        "GetItem",
    ]
    item = extension_item(w)
    assert item is not None
    assert item["Fields"]["OfferingId"] == "tpeo-cheap"
    assert item["Fields"]["BaselineShown"] == 0  # no earlier entry of tpeo-cheap
    assert item["Fields"]["BaselineFailed"] == 0
    assert item["Fields"]["Total"] == 48 and item["Fields"]["Plan"] == PLAN
    assert item["Fields"]["UpfrontFee"] == "30000.00"
    assert item["Fields"]["Approval"] == EXT48
    assert item["Fields"]["BoughtAt"] == "2030-01-01T00:00:30Z"
    assert item["Sequence"] == 3 and item["Environment"] == "test"
    assert w.plane.calls_to("SearchTrainingPlanOfferings")[-1] == {
        "TrainingPlanArn": ARN,
        "DurationHours": 48,
    }
    assert w.plane.calls_to("ExtendTrainingPlan") == [
        {"TrainingPlanExtensionOfferingId": "tpeo-cheap"}
    ]
    assert w.plane.tag_values(PLAN)["project"] == "novapod"  # the plan's own tags stay
    assert outcome.polls == 2 and outcome.physical_id == PLAN
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED))
def duplicated_update_event_extends_once(w: World) -> Outcome:
    stack = bought(w)
    event = w.driver.event(
        "Update", w.extend_props(), physical_id=PLAN, old_props=stack.props or {}
    )
    assert w.driver.send(event).data == EXTENDED_NOW
    mark = w.plane.mark()
    second = w.driver.send(event)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return second


@scenario(Expect(calls=1, bought=1, data=EXTENDED))
def duplicated_event_seen_by_the_end_time_only_extends_once(w: World) -> Outcome:
    # The history lags behind the plan's end time: either read is enough.
    stack = bought(w)
    w.plane.lag_extensions(history_reads=20)
    event = w.driver.event(
        "Update", w.extend_props(), physical_id=PLAN, old_props=stack.props or {}
    )
    first = w.driver.send(event)
    assert first.ok, first.reason
    return w.driver.send(event)


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW))
def extend_response_lost_to_a_timeout_is_confirmed_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="timeout", seconds=2.0)
    return stack.update(w.extend_props())


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW))
def extend_connection_dropped_is_confirmed_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="drop")
    return stack.update(w.extend_props())


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW))
def extend_500_after_extending_is_confirmed_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="server_error")
    return stack.update(w.extend_props())


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, ledger=("bought", 1)))
def extend_reset_after_extending_and_shown_late_is_awaited_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="reset")
    w.plane.lag_extensions(history_reads=1, describe_reads=1)  # the first poll misses it
    outcome = stack.update(w.extend_props())
    after = w.plane.operations(ledger=True)
    after = after[after.index("ExtendTrainingPlan") + 1 :]
    # No confirming reads in on_event: the item is ambiguous, is_complete reconciles it.
    assert after[:8] == [
        "PutItem",  # ambiguous
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
        "DescribeTrainingPlanExtensionHistory",
        "GetItem",  # ambiguous; the history does not list tpeo-cheap yet
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
        "DescribeTrainingPlanExtensionHistory",
    ]
    assert outcome.polls == 3
    item = extension_item(w)
    assert item is not None and item["Fields"]["Source"] == "reconciled"
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED, ledger=("bought", 1)))
def lost_answer_never_shown_in_time_fails_then_the_next_deploy_does_not_extend_again(
    w: World,
) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="drop")
    # Unseen by every read of the first deploy (5 polls) and its rollback.
    w.plane.lag_extensions(history_reads=6, describe_reads=9)
    rolled_back = stack.update(w.extend_props(**SHORT))
    failed = stack.history[-2]
    assert stack.rolled_back and rolled_back.ok
    assert failed.reason == may_have_been_bought(
        error="ConnectionClosedError: Connection was closed before we received a valid "
        f'response from endpoint URL: "{w.plane.url}/".'
    )
    mark = w.plane.mark()
    again = stack.update(w.extend_props(**SHORT))  # the next deploy, extend unchanged
    assert "ExtendTrainingPlan" not in w.plane.operations_since(mark)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return again


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, ledger=("bought", 1)))
def lost_answer_and_throttled_reads_keep_waiting_and_buy_once(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="drop")
    w.plane.throttle("DescribeTrainingPlanExtensionHistory", times=3, after=1)
    outcome = stack.update(w.extend_props())
    # The first poll's history read is throttled through botocore's three attempts.
    assert outcome.polls == 3
    return outcome


@scenario(
    Expect(
        calls=1,
        bought=0,
        error=f"ExtendTrainingPlan for {EXT48} was refused (ThrottlingException: Rate "
        f"exceeded), so nothing was bought; fix the cause, then {RERUN}",
        ledger=("refused", 1),
    )
)
def extend_throttled_buys_nothing_and_is_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("ExtendTrainingPlan", times=3)
    stack.update(w.extend_props())
    assert w.plane.operations().count("ExtendTrainingPlan") == 1
    item = extension_item(w)
    assert item is not None and item["Fields"]["Error"] == "ThrottlingException: Rate exceeded"
    return stack.history[-2]


@scenario(
    Expect(
        calls=1,
        bought=0,
        error="ExtendTrainingPlan for "
        f"{EXT48} was refused (ResourceNotFound: injected ResourceNotFound), so nothing was "
        f"bought; fix the cause, then {RERUN}",
        ledger=("refused", 1),
    )
)
def extend_of_an_offering_gone_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.error("ExtendTrainingPlan", "ResourceNotFound")
    stack.update(w.extend_props())
    return stack.history[-2]


@scenario(Expect(calls=1, bought=1, data=EXTENDED, ledger=("bought", 1)))
def a_duplicated_invocation_before_the_purchase_shows_waits_and_buys_nothing(
    w: World,
) -> Outcome:
    # The window reads alone leave open: bought, but neither read shows it yet.
    stack = bought(w)
    w.plane.lag_extensions(history_reads=3, describe_reads=3)
    event = update_event(w, stack, w.extend_props())
    index.on_event(copy.deepcopy(event), None)  # the first invocation buys
    mark = w.plane.mark()
    outcome = w.driver.send(event)  # the duplicate finds the item bought, not shown
    assert w.plane.operations_since(mark, ledger=True)[:4] == [
        "DescribeTrainingPlan",
        "GetItem",
        "DescribeTrainingPlanExtensionHistory",
        "GetItem",  # extension#: bought
    ]
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    assert outcome.polls == 4  # until the history shows it (and it is paid)
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=0,
        error="the cheapest extension offering tpeo-cheap costs 30000.00 USD, above "
        f"ExtensionMaxUpfrontFee 25000 USD, so training plan {PLAN} was not extended; raise "
        "extend.max_upfront_fee or extend by less",
    )
)
def extension_above_its_cap_is_refused(w: World) -> Outcome:
    stack = bought(w)
    stack.update(w.extend_props(ExtensionMaxUpfrontFee="25000"))
    assert stack.rolled_back
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        error="SearchTrainingPlanOfferings found no extension offering of 72 h for training plan "
        f"{PLAN}, so it was not extended and nothing was bought; extensions depend on spare "
        "capacity after the plan's end: try fewer hours, or later",
    )
)
def no_extension_offering_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.near_matches.clear()
    stack.update(w.extend_props(72))
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        error=f"none of the 2 extension offerings for training plan {PLAN} fits 72 h, so it "
        "was not extended and nothing was bought (tpeo-eur: it adds 48 h, not 72 h, it is "
        "priced in EUR, not in USD (the currency of ExtensionMaxUpfrontFee); tpeo-elsewhere: "
        "it adds 48 h, not 72 h, its zone us-east-1a is not the plan's (us-east-1b))",
    )
)
def only_unfit_extension_offerings_buy_nothing(w: World) -> Outcome:
    stack = bought(w)
    stack.update(w.extend_props(72))
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        error=f"extension {EXT48} is not approved: ApprovedExtensionName is "
        f"'{EXT96}', and the custom resource extends a plan only when it equals "
        "ExtensionName (extend.approve in the config names this exact extension)",
    )
)
def unapproved_extension_makes_no_call_at_all(w: World) -> Outcome:
    stack = bought(w)
    mark = w.plane.mark()
    props = w.extend_props(ApprovedExtensionName=EXT96)
    outcome = w.driver.send(
        w.driver.event("Update", props, physical_id=PLAN, old_props=stack.props or {})
    )
    assert w.plane.operations_since(mark) == []
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=0,
        error=f"training plan {PLAN} does not exist, so extension {EXT48} cannot be bought and "
        "nothing was bought: extend lengthens a plan already bought; buy the plan first "
        "(without extend), or buy it for the longer duration_hours",
    )
)
def extending_a_plan_not_yet_bought_buys_neither(w: World) -> Outcome:
    extension_offerings(w.plane)
    outcome = w.stack().create(w.extend_props())
    assert "CreateTrainingPlan" not in w.plane.operations()
    assert w.plane.operations() == ["DescribeTrainingPlan"]
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=0,
        error=f"training plan {PLAN} is Pending, and SageMaker sells extensions only of "
        f"Scheduled or Active plans, so extension {EXT48} was not bought; pay the invoice or "
        "wait until the plan is Scheduled, then deploy again",
    )
)
def a_pending_plan_is_not_extended(w: World) -> Outcome:
    extension_offerings(w.plane)
    w.plane.add_plan(PLAN, w.plane.offerings[2], statuses=["Pending"])
    return w.stack().create(w.extend_props())


@scenario(
    Expect(
        calls=0,
        bought=0,
        error=f"training plan {PLAN} is extended by 0 h, so reaching 360 h needs 360 h more, "
        "which SageMaker does not sell as one extension (whole days up to 336 h, whole weeks "
        "up to 4368 h); nothing was bought: choose an extend.duration_hours that leaves such a "
        "difference",
    )
)
def a_length_not_sold_as_one_extension_is_refused(w: World) -> Outcome:
    stack = bought(w)
    stack.update(w.extend_props(360))
    return stack.history[-2]


# --- rollback, smaller totals, earlier extensions ---------------------------------------


@scenario(Expect(calls=1, bought=1, data=EXTENDED))
def rollback_after_another_resource_failed_keeps_the_extension_and_buys_no_second(
    w: World,
) -> Outcome:
    stack = bought(w)
    rollback = stack.update(w.extend_props(), another_resource_fails=True)
    assert stack.rolled_back and rollback.ok
    # The rollback carries the old properties (no extend): nothing undone, nothing bought.
    assert rollback.data["EndTime"] == "2030-01-10T00:00:00Z"
    mark = w.plane.mark()
    again = stack.update(w.extend_props())  # the next deploy
    assert "ExtendTrainingPlan" not in w.plane.operations_since(mark)
    return again


@scenario(
    Expect(
        calls=2,
        bought=2,
        approvals=2,
        max_total=96,
        data={
            **EXTENDED,
            "EndTime": "2030-01-12T00:00:00Z",
            "ExtensionName": EXT96,
            "ExtendedHours": "96",
            "ExtendedAt": "2030-01-01T00:01:00Z",
        },
    )
)
def a_larger_total_with_its_own_approval_buys_the_difference(w: World) -> Outcome:
    stack = bought(w)
    assert stack.update(w.extend_props()).ok
    outcome = stack.update(w.extend_props(96))
    assert w.plane.calls_to("SearchTrainingPlanOfferings")[-1]["DurationHours"] == 48
    return outcome


@scenario(Expect(calls=1, bought=1, data={**EXTENDED, "ExtensionName": extension_name(PLAN, 24)}))
def a_smaller_total_undoes_nothing_and_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    assert stack.update(w.extend_props()).ok
    outcome = stack.update(w.extend_props(24))
    searches = w.plane.calls_to("SearchTrainingPlanOfferings")
    assert [s for s in searches if "TrainingPlanArn" in s] == [
        {"TrainingPlanArn": ARN, "DurationHours": 48}
    ]
    return outcome


@scenario(
    Expect(
        calls=1,
        bought=2,  # the earlier extension (bought elsewhere) and ours
        data={**EXTENDED_NOW, "ExtendedHours": "48"},
    )
)
def an_earlier_extension_counts_and_only_the_rest_is_bought(w: World) -> Outcome:
    stack = bought(w)
    w.plane.add_extension(PLAN, 24)
    outcome = stack.update(w.extend_props())
    assert w.plane.calls_to("ExtendTrainingPlan") == [
        {"TrainingPlanExtensionOfferingId": "tpeo-24h"}
    ]
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=3,
        approvals=0,
        data={**EXTENDED, "EndTime": "2030-01-11T00:00:00Z", "ExtendedHours": "72"},
    )
)
def a_paginated_history_is_read_to_its_end(w: World) -> Outcome:
    stack = bought(w)
    w.plane.history_page_size = 1
    for hours in (24, 24, 24):
        w.plane.add_extension(PLAN, hours)
    mark = w.plane.mark()
    outcome = stack.update(w.extend_props())
    assert w.plane.operations_since(mark)[:4] == [
        "DescribeTrainingPlan",
        "DescribeTrainingPlanExtensionHistory",
        "DescribeTrainingPlanExtensionHistory",
        "DescribeTrainingPlanExtensionHistory",
    ]
    return outcome


@scenario(
    Expect(
        calls=1,
        bought=1,
        error=f"extension {EXT48} was bought but SageMaker lists its purchase of tpeo-cheap as "
        "Failed (payment failed), which adds no time; the purchase ledger records "
        f"{KEY} as failed, so the next deploy extends again under the same approval and cap, "
        "or remove extend",
    )
)
def a_failed_extension_fails_the_deploy_and_says_what_comes_next(w: World) -> Outcome:
    stack = bought(w)
    w.plane.extension_statuses = (("Failed", "Failed"),)
    stack.update(w.extend_props())
    return stack.history[-2]


# --- Delete ------------------------------------------------------------------------------


@scenario(Expect(calls=1, bought=1))
def delete_keeps_the_plan_and_its_extension_and_calls_nothing(w: World) -> Outcome:
    stack = bought(w)
    assert stack.update(w.extend_props()).ok
    mark = w.plane.mark()
    outcome = stack.delete()
    assert w.plane.operations_since(mark) == []
    return outcome


# --- the purchase ledger: the double purchases of issue 18, concurrency, crashes, faults --


def ledger_unusable(detail: str, *, what: str = f"extension {EXT48}") -> str:
    return (
        f"{what} was not bought by this event: "
        f"the purchase ledger could not be used ({detail}), and "
        "novapod buys only under a claim in it; no purchase call was made, deploy again "
        "once the table answers"
    )


@scenario(Expect(calls=2, bought=2, data=EXTENDED, ledger=("bought", 2)))
def a_failed_extension_then_the_same_offering_rerun_buys_once(w: World) -> Outcome:
    # Issue 18 §1: deploy 1's extension fails payment; deploy 2 buys the same offering ID;
    # on_event runs again before the history lists the new purchase. The old Failed entry
    # of tpeo-cheap is the baseline, never this attempt's outcome: 48 h, not 96 h.
    stack = bought(w)
    w.plane.extension_statuses = (("Failed", "Failed"),)
    first = stack.update(w.extend_props())
    assert first.ok and stack.rolled_back
    assert (extension_item(w) or {})["State"] == "failed"
    w.plane.extension_statuses = (("Pending", "Pending"), ("Active", "Completed"))
    w.plane.lag_extensions(history_reads=3, describe_reads=3)  # the second shows late
    event = update_event(w, stack, w.extend_props())
    index.on_event(copy.deepcopy(event), None)  # deploy 2 buys tpeo-cheap again
    item = extension_item(w)
    assert item is not None and (
        item["Fields"]["BaselineShown"],
        item["Fields"]["BaselineFailed"],
    ) == (0, 1)  # the Failed entry
    assert [a["State"] for a in item["Attempts"]] == ["failed"]
    mark = w.plane.mark()
    outcome = w.driver.send(event)  # re-invoked: the item says bought, nothing is bought
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return outcome


@scenario(
    Expect(
        calls=2,
        bought=2,
        data=EXTENDED,
        ledger=("bought", 2),
    )
)
def a_failed_extension_then_a_lost_bought_record_is_settled_by_offering_and_baseline(
    w: World,
) -> Outcome:
    # As above, and the `bought` write of deploy 2 is refused: the item stays `calling`
    # with tpeo-cheap beyond one earlier entry, so the rerun sees the old Failed entry as
    # not this attempt's, waits, and settles it once the new purchase is listed.
    stack = bought(w)
    w.plane.extension_statuses = (("Failed", "Failed"),)
    assert stack.update(w.extend_props()).ok and stack.rolled_back
    w.plane.extension_statuses = (("Pending", "Pending"), ("Active", "Completed"))
    w.plane.lag_extensions(history_reads=3, describe_reads=3)
    event = update_event(w, stack, w.extend_props())
    # Deploy 2's writes: the claim, calling, then bought (refused).
    w.plane.inject("PutItem", Fault("error", code="AccessDeniedException", message="no"), after=2)
    index.on_event(copy.deepcopy(event), None)
    assert (extension_item(w) or {})["State"] == "calling"
    mark = w.plane.mark()
    outcome = w.driver.send(event)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    assert (extension_item(w) or {})["Fields"]["Source"] == "reconciled"
    return outcome


@scenario(
    Expect(
        calls=1,
        bought=1,
        data={**EXTENDED, "ExtendedAt": "2030-01-01T00:00:30Z"},
        ledger=("bought", 1),
    )
)
def a_history_entry_without_duration_hours_is_never_bought_again(w: World) -> Outcome:
    # Issue 18 §1: DurationHours is optional in the history; the ledger, not the hours,
    # says the extension is bought, so a rerun buys nothing.
    stack = bought(w)
    w.plane.history_omits_duration_hours = True
    event = update_event(w, stack, w.extend_props())
    first = w.driver.send(event)
    assert first.ok, first.reason
    mark = w.plane.mark()
    again = w.driver.send(event)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    assert again.ok
    return first


@scenario(
    Expect(
        calls=0,
        bought=1,
        approvals=0,
        error=(
            f"extension {EXT48} was not bought: the plan's extension history lists tpeo-earlier-0 "
            "without DurationHours, so how far the plan is extended is unknown and novapod does not "
            "buy on a guess; check the plan's end time with `aws sagemaker describe-training-plan` "
            "and, if the extension is in place, nothing needs buying (remove extend or raise it past "
            "the plan's hours)"
        ),
        ledger=("released", 1),
    )
)
def an_unknown_extension_length_is_never_bought_on_a_guess(w: World) -> Outcome:
    stack = bought(w)
    w.plane.add_extension(PLAN, 24)
    w.plane.history_omits_duration_hours = True
    w.plane.lag_extensions(describe_reads=20)  # nor does the end time show it
    stack.update(w.extend_props())
    return stack.history[-2]


@scenario(Expect(calls=1, bought=1, data=EXTENDED, ledger=("bought", 1)))
def two_concurrent_events_claim_once_even_with_stale_reads(w: World) -> Outcome:
    # The other event runs whole between this one's read and its claim; eventually
    # consistent reads would show neither claim, so the handlers read strongly.
    stack = bought(w)
    w.plane.dynamodb.stale_reads(100)
    event = update_event(w, stack, w.extend_props())
    other: list[Outcome] = []
    with interleaved({("PutItem", 0): lambda: other.append(w.driver.send(event))}):
        outcome = w.driver.send(event)
    assert other[0].ok and other[0].data == EXTENDED_NOW  # the one that bought
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED, ledger=("bought", 1)))
def a_concurrent_event_between_calling_and_the_purchase_waits_and_buys_nothing(
    w: World,
) -> Outcome:
    stack = bought(w)
    event = update_event(w, stack, w.extend_props())
    other: list[dict[str, Any]] = []
    duplicate = {
        ("ExtendTrainingPlan", 0): lambda: other.append(index.on_event(copy.deepcopy(event), None))
    }
    with interleaved(duplicate):
        first = w.driver.send(event)
    assert first.ok, first.reason
    (result,) = other
    assert "ExtendedAt" not in result["Data"]  # it found the item calling, bought nothing
    return w.driver.complete(event, result)


@scenario(Expect(calls=1, bought=1, data=EXTENDED, ledger=("bought", 1)))
def a_claim_taken_over_before_the_call_makes_its_claimant_back_off(w: World) -> Outcome:
    # The other event finds this one's claim (never called) and takes it over; this
    # one's `calling` write then fails its condition, so it never calls.
    stack = bought(w)
    event = update_event(w, stack, w.extend_props())
    other: list[Outcome] = []
    with interleaved({("PutItem", 1): lambda: other.append(w.driver.send(event))}):
        outcome = w.driver.send(event)
    assert other[0].ok and other[0].data == EXTENDED_NOW
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, ledger=("bought", 1)))
def a_crash_after_the_claim_is_taken_over_by_the_next_deploy(w: World) -> Outcome:
    stack = bought(w)
    event = update_event(w, stack, w.extend_props())
    with crashing_before("SearchTrainingPlanOfferings"), pytest.raises(Crash):
        w.driver.send(event)
    assert (extension_item(w) or {})["State"] == "claimed"
    return stack.update(w.extend_props())  # the next deploy takes the claim over


@scenario(
    Expect(
        calls=1,
        bought=1,
        data={**EXTENDED, "ExtendedAt": "2030-01-01T00:02:30Z"},
        ledger=("bought", 2),
    )
)
def a_crash_between_calling_and_extending_blocks_until_released(w: World) -> Outcome:
    stack = bought(w)
    event = update_event(w, stack, w.extend_props(**SHORT))
    with crashing_extend(after_sending=False), pytest.raises(Crash):
        w.driver.send(event)
    retried = w.driver.send(event)  # the same event again: waits, never buys past it
    assert retried.reason == may_have_been_bought(
        error="the call was made, its answer is unknown"
    ).replace(f"holds {KEY} as ambiguous", f"holds {KEY} as calling")
    assert w.plane.operations().count("ExtendTrainingPlan") == 0
    release(w)  # the history lists nothing: the operator releases the claim
    outcome = stack.update(w.extend_props(**SHORT))
    assert [a["State"] for a in (extension_item(w) or {})["Attempts"]] == ["released"]
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED, ledger=("bought", 1)))
def a_crash_between_extending_and_recording_bought_never_buys_again(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lag_extensions(history_reads=2, describe_reads=2)
    event = update_event(w, stack, w.extend_props())
    with crashing_extend(after_sending=True), pytest.raises(Crash):
        w.driver.send(event)
    mark = w.plane.mark()
    outcome = w.driver.send(event)  # retried: calling, not shown yet
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=0,
        ledger=None,
        error=ledger_unusable(
            f"reading purchase {KEY} from the purchase ledger novapod-test-PurchaseLedger failed "
            "(AccessDeniedException: denied)"
        ),
    )
)
def a_ledger_that_cannot_be_read_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    # The plan's item reads; the extension's does not.
    w.plane.inject(
        "GetItem", Fault("error", code="AccessDeniedException", message="denied"), after=1
    )
    stack.update(w.extend_props())
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        ledger=None,
        error=ledger_unusable(
            f"writing claimed for purchase {KEY} to the purchase ledger novapod-test-PurchaseLedger "
            "failed (ThrottlingException: Rate of requests exceeds the allowed throughput.)"
        ),
    )
)
def a_claim_throttled_past_its_retries_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("PutItem", times=3)
    stack.update(w.extend_props())
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        ledger=None,
        error=ledger_unusable(
            f"writing claimed for purchase {KEY} to the purchase ledger novapod-test-PurchaseLedger "
            "failed (ProvisionedThroughputExceededException: exceeded)"
        ),
    )
)
def a_claim_refused_for_throughput_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    fault = Fault("error", code="ProvisionedThroughputExceededException", message="exceeded")
    w.plane.inject("PutItem", fault, times=3)
    stack.update(w.extend_props())
    return stack.history[-2]


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, ledger=("bought", 1)))
def a_claim_throttled_once_is_retried_and_buys_once(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("PutItem", times=1)
    return stack.update(w.extend_props())


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, ledger=("bought", 1)))
def a_claim_applied_then_answered_500_is_settled_by_a_read_and_buys_once(w: World) -> Outcome:
    # botocore resends it; the resend fails its condition; a strong read shows our claim.
    stack = bought(w)
    w.plane.lose_response("PutItem", how="server_error")
    mark = w.plane.mark()
    outcome = stack.update(w.extend_props())
    # The claim twice (the resend fails its condition), then calling and bought.
    assert w.plane.operations_since(mark, ledger=True).count("PutItem") == 4
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=0,
        ledger=("claimed", 1),
        error=ledger_unusable(
            f"writing calling for purchase {KEY} to the purchase ledger novapod-test-PurchaseLedger "
            "failed (AccessDeniedException: no)"
        ),
    )
)
def a_refused_calling_write_buys_nothing_and_leaves_a_claim_the_next_deploy_takes(
    w: World,
) -> Outcome:
    stack = bought(w)
    w.plane.inject("PutItem", Fault("error", code="AccessDeniedException", message="no"), after=1)
    stack.update(w.extend_props())
    failed = stack.history[-2]
    # The rollback (no extend) buys nothing; the next deploy takes the claim over.
    return failed


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, ledger=("bought", 1)))
def a_refused_bought_write_is_settled_from_the_history(w: World) -> Outcome:
    stack = bought(w)
    w.plane.inject("PutItem", Fault("error", code="AccessDeniedException", message="no"), after=2)
    outcome = stack.update(w.extend_props())
    assert (extension_item(w) or {})["Fields"]["Source"] == "reconciled"
    return outcome


@scenario(Expect(calls=2, bought=1, data=EXTENDED_NOW, ledger=("bought", 2)))
def a_refused_extension_lets_the_next_deploy_claim_a_second_attempt(w: World) -> Outcome:
    stack = bought(w)
    w.plane.error("ExtendTrainingPlan", "ResourceLimitExceeded")
    assert stack.update(w.extend_props()).ok and stack.rolled_back
    assert (extension_item(w) or {})["State"] == "refused"
    return stack.update(w.extend_props())


@scenario(
    Expect(
        calls=2,
        bought=1,
        data={**EXTENDED, "ExtendedAt": "2030-01-01T00:04:30Z"},
        ledger=("bought", 2),
    )
)
def a_500_that_bought_nothing_is_never_rebought_until_released(w: World) -> Outcome:
    stack = bought(w)
    w.plane.server_error("ExtendTrainingPlan")
    first = stack.update(w.extend_props(**SHORT))
    assert stack.rolled_back and first.ok
    ambiguous = may_have_been_bought(error="InternalFailure: An internal error occurred")
    assert stack.history[-2].reason == ambiguous
    mark = w.plane.mark()
    second = stack.update(w.extend_props(**SHORT))  # waits for the ambiguous purchase again
    assert stack.history[-2].reason == ambiguous.replace("in 120 s", "in 120 s")
    assert second.ok and "ExtendTrainingPlan" not in w.plane.operations_since(mark)
    release(w)  # the operator checks the history (nothing listed) and releases it
    return stack.update(w.extend_props(**SHORT))


def add_marker(w: World, key: str, value: str) -> None:
    """A purchase marker an earlier novapod version tagged on the plan."""
    w.plane.tag_plan(PLAN, key, value)


OLD_MARKER = f"novapod-extension:{EXT48}:0a1b2c3d4e5f"


@scenario(
    Expect(
        calls=0,
        bought=1,
        approvals=0,
        data={**EXTENDED, "EndTime": "2030-01-10T00:00:00Z"},
        ledger=("bought", 1),
    )
)
def an_extension_bought_under_a_tag_marker_is_adopted_and_its_marker_removed(
    w: World,
) -> Outcome:
    stack = bought(w)
    w.plane.add_extension(PLAN, 48)
    add_marker(w, OLD_MARKER, "bought tpeo-earlier-0")
    outcome = stack.update(w.extend_props())
    item = extension_item(w)
    assert item is not None and item["Fields"]["Source"] == "adopted"
    assert w.plane.calls_to("DeleteTags") == [{"ResourceArn": ARN, "TagKeys": [OLD_MARKER]}]
    assert OLD_MARKER not in w.plane.tag_values(PLAN)
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=0,
        approvals=0,
        ledger=("ambiguous", 1),
        error=(
            f"extension {EXT48} may have been bought: the purchase ledger holds {KEY} as ambiguous "
            f"(offering tpeo-cheap: tag {OLD_MARKER} of an earlier novapod marks it pending) and the "
            "plan's extension history has not listed a new purchase of tpeo-cheap in 120 s, so no "
            f"deploy extends the plan again while that item stands; check with {CHECK} and only if "
            "it lists no new extension tpeo-cheap, release the claim with "
            f"`novapod purchases CONFIG --release {KEY}`, then deploy again"
        ),
    )
)
def a_pending_tag_marker_of_an_earlier_version_is_adopted_as_ambiguous(w: World) -> Outcome:
    stack = bought(w)
    add_marker(w, OLD_MARKER, "pending tpeo-cheap")  # its purchase never shown
    mark = w.plane.mark()
    stack.update(w.extend_props(**SHORT))
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    assert OLD_MARKER in w.plane.tag_values(PLAN)  # unresolved: kept
    return stack.history[-2]


@scenario(Expect(calls=2, bought=2, data=EXTENDED_NOW, ledger=("bought", 2)))
def a_failed_extension_lets_the_next_deploy_buy_again(w: World) -> Outcome:
    stack = bought(w)
    w.plane.extension_statuses = (("Failed", "Failed"),)
    assert stack.update(w.extend_props()).ok and stack.rolled_back
    w.plane.extension_statuses = (("Active", "Completed"),)
    return stack.update(w.extend_props())


# --- review findings: other totals, old markers, history order, stale claims ------------


@scenario(
    Expect(
        calls=2,
        bought=2,
        approvals=2,
        max_total=96,
        data={
            **EXTENDED,
            # The describe still lags behind the first 48 h; the history lists both.
            "EndTime": "2030-01-10T00:00:00Z",
            "ExtensionName": EXT96,
            "ExtendedHours": "96",
            "ExtendedAt": "2030-01-01T00:02:30Z",
        },
    )
)
def a_new_total_counts_a_bought_extension_the_history_does_not_show_yet(w: World) -> Outcome:
    # 48 h bought and never shown in the first deploy's wait; the user raises the total
    # to 96 h (approved anew): only 48 h more are bought, not 96 h.
    stack = bought(w)
    # Unseen by the first deploy's five polls, listed a few reads into the second.
    w.plane.lag_extensions(history_reads=7, describe_reads=30)
    assert stack.update(w.extend_props(**SHORT)).ok and stack.rolled_back
    assert (extension_item(w) or {})["State"] == "bought"
    outcome = stack.update(w.extend_props(96, **SHORT))
    assert w.plane.calls_to("SearchTrainingPlanOfferings")[-1]["DurationHours"] == 48
    return outcome


@scenario(
    Expect(
        calls=1,  # the earlier version's purchase (made by the test), Failed
        bought=1,
        approvals=1,
        ledger=("ambiguous", 1),
        error=(
            f"extension {EXT48} may have been bought: the purchase ledger holds {KEY} as "
            f"ambiguous (offering tpeo-cheap: tag novapod-extension:{EXT48}:0a1b2c3d4e5f of an "
            "earlier novapod marks it pending) and the plan's extension history has not listed "
            "a new purchase of tpeo-cheap in 120 s, so no deploy extends the plan again while "
            f"that item stands; check with {CHECK} and only if it lists no new extension "
            f"tpeo-cheap, release the claim with `novapod purchases CONFIG --release {KEY}`, "
            "then deploy again"
        ),
    )
)
def an_old_pending_marker_beside_a_failed_entry_of_its_offering_still_blocks(
    w: World,
) -> Outcome:
    # Issue 18 §1 in the migration: a Failed entry of tpeo-cheap proves nothing about a
    # later purchase of the same offering that an earlier version marked pending.
    stack = bought(w)
    w.plane.extension_statuses = (("Failed", "Failed"),)
    boto3.client("sagemaker").extend_training_plan(TrainingPlanExtensionOfferingId="tpeo-cheap")
    w.plane.extension_statuses = (("Active", "Completed"),)
    add_marker(w, OLD_MARKER, "pending tpeo-cheap")
    stack.update(w.extend_props(**SHORT))
    assert OLD_MARKER in w.plane.tag_values(PLAN)  # unresolved: never deleted
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        approvals=0,
        error=(
            f"extension {EXT96} was not bought by this event: the purchase ledger holds {KEY} of "
            f"the same plan as ambiguous (tag {OLD_MARKER} of an earlier novapod marks it "
            "pending), so how far the plan is extended is unknown; deploy again once it is "
            "settled, or check the plan's extension history and, only if it lists no such "
            f"purchase, release it with `novapod purchases CONFIG --release {KEY}`"
        ),
    )
)
def an_old_pending_marker_of_another_total_blocks_and_is_kept(w: World) -> Outcome:
    stack = bought(w)
    add_marker(w, OLD_MARKER, "pending tpeo-cheap")  # EXT48's purchase, never shown
    stack.update(w.extend_props(96, **SHORT))
    item = extension_item(w)
    assert item is not None and item["State"] == "ambiguous"
    assert OLD_MARKER in w.plane.tag_values(PLAN)
    return stack.history[-2]


@scenario(Expect(calls=2, bought=2, data=EXTENDED, ledger=("bought", 2)))
def a_failed_extension_then_the_same_offering_with_the_history_newest_first(w: World) -> Outcome:
    # The history's order is not documented: attempts are told apart by counts.
    w.plane.history_newest_first = True
    return a_failed_extension_then_the_same_offering_rerun_buys_once(w)


@scenario(
    Expect(
        calls=0,
        bought=0,
        ledger=("released", 1),
        error=(
            f"extension {EXT48} was not bought by this event: the purchase ledger showed {KEY} "
            "claimed by "
            "another invocation (request rival) that had not called the service in 120 s, and "
            "this event released that claim with a conditional write, so that invocation can "
            "no longer call; deploy again"
        ),
    )
)
def a_stale_claim_of_another_invocation_is_released_before_saying_nothing_was_bought(
    w: World,
) -> Outcome:
    from tests.handlers.world import LEDGER_TABLE

    stack = bought(w)
    rival = {
        "Environment": "test",
        "Purchase": KEY,
        "Kind": "extension",
        "Name": EXT48,
        "State": "claimed",
        "Sequence": 1,
        "Attempt": 1,
        "RequestId": "rival",
        "Claimant": "rival",
        "UpdatedAt": "2030-01-01T00:00:00Z",
        "WriteId": "w1",
        "Fields": {"Plan": PLAN, "Total": 48},
        "Attempts": [],
    }
    # The rival's claim lands just before ours: ours fails its condition, we wait.
    w.plane.dynamodb.rival_put("PutItem", LEDGER_TABLE, rival)
    stack.update(w.extend_props(**SHORT))
    return stack.history[-2]


# --- the matrix --------------------------------------------------------------------------


def test_the_extension_matrix_covers_the_acceptance_faults() -> None:
    for required in (
        "extend_response_lost_to_a_timeout_is_confirmed_not_resent",
        "duplicated_update_event_extends_once",
        "rollback_after_another_resource_failed_keeps_the_extension_and_buys_no_second",
        "extension_above_its_cap_is_refused",
        "no_extension_offering_buys_nothing",
        # the purchase ledger (issue 18): the two double purchases of §1, concurrency,
        # crashes before and after the call, lost, throttled and refused writes
        "a_failed_extension_then_the_same_offering_rerun_buys_once",
        "a_failed_extension_then_a_lost_bought_record_is_settled_by_offering_and_baseline",
        "a_history_entry_without_duration_hours_is_never_bought_again",
        "a_duplicated_invocation_before_the_purchase_shows_waits_and_buys_nothing",
        "two_concurrent_events_claim_once_even_with_stale_reads",
        "a_concurrent_event_between_calling_and_the_purchase_waits_and_buys_nothing",
        "a_claim_taken_over_before_the_call_makes_its_claimant_back_off",
        "a_crash_after_the_claim_is_taken_over_by_the_next_deploy",
        "a_crash_between_calling_and_extending_blocks_until_released",
        "a_crash_between_extending_and_recording_bought_never_buys_again",
        "a_ledger_that_cannot_be_read_buys_nothing",
        "a_claim_throttled_past_its_retries_buys_nothing",
        "a_claim_refused_for_throughput_buys_nothing",
        "a_claim_applied_then_answered_500_is_settled_by_a_read_and_buys_once",
        "a_refused_calling_write_buys_nothing_and_leaves_a_claim_the_next_deploy_takes",
        "a_refused_bought_write_is_settled_from_the_history",
        "a_500_that_bought_nothing_is_never_rebought_until_released",
        "a_pending_tag_marker_of_an_earlier_version_is_adopted_as_ambiguous",
    ):
        assert required in SCENARIOS


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_extension_fault_matrix(name: str, world: World) -> None:
    case = SCENARIOS[name]
    outcome = case.run(world)

    extensions = world.plane.extensions.get(PLAN, [])
    sold = len(extensions)
    # What adds time: ours, except purchases that Failed (payment), which add none.
    ours = [e for e in extensions if "earlier" not in e.offering_id]
    adding = [e for e in ours if e.statuses[-1][0] != "Failed"]
    assert len(adding) <= case.expect.approvals, (
        f"extended {len(adding)} times for {case.expect.approvals}"
    )
    # Counted in hours too: two purchases under two approvals may still overshoot.
    added = sum(e.hours for e in adding)
    assert added <= case.expect.max_total, f"{added} h added under {case.expect.max_total} h"
    assert sold == case.expect.bought
    assert world.plane.operations().count("ExtendTrainingPlan") == case.expect.calls
    assert max(world.plane.create_counts().values(), default=0) <= 1
    if case.expect.ledger != "unchecked":
        item = extension_item(world)
        assert (item and (item["State"], item["Attempt"])) == case.expect.ledger, item
    # The ledger replaced the tag markers: none is ever written.
    assert not [c for c in world.plane.calls_to("AddTags") if "novapod-extension" in str(c)]
    if case.expect.error is not None:
        assert not outcome.ok, outcome
        assert outcome.reason == case.expect.error.replace("{URL}", world.plane.url)
    else:
        assert outcome.ok, outcome.reason
        assert outcome.data == dict(case.expect.data or {})
    # Nothing waits in real time: the handler's pauses advance the fake clock (a wall-time
    # bound here flaked on a loaded machine; what it guarded is what slept).
    assert sum(world.slept) < 1, f"{name} slept {sum(world.slept):.1f} s in real time"


# --- what the logs say -------------------------------------------------------------------


def _steps(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_delete_says_the_extension_is_not_undone(world: World, capsys) -> None:
    stack = bought(world)
    assert stack.update(world.extend_props()).ok
    capsys.readouterr()
    assert stack.delete().ok
    (retain,) = [s for s in _steps(capsys.readouterr().out) if s["step"] == "retain"]
    assert retain["message"] == (
        f"keeping training plan {PLAN}: SageMaker training plans cannot be cancelled or "
        "deleted; the plan (if it exists) stays in the account until it expires, with every "
        "extension bought for it (extensions cannot be cancelled either)"
    )


def test_a_rollback_without_extend_says_the_extension_stays(world: World, capsys) -> None:
    stack = bought(world)
    capsys.readouterr()
    assert stack.update(world.extend_props(), another_resource_fails=True).ok
    kept = [s for s in _steps(capsys.readouterr().out) if s["step"] == "keep-extension"]
    assert [s["message"] for s in kept] == [
        f"training plan {PLAN} stays extended by 48 h (this request asks for 0 h): SageMaker "
        "extensions cannot be cancelled or undone, so nothing is bought or refunded"
    ]


def test_a_smaller_total_says_nothing_is_undone(world: World, capsys) -> None:
    stack = bought(world)
    assert stack.update(world.extend_props()).ok
    capsys.readouterr()
    assert stack.update(world.extend_props(24)).ok
    (kept,) = [s for s in _steps(capsys.readouterr().out) if s["step"] == "adopt-extension"]
    assert kept["message"] == (
        f"training plan {PLAN} stays extended by 48 h (this request asks for 24 h): SageMaker "
        "extensions cannot be cancelled or undone, so nothing is bought or refunded"
    )


def test_the_create_failed_marker_delete_of_a_refused_extension_calls_nothing(
    world: World,
) -> None:
    extension_offerings(world.plane)
    stack = world.stack()
    stack.create(world.extend_props(ApprovedExtensionName=None))
    assert stack.history[-1].physical_id == CREATE_FAILED_MARKER
    assert world.plane.calls == []


def test_the_extension_purchase_is_sent_once_by_a_client_that_never_retries(
    world: World, monkeypatch
) -> None:
    stack = bought(world)
    attempts: list[int] = []
    real = index._client

    def client(service: str, **kwargs: Any) -> Any:
        attempts.append(kwargs.get("max_attempts", index.MAX_ATTEMPTS))
        return real(service, **kwargs)

    monkeypatch.setattr(index, "_client", client)
    world.plane.server_error("ExtendTrainingPlan", times=5)
    stack.update(world.extend_props())
    assert world.plane.operations().count("ExtendTrainingPlan") == 1
    assert 1 in attempts


def test_an_adopted_plans_bought_hours_come_from_the_plan_not_the_config(world: World) -> None:
    # Issue 18 §3: the config says 168 h, the adopted plan was bought for 336 h. Reading
    # the config's hours would take the plan's end for 168 h of extensions already bought
    # and buy nothing; DescribeTrainingPlan's own DurationHours says none was.
    offering = world.plane.add_offering(
        "tpo-team", zones=["us-east-1b"], start=T0_PLUS_DAY, fee="1.00", duration_hours=336
    )
    arn = world.plane.add_plan("team-plan", offering, statuses=["Active"])
    world.plane.add_extension_offering("team-plan", "tpeo-team", hours=168, fee="9000.00")
    name = extension_name("team-plan", 168)
    props = world.adopt_props(
        arn,
        DurationHours="168",
        ExtendHours="168",
        ExtensionName=name,
        ApprovedExtensionName=name,
        ExtensionMaxUpfrontFee="10000",
        ExtensionCurrency="USD",
    )
    outcome = world.stack().create(props)
    assert outcome.ok, outcome.reason
    assert world.plane.calls_to("ExtendTrainingPlan") == [
        {"TrainingPlanExtensionOfferingId": "tpeo-team"}
    ]
    assert outcome.data["ExtendedHours"] == "168"


def test_a_bought_plan_that_does_not_fit_says_it_was_bought(world: World) -> None:
    # Issue 18 §3: a plan this deploy bought that turns out unusable (fewer instances than
    # asked) says it was bought, is non-refundable, and that a changed request buys again.
    event = world.driver.event("Create", world.props())
    result = index.on_event(copy.deepcopy(event), None)
    world.plane.plans[PLAN]["TotalInstanceCount"] = 2
    outcome = world.driver.complete(event, result)
    assert outcome.reason == (
        f"training plan {PLAN} was bought by this deploy but training plan {PLAN} exists but "
        "does not fit this request: it has 2 instances, fewer than 4; the purchase is "
        "non-refundable and stays in the account (see `novapod purchases`), and a changed "
        "request derives a new plan name, so it buys another plan: fix the request only if "
        "that is what you want"
    )
