"""The hyperpod section: the cluster and its restricted and standard instance groups."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, model_validator

from novapod.config.base import _Model
from novapod.config.fields import (
    INSTANCE_TYPE_PATTERN,
    LustreThroughput,
    PlanName,
    _lustre_size,
    _lustre_size_schema,
)
from novapod.facts import cluster_instance_types

GroupName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")]
DeepHealthCheck = Literal["InstanceStress", "InstanceConnectivity"]
RIG_FSX_MAX_GIB = 100800  # EnvironmentConfig.FSxLustreConfig.SizeInGiB maximum


def _cluster_instance_types_schema(schema: dict[str, Any]) -> None:
    # Read when the schema is generated, not at import: the botocore model is large.
    schema["enum"] = sorted(cluster_instance_types())


class RestrictedGroup(_Model):
    """A restricted instance group (Nova customization) on a training plan's capacity."""

    name: GroupName = Field(description="Instance group name; unique in the cluster.")
    training_plan: PlanName = Field(description="Name of an entry in capacity.training_plans.")
    instance_type: str | None = Field(
        None,
        pattern=INSTANCE_TYPE_PATTERN,
        description="Default: the plan's instance type.",
        json_schema_extra=_cluster_instance_types_schema,
    )
    instance_count: int | None = Field(None, ge=0, le=64, description="Default: the plan's count.")
    fsx_size_gib: Annotated[int, AfterValidator(partial(_lustre_size, limit=RIG_FSX_MAX_GIB))] = (
        Field(
            1200,
            description="Service-managed FSx size in GiB: 1200 or a multiple of 2400.",
            json_schema_extra=_lustre_size_schema(RIG_FSX_MAX_GIB),
        )
    )
    fsx_throughput: LustreThroughput = Field(
        250, description="MB/s per TiB: 125, 250, 500 or 1000."
    )
    deep_health_checks: list[DeepHealthCheck] = Field(
        default_factory=list, description="Deep health checks HyperPod runs on new nodes."
    )
    threads_per_core: Literal[1, 2] | None = Field(
        None, description="1 turns hyperthreading off; default: the instance type's."
    )


class StandardGroup(_Model):
    """A standard instance group (system pods, CPU work such as distillation)."""

    name: GroupName = Field(description="Instance group name; unique in the cluster.")
    instance_type: str = Field(
        pattern=INSTANCE_TYPE_PATTERN,
        description="A HyperPod instance type, e.g. ml.m5.2xlarge.",
        json_schema_extra=_cluster_instance_types_schema,
    )
    instance_count: int = Field(ge=0, le=256, description="Number of instances.")
    ebs_volume_gib: int = Field(
        500, ge=1, le=16384, description="Extra EBS volume per instance, in GiB."
    )
    training_plan: PlanName | None = Field(
        None, description="Run on this plan's capacity (an entry of capacity.training_plans)."
    )
    deep_health_checks: list[DeepHealthCheck] = Field(
        default_factory=list, description="Deep health checks HyperPod runs on new nodes."
    )
    threads_per_core: Literal[1, 2] | None = Field(
        None, description="1 turns hyperthreading off; default: the instance type's."
    )


class HyperPod(_Model):
    """The HyperPod cluster: at least one instance group."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [key], "properties": {key: {"minItems": 1}}}
                for key in ("restricted_instance_groups", "instance_groups")
            ]
        }
    )

    node_recovery: Literal["Automatic", "None"] = Field(
        "Automatic", description="Automatic replaces faulty nodes; None leaves them to you."
    )
    restricted_instance_groups: list[RestrictedGroup] = Field(
        default_factory=list,
        description="Groups for Nova customization, each on a training plan's capacity.",
    )
    instance_groups: list[StandardGroup] = Field(
        default_factory=list, description="Standard groups (system pods, CPU work)."
    )

    @model_validator(mode="after")
    def _groups(self) -> HyperPod:
        names = [g.name for g in self.restricted_instance_groups] + [
            g.name for g in self.instance_groups
        ]
        if not names:
            raise ValueError("a HyperPod cluster needs at least one instance group")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(
                f"instance group names must be unique; repeated: {', '.join(repeated)}"
            )
        return self
