"""One answer to what needs a human in a plan, a group or a node: the handler core's
rules (novapod/constructs/handler_core/health.py, which the scheduled check's Lambda asset
ships) and those `novapod status` judges with (novapod/operate/status/assess.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from novapod.constructs.handler_core import health
from novapod.operate.status import assess


def test_status_and_the_check_count_the_same_statuses() -> None:
    assert assess.CLUSTER_FAILED == health.CLUSTER_FAILED
    assert assess.GROUP_FAILED == health.GROUP_FAILED
    assert assess.NODE_HEALTHY == health.NODE_HEALTHY
    assert assess.NODE_UNHEALTHY == health.NODE_UNHEALTHY


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
    assert health.span(delta) == assess._span(delta) == text


def test_nodes_are_counted_as_status_counts_them() -> None:
    nodes = [
        {"InstanceStatus": {"Status": s}}
        for s in ("Running", "Failure", "NotFound", "Pending", "DeepHealthCheckInProgress")
    ] + [{}]
    row = assess._group_row(None, {}, nodes, "restricted", {})
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
