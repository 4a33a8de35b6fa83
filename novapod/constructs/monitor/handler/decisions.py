"""What one run of the environment's check concludes from what it read: the metrics.
Pure: samples and a time in; `index.py` makes the calls.

Settings come as the schedule's input (the construct writes them at synth): the
environment, the metric namespace, the plans (the config's name, SageMaker's name, the
jobs that run on it) and the HyperPod cluster's name.

Metrics (PutMetricData, dimensions Environment and Plan, or Environment and
InstanceGroup): each plan DescribeTrainingPlan finds, its TotalInstanceCount,
AvailableInstanceCount, InUseInstanceCount and UnhealthyInstanceCount (botocore's
DescribeTrainingPlanResponse; the last is optional there) and IdleInstances, the available
ones while the plan is Active (paid for, unused); each instance group of DescribeCluster,
its TargetCount and CurrentCount (ClusterInstanceGroupDetails and
ClusterRestrictedInstanceGroupDetails) and the nodes ListClusterNodes shows unhealthy.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...handler_core import health, values

# PutMetricData takes at most 1000 metrics a request (API_PutMetricData.html).
MAX_DATUMS = 1000
NOT_BOUGHT = "NotBought"


class SettingsError(Exception):
    """The schedule's input is not what the construct writes."""


# --- settings -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSettings:
    name: str  # capacity.training_plans[].name
    plan_name: str  # the SageMaker training plan's name
    jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    environment: str
    namespace: str
    plans: tuple[PlanSettings, ...]
    cluster: str | None


def parse_settings(raw: Mapping[str, Any]) -> Settings:
    def text(key: str) -> str:
        return values.required_str(raw, key, SettingsError)

    plans = raw.get("plans")
    if not isinstance(plans, list):
        raise SettingsError("plans must be a list")
    parsed = []
    for plan in plans:
        if not isinstance(plan, Mapping):
            raise SettingsError("each plan must be an object")
        jobs = plan.get("jobs") or []
        if not isinstance(jobs, list) or not all(isinstance(j, str) for j in jobs):
            raise SettingsError("a plan's jobs must be a list of names")
        parsed.append(
            PlanSettings(
                name=values.required_str(plan, "name", SettingsError),
                plan_name=values.required_str(plan, "plan_name", SettingsError),
                jobs=tuple(jobs),
            )
        )
    return Settings(
        environment=text("environment"),
        namespace=text("namespace"),
        plans=tuple(parsed),
        cluster=values.optional_str(raw, "cluster", SettingsError),
    )


# --- what one run read ----------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSample:
    """DescribeTrainingPlan of one plan: `described` (None: SageMaker does not know it),
    or `error` when the read failed (nothing is known of it this run)."""

    settings: PlanSettings
    described: Mapping[str, Any] | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        return str((self.described or {}).get("Status") or NOT_BOUGHT)

    def count(self, member: str) -> int | None:
        value = (self.described or {}).get(member)
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ClusterSample:
    """DescribeCluster and ListClusterNodes of the HyperPod cluster (`described` None:
    not deployed), or `error` when a read failed."""

    name: str
    described: Mapping[str, Any] | None = None
    nodes: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None

    def groups(self) -> list[Mapping[str, Any]]:
        cluster = self.described or {}
        return [
            *(cluster.get("RestrictedInstanceGroups") or []),
            *(cluster.get("InstanceGroups") or []),
        ]

    def nodes_of(self, group: str) -> list[Mapping[str, Any]]:
        return [n for n in self.nodes if n.get("InstanceGroupName") == group]


@dataclass(frozen=True)
class Samples:
    plans: tuple[PlanSample, ...]
    cluster: ClusterSample | None


# --- metrics --------------------------------------------------------------------------------


def _datum(
    name: str, value: int, dimensions: Sequence[tuple[str, str]], now: datetime
) -> dict[str, Any]:
    return {
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions],
        "Timestamp": now,
        "Value": float(value),
        "Unit": "Count",
    }


PLAN_METRICS = (
    ("TotalInstances", "TotalInstanceCount"),
    ("AvailableInstances", "AvailableInstanceCount"),
    ("InUseInstances", "InUseInstanceCount"),
    ("UnhealthyInstances", "UnhealthyInstanceCount"),
)
GROUP_METRICS = ("DesiredNodes", "CurrentNodes", "UnhealthyNodes")


def metric_data(samples: Samples, settings: Settings, now: datetime) -> list[dict[str, Any]]:
    """The datums of one run: what was read, nothing of what a read could not find."""
    data = []
    for plan in samples.plans:
        if plan.described is None:
            continue
        dims = (("Environment", settings.environment), ("Plan", plan.settings.name))
        for metric, member in PLAN_METRICS:
            count = plan.count(member)
            if count is not None:
                data.append(_datum(metric, count, dims, now))
        available = plan.count("AvailableInstanceCount") or 0
        idle = available if plan.status == health.PLAN_ACTIVE else 0
        data.append(_datum("IdleInstances", idle, dims, now))
    cluster = samples.cluster
    if cluster is not None and cluster.described is not None:
        for group in cluster.groups():
            name = str(group.get("InstanceGroupName"))
            dims = (("Environment", settings.environment), ("InstanceGroup", name))
            figures = (
                group.get("TargetCount"),
                group.get("CurrentCount"),
                len(health.unhealthy(cluster.nodes_of(name))),
            )
            for metric, figure in zip(GROUP_METRICS, figures, strict=True):
                if isinstance(figure, int):
                    data.append(_datum(metric, figure, dims, now))
    return data


def batches(data: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(data), MAX_DATUMS):
        yield list(data[start : start + MAX_DATUMS])
