"""What training plans sell (counts, whole days, target resources) and the arithmetic
of a plan's shape: the sellable count and duration for what jobs need, and hours and
days as people read them."""

from __future__ import annotations

import math
from fractions import Fraction

from novapod.capacity.models import PlanningError

# What the training-plans API sells (SearchTrainingPlanOfferings).
PLAN_INSTANCE_COUNTS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
HOURS_PER_DAY = 24
PLAN_MIN_HOURS = HOURS_PER_DAY
PLAN_MAX_DAYS = 182
PLAN_MAX_HOURS = PLAN_MAX_DAYS * HOURS_PER_DAY
TARGET_RESOURCES: tuple[str, ...] = ("hyperpod-cluster", "training-job", "endpoint")
HYPERPOD_CLUSTER, TRAINING_JOB = TARGET_RESOURCES[:2]


def sellable_instance_count(needed: int, *, plan: str | None = None) -> int:
    """The smallest count training plans sell that is at least `needed`."""
    for count in PLAN_INSTANCE_COUNTS:
        if count >= needed:
            return count
    where = f"training plan {plan}" if plan else "a training plan"
    raise PlanningError(
        f"{where} would need {needed} instances but plans sell at most "
        f"{PLAN_INSTANCE_COUNTS[-1]}; lower instance_count of its largest job"
    )


def plan_duration_hours(required_hours: float | Fraction, *, plan: str | None = None) -> int:
    """`required_hours` rounded up to whole days, at least one day, at most 182 days."""
    where = f"training plan {plan}" if plan else "a training plan"
    if required_hours <= 0:
        raise PlanningError(
            f"{where} needs {hours_text(required_hours)} h; jobs need positive hours"
        )
    if required_hours > PLAN_MAX_HOURS:
        raise PlanningError(too_long(where, required_hours))
    days = math.ceil(Fraction(required_hours) / HOURS_PER_DAY)
    return max(days, 1) * HOURS_PER_DAY


def too_long(where: str, hours: float | Fraction, on: str = "") -> str:
    """The refusal of a plan whose jobs need more than the longest plan sold."""
    on = f" {on}" if on else ""
    return (
        f"{where} would need {hours_text(hours)} h{on} but a plan lasts at most {PLAN_MAX_DAYS} "
        f"days ({PLAN_MAX_HOURS} h); split its jobs into several plans (groups on other "
        "plans, or fewer runs per job)"
    )


def hours_text(value: float | Fraction) -> str:
    """Hours for people: 286 rather than 286.0, at most two decimals."""
    return f"{round(float(value), 2):.10g}"


def days_text(days: int) -> str:
    """1 day, 2 days."""
    return f"{days} day" if days == 1 else f"{days} days"
