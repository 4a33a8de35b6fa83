"""One answer to what needs a human in a plan, a group or a node: the handler core's
rules (novapod/constructs/handler_core/health.py, which the scheduled check's Lambda asset
ships) and those `novapod status` judges with (novapod/operate/status/assess.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from novapod.constructs.handler_core import health
from novapod.operate.status import assess


def test_status_judges_with_the_handler_cores_rules() -> None:
    # One copy of the rules: assess.py defines none of its own (a second copy could drift
    # from what the scheduled check ships).
    for name in ("CLUSTER_FAILED", "GROUP_FAILED", "NODE_HEALTHY", "NODE_UNHEALTHY"):
        assert not hasattr(assess, name), name
    assert sorted(health.CLUSTER_FAILED) == ["Deleting", "Failed", "RollingBack"]
    assert sorted(health.GROUP_FAILED) == ["Degraded", "Deleting", "Failed"]
    assert sorted(health.NODE_UNHEALTHY) == ["Failure", "NotFound"]


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(minutes=-5), "0m"),
        (timedelta(minutes=59), "59m"),
        (timedelta(hours=5, minutes=10), "5h 10m"),
        (timedelta(days=2, hours=5, minutes=59), "2d 5h"),
    ],
)
def test_spans_read_alike(delta: timedelta, text: str) -> None:
    assert health.span(delta) == text


def test_nodes_are_counted_as_status_counts_them() -> None:
    nodes = [
        {"InstanceStatus": {"Status": s}}
        for s in ("Running", "Failure", "NotFound", "Pending", "DeepHealthCheckInProgress")
    ] + [{}]
    row = assess._group_row(None, {}, nodes, "restricted", {}, None)
    assert (
        health.node_counts(nodes)
        == row["nodes"]
        == {
            "total": 6,
            "running": 1,
            "unhealthy": 2,
            "other": 3,
        }
    )


@pytest.mark.parametrize(
    ("recovery", "command"),
    [
        ("Automatic", "aws sagemaker describe-cluster-node --cluster-name c --node-id i-1"),
        ("None", "aws sagemaker batch-replace-cluster-nodes --cluster-name c --node-ids i-1 i-2"),
    ],
)
def test_the_command_for_failing_nodes(recovery: str, command: str) -> None:
    assert health.node_command("c", recovery, ["i-1", "i-2"]) == command


def test_the_rules_name_statuses_sagemakers_model_has() -> None:
    # A status misspelt here would never match what DescribeCluster or ListClusterNodes
    # return, and the failing node would go unreported.
    from tests.fakes.service_model import service_model

    model = service_model("sagemaker")
    enum = {name: set(model.shape_for(name).enum) for name in (
        "ClusterStatus", "InstanceGroupStatus", "ClusterInstanceStatus", "TrainingPlanStatus"
    )}  # fmt: skip
    assert health.CLUSTER_FAILED.issubset(enum["ClusterStatus"])
    assert health.GROUP_FAILED.issubset(enum["InstanceGroupStatus"])
    assert (health.NODE_UNHEALTHY | {health.NODE_HEALTHY}).issubset(enum["ClusterInstanceStatus"])
    assert health.PLAN_ACTIVE in enum["TrainingPlanStatus"]
