"""Capacity planning for Nova customization jobs: pure functions, no CDK, no AWS calls.

`plan_jobs` sizes each workload (model, technique, runs, hours per run) from the
documented compute requirements in the Nova catalog (`nova/catalog.yaml`); `plan_capacity`
packs the jobs into training-plan requests the SageMaker training-plans API can sell and
leaves jobs on instance types plans do not sell (distillation on ml.r5) on demand.

Packing policy. A workload names its plan with `plan`; workloads without one share a plan
per instance type, named after it (ml.p5.48xlarge -> p5-48xlarge). The jobs of a plan run
side by side on its instances when they fit, each after the jobs it waits for (`after`,
`from: job:`), and none past the plan's end; a job's runs run one after another. The
planner chooses the plan's instance count (a count plans sell: 1, 2, 4, 8, 16, 32 or 64,
at least the widest job) and its duration (whole days, at most 182 days = 4368 h) that
reserve the fewest instance-hours, ties broken toward fewer instances, and the schedule
(novapod.packing says how, and why the result is the same on every machine). Explicit
`PlanSettings` win over the derived values but must hold the jobs. Reserved minus
required instance-hours is reported as waste, so the cost of the shape is visible; where
offerings are not known yet, instance-hours stand in for cost. `split_advice` says when
several plans would reserve less than one; it never changes the config.

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

from novapod import packing
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
    after: tuple[str, ...] = ()  # jobs that must finish first (`after` and `from: job:`)


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
    for job in jobs:
        for before in job.after:
            if before not in seen or before == job.name:
                raise PlanningError(
                    f"job {job.name} waits for {before}, which is not another job; use "
                    f"one of {', '.join(sorted(seen - {job.name}))}"
                )
    try:
        packing.dependency_order([(job.name, job.after) for job in jobs])
    except ValueError as exc:
        raise PlanningError(f"{exc}; remove one of those dependencies") from None
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
        after=tuple(workload.after),
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
        raise PlanningError(_too_long(where, required_hours))
    days = math.ceil(Fraction(required_hours) / HOURS_PER_DAY)
    return max(days, 1) * HOURS_PER_DAY


def _too_long(where: str, hours: float | Fraction, on: str = "") -> str:
    on = f" {on}" if on else ""
    return (
        f"{where} would need {_num(hours)} h{on} but a plan lasts at most {PLAN_MAX_DAYS} "
        f"days ({PLAN_MAX_HOURS} h); split its jobs into several plans (groups on other "
        "plans, or fewer runs per job)"
    )


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
    derived = {
        name: job_tasks(members)
        for name, members in groups.items()
        if name not in settings
        or (settings[name].instance_count is None and settings[name].duration_hours is None)
    }
    return CapacityPlan(
        jobs=jobs,
        training_plans=requests,
        on_demand=on_demand,
        notes=_notes(jobs, requests, groups, settings),
        packed=MappingProxyType(derived),
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
    _check_shape(where, explicit, largest)
    tasks = job_tasks(members)
    count = explicit.instance_count
    counts = (count,) if count is not None else _sellable_from(largest.instance_count)
    packed = _pack_plan(where, tasks, counts, explicit)
    count, duration = packed.instance_count, packed.duration_hours

    _check_window(where, explicit, duration)
    _check_targets(where, explicit.target_resources)

    required = math.fsum(job.instance_hours for job in members)
    reserved = float(count * duration)
    fixed = explicit.instance_count is not None and explicit.duration_hours is not None
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
        schedule=packed.slots,
        lower_bound_instance_hours=None if fixed else float(packed.lower_bound_instance_hours),
    )


def _check_shape(where: str, explicit: PlanSettings, largest: JobPlan) -> None:
    """An explicit count or duration must be one plans sell, and the count must hold the
    largest job (whether the duration holds the jobs is the packer's to say)."""
    needed_count = sellable_instance_count(largest.instance_count)
    count = explicit.instance_count
    if count is not None and count not in PLAN_INSTANCE_COUNTS:
        raise PlanningError(
            f"{where}: instance_count {count} is not a count plans sell; use one of "
            f"{', '.join(map(str, PLAN_INSTANCE_COUNTS))}"
        )
    if count is not None and count < largest.instance_count:
        raise PlanningError(
            f"{where}: instance_count {count} is smaller than the {largest.instance_count} "
            f"instances job {largest.name} needs; set instance_count to {needed_count} or more"
        )
    duration = explicit.duration_hours
    if duration is not None and (
        duration % HOURS_PER_DAY or not PLAN_MIN_HOURS <= duration <= PLAN_MAX_HOURS
    ):
        raise PlanningError(
            f"{where}: duration_hours {duration} is not whole days between {PLAN_MIN_HOURS} "
            f"and {PLAN_MAX_HOURS}; use a multiple of 24 in that range"
        )


def _pack_plan(
    where: str, tasks: Sequence[packing.Task], counts: Sequence[int], explicit: PlanSettings
) -> packing.Packing:
    """The plan's shape and schedule within its settings, or the sentence saying why not."""
    # How the most instances allowed read in a refusal (one job: its own count).
    if explicit.instance_count is not None:
        on = f"on its {explicit.instance_count} instances"
    elif len(tasks) == 1:
        on = ""
    else:
        on = f"even on {counts[-1]} instances"
    duration = explicit.duration_hours
    window_days = _window_days(where, explicit)
    if duration is not None:
        packed = packing.pack(tasks, counts, days=duration // HOURS_PER_DAY)
    else:
        packed = packing.pack(tasks, counts, max_days=min(PLAN_MAX_DAYS, window_days))
    if packed is not None:
        return packed
    fastest = packing.pack(tasks, counts[-1:])  # no cap on days
    assert fastest is not None  # the widest count holds every task alone
    end = max(slot.end_hour for slot in fastest.slots)
    if fastest.duration_hours > PLAN_MAX_HOURS:
        raise PlanningError(_too_long(where, end, on))
    if duration is not None:
        names = ", ".join(task.name for task in tasks)
        raise PlanningError(
            f"{where}: duration_hours {duration} is shorter than the {end} h its jobs "
            f"({names}) need{' ' + on if on else ''}; set duration_hours to "
            f"{fastest.duration_hours} or more"
        )
    raise PlanningError(
        f"{where}: the window from start_after to end_before holds {_days(window_days)}, "
        f"fewer than the {end} h its jobs need{' ' + on if on else ''}; widen the window or "
        "give some jobs another plan"
    )


def job_tasks(members: Sequence[JobPlan]) -> tuple[packing.Task, ...]:
    """The jobs of one plan as the packer sees them: orders across plans are not its."""
    names = {job.name for job in members}
    return tuple(
        packing.Task(
            job.name,
            job.instance_count,
            job.scheduled_hours,
            tuple(p for p in job.after if p in names),
        )
        for job in members
    )


def _sellable_from(widest: int) -> tuple[int, ...]:
    return tuple(count for count in PLAN_INSTANCE_COUNTS if count >= widest)


def _window_days(where: str, settings: PlanSettings) -> int:
    """Whole days between start_after and end_before (the longest plan when either is
    unset); a window shorter than a day is refused by _check_window's messages."""
    start = _parse_time(where, "start_after", settings.start_after)
    end = _parse_time(where, "end_before", settings.end_before)
    if start is None or end is None:
        return PLAN_MAX_DAYS
    hours = (end - start).total_seconds() / 3600
    if hours < PLAN_MIN_HOURS:
        # Inverted, or shorter than a day: refused with the window's own sentence.
        _check_window(where, settings, settings.duration_hours or PLAN_MIN_HOURS)
    return max(1, math.floor(hours / HOURS_PER_DAY))


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
    plan_of = {job.name: name for name, members in groups.items() for job in members}
    for request in requests:
        if request.name not in groups:
            continue  # standalone plan: its count was given, not derived
        members = groups[request.name]
        largest = max(job.instance_count for job in members)
        explicit = settings.get(request.name)
        rounded = sellable_instance_count(largest)
        if explicit is None or explicit.instance_count is None:
            if largest < request.instance_count == rounded:
                notes.append(
                    f"training plan {request.name}: its largest job needs {largest} "
                    f"instances, rounded up to {request.instance_count}, the next count "
                    "plans sell"
                )
            elif request.instance_count > rounded:
                notes.append(
                    f"training plan {request.name}: {request.instance_count} instances, more "
                    f"than the {rounded} its largest job needs, run its jobs side by side in "
                    f"{request.duration_hours // HOURS_PER_DAY} days: fewer instance-hours "
                    "than fewer instances for longer"
                )
        bound = request.lower_bound_instance_hours
        if bound is not None and bound < request.reserved_instance_hours:
            notes.append(
                f"training plan {request.name}: the search stopped at its limit; no shape "
                f"reserves fewer than {_num(bound)} instance-hours, this one reserves "
                f"{_num(request.reserved_instance_hours)}"
            )
        for job in members:
            for before in job.after:
                other = plan_of.get(before)
                if other == request.name:
                    continue
                on = f"training plan {other}" if other else "on-demand capacity"
                notes.append(
                    f"job {job.name} (training plan {request.name}) waits for {before} "
                    f"({on}): plans are scheduled apart, so start {request.name} after "
                    f"{before} ends (start_after)"
                )
    return notes


# --------------------------------------------------------------------------- advice


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


def split_advice(plan: CapacityPlan) -> list[SplitAdvice]:
    """For each plan whose shape the planner chose: a split of its jobs into two or more
    plans of sellable shapes that reserves less, if one is found (packing.split_plan).
    Advice only: the config is never changed."""
    jobs = {job.name: job for job in plan.jobs}
    advice = []
    for request in plan.training_plans:
        tasks = plan.packed.get(request.name)
        if not tasks:
            continue
        window = PlanSettings(
            request.name, start_after=request.start_after, end_before=request.end_before
        )
        max_days = min(PLAN_MAX_DAYS, _window_days(f"training plan {request.name}", window))
        found = packing.split_plan(tasks, PLAN_INSTANCE_COUNTS, max_days=max_days)
        if found is None:
            continue
        parts = tuple(
            SplitPart(
                instance_count=part.instance_count,
                duration_hours=part.duration_hours,
                jobs=tuple(slot.job for slot in part.slots),
                required_instance_hours=math.fsum(
                    jobs[slot.job].instance_hours for slot in part.slots
                ),
            )
            for part in found
        )
        advice.append(
            SplitAdvice(
                request.name,
                request.required_instance_hours,
                request.reserved_instance_hours,
                parts,
            )
        )
    return advice


# --------------------------------------------------------------------------- output


def totals(plan: CapacityPlan) -> tuple[float, float, float]:
    """Required, reserved and wasted instance-hours over every training plan (a plan
    reserved for work the planner does not model wastes none, as in its own row)."""
    return (
        math.fsum(r.required_instance_hours for r in plan.training_plans),
        math.fsum(r.reserved_instance_hours for r in plan.training_plans),
        math.fsum(r.waste_instance_hours for r in plan.training_plans),
    )


def capacity_plan_json(
    plan: CapacityPlan,
    plan_names: Mapping[str, str] | None = None,
    advice: Sequence[SplitAdvice] | None = None,
) -> dict[str, Any]:
    """The plan as JSON-ready data; it validates against CAPACITY_PLAN_JSON_SCHEMA.

    `plan_names` maps a plan to its deterministic name (what `purchase.approve` says);
    `advice` (split_advice) adds `split_advice`.
    """
    names = plan_names or {}
    required, reserved, waste = totals(plan)
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
                "lower_bound_instance_hours": request.lower_bound_instance_hours,
                "schedule": [
                    {
                        "job": slot.job,
                        "start_hour": slot.start_hour,
                        "end_hour": slot.end_hour,
                        "instance_count": slot.instance_count,
                    }
                    for slot in request.schedule
                ],
                **({"plan_name": names[request.name]} if request.name in names else {}),
            }
            for request in plan.training_plans
        ],
        "on_demand": [job.name for job in plan.on_demand],
        "notes": list(plan.notes),
        "totals": {
            "required_instance_hours": required,
            "reserved_instance_hours": reserved,
            "waste_instance_hours": waste,
        },
        **({"split_advice": [_advice_json(a) for a in advice]} if advice is not None else {}),
    }


def _advice_json(advice: SplitAdvice) -> dict[str, Any]:
    return {
        "plan": advice.plan,
        "required_instance_hours": advice.required_instance_hours,
        "reserved_instance_hours": advice.reserved_instance_hours,
        "split_reserved_instance_hours": advice.split_reserved_instance_hours,
        "saved_instance_hours": advice.saved_instance_hours,
        "plans": [
            {
                "instance_count": part.instance_count,
                "duration_hours": part.duration_hours,
                "jobs": list(part.jobs),
                "required_instance_hours": part.required_instance_hours,
                "reserved_instance_hours": part.reserved_instance_hours,
            }
            for part in advice.parts
        ],
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
        "totals": {
            "description": (
                "Instance-hours over every training plan (they stand in for cost); waste "
                "sums the plans' waste."
            ),
            "type": "object",
            "additionalProperties": False,
            "required": [
                "required_instance_hours",
                "reserved_instance_hours",
                "waste_instance_hours",
            ],
            "properties": {
                "required_instance_hours": {"type": "number", "minimum": 0},
                "reserved_instance_hours": {"type": "number", "minimum": 0},
                "waste_instance_hours": {"type": "number", "minimum": 0},
            },
        },
        "split_advice": {
            "description": (
                "Plans whose jobs would reserve fewer instance-hours split into several "
                "plans; advice only, the config is not changed."
            ),
            "type": "array",
            "items": {"$ref": "#/$defs/split_advice"},
        },
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
                "lower_bound_instance_hours": {
                    "description": (
                        "Proven: no shape the settings allow reserves fewer instance-hours "
                        "(equal to reserved_instance_hours when the shape is optimal); null "
                        "when the settings fix the shape."
                    ),
                    "type": ["number", "null"],
                    "minimum": 0,
                },
                "schedule": {
                    "description": (
                        "Where each job runs, in whole hours from the plan's start: jobs run "
                        "side by side up to instance_count and after the jobs they wait for."
                    ),
                    "type": "array",
                    "items": {"$ref": "#/$defs/slot"},
                },
            },
        },
        "slot": {
            "type": "object",
            "additionalProperties": False,
            "required": ["job", "start_hour", "end_hour", "instance_count"],
            "properties": {
                "job": _NAME,
                "start_hour": {"type": "integer", "minimum": 0},
                "end_hour": {
                    "description": "start_hour + the job's hours x runs, rounded up.",
                    "type": "integer",
                    "minimum": 1,
                    "maximum": PLAN_MAX_HOURS,
                },
                "instance_count": {"type": "integer", "minimum": 1},
            },
        },
        "split_advice": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "plan",
                "required_instance_hours",
                "reserved_instance_hours",
                "split_reserved_instance_hours",
                "saved_instance_hours",
                "plans",
            ],
            "properties": {
                "plan": _NAME,
                "required_instance_hours": {"type": "number", "minimum": 0},
                "reserved_instance_hours": {"type": "number", "minimum": 0},
                "split_reserved_instance_hours": {"type": "number", "minimum": 0},
                "saved_instance_hours": {"type": "number", "exclusiveMinimum": 0},
                "plans": {
                    "type": "array",
                    "minItems": 2,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": [
                            "instance_count",
                            "duration_hours",
                            "jobs",
                            "required_instance_hours",
                            "reserved_instance_hours",
                        ],
                        "properties": {
                            "instance_count": {"enum": list(PLAN_INSTANCE_COUNTS)},
                            "duration_hours": {
                                "type": "integer",
                                "multipleOf": HOURS_PER_DAY,
                                "minimum": PLAN_MIN_HOURS,
                                "maximum": PLAN_MAX_HOURS,
                            },
                            "jobs": {"type": "array", "items": _NAME, "minItems": 1},
                            "required_instance_hours": {"type": "number", "minimum": 0},
                            "reserved_instance_hours": {"type": "number", "minimum": 0},
                        },
                    },
                },
            },
        },
    },
}


def render_table(
    plan: CapacityPlan,
    plan_names: Mapping[str, str] | None = None,
    advice: Sequence[SplitAdvice] | None = None,
) -> str:
    """The plan as plain text: jobs, training plans with their required and reserved
    instance-hours (and the total), split advice, on-demand jobs, notes.

    With `plan_names`, it lists the name each plan is bought under, to paste into
    `purchase.approve`; with `advice` (split_advice), what a split would save.
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
        required, reserved, waste = totals(plan)
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
                "ratio",
                "jobs",
            ),
            [
                *(
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
                        _ratio(request.reserved_instance_hours, request.required_instance_hours),
                        ", ".join(request.jobs),
                    )
                    for request in plan.training_plans
                ),
                (
                    "total",
                    "",
                    "",
                    "",
                    "",
                    "",
                    _num(required),
                    _num(reserved),
                    _num(waste),
                    _ratio(reserved, required),
                    "",
                ),
            ],
            right=(2, 3, 6, 7, 8, 9),
        )
    else:
        lines.append("(none)")
    # Only where a split is possible: a plan with two or more groups of linked jobs.
    if advice is not None and any(
        len(packing.linked_groups(tasks)) > 1 for tasks in plan.packed.values()
    ):
        lines += ["", "Split advice (never applied: move jobs with plan: or instance_group)"]
        lines += [line for item in advice for line in _advice_lines(item)] or [
            "(none: no split into plans that sell reserves fewer instance-hours)"
        ]
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


def _ratio(reserved: float, required: float) -> str:
    """Reserved over required instance-hours: 1.23x; '-' for a plan with no jobs."""
    return f"{reserved / required:.2f}x" if required > 0 else "-"


def _advice_lines(advice: SplitAdvice) -> list[str]:
    lines = [
        f"- {advice.plan}: {len(advice.parts)} plans would reserve "
        f"{_num(advice.split_reserved_instance_hours)} instance-hours instead of "
        f"{_num(advice.reserved_instance_hours)}, {_num(advice.saved_instance_hours)} fewer "
        f"({_ratio(advice.split_reserved_instance_hours, advice.required_instance_hours)} "
        f"instead of {_ratio(advice.reserved_instance_hours, advice.required_instance_hours)} "
        f"the {_num(advice.required_instance_hours)} required):"
    ]
    lines += [
        f"  {i}. {part.instance_count} x {part.duration_hours} h, "
        f"{_num(part.reserved_instance_hours)} reserved: {', '.join(part.jobs)}"
        for i, part in enumerate(advice.parts, start=1)
    ]
    return lines


# Text bars: at most this many cells per plan, each a whole number of hours.
_GANTT_CELLS = 72
_GANTT_HOURS_PER_CELL = (1, 2, 3, 4, 6, 8, 12, 24)


def render_gantt(plan: CapacityPlan) -> str:
    """Each training plan's schedule as text: one bar per job over the plan's days.

    A cell is a fixed number of hours (the header says how many); `#` where the job
    holds its instances for any part of the cell, `.` where it does not; `|` between days.
    """
    blocks = []
    for request in plan.training_plans:
        if not request.schedule:
            continue
        blocks.append("\n".join(_gantt(request)))
    if not blocks:
        return "No training plan has jobs to schedule.\n"
    return "\n\n".join(blocks) + "\n"


def _days(days: int) -> str:
    return f"{days} day" if days == 1 else f"{days} days"


def _gantt(request: PlanRequest) -> list[str]:
    hours = request.duration_hours
    days = hours // HOURS_PER_DAY
    per_cell = next(
        (h for h in _GANTT_HOURS_PER_CELL if hours // h <= _GANTT_CELLS),
        HOURS_PER_DAY * math.ceil(days / _GANTT_CELLS),
    )
    cells = math.ceil(hours / per_cell)
    # `|` between days when a day has several cells; else the bar would be half bars.
    per_day = HOURS_PER_DAY // per_cell if per_cell < HOURS_PER_DAY else 0

    def bar(marks: Sequence[str]) -> str:
        if not per_day:
            return "".join(marks)
        return "|".join("".join(marks[d : d + per_day]) for d in range(0, cells, per_day))

    names = [slot.job for slot in request.schedule]
    name_width = max(len("job"), *map(len, names))
    spans = [f"{slot.start_hour}-{slot.end_hour}" for slot in request.schedule]
    span_width = max(len("hours"), *map(len, spans))
    count_width = max(len("count"), len(str(request.instance_count)))
    cell_days = per_cell // HOURS_PER_DAY
    unit = f"{per_cell} h" if per_cell < HOURS_PER_DAY else _days(cell_days)
    lines = [
        f"{request.name}: {request.instance_count} x {request.instance_type} for {hours} h "
        f"({_days(days)}); one cell = {unit}"
    ]
    # Day numbers where a day starts, as long as they do not run into each other.
    axis = [" "] * cells
    free = 0
    for c in range(cells):
        if c >= free and (c * per_cell) % HOURS_PER_DAY == 0:
            label = str(c * per_cell // HOURS_PER_DAY + 1)
            if per_day and per_day < len(label):
                continue  # would cross into the next day's cells
            axis[c : c + len(label)] = list(label)[: cells - c]
            free = c + len(label) + 1
    days_axis = bar(axis)
    head = f"{'job'.ljust(name_width)}  {'count'.rjust(count_width)}  {'hours'.rjust(span_width)}"
    lines.append(f"{head}  |{days_axis}|  (day)")
    for slot, span in zip(request.schedule, spans, strict=True):
        marks = [
            "#" if slot.start_hour < (c + 1) * per_cell and slot.end_hour > c * per_cell else "."
            for c in range(cells)
        ]
        lines.append(
            f"{slot.job.ljust(name_width)}  {str(slot.instance_count).rjust(count_width)}  "
            f"{span.rjust(span_width)}  |{bar(marks)}|"
        )
    return lines


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
