"""The environment's scheduled check (novapod/constructs/monitor/handler/) against the fake
control plane, with the settings and the role of the synthesized single-rig-purchase.yaml:
what it samples into CloudWatch metrics, and that its role is enough and each of its
statements needed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.retries.standard import ExponentialBackoff

from novapod.config import load_config
from novapod.constructs.monitor.handler import decisions, index
from tests.conftest import ALL_CONFIGS, Synthesized
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers.monitor_world import (
    CLUSTER,
    CLUSTER_TAGS,
    GROUP,
    LITE,
    NOW,
    PLAN,
    Deployed,
    deploy,
    principal,
    settings,
)

DIMENSIONS = {"Environment": "nova-lite", "Plan": "lite-sft"}
GROUP_DIMENSIONS = {"Environment": "nova-lite", "InstanceGroup": GROUP}


@pytest.fixture(scope="module")
def synthesized(synth: Callable[[Path], Synthesized]) -> Synthesized:
    return synth(LITE)


@pytest.fixture
def deployed(
    control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployed]:
    world = deploy(control_plane)
    monkeypatch.setattr(index, "_now", lambda: NOW)
    monkeypatch.setattr(index, "CONNECT_TIMEOUT_SECONDS", 1.0)
    # Publish has one attempt: a read timeout a loaded machine could reach fails a run.
    monkeypatch.setattr(index, "READ_TIMEOUT_SECONDS", 3.0)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    yield world
    control_plane.act_as(None)
    assert control_plane.violations == []


def _run(result: Synthesized, world: Deployed, *, as_role: bool = True) -> dict[str, Any]:
    if as_role:
        world.plane.act_as(principal(result))
    return index.check(settings(result))


def test_the_schedule_input_names_the_plan_and_the_cluster(synthesized) -> None:
    parsed = decisions.parse_settings(settings(synthesized))
    assert parsed.environment == "nova-lite"
    assert parsed.namespace == "novapod"
    assert parsed.cluster == CLUSTER
    assert [(p.name, p.plan_name, p.jobs) for p in parsed.plans] == [
        ("lite-sft", PLAN, ("sft-lora", "eval"))
    ]
    assert parsed.every_minutes == 5  # monitoring.every_minutes: what a sample stands for


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (None, "every_minutes is required"),
        (0, "every_minutes must be between 1 and 60, not 0"),
        (61, "every_minutes must be between 1 and 60, not 61"),
        ("5", "every_minutes must be a whole number of minutes, not '5'"),
        (5.5, "every_minutes must be a whole number of minutes, not 5.5"),
        (True, "every_minutes must be a whole number of minutes, not True"),
    ],
)
def test_the_interval_is_what_the_construct_writes(synthesized, value, said) -> None:
    raw = settings(synthesized)
    if value is None:
        del raw["every_minutes"]
    else:
        raw["every_minutes"] = value
    with pytest.raises(decisions.SettingsError) as refused:
        decisions.parse_settings(raw)
    assert str(refused.value) == said


def test_a_run_puts_each_plan_s_and_group_s_figures(synthesized, deployed) -> None:
    deployed.plan_counts(available=1, in_use=3, unhealthy=1)
    bad = deployed.plane.hyperpod.nodes[CLUSTER][0]
    bad["InstanceStatus"] = {"Status": "Failure", "Message": "GPU ECC errors"}
    summary = _run(synthesized, deployed)
    assert summary["plans"] == {"lite-sft": "Active"}
    metrics = deployed.plane.monitoring
    assert {ns for ns, _ in metrics.metrics} == {"novapod"}
    figures = {
        name: metrics.metric_values(name, **DIMENSIONS)
        for name in (
            "TotalInstances",
            "AvailableInstances",
            "InUseInstances",
            "UnhealthyInstances",
            "IdleInstances",
        )
    }
    assert figures == {
        "TotalInstances": [4.0],
        "AvailableInstances": [1.0],
        "InUseInstances": [3.0],
        "UnhealthyInstances": [1.0],
        "IdleInstances": [1.0],
    }
    # The sample weighted by the 5 minutes it stands for (the schedule's every_minutes).
    weighted = {
        d["MetricName"]: (d["Value"], d["Unit"], d["Dimensions"])
        for _, d in metrics.metrics
        if d["MetricName"] in ("InUseInstanceSeconds", "SampledSeconds")
    }
    plan_dimensions = [
        {"Name": "Environment", "Value": "nova-lite"},
        {"Name": "Plan", "Value": "lite-sft"},
    ]
    assert weighted == {
        "InUseInstanceSeconds": (900.0, "Seconds", plan_dimensions),  # 3 in use x 300 s
        "SampledSeconds": (300.0, "Seconds", plan_dimensions),
    }
    groups = {
        name: metrics.metric_values(name, **GROUP_DIMENSIONS)
        for name in ("DesiredNodes", "CurrentNodes", "UnhealthyNodes")
    }
    assert groups == {"DesiredNodes": [4.0], "CurrentNodes": [4.0], "UnhealthyNodes": [1.0]}
    (_, datum), *_ = metrics.metrics
    assert datum["Unit"] == "Count" and datum["Timestamp"] == NOW.timestamp()
    assert {d["Unit"] for _, d in metrics.metrics if "Seconds" not in d["MetricName"]} == {"Count"}
    assert {d["Timestamp"] for _, d in metrics.metrics} == {NOW.timestamp()}
    assert summary["metrics"] == len(metrics.metrics) == 10


def test_each_sample_stands_for_the_interval_of_the_schedule_that_took_it(synthesized) -> None:
    """A config whose every_minutes changed redeploys the schedule's input: the runs after
    it weight their samples by the new interval."""
    described = {
        "Status": "Active",
        "TotalInstanceCount": 4,
        "AvailableInstanceCount": 2,
        "InUseInstanceCount": 2,
    }
    for minutes, in_use_seconds in ((5, 600.0), (15, 1800.0)):
        parsed = decisions.parse_settings(settings(synthesized) | {"every_minutes": minutes})
        sample = decisions.PlanSample(parsed.plans[0], described)
        data = decisions.metric_data(decisions.Samples((sample,), None), parsed, NOW)
        found = {d["MetricName"]: (d["Value"], d["Unit"]) for d in data}
        assert found["InUseInstanceSeconds"] == (in_use_seconds, "Seconds")
        assert found["SampledSeconds"] == (60.0 * minutes, "Seconds")
    # No in-use count from SageMaker: no sample of the plan's use.
    without = {k: v for k, v in described.items() if k != "InUseInstanceCount"}
    parsed = decisions.parse_settings(settings(synthesized))
    sample = decisions.PlanSample(parsed.plans[0], without)
    data = decisions.metric_data(decisions.Samples((sample,), None), parsed, NOW)
    names = {d["MetricName"] for d in data}
    assert not names & {"InUseInstanceSeconds", "SampledSeconds", "InUseInstances"}


def test_a_plan_not_active_idles_nothing_and_one_not_bought_has_no_figures(
    synthesized, deployed
) -> None:
    deployed.plane.script_statuses(PLAN, ["Scheduled"])
    deployed.plan_counts(available=4, in_use=0)
    _run(synthesized, deployed)
    metrics = deployed.plane.monitoring
    assert metrics.metric_values("AvailableInstances", **DIMENSIONS) == [4.0]
    assert metrics.metric_values("IdleInstances", **DIMENSIONS) == [0.0]
    # Not Active: its in-use seconds are put (none), no seconds sampled of its window.
    assert metrics.metric_values("InUseInstanceSeconds", **DIMENSIONS) == [0.0]
    assert metrics.metric_values("SampledSeconds", **DIMENSIONS) == []
    deployed.plane.plans.clear()  # SageMaker does not know the plan: ResourceNotFound
    metrics.metrics.clear()
    summary = _run(synthesized, deployed)
    assert summary["plans"] == {"lite-sft": "NotBought"}
    assert {d["MetricName"] for _, d in metrics.metrics} == set(decisions.GROUP_METRICS)


def test_a_cluster_not_deployed_is_no_failure(synthesized, deployed) -> None:
    deployed.plane.hyperpod.clusters.clear()
    summary = _run(synthesized, deployed)
    assert summary["failures"] == []
    assert "ListClusterNodes" not in deployed.plane.operations()
    # UnhealthyInstanceCount is optional in DescribeTrainingPlan's answer: absent, not put.
    assert {d["MetricName"] for _, d in deployed.plane.monitoring.metrics} == {
        "TotalInstances",
        "AvailableInstances",
        "InUseInstances",
        "IdleInstances",
        "InUseInstanceSeconds",
        "SampledSeconds",
    }


def test_a_failed_read_leaves_its_part_out_and_fails_the_run(synthesized, deployed, capsys) -> None:
    deployed.plane.error("DescribeTrainingPlan", "ValidationException", message="boom")
    with pytest.raises(index.CheckError) as failed:
        _run(synthesized, deployed)
    assert str(failed.value) == (
        f"SageMaker DescribeTrainingPlan of {PLAN} failed (ValidationException: boom)"
    )
    # The cluster's groups were still sampled and put.
    assert deployed.plane.monitoring.metric_values("DesiredNodes", **GROUP_DIMENSIONS) == [4.0]
    line = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert line["step"] == "fail" and line["failures"] == [str(failed.value)]


def test_a_failed_put_fails_the_run_after_the_reads(synthesized, deployed) -> None:
    deployed.plane.server_error("PutMetricData", times=3)
    with pytest.raises(index.CheckError, match=r"CloudWatch PutMetricData failed \("):
        _run(synthesized, deployed)
    assert deployed.plane.operations()[-3:] == ["PutMetricData"] * 3  # botocore's 3 attempts


def test_the_role_is_enough(synthesized, deployed, capsys) -> None:
    summary = _run(synthesized, deployed)
    assert summary["failures"] == []
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["step"] == "sampled"


@pytest.mark.parametrize(
    ("sid", "failure"),
    [
        ("DescribeTrainingPlans", f"SageMaker DescribeTrainingPlan of {PLAN} failed"),
        ("DescribeHyperPodCluster", f"SageMaker DescribeCluster of {CLUSTER} failed"),
        ("PutNovapodMetrics", "CloudWatch PutMetricData failed"),
    ],
)
def test_each_statement_is_needed(synthesized, deployed, sid, failure) -> None:
    deployed.plane.act_as(principal(synthesized).without(sid))
    with pytest.raises(index.CheckError) as failed:
        index.check(settings(synthesized))
    (sentence,) = str(failed.value).split("; ")
    assert sentence.startswith(f"{failure} (AccessDenied"), sentence


def test_the_role_reads_no_cluster_tagged_for_another_environment(synthesized, deployed) -> None:
    deployed.plane.hyperpod.tags[CLUSTER] = {"novapod:environment": "other"}
    with pytest.raises(index.CheckError) as failed:
        _run(synthesized, deployed)
    assert str(failed.value).startswith(
        f"SageMaker DescribeCluster of {CLUSTER} failed (AccessDeniedException"
    )
    # StringEqualsIfExists: a cluster without the tag is read, and one not created yet
    # is ResourceNotFound (test_a_cluster_not_deployed_is_no_failure).
    deployed.plane.hyperpod.tags[CLUSTER] = {}
    assert _run(synthesized, deployed)["failures"] == []
    deployed.plane.hyperpod.tags[CLUSTER] = dict(CLUSTER_TAGS)
    assert _run(synthesized, deployed)["failures"] == []


def test_the_nodes_of_every_page_are_counted(synthesized, deployed) -> None:
    deployed.plane.hyperpod.node_page_size = 3  # 4 nodes: two pages
    bad = deployed.plane.hyperpod.nodes[CLUSTER][3]  # on the second page
    bad["InstanceStatus"] = {"Status": "Failure", "Message": "GPU ECC errors"}
    _run(synthesized, deployed)
    metrics = deployed.plane.monitoring
    assert metrics.metric_values("UnhealthyNodes", **GROUP_DIMENSIONS) == [1.0]
    assert [p.get("NextToken") for p in deployed.plane.calls_to("ListClusterNodes")] == [
        None,
        "3",
    ]


def test_the_role_puts_novapod_s_metrics_only(synthesized, deployed) -> None:
    raw = settings(synthesized) | {"namespace": "Other"}
    deployed.plane.act_as(principal(synthesized))
    with pytest.raises(index.CheckError, match=r"PutMetricData failed \(AccessDenied"):
        index.check(raw)


def test_metrics_go_in_requests_of_at_most_1000() -> None:
    data = [{"MetricName": str(i)} for i in range(2001)]
    assert [len(b) for b in decisions.batches(data)] == [1000, 1000, 1]
    assert list(decisions.batches([])) == []


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: Path(p).stem)
def test_a_run_s_reads_and_its_stop_margin_fit_in_the_function_s_timeout(path) -> None:
    """What a run spends before it publishes, each call retried to its limit, plus the
    margin at which it stops publishing: the timeout never falls between a Publish and
    the PutItem that records it. (Publishing itself is bounded by the remaining time,
    test_monitor_alerts.py.)"""
    from novapod.constructs.monitor.construct import TIMEOUT
    from novapod.stacks.monitor import watched_jobs

    config = load_config(path)
    if not config.has_monitor:
        return
    plans = len(config.capacity.training_plans)
    jobs = watched_jobs(config) is not None
    # Each plan; the cluster and a page of its nodes (a group has at most 100 nodes a
    # page: more take more pages); with jobs the EKS cluster, two pages of PyTorchJobs and
    # two of pods; one PutMetricData; the state's GetItem.
    reads = plans + (2 if config.hyperpod is not None else 0) + (1 if jobs else 0) + 1 + 1
    gets = 4 if jobs else 0
    assert index.stop_margin_seconds() == 8 + 2 * 30 + 5  # one Publish, two PutItems
    spent = index.worst_case_seconds(reads, kubernetes_gets=gets) + index.stop_margin_seconds()
    assert spent <= TIMEOUT.to_seconds()


def test_publish_is_one_attempt_and_the_others_three() -> None:
    assert (index.PUBLISH_ATTEMPTS, index.MAX_ATTEMPTS) == (1, 3)
    assert index.worst_case_seconds(1, 1) == 8  # connect 3 s + read 5 s, no retry
    assert index.worst_case_seconds(0, kubernetes_gets=1) == 2 * index.KUBERNETES_TIMEOUT_SECONDS


def test_a_state_that_cannot_be_read_is_a_first_run() -> None:
    state = decisions.State(seen={"p": "Active"}, sent={"plan/p/status/Active": "t"}, sequence=4)
    again = decisions.read_state(state.text(), 4)
    assert again == state
    for text in (None, "", "not json", "[]", '{"version": 2, "seen": {"p": "Active"}}'):
        assert decisions.read_state(text, 7) == decisions.State(sequence=7)
