"""The novapod configuration: one YAML file per environment, validated once.

`load_config(path)` returns a frozen `NovapodConfig` or raises `ConfigError`, whose
`issues` are `(field.path, message)` pairs such as
`network.vpc.private_subnet_prefix: ...`. Nothing else escapes the loader, so the CLI
and `app.py` can print the lines and exit with status 2 before any stack exists.

One module per section (network, storage, capacity, eks, hyperpod, jobs, nova,
monitoring), the root model in `root`, the rules that read more than one section in
`checks`, and the loader, the error messages and the JSON Schema in `loading`, `messages`
and `schema`. A pipeline file (CDK Pipelines, `load_pipeline`) has its models in
`pipeline`.
"""

from __future__ import annotations

from novapod.config.base import ConfigError
from novapod.config.capacity import (
    ISO_4217_CODES,
    TRAINING_PLAN_ARN,
    Capacity,
    Extension,
    Purchase,
    TargetResource,
    TrainingPlanSpec,
)
from novapod.config.eks import PRINCIPAL_ARN, Eks
from novapod.config.fields import (
    FSX_THROUGHPUTS,
    INSTANCE_TYPE_PATTERN,
    LOG_RETENTION_DAYS,
    ZONE_ID_PATTERN,
    ZONE_NAME,
    LustreThroughput,
    PlanName,
    ZoneId,
)
from novapod.config.hyperpod import (
    RIG_FSX_MAX_GIB,
    DeepHealthCheck,
    GroupName,
    HyperPod,
    RestrictedGroup,
    StandardGroup,
)
from novapod.config.jobs import Evaluation, Job, JobData, dependency_order
from novapod.config.loading import (
    DEFAULT_CONFIG,
    VALIDATE_AS_OF_ENV,
    decode_config_text,
    is_pipeline_file,
    load_config,
    load_pipeline,
    parse_config,
)
from novapod.config.monitoring import Monitoring, Notifications
from novapod.config.network import (
    ALL_ENDPOINTS,
    GATEWAY_ENDPOINTS,
    MAX_PRIVATE_PREFIX,
    RFT_ENDPOINTS,
    RIG_ENDPOINTS,
    CreateVpc,
    EndpointName,
    ExistingSubnet,
    ExistingVpc,
    FlowLogs,
    Network,
)
from novapod.config.nova import ROLE_ARN, BedrockModel, Mlflow, Nova
from novapod.config.pipeline import (
    CONNECTION_ARN,
    Deployment,
    Pipeline,
    PipelineConfig,
    PipelineEnvironment,
    PipelineSource,
)
from novapod.config.root import NAME_PATTERN, TAG_TEXT, CompliancePack, Name, NovapodConfig
from novapod.config.schema import JSON_SCHEMA_DIALECT, json_schema
from novapod.config.storage import Lustre, Storage

__all__ = [
    "ALL_ENDPOINTS",
    "CONNECTION_ARN",
    "DEFAULT_CONFIG",
    "FSX_THROUGHPUTS",
    "GATEWAY_ENDPOINTS",
    "INSTANCE_TYPE_PATTERN",
    "ISO_4217_CODES",
    "JSON_SCHEMA_DIALECT",
    "LOG_RETENTION_DAYS",
    "MAX_PRIVATE_PREFIX",
    "NAME_PATTERN",
    "PRINCIPAL_ARN",
    "RFT_ENDPOINTS",
    "RIG_ENDPOINTS",
    "RIG_FSX_MAX_GIB",
    "ROLE_ARN",
    "TAG_TEXT",
    "TRAINING_PLAN_ARN",
    "VALIDATE_AS_OF_ENV",
    "ZONE_ID_PATTERN",
    "ZONE_NAME",
    "BedrockModel",
    "Capacity",
    "CompliancePack",
    "ConfigError",
    "CreateVpc",
    "DeepHealthCheck",
    "Deployment",
    "Eks",
    "EndpointName",
    "Evaluation",
    "ExistingSubnet",
    "ExistingVpc",
    "Extension",
    "FlowLogs",
    "GroupName",
    "HyperPod",
    "Job",
    "JobData",
    "Lustre",
    "LustreThroughput",
    "Mlflow",
    "Monitoring",
    "Name",
    "Network",
    "Notifications",
    "Nova",
    "NovapodConfig",
    "Pipeline",
    "PipelineConfig",
    "PipelineEnvironment",
    "PipelineSource",
    "PlanName",
    "Purchase",
    "RestrictedGroup",
    "StandardGroup",
    "Storage",
    "TargetResource",
    "TrainingPlanSpec",
    "ZoneId",
    "decode_config_text",
    "dependency_order",
    "is_pipeline_file",
    "json_schema",
    "load_config",
    "load_pipeline",
    "parse_config",
]
