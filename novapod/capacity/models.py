"""What the planner takes and gives: workloads and plan settings in, sized jobs, plan
requests and split advice out, and the error it raises. Frozen values, no logic beyond
their own arithmetic."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from novapod.capacity import packing

# Plan and job names end up in Kubernetes and recipe run names: DNS labels.
DNS_LABEL_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
INSTANCE_TYPE_PATTERN = r"^ml\.([a-z0-9-]+)\.([a-z0-9]+)$"
DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
INSTANCE_TYPE = re.compile(INSTANCE_TYPE_PATTERN)


class PlanningError(ValueError):
    """A workload or training plan that cannot be planned; the message names it and the fix."""


@dataclass(frozen=True)
class Requirement:
    """What one job of a (model, technique) runs on, as documented."""

    instance_type: str
    instance_count: int
    roles: Mapping[str, int] | None = field(default=None, hash=False)  # PPO only
    documented_hours_per_run: float | None = None
    note: str | None = None
    max_sequence_length: int | None = None  # None: no documented limit
    printed_instance_hours: float | None = None  # as printed by the source; never used
    fixed_instance_count: bool = False


@dataclass(frozen=True)
class Workload:
    """Jobs a user wants to run: `runs` runs of one (model, technique)."""

    name: str
    model: str
    technique: str
    runs: int = 1
    hours_per_run: float | None = None
    sequence_length: int | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    plan: str | None = None
    after: tuple[str, ...] = ()  # jobs that must finish first (`after` and `from: job:`)
    # Where it runs: a plan's target resource (hyperpod-cluster, training-job); a
    # training job may run on demand, on no plan.
    target: str = "hyperpod-cluster"
    on_demand: bool = False


@dataclass(frozen=True)
class PlanSettings:
    """Explicit settings of one training plan; unset values are derived from its jobs."""

    name: str
    instance_type: str | None = None
    instance_count: int | None = None
    duration_hours: int | None = None
    start_after: str | None = None  # ISO 8601 with a UTC offset
    end_before: str | None = None
    target_resources: tuple[str, ...] = ("hyperpod-cluster",)
    # A new attempt after a plan went Failed: part of the plan's name, so a new purchase.
    retry: int = 0


@dataclass(frozen=True)
class JobPlan:
    name: str
    model: str
    technique: str
    instance_type: str
    instance_count: int
    hours_per_run: float
    runs: int
    instance_hours: float
    after: tuple[str, ...] = ()
    target: str = "hyperpod-cluster"

    @property
    def scheduled_hours(self) -> int:
        """Whole hours the job holds its instances: its runs one after another, rounded up."""
        return math.ceil(Fraction(str(self.hours_per_run)) * self.runs)


@dataclass(frozen=True)
class PlanRequest:
    """One training plan to search for and buy, and the jobs that run in it."""

    name: str
    instance_type: str
    instance_count: int
    duration_hours: int
    start_after: str | None
    end_before: str | None
    target_resources: tuple[str, ...]
    jobs: tuple[str, ...]
    required_instance_hours: float
    reserved_instance_hours: float
    waste_instance_hours: float
    retry: int = 0
    # Where each job runs, in hours from the plan's start (empty for a standalone plan);
    # not part of what is bought, so not part of the plan's name.
    schedule: tuple[packing.Slot, ...] = ()
    # Proven: no shape the settings allow reserves fewer instance-hours. None when the
    # settings fix the shape.
    lower_bound_instance_hours: float | None = None


@dataclass(frozen=True)
class CapacityPlan:
    jobs: list[JobPlan]
    training_plans: list[PlanRequest]
    on_demand: list[JobPlan]
    notes: list[str]
    # Per plan whose count and duration the planner chose: its jobs as packed (for
    # split_advice; a plan whose settings fix its shape is the user's choice).
    packed: Mapping[str, tuple[packing.Task, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SplitPart:
    """One plan of a suggested split: its shape and the jobs that would run on it."""

    instance_count: int
    duration_hours: int
    jobs: tuple[str, ...]
    required_instance_hours: float

    @property
    def reserved_instance_hours(self) -> float:
        return float(self.instance_count * self.duration_hours)


@dataclass(frozen=True)
class SplitAdvice:
    """Splitting one plan's jobs into these plans would reserve fewer instance-hours."""

    plan: str
    required_instance_hours: float
    reserved_instance_hours: float
    parts: tuple[SplitPart, ...]

    @property
    def split_reserved_instance_hours(self) -> float:
        return math.fsum(part.reserved_instance_hours for part in self.parts)

    @property
    def saved_instance_hours(self) -> float:
        return self.reserved_instance_hours - self.split_reserved_instance_hours


def totals(plan: CapacityPlan) -> tuple[float, float, float]:
    """Required, reserved and wasted instance-hours over every training plan (a plan
    reserved for work the planner does not model wastes none, as in its own row)."""
    return (
        math.fsum(r.required_instance_hours for r in plan.training_plans),
        math.fsum(r.reserved_instance_hours for r in plan.training_plans),
        math.fsum(r.waste_instance_hours for r in plan.training_plans),
    )
