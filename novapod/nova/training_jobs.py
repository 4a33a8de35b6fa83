"""Nova jobs on SageMaker training jobs: the CreateTrainingJob request, its name, and
starting it once.

Why CreateTrainingJob through boto3 and not the SageMaker Python SDK's recipe support
(issue 23 §3 asks to delegate where the SDK does what is needed):

- a repeated launch must not start a second job, so the job's name must be the same each
  time; both SDK lines append a timestamp to every name (v2 `base_job_name` + time; v3
  `ModelTrainer._get_unique_name`), and even AWS's Nova SDK looks its own job up
  afterwards with ListTrainingJobs (aws/nova-customization-sdk, manager/
  runtime_manager.py, "the job name has an auto generated suffix");
- `novapod recipes` renders the request offline; the SDK resolves a session (region,
  default bucket) and uploads the recipe when it builds the request;
- the request is small and fully known from the SDK's code, and the tests check it
  against botocore's model.

The request mirrors what the SDK sends for a Nova recipe (aws/sagemaker-python-sdk
v2.257.6, src/sagemaker/pytorch/estimator.py `_setup_for_nova_recipe` and `fit`;
src/sagemaker/estimator.py `_nova_encode_hyperparameters`):

- AlgorithmSpecification: the recipe's training-job image (SM-TJ-*), input mode File;
- the rendered recipe as the input channel `recipe` (an S3 prefix holding recipe.yaml),
  which the container reads at `sagemaker_recipe_local_path`
  (/opt/ml/input/data/recipe/recipe.yaml, v3's SM_RECIPE_CONTAINER_PATH);
- hyperparameters: `model_type` (the recipe's run.model_type), `base_model` (its
  run.model_name_or_path) or `base_model_location` when that is an s3:// checkpoint;
  distillation adds `distillation_data`, `role_arn` (the execution role) and `kms_key`;
  an evaluation with a metrics Lambda `eval_lambda_arn`; RFT `reward_lambda_arn`. String
  values are sent as they are, others as JSON (`_nova_encode_hyperparameters`);
- the data as channels `train` and `validation` (the Nova user guide's training-job
  sample: "inputs must be called train and validation"), FullyReplicated, of S3 data
  type Converse for SFT and DPO and S3Prefix for RFT and evaluation data, as AWS's Nova
  SDK sends them (model/nova_model_customizer.py `input_s3_data_type`);
- ResourceConfig: the instance type and count, and the training plan's ARN when the
  job runs on one ("You can use exactly one plan per job ... The InstanceType ... must
  match the InstanceType of your training plan",
  docs.aws.amazon.com/sagemaker/latest/dg/use-training-plan-for-training-jobs-using-api-cli-sdk.html);
- VpcConfig, OutputDataConfig (the outputs prefix and the storage key; evaluations
  uncompressed, so their results are objects `novapod results` lists), StoppingCondition.

The name: `<prefix>--<job>-<run>`, at most 63 characters of
`[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}` (botocore's TrainingJobName), `run` the run's number
(1 to the job's `runs`); a job name too long to fit is cut and followed by a hash of the
whole name (`job_stem`), so two jobs never share a stem. The environment and the job are
joined by `--`, which no environment name holds (config/root.py NAME_PATTERN), so two
environments of one account never share one either: with a single `-`, environment `a`'s
job `b-sft` and environment `a-b`'s job `sft` would both be `novapod-a-b-sft-1`. The
name depends on the job and the run only, never on what the request asks: SageMaker
refuses a second job of a name with ResourceInUse ("Training job names must be unique
within an AWS account and region, and a training job with this name already exists"),
which is the strongly consistent claim on a run. Two launches of run N, however their
requests differ (an edited config, a redeployed output, a newer checkpoint), start one
job; a retried CreateTrainingJob whose first attempt started the job (its answer lost)
lands there too.
`start` then reports the job that runs. Which run comes next is read from
ListTrainingJobs, which may lag a create: a lagging list can only pick a run that
exists, which SageMaker refuses, never start a second job.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

# botocore's TrainingJobName: min 1, max 63.
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
MAX_NAME = 63
RECIPE_CHANNEL = "recipe"
RECIPE_FILE = "recipe.yaml"
RECIPE_LOCAL_PATH = f"/opt/ml/input/data/{RECIPE_CHANNEL}/{RECIPE_FILE}"
# StoppingCondition.MaxRuntimeInSeconds: "The maximum value is 28 days" (botocore's doc).
MAX_RUNTIME_SECONDS = 28 * 24 * 3600
ALREADY_STARTED = "ResourceInUse"
# Where the launcher uploads each rendered recipe (a content-addressed key below it), in
# the environment's data bucket: the execution role reads there and the launch policy
# writes there (novapod/constructs/training_job_role.py).
RECIPE_UPLOAD_PREFIX = "training-jobs/recipes/"
# Instance families of the catalog's training-job types without local instance storage.
# "You can't request a VolumeKmsKeyId when using an instance type with local storage", and
# NVMe families include ml.p4d and ml.g5 (botocore's ResourceConfig VolumeKmsKeyId and
# VolumeSizeInGB docs); ml.p5, ml.p5en and ml.g6 carry NVMe instance store too (EC2 User
# Guide, instance store volumes). ml.r5 is EBS only (r5d is its NVMe variant).
EBS_ONLY_FAMILIES = frozenset({"r5"})
# The EBS volume of an EBS-only instance (botocore's VolumeSizeInGB: "you must define the
# size of EBS volume" for those): 30 GB, what the SageMaker SDK sends by default
# (aws/sagemaker-python-sdk v2.257.6 src/sagemaker/estimator.py, volume_size = 30), and
# so what AWS's Nova distillation sample, an SDK estimator, runs with.
DEFAULT_VOLUME_GB = 30


class TrainingJobError(Exception):
    """A training job that cannot be started as asked; the message is one sentence."""


@dataclass(frozen=True)
class Channel:
    """An input channel: its name, the S3 URI and SageMaker's S3 data type."""

    name: str
    uri: str
    data_type: str = "S3Prefix"  # Converse for SFT/DPO training data


@dataclass(frozen=True)
class TrainingJobSpec:
    """Everything one run's CreateTrainingJob says, with the names already resolved."""

    prefix: str  # the environment's resource prefix, novapod-<name>
    job: str  # the config's job name
    run: int  # the run's number, 1 to the job's runs
    image: str
    role_arn: str
    instance_type: str
    instance_count: int
    recipe_uri: str  # the S3 prefix that holds the rendered recipe.yaml
    output_uri: str  # S3OutputPath: the job's outputs prefix
    kms_key_arn: str
    subnets: tuple[str, ...]
    security_groups: tuple[str, ...]
    max_runtime_seconds: int
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)
    channels: tuple[Channel, ...] = ()
    plan_arn: str | None = None  # None: on demand
    volume_gb: int | None = None
    volume_kms_key_arn: str | None = None
    compress_output: bool = True
    tags: Mapping[str, str] = field(default_factory=dict)
    # CreateTrainingJob's MlflowConfig (MlflowResourceArn, MlflowExperimentName,
    # MlflowRunName: botocore's model) when the job logs to MLflow; None: no MLflow.
    mlflow: Mapping[str, str] | None = None


def takes_volume_key(instance_type: str) -> bool:
    """Whether a training job on `instance_type` may send ResourceConfig.VolumeKmsKeyId
    (EBS volumes only; local NVMe is encrypted by the instance's hardware)."""
    family = instance_type.removeprefix("ml.").split(".", 1)[0]
    return family in EBS_ONLY_FAMILIES


def parse_subnets(text: str) -> dict[str, list[str]]:
    """The nova-base stack's TrainingJobSubnets output (`zone-id=subnet-id,...`) as the
    subnets of each zone ID, in order (what `plan_subnets` takes)."""
    out: dict[str, list[str]] = {}
    for pair in filter(None, text.split(",")):
        zone, sep, subnet = pair.partition("=")
        if not sep or not zone or not subnet:
            raise TrainingJobError(
                f"the stack output TrainingJobSubnets has {pair!r}, not zone-id=subnet-id; "
                "deploy this version of novapod's nova-base stack"
            )
        out.setdefault(zone, []).append(subnet)
    return out


def encode_hyperparameters(values: Mapping[str, Any]) -> dict[str, str]:
    """As the SDK encodes a Nova job's: strings as they are, other values as JSON."""
    return {
        str(k): v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        for k, v in values.items()
    }


def _body(spec: TrainingJobSpec) -> dict[str, Any]:
    if not 1 <= spec.max_runtime_seconds <= MAX_RUNTIME_SECONDS:
        raise TrainingJobError(
            f"job {spec.job} asks for {spec.max_runtime_seconds} s of run time; a training "
            f"job runs at most 28 days ({MAX_RUNTIME_SECONDS} s): lower hours_per_run"
        )
    resources: dict[str, Any] = {
        "InstanceType": spec.instance_type,
        "InstanceCount": spec.instance_count,
    }
    if spec.volume_gb is not None:
        resources["VolumeSizeInGB"] = spec.volume_gb
    if spec.volume_kms_key_arn is not None:
        resources["VolumeKmsKeyId"] = spec.volume_kms_key_arn
    if spec.plan_arn is not None:
        resources["TrainingPlanArn"] = spec.plan_arn
    channels = [Channel(RECIPE_CHANNEL, spec.recipe_uri), *spec.channels]
    body: dict[str, Any] = {
        "AlgorithmSpecification": {"TrainingImage": spec.image, "TrainingInputMode": "File"},
        "RoleArn": spec.role_arn,
        "HyperParameters": encode_hyperparameters(
            {**spec.hyperparameters, "sagemaker_recipe_local_path": RECIPE_LOCAL_PATH}
        ),
        "InputDataConfig": [
            {
                "ChannelName": c.name,
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": c.data_type,
                        "S3Uri": c.uri,
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "InputMode": "File",
            }
            for c in channels
        ],
        "OutputDataConfig": {
            "S3OutputPath": spec.output_uri,
            "KmsKeyId": spec.kms_key_arn,
            "CompressionType": "GZIP" if spec.compress_output else "NONE",
        },
        "ResourceConfig": resources,
        "VpcConfig": {
            "SecurityGroupIds": list(spec.security_groups),
            "Subnets": list(spec.subnets),
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": spec.max_runtime_seconds},
    }
    if spec.tags:
        body["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(spec.tags.items())]
    if spec.mlflow is not None:
        body["MlflowConfig"] = dict(spec.mlflow)
    return body


def request_body(spec: TrainingJobSpec) -> dict[str, Any]:
    """The CreateTrainingJob request of one run without its name (what it asks)."""
    return _body(spec)


def named(prefix: str, job: str, run: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A request body with the name of the job's run `run`."""
    return {"TrainingJobName": training_job_name(prefix, job, run), **body}


# Room kept for the run's number in every name of a job, so its stem does not depend on
# the run: `-1000`, the most runs a job may have (config/jobs.py).
_RUN_ROOM = len("-1000")
# Between the environment's prefix and the job's name (name_prefix).
SEPARATOR = "--"
_JOB_HASH_CHARS = 8


def name_prefix(prefix: str) -> str:
    """`<prefix>--`, what every training job name of the environment starts with (the
    launch and status policies' ARN pattern): no environment name holds `--`, so no
    other environment's names start the same."""
    return f"{prefix}{SEPARATOR}"


def job_stem(prefix: str, job: str) -> str:
    """`<prefix>--<job>`, what every run's name of the job starts with: the job's name
    cut and followed by `-<8 hex of its sha256>` when it does not fit (the prefix, which
    the launch policy's ARN pattern names, is never cut)."""
    whole = f"{name_prefix(prefix)}{job}"
    if len(whole) + _RUN_ROOM <= MAX_NAME:
        return whole
    tag = hashlib.sha256(job.encode()).hexdigest()[:_JOB_HASH_CHARS]
    room = MAX_NAME - _RUN_ROOM - len(name_prefix(prefix)) - 1 - _JOB_HASH_CHARS
    if room < 1:
        raise TrainingJobError(
            f"the environment prefix {prefix} leaves no room for a training job's name "
            f"(at most {MAX_NAME} characters); shorten the config's name"
        )
    return f"{name_prefix(prefix)}{job[:room].rstrip('-')}-{tag}"


def training_job_name(prefix: str, job: str, run: int) -> str:
    """`<stem>-<run>` (job_stem), at most 63 characters."""
    name = f"{job_stem(prefix, job)}-{run}"
    assert NAME_PATTERN.match(name) and len(name) <= MAX_NAME, name
    return name


def run_of(stem: str, name: str) -> int | None:
    """The run number of a training job named `<stem>-<run>`, or None for any other
    name (another job's, whose stem merely starts the same)."""
    tail = name[len(stem) + 1 :] if name.startswith(f"{stem}-") else ""
    return int(tail) if tail.isdigit() and not tail.startswith("0") else None


def create_request(spec: TrainingJobSpec) -> dict[str, Any]:
    """The CreateTrainingJob request of one run (its name from what it asks)."""
    return {"TrainingJobName": training_job_name(spec.prefix, spec.job, spec.run), **_body(spec)}


@dataclass(frozen=True)
class Started:
    """What `start` did: started the job now, or found it started before."""

    name: str
    arn: str
    started: bool
    status: str  # the job's TrainingJobStatus (InProgress for one just started)
    secondary: str | None = None


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def start(sagemaker: Any, request: Mapping[str, Any]) -> Started:
    """CreateTrainingJob, once: a name already taken is the job a launch before started
    (or this one's first attempt, whose answer was lost); it is described, not started
    again. Other errors propagate."""
    name = str(request["TrainingJobName"])
    try:
        arn = sagemaker.create_training_job(**request)["TrainingJobArn"]
    except ClientError as error:
        if _code(error) != ALREADY_STARTED:
            raise
        described = sagemaker.describe_training_job(TrainingJobName=name)
        return Started(
            name,
            str(described.get("TrainingJobArn", "")),
            started=False,
            status=str(described.get("TrainingJobStatus", "")),
            secondary=described.get("SecondaryStatus"),
        )
    return Started(name, str(arn), started=True, status="InProgress")


def plan_subnets(
    plan_zones: Sequence[str], subnets_by_zone: Mapping[str, Sequence[str]], plan: str
) -> tuple[str, ...]:
    """The private subnets in every Availability Zone (by ID) of a plan's reserved
    capacity (DescribeTrainingPlan ReservedCapacitySummaries[].AvailabilityZoneId). A
    plan's reserved capacities are each "defined by a specific instance type, quantity,
    Availability Zone" (docs.aws.amazon.com/sagemaker/latest/APIReference/
    API_CreateTrainingPlan.html; API_ReservedCapacitySummary.html gives each its zone),
    and a job's instances are placed in its VpcConfig's subnets (train-vpc.html), so the
    job gets the subnets of the plan's zones. No page found says what SageMaker does with
    a job whose subnets miss the plan's zone (waits in Pending, or refuses) [unverified];
    this never sends one. A zone without a subnet is refused: the job could not reach its
    capacity."""
    missing = sorted(z for z in set(plan_zones) if not subnets_by_zone.get(z))
    if missing:
        raise TrainingJobError(
            f"training plan {plan} reserves capacity in {', '.join(missing)}, where the "
            "environment has no private subnet; add the zone to network.zone_ids"
        )
    return tuple(s for zone in sorted(set(plan_zones)) for s in subnets_by_zone[zone])
