"""What needs a human in a training plan, a HyperPod cluster, an instance group or a node:
the statuses of SageMaker's models that stop work, how nodes are counted, and the command
that deals with failing nodes. Shared by the environment's scheduled check (the monitor
handler, which can import only what its Lambda asset holds) and `novapod status`
(novapod/operate/status/assess.py and jobs.py import them).

Statuses are those of botocore's SageMaker model: TrainingPlanStatus (Pending | Active |
Scheduled | Expired | Failed), ClusterStatus, InstanceGroupStatus (InService | Creating |
Updating | Failed | Degraded | SystemUpdating | Deleting) and ClusterInstanceStatus
(Running | Failure | Pending | ShuttingDown | SystemUpdating | DeepHealthCheckInProgress |
NotFound | ...), as DescribeTrainingPlan, DescribeCluster and ListClusterNodes return
them (docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeCluster.html,
API_ClusterInstanceStatusDetails.html).

Pure: the standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

PLAN_ACTIVE = "Active"
# ClusterStatus that stop the cluster's work.
CLUSTER_FAILED = frozenset({"Failed", "RollingBack", "Deleting"})
# InstanceGroupStatus of a group that does not work as asked.
GROUP_FAILED = frozenset({"Failed", "Degraded", "Deleting"})
# ClusterInstanceStatus values of a node that does not work and will not by itself; the
# others (Pending, ShuttingDown, SystemUpdating, DeepHealthCheckInProgress, ...) are on
# their way somewhere.
NODE_HEALTHY = "Running"
NODE_UNHEALTHY = frozenset({"Failure", "NotFound"})
# What HyperPod does with a failing node when the cluster's NodeRecovery is Automatic.
AUTOMATIC_RECOVERY = "Automatic"


def node_status(node: Mapping[str, Any]) -> str:
    """A ListClusterNodes summary's InstanceStatus.Status ("" when absent)."""
    return str((node.get("InstanceStatus") or {}).get("Status") or "")


def unhealthy(nodes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [n for n in nodes if node_status(n) in NODE_UNHEALTHY]


def node_counts(nodes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Nodes by health: running, unhealthy (Failure, NotFound), other (on their way)."""
    counts = {"total": len(nodes), "running": 0, "unhealthy": 0, "other": 0}
    for node in nodes:
        status = node_status(node)
        if status == NODE_HEALTHY:
            counts["running"] += 1
        elif status in NODE_UNHEALTHY:
            counts["unhealthy"] += 1
        else:
            counts["other"] += 1
    return counts


def node_command(cluster: str, recovery: str | None, node_ids: Sequence[str]) -> str:
    """What to run about failing nodes: with automatic recovery HyperPod replaces them (the
    first one's progress), else replace them by hand."""
    if recovery == AUTOMATIC_RECOVERY:
        return (
            f"aws sagemaker describe-cluster-node --cluster-name {cluster} --node-id {node_ids[0]}"
        )
    return (
        f"aws sagemaker batch-replace-cluster-nodes --cluster-name {cluster} "
        f"--node-ids {' '.join(node_ids)}"
    )


def span(delta: timedelta) -> str:
    """`2d 5h`, `5h 10m`, `10m`: how long, for a human."""
    minutes = max(0, int(delta.total_seconds() // 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m"
