"""The fake's SageMaker training jobs, read by real boto3 clients: the service's own rules
on top of botocore's model, both the accepting and the refusing answers, in their words.
Every answer fits botocore's output shapes (the `world` fixture asserts no violation),
but for the one deviation the real service is known to make (a Nova job's ModelArtifacts).
"""

from __future__ import annotations

import io
import json
import tarfile
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.fakes.iam import Principal, Statement
from tests.handlers.world import T0, World

ONE_ATTEMPT = Config(retries={"mode": "standard", "total_max_attempts": 1})
ACCOUNT = "123456789012"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/novapod-dev-training-job"
IMAGE = "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-fine-tune-repo:SM-TJ-SFT-latest"
PLAN = "novapod-dev-tj-p5"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/{PLAN}"
JOB = "lite-sft-k3j9x"
JOB_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/{JOB}"
OUTPUT = "s3://novapod-dev-artifacts/nova/nova-lite/lite-sft"


def request(**overrides: Any) -> dict[str, Any]:
    """A Nova SFT job on the plan, in two subnets (what a launch sends); an override of
    None removes the member."""
    params: dict[str, Any] = {
        "TrainingJobName": JOB,
        "RoleArn": ROLE,
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        "HyperParameters": {
            "base_model": "nova-lite/prod",
            "sagemaker_recipe_local_path": "/opt/ml/input/data/recipe/recipe.yaml",
        },
        "InputDataConfig": [
            {
                "ChannelName": "recipe",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": "s3://novapod-dev-artifacts/recipes/abc123/",
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            },
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "Converse",
                        "S3Uri": "s3://novapod-dev-data/train.jsonl",
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
            },
        ],
        "OutputDataConfig": {"S3OutputPath": OUTPUT},
        "ResourceConfig": {
            "InstanceType": "ml.p5.48xlarge",
            "InstanceCount": 4,
            "VolumeSizeInGB": 200,
            "TrainingPlanArn": PLAN_ARN,
        },
        "VpcConfig": {"Subnets": ["subnet-0a", "subnet-0b1"], "SecurityGroupIds": ["sg-0jobs"]},
        "StoppingCondition": {"MaxRuntimeInSeconds": 172800},
        "Tags": [{"Key": "novapod:environment", "Value": "dev"}],
    }
    params.update(overrides)
    return {k: v for k, v in params.items() if v is not None}


def resources(**overrides: Any) -> dict[str, Any]:
    config = {**request()["ResourceConfig"], **overrides}
    return {k: v for k, v in config.items() if v is not None}


@pytest.fixture
def sagemaker(world: World) -> Any:
    """A training-job plan of 4 x p5 (Active), the job role trusted by SageMaker."""
    offering = world.plane.add_offering(
        "tpo-jobs",
        zones=["us-east-1a"],
        start=T0 + timedelta(days=1),
        fee="1000.00",
        target_resources=["training-job"],
    )
    world.plane.add_plan(PLAN, offering, statuses=["Active"])
    world.plane.training_jobs.trust_role(ROLE)
    return boto3.client("sagemaker", config=ONE_ATTEMPT)


def refusal(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call(*args, **kwargs)
    error = caught.value.response["Error"]
    return f"{error['Code']}: {error['Message']}"


# --- CreateTrainingJob --------------------------------------------------------------------


def test_a_job_is_created_on_its_plan_and_described_as_requested(
    world: World, sagemaker: Any
) -> None:
    sent = request()
    assert sagemaker.create_training_job(**sent)["TrainingJobArn"] == JOB_ARN
    assert world.plane.training_jobs.request(JOB) == sent  # stored as received
    described = sagemaker.describe_training_job(TrainingJobName=JOB)
    for member in (
        "AlgorithmSpecification",
        "HyperParameters",
        "InputDataConfig",
        "OutputDataConfig",
        "ResourceConfig",
        "VpcConfig",
        "StoppingCondition",
        "RoleArn",
    ):
        assert described[member] == sent[member], member
    assert described["ResourceConfig"]["TrainingPlanArn"] == PLAN_ARN
    assert (described["TrainingJobName"], described["TrainingJobArn"]) == (JOB, JOB_ARN)
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == (
        "InProgress",
        "Starting",
    )
    assert described["CreationTime"] == T0
    assert "Tags" not in described and "ModelArtifacts" not in described
    assert (described["EnableNetworkIsolation"], described["EnableManagedSpotTraining"]) == (
        False,
        False,
    )


def test_the_arn_lower_cases_the_name_and_a_taken_name_starts_nothing(
    world: World, sagemaker: Any
) -> None:
    arn = sagemaker.create_training_job(**request(TrainingJobName="Lite-SFT-1"))["TrainingJobArn"]
    assert arn == f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/lite-sft-1"
    taken = (
        "ResourceInUse: Training job names must be unique within an AWS account and region, "
        "and a training job with this name already exists (arn:aws:sagemaker:us-east-1:"
        f"{ACCOUNT}:training-job/lite-sft-1)"
    )
    for name in ("Lite-SFT-1", "lite-sft-1"):
        assert refusal(sagemaker.create_training_job, **request(TrainingJobName=name)) == taken
    assert list(world.plane.training_jobs.jobs) == ["lite-sft-1"]
    assert sagemaker.describe_training_job(TrainingJobName="lite-sft-1")["TrainingJobName"] == (
        "Lite-SFT-1"
    )


def test_names_and_roles_are_checked_against_the_model(world: World, sagemaker: Any) -> None:
    assert refusal(sagemaker.create_training_job, **request(TrainingJobName="lite_sft")) == (
        "ValidationException: 1 validation error detected: Value 'lite_sft' at "
        "'trainingJobName' failed to satisfy constraint: Member must satisfy regular "
        "expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"
    )
    assert "Member must have length less than or equal to 63" in refusal(
        sagemaker.create_training_job, **request(TrainingJobName="a" * 64)
    )
    not_a_role = f"arn:aws:iam::{ACCOUNT}:user/alice"
    assert refusal(sagemaker.create_training_job, **request(RoleArn=not_a_role)) == (
        f"ValidationException: 1 validation error detected: Value '{not_a_role}' at "
        "'roleArn' failed to satisfy constraint: Member must satisfy regular expression "
        "pattern: arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+"
    )
    assert world.plane.training_jobs.jobs == {}


def test_a_role_sagemaker_cannot_assume_is_refused(world: World, sagemaker: Any) -> None:
    other = f"arn:aws:iam::{ACCOUNT}:role/not-for-sagemaker"
    assert refusal(sagemaker.create_training_job, **request(RoleArn=other)) == (
        f"ValidationException: Could not assume role {other}. Please ensure that the role "
        "exists and allows principal 'sagemaker.amazonaws.com' to assume the role."
    )
    assert world.plane.training_jobs.jobs == {}


def test_vpc_config_is_bounded_as_the_model_says(world: World, sagemaker: Any) -> None:
    subnets = [f"subnet-{i:02d}" for i in range(17)]
    many = {"Subnets": subnets, "SecurityGroupIds": ["sg-0jobs"]}
    assert "at 'vpcConfig.subnets' failed to satisfy constraint: Member must have length " in (
        refusal(sagemaker.create_training_job, **request(VpcConfig=many))
    )
    groups = {"Subnets": ["subnet-0a"], "SecurityGroupIds": [f"sg-{i}" for i in range(6)]}
    assert "at 'vpcConfig.securityGroupIds' failed to satisfy constraint" in refusal(
        sagemaker.create_training_job, **request(VpcConfig=groups)
    )
    sixteen = {"Subnets": subnets[:16], "SecurityGroupIds": ["sg-0jobs"]}
    sagemaker.create_training_job(**request(VpcConfig=sixteen))
    assert sagemaker.describe_training_job(TrainingJobName=JOB)["VpcConfig"] == sixteen


@pytest.mark.parametrize(
    ("plan_status", "accepted"),
    [("Active", True), ("Scheduled", True), ("Pending", False), ("Expired", False)],
)
def test_the_plan_must_be_scheduled_or_active(
    world: World, sagemaker: Any, plan_status: str, accepted: bool
) -> None:
    world.plane.script_statuses(PLAN, [plan_status])
    if accepted:
        sagemaker.create_training_job(**request())
        return
    assert refusal(sagemaker.create_training_job, **request()) == (
        f"ValidationException: Training plan {PLAN} is {plan_status}; a training job can use "
        "a plan that is Scheduled or Active."
    )


def test_the_plan_must_exist_be_for_training_jobs_and_sell_what_the_job_asks(
    world: World, sagemaker: Any
) -> None:
    hyperpod = world.plane.add_plan("rig-plan", world.plane.offerings[0], statuses=["Active"])
    unknown = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/nobody-bought-this"
    cases = [
        (
            resources(TrainingPlanArn=unknown),
            f"ResourceNotFound: Training plan {unknown} not found.",
        ),
        (
            resources(TrainingPlanArn=hyperpod),
            "ValidationException: Training plan rig-plan is for hyperpod-cluster, not "
            "training-job.",
        ),
        (
            resources(InstanceType="ml.p4d.24xlarge"),
            "ValidationException: The instance type ml.p4d.24xlarge does not match training "
            f"plan {PLAN}'s instance type ml.p5.48xlarge.",
        ),
        (
            resources(InstanceCount=5),
            f"ValidationException: The instance count 5 exceeds the 4 instances of training "
            f"plan {PLAN}.",
        ),
    ]
    for config, message in cases:
        assert refusal(sagemaker.create_training_job, **request(ResourceConfig=config)) == message
    assert world.plane.training_jobs.jobs == {}
    sagemaker.create_training_job(**request(ResourceConfig=resources(InstanceCount=1)))


def test_on_demand_jobs_need_no_plan(world: World, sagemaker: Any) -> None:
    on_demand = resources(InstanceType="ml.r5.24xlarge", InstanceCount=1, TrainingPlanArn=None)
    sagemaker.create_training_job(**request(TrainingJobName="distill-1", ResourceConfig=on_demand))
    described = sagemaker.describe_training_job(TrainingJobName="distill-1")
    assert "TrainingPlanArn" not in described["ResourceConfig"]


def test_an_ebs_only_instance_needs_a_volume_size(world: World, sagemaker: Any) -> None:
    """As botocore's VolumeSizeInGB says for an instance without instance storage."""
    config = resources(InstanceType="ml.r5.24xlarge", InstanceCount=1, TrainingPlanArn=None)
    del config["VolumeSizeInGB"]
    assert refusal(sagemaker.create_training_job, **request(ResourceConfig=config)) == (
        "ValidationException: ml.r5.24xlarge has no instance storage: "
        "ResourceConfig.VolumeSizeInGB is required."
    )
    assert world.plane.training_jobs.jobs == {}


def test_what_the_fake_does_not_model_is_not_answered_as_if_unsent(
    world: World, sagemaker: Any
) -> None:
    group = {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1, "InstanceGroupName": "g"}
    cases = [
        (
            request(ResourceConfig=resources(InstanceGroups=[group])),
            "NotImplemented: The fake does not serve ResourceConfig.InstanceGroups.",
        ),
        (
            request(ResourceConfig=None),
            "NotImplemented: The fake does not serve jobs without a ResourceConfig.",
        ),
        (
            request(AlgorithmSpecification={"AlgorithmName": "algo", "TrainingInputMode": "File"}),
            "NotImplemented: The fake serves only jobs with an "
            "AlgorithmSpecification.TrainingImage.",
        ),
        (
            request(ResourceConfig=resources(InstanceCount=None)),
            "ValidationException: ResourceConfig.InstanceType and ResourceConfig.InstanceCount "
            "are required without InstanceGroups.",
        ),
    ]
    for params, message in cases:
        assert refusal(sagemaker.create_training_job, **params) == message
    assert world.plane.training_jobs.jobs == {}


# --- DescribeTrainingJob ------------------------------------------------------------------


def test_an_unknown_job_is_a_validation_exception(world: World, sagemaker: Any) -> None:
    assert refusal(sagemaker.describe_training_job, TrainingJobName="nope") == (
        "ValidationException: Requested resource not found."
    )
    assert refusal(sagemaker.stop_training_job, TrainingJobName="nope") == (
        "ValidationException: Requested resource not found."
    )


def test_a_scripted_job_waits_for_capacity_trains_and_completes(
    world: World, sagemaker: Any
) -> None:
    sagemaker.create_training_job(**request())
    jobs = world.plane.training_jobs
    jobs.script_statuses(
        JOB,
        [
            ("InProgress", "Pending"),
            ("InProgress", "Downloading"),
            ("InProgress", "Training"),
            ("Completed", "Completed"),
        ],
    )
    seen = []
    for minutes in range(5):
        world.clock.moment = T0 + timedelta(minutes=10 * minutes)
        described = sagemaker.describe_training_job(TrainingJobName=JOB)
        seen.append((described["TrainingJobStatus"], described["SecondaryStatus"]))
    assert seen == [
        ("InProgress", "Pending"),
        ("InProgress", "Downloading"),
        ("InProgress", "Training"),
        ("Completed", "Completed"),
        ("Completed", "Completed"),  # the last one stays
    ]
    assert described["TrainingStartTime"] == T0 + timedelta(minutes=10)  # Downloading
    assert described["TrainingEndTime"] == T0 + timedelta(minutes=30)
    assert described["LastModifiedTime"] == T0 + timedelta(minutes=30)
    assert [
        (t["Status"], t["StartTime"], t.get("EndTime"))
        for t in described["SecondaryStatusTransitions"]
    ] == [
        ("Pending", T0, T0 + timedelta(minutes=10)),
        ("Downloading", T0 + timedelta(minutes=10), T0 + timedelta(minutes=20)),
        ("Training", T0 + timedelta(minutes=20), T0 + timedelta(minutes=30)),
        ("Completed", T0 + timedelta(minutes=30), None),
    ]
    # A Nova job's artifacts go to escrow: no ModelArtifacts (aws/sagemaker-python-sdk#6091).
    assert "ModelArtifacts" not in described


def test_a_failed_job_gives_its_reason(world: World, sagemaker: Any) -> None:
    sagemaker.create_training_job(**request())
    reason = "CapacityError: Unable to provision requested ML compute capacity."
    world.plane.training_jobs.script_statuses(JOB, [("Failed", "Failed", reason)])
    described = sagemaker.describe_training_job(TrainingJobName=JOB)
    assert (described["TrainingJobStatus"], described["FailureReason"]) == ("Failed", reason)
    assert described["SecondaryStatusTransitions"][-1]["StatusMessage"] == reason
    assert "TrainingStartTime" not in described and described["TrainingEndTime"] == T0


def test_status_scripts_hold_only_documented_pairs(world: World) -> None:
    jobs = world.plane.training_jobs
    with pytest.raises(ValueError, match="SecondaryStatus 'Training' is not one of 'Completed'"):
        jobs.script_statuses(JOB, [("Completed", "Training")])
    with pytest.raises(ValueError, match="'LaunchingMLInstances' is not one of 'InProgress'"):
        jobs.script_statuses(JOB, [("InProgress", "LaunchingMLInstances")])
    with pytest.raises(ValueError, match="at least one status"):
        jobs.script_statuses(JOB, [])


def test_a_generic_job_shows_its_model_archive(world: World, sagemaker: Any) -> None:
    sagemaker.create_training_job(**request(OutputDataConfig={"S3OutputPath": OUTPUT + "/"}))
    world.plane.training_jobs.complete(JOB, model_artifacts=True)
    described = sagemaker.describe_training_job(TrainingJobName=JOB)
    assert described["ModelArtifacts"] == {
        "S3ModelArtifacts": f"{OUTPUT}/{JOB}/output/model.tar.gz"
    }


def test_a_completed_nova_job_writes_its_manifest_and_results_to_s3(
    world: World, sagemaker: Any
) -> None:
    sagemaker.create_training_job(**request())
    jobs = world.plane.training_jobs
    results = jobs.evaluation_files("eval-run", {"all": {"accuracy": 0.5}}, "20300101_000000")
    uri = jobs.complete(JOB, results)
    assert uri == f"{OUTPUT}/{JOB}/output/output.tar.gz"
    body = boto3.client("s3").get_object(
        Bucket="novapod-dev-artifacts", Key=f"nova/nova-lite/lite-sft/{JOB}/output/output.tar.gz"
    )["Body"]
    with tarfile.open(fileobj=io.BytesIO(body.read()), mode="r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert sorted(members) == [
        "eval-run/eval_results/results_20300101_000000.json",
        "manifest.json",
    ]
    checkpoint = json.loads(members["manifest.json"])["checkpoint_s3_bucket"]
    assert checkpoint.startswith(f"s3://customer-escrow-{ACCOUNT}-smtj-")
    assert checkpoint.endswith(f"/{JOB}/stepID")
    assert json.loads(members["eval-run/eval_results/results_20300101_000000.json"]) == {
        "results": {"all": {"accuracy": 0.5}}
    }
    assert sagemaker.describe_training_job(TrainingJobName=JOB)["TrainingJobStatus"] == (
        "Completed"
    )


# --- StopTrainingJob ----------------------------------------------------------------------


def test_stopping_a_running_job_stops_it_and_a_stopped_one_is_refused(
    world: World, sagemaker: Any
) -> None:
    sagemaker.create_training_job(**request())
    sagemaker.stop_training_job(TrainingJobName=JOB)
    shown = [
        sagemaker.describe_training_job(TrainingJobName=JOB)["TrainingJobStatus"] for _ in range(3)
    ]
    assert shown == ["Stopping", "Stopped", "Stopped"]
    assert refusal(sagemaker.stop_training_job, TrainingJobName=JOB) == (
        "ValidationException: The request was rejected because the training job is in status "
        "Stopped."
    )


# --- ListTrainingJobs ---------------------------------------------------------------------


def _jobs(world: World, sagemaker: Any) -> None:
    """Four jobs a minute apart: a (InProgress), b (Completed), c (Failed), d (InProgress,
    on demand)."""
    for index, name in enumerate(["job-a", "job-b", "job-c", "job-d"]):
        world.clock.moment = T0 + timedelta(minutes=index)
        config = resources(TrainingPlanArn=None) if name == "job-d" else resources(InstanceCount=1)
        sagemaker.create_training_job(**request(TrainingJobName=name, ResourceConfig=config))
    world.plane.training_jobs.script_statuses("job-b", [("Completed", "Completed")])
    world.plane.training_jobs.script_statuses("job-c", [("Failed", "Failed", "boom")])


def names(answer: dict[str, Any]) -> list[str]:
    return [s["TrainingJobName"] for s in answer["TrainingJobSummaries"]]


def test_list_filters_sorts_and_pages(world: World, sagemaker: Any) -> None:
    _jobs(world, sagemaker)
    assert names(sagemaker.list_training_jobs()) == ["job-a", "job-b", "job-c", "job-d"]
    assert names(sagemaker.list_training_jobs(SortBy="Name", SortOrder="Descending")) == [
        "job-d",
        "job-c",
        "job-b",
        "job-a",
    ]
    assert names(sagemaker.list_training_jobs(NameContains="JOB-C")) == ["job-c"]
    assert names(sagemaker.list_training_jobs(StatusEquals="InProgress")) == ["job-a", "job-d"]
    assert names(sagemaker.list_training_jobs(TrainingPlanArnEquals=PLAN_ARN)) == [
        "job-a",
        "job-b",
        "job-c",
    ]
    after = sagemaker.list_training_jobs(CreationTimeAfter=T0 + timedelta(seconds=90))
    assert names(after) == ["job-c", "job-d"]
    first = sagemaker.list_training_jobs(MaxResults=3)
    rest = sagemaker.list_training_jobs(MaxResults=3, NextToken=first["NextToken"])
    assert (names(first), names(rest), "NextToken" in rest) == (
        ["job-a", "job-b", "job-c"],
        ["job-d"],
        False,
    )
    summary = sagemaker.list_training_jobs(NameContains="job-c")["TrainingJobSummaries"][0]
    assert (summary["TrainingJobStatus"], summary["SecondaryStatus"]) == ("Failed", "Failed")
    assert summary["TrainingPlanArn"] == PLAN_ARN


def test_list_takes_the_page_before_filtering_by_status(world: World, sagemaker: Any) -> None:
    # "the MaxResults number of training jobs are first retrieved ignoring the StatusEquals
    # parameter and then they are filtered by the StatusEquals parameter" (API reference).
    _jobs(world, sagemaker)
    page = sagemaker.list_training_jobs(MaxResults=2, StatusEquals="InProgress")
    assert (names(page), page["NextToken"]) == (["job-a"], "2")
    rest = sagemaker.list_training_jobs(
        MaxResults=2, StatusEquals="InProgress", NextToken=page["NextToken"]
    )
    assert names(rest) == ["job-d"]


# --- IAM ------------------------------------------------------------------------------------

LAUNCHER = "novapod-dev-launcher"


def launcher(*removed: str, **conditions: Any) -> Principal:
    """Who may start the environment's jobs: each permission a statement of its own."""
    statements = [
        Statement(
            "Allow",
            ("sagemaker:CreateTrainingJob",),
            (f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/lite-sft-*",),
            conditions.get("create", {}),
            sid="CreateJobs",
        ),
        Statement("Allow", ("sagemaker:CreateTrainingJob",), (PLAN_ARN,), sid="UseThePlan"),
        Statement(
            "Allow",
            ("sagemaker:AddTags",),
            (f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/lite-sft-*",),
            {"StringEquals": {"sagemaker:TaggingAction": ("CreateTrainingJob",)}},
            sid="TagOnCreate",
        ),
        Statement(
            "Allow",
            ("iam:PassRole",),
            (ROLE,),
            {"StringEquals": {"iam:PassedToService": ("sagemaker.amazonaws.com",)}},
            sid="PassTheJobRole",
        ),
        Statement(
            "Allow",
            ("sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob"),
            (f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-job/lite-sft-*",),
            sid="ReadAndStop",
        ),
        Statement("Allow", ("sagemaker:ListTrainingJobs",), ("*",), sid="List"),
    ]
    return Principal(LAUNCHER, tuple(s for s in statements if s.sid not in removed))


def denied(action: str, resource: str) -> str:
    return (
        f"AccessDeniedException: User: arn:aws:sts::{ACCOUNT}:assumed-role/{LAUNCHER}/handler "
        f"is not authorized to perform: {action} on resource: {resource} because no "
        f"identity-based policy allows the {action} action"
    )


def test_the_launcher_needs_each_permission_and_nothing_starts_without_one(
    world: World, sagemaker: Any
) -> None:
    cases = [
        ("CreateJobs", denied("sagemaker:CreateTrainingJob", JOB_ARN)),
        ("UseThePlan", denied("sagemaker:CreateTrainingJob", PLAN_ARN)),
        ("TagOnCreate", denied("sagemaker:AddTags", JOB_ARN)),
        ("PassTheJobRole", denied("iam:PassRole", ROLE)),
    ]
    for sid, message in cases:
        world.plane.act_as(launcher(sid))
        assert refusal(sagemaker.create_training_job, **request()) == message, sid
        assert world.plane.training_jobs.jobs == {}
    world.plane.act_as(launcher())
    sagemaker.create_training_job(**request())
    sagemaker.describe_training_job(TrainingJobName=JOB)
    assert names(sagemaker.list_training_jobs()) == [JOB]
    sagemaker.stop_training_job(TrainingJobName=JOB)
    world.plane.act_as(launcher("ReadAndStop"))
    assert refusal(sagemaker.describe_training_job, TrainingJobName=JOB) == denied(
        "sagemaker:DescribeTrainingJob", JOB_ARN
    )
    world.plane.act_as(None)


def test_without_tags_no_tagging_permission_is_asked_and_on_demand_no_plan(
    world: World, sagemaker: Any
) -> None:
    world.plane.act_as(launcher("TagOnCreate", "UseThePlan"))
    sagemaker.create_training_job(
        **request(Tags=None, ResourceConfig=resources(TrainingPlanArn=None))
    )
    world.plane.act_as(None)


def test_pass_role_is_asked_for_sagemaker_only(world: World, sagemaker: Any) -> None:
    principal = launcher("PassTheJobRole")
    glue_only = Statement(
        "Allow",
        ("iam:PassRole",),
        (ROLE,),
        {"StringEquals": {"iam:PassedToService": ("glue.amazonaws.com",)}},
    )
    world.plane.act_as(Principal(LAUNCHER, (*principal.statements, glue_only)))
    assert refusal(sagemaker.create_training_job, **request()) == denied("iam:PassRole", ROLE)
    world.plane.act_as(None)


def test_conditions_on_the_requests_subnets_types_and_tags_are_evaluated(
    world: World, sagemaker: Any
) -> None:
    ours = {
        "ForAllValues:StringEquals": {
            "sagemaker:VpcSubnets": ("subnet-0a", "subnet-0b1", "subnet-0b2"),
            "sagemaker:InstanceTypes": ("ml.p5.48xlarge", "ml.r5.24xlarge"),
        },
        "StringEquals": {"aws:RequestTag/novapod:environment": ("dev",)},
        "Null": {"sagemaker:VpcSubnets": ("false",)},
    }
    world.plane.act_as(launcher(create=ours))
    outside = {"Subnets": ["subnet-0a", "subnet-0x"], "SecurityGroupIds": ["sg-0jobs"]}
    message = denied("sagemaker:CreateTrainingJob", JOB_ARN)
    assert refusal(sagemaker.create_training_job, **request(VpcConfig=outside)) == message
    assert refusal(sagemaker.create_training_job, **request(VpcConfig=None)) == message
    other_tag = [{"Key": "novapod:environment", "Value": "prod"}]
    assert refusal(sagemaker.create_training_job, **request(Tags=other_tag)) == message
    sagemaker.create_training_job(**request())
    # A key the fake does not compute never lets an Allow through.
    remote = {"StringEquals": {"sagemaker:EnableRemoteDebug": ("false",)}}
    world.plane.act_as(launcher(create=remote))
    assert refusal(
        sagemaker.create_training_job, **request(TrainingJobName="lite-sft-2")
    ) == denied("sagemaker:CreateTrainingJob", JOB_ARN.replace(JOB, "lite-sft-2"))
    world.plane.act_as(None)
