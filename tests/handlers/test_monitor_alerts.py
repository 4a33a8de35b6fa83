"""The scheduled check's alerts against the fake control plane, run after run as its role
from the synthesized single-rig-purchase.yaml: each condition and its sentence, each sent
at least once per occurrence (a repeated run sends nothing new), none lost to a failed
call, and a second copy only where handler/index.py says one happens (a Publish whose
answer did not come, a state that could not be recorded)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff

from novapod.constructs.monitor.handler import decisions, index
from tests.conftest import Synthesized
from tests.fakes.aws_control_plane import FakeControlPlane, Fault
from tests.handlers.monitor_world import (
    CLUSTER,
    GROUP,
    LITE,
    NOW,
    PLAN,
    STATE_TABLE,
    Deployed,
    deploy,
    principal,
    settings,
)
from tests.handlers.world import FakeClock

ENV = "novapod nova-lite"
NAME = f"plan lite-sft ({PLAN})"
# The example's plan: 144 h from a day before NOW, so it ends 5 days after NOW.
END = NOW + timedelta(days=5)


@pytest.fixture(scope="module")
def synthesized(synth: Callable[[Path], Synthesized]) -> Synthesized:
    return synth(LITE)


class Monitor:
    """The deployed example, a clock, and a run of the check as its role."""

    def __init__(self, world: Deployed, clock: FakeClock, result: Synthesized) -> None:
        self.world = world
        self.plane = world.plane
        self.clock = clock
        self.result = result
        self.plane.act_as(principal(result))

    def run(self, *, minutes: float = 0) -> dict[str, Any]:
        self.clock.advance(minutes * 60)
        return index.check(settings(self.result))

    def new_alerts(self, *, minutes: float = 0) -> list[str]:
        """The sentences one run publishes."""
        before = len(self.world.published())
        self.run(minutes=minutes)
        return self.world.published()[before:]

    def status(self, status: str, message: str = "") -> None:
        self.plane.script_statuses(PLAN, [(status, message)])

    def node(self, index_: int) -> dict[str, Any]:
        node: dict[str, Any] = self.plane.hyperpod.nodes[CLUSTER][index_]
        return node


@pytest.fixture
def monitor(
    synthesized: Synthesized, control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Monitor]:
    world = deploy(control_plane)
    clock = FakeClock(NOW)
    monkeypatch.setattr(index, "_now", clock.now)
    monkeypatch.setattr(index, "CONNECT_TIMEOUT_SECONDS", 1.0)
    # Publish has one attempt: a read timeout a loaded machine could reach fails a run.
    monkeypatch.setattr(index, "READ_TIMEOUT_SECONDS", 3.0)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    yield Monitor(world, clock, synthesized)
    control_plane.act_as(None)
    assert control_plane.violations == []


def test_a_plan_found_active_at_the_first_look_is_no_news(monitor) -> None:
    assert monitor.new_alerts() == []
    state = monitor.world.state()
    assert state is not None and state["Sequence"] == 1
    assert json.loads(state["State"])["sent"] == {
        "plan/lite-sft/status/Active": "2027-07-12T00:00:00Z"
    }
    assert monitor.new_alerts(minutes=5) == []
    assert monitor.world.state()["Sequence"] == 1  # nothing new: not written again


def test_a_plan_turned_active_alerts_once(monitor) -> None:
    monitor.status("Scheduled")
    assert monitor.new_alerts() == []
    monitor.status("Active")
    assert monitor.new_alerts(minutes=5) == [
        f"{ENV}: {NAME} is now Active: 4 reserved instances until {END:%Y-%m-%dT%H:%M:%SZ}, "
        "paid for whether or not a job runs; next: novapod launch CONFIG sft-lora"
    ]
    (published,) = monitor.plane.monitoring.published
    assert published.subject == f"{ENV}: plan lite-sft Active"
    assert published.topic_arn.endswith(":novapod-nova-lite-alerts")
    assert monitor.new_alerts(minutes=5) == []  # the same transition, not again
    assert monitor.new_alerts(minutes=5) == []


def test_a_plan_expired_alerts_once(monitor) -> None:
    monitor.run()
    monitor.status("Expired")
    assert monitor.new_alerts(minutes=5) == [
        f"{ENV}: {NAME} has Expired ({END:%Y-%m-%dT%H:%M:%SZ}): its 4 instances are reclaimed "
        "and groups on it get no nodes; next: novapod status CONFIG"
    ]
    assert monitor.plane.monitoring.published[-1].subject == f"{ENV}: plan lite-sft Expired"
    assert monitor.new_alerts(minutes=5) == []


def test_a_purchase_that_failed_alerts_once(monitor) -> None:
    monitor.status("Pending")
    monitor.run()
    monitor.status("Failed", "Payment declined")
    assert monitor.new_alerts(minutes=5) == [
        f"{ENV}: {NAME} is Failed (Payment declined) and reserves no capacity; next: "
        "novapod status CONFIG"
    ]
    assert monitor.new_alerts(minutes=5) == []


def test_a_plan_bought_after_the_first_look_alerts_when_it_turns_active(monitor) -> None:
    offering = monitor.plane.offerings[0]
    monitor.plane.plans.clear()  # not bought yet: ResourceNotFound
    assert monitor.new_alerts() == []
    monitor.plane.add_plan(PLAN, offering, statuses=["Pending", "Scheduled", "Active"])
    assert monitor.new_alerts(minutes=5) == []  # Pending
    assert monitor.new_alerts(minutes=5) == []  # Scheduled
    (alert,) = monitor.new_alerts(minutes=5)
    assert "is now Active" in alert


def test_reserved_instances_idle_for_the_configured_time_alert_once_per_idling(monitor) -> None:
    assert decisions.parse_settings(settings(monitor.result)).idle_alert_minutes == 60
    monitor.world.plan_counts(available=1, in_use=3)
    assert monitor.new_alerts() == []  # idle since now
    assert monitor.new_alerts(minutes=55) == []
    sentence = (
        f"{ENV}: {NAME} has had 1 of 4 reserved instances unused for 1h 0m while Active "
        "(3 in use); they are paid for whether or not a job runs; next: novapod launch "
        "CONFIG sft-lora"
    )
    assert monitor.new_alerts(minutes=5) == [sentence]
    (published,) = monitor.plane.monitoring.published
    assert published.subject == f"{ENV}: plan lite-sft idle"
    assert monitor.new_alerts(minutes=5) == []
    assert monitor.new_alerts(minutes=120) == []  # the same idling, not again
    monitor.world.plan_counts(available=0, in_use=4)
    assert monitor.new_alerts(minutes=5) == []  # in use again: over
    monitor.world.plan_counts(available=2, in_use=2)
    assert monitor.new_alerts(minutes=5) == []
    assert monitor.new_alerts(minutes=60) == [
        sentence.replace("1 of 4", "2 of 4").replace("(3 in use)", "(2 in use)")
    ]


def test_a_plan_ending_within_the_configured_days_alerts_once_per_end(monitor) -> None:
    assert monitor.new_alerts() == []
    # No EKS cluster here, so no runs read: the check cannot judge the jobs and does not
    # push an extension; status decides.
    sentence = (
        f"{ENV}: {NAME} ends in 2d 23h ({END:%Y-%m-%dT%H:%M:%SZ}) with 4 of 4 instances in "
        "use; jobs still running then are stopped; this check cannot tell whether its jobs "
        "are done, so extend it only if status shows a job at risk (with the extension "
        "command), and let it end if they are done; next: novapod status CONFIG"
    )
    assert monitor.new_alerts(minutes=(2 * 24 + 1) * 60) == [sentence]  # 3 days before: 2d 23h
    (published,) = monitor.plane.monitoring.published
    assert published.subject == f"{ENV}: plan lite-sft ending"
    assert monitor.new_alerts(minutes=24 * 60) == []
    monitor.plane.add_extension(PLAN, 48)  # the plan now ends two days later
    assert monitor.new_alerts(minutes=5) == []  # 3d 22h left: over
    later = END + timedelta(hours=48)
    (alert,) = monitor.new_alerts(minutes=23 * 60)  # a new end, ending again
    assert f"ends in 2d 23h ({later:%Y-%m-%dT%H:%M:%SZ})" in alert


def test_an_unhealthy_node_alerts_once_until_it_recovers(monitor) -> None:
    monitor.run()
    bad = monitor.node(1)
    bad["InstanceStatus"] = {"Status": "Failure", "Message": "GPU ECC errors"}
    node = bad["InstanceId"]
    sentence = (
        f"{ENV}: node {node} of instance group {GROUP} is Failure (GPU ECC errors), 1 of 4 "
        "nodes of the group unhealthy; node recovery is Automatic, HyperPod replaces it; "
        f"next: aws sagemaker describe-cluster-node --cluster-name {CLUSTER} --node-id {node}"
    )
    assert monitor.new_alerts(minutes=5) == [sentence]
    assert monitor.plane.monitoring.published[-1].subject == f"{ENV}: node {node} Failure"
    assert monitor.new_alerts(minutes=5) == []
    bad["InstanceStatus"] = {"Status": "Running"}
    assert monitor.new_alerts(minutes=5) == []
    bad["InstanceStatus"] = {"Status": "Failure", "Message": "GPU ECC errors"}
    assert monitor.new_alerts(minutes=5) == [sentence]  # a new occurrence


def test_a_degraded_group_alerts_once(monitor) -> None:
    monitor.run()
    (group,) = monitor.plane.hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"]
    group["Status"], group["CurrentCount"] = "Degraded", 3
    assert monitor.new_alerts(minutes=5) == [
        f"{ENV}: instance group {GROUP} of HyperPod cluster {CLUSTER} is Degraded (3 of 4 "
        f"nodes); next: aws sagemaker describe-cluster --cluster-name {CLUSTER}"
    ]
    assert monitor.new_alerts(minutes=5) == []


def test_an_alert_whose_publish_failed_is_sent_by_the_next_run(monitor) -> None:
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    monitor.plane.server_error("Publish")  # one attempt: a retry could send it twice
    with pytest.raises(index.CheckError, match=r"SNS Publish of plan/lite-sft/status/Active"):
        monitor.run(minutes=5)
    assert monitor.world.published() == []
    assert len(monitor.plane.calls_to("Publish")) == 1
    alerts = monitor.new_alerts(minutes=5)
    assert len(alerts) == 1 and "is now Active" in alerts[0]
    assert monitor.new_alerts(minutes=5) == []


def test_without_its_state_a_run_sends_nothing(monitor) -> None:
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    monitor.plane.server_error("GetItem", times=3)
    with pytest.raises(index.CheckError, match="DynamoDB GetItem of the check's state failed"):
        monitor.run(minutes=5)
    assert monitor.world.published() == []
    # The metrics were still put.
    assert monitor.plane.monitoring.metric_values(
        "TotalInstances", Environment="nova-lite", Plan="lite-sft"
    )
    assert len(monitor.new_alerts(minutes=5)) == 1


def test_a_state_moved_by_another_run_is_left_to_it(monitor, capsys) -> None:
    monitor.run()
    rival = {"Environment": "nova-lite", "Sequence": 2, "State": "{}", "UpdatedAt": "x"}
    monitor.plane.dynamodb.rival_put("PutItem", STATE_TABLE, rival)
    monitor.world.plan_counts(available=1, in_use=3)  # a change to record
    summary = monitor.run(minutes=5)
    assert summary["failures"] == []
    assert monitor.world.state()["Sequence"] == 2  # the rival's, untouched
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["step"] for x in lines][-2:] == ["state-moved", "sampled"]


def test_every_alert_is_logged_as_one_json_line(monitor, capsys) -> None:
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    capsys.readouterr()
    summary = monitor.run(minutes=5)
    assert summary["alerts"] == ["plan/lite-sft/status/Active"]
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (alert,) = [x for x in lines if x["step"] == "alert"]
    assert alert["key"] == "plan/lite-sft/status/Active"
    assert alert["message"] == monitor.world.published()[-1]


@pytest.mark.parametrize(
    ("sid", "failure"),
    [
        ("PublishAlerts", "SNS Publish of plan/lite-sft/status/Active failed (AuthorizationError"),
        # The topic is encrypted: SNS asks KMS for the publisher (tests/fakes/monitoring.py).
        ("PublishAlertsKey", "SNS Publish of plan/lite-sft/status/Active failed (KMSAccessDenied"),
        ("CheckState", "DynamoDB GetItem of the check's state failed (AccessDeniedException"),
    ],
)
def test_each_alerting_statement_is_needed(monitor, sid, failure) -> None:
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    monitor.plane.act_as(principal(monitor.result).without(sid))
    with pytest.raises(index.CheckError) as failed:
        monitor.run(minutes=5)
    assert str(failed.value).startswith(failure), failed.value


def test_the_state_key_statement_is_not_proven_needed_by_the_fake(monitor) -> None:
    """CheckStateKey (kms:Decrypt, Encrypt, GenerateDataKey, DescribeKey through DynamoDB
    on the storage key) is what DynamoDB's encryption at rest asks of a caller of a table
    under a customer managed key (docs.aws.amazon.com/amazondynamodb/latest/developerguide/
    encryption.usagenotes.html). The fake's DynamoDB does not ask KMS for the caller, so
    nothing here proves the statement is needed: the check runs as well without it. When
    the fake models it, this test fails: move CheckStateKey into the test above."""
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    monitor.plane.act_as(principal(monitor.result).without("CheckStateKey"))
    assert monitor.run(minutes=5)["alerts"] == ["plan/lite-sft/status/Active"]


def _fail_nodes(monitor: Monitor, count: int) -> list[str]:
    """The first `count` nodes in Failure; their alert keys, in the order they are sent."""
    keys = []
    for n in range(count):
        node = monitor.node(n)
        node["InstanceStatus"] = {"Status": "Failure", "Message": "GPU ECC errors"}
        keys.append(f"node/{node['InstanceId']}/Failure")
    return keys


def test_an_alert_whose_claim_is_not_recorded_is_not_sent_and_the_next_run_sends_it(
    monitor,
) -> None:
    """handler/index.py claims an alert (the state's conditional write) before it publishes
    it: a claim that cannot be written sends nothing, and the next run sends it once."""
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    monitor.plane.server_error("PutItem", times=3)  # botocore's three attempts
    with pytest.raises(index.CheckError, match="DynamoDB PutItem of the check's state failed"):
        monitor.run(minutes=5)
    assert monitor.world.published() == []
    (alert,) = monitor.new_alerts(minutes=5)
    assert "is now Active" in alert
    assert monitor.new_alerts(minutes=5) == []


def test_a_run_that_cannot_claim_stops_publishing_and_nothing_comes_twice(monitor) -> None:
    monitor.run()
    keys = _fail_nodes(monitor, 3)
    # A write succeeds, the next one fails (three attempts each): the run stops there.
    monitor.plane.inject("PutItem", Fault("server_error", status=500), times=3, after=1)
    with pytest.raises(index.CheckError, match="DynamoDB PutItem of the check's state failed"):
        monitor.run(minutes=5)
    first = [m.message for m in monitor.plane.monitoring.published]
    assert len(first) < 3  # the run stopped at the claim it could not write
    state = json.loads(monitor.world.state()["State"])
    # What was published was claimed first; what was not is not recorded as sent.
    assert [k for k in keys if k in state["sent"]] == keys[: len(first)]
    assert all(k.split("/")[1] in m for k, m in zip(keys, first, strict=False))
    rest = monitor.new_alerts(minutes=5)
    assert len(first) + len(rest) == 3
    assert monitor.new_alerts(minutes=5) == []
    counts = Counter(m.message for m in monitor.plane.monitoring.published)
    assert sorted(counts.values()) == [1, 1, 1]  # none twice, none lost


def test_a_publish_that_timed_out_is_sent_once_a_run_not_three_times(monitor) -> None:
    """SNS got the message but its answer came after the read timeout: botocore would
    retry a read timeout, so Publish is sent with one attempt; the alert is owed again,
    and arrives twice, never more."""
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    before = len(monitor.plane.calls_to("Publish"))
    monitor.plane.lose_response("Publish", seconds=index.READ_TIMEOUT_SECONDS + 0.5)
    with pytest.raises(index.CheckError, match=r"SNS Publish of plan/lite-sft/status/Active"):
        monitor.run(minutes=5)
    assert len(monitor.plane.calls_to("Publish")) - before == 1
    (accepted,) = monitor.world.published()  # SNS took it, the check did not hear so
    assert monitor.new_alerts(minutes=5) == [accepted]
    assert monitor.new_alerts(minutes=5) == []


class ShortOfTime:
    """A Lambda context whose remaining time drops by `per_publish` seconds with each
    Publish the plane receives (a slow SNS), from `start` seconds."""

    def __init__(self, plane: FakeControlPlane, start: float, per_publish: float) -> None:
        self.plane, self.start, self.per_publish = plane, start, per_publish
        self.before = len(plane.calls_to("Publish"))

    def get_remaining_time_in_millis(self) -> int:
        published = len(self.plane.calls_to("Publish")) - self.before
        return int((self.start - self.per_publish * published) * 1000)


def test_a_run_short_of_time_records_what_it_sent_and_leaves_the_rest(monitor, capsys) -> None:
    monitor.run()
    keys = _fail_nodes(monitor, 4)
    margin = index.stop_margin_seconds()
    context = ShortOfTime(monitor.plane, start=margin + 100, per_publish=60)
    monitor.clock.advance(300)
    capsys.readouterr()
    summary = index.check(settings(monitor.result), context)
    assert summary["failures"] == []  # not a failure: the next run sends the rest
    assert (summary["alerts"], summary["deferred"]) == (keys[:2], keys[2:])
    assert len(monitor.world.published()) == 2
    state = json.loads(monitor.world.state()["State"])
    assert set(keys[:2]) <= set(state["sent"]) and not set(keys[2:]) & set(state["sent"])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (deferred,) = [x for x in lines if x["step"] == "deferred"]
    assert deferred["keys"] == keys[2:] and "time ran short" in deferred["message"]
    rest = monitor.new_alerts(minutes=5)
    assert len(rest) == 2 and all(k.split("/")[1] in m for k, m in zip(keys[2:], rest, strict=True))
    assert monitor.new_alerts(minutes=5) == []
    assert max(Counter(monitor.world.published()).values()) == 1  # none sent twice


def test_a_run_with_no_time_left_publishes_nothing_and_loses_nothing(monitor) -> None:
    monitor.run()
    keys = _fail_nodes(monitor, 1)
    context = ShortOfTime(monitor.plane, start=index.stop_margin_seconds() - 1, per_publish=0)
    monitor.clock.advance(300)
    summary = index.check(settings(monitor.result), context)
    assert (summary["alerts"], summary["deferred"]) == ([], keys)
    assert monitor.world.published() == []
    assert len(monitor.new_alerts(minutes=5)) == 1


def test_a_failing_node_on_a_later_page_alerts(monitor) -> None:
    monitor.run()
    monitor.plane.hyperpod.node_page_size = 2  # 4 nodes: two pages
    (key,) = _fail_nodes(monitor, 4)[3:]
    monitor.node(0)["InstanceStatus"] = monitor.node(1)["InstanceStatus"] = {"Status": "Running"}
    monitor.node(2)["InstanceStatus"] = {"Status": "Running"}
    before = len(monitor.plane.calls_to("ListClusterNodes"))
    (alert,) = monitor.new_alerts(minutes=5)
    assert key.split("/")[1] in alert and "1 of 4 nodes of the group unhealthy" in alert
    pages = monitor.plane.calls_to("ListClusterNodes")[before:]
    assert [p.get("NextToken") for p in pages] == [None, "2"]


def test_a_claim_whose_answer_was_lost_is_still_this_run_s(monitor) -> None:
    """DynamoDB applied the claim but its answer was lost: botocore retries the PutItem,
    whose condition now fails on the item the first attempt wrote. That is this run's own
    claim (the error's Item, ReturnValuesOnConditionCheckFailure), so it publishes; taken
    for another run's, the alert would stay claimed and never be sent."""
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")
    # The run's first write records what it saw; the second claims the alert.
    lost = Fault("lose_response", seconds=index.READ_TIMEOUT_SECONDS + 0.5, how="timeout")
    monitor.plane.inject("PutItem", lost, after=1)
    summary = monitor.run(minutes=5)
    assert (summary["alerts"], summary["failures"]) == (["plan/lite-sft/status/Active"], [])
    (alert,) = monitor.world.published()
    assert "is now Active" in alert
    assert monitor.new_alerts(minutes=5) == []


def _turn_active(monitor: Monitor) -> None:
    """A plan seen Scheduled, then Active: one alert owed by the next run, whose writes
    are: what it saw, the claim, the last (the outcome)."""
    monitor.status("Scheduled")
    monitor.run()
    monitor.status("Active")


def test_a_release_that_cannot_be_written_is_sent_once_the_claim_s_lease_is_out(
    monitor, capsys
) -> None:
    """The Publish failed and so did the write that releases its claim: the claim stays
    without an outcome, and the first run after its lease (the function's timeout and a
    minute) sends the alert; before the lease is out no run does (the claimer may still
    be publishing). Recorded as sent before the Publish, it would be lost."""
    _turn_active(monitor)
    monitor.plane.server_error("Publish")
    monitor.plane.inject("PutItem", Fault("server_error", status=500), times=3, after=2)
    capsys.readouterr()
    with pytest.raises(index.CheckError, match=r"SNS Publish of plan/lite-sft/status/Active"):
        monitor.run(minutes=5)
    state = json.loads(monitor.world.state()["State"])
    assert state["claimed"] == {"plan/lite-sft/status/Active": "2027-07-12T00:05:00Z"}
    assert "plan/lite-sft/status/Active" not in state["sent"]
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (left,) = [x for x in lines if x["step"] == "unrecorded"]
    assert left["keys"] == ["plan/lite-sft/status/Active"]
    assert "the first run after its lease (420 s) sends it again" in left["message"]
    assert monitor.new_alerts(minutes=5) == []  # 5 minutes after the claim: still its run's
    (alert,) = monitor.new_alerts(minutes=5)  # 10 minutes after: owed again
    assert "is now Active" in alert
    assert monitor.new_alerts(minutes=5) == []
    assert json.loads(monitor.world.state()["State"])["claimed"] == {}


def test_a_published_alert_whose_outcome_is_not_recorded_comes_twice_never_three_times(
    monitor,
) -> None:
    """The Publish went out, the write that records it failed: the claim stays, so the
    alert is sent again after the lease (a second copy rather than a lost alert), then
    recorded, and never sent a third time."""
    _turn_active(monitor)
    monitor.plane.inject("PutItem", Fault("server_error", status=500), times=3, after=2)
    with pytest.raises(index.CheckError, match="DynamoDB PutItem of the check's state failed"):
        monitor.run(minutes=5)
    (first,) = monitor.world.published()
    assert monitor.new_alerts(minutes=5) == []
    assert monitor.new_alerts(minutes=5) == [first]
    for _ in range(3):
        assert monitor.new_alerts(minutes=5) == []
    assert monitor.world.published() == [first, first]


def test_a_claim_left_by_a_run_that_stopped_is_sent_after_its_lease_only(monitor) -> None:
    """A run stopped between its claim and its Publish (the function's timeout, a crash)
    leaves the claim: a run within the lease leaves it to its claimer, one after it sends."""
    _turn_active(monitor)
    monitor.run(minutes=5)
    (alert,) = monitor.world.published()
    item = monitor.world.state()
    state = json.loads(item["State"])
    key = "plan/lite-sft/status/Active"
    claimed_at = NOW + timedelta(minutes=9)
    del state["sent"][key]
    state["claimed"] = {key: f"{claimed_at:%Y-%m-%dT%H:%M:%SZ}"}
    monitor.plane.dynamodb.put_raw(
        STATE_TABLE, {**item, "State": json.dumps(state), "Sequence": item["Sequence"] + 1}
    )
    assert monitor.new_alerts(minutes=5) == []  # 1 minute after the claim
    assert monitor.new_alerts(minutes=5) == []  # 6 minutes: the lease is 420 s, not out yet
    assert monitor.new_alerts(minutes=2) == [alert]  # 8 minutes
    assert monitor.new_alerts(minutes=5) == []


def test_a_claim_applied_but_reported_failed_is_settled_as_this_run_s_own(monitor, capsys) -> None:
    """The second claim landed but every attempt of its PutItem answered 500 (the first
    applied, its answer lost): the run stops, and its last write, refused on that item,
    finds its own Writer mark there (the failed condition's Item), writes on it the first
    alert sent and the second released, and says the item was its own write; no
    `unrecorded` line names the first (recorded sent). The next run sends the second
    at once, not after the lease (review 22c, finding 5)."""
    monitor.run()
    keys = _fail_nodes(monitor, 2)
    lost = Fault("lose_response", how="server_error")
    # The first claim passes (what the run saw is what the item holds: no write).
    monitor.plane.inject("PutItem", lost, after=1)
    monitor.plane.inject("PutItem", Fault("server_error", status=500), times=2)
    capsys.readouterr()
    with pytest.raises(index.CheckError, match="DynamoDB PutItem of the check's state failed"):
        monitor.run(minutes=5)
    (first,) = monitor.world.published()
    assert keys[0].split("/")[1] in first
    state = json.loads(monitor.world.state()["State"])
    assert keys[0] in state["sent"] and keys[1] not in state["sent"]
    assert state["claimed"] == {}
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (moved,) = [x for x in lines if x["step"] == "state-moved"]
    assert (
        "since this run's last write known to land: it is this run's own write"
        in (moved["message"])
    )
    assert not [x for x in lines if x["step"] == "unrecorded"]
    (second,) = monitor.new_alerts(minutes=5)  # 5 minutes: within the lease, yet owed
    assert keys[1].split("/")[1] in second
    assert monitor.new_alerts(minutes=10) == []


def test_an_item_moved_after_a_failed_write_is_not_said_to_be_another_run_s(
    monitor, capsys, monkeypatch
) -> None:
    """The claim's PutItem failed on every attempt, and before the last write the item
    changed: the run cannot tell whether its own write landed first, so its line says
    the item changed since its last write known to land, not that another run wrote."""
    _turn_active(monitor)
    monitor.plane.inject("PutItem", Fault("server_error", status=500), times=3, after=1)
    real, calls = index._write_state, []

    def write(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:  # the last write: another writer's item came before it
            rival = {"Environment": "nova-lite", "Sequence": 9, "State": "{}", "UpdatedAt": "x"}
            monitor.plane.dynamodb.rival_put("PutItem", STATE_TABLE, rival)
        return real(*args, **kwargs)

    monkeypatch.setattr(index, "_write_state", write)
    capsys.readouterr()
    with pytest.raises(index.CheckError, match="DynamoDB PutItem of the check's state failed"):
        monitor.run(minutes=5)
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (moved,) = [x for x in lines if x["step"] == "state-moved"]
    assert moved["message"].startswith(
        "the check's state changed since this run's last write known to land (perhaps its "
        "own write whose answer was lost)"
    )
    assert monitor.world.state()["Sequence"] == 9  # the other writer's, untouched


class _Turns:
    """Runs two threads' DynamoDB and SNS calls one at a time, in an order it chooses:
    once every thread still running waits at such a call, the next in `prefix` goes
    (then the first by name). It records each choice and the threads that could have
    gone, so a search can try every other order (`test_two_runs_...`)."""

    THREADS = frozenset("AB")

    def __init__(self, prefix: list[str]) -> None:
        self.prefix = prefix
        self.choices: list[str] = []
        self.could: list[list[str]] = []
        self.waiting: set[str] = set()
        self.ended: set[str] = set()
        self.turn: str | None = None
        self.changed = threading.Condition()

    def call(self, who: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.changed:
            self.waiting.add(who)
            self.changed.notify_all()
            while self.turn != who:
                if self.turn is None and self.waiting | self.ended == self.THREADS:
                    ready = sorted(self.waiting)
                    step = len(self.choices)
                    self.turn = self.prefix[step] if step < len(self.prefix) else ready[0]
                    self.choices.append(self.turn)
                    self.could.append(ready)
                    self.changed.notify_all()
                    continue
                assert self.changed.wait(10), "a thread never reached its next call"
            self.waiting.discard(who)
        try:
            return method(*args, **kwargs)
        finally:
            with self.changed:
                self.turn = None
                self.changed.notify_all()

    def end(self, who: str) -> None:
        with self.changed:
            self.ended.add(who)
            self.changed.notify_all()


class _Gated:
    def __init__(self, client: Any, turns: _Turns) -> None:
        self.client, self.turns = client, turns

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)
        who = threading.current_thread().name
        return lambda *a, **k: self.turns.call(who, method, *a, **k)


def _every_order(
    monitor: Monitor,
    monkeypatch: pytest.MonkeyPatch,
    runs: dict[str, tuple[decisions.Samples, datetime]],
    check: Callable[[str], None],
    sns: Callable[[Any], Any] | None = None,
) -> list[str]:
    """Runs A and B (each `_alert` with its own samples and time) from the state as it
    is now, in every order their DynamoDB calls can take: a stateless search over the
    choices `_Turns` records, each schedule once. Their Publishes are not gated: SNS
    holds nothing a run reads, so a Publish's place among the other run's calls changes
    nothing but the order of the messages, and not gating them keeps the search to the
    orders that can differ. After each schedule, `check(order)`; the orders tried.
    `sns`: wraps the SNS client afresh for each schedule (a Publish that fails); the runs
    then may report failures."""
    parsed = decisions.parse_settings(settings(monitor.result))
    before = monitor.world.state()
    assert before is not None
    # Made once: a botocore client takes longer to make than the calls take.
    clients = {
        "dynamodb": index._client("dynamodb"),
        "sns": index._client("sns", index.PUBLISH_ATTEMPTS),
    }
    schedules: list[list[str]] = [[]]
    tried = []
    while schedules:
        prefix = schedules.pop()
        turns = _Turns(prefix)
        monitor.plane.dynamodb.put_raw(STATE_TABLE, before)
        monitor.plane.monitoring.published.clear()
        publisher = clients["sns"] if sns is None else sns(clients["sns"])
        gated = {"dynamodb": _Gated(clients["dynamodb"], turns), "sns": publisher}
        monkeypatch.setattr(index, "_client", lambda s, *a, g=gated, **k: g[s])
        failures: dict[str, list[str]] = {"A": [], "B": []}

        def run(who: str, turns: _Turns = turns, failures: dict[str, list[str]] = failures) -> None:
            samples, now = runs[who]
            try:
                index._alert(samples, parsed, now, failures[who], index._Deadline(None))
            finally:
                turns.end(who)

        threads = [threading.Thread(target=run, args=(w,), name=w) for w in "AB"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        order = "".join(turns.choices)
        tried.append(order)
        assert sns is not None or failures == {"A": [], "B": []}, order
        monkeypatch.setattr(index, "_client", lambda s, *a, **k: clients[s])
        check(order)
        for step in range(len(prefix), len(turns.choices)):
            for other in turns.could[step]:
                if other != turns.choices[step]:
                    schedules.append([*turns.choices[:step], other])
    assert len(tried) == len(set(tried))  # each schedule once
    return tried


def test_two_runs_in_every_order_of_their_calls_send_the_alert_once(monitor, monkeypatch) -> None:
    """Two runs that saw the same plan turn Active in the same second, their state's
    reads and writes in every order they can take: the alert is sent once in each,
    nothing fails, the state records it sent, and a later run sends nothing more."""
    _turn_active(monitor)
    parsed = decisions.parse_settings(settings(monitor.result))
    monitor.clock.advance(300)
    now = monitor.clock.now()
    samples = index._sample(parsed, index._client("sagemaker"), [])

    def check(order: str) -> None:
        published = monitor.world.published()
        assert len(published) == 1 and "is now Active" in published[0], order
        assert index._alert(samples, parsed, now, [], index._Deadline(None)) == ([], []), order
        state = json.loads(monitor.world.state()["State"])
        assert list(state["sent"]) == ["plan/lite-sft/status/Active"], order
        assert state["claimed"] == {}, order

    tried = _every_order(monitor, monkeypatch, {"A": (samples, now), "B": (samples, now)}, check)
    assert len(tried) > 10  # many orders


def test_two_runs_seconds_apart_owing_two_alerts_send_each_once_in_every_order(
    monitor, monkeypatch
) -> None:
    """Two runs 20 s apart that both owe two alerts (two nodes failing), in every order of
    their state's reads and writes: a run whose write finds the item moved records on it
    the alerts it claimed and sent (review 22c, finding 3: left claimed by the other
    run's item, they were sent again after the lease). Then a run after the lease: each
    alert arrived once, the state records both sent and nothing claimed."""
    monitor.run()
    keys = _fail_nodes(monitor, 2)
    parsed = decisions.parse_settings(settings(monitor.result))
    monitor.clock.advance(300)
    now = monitor.clock.now()
    samples = index._sample(parsed, index._client("sagemaker"), [])
    later = now + timedelta(seconds=20)
    after_lease = later + timedelta(seconds=parsed.claim_lease_seconds + 60)

    def check(order: str) -> None:
        index._alert(samples, parsed, after_lease, [], index._Deadline(None))
        counts = Counter(m.message for m in monitor.plane.monitoring.published)
        assert sorted(counts.values()) == [1, 1], (order, counts)
        assert all(any(k.split("/")[1] in m for m in counts) for k in keys), order
        state = json.loads(monitor.world.state()["State"])
        assert set(keys) <= set(state["sent"]) and state["claimed"] == {}, order

    tried = _every_order(monitor, monkeypatch, {"A": (samples, now), "B": (samples, later)}, check)
    assert len(tried) > 20  # 26 orders, about 2 s


class _FirstPublishFails:
    """An SNS client whose first Publish raises (SNS's InternalError), the rest pass."""

    def __init__(self, client: Any) -> None:
        self.client, self.calls, self.lock = client, 0, threading.Lock()

    def publish(self, **kwargs: Any) -> Any:
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        if first:
            raise ClientError({"Error": {"Code": "InternalError", "Message": "x"}}, "Publish")
        return self.client.publish(**kwargs)


def test_two_runs_in_the_same_second_with_a_failed_publish_send_each_alert_once(
    monitor, monkeypatch
) -> None:
    """Review 22e, findings 4 and 7: two runs in the same second owing two alerts, the
    first Publish failing, in every order of their state's calls. A run kept as its own
    a claim its later write had released, took the other run's claim of that alert in
    the same second (the same stamp) for its own, and released it: sent twice. Then two
    runs after the lease: each alert arrived exactly once, both recorded sent."""
    monitor.run()
    keys = _fail_nodes(monitor, 2)
    parsed = decisions.parse_settings(settings(monitor.result))
    monitor.clock.advance(300)
    now = monitor.clock.now()
    samples = index._sample(parsed, index._client("sagemaker"), [])
    after_lease = now + timedelta(seconds=parsed.claim_lease_seconds + 60)

    def check(order: str) -> None:
        for later in (after_lease, after_lease + timedelta(seconds=600)):
            index._alert(samples, parsed, later, [], index._Deadline(None))
        counts = Counter(m.message for m in monitor.plane.monitoring.published)
        assert sorted(counts.values()) == [1, 1], (order, counts)
        state = json.loads(monitor.world.state()["State"])
        assert set(keys) <= set(state["sent"]) and state["claimed"] == {}, order

    tried = _every_order(
        monitor, monkeypatch, {"A": (samples, now), "B": (samples, now)}, check, _FirstPublishFails
    )
    assert len(tried) > 20
