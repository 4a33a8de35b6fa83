"""`novapod status` of a config with a job on SageMaker training jobs beside the HyperPod
one: its runs from ListTrainingJobs (NameContains its name stem, every page; another
job whose name starts the same left out) and DescribeTrainingJob (status, secondary
status, the plan it runs on, billable seconds), in the text and the JSON report (schema 5),
and the training-job plan's instances counted as running that job."""

from __future__ import annotations

from datetime import timedelta

import boto3

from novapod.nova import training_jobs as tj
from tests.handlers.status_world import (
    ACCOUNT,
    CONFIG,
    NOW,
    PLAN_START,
    StatusWorld,
    status_kube,
    status_world,
    write_config,
)

__all__ = ["status_kube", "status_world"]  # fixtures

TJ_PLAN = "team-tj"
TJ_PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/{TJ_PLAN}"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/novapod-dev-training-jobs"
IMAGE = "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-fine-tune-repo:SM-TJ-SFT-latest"
TEXT = CONFIG.replace(
    "capacity:\n",
    """\
  - name: micro-sft
    model: micro
    technique: sft-lora
    runs_on: training-job
    plan: tj
    replicas: 2
    runs: 2
    hours_per_run: 10
    data: {train: sft/micro-train.jsonl}
capacity:
""",
).replace(
    "eks: {}\n",
    f"""\
    - name: tj
      existing_arn: {TJ_PLAN_ARN}
      target_resources: [training-job]
      instance_type: ml.p5.48xlarge
      instance_count: 2
eks: {{}}
""",
)
# The names `novapod launch` gives the job's runs (pinned: training_jobs.training_job_name).
RUN_1 = "novapod-dev--micro-sft-1"
RUN_2 = "novapod-dev--micro-sft-2"
assert [tj.training_job_name("novapod-dev", "micro-sft", run) for run in (1, 2)] == [RUN_1, RUN_2]
# Another job's name that NameContains "novapod-dev--micro-sft" matches too.
OTHER = "novapod-dev--micro-sftx-1"


def start(world: StatusWorld, name: str, *, plan: str | None = TJ_PLAN_ARN) -> None:
    resources = {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2}
    if plan:
        resources["TrainingPlanArn"] = plan
    boto3.client("sagemaker").create_training_job(
        TrainingJobName=name,
        RoleArn=ROLE,
        AlgorithmSpecification={"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        OutputDataConfig={"S3OutputPath": "s3://novapod-dev-artifacts/nova/dev/micro-sft/"},
        ResourceConfig=resources,
        StoppingCondition={"MaxRuntimeInSeconds": 36000},
    )


def training_world(world: StatusWorld, tmp_path) -> StatusWorld:
    world.path, world.plan, world.extension = write_config(tmp_path, TEXT)
    world.healthy()
    offering = world.plane.add_offering(
        "tpo-team-tj",
        zones=["us-east-1a"],
        start=PLAN_START,
        fee="9000.00",
        instance_count=2,
        duration_hours=240,
        target_resources=["training-job"],
    )
    world.plane.add_plan(TJ_PLAN, offering, statuses=["Active"])
    world.plane.set_plan_counts(TJ_PLAN, available=0, in_use=2, unhealthy=0)
    jobs = world.plane.training_jobs
    jobs.trust_role(ROLE)
    jobs.page_size = 1  # every job on its own page: the report must follow NextToken
    # Run 1 ran 9 h and completed; run 2 trains now; OTHER is another job's.
    clock = [PLAN_START + timedelta(hours=1)]
    world.plane.now = lambda: clock[0]
    start(world, RUN_1)
    jobs.script_statuses(RUN_1, [("InProgress", "Training"), ("Completed", "Completed")])
    boto3.client("sagemaker").describe_training_job(TrainingJobName=RUN_1)
    clock[0] += timedelta(hours=9)
    boto3.client("sagemaker").describe_training_job(TrainingJobName=RUN_1)
    clock[0] = NOW - timedelta(hours=2)
    start(world, RUN_2)
    jobs.script_statuses(RUN_2, [("InProgress", "Training")])
    boto3.client("sagemaker").describe_training_job(TrainingJobName=RUN_2)
    start(world, OTHER, plan=None)
    world.plane.now = lambda: NOW
    return world


def test_training_job_runs_with_their_plan_in_the_json_report(status_world, tmp_path) -> None:
    world = training_world(status_world, tmp_path)
    _, document = world.json()
    assert document["schema_version"] == 5
    jobs = {j["name"]: j for j in document["jobs"]["items"]}
    assert jobs["sft"]["runs_on"] == "hyperpod"
    assert all(r["training_job"] is None for r in jobs["sft"]["runs"])
    micro = jobs["micro-sft"]
    assert (micro["runs_on"], micro["plan"], micro["state"]) == ("training-job", "tj", "running")
    assert micro["counts"] == {
        "succeeded": 1, "running": 1, "failed": 0, "unknown": 0, "not_started": 0,
    }  # fmt: skip
    assert micro["runs"] == [
        {
            "name": RUN_1,
            "state": "succeeded",
            "phase": "Completed",
            "start": "2027-07-09T13:00:00Z",
            "end": "2027-07-09T22:00:00Z",
            "output": None,
            "message": None,
            "training_job": {
                "status": "Completed",
                "secondary_status": "Completed",
                "plan_arn": TJ_PLAN_ARN,
                "instance_type": "ml.p5.48xlarge",
                "instance_count": 2,
                "billable_seconds": 9 * 3600,
            },
        },
        {
            "name": RUN_2,
            "state": "running",
            "phase": "Training",
            "start": "2027-07-10T10:00:00Z",
            "end": None,
            "output": None,
            "message": None,
            "training_job": {
                "status": "InProgress",
                "secondary_status": "Training",
                "plan_arn": TJ_PLAN_ARN,
                "instance_type": "ml.p5.48xlarge",
                "instance_count": 2,
                "billable_seconds": None,
            },
        },
    ]
    # The plan's two instances run micro-sft's second run: not idle.
    (tj_plan,) = [p for p in document["plans"] if p["name"] == "tj"]
    assert tj_plan["instances"]["running_jobs"] == 2
    assert ("plan-idle", "plan tj") not in [
        (a["kind"], a["subject"]) for a in document["attention"]
    ]
    # One listing per page (page_size 1: RUN_1, RUN_2, OTHER), a describe per run kept.
    lists = world.plane.calls_to("ListTrainingJobs")
    assert [c.get("NameContains") for c in lists] == ["novapod-dev--micro-sft"] * 3
    assert [c.get("NextToken") for c in lists] == [None, "1", "2"]
    described = [c["TrainingJobName"] for c in world.plane.calls_to("DescribeTrainingJob")]
    assert described[-2:] == [RUN_1, RUN_2] and OTHER not in described


def test_the_text_report_shows_the_training_jobs_beside_the_hyperpod_runs(
    status_world, tmp_path
) -> None:
    world = training_world(status_world, tmp_path)
    _, out, err = world.run()
    assert err == ""
    assert (
        "  training jobs (micro-sft): runs as SageMaker listed them (ListTrainingJobs, which "
        "may not show a job started seconds ago)\n"
    ) in out
    lines = [line.strip() for line in out.splitlines()]
    (first,) = [line for line in lines if line.startswith(RUN_1)]
    assert first.split()[1:4] == ["micro-sft", "succeeded", "Completed"]
    assert first.endswith(
        "training job Completed, 2 x ml.p5.48xlarge on plan team-tj, 32400 s billed"
    )
    (second,) = [line for line in lines if line.startswith(RUN_2)]
    assert second.endswith("training job InProgress, 2 x ml.p5.48xlarge on plan team-tj")
    assert not any(line.startswith(OTHER) for line in lines)
