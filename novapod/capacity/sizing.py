"""Sizing: each workload (model, technique, runs, hours per run) to a job's instance
type, count and instance-hours, from the documented requirements; `after` must name
other jobs and make no cycle.

Instance-hours are always computed (count x hours x runs), never copied from the source
tables: their Nova Pro PPO row prints 260 where 11 x 26 = 286.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from novapod.capacity import packing
from novapod.capacity.models import DNS_LABEL, INSTANCE_TYPE, JobPlan, PlanningError, Workload
from novapod.capacity.requirements import requirement, sizing_view


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
    if not DNS_LABEL.match(workload.name):
        raise PlanningError(
            f"{where}: the name is not a DNS label; use lowercase letters, digits and '-' "
            "(at most 63 characters)"
        )
    try:
        req = requirement(
            workload.model, workload.technique, workload.sequence_length, workload.target
        )
    except PlanningError as exc:
        raise PlanningError(f"{where}: {exc}") from None
    display = sizing_view().display_names[workload.model]
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
    if not INSTANCE_TYPE.match(instance_type):
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
        target=workload.target,
    )
