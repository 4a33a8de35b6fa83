"""A plan's schedule as the pictures draw it: the hours the plan holds, each job's runs
one after another, what a job waits for before it starts, and the reserved instances no
job uses. `plan_charts` builds it from the planner's output; `chart_json` and
`chart_from_json` carry it through the cloud assembly, where the capacity stack records
it as construct metadata (METADATA_TYPE) for the review to read back. `svg` and the
review's Mermaid charts draw only this, and say it in the same words (`size_text`,
`window_text`, `when`), so both show the schedule the planner made.

Since CHART_VERSION 2 a chart also says where its capacity goes, so that the review can
tell a job moving between HyperPod and training jobs from the assembly alone: the plan's
`target` (its target resource, hyperpod-cluster or training-job) and each bar's
`runs_on` (hyperpod or training-job) and `instance_group` (a HyperPod job's restricted
group). A version-1 chart still reads, with these unknown (None).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from novapod.capacity.models import CapacityPlan, JobPlan, PlanRequest
from novapod.capacity.units import HOURS_PER_DAY, HYPERPOD_CLUSTER, TRAINING_JOB, days_text

# Cloud-assembly metadata type of a plan's chart (on the plan's construct in the capacity
# stack); `version` inside changes when the document's meaning does.
METADATA_TYPE = "novapod:plan-schedule"
CHART_VERSION = 2
# What chart_from_json reads: version 1 has no target, runs_on or instance_group.
READABLE_VERSIONS = (1, CHART_VERSION)
# A job's runs_on from the target resource the planner placed it on (JobPlan.target).
RUNS_ON = {HYPERPOD_CLUSTER: "hyperpod", TRAINING_JOB: "training-job"}


@dataclass(frozen=True)
class Run:
    """One run of a job, in hours from the plan's start (a run may end mid-hour)."""

    number: int  # from 1
    start_hour: float
    end_hour: float


@dataclass(frozen=True)
class Wait:
    """Hours a job is ready to wait before it starts: for the jobs it runs after
    (`on`), or, when `on` is empty, for instances the other jobs hold."""

    start_hour: int
    end_hour: int
    on: tuple[str, ...]


@dataclass(frozen=True)
class Idle:
    """Hours in which `instances` of the plan's instances run no job."""

    start_hour: int
    end_hour: int
    instances: int


@dataclass(frozen=True)
class JobBar:
    """One job in its plan: where it holds its instances and how long each run takes."""

    job: str
    instance_count: int
    start_hour: int
    end_hour: int  # start + runs x hours_per_run, rounded up to a whole hour
    runs: int
    hours_per_run: float
    after: tuple[str, ...]  # the jobs of this plan it waits for
    # Where it runs (None: recorded before CHART_VERSION 2): hyperpod or training-job,
    # and a HyperPod job's restricted group (None for a training job, or no group).
    runs_on: str | None = None
    instance_group: str | None = None

    def run_spans(self) -> tuple[Run, ...]:
        """Its runs one after another from its start (exact to the minute)."""
        each = Fraction(str(self.hours_per_run))
        return tuple(
            Run(k + 1, float(self.start_hour + k * each), float(self.start_hour + (k + 1) * each))
            for k in range(self.runs)
        )


@dataclass(frozen=True)
class PlanChart:
    """A training plan and its jobs, in hours from the plan's start."""

    plan: str
    instance_type: str
    instance_count: int
    hours: int  # what the jobs may use: the plan's duration, an extension included
    bought_hours: int  # the duration bought first (less than `hours` when extended)
    start_after: str | None
    end_before: str | None
    jobs: tuple[JobBar, ...]  # in the schedule's order
    # The plan's target resource, hyperpod-cluster or training-job (validation refuses a
    # plan with both); None: recorded before CHART_VERSION 2.
    target: str | None = None

    def waits(self, bar: JobBar) -> tuple[Wait, ...]:
        """What `bar` waits for from the plan's start: the jobs it runs after, until the
        last of them ends, then instances, until it starts. Empty when it starts at 0."""
        ends = {other.job: other.end_hour for other in self.jobs}
        before = [(ends[name], name) for name in bar.after if name in ends]
        ready = min(max((end for end, _ in before), default=0), bar.start_hour)
        found = []
        if ready > 0:
            found.append(Wait(0, ready, tuple(name for _, name in before)))
        if bar.start_hour > ready:
            found.append(Wait(ready, bar.start_hour, ()))
        return tuple(found)

    def idle(self) -> tuple[Idle, ...]:
        """The plan's hours where fewer instances run jobs than it holds, merged where the
        number idle stays the same; the hours after its last job included."""
        edges = sorted(
            {0, self.hours}
            | {bar.start_hour for bar in self.jobs}
            | {bar.end_hour for bar in self.jobs}
        )
        found: list[Idle] = []
        for start, end in itertools.pairwise(edges):
            if end > self.hours:
                break
            used = sum(b.instance_count for b in self.jobs if b.start_hour <= start < b.end_hour)
            idle = self.instance_count - used
            if idle <= 0:
                continue
            if found and found[-1].end_hour == start and found[-1].instances == idle:
                found[-1] = Idle(found[-1].start_hour, end, idle)
            else:
                found.append(Idle(start, end, idle))
        return tuple(found)


def when(hour: float) -> str:
    """An hour of the plan as day and time: 36 -> day 2 12:00 (day 1 starts at hour 0)."""
    minutes = round(hour * 60)
    day, rest = divmod(minutes, HOURS_PER_DAY * 60)
    return f"day {day + 1} {rest // 60:02d}:{rest % 60:02d}"


def window_text(start_after: str | None, end_before: str | None) -> str:
    """The plan's window in words, with its dates."""
    if start_after is None and end_before is None:
        return "window: any time (it starts when an offering is found)"
    parts = []
    if start_after is not None:
        parts.append(f"starts after {_date(start_after)}")
    if end_before is not None:
        parts.append(f"ends before {_date(end_before)}")
    return "window: " + ", ".join(parts)


def _date(value: str) -> str:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return value
    if parsed.tzinfo is not None and parsed.utcoffset() == timedelta(0):
        return parsed.strftime("%Y-%m-%d %H:%M UTC")
    return parsed.isoformat(timespec="minutes")


# A plan's target resource in words (the review's purchases and schedules).
TARGET_WORDS = {HYPERPOD_CLUSTER: "a HyperPod cluster", TRAINING_JOB: "training jobs"}


def target_text(target: str | None) -> str:
    """for training jobs; what a chart recorded before CHART_VERSION 2 says instead."""
    if target is None:
        return "target not recorded (synthesized by an older novapod)"
    return "for " + " and ".join(TARGET_WORDS.get(t, t) for t in target.split(","))


def size_text(chart: PlanChart) -> str:
    """4 x ml.p5.48xlarge for 72 h (3 days), an extension included."""
    held = f"{chart.hours} h ({days_text(chart.hours // HOURS_PER_DAY)})"
    if chart.hours > chart.bought_hours:
        held += f": {chart.bought_hours} h bought + {chart.hours - chart.bought_hours} h extension"
    return f"{chart.instance_count} x {chart.instance_type} for {held}"


def plan_charts(
    plan: CapacityPlan, instance_groups: Mapping[str, str | None] | None = None
) -> list[PlanChart]:
    """A chart per training plan that has jobs to schedule, in the plan's order;
    `instance_groups`: job -> the restricted group a HyperPod job runs on."""
    jobs = {job.name: job for job in plan.jobs}
    groups = instance_groups or {}
    return [_chart(request, jobs, groups) for request in plan.training_plans if request.schedule]


def _chart(
    request: PlanRequest, jobs: Mapping[str, JobPlan], groups: Mapping[str, str | None]
) -> PlanChart:
    names = {slot.job for slot in request.schedule}
    bars = tuple(
        JobBar(
            job=slot.job,
            instance_count=slot.instance_count,
            start_hour=slot.start_hour,
            end_hour=slot.end_hour,
            runs=jobs[slot.job].runs,
            hours_per_run=jobs[slot.job].hours_per_run,
            after=tuple(p for p in jobs[slot.job].after if p in names),
            runs_on=RUNS_ON.get(jobs[slot.job].target, jobs[slot.job].target),
            instance_group=groups.get(slot.job)
            if jobs[slot.job].target == HYPERPOD_CLUSTER
            else None,
        )
        for slot in request.schedule
    )
    # An extended plan's request is the plan as bought; the hours the planner reserved
    # (count x duration) include the extension its jobs are sized against.
    held = math.floor(request.reserved_instance_hours / request.instance_count)
    return PlanChart(
        plan=request.name,
        instance_type=request.instance_type,
        instance_count=request.instance_count,
        hours=max(held, request.duration_hours),
        bought_hours=request.duration_hours,
        start_after=request.start_after,
        end_before=request.end_before,
        jobs=bars,
        target=",".join(request.target_resources),
    )


def chart_json(chart: PlanChart) -> dict[str, Any]:
    """The chart as JSON-ready data (what the capacity stack records)."""
    return {
        "version": CHART_VERSION,
        "plan": chart.plan,
        "instance_type": chart.instance_type,
        "instance_count": chart.instance_count,
        "hours": chart.hours,
        "bought_hours": chart.bought_hours,
        "start_after": chart.start_after,
        "end_before": chart.end_before,
        "target": chart.target,
        "jobs": [
            {
                "job": bar.job,
                "instance_count": bar.instance_count,
                "start_hour": bar.start_hour,
                "end_hour": bar.end_hour,
                "runs": bar.runs,
                "hours_per_run": bar.hours_per_run,
                "after": list(bar.after),
                "runs_on": bar.runs_on,
                "instance_group": bar.instance_group,
            }
            for bar in chart.jobs
        ],
    }


def chart_from_json(data: object) -> PlanChart | None:
    """The chart `chart_json` wrote, of this version or version 1 (then its target and
    each job's runs_on and instance_group are None: not recorded); None for anything
    else (another version, a damaged entry): a review then shows no picture rather than
    a wrong one."""
    if not isinstance(data, Mapping) or data.get("version") not in READABLE_VERSIONS:
        return None
    # Version 1 recorded no placement: read none. The synthesized metadata has no key
    # whose value was None (jsii leaves them out of the map it passes to addMetadata:
    # a training job's bar has no instance_group; tests/stacks/test_capacity.py reads the
    # charts back), so optional values are read with a default.
    placed = data["version"] != 1
    try:
        jobs = tuple(
            JobBar(
                job=str(item["job"]),
                instance_count=int(item["instance_count"]),
                start_hour=int(item["start_hour"]),
                end_hour=int(item["end_hour"]),
                runs=int(item["runs"]),
                hours_per_run=float(item["hours_per_run"]),
                after=tuple(str(name) for name in item["after"]),
                runs_on=_optional(item.get("runs_on")) if placed else None,
                instance_group=_optional(item.get("instance_group")) if placed else None,
            )
            for item in _items(data["jobs"])
        )
        chart = PlanChart(
            plan=str(data["plan"]),
            instance_type=str(data["instance_type"]),
            instance_count=int(data["instance_count"]),
            hours=int(data["hours"]),
            bought_hours=int(data["bought_hours"]),
            start_after=_optional(data.get("start_after")),
            end_before=_optional(data.get("end_before")),
            jobs=jobs,
            target=_optional(data.get("target")) if placed else None,
        )
    except (KeyError, TypeError, ValueError):
        return None
    return chart if chart.instance_count > 0 and chart.hours > 0 else None


def _items(value: object) -> Sequence[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise TypeError("jobs is not a list of objects")
    return value


def _optional(value: object) -> str | None:
    return None if value is None else str(value)
