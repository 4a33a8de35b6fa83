"""The novapod configuration: one YAML file per environment, validated once.

`load_config(path)` returns a frozen `NovapodConfig` or raises `ConfigError`, whose
`issues` are `(field.path, message)` pairs such as
`network.vpc.private_subnet_prefix: ...`. Nothing else escapes the loader, so the CLI
and `app.py` can print the lines and exit with status 2 before any stack exists.
"""

from __future__ import annotations

import codecs
import ipaddress
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from novapod import addressing, approval, planning
from novapod.constructs.cluster_bootstrap.pins import default_pins
from novapod.facts import (
    cluster_instance_types,
    eks_facts,
    plan_instance_types,
    support_warning,
)
from novapod.naming import TRAINING_PLAN_NAME, training_plan_name
from novapod.node_images import node_image_registries

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "config" / "default.yaml"

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
]
ALL_ENDPOINTS: tuple[str, ...] = get_args(EndpointName)
GATEWAY_ENDPOINTS: tuple[str, ...] = ("s3",)
# The two that reinforcement fine-tuning adds; every other interface endpoint is one
# that nodes of restricted instance groups (no internet access) need.
RFT_ENDPOINTS: tuple[str, ...] = ("lambda", "sqs")
RIG_ENDPOINTS: tuple[str, ...] = tuple(
    e for e in ALL_ENDPOINTS if e not in GATEWAY_ENDPOINTS + RFT_ENDPOINTS
)

# Retention values CloudWatch Logs accepts.
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192,
    2557, 2922, 3288, 3653,
)  # fmt: skip

MAX_PRIVATE_PREFIX = 21  # /21: ~25 ml.p5.48xlarge nodes per zone
FSX_THROUGHPUTS = (125, 250, 500, 1000)
RIG_FSX_MAX_GIB = 100800  # EnvironmentConfig.FSxLustreConfig.SizeInGiB maximum

# Active ISO 4217 currency codes (2026), for the fee cap's currency.
ISO_4217_CODES = frozenset(
    """AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN
    BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP
    GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS
    KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR
    MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF
    SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD
    TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG""".split()  # noqa: SIM905 (a table reads better)
)

INSTANCE_TYPE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"

# Tag text every service here accepts (SageMaker's pattern, ASCII form).
TAG_TEXT = r"^[A-Za-z0-9 _.:/=+@-]*$"

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,18}[a-z0-9]$"
ZONE_ID_PATTERN = r"^[a-z]{2,5}\d{1,2}-az\d{1,2}$"
# A zone *name* (us-east-1a, us-gov-west-1b, us-east-1-bos-1a): what people type
# instead of an ID.
ZONE_NAME = re.compile(r"^(?P<region>[a-z]{2}(-gov)?-[a-z]+-\d{1,2})(-[a-z]{3}-\d)?[a-z]$")

# Lengths are checked (and reported) before the pattern, so "at most 20" comes first.
Name = Annotated[str, StringConstraints(min_length=2, max_length=20, pattern=NAME_PATTERN)]
ZoneId = Annotated[str, StringConstraints(pattern=ZONE_ID_PATTERN)]


def _lustre_size(value: int, *, limit: int | None) -> int:
    """FSx for Lustre (SSD) sizes: 1200 GiB or a multiple of 2400 GiB."""
    if not (value == 1200 or (value > 0 and value % 2400 == 0)) or (limit and value > limit):
        bound = f" up to {limit}" if limit else ""
        raise ValueError(
            f"{value} GiB is not an FSx for Lustre size; use 1200 or a multiple of 2400{bound}"
        )
    return value


def _lustre_throughput(value: int) -> int:
    if value not in FSX_THROUGHPUTS:
        raise ValueError(f"{value} is not offered; use one of 125, 250, 500, 1000")
    return value


LustreThroughput = Annotated[
    int,
    AfterValidator(_lustre_throughput),
    Field(json_schema_extra={"enum": list(FSX_THROUGHPUTS)}),
]


def _lustre_size_schema(limit: int | None) -> dict[str, Any]:
    """The same sizes as _lustre_size, for editors."""
    multiple: dict[str, Any] = {"multipleOf": 2400, "minimum": 2400}
    if limit:
        multiple["maximum"] = limit
    return {"anyOf": [{"const": 1200}, multiple]}


def _log_retention_schema() -> dict[str, Any]:
    return {"enum": list(LOG_RETENTION_DAYS)}


def _kubernetes_versions() -> tuple[str, ...]:
    """Versions the validator accepts: supported by HyperPod and with pinned add-ons."""
    facts = eks_facts()
    return tuple(v for v in facts.supported_versions if facts.addon_versions(v) is not None)


def _cluster_instance_types_schema(schema: dict[str, Any]) -> None:
    # Read when the schema is generated, not at import: the botocore model is large.
    schema["enum"] = sorted(cluster_instance_types())


class ConfigError(Exception):
    """An invalid configuration; `issues` holds (field path, message) pairs.

    `source` is the file the issues are about; `render()` prefixes every line with it
    (`config/dev.yaml: network.vpc.zone_ids: ...`) so each line stands on its own.
    """

    def __init__(self, issues: Iterable[tuple[str, str]], source: str | None = None) -> None:
        self.issues = list(issues)
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return "\n".join(
            prefix + (f"{path}: {message}" if path else message) for path, message in self.issues
        )


class _FieldError(ValueError):
    """A model-level error that belongs to a more precise field path."""

    def __init__(self, path: str, message: str, root: bool) -> None:
        super().__init__(message)
        self.path = path
        self.root = root


def _at(path: str, message: str, *, root: bool = False) -> _FieldError:
    return _FieldError(path, message, root)


class _CombinedFieldError(ValueError):
    """Several model-level errors, reported together (one validator, many findings)."""

    def __init__(self, errors: list[_FieldError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


def _raise_all(problems: Iterable[_FieldError]) -> None:
    found = list(problems)
    if len(found) == 1:
        raise found[0]
    if found:
        raise _CombinedFieldError(found)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


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
            "restricted instance groups need; a closed network needs all of them."
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
                missing = [e for e in ALL_ENDPOINTS if e not in self.endpoints]
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
        if self.endpoints is not None:
            return tuple(e for e in ALL_ENDPOINTS if e in self.endpoints)
        if self.closed:
            return ALL_ENDPOINTS
        return GATEWAY_ENDPOINTS + RIG_ENDPOINTS

    @property
    def zone_ids(self) -> list[str]:
        if self.vpc is not None:
            return list(self.vpc.zone_ids)
        assert self.existing_vpc is not None
        return self.existing_vpc.zone_ids

    @property
    def cidr(self) -> str:
        return self.vpc.cidr if self.vpc is not None else self.existing_vpc.cidr  # type: ignore[union-attr]


class Lustre(_Model):
    """A customer-managed FSx for Lustre file system (PERSISTENT_2) for standard groups."""

    storage_capacity_gib: Annotated[int, AfterValidator(partial(_lustre_size, limit=None))] = Field(
        1200,
        description="Size in GiB: 1200, or a multiple of 2400.",
        json_schema_extra=_lustre_size_schema(None),
    )
    throughput_per_unit: LustreThroughput = Field(
        250, description="MB/s per TiB: 125, 250, 500 or 1000."
    )
    zone_id: ZoneId | None = Field(None, description="Zone of the file system; default the first.")
    data_repository_prefix: str = Field(
        "fsx/",
        pattern=r"^([A-Za-z0-9!_.*'()-]+/)*$",
        description="Prefix in the data bucket linked to /data on the file system.",
    )


class Storage(_Model):
    noncurrent_version_days: int = Field(
        90, ge=1, le=3650, description="Days before an overwritten object version expires."
    )
    access_log_days: int = Field(
        365, ge=1, le=3650, description="Days S3 server access logs are kept."
    )
    artifacts_infrequent_access_days: int | None = Field(
        90,
        ge=30,
        le=3650,
        description="Days before artifacts move to S3 Standard-IA; null keeps them in Standard.",
    )
    lustre: Lustre | None = Field(
        None, description="A customer-managed FSx for Lustre file system; none by default."
    )


# ----------------------------------------------------------------------- capacity

PlanName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$")]
TRAINING_PLAN_ARN = (
    r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$"
)


class Workload(_Model):
    """A Nova customization job the environment will run; the planner sizes it."""

    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")] = (
        Field(description="Job name, a DNS label; unique among workloads.")
    )
    model: Literal["micro", "lite", "pro", "nova-2-lite"] = Field(
        description="Nova model to customize."
    )
    technique: Literal[
        "cpt", "sft-lora", "sft-full", "dpo-lora", "dpo-full", "ppo", "distillation", "evaluation"
    ] = Field(description="Customization technique; sets the documented instance type and count.")
    runs: int = Field(1, ge=1, le=1000, description="How many times the job runs.")
    hours_per_run: float | None = Field(
        None, gt=0, le=4368, description="Wall-clock hours of one run; PPO has documented hours."
    )
    sequence_length: int | None = Field(
        None, ge=1, le=1_048_576, description="Training sequence length; checked against the model."
    )
    instance_type: str | None = Field(
        None,
        pattern=INSTANCE_TYPE_PATTERN,
        description="Override the documented instance type.",
    )
    instance_count: int | None = Field(
        None, ge=1, le=256, description="Override the documented instance count."
    )
    plan: PlanName | None = Field(None, description="Training plan this workload runs on.")


class Purchase(_Model):
    """Guardrails for buying a training plan: a non-refundable, up-front purchase."""

    approve: str | bool | None = Field(
        None,
        description=(
            "The exact plan name to buy (novapod-<env>-<plan>-<digest>, as `novapod plan` "
            "prints it). Any edit that changes what is bought changes the name and needs a "
            "new approval. Review `novapod offerings` first."
        ),
        # Editors should flag `true` as validation does: only the name approves.
        json_schema_extra={
            "anyOf": [{"type": "string", "pattern": TRAINING_PLAN_NAME.pattern}, {"type": "null"}]
        },
    )
    max_upfront_fee: Decimal | None = Field(
        None,
        gt=0,
        max_digits=15,
        decimal_places=2,
        description="Refuse any offering whose up-front fee is higher (a plain number).",
    )
    currency: str = Field(
        "USD",
        description="ISO 4217 code of the fee cap; offerings in other currencies are skipped.",
        json_schema_extra={"enum": list[JsonValue](sorted(ISO_4217_CODES))},
    )

    @field_validator("approve")
    @classmethod
    def _approve(cls, value: str | bool | None) -> str | bool | None:
        if isinstance(value, str) and not TRAINING_PLAN_NAME.match(value):
            raise ValueError(
                f"{value!r} is not a training plan name; paste the name `novapod plan` prints"
            )
        return value

    @field_validator("max_upfront_fee", mode="before")
    @classmethod
    def _fee(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be an amount, e.g. 40000, not true or false")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite amount, e.g. 40000")
        if isinstance(value, str):
            plain = re.sub(r"[\s$€£,_]|USD|EUR|GBP", "", value)
            try:
                amount = Decimal(plain)
            except ArithmeticError:
                amount = None
            if amount is None or not amount.is_finite():
                raise ValueError(f"{value!r} is not an amount; write a plain number, e.g. 40000")
            if plain != value.strip():
                raise ValueError(
                    f"{value!r} is not a plain number; write {plain} (the currency goes in "
                    "purchase.currency)"
                )
        return value

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        if value.upper() in ISO_4217_CODES and value != value.upper():
            raise ValueError(f"currency codes are upper case; write {value.upper()}")
        if value not in ISO_4217_CODES:
            raise ValueError(f"{value!r} is not an ISO 4217 currency code such as USD or EUR")
        return value


TargetResource = Literal["hyperpod-cluster", "training-job"]


def _hyperpod_target() -> list[TargetResource]:
    return ["hyperpod-cluster"]


class TrainingPlanSpec(_Model):
    """A training plan novapod buys (with approval and a fee cap) or adopts by ARN."""

    name: PlanName = Field(description="Short DNS-label name, at most 24 characters.")
    instance_type: str | None = Field(
        None,
        pattern=INSTANCE_TYPE_PATTERN,
        description="Instance type to reserve; derived from the workloads unless set.",
    )
    instance_count: int | None = Field(
        None, ge=1, le=64, description="Instances to reserve (1, 2, 4 ... 64); derived unless set."
    )
    duration_hours: int | None = Field(
        None, ge=24, le=4368, description="Reserved hours, whole days of 24 h; derived unless set."
    )
    start_after: AwareDatetime | None = Field(
        None, description="Earliest start, ISO 8601 with a UTC offset (2027-03-01T00:00:00Z)."
    )
    end_before: AwareDatetime | None = Field(
        None, description="Latest end, ISO 8601 with a UTC offset; after start_after, not past."
    )
    target_resources: list[TargetResource] = Field(
        default_factory=_hyperpod_target,
        min_length=1,
        description="What may use the plan: hyperpod-cluster and/or training-job.",
    )
    choice: Literal["cheapest", "earliest"] = Field(
        "cheapest", description="Which matching offering to buy."
    )
    purchase: Purchase | None = Field(
        None, description="Approval and fee cap for buying the plan (exclusive with existing_arn)."
    )
    existing_arn: str | None = Field(
        None, pattern=TRAINING_PLAN_ARN, description="Adopt a plan you already own."
    )
    retry: int = Field(
        0,
        ge=0,
        le=99,
        description=(
            "Set to 1, 2, ... after a bought plan went Failed: it changes the plan's name, so "
            "the next deploy buys anew (approved like any purchase)."
        ),
    )

    @model_validator(mode="after")
    def _buy_or_adopt(self) -> TrainingPlanSpec:
        if self.existing_arn is not None:
            if self.purchase is not None:
                raise _at("purchase", "a plan adopted by existing_arn is never bought; remove it")
            for key in ("instance_type", "instance_count"):
                if getattr(self, key) is None:
                    raise _at(key, "an adopted plan needs it, to check the plan you own matches")
            return self
        # Whether the purchase is approved depends on the plan's derived name: checked
        # with the whole config (NovapodConfig._check_purchases).
        return self

    @property
    def adopted(self) -> bool:
        return self.existing_arn is not None


class Capacity(_Model):
    workloads: list[Workload] = Field(
        default_factory=list,
        description="Nova jobs to size; `novapod plan` shows the plans they need.",
    )
    training_plans: list[TrainingPlanSpec] = Field(
        default_factory=list,
        description="Only plans listed here are bought or adopted; `novapod plan` shows more.",
    )
    pending_timeout_minutes: int = Field(
        50,
        ge=5,
        le=55,
        description="How long a deploy waits for a bought plan to leave Pending (< 1 h).",
    )

    @model_validator(mode="after")
    def _unique(self) -> Capacity:
        problems = []
        for label, names in (
            ("workloads", [w.name for w in self.workloads]),
            ("training_plans", [p.name for p in self.training_plans]),
        ):
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                problems.append(
                    _at(label, f"names must be unique; repeated: {', '.join(repeated)}")
                )
        _raise_all(problems)
        return self


# ------------------------------------------------------------------- EKS, HyperPod

GroupName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")]
DeepHealthCheck = Literal["InstanceStress", "InstanceConnectivity"]
PRINCIPAL_ARN = r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[A-Za-z0-9_+=,.@/-]+$"


class Eks(_Model):
    """The EKS cluster that orchestrates HyperPod."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {
                "properties": {"endpoint": {"const": "public-and-private"}},
                "required": ["endpoint"],
            },
            "then": {
                "required": ["public_access_cidrs"],
                "properties": {"public_access_cidrs": {"minItems": 1}},
            },
            "else": {"properties": {"public_access_cidrs": {"maxItems": 0}}},
        }
    )

    kubernetes_version: str = Field(
        default_factory=lambda: eks_facts().default_version,
        description="One of the versions in novapod/data/eks.yaml with pinned add-ons; quoted.",
        json_schema_extra=lambda schema: schema.update(enum=list(_kubernetes_versions())),
    )
    authentication_mode: Literal["API_AND_CONFIG_MAP", "API"] = Field(
        "API_AND_CONFIG_MAP", description="How the cluster authenticates IAM principals."
    )
    endpoint: Literal["private", "public-and-private"] = Field(
        "private", description="public-and-private needs public_access_cidrs."
    )
    public_access_cidrs: list[str] = Field(
        default_factory=list,
        max_length=40,
        description="CIDRs allowed to reach a public endpoint (not 0.0.0.0/0).",
    )
    admin_principals: list[Annotated[str, StringConstraints(pattern=PRINCIPAL_ARN)]] = Field(
        default_factory=list, description="IAM roles/users granted cluster admin (access entries)."
    )
    log_retention_days: int = Field(
        365,
        description="Control-plane and bootstrap log retention, in days.",
        json_schema_extra=_log_retention_schema(),
    )

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, value: str) -> str:
        facts = eks_facts()
        if value not in facts.supported_versions:
            raise ValueError(
                f"{value} is outside what HyperPod supports; use one of "
                f"{', '.join(facts.supported_versions)}"
            )
        if facts.addon_versions(value) is None:
            raise ValueError(
                f"novapod has no pinned add-on versions for {value} yet; use "
                f"{', '.join(facts.addons)} or add pins to novapod/data/eks.yaml"
            )
        return value

    @field_validator("public_access_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            try:
                network = ipaddress.IPv4Network(cidr, strict=True)
            except ValueError as exc:
                raise ValueError(f"{cidr!r} is not an IPv4 CIDR ({exc})") from None
            if network.prefixlen == 0:
                raise ValueError(
                    "0.0.0.0/0 opens the API endpoint to the internet; list your CIDRs"
                )
        return value

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        return _log_retention(value)

    @model_validator(mode="after")
    def _endpoint(self) -> Eks:
        if self.endpoint == "public-and-private" and not self.public_access_cidrs:
            raise _at("public_access_cidrs", "a public endpoint needs an allow-list of CIDRs")
        if self.endpoint == "private" and self.public_access_cidrs:
            raise _at("public_access_cidrs", "only used with endpoint: public-and-private")
        return self


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


class NovapodConfig(_Model):
    """One novapod environment."""

    model_config = ConfigDict(json_schema_extra={"dependencies": {"hyperpod": ["eks"]}})

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
    capacity: Capacity = Field(
        Capacity(), description="Workloads to size and training plans to buy or adopt."
    )
    eks: Eks | None = Field(None, description="The EKS cluster; needed by hyperpod.")
    hyperpod: HyperPod | None = Field(
        None, description="The HyperPod cluster, orchestrated by the eks cluster."
    )

    @model_validator(mode="after")
    def _cross_checks(self, info: ValidationInfo) -> NovapodConfig:
        # Every finding is collected and reported at once, so one run of `novapod
        # validate` shows all there is to fix.
        problems = list(self._network_problems())
        inverted = list(self._window_problems())
        problems += inverted
        requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]] | None = None
        if not inverted:  # the planner would only report a negative window
            try:
                requests = self._resolve(self.capacity_plan())
            except planning.PlanningError as exc:
                problems.append(_at(self._planning_path(str(exc)), str(exc), root=True))
        problems += self._check_hyperpod(requests)
        problems += self._check_service_limits(requests or [])
        problems += self._check_purchases(requests or [], _validation_time(info))
        _raise_all(problems)
        return self

    def _network_problems(self) -> Iterator[_FieldError]:
        for i, zone in enumerate(self.network.zone_ids):
            if not addressing.zone_id_matches_region(zone, self.region):
                where = (
                    f"network.vpc.zone_ids[{i}]"
                    if self.network.vpc
                    else "network.existing_vpc.private_subnets"
                )
                yield _at(
                    where,
                    f"{zone} is not a zone of {self.region} (its zone IDs start with "
                    f"{addressing.zone_id_prefix(self.region)}-az)",
                    root=True,
                )
        vpc = self.network.vpc
        if vpc is not None:
            try:
                addressing.plan_subnets(
                    vpc.cidr,
                    list(vpc.zone_ids),
                    vpc.private_subnet_prefix,
                    None if self.network.closed else vpc.public_subnet_prefix,
                )
            except addressing.AddressPlanError as exc:
                yield _at("network.vpc.cidr", str(exc), root=True)
        lustre = self.storage.lustre
        if lustre is not None and lustre.zone_id and lustre.zone_id not in self.network.zone_ids:
            yield _at(
                "storage.lustre.zone_id",
                f"{lustre.zone_id} has no private subnet; use one of "
                f"{', '.join(self.network.zone_ids)}",
                root=True,
            )

    def _window_problems(self) -> Iterator[_FieldError]:
        """A window that ends before it starts, said as such (the planner only sees hours)."""
        for i, spec in enumerate(self.capacity.training_plans):
            start, end = spec.start_after, spec.end_before
            if start is not None and end is not None and end <= start:
                yield _at(
                    f"capacity.training_plans[{i}].end_before",
                    f"the window is inverted: end_before {end.isoformat()} is not after "
                    f"start_after {start.isoformat()}; swap the two or correct the dates",
                    root=True,
                )

    def _check_purchases(
        self, requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]], now: datetime
    ) -> Iterator[_FieldError]:
        """Every plan to buy is approved by its exact name, capped, and still buyable."""
        instance_types = sorted(plan_instance_types())
        for i, (spec, request) in enumerate(requests):
            if spec.adopted:
                continue
            where = f"capacity.training_plans[{i}]"
            if spec.end_before is not None and spec.end_before <= now:
                yield _at(
                    f"{where}.end_before",
                    f"{spec.end_before.isoformat()} is in the past, and no plan can be bought "
                    "for a window that has ended: move the window, or adopt a plan you already "
                    "bought with existing_arn",
                    root=True,
                )
                continue
            purchase = spec.purchase
            problem = approval.approval_problem(
                environment=self.name,
                request=request,
                approve=purchase.approve if purchase else None,
                fee_cap=purchase.max_upfront_fee if purchase else None,
                currency=purchase.currency if purchase else "USD",
                instance_types=instance_types,
            )
            if problem is not None:
                path = f"{where}.purchase.approve" if purchase else f"{where}.purchase"
                yield _at(path, problem, root=True)
            elif purchase is not None and purchase.max_upfront_fee is None:
                yield _at(
                    f"{where}.purchase.max_upfront_fee",
                    "required with approve: the highest up-front fee to pay for "
                    f"{spec.name}, a plain number in {purchase.currency} (see `novapod "
                    f"offerings CONFIG --plan {spec.name}` for prices)",
                    root=True,
                )

    def _check_service_limits(
        self, requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]]
    ) -> Iterator[_FieldError]:
        if self.eks is not None:
            # Nodes pull the EKS add-on images and the health agent from per-region
            # registries; a region without them would fail at synth or on the nodes.
            known = set(node_image_registries().eks_registries) & set(
                default_pins().health_agent.registry_accounts
            )
            if self.region not in known:
                yield _at(
                    "region",
                    f"novapod knows the EKS add-on and HyperPod health-agent image registries "
                    f"of {', '.join(sorted(known))}, not of {self.region}: choose one of them, "
                    "or add the region to novapod/data/node_images.yaml and "
                    "hyperpod_dependencies.yaml",
                    root=True,
                )
        reserved = [k for k in self.tags if k.lower().startswith("aws:")]
        if reserved:
            yield _at(
                "tags", f"the aws: prefix is reserved by AWS; rename {reserved[0]}", root=True
            )
        if self.eks is not None:
            principals = self.eks.admin_principals
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
        if self.hyperpod is None:
            return
        group_types = cluster_instance_types()
        typed: list[tuple[str, str | None]] = [
            (f"restricted_instance_groups[{i}]", g.instance_type)
            for i, g in enumerate(self.hyperpod.restricted_instance_groups)
        ] + [
            (f"instance_groups[{i}]", g.instance_type)
            for i, g in enumerate(self.hyperpod.instance_groups)
        ]
        for where, instance_type in typed:
            if instance_type and instance_type not in group_types:
                yield _at(
                    f"hyperpod.{where}.instance_type",
                    f"{instance_type} is not a HyperPod instance type (see the "
                    "ClusterInstanceType values of the SageMaker API)",
                    root=True,
                )
        if self.hyperpod.restricted_instance_groups:
            missing = [
                e
                for e in (*GATEWAY_ENDPOINTS, *RIG_ENDPOINTS)
                if e not in self.network.endpoint_names
            ]
            if missing:
                yield _at(
                    "network.endpoints",
                    "restricted instance groups have no internet access and reach AWS only "
                    f"through endpoints; add {', '.join(missing)}",
                    root=True,
                )

    def _check_hyperpod(
        self, requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]] | None
    ) -> Iterator[_FieldError]:
        """Checks of eks and hyperpod; those against plans only when the plans resolved."""
        if self.eks is not None and self.network.closed:
            yield _at(
                "network.closed",
                "the HyperPod dependencies install (ClusterBootstrap) downloads helm, kubectl, "
                "yq and the chart from the internet, which a closed network cannot reach; "
                "use closed: false with eks (mirrors in S3 are not supported yet)",
                root=True,
            )
        if self.hyperpod is None:
            return
        if self.eks is None:
            yield _at("hyperpod", "HyperPod is orchestrated by EKS; add an eks section", root=True)
        if requests is None:
            return
        plans = {spec.name: request for spec, request in requests}
        groups: list[tuple[str, RestrictedGroup | StandardGroup]] = [
            (f"hyperpod.restricted_instance_groups[{i}]", g)
            for i, g in enumerate(self.hyperpod.restricted_instance_groups)
        ] + [
            (f"hyperpod.instance_groups[{i}]", g)
            for i, g in enumerate(self.hyperpod.instance_groups)
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
            if "hyperpod-cluster" not in request.target_resources:
                yield _at(
                    f"{path}.training_plan",
                    f"{group.training_plan} is not bought for hyperpod-cluster; add it to the "
                    "plan's target_resources",
                    root=True,
                )
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

    def warnings(self, today: date | None = None) -> list[str]:
        """Things that are valid but probably wrong; the CLI prints them."""
        out: list[str] = []
        if self.eks is not None:
            support = support_warning(self.eks.kubernetes_version, today)
            if support:
                out.append(support)
        if self.hyperpod and self.hyperpod.restricted_instance_groups:
            regions = eks_facts().rig_regions
            if self.region not in regions:
                out.append(
                    f"region: restricted instance groups have been seen only in "
                    f"{', '.join(regions)}; check that {self.region} offers them"
                )
        return out

    def _planning_path(self, message: str) -> str:
        """The config path a planner message is about (it names a workload or plan)."""
        match = re.match(r"(workload|training plan) '?([a-z0-9-]+)'?", message)
        if match:
            kind, name = match.groups()
            names = [
                item.name
                for item in (
                    self.capacity.workloads if kind == "workload" else self.capacity.training_plans
                )
            ]
            for i, item_name in enumerate(names):
                if item_name == name:
                    key = "workloads" if kind == "workload" else "training_plans"
                    return f"capacity.{key}[{i}]"
        return "capacity"

    def capacity_plan(self) -> planning.CapacityPlan:
        """Jobs sized and packed into training-plan requests (see novapod.planning)."""
        return planning.plan_capacity(
            [planning.Workload(**w.model_dump()) for w in self.capacity.workloads],
            [_plan_settings(p) for p in self.capacity.training_plans if not self._skip(p)],
        )

    def _skip(self, plan: TrainingPlanSpec) -> bool:
        # An adopted plan that no workload names needs no sizing: it already exists.
        return plan.adopted and not any(w.plan == plan.name for w in self.capacity.workloads)

    def purchase_names(self, plan: planning.CapacityPlan | None = None) -> dict[str, str]:
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

    def training_plan_requests(self) -> list[tuple[TrainingPlanSpec, planning.PlanRequest]]:
        """The plans this environment buys or adopts, each with its resolved request."""
        return self._resolve(self.capacity_plan())

    def _resolve(
        self, plan: planning.CapacityPlan
    ) -> list[tuple[TrainingPlanSpec, planning.PlanRequest]]:
        requests = {r.name: r for r in plan.training_plans}
        out = []
        for spec in self.capacity.training_plans:
            request = requests.get(spec.name) or _adopted_request(spec)
            out.append((spec, request))
        return out

    @property
    def prefix(self) -> str:
        """Prefix for stack and resource names of this environment."""
        return f"novapod-{self.name}"

    @property
    def resource_tags(self) -> dict[str, str]:
        """The config's tags plus the environment tag, for every resource and plan."""
        return {**self.tags, "novapod:environment": self.name}


VALIDATE_AS_OF_ENV = "NOVAPOD_VALIDATE_AS_OF"


def _validate_as_of(source: str | None) -> datetime | None:
    """NOVAPOD_VALIDATE_AS_OF: judge time-dependent rules (a plan window that has
    ended) as of that time, to re-synthesize a past commit as it was, and in tests."""
    value = os.environ.get(VALIDATE_AS_OF_ENV)
    if not value:
        return None
    moment = planning.aware_time(value)
    if moment is None:
        raise ConfigError(
            [
                (
                    "",
                    f"{VALIDATE_AS_OF_ENV}={value} is not an ISO 8601 time with a UTC offset; "
                    "write it like 2026-11-30T00:00:00Z or unset it",
                )
            ],
            source,
        )
    return moment


def _validation_time(info: ValidationInfo) -> datetime:
    """Now, or the time `parse_config(..., now=)` validates as of (tests, replays)."""
    context = info.context if isinstance(info.context, Mapping) else {}
    now = context.get("now")
    return now if isinstance(now, datetime) else datetime.now(UTC)


def _plan_settings(spec: TrainingPlanSpec) -> planning.PlanSettings:
    return planning.PlanSettings(
        name=spec.name,
        instance_type=spec.instance_type,
        instance_count=spec.instance_count,
        duration_hours=spec.duration_hours,
        start_after=spec.start_after.isoformat() if spec.start_after else None,
        end_before=spec.end_before.isoformat() if spec.end_before else None,
        target_resources=tuple(spec.target_resources),
        retry=spec.retry,
    )


def _adopted_request(spec: TrainingPlanSpec) -> planning.PlanRequest:
    assert spec.instance_type is not None and spec.instance_count is not None
    return planning.PlanRequest(
        name=spec.name,
        instance_type=spec.instance_type,
        instance_count=spec.instance_count,
        duration_hours=spec.duration_hours or 0,
        start_after=None,
        end_before=None,
        target_resources=tuple(spec.target_resources),
        jobs=(),
        required_instance_hours=0.0,
        reserved_instance_hours=0.0,
        waste_instance_hours=0.0,
    )


def _log_retention(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        nearest = min(LOG_RETENTION_DAYS, key=lambda d: abs(d - value))
        raise ValueError(f"CloudWatch Logs does not offer {value} days; nearest is {nearest}")
    return value


# --------------------------------------------------------------------------- loading


def parse_config(
    data: Any, source: str | None = None, *, now: datetime | None = None
) -> NovapodConfig:
    """Validate already-parsed YAML data, as of `now` (default: the current time)."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            [("", "the configuration must be a YAML mapping with name, region and network")],
            source,
        )
    try:
        moment = now or _validate_as_of(source) or datetime.now(UTC)
        return NovapodConfig.model_validate(dict(data), context={"now": moment})
    except ValidationError as exc:
        raise ConfigError(_issues(exc), source) from None


def load_config(path: str | os.PathLike[str], *, now: datetime | None = None) -> NovapodConfig:
    """Read, decode, parse and validate one config file; every failure is a ConfigError."""
    path = Path(path)
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError([("", f"cannot read the file: {exc.strerror}")], source) from None
    text = decode_config_text(raw, source)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        if isinstance(exc, yaml.reader.ReaderError):  # a character YAML forbids; no mark
            line = text.count("\n", 0, exc.position) + 1
            column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
            where = f" at line {line}, column {column}"
        # One line per mistake: PyYAML's own text adds an 'in "<unicode string>"' line.
        problem = (getattr(exc, "problem", None) or str(exc)).splitlines()[0]
        raise ConfigError([("", f"invalid YAML{where}: {problem}")], source) from None
    return parse_config(data, source, now=now)


# Byte-order marks, longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_config_text(raw: bytes, source: str) -> str:
    """UTF-8, or UTF-8/16/32 with a byte-order mark (editors on Windows write those).

    Anything else (a Latin-1 comment, UTF-16 without a mark) is a ConfigError that
    says where the first undecodable byte is; guessing an encoding could change a
    value silently.
    """
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec)
            except UnicodeDecodeError as exc:
                raise _encoding_error(raw, exc, codec, source) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _encoding_error(raw, exc, "utf-8", source) from None
    if "\x00" in text:  # ASCII saved as UTF-16/32 without a mark decodes, NULs and all
        offset = raw.index(b"\x00")
        line = raw[:offset].count(b"\n") + 1
        raise ConfigError(
            [
                (
                    "",
                    f"byte {offset} (line {line}) is a NUL byte: the file looks like UTF-16 or "
                    "UTF-32 without a byte-order mark; save it as UTF-8",
                )
            ],
            source,
        )
    return text


def _encoding_error(raw: bytes, exc: UnicodeDecodeError, codec: str, source: str) -> ConfigError:
    offset = exc.start
    line = raw[:offset].count(b"\n") + 1
    byte = raw[offset : offset + 1].hex()
    encoding = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}
    return ConfigError(
        [
            (
                "",
                f"byte {offset} (line {line}, 0x{byte}) is not valid {encoding[codec]}; save "
                "the file as UTF-8 (in most editors: Save with Encoding, UTF-8)",
            )
        ],
        source,
    )


# Draft 7: the JSON Schema version editors' YAML support validates with (the Red Hat
# YAML extension and yaml-language-server ship draft 7; newer drafts are only partly
# understood there: see redhat-developer/vscode-yaml#704, yaml-language-server#856).
JSON_SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"


def json_schema() -> dict[str, Any]:
    """The config's JSON Schema (draft 7) for editors.

    The same rules as the validator where JSON Schema can say them (patterns,
    lengths, enums, sizes, exactly one VPC choice, hyperpod needing eks), a
    description on every property, and numbers typed as numbers.
    """
    schema = NovapodConfig.model_json_schema(
        ref_template="#/definitions/{model}", schema_generator=_SchemaGenerator
    )
    definitions = schema.pop("$defs", {})
    schema = {"$schema": JSON_SCHEMA_DIALECT, **_draft7(schema)}
    schema["title"] = "novapod environment configuration"
    schema["definitions"] = _draft7(definitions)
    return schema


def _draft7(node: Any) -> Any:
    """Draft 7 ignores keywords beside a $ref, so a described $ref moves into allOf."""
    if isinstance(node, list):
        return [_draft7(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _draft7(value) for key, value in node.items()}
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}, *out.get("allOf", [])]
    return out


class _SchemaGenerator(GenerateJsonSchema):
    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        # pydantic also admits a string for a Decimal; YAML configs write a number, and
        # editors should say so, so the schema keeps only the number branch.
        number: JsonSchemaValue = {"type": "number"}
        bounds = {
            "exclusiveMinimum": schema.get("gt"),
            "minimum": schema.get("ge"),
            "exclusiveMaximum": schema.get("lt"),
            "maximum": schema.get("le"),
        }
        for key, bound in bounds.items():
            if bound is not None:
                number[key] = float(bound)
        return number


# Descriptions for properties whose models carry none yet (schema only; the
# models' own Field descriptions win where they exist).


def _issues(exc: ValidationError) -> list[tuple[str, str]]:
    issues: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        loc = _path(err["loc"])
        ctx = err.get("ctx") or {}
        cause = ctx.get("error")
        causes = (
            cause.errors
            if isinstance(cause, _CombinedFieldError)
            else [cause]
            if isinstance(cause, _FieldError)
            else []
        )
        for each in causes:
            path = each.path if each.root else ".".join(p for p in (loc, each.path) if p)
            issues.append((path, str(each)))
        if not causes:
            issues.append((loc, _message(err)))
    return issues


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "literal[")) or part in {"str", "int", "[key]"}:
            continue  # pydantic's internal step names for validators, unions and dict keys
        else:
            out += f".{part}" if out else str(part)
    return out


_TYPE_WORDS = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "decimal_type": "a number",
    "decimal_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_NUMBER_PARSING = {"int_parsing", "float_parsing", "decimal_parsing"}

# What a pattern means, for people: "'Dev' does not match <words>".
_DNS_LABEL_WORDS = (
    "a name of lowercase letters, digits and '-' that starts and ends with a letter or digit"
)
_INSTANCE_TYPE_WORDS = "an instance type such as ml.p5.48xlarge"
_PATTERN_WORDS = {
    NAME_PATTERN: (
        "an environment name: lowercase letters, digits and '-', starting with a letter and "
        "ending with a letter or digit"
    ),
    r"^\d{12}$": 'an AWS account ID: 12 digits, quoted (account: "111122223333")',
    r"^[a-z]{2}(-gov)?-[a-z]+-\d{1,2}$": "a region code such as us-east-1",
    INSTANCE_TYPE_PATTERN: _INSTANCE_TYPE_WORDS,
    r"^subnet-[0-9a-f]{8,17}$": "a subnet ID such as subnet-0123456789abcdef0",
    r"^rtb-[0-9a-f]{8,17}$": "a route table ID such as rtb-0123456789abcdef0",
    r"^vpc-[0-9a-f]{8,17}$": "a VPC ID such as vpc-0123456789abcdef0",
    r"^[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$": f"{_DNS_LABEL_WORDS}, at most 24 characters",
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$": f"{_DNS_LABEL_WORDS}, at most 63 characters",
    PRINCIPAL_ARN: "an IAM role or user ARN such as arn:aws:iam::111122223333:role/admin",
    TRAINING_PLAN_ARN: (
        "a training plan ARN such as arn:aws:sagemaker:us-east-1:111122223333:training-plan/my-plan"
    ),
    TAG_TEXT: "tag text: letters, digits, spaces and _ . : / = + - @",
    r"^[A-Z]{3}$": "an ISO 4217 currency code such as USD",
}


def _message(err: Any) -> str:
    """One pydantic error as a sentence that says how to fix it."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    given = err.get("input")
    field = _field_name(err["loc"])
    if kind == "extra_forbidden":
        return "unknown key; remove it or fix its spelling (see `novapod schema`)"
    if kind == "missing":
        return "required; add it"
    if kind == "string_type" and isinstance(given, int | float):
        return _quote_it(field, given)
    if kind in _NUMBER_PARSING and isinstance(given, str):
        return _plain_number(given, whole=kind == "int_parsing")
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]}, got {given!r}"
    if kind == "literal_error":
        return f"{given!r} is not allowed; use one of {ctx.get('expected')}"
    if kind.startswith("string_"):
        return _string_message(kind, ctx, given)
    if kind in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}:
        bound = next(iter(ctx.values()))
        words = {
            "greater_than_equal": "at least",
            "less_than_equal": "at most",
            "greater_than": "more than",
            "less_than": "less than",
        }
        return f"must be {words[kind]} {bound}, got {given!r}"
    if kind == "too_short" and field in {"zone_ids", "private_subnets"}:
        what = "zone IDs" if field == "zone_ids" else "private subnets, in two zones"
        return (
            f"list at least 2 {what}, because EKS needs subnets in at least two "
            f"Availability Zones; got {ctx.get('actual_length')}"
        )
    if kind in {"too_short", "too_long"}:
        return str(err["msg"]).replace("List", "the list").replace("Value", "the value")
    if kind == "timezone_aware":
        return f"{given} has no UTC offset; write it like 2027-03-01T00:00:00Z"
    if kind == "value_error":
        msg = str(ctx.get("error") or err["msg"])
        return re.sub(r"^Value error, ", "", msg)
    return str(err["msg"])


def _string_message(kind: str, ctx: dict[str, Any], given: Any) -> str:
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern"))
        if pattern == ZONE_ID_PATTERN:
            return _zone_id_hint(str(given))
        words = _PATTERN_WORDS.get(pattern, f"the pattern {pattern}")
        return f"{given!r} does not match {words}"
    if kind in {"string_too_long", "string_too_short"} and isinstance(given, str):
        most = kind == "string_too_long"
        bound = ctx.get("max_length" if most else "min_length")
        return f"{'at most' if most else 'at least'} {bound} characters; got {len(given)}"
    return f"must be a string, got {given!r}"


def _field_name(loc: tuple[int | str, ...]) -> str:
    """The key a value was written under (for "quote it: key: ..." suggestions)."""
    names = [p for p in loc if isinstance(p, str) and _path((p,))]
    return names[-1] if names else ""


def _quote_it(field: str, given: float) -> str:
    """YAML turned a string into a number: say so, and show the quoted form."""
    if isinstance(given, bool):  # yes, no, on, off, true, false
        return f"YAML reads this unquoted word as {str(given).lower()}; put it in quotes"
    written = str(given)
    why = ""
    if field == "account" and isinstance(given, int):
        written, why = _account_as_written(given)
    elif field == "kubernetes_version" and isinstance(given, float):
        # 1.30 arrives as 1.3: the version that reads as this number is the one meant.
        meant = [v for v in eks_facts().supported_versions if _as_float(v) == given]
        written = meant[0] if meant else written
    return f'YAML read this as the number {given}{why}; quote it: {field}: "{written}"'


def _account_as_written(value: int) -> tuple[str, str]:
    """An account ID YAML read as an integer, back to its 12 digits where that is sure.

    YAML 1.1 (PyYAML) reads 012345670123 as an octal number; a 12-digit decimal
    without a leading zero stays itself. Only the message recovers it, never the config.
    """
    if len(str(value)) == 12:
        return str(value), ""
    if 8**9 <= value < 8**11:  # 0 followed by 10 or 11 octal digits
        return format(value, "o").zfill(12), " (digits after a leading 0 are read as octal)"
    return str(value), ""


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _plain_number(given: str, *, whole: bool) -> str:
    digits = re.sub(r"[^0-9.]", "", given)
    example = digits if digits and _as_float(digits) is not None else ""
    if whole and "." in example:
        example = ""
    kind = "a whole number" if whole else "a number"
    hint = f", e.g. {example}" if example else ""
    return f"{given!r} is not {kind}; write a plain number{hint} (no currency sign or separators)"


def _zone_id_hint(given: str) -> str:
    name = ZONE_NAME.match(given)
    if name is None:
        return f"{given!r} is not an Availability Zone ID such as use1-az4"
    region = name["region"]
    example = f"{addressing.zone_id_prefix(region) or 'use1'}-az4"
    return (
        f"{given} is a zone name; use the zone ID, e.g. {example} (aws ec2 "
        f"describe-availability-zones --region {region} shows both)"
    )
