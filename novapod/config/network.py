"""The network section: a VPC novapod creates or one that exists, its VPC
endpoints and flow logs."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import ConfigDict, Field, field_validator, model_validator

from novapod import addressing
from novapod.config.base import _at, _FieldError, _Model, _raise_all
from novapod.config.fields import ZoneId, _log_retention, _log_retention_schema

EndpointName = Literal[
    "s3",
    "ecr.api",
    "ecr.dkr",
    "sts",
    "logs",
    "monitoring",
    "eks",
    "eks-auth",
    "ssm",
    "ssmmessages",
    "ec2messages",
    "lambda",
    "sqs",
    "sagemaker.experiments",
    "bedrock-runtime",
]
ALL_ENDPOINTS: tuple[str, ...] = get_args(EndpointName)
GATEWAY_ENDPOINTS: tuple[str, ...] = ("s3",)
# What the jobs' pods call from restricted groups, which reach AWS only through endpoints
# (awslabs/awsome-distributed-ai@95b939cd 1.architectures/7.sagemaker-hyperpod-eks/
# terraform-modules/hyperpod-eks-tf/modules/vpc_endpoints/main.tf adds lambda and sqs in
# RIG mode for RFT): a job's Lambda functions (reward, custom metrics), the queues of RFT,
# and SageMaker managed MLflow (aws.sagemaker.<region>.experiments, the "Connecting to an
# MLflow tracking server through an Interface VPC Endpoint" page of the SageMaker guide,
# docs.aws.amazon.com/sagemaker/latest/dg/mlflow-interface-endpoint.html).
LAMBDA_ENDPOINTS: tuple[str, ...] = ("lambda",)
RFT_ENDPOINTS: tuple[str, ...] = ("lambda", "sqs")
MLFLOW_ENDPOINTS: tuple[str, ...] = ("sagemaker.experiments",)
# Bedrock's runtime, which only distillation's training jobs call (their teacher).
BEDROCK_ENDPOINTS: tuple[str, ...] = ("bedrock-runtime",)
# Endpoints only some jobs call: the config adds them for those jobs (NovapodConfig
# .endpoint_names), never to a network's own set.
_JOBS_ONLY = MLFLOW_ENDPOINTS + BEDROCK_ENDPOINTS
# Every other interface endpoint is one that nodes of restricted instance groups need.
RIG_ENDPOINTS: tuple[str, ...] = tuple(
    e for e in ALL_ENDPOINTS if e not in GATEWAY_ENDPOINTS + RFT_ENDPOINTS + _JOBS_ONLY
)
# A closed network always has every endpoint but MLflow's and Bedrock's, which only jobs
# that log to MLflow or distil from a teacher call.
CLOSED_ENDPOINTS: tuple[str, ...] = tuple(e for e in ALL_ENDPOINTS if e not in _JOBS_ONLY)


@dataclass(frozen=True)
class TrainingJobNeeds:
    """What one training job's container calls besides S3."""

    mlflow: bool = False  # logs to the environment's MLflow tracking server
    lambdas: bool = False  # invokes Lambda functions (RFT reward, evaluation)
    distillation: bool = False  # generates responses from a Bedrock teacher


def training_job_endpoints(jobs: Iterable[TrainingJobNeeds]) -> tuple[str, ...]:
    """The VPC endpoints (config endpoint names) training jobs in private subnets need.

    - `s3`, the gateway endpoint, for any training job: with a VpcConfig SageMaker moves
      the job's data and artifacts through the VPC, and AWS's guide runs training jobs in
      "private subnets that don't have internet access" through it (docs.aws.amazon.com/
      sagemaker/latest/dg/train-vpc.html, "Configure Amazon S3 VPC endpoints"). The image
      pull needs none ("SageMaker AI automatically pulls the training container image
      from Amazon ECR", same page), nor do the logs SageMaker ships.
    - `sagemaker.experiments` for MLflow and `lambda` for functions, as on restricted
      groups (MLFLOW_ENDPOINTS, LAMBDA_ENDPOINTS).
    - `bedrock-runtime` for distillation's teacher [inference: the container invokes it
      with the execution role, which the SDK passes as the `role_arn` hyperparameter].
    """
    needed: list[str] = []
    for job in jobs:
        needed.append("s3")
        if job.lambdas:
            needed += LAMBDA_ENDPOINTS
        if job.mlflow:
            needed += MLFLOW_ENDPOINTS
        if job.distillation:
            needed += BEDROCK_ENDPOINTS
    return tuple(name for name in ALL_ENDPOINTS if name in needed)


MAX_PRIVATE_PREFIX = 21  # /21: ~25 ml.p5.48xlarge nodes per zone


class CreateVpc(_Model):
    """A VPC novapod creates, one private (and, unless closed, public) subnet per zone."""

    cidr: str = Field(
        "10.0.0.0/16",
        description="IPv4 CIDR of the VPC, /16 to /24.",
        json_schema_extra={"pattern": r"^(\d{1,3}\.){3}\d{1,3}/(1[6-9]|2[0-4])$"},
    )
    zone_ids: list[ZoneId] = Field(
        description=(
            "Availability Zone IDs (e.g. use1-az4), not names: IDs are the same in every "
            "account. At least two; EKS needs subnets in two zones. Append new zones at "
            "the end: the order places the subnets."
        ),
        min_length=2,
        max_length=6,
        json_schema_extra={"uniqueItems": True},
    )
    private_subnet_prefix: int = Field(
        20,
        ge=16,
        le=28,
        description="Prefix length of each private subnet; /21 or larger for p5 nodes.",
    )
    public_subnet_prefix: int = Field(
        24, ge=16, le=28, description="Prefix length of each public subnet (NAT only)."
    )
    nat_gateways: Literal["one-per-zone", "single"] = Field(
        "one-per-zone",
        description="single saves cost but loses egress when its zone fails.",
    )

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            network = ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ValueError(
                f"{value!r} is not an IPv4 network CIDR such as 10.0.0.0/16 ({exc})"
            ) from None
        if not 16 <= network.prefixlen <= 24:
            raise ValueError("a VPC CIDR must be between /16 and /24")
        return value

    @field_validator("zone_ids")
    @classmethod
    def _unique_zones(cls, value: list[str]) -> list[str]:
        duplicates = sorted({z for z in value if value.count(z) > 1})
        if duplicates:
            raise ValueError(f"zone IDs must be unique; repeated: {', '.join(duplicates)}")
        return value

    @field_validator("private_subnet_prefix")
    @classmethod
    def _private_size(cls, value: int) -> int:
        if value > MAX_PRIVATE_PREFIX:
            nodes = addressing.p5_nodes_per_subnet(value)
            raise ValueError(
                f"a /{value} subnet fits about {nodes} ml.p5.48xlarge nodes "
                f"({addressing.IPS_PER_P5_NODE} addresses each); use /{MAX_PRIVATE_PREFIX} "
                "or a larger subnet (a smaller prefix length)"
            )
        return value


class ExistingSubnet(_Model):
    subnet_id: str = Field(
        pattern=r"^subnet-[0-9a-f]{8,17}$", description="A private subnet of the VPC."
    )
    zone_id: ZoneId = Field(description="The subnet's Availability Zone ID (e.g. use1-az4).")
    route_table_id: str | None = Field(
        None,
        pattern=r"^rtb-[0-9a-f]{8,17}$",
        description="Needed only when novapod adds the S3 gateway endpoint.",
    )


class ExistingVpc(_Model):
    """A VPC that already exists; novapod adds endpoints and the security group to it."""

    vpc_id: str = Field(pattern=r"^vpc-[0-9a-f]{8,17}$", description="ID of the VPC.")
    cidr: str = Field(description="The VPC's primary IPv4 CIDR (for the endpoint rule).")
    private_subnets: list[ExistingSubnet] = Field(
        min_length=2,
        max_length=16,
        description="Private subnets HyperPod and EKS use, in at least two zones.",
    )

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not an IPv4 network CIDR ({exc})") from None
        return value

    @model_validator(mode="after")
    def _subnets(self) -> ExistingVpc:
        ids = [s.subnet_id for s in self.private_subnets]
        if len(set(ids)) != len(ids):
            raise ValueError("private_subnets lists a subnet twice")
        if len({s.zone_id for s in self.private_subnets}) < 2:
            raise ValueError("private_subnets must span at least two zone IDs (EKS needs two)")
        return self

    @property
    def zone_ids(self) -> list[str]:
        return list(dict.fromkeys(s.zone_id for s in self.private_subnets))


class FlowLogs(_Model):
    enabled: bool = Field(True, description="Send VPC flow logs to CloudWatch Logs.")
    retention_days: int = Field(
        365,
        description="CloudWatch Logs retention of VPC flow logs, in days.",
        json_schema_extra=_log_retention_schema(),
    )

    @field_validator("retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        return _log_retention(value)


class Network(_Model):
    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["vpc"]}, {"required": ["existing_vpc"]}]}
    )

    vpc: CreateVpc | None = Field(None, description="Create a VPC (exclusive with existing_vpc).")
    existing_vpc: ExistingVpc | None = Field(None, description="Use an existing VPC.")
    closed: bool = Field(
        False, description="No internet gateway or NAT; every AWS API through VPC endpoints."
    )
    endpoints: list[EndpointName] | None = Field(
        None,
        description=(
            "VPC endpoints to create. Default: S3 gateway plus the interface endpoints "
            "restricted instance groups need, and those the jobs call (lambda and sqs for "
            "their functions, sagemaker.experiments for MLflow, bedrock-runtime for "
            "distillation on training jobs); a closed network needs all but "
            "sagemaker.experiments and bedrock-runtime. A list is taken as is: it must name "
            "the jobs' too."
        ),
        json_schema_extra={"uniqueItems": True},
    )
    flow_logs: FlowLogs = Field(FlowLogs(), description="VPC flow logs to CloudWatch Logs.")

    @model_validator(mode="after")
    def _shape(self) -> Network:
        if (self.vpc is None) == (self.existing_vpc is None):
            raise ValueError("set exactly one of network.vpc (create) or network.existing_vpc")
        _raise_all(self._problems())
        return self

    def _problems(self) -> Iterator[_FieldError]:
        if self.endpoints is not None:
            repeated = sorted({e for e in self.endpoints if self.endpoints.count(e) > 1})
            if repeated:
                yield _at("endpoints", f"listed twice: {', '.join(repeated)}")
            if self.closed:
                missing = [e for e in CLOSED_ENDPOINTS if e not in self.endpoints]
                if missing:
                    yield _at(
                        "endpoints",
                        "a closed network reaches AWS only through endpoints; add "
                        f"{', '.join(missing)} or remove the list to get all of them",
                    )
        if self.existing_vpc and "s3" in self.endpoint_names:
            for i, subnet in enumerate(self.existing_vpc.private_subnets):
                if subnet.route_table_id is None:
                    yield _at(
                        f"existing_vpc.private_subnets[{i}].route_table_id",
                        "the S3 gateway endpoint needs each subnet's route table ID; add it or "
                        "leave 's3' out of network.endpoints",
                    )

    @property
    def endpoint_names(self) -> tuple[str, ...]:
        """The network's own endpoints, without the jobs' (NovapodConfig.endpoint_names)."""
        if self.endpoints is not None:
            return tuple(e for e in ALL_ENDPOINTS if e in self.endpoints)
        if self.closed:
            return CLOSED_ENDPOINTS
        return GATEWAY_ENDPOINTS + RIG_ENDPOINTS

    def endpoints_with(self, needed: Iterable[str]) -> tuple[str, ...]:
        """The endpoints to create for a VPC whose workloads call `needed` through endpoints:
        added to the default set, in canonical order; a network.endpoints list as is
        (validation makes it name them: checks.job_endpoint_problems)."""
        if self.endpoints is not None:
            return self.endpoint_names
        wanted = {*self.endpoint_names, *needed}
        return tuple(e for e in ALL_ENDPOINTS if e in wanted)

    @property
    def zone_ids(self) -> list[str]:
        if self.vpc is not None:
            return list(self.vpc.zone_ids)
        assert self.existing_vpc is not None
        return self.existing_vpc.zone_ids

    @property
    def cidr(self) -> str:
        return self.vpc.cidr if self.vpc is not None else self.existing_vpc.cidr  # type: ignore[union-attr]
