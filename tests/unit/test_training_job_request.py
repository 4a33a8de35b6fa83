"""The CreateTrainingJob request of a Nova job on a training job (novapod/nova/training_jobs.py):
its members against botocore's model, the exact values the SDK would send, names pinned
with literal values (a name decides whether a launch starts a job), and a start that
happens once."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from novapod.nova import training_jobs as tj
from tests.fakes import service_model

ACCOUNT = "123456789012"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/novapod-dev-tj-sft-1a2b3c4d"
IMAGE = "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-fine-tune-repo:SM-TJ-SFT-latest"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/11111111-2222-3333-4444-555555555555"
SPEC = tj.TrainingJobSpec(
    prefix="novapod-dev",
    job="sft-lora",
    run=1,
    image=IMAGE,
    role_arn=f"arn:aws:iam::{ACCOUNT}:role/novapod-dev-training-jobs",
    instance_type="ml.p5.48xlarge",
    instance_count=2,
    recipe_uri="s3://novapod-dev-data/training-jobs/recipes/0123456789abcdef/",
    output_uri="s3://novapod-dev-artifacts/nova/dev/sft-lora/",
    kms_key_arn=KEY,
    subnets=("subnet-0a", "subnet-0b"),
    security_groups=("sg-0c",),
    max_runtime_seconds=12 * 3600,
    hyperparameters={"model_type": "amazon.nova-lite-v1:0:300k", "base_model": "nova-lite/prod"},
    channels=(tj.Channel("train", "s3://novapod-dev-data/sft/train.jsonl", "Converse"),),
    plan_arn=PLAN_ARN,
    tags={"novapod:environment": "dev"},
)


def test_the_request_is_what_the_sdk_sends_for_a_nova_recipe_and_botocore_accepts() -> None:
    request = tj.create_request(SPEC)
    assert service_model.json_input_errors("sagemaker", "CreateTrainingJob", request) == []
    assert request == {
        "TrainingJobName": request["TrainingJobName"],
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/novapod-dev-training-jobs",
        "HyperParameters": {
            "model_type": "amazon.nova-lite-v1:0:300k",
            "base_model": "nova-lite/prod",
            "sagemaker_recipe_local_path": "/opt/ml/input/data/recipe/recipe.yaml",
        },
        "InputDataConfig": [
            {
                "ChannelName": "recipe",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": "s3://novapod-dev-data/training-jobs/recipes/0123456789abcdef/",
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "InputMode": "File",
            },
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "Converse",
                        "S3Uri": "s3://novapod-dev-data/sft/train.jsonl",
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "InputMode": "File",
            },
        ],
        "OutputDataConfig": {
            "S3OutputPath": "s3://novapod-dev-artifacts/nova/dev/sft-lora/",
            "KmsKeyId": KEY,
            "CompressionType": "GZIP",
        },
        "ResourceConfig": {
            "InstanceType": "ml.p5.48xlarge",
            "InstanceCount": 2,
            "TrainingPlanArn": PLAN_ARN,
        },
        "VpcConfig": {"SecurityGroupIds": ["sg-0c"], "Subnets": ["subnet-0a", "subnet-0b"]},
        "StoppingCondition": {"MaxRuntimeInSeconds": 43200},
        "Tags": [{"Key": "novapod:environment", "Value": "dev"}],
    }


def test_on_demand_there_is_no_plan_and_an_evaluation_writes_its_outputs_uncompressed() -> None:
    request = tj.create_request(
        replace(SPEC, plan_arn=None, compress_output=False, volume_gb=500, volume_kms_key_arn=KEY)
    )
    assert request["ResourceConfig"] == {
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 500,
        "VolumeKmsKeyId": KEY,
    }
    assert request["OutputDataConfig"]["CompressionType"] == "NONE"
    assert service_model.json_input_errors("sagemaker", "CreateTrainingJob", request) == []


def test_hyperparameters_are_strings_as_they_are_and_the_rest_json() -> None:
    assert tj.encode_hyperparameters(
        {"base_model": "nova-micro/prod", "distillation_data": True, "n": 3, "x": {"b": 1}}
    ) == {"base_model": "nova-micro/prod", "distillation_data": "true", "n": "3", "x": '{"b": 1}'}


def test_names_are_pinned_by_job_and_run_whatever_the_request_asks() -> None:
    """A name decides whether a launch starts a job: pinned with literal values. It
    names the job and the run only, so a request that asks something else (an edited
    config) for the same run is refused by SageMaker as the same name."""
    assert tj.create_request(SPEC)["TrainingJobName"] == "novapod-dev--sft-lora-1"
    assert tj.create_request(replace(SPEC, run=2))["TrainingJobName"] == "novapod-dev--sft-lora-2"
    other = tj.create_request(replace(SPEC, instance_count=4))["TrainingJobName"]
    assert other == "novapod-dev--sft-lora-1"


def test_a_long_name_is_cut_in_the_job_part_and_tagged_with_the_jobs_hash() -> None:
    """The stem keeps room for run 1000, so every run of a job shares it; a cut job name
    is followed by 8 hex of its sha256, so two jobs cut alike keep apart."""
    prefix = "novapod-" + "e" * 20
    name = tj.training_job_name(prefix, "j" * 34, 1000)
    assert name == "novapod-eeeeeeeeeeeeeeeeeeee--jjjjjjjjjjjjjjjjjjj-bcb70a1b-1000"
    assert len(name) == 63 and tj.NAME_PATTERN.match(name)
    assert tj.training_job_name(prefix, "j" * 34, 1) == (
        "novapod-eeeeeeeeeeeeeeeeeeee--jjjjjjjjjjjjjjjjjjj-bcb70a1b-1"
    )
    # Two jobs cut to the same characters differ by their hashes.
    other = tj.training_job_name(prefix, "j" * 33 + "k", 1)
    assert other.startswith("novapod-eeeeeeeeeeeeeeeeeeee--jjjjjjjjjjjjjjjjjjj-") and other != name
    # A cut that would end the job part in a dash drops the dash.
    assert tj.job_stem(prefix, "a" * 18 + "-" + "b" * 15) == (
        "novapod-eeeeeeeeeeeeeeeeeeee--aaaaaaaaaaaaaaaaaa-81c2c95f"
    )
    # A name that fits is not cut, nor tagged.
    assert tj.job_stem("novapod-dev", "j" * 34) == "novapod-dev--" + "j" * 34


def test_a_run_is_read_only_from_its_own_jobs_names() -> None:
    """Job a's listing (NameContains novapod-x--a) also returns job a-1's runs: those are
    not a's."""
    assert tj.run_of("novapod-x--a", "novapod-x--a-12") == 12
    assert tj.run_of("novapod-x--a", "novapod-x--a-1-1") is None
    assert tj.run_of("novapod-x--a", "novapod-x--ab-1") is None
    assert tj.run_of("novapod-x--a", "novapod-x--a-01") is None


def test_two_environments_of_one_account_never_share_a_training_job_name() -> None:
    """Review 23b, finding 1: environment `a`'s job `b-sft` and environment `a-b`'s job
    `sft` were both novapod-a-b-sft-1, so one environment's launch took the other's run
    for its own ("already started") and its policies reached the other's jobs. `--`
    joins the environment and the job, and no environment name holds it."""
    assert tj.training_job_name("novapod-a", "b-sft", 1) == "novapod-a--b-sft-1"
    assert tj.training_job_name("novapod-a-b", "sft", 1) == "novapod-a-b--sft-1"
    assert tj.run_of(tj.job_stem("novapod-a", "b-sft"), "novapod-a-b--sft-1") is None
    assert not "novapod-a-b--sft-1".startswith(tj.name_prefix("novapod-a"))


def test_a_run_time_past_28_days_is_refused_in_one_sentence() -> None:
    with pytest.raises(tj.TrainingJobError) as caught:
        tj.create_request(replace(SPEC, max_runtime_seconds=28 * 24 * 3600 + 1))
    assert str(caught.value) == (
        "job sft-lora asks for 2419201 s of run time; a training job runs at most 28 days "
        "(2419200 s): lower hours_per_run"
    )


class _SageMaker:
    """CreateTrainingJob as SageMaker answers a name already taken."""

    def __init__(self, taken: bool) -> None:
        self.taken = taken
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create_training_job(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("CreateTrainingJob", request))
        if self.taken:
            message = (
                "Training job names must be unique within an AWS account and region, and a "
                "training job with this name already exists (arn:...)"
            )
            raise ClientError(
                {"Error": {"Code": "ResourceInUse", "Message": message}}, "CreateTrainingJob"
            )
        self.taken = True
        return {"TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/x"}

    def describe_training_job(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("DescribeTrainingJob", request))
        return {
            "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/x",
            "TrainingJobStatus": "InProgress",
            "SecondaryStatus": "Pending",
        }


def test_a_repeated_start_starts_nothing_and_says_what_runs() -> None:
    sagemaker = _SageMaker(taken=False)
    request = tj.create_request(SPEC)
    first = tj.start(sagemaker, request)
    assert (first.started, first.status) == (True, "InProgress")
    again = tj.start(sagemaker, request)
    assert (again.started, again.status, again.secondary) == (False, "InProgress", "Pending")
    assert [c[0] for c in sagemaker.calls] == [
        "CreateTrainingJob",
        "CreateTrainingJob",
        "DescribeTrainingJob",
    ]
    assert sagemaker.calls[2][1] == {"TrainingJobName": request["TrainingJobName"]}


def test_plan_subnets_cover_every_zone_of_the_plan_or_refuse() -> None:
    subnets = {"use1-az4": ["subnet-a"], "use1-az6": ["subnet-b"], "use1-az1": ["subnet-c"]}
    assert tj.plan_subnets(["use1-az6", "use1-az4", "use1-az6"], subnets, "p") == (
        "subnet-a",
        "subnet-b",
    )
    with pytest.raises(tj.TrainingJobError) as caught:
        tj.plan_subnets(["use1-az2"], subnets, "novapod-dev-tj-sft-1a2b3c4d")
    assert str(caught.value) == (
        "training plan novapod-dev-tj-sft-1a2b3c4d reserves capacity in use1-az2, where the "
        "environment has no private subnet; add the zone to network.zone_ids"
    )
