"""What the config says a deployed environment holds, for `novapod status` to compare
with what AWS shows. Pure: no AWS calls.

Names are derived exactly as the stacks derive them: a bought plan's SageMaker name is
`novapod.capacity.naming.training_plan_name` of its request (an adopted plan's is the
last part of its ARN), an extension's approval name `naming.extension_name`, the HyperPod
cluster `novapod-<env>` (novapod/environment.py), a group's count its own or its plan's
and its type its own or its plan's (novapod/stacks/hyperpod.py). The scheduled check
samples every `monitoring.every_minutes` when the config has the monitor stack
(`config.has_monitor`, novapod/config/stacks.py).

A job that runs on SageMaker training jobs (`runs_on: training-job`) has its runs named
`training_jobs.training_job_name` gives them (`<prefix>--<job>-<run>`, the job's name cut
and hash-tagged when too long): its `name_contains`, the stem `training_jobs.job_stem`
gives, finds them with ListTrainingJobs, and `training_jobs.run_of` keeps only those.

A job's schedule is where the planner put it in its plan (`novapod plan --json`: each
plan's `schedule`, a job's slot in hours from the plan's start, its runs one after
another of `hours_per_run` each); its output prefix is `render.output_uri` (what
`novapod launch` and `novapod results` use), its namespace `nova.namespace`.

The EKS cluster is `novapod-<env>` (novapod/environment.py) at `eks.kubernetes_version`
(novapod/stacks/eks.py); what its bootstrap build records in the marker ConfigMap is
`buildspec.recorded_marker` of the `buildspec.build_environment` the construct puts on
its resource (the pins, the RIG switch, the Nova access objects of a config with jobs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from novapod.capacity import extension as plan_extension
from novapod.capacity.naming import extension_name
from novapod.constructs.cluster_bootstrap import buildspec
from novapod.nova import render
from novapod.nova import training_jobs as tj
from novapod.nova.catalog import catalog
from novapod.nova.kubernetes import nova_access
from novapod.pins import default_pins

if TYPE_CHECKING:
    from novapod.config import NovapodConfig

GroupKind = Literal["restricted", "standard"]


@dataclass(frozen=True)
class ExpectedPlan:
    """One entry of capacity.training_plans, as it is bought (or adopted)."""

    name: str  # the entry's name (capacity.training_plans[].name)
    plan_name: str  # the SageMaker training plan's name
    index: int  # its position in capacity.training_plans (for field paths)
    adopted: bool
    existing_arn: str | None
    instance_type: str
    instance_count: int
    duration_hours: int
    approved: bool  # purchase.approve names plan_name (adopted plans need no approval)
    extend_hours: int  # extend.duration_hours, 0 without an extend block
    extension_name: str | None  # the extension's approval name, with an extend block
    jobs: tuple[str, ...]  # the config's jobs that run on the plan


@dataclass(frozen=True)
class ExpectedGroup:
    """One instance group of the HyperPod cluster."""

    name: str
    kind: GroupKind
    instance_type: str
    instance_count: int
    plan: str | None  # the config's plan entry it runs on
    plan_name: str | None  # that plan's SageMaker name
    plan_arn: str | None  # an adopted plan's ARN (a bought one's is known once described)


@dataclass(frozen=True)
class ExpectedJob:
    """One entry of `jobs`, as the planner sized and scheduled it."""

    name: str
    technique: str
    runs: int
    hours_per_run: float
    instance_count: int
    instance_group: str | None
    plan: str | None  # the config's plan entry it runs on
    start_hour: int | None  # its slot in the plan's schedule (None: not scheduled)
    end_hour: int | None
    predecessors: tuple[str, ...]  # after + the from job
    output: str  # its output prefix, ${ArtifactsBucket} unresolved
    launchable: bool  # `novapod launch` can start it (distillation not on HyperPod)
    runs_on: str = "hyperpod"  # or training-job: its runs are SageMaker training jobs
    # A training-job job's ListTrainingJobs NameContains: its runs' stem (training_jobs.job_stem)
    name_contains: str | None = None


@dataclass(frozen=True)
class ExpectedEks:
    """The EKS cluster the HyperPod cluster runs on, and what its bootstrap records."""

    name: str
    kubernetes_version: str  # eks.kubernetes_version
    marker_namespace: str  # where the bootstrap keeps its marker (the chart's namespace)
    marker_name: str
    marker: Mapping[str, str]  # the marker's keys as an install with these pins records them


@dataclass(frozen=True)
class Expected:
    environment: str
    region: str
    prefix: str
    cluster_name: str | None  # None: the config has no HyperPod cluster
    plans: tuple[ExpectedPlan, ...]
    groups: tuple[ExpectedGroup, ...]
    jobs: tuple[ExpectedJob, ...] = ()
    namespace: str | None = None  # the jobs' namespace, with a nova stack
    outputs: str | None = None  # the jobs' outputs prefix in the artifacts bucket
    # Minutes between two samples of the scheduled check (monitoring.every_minutes);
    # None: the config has no monitor stack (monitoring.enabled false), so no metrics.
    sample_minutes: int | None = None
    eks: ExpectedEks | None = None  # with a HyperPod cluster

    def plan(self, name: str | None) -> ExpectedPlan | None:
        return next((p for p in self.plans if p.name == name), None)

    def job(self, name: str) -> ExpectedJob | None:
        return next((j for j in self.jobs if j.name == name), None)

    def stack(self, part: str) -> str:
        return f"{self.prefix}-{part}"


def expected(config: NovapodConfig) -> Expected:
    requests = config.training_plan_requests()
    jobs_by_plan: dict[str, list[str]] = {}
    for job in config.jobs:
        plan = config.job_plan(job)
        if plan is not None:
            jobs_by_plan.setdefault(plan, []).append(job.name)
    plans = []
    for index, (spec, request) in enumerate(requests):
        name = plan_extension.plan_name(spec, config.name, request)
        approve = spec.purchase.approve if spec.purchase else None
        plans.append(
            ExpectedPlan(
                name=spec.name,
                plan_name=name,
                index=index,
                adopted=spec.adopted,
                existing_arn=spec.existing_arn,
                instance_type=request.instance_type,
                instance_count=request.instance_count,
                duration_hours=request.duration_hours,
                approved=spec.adopted or approve == name,
                extend_hours=spec.extend.duration_hours if spec.extend else 0,
                extension_name=(
                    extension_name(name, spec.extend.duration_hours) if spec.extend else None
                ),
                jobs=tuple(jobs_by_plan.get(spec.name, ())),
            )
        )
    by_name = {p.name: p for p in plans}
    groups: list[ExpectedGroup] = []
    hyperpod = config.hyperpod
    if hyperpod is not None:
        for rig in hyperpod.restricted_instance_groups:
            on = by_name.get(rig.training_plan)
            groups.append(
                ExpectedGroup(
                    name=rig.name,
                    kind="restricted",
                    instance_type=rig.instance_type or (on.instance_type if on else "?"),
                    instance_count=(
                        rig.instance_count
                        if rig.instance_count is not None
                        else (on.instance_count if on else 0)
                    ),
                    plan=rig.training_plan,
                    plan_name=on.plan_name if on else None,
                    plan_arn=on.existing_arn if on else None,
                )
            )
        for standard in hyperpod.instance_groups:
            on = by_name.get(standard.training_plan or "")
            groups.append(
                ExpectedGroup(
                    name=standard.name,
                    kind="standard",
                    instance_type=standard.instance_type,
                    instance_count=standard.instance_count,
                    plan=standard.training_plan,
                    plan_name=on.plan_name if on else None,
                    plan_arn=on.existing_arn if on else None,
                )
            )
    with_jobs = config.has_nova_stack
    eks = None
    if hyperpod is not None and config.eks is not None:
        eks = expected_eks(config)
    return Expected(
        environment=config.name,
        region=config.region,
        prefix=config.prefix,
        cluster_name=config.prefix if hyperpod is not None else None,
        plans=tuple(plans),
        groups=tuple(groups),
        jobs=expected_jobs(config) if with_jobs else (),
        namespace=config.nova_settings.namespace if with_jobs else None,
        outputs=render.output_prefix(config) if with_jobs else None,
        sample_minutes=config.monitoring.every_minutes if config.has_monitor else None,
        eks=eks,
    )


def expected_eks(config: NovapodConfig) -> ExpectedEks:
    """The EKS cluster as the eks stack builds it (novapod/environment.py passes these)."""
    assert config.eks is not None
    pins = default_pins()
    environment = buildspec.build_environment(
        pins,
        rig=bool(config.hyperpod and config.hyperpod.restricted_instance_groups),
        region=config.region,
        access=nova_access(config.nova_settings.namespace) if config.has_nova_stack else None,
    )
    return ExpectedEks(
        name=config.prefix,
        kubernetes_version=config.eks.kubernetes_version,
        marker_namespace=pins.chart.namespace,
        marker_name=buildspec.MARKER_CONFIGMAP,
        marker=buildspec.recorded_marker(environment),
    )


def expected_jobs(config: NovapodConfig) -> tuple[ExpectedJob, ...]:
    """The config's jobs, sized by the planner and placed in their plans' schedules."""
    plan = config.capacity_plan()
    sized = {job.name: job for job in [*plan.jobs, *plan.on_demand]}
    slots = {
        slot.job: slot
        for _, request in config.training_plan_requests()
        for slot in request.schedule
    }
    techniques = catalog().techniques
    out = []
    for job in config.jobs:
        size = sized[job.name]
        slot = slots.get(job.name)
        out.append(
            ExpectedJob(
                name=job.name,
                technique=job.technique,
                runs=size.runs,
                hours_per_run=size.hours_per_run,
                instance_count=size.instance_count,
                instance_group=job.instance_group,
                plan=config.job_plan(job),
                start_hour=slot.start_hour if slot else None,
                end_hour=slot.end_hour if slot else None,
                predecessors=job.predecessors,
                output=render.output_uri(config, job),
                launchable=(
                    job.on_training_job or techniques[job.technique].not_launchable is None
                ),
                runs_on=job.runs_on,
                name_contains=(
                    tj.job_stem(config.prefix, job.name) if job.on_training_job else None
                ),
            )
        )
    return tuple(out)
