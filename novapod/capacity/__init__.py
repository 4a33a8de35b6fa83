"""Capacity: jobs to instance counts, hours and the training plans to buy; pure
functions, no CDK, no AWS calls.

`plan_capacity` sizes each workload (model, technique, runs, hours per run) from the
documented compute requirements in the Nova catalog and packs the jobs into the
training-plan requests the SageMaker training-plans API can sell; jobs on instance types
plans do not sell (distillation on ml.r5) stay on demand. `split_advice` says when
several plans would reserve less than one; it never changes the config.

One idea per module, each importing only those before it:

- `packing`: a plan's jobs side by side in time (greedy schedules, OR-Tools CP-SAT);
- `models`: workloads, plan settings, sized jobs, plan requests, PlanningError;
- `units`: what plans sell (counts, whole days, targets) and a shape's arithmetic;
- `requirements`: the sizing view of the Nova catalog (what a job runs on);
- `windows`: a plan's start_after / end_before window;
- `sizing`: workloads to sized jobs (`plan_jobs`);
- `advice`: the plan's notes and split advice;
- `requests`: sized jobs to plan requests (`plan_capacity`, the packing policy);
- `schema`: the plan as JSON and its JSON Schema; `render`: as text and Gantt charts;
- `chart`: a plan's schedule as pictures draw it; `svg`: the schedules as an SVG picture;
- `naming`: the deterministic names plans and extensions are bought under;
- `approval`: a purchase approved by its exact name, and what an edit changed;
- `extension`: extending a bought plan instead of buying a second one.

capacity/ imports only itself, `novapod.nova.catalog` (data), `novapod.yamlsafe` and
`novapod.constructs.handler_core.names` (the digest the purchase handler recomputes);
tests/unit/test_layers.py holds it to that.
"""

from __future__ import annotations

from novapod.capacity.advice import split_advice
from novapod.capacity.models import (
    CapacityPlan,
    JobPlan,
    PlanningError,
    PlanRequest,
    PlanSettings,
    Requirement,
    SplitAdvice,
    SplitPart,
    Workload,
    totals,
)
from novapod.capacity.render import render_gantt, render_table
from novapod.capacity.requests import default_plan_name, job_tasks, plan_capacity
from novapod.capacity.requirements import (
    TECHNIQUES,
    documented_combinations,
    plan_eligible,
    plan_instance_families,
    requirement,
)
from novapod.capacity.schema import CAPACITY_PLAN_JSON_SCHEMA, capacity_plan_json
from novapod.capacity.sizing import plan_jobs
from novapod.capacity.units import (
    HOURS_PER_DAY,
    PLAN_INSTANCE_COUNTS,
    PLAN_MAX_DAYS,
    PLAN_MAX_HOURS,
    PLAN_MIN_HOURS,
    TARGET_RESOURCES,
    plan_duration_hours,
    sellable_instance_count,
)
from novapod.capacity.windows import aware_time

__all__ = [
    "CAPACITY_PLAN_JSON_SCHEMA",
    "HOURS_PER_DAY",
    "PLAN_INSTANCE_COUNTS",
    "PLAN_MAX_DAYS",
    "PLAN_MAX_HOURS",
    "PLAN_MIN_HOURS",
    "TARGET_RESOURCES",
    "TECHNIQUES",
    "CapacityPlan",
    "JobPlan",
    "PlanRequest",
    "PlanSettings",
    "PlanningError",
    "Requirement",
    "SplitAdvice",
    "SplitPart",
    "Workload",
    "aware_time",
    "capacity_plan_json",
    "default_plan_name",
    "documented_combinations",
    "job_tasks",
    "plan_capacity",
    "plan_duration_hours",
    "plan_eligible",
    "plan_instance_families",
    "plan_jobs",
    "render_gantt",
    "render_table",
    "requirement",
    "sellable_instance_count",
    "split_advice",
    "totals",
]
