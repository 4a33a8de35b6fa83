"""Checks across sections, in one place: a rule that reads more than one section of
the config (zones against the region, instance groups against training plans, ...)
is a plain function here, and `problems` runs them all in reporting order.

A new section adds its cross-section checks here and calls them from `problems`.

The checks read the whole config through `CheckedConfig`, the part of it they need; the
root model (root.py) has it and calls them from its validator, so this module never
imports root.py: the import runs one way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import date, datetime
from typing import Protocol

from novapod import addressing
from novapod.capacity import PlanningError, PlanRequest, Workload, approval, extension
from novapod.capacity.naming import training_plan_name
from novapod.capacity.units import HYPERPOD_CLUSTER, TRAINING_JOB
from novapod.config.base import _ApprovalError, _at, _EndedWindowError, _FieldError
from novapod.config.capacity import Capacity, TrainingPlanSpec
from novapod.config.eks import Eks
from novapod.config.hyperpod import HyperPod, RestrictedGroup, StandardGroup
from novapod.config.jobs import Job, batch_size_problem, max_length_problem, replicas_problem
from novapod.config.monitoring import Notifications
from novapod.config.network import GATEWAY_ENDPOINTS, RIG_ENDPOINTS, Network
from novapod.config.nova import DEFAULT_NAMESPACE, TRAINING_OPERATOR_NAMESPACE, Nova
from novapod.config.storage import Storage
from novapod.facts import cluster_instance_types, eks_facts, plan_instance_types, support_warning
from novapod.node_images import node_image_registries
from novapod.nova.bedrock import on_demand
from novapod.nova.catalog import CatalogError, catalog
from novapod.pins import default_pins


class CheckedConfig(Protocol):
    """What the checks read of one environment's config (NovapodConfig in root.py)."""

    @property
    def name(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def tags(self) -> Mapping[str, str]: ...
    @property
    def network(self) -> Network: ...
    @property
    def storage(self) -> Storage: ...
    @property
    def jobs(self) -> Sequence[Job]: ...
    @property
    def capacity(self) -> Capacity: ...
    @property
    def eks(self) -> Eks | None: ...
    @property
    def hyperpod(self) -> HyperPod | None: ...
    @property
    def nova(self) -> Nova | None: ...
    @property
    def nova_settings(self) -> Nova: ...
    @property
    def has_nova_stack(self) -> bool: ...
    @property
    def notifications(self) -> Notifications: ...
    @property
    def has_monitor(self) -> bool: ...
    @property
    def job_endpoints(self) -> Mapping[str, str]: ...
    def training_plan_requests(self) -> list[tuple[TrainingPlanSpec, PlanRequest]]: ...
    def restricted_group(self, name: str | None) -> RestrictedGroup | None: ...
    def job_plan(self, job: Job) -> str | None: ...


def problems(
    config: CheckedConfig, now: datetime, *, approvals: bool = True, windows: bool = True
) -> list[_FieldError]:
    """Every cross-section finding, collected and reported at once, so one run of
    `novapod validate` shows all there is to fix. `now`: the time purchases are judged at.

    `approvals=False` leaves out whether each purchase is approved (`novapod plan`,
    `offerings` and `recipes` look before anyone approves; synthesis never does). With
    other mistakes in the config, a missing or stale approval is reported without a name
    to paste: that name is derived from the whole config, and would be the wrong one.

    `windows=False` leaves out plans whose purchase window has ended (`novapod status`
    reads an environment after its plans ran out; nothing it does buys)."""
    found = list(network_problems(config))
    inverted = list(window_problems(config))
    found += inverted
    mistargeted = list(target_problems(config))
    found += mistargeted
    requests: list[tuple[TrainingPlanSpec, PlanRequest]] | None = None
    # The planner would only report a negative window, or a job on a plan for another
    # target (less precisely than these checks).
    if not inverted and not mistargeted:
        try:
            requests = config.training_plan_requests()
        except PlanningError as exc:
            found.append(_at(planning_path(config, str(exc)), str(exc), root=True))
    found += hyperpod_problems(config, requests)
    found += job_problems(config, requests)
    found += service_limit_problems(config, requests or [])
    found += purchase_problems(config, requests or [], now)
    found += extension_problems(config, requests or [])
    found += nova_problems(config)
    found += bedrock_deployment_problems(config)
    found += job_endpoint_problems(config)
    found += notification_problems(config)
    if not windows:
        found = [f for f in found if not isinstance(f, _EndedWindowError)]
    if not approvals:
        return [f for f in found if not isinstance(f, _ApprovalError)]
    if any(not isinstance(f, _ApprovalError) for f in found):
        return [_without_name(f) if isinstance(f, _ApprovalError) else f for f in found]
    return found


def notification_problems(config: CheckedConfig) -> Iterator[_FieldError]:
    """Addresses to alert need something that alerts: the monitor stack."""
    if config.notifications.emails and not config.has_monitor:
        yield _at(
            "notifications.emails",
            "nothing sends alerts in this environment: alerts come with training plans or "
            "a HyperPod cluster to watch, and monitoring.enabled true",
        )


def approval_problems(config: CheckedConfig, now: datetime) -> list[_ApprovalError]:
    """Only the approvals of `problems` (of a config that is otherwise valid)."""
    requests = config.training_plan_requests()
    found = [*purchase_problems(config, requests, now), *extension_problems(config, requests)]
    return [f for f in found if isinstance(f, _ApprovalError)]


def _without_name(error: _ApprovalError) -> _FieldError:
    if not error.names:
        return error
    return _at(
        error.path,
        "not approved as the config stands, and the name to approve is derived from all of "
        "it (jobs, windows, counts): fix the other mistakes first, then `novapod validate` "
        "prints the name",
        root=True,
    )


def network_problems(config: CheckedConfig) -> Iterator[_FieldError]:
    """Zones of another region, subnets that do not fit, Lustre in a zone without a subnet."""
    for i, zone in enumerate(config.network.zone_ids):
        if not addressing.zone_id_matches_region(zone, config.region):
            where = (
                f"network.vpc.zone_ids[{i}]"
                if config.network.vpc
                else "network.existing_vpc.private_subnets"
            )
            yield _at(
                where,
                f"{zone} is not a zone of {config.region} (its zone IDs start with "
                f"{addressing.zone_id_prefix(config.region)}-az)",
                root=True,
            )
    vpc = config.network.vpc
    if vpc is not None:
        try:
            addressing.plan_subnets(
                vpc.cidr,
                list(vpc.zone_ids),
                vpc.private_subnet_prefix,
                None if config.network.closed else vpc.public_subnet_prefix,
            )
        except addressing.AddressPlanError as exc:
            yield _at("network.vpc.cidr", str(exc), root=True)
    lustre = config.storage.lustre
    if lustre is not None and lustre.zone_id and lustre.zone_id not in config.network.zone_ids:
        yield _at(
            "storage.lustre.zone_id",
            f"{lustre.zone_id} has no private subnet; use one of "
            f"{', '.join(config.network.zone_ids)}",
            root=True,
        )


def window_problems(config: CheckedConfig) -> Iterator[_FieldError]:
    """A window that ends before it starts, said as such (the planner only sees hours)."""
    for i, spec in enumerate(config.capacity.training_plans):
        start, end = spec.start_after, spec.end_before
        if start is not None and end is not None and end <= start:
            yield _at(
                f"capacity.training_plans[{i}].end_before",
                f"the window is inverted: end_before {end.isoformat()} is not after "
                f"start_after {start.isoformat()}; swap the two or correct the dates",
                root=True,
            )


def target_problems(config: CheckedConfig) -> Iterator[_FieldError]:
    """Groups and jobs on a listed plan not bought for where they run: "Training plans are
    specific to their target resource (either SageMaker Training Job or SageMaker
    HyperPod) and cannot be interchanged" (https://docs.aws.amazon.com/sagemaker/latest/
    dg/reserve-capacity-with-training-plans.html)."""
    groups: list[tuple[str, RestrictedGroup | StandardGroup]] = []
    if config.hyperpod is not None:
        groups = [
            (f"hyperpod.restricted_instance_groups[{i}]", g)
            for i, g in enumerate(config.hyperpod.restricted_instance_groups)
        ] + [
            (f"hyperpod.instance_groups[{i}]", g)
            for i, g in enumerate(config.hyperpod.instance_groups)
        ]
    for path, group in groups:
        spec = _listed_plan(config, group.training_plan)
        if spec is not None and HYPERPOD_CLUSTER not in spec.target_resources:
            yield _at(
                f"{path}.training_plan",
                f"{group.training_plan} is not bought for hyperpod-cluster; add it to the "
                "plan's target_resources",
                root=True,
            )
    for i, job in enumerate(config.jobs):
        where = f"jobs[{i}].plan"
        if job.on_training_job:
            spec = None if job.on_demand else _listed_plan(config, job.plan)
            if spec is not None and TRAINING_JOB not in spec.target_resources:
                yield _at(
                    where,
                    f"{spec.name} is not bought for training-job, and a training job runs only "
                    "on a plan reserved for training jobs (plans are specific to their target "
                    "resource); add training-job to its target_resources, or use another plan",
                    root=True,
                )
            continue
        if config.restricted_group(job.instance_group) is not None:
            continue  # its group's plan: checked with the group above
        spec = _listed_plan(config, job.plan)
        if spec is not None and HYPERPOD_CLUSTER not in spec.target_resources:
            yield _at(
                where,
                f"{spec.name} is not bought for hyperpod-cluster, and a plan for another "
                "target cannot give a HyperPod job its capacity (plans are specific to their "
                "target resource); add hyperpod-cluster to its target_resources, or set "
                "runs_on: training-job",
                root=True,
            )


def planning_path(config: CheckedConfig, message: str) -> str:
    """The config path a planner message is about (it names a job or plan)."""
    match = re.match(r"(job|training plan) '?([a-z0-9-]+)'?", message)
    if match:
        kind, name = match.groups()
        if kind == "job":
            for i, job in enumerate(config.jobs):
                if job.name == name:
                    return f"jobs[{i}]"
        for i, spec in enumerate(config.capacity.training_plans):
            if spec.name == name:
                return f"capacity.training_plans[{i}]"
    return "capacity"


def workload(config: CheckedConfig, job: Job) -> Workload:
    """What the planner sizes for a job: the instances of its recipe on its group's type.

    The instance type is the group's (or its listed plan's) when the config sets one,
    else the catalog's sizing type; the count is the job's replicas (PPO: its role
    replicas) on that type's recipe. Sequence lengths are checked per recipe here
    (job_problems), not by the planner.
    """
    instance_type = _job_instance_type(config, job)
    try:
        if job.on_training_job:
            variant = catalog().training_job_variant(
                job.model, job.technique, instance_type, job.task
            )
        else:
            variant = catalog().variant(job.model, job.technique, instance_type)
    except CatalogError:  # reported by job_problems; size with the sizing recipe
        variant = catalog().variant(job.model, job.technique)
    if job.on_training_job:
        instance_type = instance_type or variant.instance_type
    return Workload(
        name=job.name,
        model=job.model,
        technique=job.technique,
        runs=job.runs,
        hours_per_run=job.hours_per_run,
        instance_type=instance_type,
        instance_count=variant.instance_count(job.replicas),
        plan=None if job.on_demand else config.job_plan(job),
        after=job.predecessors,
        target=TRAINING_JOB if job.on_training_job else HYPERPOD_CLUSTER,
        on_demand=job.on_demand,
    )


def _job_instance_type(config: CheckedConfig, job: Job) -> str | None:
    """The type a job runs on when the config says it: its plan's, else its group's (a
    group whose type differs from its plan's is refused in hyperpod_problems)."""
    plan = None if job.on_demand else config.job_plan(job)
    spec = next((p for p in config.capacity.training_plans if p.name == plan), None)
    if spec is not None and spec.instance_type is not None:
        return spec.instance_type
    if job.on_training_job:
        return job.instance_type
    group = config.restricted_group(job.instance_group)
    return group.instance_type if group is not None else None


def job_problems(
    config: CheckedConfig, requests: list[tuple[TrainingPlanSpec, PlanRequest]] | None
) -> Iterator[_FieldError]:
    """Jobs against the instance groups, their plans and the region."""
    plans = {spec.name: request for spec, request in requests or []}
    region_refused: set[str] = set()
    for i, job in enumerate(config.jobs):
        where = f"jobs[{i}]"
        yield from _job_group_problems(config, where, job)
        for path, message in _job_image_problems(config, where, job):
            if path == "region":
                if message in region_refused:
                    continue
                region_refused.add(message)
            yield _at(path, message, root=True)
        yield from _job_on_group(config, where, job, plans)


def _job_group_problems(config: CheckedConfig, where: str, job: Job) -> Iterator[_FieldError]:
    """A job names a restricted group of the cluster, or a plan when there is none (a
    training-job job: its plan or on_demand, checked with the job)."""
    if job.on_training_job:
        return
    if config.hyperpod is None:
        if job.instance_group is not None:
            yield _at(
                f"{where}.instance_group",
                "the config has no hyperpod section; add one with this restricted group, "
                "or use plan to size capacity only",
                root=True,
            )
        return
    restricted = [g.name for g in config.hyperpod.restricted_instance_groups]
    standard = [g.name for g in config.hyperpod.instance_groups]
    choices = ", ".join(restricted) or "none yet (add hyperpod.restricted_instance_groups)"
    if job.plan is not None:
        yield _at(
            f"{where}.plan",
            "with a hyperpod section a job runs on an instance group and uses its plan; "
            "replace plan with instance_group",
            root=True,
        )
    launchable = catalog().techniques[job.technique].not_launchable is None
    if job.instance_group is None:
        if launchable:
            yield _at(
                f"{where}.instance_group",
                f"set the restricted instance group the job runs on: {choices}",
                root=True,
            )
    elif job.instance_group in standard:
        yield _at(
            f"{where}.instance_group",
            f"{job.instance_group} is a standard group; Nova jobs run on restricted "
            f"instance groups: {choices}",
            root=True,
        )
    elif job.instance_group not in restricted:
        yield _at(
            f"{where}.instance_group",
            f"no restricted instance group is named {job.instance_group}; use one of {choices}",
            root=True,
        )


def _job_image_problems(config: CheckedConfig, where: str, job: Job) -> Iterator[tuple[str, str]]:
    """(path, message) when the job's image is not published in the region."""
    nova = catalog()
    try:
        if job.on_training_job:
            try:
                nova.training_job_variants(job.model, job.technique, job.task)
            except CatalogError:
                return  # refused with the job (jobs.py)
            nova.training_job_image(job.model, job.technique, config.region, job.task)
        elif nova.techniques[job.technique].not_launchable is not None:
            return
        else:
            nova.image(job.model, job.technique, config.region, _task(job))
    except CatalogError as exc:
        message = str(exc)
        regional = message.startswith(("region ", "Nova training images", "Nova training-job"))
        yield ("region" if regional else f"{where}.technique"), message


def _job_on_group(
    config: CheckedConfig, where: str, job: Job, plans: dict[str, PlanRequest]
) -> Iterator[_FieldError]:
    """The job's recipe on its group's instance type and count (when the plan resolved)."""
    if job.on_training_job:
        yield from _training_job_problems(config, where, job, plans)
        return
    group = config.restricted_group(job.instance_group)
    request = plans.get(group.training_plan) if group is not None else None
    if group is None or request is None:
        instance_type = _job_instance_type(config, job)
        count = None
    else:
        instance_type = group.instance_type or request.instance_type
        count = group.instance_count if group.instance_count is not None else request.instance_count
    nova = catalog()
    try:
        variant = nova.variant(job.model, job.technique, instance_type)
    except CatalogError as exc:
        yield _at(f"{where}.instance_group", str(exc), root=True)
        return
    on = instance_type or variant.instance_type
    problem = replicas_problem(job, variant.allowed_replicas, on)
    if problem:
        yield _at(f"{where}.replicas", problem, root=True)
    problem = max_length_problem(job, variant.max_length, on, variant.max_length_multiple)
    if problem:
        yield _at(f"{where}.hyperparameters.max_length", problem, root=True)
    problem = batch_size_problem(job, variant.global_batch_sizes, on)
    if problem:
        yield _at(f"{where}.hyperparameters.global_batch_size", problem, root=True)
    needed = variant.instance_count(job.replicas)
    if group is not None and count is not None and needed > count:
        display = f"{nova.models[job.model].display_name} {job.technique}"
        yield _at(
            f"{where}.instance_group",
            f"{display} needs {needed} instances but group {group.name} has {count}; use a "
            f"larger group (instance_count, or its plan's) or fewer replicas",
            root=True,
        )


def _listed_plan(config: CheckedConfig, name: str | None) -> TrainingPlanSpec | None:
    return next((p for p in config.capacity.training_plans if p.name == name), None)


def _training_job_problems(
    config: CheckedConfig, where: str, job: Job, plans: dict[str, PlanRequest]
) -> Iterator[_FieldError]:
    """A training-job job on its plan (or on demand): the plan's target, the instance
    type training plans sell and the plan has, the InstanceCount the recipe allows."""
    nova = catalog()
    try:
        nova.training_job_variants(job.model, job.technique, job.task)
    except CatalogError:
        return  # refused with the job (jobs.py)
    spec = None if job.on_demand else _listed_plan(config, job.plan)
    if (
        spec is not None
        and spec.instance_type
        and job.instance_type
        and spec.instance_type != job.instance_type
    ):
        yield _at(
            f"{where}.instance_type",
            f"{job.instance_type} differs from plan {spec.name}'s {spec.instance_type}, "
            "and a training job's InstanceType must be its plan's (use-training-plan-for-"
            "training-jobs-using-api-cli-sdk.html); use the plan's type or leave it out",
            root=True,
        )
        return
    request = plans.get(job.plan) if job.plan is not None and not job.on_demand else None
    instance_type = _job_instance_type(config, job)
    if instance_type is None and request is not None:
        instance_type = request.instance_type
    try:
        variant = nova.training_job_variant(job.model, job.technique, instance_type, job.task)
    except CatalogError as exc:
        yield _at(
            f"{where}.plan" if spec and spec.instance_type else f"{where}.instance_type",
            str(exc),
            root=True,
        )
        return
    on = instance_type or variant.instance_type
    sold = nova.training_jobs.plan_instance_types
    if not job.on_demand and on not in sold:
        yield _at(
            f"{where}.instance_type" if job.instance_type else f"{where}.plan",
            f"training plans do not sell {on} (they sell {', '.join(sold)}); use "
            f"on_demand: true with instance_type: {on} instead of plan",
            root=True,
        )
    if job.replicas is not None and job.replicas not in variant.allowed_replicas:
        values = ", ".join(map(str, variant.allowed_replicas))
        display = nova.models[job.model].display_name
        yield _at(
            f"{where}.replicas",
            f"{display} {job.technique} on a {on} training job runs on {values} instances "
            "(its InstanceCount); use one of them",
            root=True,
        )


def _task(job: Job) -> str | None:
    return job.evaluation.task if job.evaluation is not None else None


def hyperpod_problems(
    config: CheckedConfig, requests: list[tuple[TrainingPlanSpec, PlanRequest]] | None
) -> Iterator[_FieldError]:
    """Checks of eks and hyperpod; those against plans only when the plans resolved."""
    if config.eks is not None and config.network.closed:
        yield _at(
            "network.closed",
            "the HyperPod dependencies install (ClusterBootstrap) downloads helm, kubectl, "
            "yq and the chart from the internet, which a closed network cannot reach; "
            "use closed: false with eks (mirrors in S3 are not supported yet)",
            root=True,
        )
    if config.hyperpod is None:
        return
    if config.eks is None:
        yield _at("hyperpod", "HyperPod is orchestrated by EKS; add an eks section", root=True)
    if requests is None:
        return
    plans = {spec.name: request for spec, request in requests}
    groups: list[tuple[str, RestrictedGroup | StandardGroup]] = [
        (f"hyperpod.restricted_instance_groups[{i}]", g)
        for i, g in enumerate(config.hyperpod.restricted_instance_groups)
    ] + [
        (f"hyperpod.instance_groups[{i}]", g) for i, g in enumerate(config.hyperpod.instance_groups)
    ]
    used: dict[str, str] = {}
    for path, group in groups:
        if group.training_plan is None:
            continue
        request = plans.get(group.training_plan)
        if request is None:
            yield _at(
                f"{path}.training_plan",
                f"{group.training_plan} is not in capacity.training_plans; add it there "
                f"(bought or adopted) or use one of {', '.join(plans) or 'none yet'}",
                root=True,
            )
            continue
        if group.training_plan in used:
            yield _at(
                f"{path}.training_plan",
                f"{group.training_plan} already serves {used[group.training_plan]}; a plan "
                "binds one instance group",
                root=True,
            )
            continue
        used[group.training_plan] = group.name
        if group.instance_type and group.instance_type != request.instance_type:
            yield _at(
                f"{path}.instance_type",
                f"{group.instance_type} differs from plan {group.training_plan}'s "
                f"{request.instance_type}; use the plan's type or leave it out",
                root=True,
            )
        if group.instance_count is not None and group.instance_count > request.instance_count:
            yield _at(
                f"{path}.instance_count",
                f"{group.instance_count} exceeds the {request.instance_count} instances of "
                f"plan {group.training_plan}; use {request.instance_count} or fewer",
                root=True,
            )


def service_limit_problems(
    config: CheckedConfig, requests: list[tuple[TrainingPlanSpec, PlanRequest]]
) -> Iterator[_FieldError]:
    """Regions, tags, principals and instance types the services accept or know."""
    if config.eks is not None:
        # Nodes pull the EKS add-on images and the health agent from per-region
        # registries; a region without them would fail at synth or on the nodes.
        known = set(node_image_registries().eks_registries) & set(
            default_pins().health_agent.registry_accounts
        )
        if config.region not in known:
            yield _at(
                "region",
                f"novapod knows the EKS add-on and HyperPod health-agent image registries "
                f"of {', '.join(sorted(known))}, not of {config.region}: choose one of them, "
                "or add the region to novapod/data/node_images.yaml and "
                "hyperpod_dependencies.yaml",
                root=True,
            )
    reserved = [k for k in config.tags if k.lower().startswith("aws:")]
    if reserved:
        yield _at("tags", f"the aws: prefix is reserved by AWS; rename {reserved[0]}", root=True)
    if config.eks is not None:
        principals = config.eks.admin_principals
        repeated = sorted({p for p in principals if principals.count(p) > 1})
        if repeated:
            yield _at("eks.admin_principals", f"listed twice: {', '.join(repeated)}", root=True)
    plan_types = plan_instance_types()
    for i, (_, request) in enumerate(requests):
        if request.instance_type not in plan_types:
            yield _at(
                f"capacity.training_plans[{i}].instance_type",
                f"training plans do not sell {request.instance_type}; use one of "
                f"{', '.join(sorted(plan_types))}",
                root=True,
            )
    if config.hyperpod is None:
        return
    group_types = cluster_instance_types()
    typed: list[tuple[str, str | None]] = [
        (f"restricted_instance_groups[{i}]", g.instance_type)
        for i, g in enumerate(config.hyperpod.restricted_instance_groups)
    ] + [
        (f"instance_groups[{i}]", g.instance_type)
        for i, g in enumerate(config.hyperpod.instance_groups)
    ]
    for where, instance_type in typed:
        if instance_type and instance_type not in group_types:
            yield _at(
                f"hyperpod.{where}.instance_type",
                f"{instance_type} is not a HyperPod instance type (see the "
                "ClusterInstanceType values of the SageMaker API)",
                root=True,
            )
    if config.hyperpod.restricted_instance_groups:
        missing = [
            e
            for e in (*GATEWAY_ENDPOINTS, *RIG_ENDPOINTS)
            if e not in config.network.endpoint_names
        ]
        if missing:
            yield _at(
                "network.endpoints",
                "restricted instance groups have no internet access and reach AWS only "
                f"through endpoints; add {', '.join(missing)}",
                root=True,
            )


def job_endpoint_problems(config: CheckedConfig) -> Iterator[_FieldError]:
    """A network.endpoints list that lacks what the jobs' pods call (without a list the
    config adds them: NovapodConfig.endpoint_names)."""
    if config.network.endpoints is None:
        return
    missing = {
        name: job
        for name, job in config.job_endpoints.items()
        if name not in config.network.endpoint_names
    }
    if missing:
        yield _at(
            "network.endpoints",
            "jobs on restricted groups and training jobs reach AWS through endpoints; add "
            + ", ".join(f"{name} (for job {job})" for name, job in missing.items()),
            root=True,
        )


def purchase_problems(
    config: CheckedConfig,
    requests: list[tuple[TrainingPlanSpec, PlanRequest]],
    now: datetime,
) -> Iterator[_FieldError]:
    """Every plan to buy is approved by its exact name, capped, and still buyable; no
    entry adopts a plan another entry buys (two resources on one plan would read its
    extensions side by side, each before the other claims)."""
    bought = {
        training_plan_name(config.name, r): i
        for i, (s, r) in enumerate(requests)
        if not s.adopted and s.purchase is not None
    }
    for i, (spec, _) in enumerate(requests):
        name = spec.existing_arn.rsplit("/", 1)[-1] if spec.existing_arn else None
        if name is not None and name in bought:
            yield _at(
                f"capacity.training_plans[{i}].existing_arn",
                f"names {name}, the plan capacity.training_plans[{bought[name]}] buys: one "
                "entry per plan (put its extend on that entry and remove this one)",
                root=True,
            )
    instance_types = sorted(plan_instance_types())
    for i, (spec, request) in enumerate(requests):
        if spec.adopted:
            continue
        where = f"capacity.training_plans[{i}]"
        if spec.end_before is not None and spec.end_before <= now:
            yield _EndedWindowError(
                f"{where}.end_before",
                f"{spec.end_before.isoformat()} is in the past, and no plan can be bought "
                "for a window that has ended: move the window, or adopt a plan you already "
                "bought with existing_arn",
                True,
            )
            continue
        purchase = spec.purchase
        problem = approval.approval_problem(
            environment=config.name,
            request=request,
            approve=purchase.approve if purchase else None,
            fee_cap=purchase.max_upfront_fee if purchase else None,
            currency=purchase.currency if purchase else "USD",
            instance_types=instance_types,
        )
        if problem is not None and purchase is not None and isinstance(purchase.approve, str):
            advice = extension.lengthening_advice(
                approved=purchase.approve,
                environment=config.name,
                request=request,
                fee_cap=purchase.max_upfront_fee,
                instance_types=instance_types,
            )
            problem += f"; or, {advice}" if advice else ""
        if problem is not None:
            path = f"{where}.purchase.approve" if purchase else f"{where}.purchase"
            yield _ApprovalError(path, problem, names=True)
        elif purchase is not None and purchase.max_upfront_fee is None:
            yield _ApprovalError(
                f"{where}.purchase.max_upfront_fee",
                "required with approve: the highest up-front fee to pay for "
                f"{spec.name}, a plain number in {purchase.currency} (see `novapod "
                f"offerings CONFIG --plan {spec.name}` for prices)",
                names=False,
            )


def extension_problems(
    config: CheckedConfig, requests: list[tuple[TrainingPlanSpec, PlanRequest]]
) -> Iterator[_FieldError]:
    """Every `extend` block approves its exact extension and caps its fee."""
    for i, (spec, request) in enumerate(requests):
        extend = spec.extend
        if extend is None:
            continue
        where = f"capacity.training_plans[{i}].extend"
        problem = extension.extension_problem(
            plan=extension.plan_name(spec, config.name, request),
            hours=extend.duration_hours,
            approve=extend.approve,
            fee_cap=extend.max_upfront_fee,
            currency=extend.currency,
        )
        if problem is not None:
            yield _ApprovalError(f"{where}.approve", problem, names=True)
        elif extend.max_upfront_fee is None:
            yield _ApprovalError(
                f"{where}.max_upfront_fee",
                "required with approve: the highest up-front fee to pay for this extension, "
                f"a plain number in {extend.currency} (`"
                f"{extension.SEARCH_COMMAND.format(hours=extend.duration_hours)}` lists prices)",
                names=False,
            )


# Techniques that leave no checkpoint of their own to import into Bedrock, on HyperPod or
# on a training job. A training job's SFT/DPO checkpoint is imported like a HyperPod one:
# its <name>/output/output.tar.gz manifest names an -smtj- escrow URI (bedrock_model
# handler manifest.py; tests/handlers/test_bedrock_model.py, the training-job test).
NOT_IMPORTABLE = frozenset({"evaluation", "distillation"})


def nova_problems(config: CheckedConfig) -> Iterator[_FieldError]:
    """The nova section against the jobs, the hyperpod and eks sections."""
    nova = config.nova_settings
    if config.nova is not None and not config.has_nova_stack:
        yield _at(
            "nova",
            "the Nova environment stack serves jobs on a HyperPod cluster; add jobs and a "
            "hyperpod section, or remove nova",
            root=True,
        )
    # Only where a stack serves the jobs: a config without hyperpod sizes and renders
    # them (its recipes keep the placeholder), so it has nothing to enable.
    if config.has_nova_stack and not nova.mlflow.enabled:
        for i, job in enumerate(config.jobs):
            if job.mlflow:
                yield _at(
                    f"jobs[{i}].mlflow",
                    "the job logs to the environment's MLflow server; set nova.mlflow.enabled: "
                    "true, or mlflow: false",
                    root=True,
                )
    standard = config.hyperpod.instance_groups if config.hyperpod is not None else []
    if nova.namespace == TRAINING_OPERATOR_NAMESPACE and standard:
        yield _at(
            "nova.namespace",
            f"{TRAINING_OPERATOR_NAMESPACE} holds the HyperPod training operator's "
            "ServiceAccount, bound cluster-wide to pods, pods/exec and secrets, and anyone "
            "who may launch jobs there could run any image as it on the standard groups "
            f"({', '.join(g.name for g in standard)}); use another namespace, such as "
            f"{DEFAULT_NAMESPACE} (the default)",
            root=True,
        )
    admins = set(config.eks.admin_principals) if config.eks else set()
    seen: set[str] = set()
    for i, role in enumerate(nova.scientists):
        where = f"nova.scientists[{i}]"
        if role in seen:
            yield _at(where, f"{role} is listed twice; remove one", root=True)
        elif role in admins:
            yield _at(
                where,
                f"{role} is in eks.admin_principals, and a principal has one access entry "
                "per cluster; remove it from one of the lists",
                root=True,
            )
        seen.add(role)
    jobs = {job.name: job for job in config.jobs}
    names: set[str] = set()
    for i, model in enumerate(nova.bedrock_models):
        where = f"nova.bedrock_models[{i}]"
        if model.name in names:
            yield _at(f"{where}.name", f"{model.name} is used twice; rename one", root=True)
        names.add(model.name)
        source = jobs.get(model.job)
        trained = [n for n, j in jobs.items() if j.technique not in NOT_IMPORTABLE]
        choices = ", ".join(trained) or "none yet"
        if source is None:
            yield _at(
                f"{where}.job", f"no job is named {model.job}; use one of {choices}", root=True
            )
        elif source.technique in NOT_IMPORTABLE:
            yield _at(
                f"{where}.job",
                f"{model.job} ({source.technique}) leaves no checkpoint of its own to import; use "
                f"a training job: {choices}",
                root=True,
            )


def bedrock_deployment_problems(config: CheckedConfig) -> Iterator[_FieldError]:
    """`deployment: on-demand` where Bedrock does not deploy imported Nova models on
    demand (the region, the job's model or its technique; novapod/data/bedrock.yaml):
    refused here rather than failing the deploy after the import was paid for."""
    facts = on_demand()
    jobs = {job.name: job for job in config.jobs}
    for i, model in enumerate(config.nova_settings.bedrock_models):
        source = jobs.get(model.job)
        if model.deployment != "on-demand" or source is None:
            continue
        where = f"nova.bedrock_models[{i}].deployment"
        if config.region not in facts.regions:
            yield _at(
                where,
                f"Bedrock deploys imported Nova models on demand only in "
                f"{', '.join(facts.regions)} ({facts.source}), not in {config.region}; "
                "remove deployment (the model is still imported)",
                root=True,
            )
        elif source.model not in facts.models:
            offered = ", ".join(catalog().model(m).display_name for m in facts.models)
            yield _at(
                where,
                f"{model.job} trains {catalog().model(source.model).display_name}, and Bedrock "
                f"deploys imported Nova models on demand only for {offered} ({facts.source}); "
                "remove deployment (the model is still imported)",
                root=True,
            )
        elif source.technique not in facts.techniques:
            yield _at(
                where,
                f"{model.job} ({source.technique}) is not parameter-efficient, and Bedrock "
                "deploys SageMaker-trained Nova models on demand only when they are "
                f"({', '.join(facts.techniques)}; {facts.techniques_source}); remove "
                "deployment (the model is still imported) or import a LoRA job",
                root=True,
            )


def warnings(config: CheckedConfig, today: date | None = None) -> list[str]:
    """Things that are valid but probably wrong; the CLI prints them."""
    out: list[str] = []
    if config.eks is not None:
        support = support_warning(config.eks.kubernetes_version, today)
        if support:
            out.append(support)
    for i, spec in enumerate(config.capacity.training_plans):
        if HYPERPOD_CLUSTER in spec.target_resources and TRAINING_JOB in spec.target_resources:
            out.append(
                f"capacity.training_plans[{i}].target_resources: {spec.name} lists both "
                'hyperpod-cluster and training-job, but AWS says training plans "are specific '
                "to their target resource (either SageMaker Training Job or SageMaker "
                'HyperPod) and cannot be interchanged" (reserve-capacity-with-training-'
                "plans.html); an offering for both may not exist: list one target"
            )
    if config.hyperpod and config.hyperpod.restricted_instance_groups:
        regions = eks_facts().rig_regions
        if config.region not in regions:
            out.append(
                f"region: restricted instance groups have been seen only in "
                f"{', '.join(regions)}; check that {config.region} offers them"
            )
    return out
