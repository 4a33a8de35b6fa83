"""Capacity planning for Nova customization jobs: pure functions, no CDK, no AWS calls.

`plan_jobs` sizes each workload (model, technique, runs, hours per run) from the
documented compute requirements in the Nova catalog (`nova/catalog.yaml`); `plan_capacity`
packs the jobs into training-plan requests the SageMaker training-plans API can sell and
leaves jobs on instance types plans do not sell (distillation on ml.r5) on demand.

Packing policy. Jobs that share a training plan run one after another on its instances,
so a plan's instance count is the largest member job's count rounded up to a count plans
sell (1, 2, 4, 8, 16, 32 or 64), and its duration is the sum of hours_per_run x runs over
its jobs rounded up to whole days (at least 24 h, at most 182 days = 4368 h). A workload
names its plan with `plan`; workloads without one share a plan per instance type, named
after it (ml.p5.48xlarge -> p5-48xlarge). Explicit `PlanSettings` win over the derived
values but may not be smaller than the jobs need. Reserved minus required instance-hours
is reported as waste, so the cost of rounding is visible.

Instance-hours are always computed (count x hours x runs), never copied from the source
tables: their Nova Pro PPO row prints 260 where 11 x 26 = 286.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from functools import cache
from types import MappingProxyType
from typing import Any

from novapod.nova.catalog import PPO_ROLE_NAMES, Variant
from novapod.nova.catalog import catalog as nova_catalog

# What the training-plans API sells (SearchTrainingPlanOfferings).
PLAN_INSTANCE_COUNTS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
HOURS_PER_DAY = 24
PLAN_MIN_HOURS = HOURS_PER_DAY
PLAN_MAX_DAYS = 182
PLAN_MAX_HOURS = PLAN_MAX_DAYS * HOURS_PER_DAY
TARGET_RESOURCES: tuple[str, ...] = ("hyperpod-cluster", "training-job", "endpoint")

TECHNIQUES: tuple[str, ...] = tuple(nova_catalog().techniques)

# Plan and job names end up in Kubernetes and recipe run names: DNS labels.
_DNS_LABEL_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
_INSTANCE_TYPE_PATTERN = r"^ml\.([a-z0-9-]+)\.([a-z0-9]+)$"
_DNS_LABEL = re.compile(_DNS_LABEL_PATTERN)
_INSTANCE_TYPE = re.compile(_INSTANCE_TYPE_PATTERN)


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


@dataclass(frozen=True)
class CapacityPlan:
    jobs: list[JobPlan]
    training_plans: list[PlanRequest]
    on_demand: list[JobPlan]
    notes: list[str]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class _Catalog:
    display_names: Mapping[str, str]
    requirements: Mapping[tuple[str, str], Requirement]
    plan_families: tuple[str, ...]


@cache
def _catalog() -> _Catalog:
    """The sizing view of the Nova catalog (novapod/nova/catalog.yaml): one source."""
    nova = nova_catalog()
    display_names = {key: model.display_name for key, model in nova.models.items()}
    requirements = {key: _requirement(variants[0]) for key, variants in nova.variants.items()}
    return _Catalog(
        MappingProxyType(display_names), MappingProxyType(requirements), nova.plan_families
    )


def _requirement(variant: Variant) -> Requirement:
    roles = None
    if variant.roles is not None:
        roles = MappingProxyType(
            {PPO_ROLE_NAMES[role]: count for role, count in variant.roles.items()}
        )
    return Requirement(
        instance_type=variant.instance_type,
        instance_count=variant.instance_count(),
        roles=roles,
        documented_hours_per_run=variant.hours_per_run,
        note=variant.note,
        max_sequence_length=variant.max_length,
        printed_instance_hours=variant.printed_instance_hours,
        fixed_instance_count=variant.allowed_replicas == (1,) and variant.technique == "evaluation",
    )


def documented_combinations() -> list[tuple[str, str]]:
    """Every (model, technique) the compute requirements document, in data order."""
    return list(_catalog().requirements)


def plan_instance_families() -> tuple[str, ...]:
    """Instance families training plans sell (p5, trn2, ...)."""
    return _catalog().plan_families


def plan_eligible(instance_type: str) -> bool:
    """Whether training plans sell this instance type (ml.p5.48xlarge yes, ml.r5 no)."""
    match = _INSTANCE_TYPE.match(instance_type)
    return match is not None and match.group(1) in _catalog().plan_families


def default_plan_name(instance_type: str) -> str:
    """The plan workloads without `plan` share: ml.p5.48xlarge -> p5-48xlarge."""
    return instance_type.removeprefix("ml.").replace(".", "-")


# --------------------------------------------------------------------------- sizing


def requirement(model: str, technique: str, sequence_length: int | None = None) -> Requirement:
    """The documented requirement of one job, or PlanningError if it is not documented."""
    catalog = _catalog()
    if model not in catalog.display_names:
        raise PlanningError(
            f"unknown model {model!r}; use one of {', '.join(catalog.display_names)}"
        )
    if technique not in TECHNIQUES:
        raise PlanningError(f"unknown technique {technique!r}; use one of {', '.join(TECHNIQUES)}")
    display = catalog.display_names[model]
    found = catalog.requirements.get((model, technique))
    if found is None:
        documented = [t for m, t in catalog.requirements if m == model]
        raise PlanningError(
            f"{technique} is not documented for {display} on HyperPod; use one of "
            f"{', '.join(documented)}, or another model"
        )
    if sequence_length is not None:
        if sequence_length < 1:
            raise PlanningError(f"sequence_length {sequence_length} must be a positive integer")
        limit = found.max_sequence_length
        if limit is not None and sequence_length > limit:
            raise PlanningError(
                f"{display} {technique} is documented up to {limit} tokens, not "
                f"{sequence_length}; set sequence_length to {limit} or less"
            )
    return found


def plan_jobs(workloads: Iterable[Workload]) -> list[JobPlan]:
    """Size every workload; raises PlanningError naming the first one that cannot be."""
    jobs: list[JobPlan] = []
    seen: set[str] = set()
    for workload in workloads:
        if workload.name in seen:
            raise PlanningError(f"job {workload.name} is listed twice; give each job its own name")
        seen.add(workload.name)
        jobs.append(_plan_job(workload))
    return jobs


def _plan_job(workload: Workload) -> JobPlan:
    where = f"job {workload.name!r}"
    if not _DNS_LABEL.match(workload.name):
        raise PlanningError(
            f"{where}: the name is not a DNS label; use lowercase letters, digits and '-' "
            "(at most 63 characters)"
        )
    try:
        req = requirement(workload.model, workload.technique, workload.sequence_length)
    except PlanningError as exc:
        raise PlanningError(f"{where}: {exc}") from None
    display = _catalog().display_names[workload.model]
    what = f"{display} {workload.technique}"
    if workload.runs < 1:
        raise PlanningError(f"{where}: runs is {workload.runs}; set runs to 1 or more")

    hours = workload.hours_per_run
    if hours is None:
        hours = req.documented_hours_per_run
    if hours is None:
        raise PlanningError(
            f"{where}: the compute tables give no hours per run for {what}; set hours_per_run"
        )
    if not (math.isfinite(hours) and hours > 0):
        raise PlanningError(f"{where}: hours_per_run is {hours}; set a positive number of hours")

    instance_type = req.instance_type if workload.instance_type is None else workload.instance_type
    if not _INSTANCE_TYPE.match(instance_type):
        raise PlanningError(
            f"{where}: {instance_type!r} is not a SageMaker instance type; use a name such as "
            "ml.p5.48xlarge"
        )

    count = req.instance_count if workload.instance_count is None else workload.instance_count
    if count < 1:
        raise PlanningError(f"{where}: instance_count is {count}; set 1 or more")
    if req.fixed_instance_count and count != req.instance_count:
        raise PlanningError(
            f"{where}: {what} runs on exactly {req.instance_count} instance on HyperPod; "
            "remove instance_count"
        )
    if req.roles is not None and count < req.instance_count:
        roles = ", ".join(f"{role} {n}" for role, n in req.roles.items())
        raise PlanningError(
            f"{where}: {what} needs one instance per role replica, {req.instance_count} in "
            f"all ({roles}); set instance_count to {req.instance_count} or more"
        )

    return JobPlan(
        name=workload.name,
        model=workload.model,
        technique=workload.technique,
        instance_type=instance_type,
        instance_count=count,
        hours_per_run=float(hours),
        runs=workload.runs,
        instance_hours=count * float(hours) * workload.runs,
    )


# --------------------------------------------------------------------------- packing


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
        raise PlanningError(f"{where} needs {_num(required_hours)} h; jobs need positive hours")
    if required_hours > PLAN_MAX_HOURS:
        raise PlanningError(
            f"{where} would need {_num(required_hours)} h of jobs one after another but a plan "
            f"lasts at most {PLAN_MAX_DAYS} days ({PLAN_MAX_HOURS} h); split its jobs "
            "into several plans (groups on other plans, or fewer runs per job)"
        )
    days = math.ceil(Fraction(required_hours) / HOURS_PER_DAY)
    return max(days, 1) * HOURS_PER_DAY


def plan_capacity(
    workloads: Sequence[Workload], plans: Sequence[PlanSettings] = ()
) -> CapacityPlan:
    """Size the workloads and pack them into training plans (see the module docstring)."""
    jobs = plan_jobs(workloads)

    settings: dict[str, PlanSettings] = {}
    for plan in plans:
        _check_plan_name(plan.name, f"training plan {plan.name!r}")
        if plan.name in settings:
            raise PlanningError(
                f"training plan {plan.name} is listed twice; give each plan its own name"
            )
        settings[plan.name] = plan

    groups: dict[str, list[JobPlan]] = {}
    on_demand: list[JobPlan] = []
    for workload, job in zip(workloads, jobs, strict=True):
        if workload.plan is not None:
            _check_plan_name(workload.plan, f"job {workload.name}: plan {workload.plan!r}")
        if not plan_eligible(job.instance_type):
            if workload.plan is not None:
                raise PlanningError(
                    f"job {workload.name}: training plans do not sell {job.instance_type}; "
                    f"remove plan {workload.plan!r} to run it on demand"
                )
            on_demand.append(job)
            continue
        name = workload.plan if workload.plan is not None else default_plan_name(job.instance_type)
        groups.setdefault(name, []).append(job)

    standalone: list[PlanRequest] = []
    for name, plan in settings.items():
        if name in groups:
            continue
        if plan.instance_type is None or plan.instance_count is None or plan.duration_hours is None:
            raise PlanningError(
                f"training plan {name} has no jobs; run a job on it (its instance group, or "
                f"plan: {name}), or "
                "give the plan instance_type, instance_count and duration_hours"
            )
        standalone.append(_standalone_request(plan))

    requests = [
        _plan_request(name, members, settings.get(name)) for name, members in groups.items()
    ] + standalone
    return CapacityPlan(
        jobs=jobs,
        training_plans=requests,
        on_demand=on_demand,
        notes=_notes(jobs, requests, groups, settings),
    )


def _check_plan_name(name: str, where: str) -> None:
    if not _DNS_LABEL.match(name):
        raise PlanningError(
            f"{where} is not a DNS label; use lowercase letters, digits and '-' "
            "(at most 63 characters)"
        )


def _plan_request(name: str, members: list[JobPlan], settings: PlanSettings | None) -> PlanRequest:
    where = f"training plan {name}"
    explicit = settings or PlanSettings(name=name)

    instance_type = explicit.instance_type or members[0].instance_type
    if not plan_eligible(instance_type):
        raise PlanningError(
            f"{where}: training plans do not sell {instance_type}; use an instance type of "
            f"the {', '.join(plan_instance_families())} families"
        )
    for job in members:
        if job.instance_type != instance_type:
            raise PlanningError(
                f"{where} reserves {instance_type} but job {job.name} runs on "
                f"{job.instance_type}; give the job its own plan or the same instance_type"
            )

    largest = max(members, key=lambda job: job.instance_count)
    if largest.instance_count > PLAN_INSTANCE_COUNTS[-1]:
        raise PlanningError(
            f"{where}: job {largest.name} needs {largest.instance_count} instances but plans "
            f"sell at most {PLAN_INSTANCE_COUNTS[-1]}; lower its instance_count"
        )
    needed_count = sellable_instance_count(largest.instance_count, plan=name)
    count = explicit.instance_count
    if count is None:
        count = needed_count
    elif count not in PLAN_INSTANCE_COUNTS:
        raise PlanningError(
            f"{where}: instance_count {count} is not a count plans sell; use one of "
            f"{', '.join(map(str, PLAN_INSTANCE_COUNTS))}"
        )
    elif count < largest.instance_count:
        raise PlanningError(
            f"{where}: instance_count {count} is smaller than the {largest.instance_count} "
            f"instances job {largest.name} needs; set instance_count to {needed_count} or more"
        )

    required_hours = sum(
        (Fraction(job.hours_per_run) * job.runs for job in members), start=Fraction(0)
    )
    needed_duration = plan_duration_hours(required_hours, plan=name)
    duration = explicit.duration_hours
    if duration is None:
        duration = needed_duration
    elif duration % HOURS_PER_DAY or not PLAN_MIN_HOURS <= duration <= PLAN_MAX_HOURS:
        raise PlanningError(
            f"{where}: duration_hours {duration} is not whole days between {PLAN_MIN_HOURS} "
            f"and {PLAN_MAX_HOURS}; use a multiple of 24 in that range"
        )
    elif duration < required_hours:
        names = ", ".join(job.name for job in members)
        raise PlanningError(
            f"{where}: duration_hours {duration} is shorter than the {_num(required_hours)} h "
            f"its jobs ({names}) need one after another; set duration_hours to "
            f"{needed_duration} or more"
        )

    _check_window(where, explicit, duration)
    _check_targets(where, explicit.target_resources)

    required = math.fsum(job.instance_hours for job in members)
    reserved = float(count * duration)
    return PlanRequest(
        name=name,
        instance_type=instance_type,
        instance_count=count,
        duration_hours=duration,
        start_after=explicit.start_after,
        end_before=explicit.end_before,
        target_resources=tuple(explicit.target_resources),
        jobs=tuple(job.name for job in members),
        required_instance_hours=required,
        reserved_instance_hours=reserved,
        waste_instance_hours=reserved - required,
        retry=explicit.retry,
    )


def _standalone_request(plan: PlanSettings) -> PlanRequest:
    """A plan reserved for work the planner does not model: its settings are the request."""
    where = f"training plan {plan.name}"
    assert plan.instance_type and plan.instance_count and plan.duration_hours
    if not plan_eligible(plan.instance_type):
        raise PlanningError(
            f"{where}: training plans do not sell {plan.instance_type}; use an instance type "
            f"of the {', '.join(plan_instance_families())} families"
        )
    if plan.instance_count not in PLAN_INSTANCE_COUNTS:
        raise PlanningError(
            f"{where}: instance_count {plan.instance_count} is not a count plans sell; use one "
            f"of {', '.join(map(str, PLAN_INSTANCE_COUNTS))}"
        )
    duration = plan.duration_hours
    if duration % HOURS_PER_DAY or not PLAN_MIN_HOURS <= duration <= PLAN_MAX_HOURS:
        raise PlanningError(
            f"{where}: duration_hours {duration} is not whole days between {PLAN_MIN_HOURS} "
            f"and {PLAN_MAX_HOURS}; use a multiple of 24 in that range"
        )
    _check_window(where, plan, duration)
    _check_targets(where, plan.target_resources)
    reserved = float(plan.instance_count * duration)
    return PlanRequest(
        name=plan.name,
        instance_type=plan.instance_type,
        instance_count=plan.instance_count,
        duration_hours=duration,
        start_after=plan.start_after,
        end_before=plan.end_before,
        target_resources=tuple(plan.target_resources),
        jobs=(),
        required_instance_hours=0.0,
        reserved_instance_hours=reserved,
        waste_instance_hours=0.0,
        retry=plan.retry,
    )


def aware_time(value: str) -> datetime | None:
    """An ISO 8601 time with a UTC offset, or None for anything else."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _parse_time(where: str, key: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = aware_time(value)
    if parsed is None:
        raise PlanningError(
            f"{where}: {key} {value!r} is not an ISO 8601 time with a UTC offset; write it "
            "like 2026-03-01T00:00:00Z"
        )
    return parsed


def _check_window(where: str, settings: PlanSettings, duration: int) -> None:
    start = _parse_time(where, "start_after", settings.start_after)
    end = _parse_time(where, "end_before", settings.end_before)
    if start is None or end is None:
        return
    window_hours = (end - start).total_seconds() / 3600
    if window_hours <= 0:
        raise PlanningError(
            f"{where}: start_after {settings.start_after} is not before end_before "
            f"{settings.end_before}; the window is inverted, swap the two times"
        )
    if window_hours < duration:
        raise PlanningError(
            f"{where}: the window from start_after to end_before is {_num(window_hours)} h, "
            f"shorter than its {duration} h duration; widen the window or shorten the plan"
        )


def _check_targets(where: str, targets: Sequence[str]) -> None:
    unknown = [t for t in targets if t not in TARGET_RESOURCES]
    if not targets or unknown or len(set(targets)) != len(targets):
        raise PlanningError(
            f"{where}: target_resources {list(targets)} is not a list of distinct values from "
            f"{', '.join(TARGET_RESOURCES)}; use ['hyperpod-cluster'] for HyperPod"
        )


def _notes(
    jobs: list[JobPlan],
    requests: list[PlanRequest],
    groups: Mapping[str, list[JobPlan]],
    settings: Mapping[str, PlanSettings],
) -> list[str]:
    catalog = _catalog()
    notes: list[str] = []
    for model, technique in dict.fromkeys((job.model, job.technique) for job in jobs):
        note = catalog.requirements[(model, technique)].note
        if note:
            notes.append(f"{catalog.display_names[model]} {technique}: {note}")
    for request in requests:
        if request.name not in groups:
            continue  # standalone plan: its count was given, not derived
        largest = max(job.instance_count for job in groups[request.name])
        explicit = settings.get(request.name)
        if largest < request.instance_count and (
            explicit is None or explicit.instance_count is None
        ):
            notes.append(
                f"training plan {request.name}: its largest job needs {largest} instances, "
                f"rounded up to {request.instance_count}, the next count plans sell"
            )
    return notes


# --------------------------------------------------------------------------- output


def capacity_plan_json(
    plan: CapacityPlan, plan_names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The plan as JSON-ready data; it validates against CAPACITY_PLAN_JSON_SCHEMA.

    `plan_names` maps a plan to its deterministic name (what `purchase.approve` says).
    """
    names = plan_names or {}
    return {
        "jobs": [
            {
                "name": job.name,
                "model": job.model,
                "technique": job.technique,
                "instance_type": job.instance_type,
                "instance_count": job.instance_count,
                "hours_per_run": job.hours_per_run,
                "runs": job.runs,
                "instance_hours": job.instance_hours,
            }
            for job in plan.jobs
        ],
        "training_plans": [
            {
                "name": request.name,
                "instance_type": request.instance_type,
                "instance_count": request.instance_count,
                "duration_hours": request.duration_hours,
                "start_after": request.start_after,
                "end_before": request.end_before,
                "target_resources": list(request.target_resources),
                "jobs": list(request.jobs),
                "required_instance_hours": request.required_instance_hours,
                "reserved_instance_hours": request.reserved_instance_hours,
                "waste_instance_hours": request.waste_instance_hours,
                **({"plan_name": names[request.name]} if request.name in names else {}),
            }
            for request in plan.training_plans
        ],
        "on_demand": [job.name for job in plan.on_demand],
        "notes": list(plan.notes),
    }


_NAME: dict[str, Any] = {"type": "string", "pattern": _DNS_LABEL_PATTERN}
_INSTANCE_TYPE_SCHEMA: dict[str, Any] = {"type": "string", "pattern": _INSTANCE_TYPE_PATTERN}
_TIME: dict[str, Any] = {
    "type": ["string", "null"],
    "description": "ISO 8601 time with a UTC offset, or null for no bound.",
}

CAPACITY_PLAN_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "novapod capacity plan",
    "type": "object",
    "additionalProperties": False,
    "required": ["jobs", "training_plans"],
    "properties": {
        "jobs": {"type": "array", "items": {"$ref": "#/$defs/job"}},
        "training_plans": {"type": "array", "items": {"$ref": "#/$defs/training_plan"}},
        "on_demand": {
            "description": "Names of jobs on instance types training plans do not sell.",
            "type": "array",
            "items": _NAME,
        },
        "notes": {"type": "array", "items": {"type": "string"}},
    },
    "$defs": {
        "job": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "name",
                "model",
                "technique",
                "instance_type",
                "instance_count",
                "hours_per_run",
                "runs",
                "instance_hours",
            ],
            "properties": {
                "name": _NAME,
                "model": _NAME,
                "technique": {"enum": list(TECHNIQUES)},
                "instance_type": _INSTANCE_TYPE_SCHEMA,
                "instance_count": {"type": "integer", "minimum": 1},
                "hours_per_run": {"type": "number", "exclusiveMinimum": 0},
                "runs": {"type": "integer", "minimum": 1},
                "instance_hours": {
                    "description": "instance_count x hours_per_run x runs.",
                    "type": "number",
                    "exclusiveMinimum": 0,
                },
            },
        },
        "training_plan": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "name",
                "instance_type",
                "instance_count",
                "duration_hours",
                "start_after",
                "end_before",
                "target_resources",
            ],
            "properties": {
                "name": _NAME,
                "instance_type": _INSTANCE_TYPE_SCHEMA,
                "instance_count": {"enum": list(PLAN_INSTANCE_COUNTS)},
                "duration_hours": {
                    "type": "integer",
                    "multipleOf": HOURS_PER_DAY,
                    "minimum": PLAN_MIN_HOURS,
                    "maximum": PLAN_MAX_HOURS,
                },
                "start_after": _TIME,
                "end_before": _TIME,
                "target_resources": {
                    "type": "array",
                    "items": {"enum": list(TARGET_RESOURCES)},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                # Empty for a plan reserved for work the planner does not model.
                "jobs": {"type": "array", "items": _NAME},
                "required_instance_hours": {"type": "number", "minimum": 0},
                "reserved_instance_hours": {"type": "number", "minimum": 0},
                "waste_instance_hours": {
                    "description": "reserved_instance_hours - required_instance_hours.",
                    "type": "number",
                    "minimum": 0,
                },
                "plan_name": {
                    "description": (
                        "The deterministic name the plan is bought under; a listed plan's "
                        "purchase.approve must equal it."
                    ),
                    "type": "string",
                    "pattern": r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$",
                },
            },
        },
    },
}


def render_table(plan: CapacityPlan, plan_names: Mapping[str, str] | None = None) -> str:
    """The plan as plain text: jobs, training plans with their waste, on-demand jobs, notes.

    With `plan_names`, it lists the name each plan is bought under, to paste into
    `purchase.approve`.
    """
    lines = ["Jobs"]
    lines += _columns(
        ("name", "model", "technique", "instance type", "count", "hours/run", "runs", "inst-h"),
        [
            (
                job.name,
                job.model,
                job.technique,
                job.instance_type,
                str(job.instance_count),
                _num(job.hours_per_run),
                str(job.runs),
                _num(job.instance_hours),
            )
            for job in plan.jobs
        ],
        right=range(4, 8),
    )
    lines += ["", "Training plans"]
    if plan.training_plans:
        lines += _columns(
            (
                "name",
                "instance type",
                "count",
                "hours",
                "start after",
                "end before",
                "required",
                "reserved",
                "waste",
                "jobs",
            ),
            [
                (
                    request.name,
                    request.instance_type,
                    str(request.instance_count),
                    str(request.duration_hours),
                    request.start_after or "-",
                    request.end_before or "-",
                    _num(request.required_instance_hours),
                    _num(request.reserved_instance_hours),
                    _num(request.waste_instance_hours),
                    ", ".join(request.jobs),
                )
                for request in plan.training_plans
            ],
            right=(2, 3, 6, 7, 8),
        )
    else:
        lines.append("(none)")
    if plan_names:
        lines += ["", "Names the plans are bought under (purchase.approve must say the same)"]
        lines += [
            f"{request.name}: {plan_names[request.name]}"
            for request in plan.training_plans
            if request.name in plan_names
        ]
    lines += ["", "On demand (instance types training plans do not sell)"]
    if plan.on_demand:
        lines += [
            f"{job.name}: {job.instance_count} x {job.instance_type}, "
            f"{_num(job.instance_hours)} instance-hours"
            for job in plan.on_demand
        ]
    else:
        lines.append("(none)")
    if plan.notes:
        lines += ["", "Notes"]
        lines += [f"- {note}" for note in plan.notes]
    return "\n".join(lines) + "\n"


def _columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Iterable[int]
) -> list[str]:
    right_aligned = set(right)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.rjust(width) if i in right_aligned else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _num(value: float | Fraction) -> str:
    """Hours for people: 286 rather than 286.0, at most two decimals."""
    return f"{round(float(value), 2):.10g}"
