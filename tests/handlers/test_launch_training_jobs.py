"""`novapod launch CONFIG JOB [--run]` of training-job jobs (config/examples/training-jobs.yaml)
against the fake control plane: the exact CreateTrainingJob request SageMaker receives
(botocore's model checks it, the fake its plan, role and name), the recipe uploaded once
at its content-addressed key (the S3 model's PutObject), a repeated launch that starts
nothing, a lost answer retried, distillation on demand, and the refusals."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from novapod.cli import main
from novapod.config.loading import load_config
from novapod.nova import render
from tests.fakes import service_model
from tests.fakes.aws_control_plane import FakeControlPlane, Fault

EXAMPLE = Path(__file__).resolve().parents[2] / "config/examples/training-jobs.yaml"
ACCOUNT = "111122223333"
DATA = f"novapod-mixed-tj-data-{ACCOUNT}"
ARTIFACTS = f"novapod-mixed-tj-artifacts-{ACCOUNT}"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/11111111-2222-3333-4444-555555555555"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/novapod-mixed-tj-training-jobs"
SG = "sg-0training"
PLAN = "novapod-mixed-tj-micro-tj-43d97959"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/{PLAN}"
T0 = datetime(2027, 9, 1, tzinfo=UTC)
SFT_IMAGE = "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-fine-tune-repo:SM-TJ-SFT-latest"
EVAL_IMAGE = (
    "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-evaluation-repo:SM-TJ-Eval-V2-latest"
)
DISTILL_IMAGE = (
    "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-distillation-repo:SM-TJ-DISTILL-LATEST"
)
SFT_RECIPE = b"""\
run:
  name: micro-sft
  model_type: amazon.nova-micro-v1:0:128k
  model_name_or_path: nova-micro/prod
  replicas: 2
  data_s3_path: ''
  output_s3_path: ''
training_config:
  max_length: 32768
  global_batch_size: 64
  trainer:
    max_epochs: 2
  model:
    hidden_dropout: 0.0
    attention_dropout: 0.0
    ffn_dropout: 0.0
    optim:
      lr: 1.0e-05
      name: distributed_fused_adam
      adam_w_mode: true
      eps: 1.0e-06
      weight_decay: 0.0
      betas:
      - 0.9
      - 0.999
      sched:
        warmup_steps: 10
        constant_steps: 0
        min_lr: 1.0e-06
    peft:
      peft_scheme: lora
      lora_tuning:
        loraplus_lr_ratio: 16.0
        alpha: 128
        adapter_dropout: 0.01
"""
SFT_DIGEST = hashlib.sha256(SFT_RECIPE).hexdigest()[:16]


@pytest.fixture
def plane(control_plane: FakeControlPlane) -> Iterator[FakeControlPlane]:
    """The environment deployed: storage and nova-base outputs, the training-job plan
    bought (Active, 4 x p5 in use1-az4), the role trusted by SageMaker."""
    control_plane.reset()
    control_plane.account = ACCOUNT
    control_plane.training_jobs.trust_role(ROLE)
    control_plane.set_zones({"us-east-1a": "use1-az4", "us-east-1b": "use1-az6"})
    control_plane.add_stack(
        "novapod-mixed-tj-storage",
        {"DataBucketName": DATA, "ArtifactsBucketName": ARTIFACTS, "KeyArn": KEY},
    )
    control_plane.add_stack(
        "novapod-mixed-tj-nova-base",
        {
            "TrainingJobRoleArn": ROLE,
            "TrainingJobSubnets": "use1-az4=subnet-0a4,use1-az6=subnet-0a6",
            "TrainingJobSecurityGroupId": SG,
        },
    )
    control_plane.add_bucket(DATA)
    control_plane.add_bucket(ARTIFACTS)
    offering = control_plane.add_offering(
        "tpo-micro-tj",
        zones=["us-east-1a"],
        start=T0,
        fee="1000.00",
        target_resources=["training-job"],
    )
    control_plane.add_plan(PLAN, offering, statuses=["Active"])
    yield control_plane
    assert control_plane.violations == []


def launch(*args: str) -> int:
    return main(["launch", str(EXAMPLE), *args])


SFT_NAME = "novapod-mixed-tj--micro-sft-1"
EVAL_RECIPE = b"""\
run:
  name: micro-eval
  model_type: amazon.nova-micro-v1:0:128k
  model_name_or_path: s3://customer-escrow-111122223333-smtj-abc123/SFTNAME/stepID
  replicas: 1
  data_s3_path: ''
  output_s3_path: ''
evaluation:
  task: gen_qa
  strategy: gen_qa
  metric: all
inference:
  max_new_tokens: 8196
  top_k: -1
  top_p: 1.0
  temperature: 0
  top_logprobs: 0
processor:
  lambda_arn: ''
  lambda_type: rft
  preprocessing:
    enabled: false
  postprocessing:
    enabled: true
  aggregation: average
""".replace(b"SFTNAME", SFT_NAME.encode())
ESCROW = f"s3://customer-escrow-{ACCOUNT}-smtj-abc123/{SFT_NAME}/stepID"


def channel(name: str, uri: str, kind: str = "S3Prefix") -> dict[str, Any]:
    return {
        "ChannelName": name,
        "DataSource": {
            "S3DataSource": {
                "S3DataDistributionType": "FullyReplicated",
                "S3DataType": kind,
                "S3Uri": uri,
            }
        },
        "InputMode": "File",
    }


def recipe_prefix(digest: str) -> str:
    return f"s3://{DATA}/training-jobs/recipes/{digest}/"


SFT_REQUEST: dict[str, Any] = {
    "TrainingJobName": SFT_NAME,
    "AlgorithmSpecification": {"TrainingImage": SFT_IMAGE, "TrainingInputMode": "File"},
    "HyperParameters": {
        "base_model": "nova-micro/prod",
        "model_type": "amazon.nova-micro-v1:0:128k",
        "sagemaker_recipe_local_path": "/opt/ml/input/data/recipe/recipe.yaml",
    },
    "InputDataConfig": [
        channel("recipe", recipe_prefix(SFT_DIGEST)),
        channel("train", f"s3://{DATA}/sft/micro-train.jsonl", "Converse"),
    ],
    "OutputDataConfig": {
        "CompressionType": "GZIP",
        "KmsKeyId": KEY,
        "S3OutputPath": f"s3://{ARTIFACTS}/nova/mixed-tj/micro-sft/",
    },
    "ResourceConfig": {
        "InstanceCount": 2,
        "InstanceType": "ml.p5.48xlarge",
        "TrainingPlanArn": PLAN_ARN,
    },
    "RoleArn": ROLE,
    "StoppingCondition": {"MaxRuntimeInSeconds": 36000},
    "Tags": [{"Key": "novapod:environment", "Value": "mixed-tj"}],
    # Only the subnet of the plan's zone (use1-az4), not use1-az6's.
    "VpcConfig": {"SecurityGroupIds": [SG], "Subnets": ["subnet-0a4"]},
}


def test_the_rendered_recipes_follow_the_training_job_rules() -> None:
    """micro-sft and micro-eval as `novapod recipes` writes them: no data or output path,
    no mlflow_* keys, replicas = the InstanceCount. Fails if the HyperPod rendering (data
    and output paths, MLflow names, the HyperPod image) leaked into a training job."""
    files = render.bundle(load_config(str(EXAMPLE)))
    assert files["recipes/micro-sft.yaml"].encode() == SFT_RECIPE
    assert files["recipes/micro-eval.yaml"].encode() == EVAL_RECIPE.replace(
        ESCROW.encode(), b"'{{checkpoint:micro-sft}}'"
    )
    index = json.loads(files["index.json"])
    entries = {entry["job"]: entry for entry in index["jobs"]}
    assert all(entry["launch"] is not None for entry in entries.values())
    assert entries["distill"]["on_demand"] is True
    assert entries["micro-sft"]["training_plan_name"] == PLAN
    assert entries["micro-sft"]["manifest"] == (
        "s3://${ArtifactsBucket}/nova/mixed-tj/micro-sft/<TrainingJobName>/output/output.tar.gz"
    )
    launch_file = json.loads(files["launch/micro-sft.json"])
    assert launch_file["create_training_job"]["ResourceConfig"]["TrainingPlanArn"] == (
        "{{training-plan:micro-tj}}"
    )
    assert "commands" not in entries["micro-sft"]
    assert "hyperpod" not in files["launch/micro-eval.json"]


def test_recipes_counts_every_job_launchable(tmp_path, capsys) -> None:
    assert main(["recipes", "--out", str(tmp_path / "out"), str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"4 job(s), 4 launchable: wrote 9 files under {tmp_path / 'out'}; "
        f"index {tmp_path / 'out' / 'index.json'}\n"
    )


def test_a_dry_run_prints_the_resolved_request_and_starts_nothing(plane, capsys) -> None:
    assert hashlib.sha256(SFT_RECIPE).hexdigest()[:16] == "b3bb1ae2211dc127"
    assert launch("micro-sft") == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == SFT_REQUEST
    assert service_model.json_input_errors("sagemaker", "CreateTrainingJob", SFT_REQUEST) == []
    assert captured.err == (
        f"# training plan micro-tj: {PLAN_ARN} (zones use1-az4)\n"
        f"# recipe: {recipe_prefix(SFT_DIGEST)}recipe.yaml (uploaded by --run)\n"
    )
    assert plane.calls_to("DescribeTrainingPlan") == [{"TrainingPlanName": PLAN}]
    assert plane.calls_to("CreateTrainingJob") == []
    assert plane.put_requests == []


def test_run_uploads_the_recipe_then_starts_the_job_once(plane, capsys) -> None:
    assert launch("micro-sft", "--run") == 0
    captured = capsys.readouterr()
    assert captured.out == (
        f"started job micro-sft as training job {SFT_NAME} (run 1 of 1): outputs in "
        f"s3://{ARTIFACTS}/nova/mixed-tj/micro-sft/{SFT_NAME}/\n"
    )
    key = f"training-jobs/recipes/{SFT_DIGEST}/recipe.yaml"
    assert plane.buckets[DATA][key].body == SFT_RECIPE
    (put,) = plane.put_requests
    crc = base64.b64encode(zlib.crc32(SFT_RECIPE).to_bytes(4, "big")).decode()
    assert put == {
        "Bucket": DATA,
        "Key": key,
        "ContentLength": len(SFT_RECIPE),
        "ChecksumAlgorithm": "CRC32",
        "ChecksumCRC32": crc,
    }
    assert plane.calls_to("CreateTrainingJob") == [SFT_REQUEST]
    assert plane.training_jobs.status(SFT_NAME)[0] == "InProgress"
    operations = [o for o in plane.operations() if o != "DescribeStacks"]
    assert operations == [
        "DescribeTrainingPlan", "ListTrainingJobs", "PutObject", "CreateTrainingJob",
    ]  # fmt: skip


def test_a_repeated_run_starts_nothing_and_says_which_job_runs(plane, capsys) -> None:
    assert launch("micro-sft", "--run") == 0
    plane.training_jobs.script_statuses(SFT_NAME, [("InProgress", "Training")])
    capsys.readouterr()
    assert launch("micro-sft", "--run") == 0
    assert capsys.readouterr().out == (
        f"job micro-sft is already running as training job {SFT_NAME} (InProgress "
        "(Training)); nothing started\n"
    )
    assert len(plane.calls_to("CreateTrainingJob")) == 1
    assert len(plane.put_requests) == 1


def test_a_lost_create_answer_is_retried_and_reports_the_job_it_started(plane, capsys) -> None:
    """The first CreateTrainingJob starts the job but its answer is lost (a 500); botocore
    retries, SageMaker says ResourceInUse, and the launch reports the job: one job."""
    plane.inject("CreateTrainingJob", Fault("lose_response", how="server_error"))
    assert launch("micro-sft", "--run") == 0
    assert capsys.readouterr().out == (
        f"job micro-sft runs as training job {SFT_NAME} (InProgress (Starting)), started "
        "by this launch (an answer lost, the retry refused by its name) or by another at "
        "the same time; no second job started\n"
    )
    assert plane.calls_to("CreateTrainingJob") == [SFT_REQUEST, SFT_REQUEST]
    assert len(plane.training_jobs.jobs) == 1


def _edited(tmp_path: Path) -> Path:
    """The example with micro-sft asking for another hour per run: another request."""
    text = EXAMPLE.read_text()
    marker = "  - name: micro-sft\n"
    head, tail = text.split(marker, 1)
    edited = tail.replace("    hours_per_run: 10\n", "    hours_per_run: 11\n", 1)
    assert edited != tail
    config = tmp_path / "training-jobs.yaml"
    config.write_text(head + marker + edited)
    return config


def test_an_edited_config_starts_nothing_while_a_run_of_the_job_runs(
    plane, capsys, tmp_path
) -> None:
    """Review 23a, finding 1: run 1 InProgress, the config edited (another request), a
    launch starts nothing. Fails if runs were told apart by what they ask."""
    assert launch("micro-sft", "--run") == 0
    plane.training_jobs.script_statuses(SFT_NAME, [("InProgress", "Training")])
    capsys.readouterr()
    assert main(["launch", str(_edited(tmp_path)), "micro-sft", "--run"]) == 0
    assert capsys.readouterr().out == (
        f"job micro-sft is already running as training job {SFT_NAME} (InProgress "
        "(Training)); nothing started\n"
    )
    assert len(plane.calls_to("CreateTrainingJob")) == 1


def test_an_edited_config_does_not_run_a_job_past_its_runs(plane, capsys, tmp_path) -> None:
    assert launch("micro-sft", "--run") == 0
    plane.training_jobs.complete(SFT_NAME)
    capsys.readouterr()
    assert main(["launch", str(_edited(tmp_path)), "micro-sft", "--run"]) == 2
    assert "has run all its 1 run(s)" in capsys.readouterr().err
    assert len(plane.calls_to("CreateTrainingJob")) == 1


def test_a_list_that_lags_the_create_still_starts_one_job(plane, capsys, tmp_path) -> None:
    """Run 1 started but not listed yet, and the config edited: the second launch picks
    run 1 again, and SageMaker refuses the name; one job. Fails if the name carried what
    the request asks (the edit would start a second job)."""
    assert launch("micro-sft", "--run") == 0
    plane.training_jobs.lagging.add(SFT_NAME.lower())
    capsys.readouterr()
    assert main(["launch", str(_edited(tmp_path)), "micro-sft", "--run"]) == 0
    assert "no second job started" in capsys.readouterr().out
    names = [c["TrainingJobName"] for c in plane.calls_to("CreateTrainingJob")]
    assert names == [SFT_NAME, SFT_NAME]
    assert len(plane.training_jobs.jobs) == 1


def test_a_finished_job_is_not_run_past_its_runs(plane, capsys) -> None:
    assert launch("micro-sft", "--run") == 0
    plane.training_jobs.complete(SFT_NAME)
    capsys.readouterr()
    assert launch("micro-sft", "--run") == 2
    assert capsys.readouterr().err == (
        f"novapod launch: job micro-sft has run all its 1 run(s) ({SFT_NAME} (Completed)); "
        "raise its runs in the config to run it again\n"
    )
    assert len(plane.calls_to("CreateTrainingJob")) == 1


def test_the_evaluation_starts_from_the_training_jobs_checkpoint(plane, capsys) -> None:
    """micro-eval (from: job:micro-sft) reads the checkpoint from micro-sft's
    <name>/output/output.tar.gz manifest; uncompressed outputs, its data as `train`."""
    assert launch("micro-sft", "--run") == 0
    plane.training_jobs.complete(SFT_NAME, checkpoint=ESCROW)
    capsys.readouterr()
    assert launch("micro-eval", "--run") == 0
    captured = capsys.readouterr()
    digest = hashlib.sha256(EVAL_RECIPE).hexdigest()[:16]
    (create,) = plane.calls_to("CreateTrainingJob")[1:]
    name = create["TrainingJobName"]
    assert name.startswith("novapod-mixed-tj--micro-eval-") and name.endswith("-1")
    assert plane.buckets[DATA][f"training-jobs/recipes/{digest}/recipe.yaml"].body == EVAL_RECIPE
    assert create["AlgorithmSpecification"]["TrainingImage"] == EVAL_IMAGE
    assert create["HyperParameters"] == {
        "base_model_location": ESCROW,
        "model_type": "amazon.nova-micro-v1:0:128k",
        "sagemaker_recipe_local_path": "/opt/ml/input/data/recipe/recipe.yaml",
    }
    assert create["InputDataConfig"] == [
        channel("recipe", recipe_prefix(digest)),
        channel("train", f"s3://{DATA}/eval/micro-gen-qa.jsonl"),
    ]
    assert create["OutputDataConfig"]["CompressionType"] == "NONE"
    assert create["ResourceConfig"] == {
        "InstanceCount": 1,
        "InstanceType": "ml.p5.48xlarge",
        "TrainingPlanArn": PLAN_ARN,
    }
    assert f"# micro-sft: checkpoint {ESCROW} from run {SFT_NAME}" in captured.err


def test_distillation_runs_on_demand_in_every_private_subnet(plane, capsys) -> None:
    assert launch("distill", "--run") == 0
    (create,) = plane.calls_to("CreateTrainingJob")
    assert create["ResourceConfig"] == {
        "InstanceCount": 1,
        "InstanceType": "ml.r5.24xlarge",
        # r5 is EBS-only: its volume takes the key and needs a size (30 GB, the SDK's).
        "VolumeKmsKeyId": KEY,
        "VolumeSizeInGB": 30,
    }
    assert create["VpcConfig"] == {
        "SecurityGroupIds": [SG],
        "Subnets": ["subnet-0a4", "subnet-0a6"],
    }
    assert create["AlgorithmSpecification"]["TrainingImage"] == DISTILL_IMAGE
    assert create["HyperParameters"] == {
        "distillation_data": "true",
        "kms_key": KEY,
        "model_type": "amazon.nova-pro-v1:0:300k",
        "role_arn": ROLE,
        "sagemaker_recipe_local_path": "/opt/ml/input/data/recipe/recipe.yaml",
    }
    assert [c["ChannelName"] for c in create["InputDataConfig"]] == ["recipe"]
    assert plane.calls_to("DescribeTrainingPlan") == []
    assert service_model.json_input_errors("sagemaker", "CreateTrainingJob", create) == []
    (put,) = plane.put_requests
    body = plane.buckets[DATA][put["Key"]].body.decode()
    assert f"  kms_key: {KEY}\n" in body and f"  customer_bucket: {DATA}\n" in body


def test_a_plan_not_bought_yet_is_named_with_the_fix(plane, capsys) -> None:
    plane.plans.pop(PLAN)
    assert launch("micro-sft", "--run") == 2
    assert capsys.readouterr().err == (
        f"novapod launch: training plan micro-tj ({PLAN}) is not bought yet; approve it "
        f"(capacity.training_plans purchase.approve: {PLAN}) and deploy "
        "novapod-mixed-tj-capacity before launching micro-sft\n"
    )
    assert plane.calls_to("CreateTrainingJob") == [] and plane.put_requests == []


def test_a_plan_that_has_expired_is_refused(plane, capsys) -> None:
    plane.script_statuses(PLAN, ["Expired"])
    assert launch("micro-sft") == 2
    assert capsys.readouterr().err == (
        f"novapod launch: training plan micro-tj ({PLAN}) is Expired, and a training job "
        "runs only on a Scheduled or Active plan; launch micro-sft while the plan is "
        "Scheduled or Active, or set on_demand: true instead of plan\n"
    )


def test_stacks_not_deployed_are_named(plane, capsys) -> None:
    plane.stacks = [s for s in plane.stacks if s["StackName"] != "novapod-mixed-tj-nova-base"]
    assert launch("distill", "--run") == 2
    assert capsys.readouterr().err == (
        "novapod launch: stack novapod-mixed-tj-nova-base is not deployed in us-east-1; "
        "deploy the environment first (cdk deploy novapod-mixed-tj-nova-base)\n"
    )
    assert plane.put_requests == []


def test_put_object_is_served_as_the_s3_model_says(plane) -> None:
    """The fake's PutObject: routed by botocore's S3 model, members it does not model
    refused (SSE here), a wrong checksum refused as S3 does."""
    s3 = boto3.client("s3", config=Config(retries={"total_max_attempts": 1}))
    s3.put_object(Bucket=DATA, Key="a/b.yaml", Body=b"x: 1\n")
    assert plane.buckets[DATA]["a/b.yaml"].body == b"x: 1\n"
    with pytest.raises(ClientError) as refused:
        s3.put_object(Bucket=DATA, Key="a/c", Body=b"x", ServerSideEncryption="aws:kms")
    assert refused.value.response["Error"]["Code"] == "NotImplemented"
    with pytest.raises(ClientError) as bad:
        s3.put_object(Bucket=DATA, Key="a/d", Body=b"x", ChecksumCRC32="AAAAAA==")
    assert bad.value.response["Error"]["Code"] == "BadDigest"
    with pytest.raises(ClientError) as missing:
        s3.put_object(Bucket="no-such-bucket", Key="k", Body=b"x")
    assert missing.value.response["Error"]["Code"] == "NoSuchBucket"


def test_a_predecessor_training_job_that_has_not_finished_is_named(plane, capsys, tmp_path) -> None:
    """distill after micro-eval (a training-job evaluation): with no evaluation results
    under micro-eval's outputs, the launch refuses, naming what it looked for. Fails if
    the training-job path lost the predecessor check or named HyperPod's sign."""
    text = EXAMPLE.read_text().replace(
        "    instance_type: ml.r5.24xlarge\n",
        "    instance_type: ml.r5.24xlarge\n    after: [micro-eval]\n",
        1,
    )
    config = tmp_path / "training-jobs.yaml"
    config.write_text(text)
    assert main(["launch", str(config), "distill", "--run"]) == 2
    assert capsys.readouterr().err == (
        "novapod launch: job micro-eval has not finished (no evaluation results under "
        f"s3://{ARTIFACTS}/nova/mixed-tj/micro-eval/); launch micro-eval first or wait for "
        "it (--force launches distill anyway)\n"
    )
    assert plane.calls_to("CreateTrainingJob") == [] and plane.put_requests == []


def test_a_plan_shown_with_zone_names_only_is_mapped_to_zone_ids(plane, capsys) -> None:
    """Review 23a, finding 2: DescribeTrainingPlan without AvailabilityZoneId (the API
    reference shows only AvailabilityZone): the zone name goes through this account's
    DescribeAvailabilityZones, and the job gets the subnet of use1-az4 only."""
    plane.describe_includes_zone_id = False
    assert launch("micro-sft", "--run") == 0
    (create,) = plane.calls_to("CreateTrainingJob")
    assert create["VpcConfig"]["Subnets"] == ["subnet-0a4"]
    assert len(plane.calls_to("DescribeAvailabilityZones")) == 1


def test_a_plan_with_no_zone_at_all_is_refused_before_anything_is_uploaded(plane, capsys) -> None:
    plane.describe_includes_zone_id = False
    plane.set_zones({})  # the account's list does not know the plan's zone name
    assert launch("micro-sft", "--run") == 2
    assert capsys.readouterr().err == (
        "novapod launch: training plan micro-tj names no Availability Zone for its reserved "
        "capacity, so the job's subnets cannot be chosen; describe it (aws sagemaker "
        "describe-training-plan) and launch again once it shows its zone\n"
    )
    assert plane.put_requests == [] and plane.calls_to("CreateTrainingJob") == []


def test_a_plan_with_one_zone_this_account_does_not_list_is_refused(plane, capsys) -> None:
    """A plan over two zones shown by name, one of which the account's zone list lacks:
    the job is not narrowed to the known zone without a word (its subnets would leave
    out the other half of the capacity); the unknown zone is named."""
    plane.plans.pop(PLAN)
    offering = plane.add_offering(
        "tpo-micro-tj-two",
        zones=["us-east-1a", "us-east-1z"],
        start=T0,
        fee="1000.00",
        target_resources=["training-job"],
    )
    plane.add_plan(PLAN, offering, statuses=["Active"])
    plane.describe_includes_zone_id = False
    assert launch("micro-sft", "--run") == 2
    assert capsys.readouterr().err == (
        "novapod launch: training plan micro-tj reserves capacity in us-east-1z, which this "
        "account's DescribeAvailabilityZones does not list, so the job's subnets cannot be "
        "chosen; check the zone is enabled for the account (aws ec2 describe-availability-zones "
        "--all-availability-zones) and launch again\n"
    )
    assert plane.put_requests == [] and plane.calls_to("CreateTrainingJob") == []


def test_a_plan_of_another_instance_type_is_refused_before_anything_is_uploaded(
    plane, capsys
) -> None:
    """Review 23a, finding 6: an adopted or resized plan that does not hold what the job
    asks is named before the PutObject, not left to CreateTrainingJob."""
    plane.plans.pop(PLAN)
    offering = plane.add_offering(
        "tpo-micro-tj-p4d",
        zones=["us-east-1a"],
        start=T0,
        fee="1000.00",
        instance_type="ml.p4d.24xlarge",
        target_resources=["training-job"],
    )
    plane.add_plan(PLAN, offering, statuses=["Active"])
    assert launch("micro-sft", "--run") == 2
    assert capsys.readouterr().err == (
        f"novapod launch: training plan micro-tj ({PLAN}) holds 4 x ml.p4d.24xlarge, and job "
        "micro-sft asks for 2 x ml.p5.48xlarge; change the job's instance type or replicas "
        "to what the plan holds, or its plan\n"
    )
    assert plane.put_requests == [] and plane.calls_to("CreateTrainingJob") == []
