"""The root of the config: one novapod environment, its sections, and what the
CLI and stacks derive from the whole (the capacity plan, plan names, tags)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Annotated, Literal

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from novapod.capacity import CapacityPlan, PlanRequest, plan_capacity
from novapod.capacity.naming import training_plan_name
from novapod.config import checks
from novapod.config.base import _Model, _raise_all
from novapod.config.capacity import (
    Capacity,
    TrainingPlanSpec,
    _adopted_request,
    _plan_settings,
    bought_request,
)
from novapod.config.eks import Eks
from novapod.config.hyperpod import HyperPod, RestrictedGroup
from novapod.config.jobs import Job, jobs_problems
from novapod.config.monitoring import Monitoring, Notifications
from novapod.config.network import (
    ALL_ENDPOINTS,
    Network,
    TrainingJobNeeds,
    training_job_endpoints,
)
from novapod.config.nova import Nova
from novapod.config.storage import Storage

# Tag text every service here accepts (SageMaker's pattern, ASCII form).
TAG_TEXT = r"^[A-Za-z0-9 _.:/=+@-]*$"

# No `--`: training job names join the environment and the job with it
# (novapod/nova/training_jobs.py name_prefix), so no environment's names start as
# another's.
NAME_PATTERN = r"^[a-z](-?[a-z0-9])+$"

# cdk-nag rule packs a config may add to AWS Solutions (novapod/environment.py runs them).
CompliancePack = Literal["nist-800-53-r5", "hipaa"]

# Lengths are checked (and reported) before the pattern, so "at most 20" comes first.
Name = Annotated[str, StringConstraints(min_length=2, max_length=20, pattern=NAME_PATTERN)]


class NovapodConfig(_Model):
    """One novapod environment."""

    model_config = ConfigDict(json_schema_extra={"dependencies": {"hyperpod": ["eks"]}})
    # When the config was validated (now, or NOVAPOD_VALIDATE_AS_OF): warnings are judged
    # on that day too, so a replayed synth warns as it did.
    _validated_at: datetime | None = PrivateAttr(default=None)

    name: Name = Field(
        description="Environment name: lowercase letters, digits and '-', 2-20 characters."
    )
    account: str | None = Field(
        None,
        pattern=r"^\d{12}$",
        description="AWS account ID; leave out for an environment-agnostic synth.",
    )
    region: str = Field(
        pattern=r"^[a-z]{2}(-gov)?-[a-z]+-\d{1,2}$",
        description="AWS region, e.g. us-east-1; zone IDs must belong to it.",
    )
    tags: dict[
        Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=TAG_TEXT)],
        Annotated[str, StringConstraints(max_length=256, pattern=TAG_TEXT)],
    ] = Field(
        default_factory=dict,
        description="Tags on every resource; keys without the aws: prefix; values quoted.",
        json_schema_extra={"additionalProperties": False},
    )
    network: Network = Field(description="The VPC: created (vpc) or existing (existing_vpc).")
    storage: Storage = Field(Storage(), description="S3 buckets, KMS key, optional FSx.")
    jobs: list[Job] = Field(
        default_factory=list,
        description="Nova jobs: they size the capacity, render recipes and are launched.",
    )
    capacity: Capacity = Field(
        Capacity(), description="Training plans to buy or adopt, sized from the jobs."
    )
    eks: Eks | None = Field(None, description="The EKS cluster; needed by hyperpod.")
    hyperpod: HyperPod | None = Field(
        None, description="The HyperPod cluster, orchestrated by the eks cluster."
    )
    nova: Nova | None = Field(
        None,
        description="The Nova environment stack (with jobs and hyperpod): namespace, "
        "scientists, MLflow, Bedrock imports.",
    )
    monitoring: Monitoring = Field(
        Monitoring(),
        description="The scheduled check of the plans and instance groups: metrics, the "
        "dashboard and the alerts (with training plans or a HyperPod cluster).",
    )
    notifications: Notifications = Field(
        Notifications(), description="Who receives the environment's alerts."
    )
    compliance: list[CompliancePack] = Field(
        default_factory=list,
        description="cdk-nag rule packs run at synth besides AWS Solutions: nist-800-53-r5 "
        "(NIST 800-53 rev 5), hipaa (HIPAA Security); an unacknowledged finding fails synth.",
    )

    @field_validator("compliance")
    @classmethod
    def _packs_once(cls, value: list[str]) -> list[str]:
        repeated = sorted({pack for pack in value if value.count(pack) > 1})
        if repeated:
            raise ValueError(f"{repeated[0]!r} is listed twice; list each pack once")
        return value

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo) -> NovapodConfig:
        # Rules that read more than one section live in checks.py, all in one place.
        _raise_all(jobs_problems(self.jobs))
        moment = _validation_time(info)
        context = info.context if isinstance(info.context, Mapping) else {}
        approvals = context.get("approvals", True) is not False
        windows = context.get("windows", True) is not False
        _raise_all(checks.problems(self, moment, approvals=approvals, windows=windows))
        self._validated_at = moment
        return self

    def unapproved(self) -> list[tuple[str, str]]:
        """(field path, sentence) of each purchase or extension not approved by its exact
        name, as `novapod validate` reports them; for the commands that load a config
        without approvals (`novapod plan`) to print beside what they show."""
        moment = self._validated_at or datetime.now(UTC)
        return [(e.path, str(e)) for e in checks.approval_problems(self, moment)]

    def warnings(self, today: date | None = None) -> list[str]:
        """Things that are valid but probably wrong; the CLI prints them. Judged on
        `today`, else the day the config was validated as of."""
        if today is None and self._validated_at is not None:
            today = self._validated_at.date()
        return checks.warnings(self, today)

    def capacity_plan(self) -> CapacityPlan:
        """Jobs sized and packed into training-plan requests (see novapod.capacity).

        An extended plan's request is the plan as bought (its name derives from it);
        its reserved hours include the extension the jobs are sized against."""
        plan = plan_capacity(
            [checks.workload(self, job) for job in self.jobs],
            [_plan_settings(p) for p in self.capacity.training_plans if not self._skip(p)],
        )
        specs = {spec.name: spec for spec in self.capacity.training_plans}
        bought = [
            bought_request(specs[r.name], r) if r.name in specs else r for r in plan.training_plans
        ]
        return replace(plan, training_plans=bought)

    def _skip(self, plan: TrainingPlanSpec) -> bool:
        # An adopted plan that no job runs on needs no sizing: it already exists.
        return plan.adopted and not any(self.job_plan(job) == plan.name for job in self.jobs)

    def restricted_group(self, name: str | None) -> RestrictedGroup | None:
        """The restricted instance group of that name, if the config has one."""
        groups = self.hyperpod.restricted_instance_groups if self.hyperpod else []
        return next((g for g in groups if g.name == name), None)

    def job_plan(self, job: Job) -> str | None:
        """The training plan a job runs on: its group's plan, or its `plan`."""
        group = self.restricted_group(job.instance_group)
        return group.training_plan if group is not None else job.plan

    def purchase_names(self, plan: CapacityPlan | None = None) -> dict[str, str]:
        """Plan -> the deterministic name it is bought under, for every plan not adopted.

        Plans the planner proposes but the config does not list yet are included: their
        name is what `purchase.approve` must say once they are listed. `plan`: this
        config's capacity plan when the caller has it already.
        """
        listed = {spec.name: spec for spec in self.capacity.training_plans}
        return {
            request.name: training_plan_name(self.name, request)
            for request in (plan or self.capacity_plan()).training_plans
            if not (request.name in listed and listed[request.name].adopted)
        }

    def training_plan_requests(self) -> list[tuple[TrainingPlanSpec, PlanRequest]]:
        """The plans this environment buys or adopts, each with its resolved request."""
        return self._resolve(self.capacity_plan())

    def _resolve(self, plan: CapacityPlan) -> list[tuple[TrainingPlanSpec, PlanRequest]]:
        requests = {r.name: r for r in plan.training_plans}
        out = []
        for spec in self.capacity.training_plans:
            request = requests.get(spec.name) or _adopted_request(spec)
            out.append((spec, request))
        return out

    @property
    def has_nova_stack(self) -> bool:
        """The Nova environment stack serves jobs on a HyperPod cluster."""
        return bool(self.jobs) and self.hyperpod is not None

    @property
    def has_monitor(self) -> bool:
        """The scheduled check and the alerts: with plans or a cluster to watch, unless
        turned off."""
        watched = bool(self.capacity.training_plans) or self.hyperpod is not None
        return self.monitoring.enabled and watched

    @property
    def training_jobs(self) -> tuple[Job, ...]:
        """The jobs that run as SageMaker training jobs, in this environment's VPC (with
        a Nova stack, whose nova-base stack holds their role: NovaBaseStack)."""
        if not self.has_nova_stack:
            return ()
        return tuple(job for job in self.jobs if job.on_training_job)

    @property
    def job_endpoints(self) -> dict[str, str]:
        """Endpoint -> the first job that calls AWS through it, in the endpoints' order.
        Only with a Nova stack: the jobs then run in this VPC, on this cluster's
        restricted groups (what their pods call: Job.endpoints) or as training jobs in
        its private subnets (training_job_endpoints, the S3 gateway included)."""
        if not self.has_nova_stack:
            return {}
        needed: dict[str, str] = {}
        for job in self.jobs:
            names = (
                training_job_endpoints([training_job_needs(job)])
                if job.on_training_job
                else job.endpoints
            )
            for name in names:
                needed.setdefault(name, job.name)
        return {name: needed[name] for name in ALL_ENDPOINTS if name in needed}

    @property
    def endpoint_names(self) -> tuple[str, ...]:
        """The VPC endpoints to create: the network's and, unless network.endpoints lists
        them (taken as is; validation makes it name the jobs' too), the jobs'."""
        return self.network.endpoints_with(self.job_endpoints)

    @property
    def nova_settings(self) -> Nova:
        """The nova section, or its defaults when the config leaves it out."""
        return self.nova or Nova()

    @property
    def prefix(self) -> str:
        """Prefix for stack and resource names of this environment."""
        return f"novapod-{self.name}"

    @property
    def resource_tags(self) -> dict[str, str]:
        """The config's tags plus the environment tag, for every resource and plan."""
        return {**self.tags, "novapod:environment": self.name}


def _validation_time(info: ValidationInfo) -> datetime:
    """Now, or the time `parse_config(..., now=)` validates as of (tests, replays)."""
    context = info.context if isinstance(info.context, Mapping) else {}
    now = context.get("now")
    return now if isinstance(now, datetime) else datetime.now(UTC)


def training_job_needs(job: Job) -> TrainingJobNeeds:
    """What a training-job job's container calls besides S3: MLflow when it logs there,
    its Lambda functions, distillation's Bedrock teacher."""
    return TrainingJobNeeds(
        mlflow=job.mlflow,
        lambdas=bool(job.lambda_arns),
        distillation=job.technique == "distillation",
    )
