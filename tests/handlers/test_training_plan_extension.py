"""Fault matrix of a plan's extension: CloudFormation lifecycles of the TrainingPlan
handler with `extend` properties, against the fake AWS.

ExtendTrainingPlan has no client token, so the invariant is read from the fake's own
record of what it sold: never more extensions bought than approvals sent, and exactly
the expected number of ExtendTrainingPlan requests (faulted ones included). Each
scenario then checks the exact attributes of a success or the message of a failure.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from novapod.constructs.training_plan.handler import index
from novapod.naming import extension_name
from tests.handlers.lifecycle import CREATE_FAILED_MARKER, Outcome, Stack
from tests.handlers.world import PLAN, World, extension_offerings

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
MAY_HAVE_EXTENDED = (
    "so it may have been bought: the next deploy reads them again and does not extend twice "
    "once it shows; do not change extend until then"
)
RERUN = "re-run the deploy, which reads the plan's extensions first and never extends twice"


@dataclass(frozen=True)
class Expect:
    """calls: ExtendTrainingPlan requests received; bought: extensions the fake sold;
    approvals: distinct extensions approved in the scenario (bought never exceeds it)."""

    calls: int
    bought: int
    data: dict[str, str] | None = None
    error: str | None = None  # "{URL}" stands for the fake's endpoint URL
    approvals: int = 1


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


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW))
def update_extends_the_bought_plan_with_the_cheapest_fitting_offering(w: World) -> Outcome:
    stack = bought(w)
    mark = w.plane.mark()
    outcome = stack.update(w.extend_props())
    assert not stack.rolled_back
    assert w.plane.operations_since(mark) == [
        "DescribeTrainingPlan",
        "DescribeTrainingPlanExtensionHistory",
        "SearchTrainingPlanOfferings",
        "ExtendTrainingPlan",
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
        "DescribeTrainingPlanExtensionHistory",  # Pending (payment)
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
        "DescribeTrainingPlanExtensionHistory",  # Scheduled
    ]
    assert w.plane.calls_to("SearchTrainingPlanOfferings")[-1] == {
        "TrainingPlanArn": ARN,
        "DurationHours": 48,
    }
    assert w.plane.calls_to("ExtendTrainingPlan") == [
        {"TrainingPlanExtensionOfferingId": "tpeo-cheap"}
    ]
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


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW))
def extend_reset_after_extending_and_shown_late_is_confirmed(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="reset")
    w.plane.lag_extensions(history_reads=1, describe_reads=1)  # the first confirm misses it
    outcome = stack.update(w.extend_props())
    after = w.plane.operations()[w.plane.operations().index("ExtendTrainingPlan") + 1 :]
    assert after[:4] == [
        "DescribeTrainingPlan",
        "DescribeTrainingPlanExtensionHistory",
        "DescribeTrainingPlan",
        "DescribeTrainingPlanExtensionHistory",
    ]
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED))
def lost_answer_never_shown_warns_then_the_next_deploy_does_not_extend_again(
    w: World,
) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="drop")
    w.plane.lag_extensions(history_reads=3, describe_reads=3)  # past the three confirms
    rolled_back = stack.update(w.extend_props())
    failed = stack.history[-2]
    assert stack.rolled_back and rolled_back.ok
    assert failed.reason == (
        f"ExtendTrainingPlan for {EXT48} failed (ConnectionClosedError: Connection was closed "
        f'before we received a valid response from endpoint URL: "{w.plane.url}/".) and neither '
        "the plan's extension history nor its end time shows it yet, " + MAY_HAVE_EXTENDED
    )
    mark = w.plane.mark()
    again = stack.update(w.extend_props())  # the next deploy, extend unchanged
    assert "ExtendTrainingPlan" not in w.plane.operations_since(mark)
    return again


@scenario(
    Expect(
        calls=1,
        bought=1,
        error=f"ExtendTrainingPlan for {EXT48} failed (ConnectionClosedError: Connection was "
        'closed before we received a valid response from endpoint URL: "{URL}/".) and reading '
        "the plan's extensions failed too (DescribeTrainingPlanExtensionHistory for training "
        f"plan {PLAN} failed (ThrottlingException: Rate exceeded)), " + MAY_HAVE_EXTENDED,
    )
)
def lost_answer_and_throttled_reads_warn_after_one_attempt_per_look(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="drop")
    w.plane.throttle("DescribeTrainingPlanExtensionHistory", times=3, after=1)
    stack.update(w.extend_props())
    after = w.plane.operations()[w.plane.operations().index("ExtendTrainingPlan") + 1 :]
    # Each look reads once (no botocore retries), so the worst case fits on_event's timeout.
    assert after[:6] == ["DescribeTrainingPlan", "DescribeTrainingPlanExtensionHistory"] * 3
    return stack.history[-2]


@scenario(
    Expect(
        calls=2,  # the first was answered 500 before it was worked
        bought=1,
        data={**EXTENDED, "ExtendedAt": "2030-01-01T00:00:37Z"},
    )
)
def a_500_that_bought_nothing_warns_and_the_next_deploy_buys_once(w: World) -> Outcome:
    stack = bought(w)
    w.plane.server_error("ExtendTrainingPlan")
    first = stack.update(w.extend_props())
    assert stack.rolled_back and first.ok
    assert stack.history[-2].reason == (
        f"ExtendTrainingPlan for {EXT48} failed (InternalFailure: An internal error occurred) "
        "and neither the plan's extension history nor its end time shows it yet, "
        + MAY_HAVE_EXTENDED
    )
    return stack.update(w.extend_props())


@scenario(
    Expect(
        calls=1,
        bought=0,
        error=f"ExtendTrainingPlan for {EXT48} was refused (ThrottlingException: Rate "
        f"exceeded), so nothing was bought; fix the cause, then {RERUN}",
    )
)
def extend_throttled_buys_nothing_and_is_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("ExtendTrainingPlan", times=3)
    stack.update(w.extend_props())
    assert w.plane.operations().count("ExtendTrainingPlan") == 1
    return stack.history[-2]


@scenario(
    Expect(
        calls=1,
        bought=0,
        error="ExtendTrainingPlan for "
        f"{EXT48} was refused (ResourceNotFound: injected ResourceNotFound), so nothing was "
        f"bought; fix the cause, then {RERUN}",
    )
)
def extend_of_an_offering_gone_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.error("ExtendTrainingPlan", "ResourceNotFound")
    stack.update(w.extend_props())
    return stack.history[-2]


# --- guardrails: nothing is bought -------------------------------------------------------


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
        error="extension tpeo-cheap of training plan "
        f"{PLAN} is Failed (payment Failed) and adds no time; the next deploy extends again "
        f"under {EXT48} (up to 40000 USD), or remove extend",
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


# --- the matrix --------------------------------------------------------------------------


def test_the_extension_matrix_covers_the_acceptance_faults() -> None:
    for required in (
        "extend_response_lost_to_a_timeout_is_confirmed_not_resent",
        "duplicated_update_event_extends_once",
        "rollback_after_another_resource_failed_keeps_the_extension_and_buys_no_second",
        "extension_above_its_cap_is_refused",
        "no_extension_offering_buys_nothing",
    ):
        assert required in SCENARIOS


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_extension_fault_matrix(name: str, world: World) -> None:
    case = SCENARIOS[name]
    started = time.monotonic()
    outcome = case.run(world)
    elapsed = time.monotonic() - started

    sold = len(world.plane.extensions.get(PLAN, []))
    ours = sold - sum(1 for e in world.plane.extensions.get(PLAN, []) if "earlier" in e.offering_id)
    assert ours <= case.expect.approvals, f"extended {ours} times for {case.expect.approvals}"
    assert sold == case.expect.bought
    assert world.plane.operations().count("ExtendTrainingPlan") == case.expect.calls
    assert max(world.plane.create_counts().values(), default=0) <= 1
    if case.expect.error is not None:
        assert not outcome.ok, outcome
        assert outcome.reason == case.expect.error.replace("{URL}", world.plane.url)
    else:
        assert outcome.ok, outcome.reason
        assert outcome.data == dict(case.expect.data or {})
    assert elapsed < 8, f"{name} took {elapsed:.1f} s"


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
