"""Plan requests: the sized jobs grouped into the training plans to buy, each with the
shape (count and days) and schedule packing gives it; jobs on instance types plans do
not sell stay on demand.

Packing policy. A workload names its plan with `plan`; workloads without one share a plan
per instance type, named after it (ml.p5.48xlarge -> p5-48xlarge). The jobs of a plan run
side by side on its instances when they fit, each after the jobs it waits for (`after`,
`from: job:`), and none past the plan's end; a job's runs run one after another. The
planner chooses the plan's instance count (a count plans sell: 1, 2, 4, 8, 16, 32 or 64,
at least the widest job) and its duration (whole days, at most 182 days = 4368 h) that
reserve the fewest instance-hours, ties broken toward fewer instances, and the schedule
(novapod.capacity.packing says how, and why the result is the same on every machine).
Explicit `PlanSettings` win over the derived values but must hold the jobs. Reserved
minus required instance-hours is reported as waste, so the cost of the shape is visible;
where offerings are not known yet, instance-hours stand in for cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import MappingProxyType

from novapod.capacity import packing
from novapod.capacity.advice import plan_notes
from novapod.capacity.models import (
    DNS_LABEL,
    CapacityPlan,
    JobPlan,
    PlanningError,
    PlanRequest,
    PlanSettings,
    Workload,
)
from novapod.capacity.requirements import plan_eligible, plan_instance_families
from novapod.capacity.sizing import plan_jobs
from novapod.capacity.units import (
    HOURS_PER_DAY,
    HYPERPOD_CLUSTER,
    PLAN_INSTANCE_COUNTS,
    PLAN_MAX_DAYS,
    PLAN_MAX_HOURS,
    PLAN_MIN_HOURS,
    TARGET_RESOURCES,
    TRAINING_JOB,
    days_text,
    sellable_instance_count,
    too_long,
)
from novapod.capacity.windows import check_window, days_in_window


def default_plan_name(instance_type: str, target: str = HYPERPOD_CLUSTER) -> str:
    """The plan workloads without `plan` share: ml.p5.48xlarge -> p5-48xlarge, and
    p5-48xlarge-tj for training jobs (a plan serves one target resource)."""
    name = instance_type.removeprefix("ml.").replace(".", "-")
    return name if target == HYPERPOD_CLUSTER else f"{name}-tj"


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
        if workload.on_demand:
            _check_on_demand(workload)
            on_demand.append(job)
            continue
        if not plan_eligible(job.instance_type):
            if workload.plan is not None:
                raise PlanningError(
                    f"job {workload.name}: training plans do not sell {job.instance_type}; "
                    f"remove plan {workload.plan!r} to run it on demand"
                )
            on_demand.append(job)
            continue
        name = workload.plan
        if name is None:
            name = default_plan_name(job.instance_type, workload.target)
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
        notes=plan_notes(jobs, requests, groups, settings),
        packed=MappingProxyType(derived),
    )


def _check_on_demand(workload: Workload) -> None:
    """A training job may run on demand, on no plan; a HyperPod job runs on a group."""
    if workload.plan is not None:
        raise PlanningError(
            f"job {workload.name}: runs on demand and on plan {workload.plan!r}; remove one of them"
        )
    if workload.target != TRAINING_JOB:
        raise PlanningError(
            f"job {workload.name}: only training jobs run on demand; remove on_demand"
        )


def _check_plan_name(name: str, where: str) -> None:
    if not DNS_LABEL.match(name):
        raise PlanningError(
            f"{where} is not a DNS label; use lowercase letters, digits and '-' "
            "(at most 63 characters)"
        )


def _plan_request(name: str, members: list[JobPlan], settings: PlanSettings | None) -> PlanRequest:
    where = f"training plan {name}"
    targets = sorted({job.target for job in members})
    if len(targets) > 1:
        kinds = "; ".join(
            f"{t}: {', '.join(j.name for j in members if j.target == t)}" for t in targets
        )
        raise PlanningError(
            f"{where} would serve jobs of two targets ({kinds}), and a plan is specific to "
            "its target resource; give the jobs of each target their own plan"
        )
    explicit = settings or PlanSettings(name=name, target_resources=(targets[0],))
    _check_targets(where, explicit.target_resources)
    outside = [job.name for job in members if job.target not in explicit.target_resources]
    if outside:
        raise PlanningError(
            f"{where} is for {', '.join(explicit.target_resources)}, not {targets[0]}, which "
            f"job {outside[0]} runs on; add {targets[0]} to its target_resources or give the "
            "job another plan"
        )

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

    check_window(where, explicit, duration)
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
    window_days = days_in_window(where, explicit)
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
        raise PlanningError(too_long(where, end, on))
    if duration is not None:
        names = ", ".join(task.name for task in tasks)
        raise PlanningError(
            f"{where}: duration_hours {duration} is shorter than the {end} h its jobs "
            f"({names}) need{' ' + on if on else ''}; set duration_hours to "
            f"{fastest.duration_hours} or more"
        )
    raise PlanningError(
        f"{where}: the window from start_after to end_before holds {days_text(window_days)}, "
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
    check_window(where, plan, duration)
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


def _check_targets(where: str, targets: Sequence[str]) -> None:
    unknown = [t for t in targets if t not in TARGET_RESOURCES]
    if not targets or unknown or len(set(targets)) != len(targets):
        raise PlanningError(
            f"{where}: target_resources {list(targets)} is not a list of distinct values from "
            f"{', '.join(TARGET_RESOURCES)}; use ['hyperpod-cluster'] for HyperPod"
        )
