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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from novapod.constructs.training_plan.handler import index
from novapod.naming import extension_name
from tests.fakes.aws_control_plane import Fault
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
RERUN = "re-run the deploy, which reads the plan's extensions first and never extends twice"
# The purchase markers (tags on the plan) of the scenario's first and second attempts.
MARK1 = f"novapod-extension:{EXT48}:000000000001"
MARK2 = f"novapod-extension:{EXT48}:000000000002"
MARK3 = f"novapod-extension:{EXT48}:000000000003"
CHECK = f"`aws sagemaker describe-training-plan-extension-history --training-plan-arn {ARN}`"
# A shorter pending timeout than World.props' 600 s: 5 polls, 30 s apart.
SHORT = {"PendingTimeoutSeconds": "120"}


def may_have_been_bought(key: str, *, name: str = EXT48, offering: str = "tpeo-cheap") -> str:
    """is_complete's sentence when a marked purchase never shows within the timeout."""
    return (
        f"extension {name} may have been bought: tag {key} on the training plan marks it "
        f"pending (offering {offering}) and neither the plan's extension history nor its end "
        f"time has shown it in 120 s, so no deploy extends the plan while that "
        f"tag is there; check with {CHECK} and, only if it lists no extension {offering}, "
        f"clear the marker with `aws sagemaker delete-tags --resource-arn {ARN} --tag-keys "
        f"{key}`, then deploy again"
    )


def markers(w: World) -> dict[str, str]:
    return {k: v for k, v in w.plane.tag_values(PLAN).items() if k.startswith("novapod-extension:")}


def clear_marker(key: str) -> None:
    """What the operator runs (the message's delete-tags command), through boto3."""
    boto3.client("sagemaker").delete_tags(ResourceArn=ARN, TagKeys=[key])


class Crash(BaseException):
    """The Lambda runtime ending on_event (timeout, out of memory): no handler code runs
    after it, not even an `except Exception`."""


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


@contextmanager
def interleaved(actions: dict[tuple[str, int], Callable[[], object]]) -> Iterator[None]:
    """Run another caller's action just before the handler sends its n-th call (from 0)
    of an operation: a deterministic interleaving of two events, decided client-side
    (botocore's before-call event), so no request waits on the fake meanwhile."""
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
        made.meta.events.register("before-call.sagemaker", hook)
        return made

    index._client = client  # type: ignore[assignment]
    try:
        yield
    finally:
        index._client = real  # type: ignore[assignment]
    assert not pending, f"never reached: {sorted(pending)}"


def update_event(w: World, stack: Stack, props: dict[str, Any]) -> dict[str, Any]:
    return w.driver.event("Update", props, physical_id=PLAN, old_props=stack.props or {})


@dataclass(frozen=True)
class Expect:
    """calls: ExtendTrainingPlan requests received; bought: extensions the fake sold;
    approvals: distinct extensions approved in the scenario (what adds time, every
    extension bought but Failed ones, never exceeds it); markers: the purchase markers
    left on the plan, key -> value (None: not checked)."""

    calls: int
    bought: int
    data: dict[str, str] | None = None
    error: str | None = None  # "{URL}" stands for the fake's endpoint URL
    approvals: int = 1
    markers: dict[str, str] | None = None


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


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, markers={MARK1: "bought tpeo-cheap"}))
def update_extends_the_bought_plan_with_the_cheapest_fitting_offering(w: World) -> Outcome:
    stack = bought(w)
    mark = w.plane.mark()
    outcome = stack.update(w.extend_props())
    assert not stack.rolled_back
    assert w.plane.operations_since(mark) == [
        "DescribeTrainingPlan",
        "DescribeTrainingPlanExtensionHistory",
        "ListTags",  # no purchase marked by another event
        "SearchTrainingPlanOfferings",
        "AddTags",  # marked pending before the purchase
        "ListTags",  # read again: still the only marker
        "ExtendTrainingPlan",
        "AddTags",  # marked bought
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
    assert w.plane.calls_to("AddTags") == [
        {"ResourceArn": ARN, "Tags": [{"Key": MARK1, "Value": "pending tpeo-cheap"}]},
        {"ResourceArn": ARN, "Tags": [{"Key": MARK1, "Value": "bought tpeo-cheap"}]},
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


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, markers={MARK1: "pending tpeo-cheap"}))
def extend_reset_after_extending_and_shown_late_is_awaited_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("ExtendTrainingPlan", how="reset")
    w.plane.lag_extensions(history_reads=1, describe_reads=1)  # the first poll misses it
    outcome = stack.update(w.extend_props())
    after = w.plane.operations()[w.plane.operations().index("ExtendTrainingPlan") + 1 :]
    # No confirming reads in on_event: is_complete waits under the pending marker.
    assert after[:5] == [
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
        "DescribeTrainingPlanExtensionHistory",
        "ListTags",
        "DescribeTrainingPlan",
    ]
    assert outcome.polls == 3
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED, markers={MARK1: "pending tpeo-cheap"}))
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
    assert failed.reason == may_have_been_bought(MARK1)
    mark = w.plane.mark()
    again = stack.update(w.extend_props(**SHORT))  # the next deploy, extend unchanged
    assert "ExtendTrainingPlan" not in w.plane.operations_since(mark)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return again


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, markers={MARK1: "pending tpeo-cheap"}))
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
        calls=2,  # the first was answered 500 before it was worked
        bought=1,
        # Two deploys waited out the pending timeout (120 s each) before the third.
        data={**EXTENDED, "ExtendedAt": "2030-01-01T00:04:30Z"},
        markers={MARK2: "bought tpeo-cheap"},
    )
)
def a_500_that_bought_nothing_is_never_rebought_until_the_marker_is_cleared(
    w: World,
) -> Outcome:
    stack = bought(w)
    w.plane.server_error("ExtendTrainingPlan")
    first = stack.update(w.extend_props(**SHORT))
    assert stack.rolled_back and first.ok
    assert stack.history[-2].reason == may_have_been_bought(MARK1)
    mark = w.plane.mark()
    second = stack.update(w.extend_props(**SHORT))  # waits for the marked purchase again
    assert stack.history[-2].reason == may_have_been_bought(MARK1)
    assert second.ok and "ExtendTrainingPlan" not in w.plane.operations_since(mark)
    # The operator checks the history (nothing listed) and clears the marker.
    clear_marker(MARK1)
    return stack.update(w.extend_props(**SHORT))


@scenario(
    Expect(
        calls=1,
        bought=0,
        error=f"ExtendTrainingPlan for {EXT48} was refused (ThrottlingException: Rate "
        f"exceeded), so nothing was bought; fix the cause, then {RERUN}",
        markers={},
    )
)
def extend_throttled_buys_nothing_and_is_not_resent(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("ExtendTrainingPlan", times=3)
    stack.update(w.extend_props())
    assert w.plane.operations().count("ExtendTrainingPlan") == 1
    assert w.plane.calls_to("DeleteTags") == [{"ResourceArn": ARN, "TagKeys": [MARK1]}]
    return stack.history[-2]


@scenario(
    Expect(
        calls=2,
        bought=1,
        data=EXTENDED_NOW,
        markers={MARK2: "bought tpeo-cheap"},
    )
)
def a_refused_extension_unmarks_so_the_next_deploy_buys_once(w: World) -> Outcome:
    stack = bought(w)
    w.plane.error("ExtendTrainingPlan", "ResourceLimitExceeded")
    assert stack.update(w.extend_props()).ok and stack.rolled_back
    return stack.update(w.extend_props())


@scenario(
    Expect(
        calls=1,
        bought=0,
        error="ExtendTrainingPlan for "
        f"{EXT48} was refused (ResourceNotFound: injected ResourceNotFound), so nothing was "
        f"bought; fix the cause, then {RERUN}",
        markers={},
    )
)
def extend_of_an_offering_gone_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.error("ExtendTrainingPlan", "ResourceNotFound")
    stack.update(w.extend_props())
    return stack.history[-2]


# --- the purchase marker: duplicates, crashes, tag faults, concurrent events -------------


def not_marked(detail: str) -> str:
    return (
        f"marking extension {EXT48} pending on the training plan failed ({detail}), so "
        "ExtendTrainingPlan was not called and nothing was bought; deploy again"
    )


def add_marker(key: str, value: str) -> None:
    """Another event's AddTags, through boto3."""
    boto3.client("sagemaker").add_tags(ResourceArn=ARN, Tags=[{"Key": key, "Value": value}])


@scenario(Expect(calls=1, bought=1, data=EXTENDED, markers={MARK1: "bought tpeo-cheap"}))
def a_duplicated_invocation_before_the_purchase_shows_waits_and_buys_nothing(
    w: World,
) -> Outcome:
    # The window reads alone leave open: bought, but neither read shows it yet.
    stack = bought(w)
    w.plane.lag_extensions(history_reads=3, describe_reads=3)
    event = update_event(w, stack, w.extend_props())
    index.on_event(copy.deepcopy(event), None)  # the first invocation buys
    mark = w.plane.mark()
    outcome = w.driver.send(event)  # the duplicate finds MARK1 bought, not shown
    assert w.plane.operations_since(mark)[:3] == [
        "DescribeTrainingPlan",
        "DescribeTrainingPlanExtensionHistory",
        "ListTags",
    ]
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    assert outcome.polls == 4  # until the history shows it (and it is paid)
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED, markers={MARK1: "pending tpeo-cheap"}))
def a_duplicated_invocation_finding_the_purchase_still_pending_waits_for_it(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lag_extensions(history_reads=3, describe_reads=3)
    # The first invocation's AddTags `bought` is refused: its marker stays `pending`.
    w.plane.inject("AddTags", Fault("error", code="AccessDeniedException", message="no"), after=1)
    event = update_event(w, stack, w.extend_props())
    first = index.on_event(copy.deepcopy(event), None)
    assert first["Data"]["ExtendedAt"] == "2030-01-01T00:00:30Z"  # it went on: bought
    mark = w.plane.mark()
    outcome = w.driver.send(event)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return outcome


@scenario(
    Expect(
        calls=1,
        bought=1,
        data={**EXTENDED, "ExtendedAt": "2030-01-01T00:02:30Z"},
        markers={MARK2: "bought tpeo-cheap"},
    )
)
def a_crash_between_marking_and_extending_blocks_until_the_marker_is_cleared(
    w: World,
) -> Outcome:
    stack = bought(w)
    event = update_event(w, stack, w.extend_props(**SHORT))
    with crashing_extend(after_sending=False), pytest.raises(Crash):
        w.driver.send(event)
    assert markers(w) == {MARK1: "pending tpeo-cheap"}
    retried = w.driver.send(event)  # the same event again: waits, never buys past MARK1
    assert retried.reason == may_have_been_bought(MARK1)
    assert w.plane.operations().count("ExtendTrainingPlan") == 0
    clear_marker(MARK1)  # the history lists nothing: the operator clears it
    return stack.update(w.extend_props(**SHORT))


@scenario(Expect(calls=1, bought=1, data=EXTENDED, markers={MARK1: "pending tpeo-cheap"}))
def a_crash_between_extending_and_marking_bought_never_buys_again(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lag_extensions(history_reads=2, describe_reads=2)
    event = update_event(w, stack, w.extend_props())
    with crashing_extend(after_sending=True), pytest.raises(Crash):
        w.driver.send(event)
    mark = w.plane.mark()
    outcome = w.driver.send(event)  # retried: MARK1 is pending and not shown yet
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    assert outcome.polls == 3
    return outcome


@scenario(Expect(calls=0, bought=0, error=not_marked("AccessDeniedException: denied"), markers={}))
def a_refused_marker_write_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.error("AddTags", "AccessDeniedException", message="denied")
    stack.update(w.extend_props())
    # Refused at the first attempt: not written, nothing to delete.
    assert "DeleteTags" not in w.plane.operations()
    return stack.history[-2]


@scenario(
    Expect(calls=0, bought=0, error=not_marked("ThrottlingException: Rate exceeded"), markers={})
)
def a_marker_write_throttled_past_its_retries_buys_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("AddTags", times=3)
    stack.update(w.extend_props())
    assert w.plane.operations().count("AddTags") == 3  # botocore's three attempts
    # Retried: an earlier attempt may have been applied, so it is deleted to be sure.
    assert w.plane.calls_to("DeleteTags") == [{"ResourceArn": ARN, "TagKeys": [MARK1]}]
    return stack.history[-2]


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, markers={MARK1: "bought tpeo-cheap"}))
def a_marker_write_throttled_once_is_retried_and_buys_once(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("AddTags", times=1)
    return stack.update(w.extend_props())


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, markers={MARK1: "bought tpeo-cheap"}))
def a_marker_write_whose_answer_is_lost_is_retried_and_buys_once(w: World) -> Outcome:
    # Written, answer dropped: botocore sends it again (AddTags overwrites: idempotent).
    stack = bought(w)
    w.plane.lose_response("AddTags", how="drop")
    return stack.update(w.extend_props())


@scenario(
    Expect(
        calls=0,
        bought=0,
        error=not_marked("InternalFailure: An internal error occurred")
        + "; deleting its marker failed too (AccessDeniedException: denied), so deploys wait "
        f"for it until you clear it with `aws sagemaker delete-tags --resource-arn {ARN} "
        f"--tag-keys {MARK1}`",
        markers={MARK1: "pending tpeo-cheap"},
    )
)
def a_marker_maybe_written_and_not_deleted_says_how_to_clear_it(w: World) -> Outcome:
    stack = bought(w)
    w.plane.lose_response("AddTags", how="server_error")  # written, answered 500
    w.plane.server_error("AddTags", times=2)  # botocore's two retries
    w.plane.error("DeleteTags", "AccessDeniedException", message="denied")
    stack.update(w.extend_props())
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        error="reading the training plan's purchase markers again after marking extension "
        f"{EXT48} pending failed (ThrottlingException: Rate exceeded), so ExtendTrainingPlan "
        "was not called and nothing was bought; deploy again",
        markers={},
    )
)
def markers_not_read_again_buy_nothing(w: World) -> Outcome:
    stack = bought(w)
    w.plane.throttle("ListTags", times=1, after=1)  # the second read: one attempt
    stack.update(w.extend_props())
    return stack.history[-2]


@scenario(
    Expect(
        calls=1,
        bought=0,
        error=(
            f"ExtendTrainingPlan for {EXT48} was refused (ResourceNotFound: injected "
            f"ResourceNotFound), so nothing was bought; fix the cause, then {RERUN}; deleting "
            "its marker failed too (AccessDeniedException: denied), so deploys wait for it "
            f"until you clear it with `aws sagemaker delete-tags --resource-arn {ARN} "
            f"--tag-keys {MARK1}`"
        ),
        markers={MARK1: "pending tpeo-cheap"},
    )
)
def a_refusal_whose_marker_is_not_deleted_says_how_to_clear_it(w: World) -> Outcome:
    stack = bought(w)
    w.plane.error("ExtendTrainingPlan", "ResourceNotFound")
    w.plane.error("DeleteTags", "AccessDeniedException", message="denied")
    stack.update(w.extend_props(**SHORT))
    failed = stack.history[-2]
    # A refusal bought nothing, but the marker is what counts: the next deploy waits.
    w.plane.extension_offerings[PLAN] = []  # (and would find nothing to buy anyway)
    mark = w.plane.mark()
    assert stack.update(w.extend_props(**SHORT)).ok and stack.rolled_back
    assert stack.history[-2].reason == may_have_been_bought(MARK1)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return failed


@scenario(Expect(calls=1, bought=1, data=EXTENDED_NOW, markers={MARK1: "bought tpeo-cheap"}))
def a_concurrent_event_reading_after_this_ones_marker_waits_and_buys_nothing(
    w: World,
) -> Outcome:
    stack = bought(w)
    event = update_event(w, stack, w.extend_props())
    other: list[dict[str, Any]] = []
    # The duplicate's on_event runs between this one's AddTags and its second read.
    duplicate = {("ListTags", 1): lambda: other.append(index.on_event(copy.deepcopy(event), None))}
    with interleaved(duplicate):
        outcome = w.driver.send(event)
    (result,) = other
    assert "ExtendedAt" not in result["Data"]  # it found MARK1 pending and bought nothing
    waited = w.driver.complete(event, result)
    assert waited.ok and waited.data == EXTENDED, waited.reason
    return outcome


@scenario(Expect(calls=1, bought=1, data=EXTENDED, markers={MARK2: "bought tpeo-cheap"}))
def a_concurrent_event_buying_between_this_ones_reads_makes_it_back_off(w: World) -> Outcome:
    stack = bought(w)
    event = update_event(w, stack, w.extend_props())
    other: list[Outcome] = []
    # The duplicate runs whole after this one read the markers, before it writes MARK1.
    with interleaved({("AddTags", 0): lambda: other.append(w.driver.send(event))}):
        outcome = w.driver.send(event)
    assert other[0].ok and other[0].data == EXTENDED_NOW  # the one that bought
    assert w.plane.calls_to("DeleteTags") == [{"ResourceArn": ARN, "TagKeys": [MARK1]}]
    return outcome


@scenario(
    Expect(
        calls=0,
        bought=0,
        error=f"training plan {PLAN} is extended by 0 h, not the 48 h extension {EXT48} asks "
        "for; deploy again to extend it",
        markers={},
    )
)
def two_events_that_both_marked_before_either_read_both_back_off(w: World) -> Outcome:
    stack = bought(w)
    # The other event (MARK2) wrote after this one's first read and before its second;
    # it reads MARK1 in turn, backs off and deletes MARK2 (modelled with its calls).
    other = {
        ("ListTags", 1): lambda: add_marker(MARK2, "pending tpeo-cheap"),
        ("DeleteTags", 0): lambda: clear_marker(MARK2),
    }
    with interleaved(other):
        stack.update(w.extend_props())
    assert {"ResourceArn": ARN, "TagKeys": [MARK1]} in w.plane.calls_to("DeleteTags")
    assert "ExtendTrainingPlan" not in w.plane.operations()
    return stack.history[-2]


@scenario(
    Expect(
        calls=0,
        bought=0,
        approvals=0,
        error=may_have_been_bought(MARK1),
        markers={MARK1: "pending tpeo-cheap"},
    )
)
def a_pending_marker_of_a_smaller_extension_blocks_a_larger_one(w: World) -> Outcome:
    stack = bought(w)
    add_marker(MARK1, "pending tpeo-cheap")  # EXT48's purchase, never shown
    stack.update(w.extend_props(96, **SHORT))
    assert "SearchTrainingPlanOfferings" not in w.plane.operations()[-30:]
    return stack.history[-2]


@scenario(
    Expect(
        calls=2,
        bought=2,  # one Failed (payment), adding nothing
        data=EXTENDED_NOW,
        markers={MARK1: "bought tpeo-cheap", MARK2: "bought tpeo-cheap"},
    )
)
def a_failed_extension_releases_its_marker_and_the_next_deploy_buys_again(w: World) -> Outcome:
    stack = bought(w)
    w.plane.extension_statuses = (("Failed", "Failed"),)
    assert stack.update(w.extend_props()).ok and stack.rolled_back
    w.plane.extension_statuses = (("Active", "Completed"),)
    return stack.update(w.extend_props())


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
        # the purchase marker: every interleaving of issue 12's extend item
        "a_duplicated_invocation_before_the_purchase_shows_waits_and_buys_nothing",
        "a_concurrent_event_reading_after_this_ones_marker_waits_and_buys_nothing",
        "a_concurrent_event_buying_between_this_ones_reads_makes_it_back_off",
        "two_events_that_both_marked_before_either_read_both_back_off",
        "a_crash_between_marking_and_extending_blocks_until_the_marker_is_cleared",
        "a_crash_between_extending_and_marking_bought_never_buys_again",
        "a_refused_marker_write_buys_nothing",
        "a_marker_write_throttled_past_its_retries_buys_nothing",
        "a_500_that_bought_nothing_is_never_rebought_until_the_marker_is_cleared",
    ):
        assert required in SCENARIOS


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_extension_fault_matrix(name: str, world: World) -> None:
    case = SCENARIOS[name]
    started = time.monotonic()
    outcome = case.run(world)
    elapsed = time.monotonic() - started

    extensions = world.plane.extensions.get(PLAN, [])
    sold = len(extensions)
    # What adds time: ours, except purchases that Failed (payment), which add none.
    ours = [e for e in extensions if "earlier" not in e.offering_id]
    adding = [e for e in ours if e.statuses[-1][0] != "Failed"]
    assert len(adding) <= case.expect.approvals, (
        f"extended {len(adding)} times for {case.expect.approvals}"
    )
    assert sold == case.expect.bought
    assert world.plane.operations().count("ExtendTrainingPlan") == case.expect.calls
    assert max(world.plane.create_counts().values(), default=0) <= 1
    if case.expect.markers is not None:
        assert markers(world) == case.expect.markers
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
