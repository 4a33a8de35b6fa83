"""Where each job of a config runs, as `novapod review` reads it back from a cloud
assembly (never from the config): its platform (hyperpod or training-job), the plan it
runs on or on demand, its restricted group (HyperPod), its instance type and count.

A job on a training plan is a bar of that plan's chart, which the capacity stack records
on the plan's construct (chart.py: the plan's `target`, each bar's `runs_on` and
`instance_group`). An on-demand job has no plan, so no chart: its record
(ON_DEMAND_METADATA_TYPE) is construct metadata of the nova-base stack. That stack holds
the execution role every training job runs as, and it exists whenever the environment
runs training jobs (NovapodConfig.training_jobs is empty without a Nova stack), whereas
the capacity stack exists only when the config lists a training plan, so a config whose
training jobs all run on demand may have none. Both are cloud-assembly metadata (the
manifest's `<stack>.metadata.json`), never part of a template.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from novapod.capacity.chart import PlanChart
from novapod.capacity.models import JobPlan

ON_DEMAND_METADATA_TYPE = "novapod:on-demand-job"
ON_DEMAND_VERSION = 1
# A job's platform when the chart it is read from predates CHART_VERSION 2.
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Placement:
    """Where one job runs."""

    platform: str  # hyperpod | training-job | unknown (a version-1 chart)
    plan: str | None  # None: on demand
    instance_group: str | None  # a HyperPod job's restricted group
    instance_type: str
    instance_count: int

    @property
    def on_demand(self) -> bool:
        return self.plan is None

    @property
    def known(self) -> bool:
        """Its platform and group were recorded (CHART_VERSION 2 and later)."""
        return self.platform != UNKNOWN

    def as_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "plan": self.plan,
            "on_demand": self.on_demand,
            "instance_group": self.instance_group,
            "instance_type": self.instance_type,
            "instance_count": self.instance_count,
        }


def chart_placements(chart: PlanChart) -> dict[str, Placement]:
    """Job -> where it runs, for every job of a plan's chart."""
    return {
        bar.job: Placement(
            platform=bar.runs_on or UNKNOWN,
            plan=chart.plan,
            instance_group=bar.instance_group,
            instance_type=chart.instance_type,
            instance_count=bar.instance_count,
        )
        for bar in chart.jobs
    }


def on_demand_json(job: JobPlan) -> dict[str, Any]:
    """The record of one on-demand job (what the nova-base stack writes)."""
    return {
        "version": ON_DEMAND_VERSION,
        "job": job.name,
        "runs_on": "training-job",
        "instance_type": job.instance_type,
        "instance_count": job.instance_count,
    }


def on_demand_from_json(data: object) -> tuple[str, Placement] | None:
    """(job, placement) of a record `on_demand_json` wrote; None for anything else."""
    if not isinstance(data, Mapping) or data.get("version") != ON_DEMAND_VERSION:
        return None
    try:
        job, count = str(data["job"]), int(data["instance_count"])
        placement = Placement(
            platform=str(data["runs_on"]),
            plan=None,
            instance_group=None,
            instance_type=str(data["instance_type"]),
            instance_count=count,
        )
    except (KeyError, TypeError, ValueError):
        return None
    return (job, placement) if count > 0 else None
