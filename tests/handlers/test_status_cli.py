"""`novapod status CONFIG`: the deployed environment against the config, read with the
caller's credentials from the fake control plane (SageMaker, CloudFormation, DynamoDB,
validated against botocore's model): every plan status, group status and node status,
idle capacity, plans ending, unsettled purchases and drift, in text, JSON and exit status.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from novapod import cli
from tests import json_schemas
from tests.conftest import ROOT
from tests.fakes.service_model import service_model
from tests.handlers.status_world import (
    ADOPTED,
    ADOPTED_ARN,
    ARTIFACTS,
    CLUSTER,
    MARKER_PATH,
    NOW,
    PLAN_START,
    RUN_1,
    RUN_2,
    SCHEMA,
    TABLE,
    StatusWorld,
    ledger_item,
    pod,
    pytorchjob,
    status_kube,
    status_world,
)
from tests.json_schemas import assert_closed

__all__ = ["status_kube", "status_world"]  # fixtures

MODEL = service_model("sagemaker")


@pytest.fixture(autouse=True)
def _answers_fit_the_model(status_world: StatusWorld) -> Any:
    yield
    assert status_world.plane.violations == []


def hyperpod_deploy(world: StatusWorld) -> str:
    return f"npx cdk deploy -c config={world.path} novapod-dev-hyperpod"


def test_a_healthy_environment_exits_0_with_a_table_per_section(status_world) -> None:
    world = status_world.healthy()
    status, out, err = world.run()
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "novapod status: environment dev (us-east-1) at 2027-07-10T12:00:00Z: healthy",
        "",
        "Training plans",
        "  plan   status  window (UTC)                          ends       "
        "instances total/free/used/bad  fee paid      extensions           notes",
        "  main   Active  2027-07-09 12:00 -> 2027-07-16 12:00  in 6d 0h   "
        "4/0/4/0                        55000.00 USD  +24 h (9000.00 USD)  ok",
        "  spare  Active  2027-07-09 12:00 -> 2027-07-23 12:00  in 13d 0h  "
        "2/0/2/0                        30000.00 USD  -                    ok",
        "",
        "Reserved instance-hours (in use: the scheduled check's samples)",
        "  plan   reserved so far  sampled     in use     share  notes",
        "  main   96 inst-h        24 of 24 h  96 inst-h  100%   ok",
        "  spare  48 inst-h        24 of 24 h  48 inst-h  100%   ok",
        "",
        "Instance groups of HyperPod cluster novapod-dev: InService",
        "  group      kind        type            nodes current/desired  running/bad/other  "
        "status     plan   plan status  notes",
        "  nova-lite  restricted  ml.p5.48xlarge  4/4                    4/0/0              "
        "InService  main   Active       ok",
        "  spare-rig  restricted  ml.p5.48xlarge  2/2                    2/0/0              "
        "InService  spare  Active       ok",
        "  system     standard    ml.m5.2xlarge   1/1                    1/0/0              "
        "InService  -      -            ok",
        "",
        "EKS cluster novapod-dev: ACTIVE, Kubernetes 1.34 (the config's)",
        # The scientists' Role is the jobs' namespace's: the marker is a note, not an error.
        "  bootstrap marker kube-system/novapod-hyperpod-dependencies not read: HTTP 403, RBAC "
        "does not let your role get ConfigMaps in namespace kube-system (configmaps "
        '"novapod-hyperpod-dependencies" is forbidden: User "novapod-scientist" cannot get '
        'resource "configmaps" in API group "" in the namespace "kube-system"); the '
        "scientists' access is to the jobs' namespace only, a role in eks.admin_principals "
        "may read it",
        "",
        "Jobs in namespace nova-jobs (runs from the cluster and S3)",
        "  job  plan  runs done/running/failed/left  state    planned (UTC)                    "
        "     projected end     schedule  notes",
        "  sft  main  1/1/0/0                        running  2027-07-09 12:00 -> 2027-07-11 "
        "12:00  2027-07-11 12:00  on time   ok",
        "",
        "Runs",
        "  run        job  state      phase      started           ended             notes",
        "  sft-a1b2c  sft  succeeded  Succeeded  2027-07-09 12:10  2027-07-10 11:50",
        "  sft-d3e4f  sft  running    Running    2027-07-10 12:00  -",
    ]


def test_the_json_is_the_contract(status_world) -> None:
    world = status_world.healthy()
    status, document = world.json()
    assert status == 0 and document["healthy"] is True and document["attention"] == []
    main, spare = document["plans"]
    assert {
        k: main[k] for k in ("name", "plan_name", "status", "start", "end", "hours_to_end")
    } == {
        "name": "main",
        "plan_name": world.plan,
        "status": "Active",
        "start": "2027-07-09T12:00:00Z",
        "end": "2027-07-16T12:00:00Z",  # 144 h bought and 24 h extended
        "hours_to_end": 144,
    }
    assert main["instances"] == {
        "total": 4,
        "available": 0,
        "in_use": 4,
        "unhealthy": 0,
        "running_jobs": 4,  # the four nova-lite nodes hold sft's second run
        "idle": 0,
    }
    # No job of the config runs on the adopted plan: what runs there is not seen.
    assert (spare["instances"]["running_jobs"], spare["instances"]["idle"]) == (None, 0)
    assert main["utilization"] == {
        "reserved_instance_hours": 96.0,  # 4 instances for the 24 h since the start
        "elapsed_hours": 24.0,
        "sampled_hours": 24.0,  # 288 samples, 5 minutes apart
        "coverage": 1.0,
        "in_use_instance_hours": 96.0,
        "in_use_share": 1.0,
        "first_sample": "2027-07-09T12:00:00Z",
        "period_seconds": 300,
        "note": None,
    }
    assert main["fee"] == {"amount": "55000.00", "currency": "USD", "source": "ledger"}
    assert (main["extensions"]["hours"], main["extensions"]["wanted_hours"]) == (24, 24)
    assert main["extensions"]["paid"] == [
        {"name": world.extension, "hours": 24, "amount": "9000.00", "currency": "USD"}
    ]
    # An adopted plan's fee is what SageMaker shows: the ledger never bought it.
    assert (spare["plan_name"], spare["adopted"], spare["fee"]["source"]) == (
        ADOPTED,
        True,
        "sagemaker",
    )
    lite = document["groups"][0]
    assert (lite["desired"], lite["current"], lite["plan"], lite["plan_active"]) == (
        4,
        4,
        "main",
        True,
    )
    assert document["cluster"]["status"] == "InService"
    assert document["ledger_table"] == TABLE
    jobs = document["jobs"]
    assert {k: v for k, v in jobs.items() if k != "items"} == {
        "namespace": "nova-jobs",
        "eks_cluster": CLUSTER,
        "outputs": f"s3://{ARTIFACTS}/nova/dev/",
        "kubernetes_read": True,
        "note": None,
    }
    (sft,) = jobs["items"]
    assert sft["schedule"] == {
        "verdict": "on-time",
        "planned_start": "2027-07-09T12:00:00Z",  # the plan's start, hour 0 of its schedule
        "planned_end": "2027-07-11T12:00:00Z",  # two runs of 24 h
        "projected_end": "2027-07-11T12:00:00Z",  # the second run started at hour 24
        "plan_end": "2027-07-16T12:00:00Z",
        "hours_late": None,
    }
    assert (sft["state"], sft["counts"]) == (
        "running",
        {"succeeded": 1, "running": 1, "failed": 0, "unknown": 0, "not_started": 0},
    )
    assert sft["runs"] == [
        {
            "name": RUN_1,
            "state": "succeeded",
            "phase": "Succeeded",
            "start": "2027-07-09T12:10:00Z",
            "end": "2027-07-10T11:50:00Z",
            "output": f"s3://{ARTIFACTS}/nova/dev/sft/{RUN_1}/manifest.json",
            "message": None,
            "training_job": None,  # a HyperPod run
        },
        {
            "name": RUN_2,
            "state": "running",
            "phase": "Running",
            "start": "2027-07-10T12:00:00Z",
            "end": None,
            "output": None,
            "message": None,
            "training_job": None,
        },
    ]
    assert sft["runs_on"] == "hyperpod"


def test_only_reads(status_world) -> None:
    world = status_world.healthy()
    world.run()
    calls = {(c.service, c.operation) for c in world.plane.calls}
    assert calls == {
        ("cloudformation", "DescribeStacks"),
        ("cloudformation", "DescribeStackResource"),
        ("dynamodb", "Query"),
        ("sagemaker", "DescribeTrainingPlan"),
        ("sagemaker", "DescribeTrainingPlanExtensionHistory"),
        ("sagemaker", "DescribeCluster"),
        ("sagemaker", "ListClusterNodes"),
        ("s3", "ListObjectsV2"),
        ("eks", "DescribeCluster"),
        ("monitoring", "GetMetricData"),
    }
    # One GetMetricData of each Active plan's weighted samples, from its start to now.
    reads = world.plane.calls_to("GetMetricData")
    assert [[q["MetricStat"]["Metric"] for q in r["MetricDataQueries"]] for r in reads] == [
        [
            {
                "Namespace": "novapod",
                "MetricName": name,
                "Dimensions": [
                    {"Name": "Environment", "Value": "dev"},
                    {"Name": "Plan", "Value": plan},
                ],
            }
            for name in ("InUseInstanceSeconds", "SampledSeconds", "SampledSeconds")
        ]
        for plan in ("main", "spare")
    ]
    assert {(r["StartTime"], r["EndTime"]) for r in reads} == {
        (PLAN_START.timestamp(), NOW.timestamp())
    }
    assert [
        (q["Id"], q["MetricStat"]["Stat"], q["MetricStat"]["Period"], q["MetricStat"]["Unit"])
        for q in reads[0]["MetricDataQueries"]
    ] == [
        ("inuse", "Sum", 300, "Seconds"),
        ("sampled", "Sum", 300, "Seconds"),
        ("longest", "Maximum", 300, "Seconds"),
    ]
    (query,) = world.plane.calls_to("Query")
    assert query["ConsistentRead"] is True
    assert query["ExpressionAttributeValues"] == {":env": {"S": "dev"}}
    (listing,) = world.plane.calls_to("ListObjectsV2")
    assert (listing["Bucket"], listing["Prefix"]) == (ARTIFACTS, "nova/dev/")
    (resource,) = world.plane.calls_to("DescribeStackResource")
    assert resource == {"StackName": "novapod-dev-hyperpod", "LogicalResourceId": "HyperPodCluster"}
    assert len(world.plane.calls_to("DescribeCluster")) == 2  # SageMaker's and EKS's, once each
    # The cluster's API: the bootstrap's marker (refused: a 403 for the scientists' Role),
    # then two GETs of the jobs' namespace, as their Role allows.
    assert [(r.method, r.path) for r in world.kube.requests] == [
        ("GET", MARKER_PATH),
        ("GET", "/apis/kubeflow.org/v1/namespaces/nova-jobs/pytorchjobs"),
        ("GET", "/api/v1/namespaces/nova-jobs/pods"),
    ]
    assert world.kube.bad_tokens() == []


# --- every plan status ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "start_days", "exit_status", "kinds", "note"),
    [
        ("Pending", 3, 0, [], "bought, waiting to be paid and fulfilled: awaiting payment"),
        ("Scheduled", 3, 0, [], "starts in 3d 0h"),
        ("Active", -1, 0, [], None),
        (
            "Expired",
            -10,
            4,
            [("job-at-risk", "job sft"), ("plan-expired-in-use", "group nova-lite")],
            "ended 3d 0h ago",
        ),
        ("Failed", 3, 4, [("plan-failed", "plan main")], None),
    ],
)
def test_every_plan_status(  # noqa: PLR0917 - the parameters of one case
    status_world, status, start_days, exit_status, kinds, note
) -> None:
    assert status in MODEL.shape_for("TrainingPlanStatus").enum
    world = status_world
    start = NOW + timedelta(days=start_days)
    message = "awaiting payment" if status == "Pending" else ""
    message = "payment declined" if status == "Failed" else message
    world.buy(
        world.plan, status=status, start=start, hours=144, count=4, fee="55000.00", message=message
    )
    if status != "Active":
        world.plane.set_plan_counts(world.plan, available=0, in_use=0)
    world.plane.add_extension(world.plan, 24)
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")
    active = status == "Active"
    world.cluster(lite={"CurrentCount": 4 if active else 0, "TrainingPlanStatus": status})
    if active:
        world.sft_runs()
    assert world.attention() == kinds
    code, document = world.json()
    assert code == exit_status
    main = document["plans"][0]
    assert (main["status"], main["note"]) == (status, note)
    if status in ("Pending", "Scheduled", "Failed"):
        assert main["hours_to_start"] == 72
    if status == "Failed":
        (failed,) = [a for a in document["attention"] if a["kind"] == "plan-failed"]
        assert failed["message"] == (
            f"{world.plan} is Failed (payment declined) and reserves no capacity; set retry: 1 "
            "(or one more) on capacity.training_plans[0] and approve the new name"
        )
        assert failed["command"] == f"novapod plan {world.path}"
    # The group on a plan that is not Active is not missing nodes: it waits for the plan.
    assert document["groups"][0]["plan_active"] is active


def test_a_plan_not_bought_and_not_approved_says_how_to_buy_it(status_world, tmp_path) -> None:
    world = status_world
    world.path.write_text(world.path.read_text().replace(f"approve: {world.plan}, ", "", 1))
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")
    code, document = world.json()
    main = document["plans"][0]
    assert main["status"] == "NotBought" and main["arn"] is None
    assert main["note"] == (
        f"not bought yet: approve it with purchase.approve: {world.plan} "
        f"(novapod plan {world.path} shows the price), then deploy"
    )
    # Not approved: nothing is wrong with the plan; the cluster is another matter.
    assert [d["field"] for d in document["drift"]] == ["cluster"]
    assert code == 4


def test_a_plan_approved_but_not_bought_is_drift(status_world) -> None:
    world = status_world
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")
    world.cluster(lite={"CurrentCount": 0, "TrainingPlanStatus": "NotFound"})
    code, document = world.json()
    assert code == 4
    (drift,) = [d for d in document["drift"] if d["subject"] == "plan main"]
    assert drift == {
        "subject": "plan main",
        "field": "plan",
        "config": world.plan,
        "deployed": None,
        "message": f"{world.plan} is approved in the config but not bought; a deploy of the "
        "capacity stack buys it",
        "command": f"npx cdk deploy -c config={world.path} novapod-dev-capacity",
    }
    _, out, _ = world.run()
    assert "  main   NotBought  -" in out


# --- idle, ending, unhealthy capacity -------------------------------------------------------


def test_reserved_instances_that_run_no_job_need_attention(status_world) -> None:
    """sft's first run is done and the second not launched: the four nova-lite nodes
    are in the group (in use for SageMaker) but run no job: idle, and paid for."""
    world = status_world.healthy(runs=False)
    start = NOW - timedelta(days=1)
    world.kube.add_object(
        pytorchjob(RUN_1, "Succeeded", start=start, end=start + timedelta(hours=23))
    )
    world.finished("sft", RUN_1, start=start, end=start + timedelta(hours=23))
    code, document = world.json()
    assert code == 4
    (idle,) = document["attention"]
    assert idle == {
        "kind": "plan-idle",
        "subject": "plan main",
        "message": "4 of 4 reserved instances run no job while the plan is Active (4 in its "
        "instance groups, 0 running a job); they are paid for whether or not a job runs; its "
        "jobs: sft",
        "command": f"novapod launch {world.path} sft",
    }
    main = document["plans"][0]
    assert (main["attention"], main["instances"]["running_jobs"], main["instances"]["idle"]) == (
        ["plan-idle"],
        0,
        4,
    )
    # On schedule all the same: the second run has its 24 h until the slot's end.
    assert document["jobs"]["items"][0]["schedule"]["verdict"] == "on-time"
    status, out, _ = world.run()
    assert status == 4
    assert out.splitlines()[:5] == [
        "novapod status: environment dev (us-east-1) at 2027-07-10T12:00:00Z: 1 needs attention",
        "",
        "Attention (most urgent first)",
        f"  1. plan main: {idle['message']} [plan-idle]",
        f"     next: novapod launch {world.path} sft",
    ]


def test_a_plan_whose_jobs_are_done_is_idle_with_nothing_to_launch(status_world) -> None:
    world = status_world.healthy(runs=False)
    world.sft_done(NOW - timedelta(days=3))
    _, document = world.json()
    (idle,) = document["attention"]
    assert idle["message"].endswith("its jobs: sft; every one of them is done")
    assert idle["command"] is None
    assert document["jobs"]["items"][0]["state"] == "succeeded"
    assert document["jobs"]["items"][0]["schedule"]["verdict"] == "done"


def test_a_run_holding_some_of_the_plan_leaves_the_rest_idle(status_world) -> None:
    world = status_world.healthy()
    world.drop_pods(RUN_2, keep=1)  # three workers evicted, one still holds its node
    _, document = world.json()
    (idle,) = document["attention"]
    assert idle["message"].startswith(
        "3 of 4 reserved instances run no job while the plan is Active (4 in its instance "
        "groups, 1 running a job)"
    )
    assert idle["command"] is None  # sft is running: nothing else to launch


def test_without_the_cluster_idle_is_what_no_group_uses(status_world) -> None:
    """The cluster's API refuses the caller: the runs come from S3, and a plan is idle by
    DescribeTrainingPlan's available count, as before the jobs were read."""
    world = status_world.healthy()
    world.kube.refuse(401)
    world.plane.set_plan_counts(world.plan, available=3, in_use=1)
    code, document = world.json()
    assert code == 4
    (idle,) = document["attention"]
    assert idle == {
        "kind": "plan-idle",
        "subject": "plan main",
        "message": "3 of 4 reserved instances are unused while the plan is Active (1 in use); "
        "they are paid for whether or not a job runs; its jobs: sft",
        "command": f"novapod launch {world.path} sft",
    }
    assert document["plans"][0]["instances"]["idle"] == 3
    assert document["plans"][0]["instances"]["running_jobs"] is None


def test_a_plan_ending_soon_needs_attention_and_the_threshold_is_an_option(status_world) -> None:
    world = status_world
    start = NOW - timedelta(days=5)
    world.buy(world.plan, status="Active", start=start, hours=144, count=4, fee="55000.00")
    world.plane.add_extension(world.plan, 24)  # ends NOW + 48 h
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")
    world.cluster()
    world.sft_done(start)
    for index, node in enumerate(world.nodes_of("nova-lite")):  # a run launched by hand
        world.kube.add_object(pod(f"by-hand-worker-{index}", node))
    _, document = world.json()
    (ending,) = document["attention"]
    assert ending["kind"] == "plan-ending"
    assert ending["message"].startswith("ends in 2d 0h (2027-07-12T12:00:00Z);")
    assert ending["command"] == (
        "aws sagemaker search-training-plan-offerings --training-plan-arn "
        f"{world.plan_arn} --duration-hours 24"
    )
    assert world.run("--ending-within", "24")[0] == 0


def test_unhealthy_plan_instances_need_attention(status_world) -> None:
    world = status_world.healthy()
    world.plane.set_plan_counts(ADOPTED, unhealthy=1)
    assert world.attention() == [("plan-unhealthy", "plan spare")]


# --- groups and nodes -----------------------------------------------------------------------


@pytest.mark.parametrize("status", MODEL.shape_for("InstanceGroupStatus").enum)
def test_every_group_status(status_world, status) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.set_instance_groups(
        CLUSTER, [{**world.plane.hyperpod.clusters[CLUSTER]["InstanceGroups"][0], "Status": status}]
    )
    kinds = world.attention()
    failing = status in ("Failed", "Degraded", "Deleting")
    assert kinds == ([("group-failed", "group system")] if failing else [])


@pytest.mark.parametrize("status", MODEL.shape_for("ClusterInstanceStatus").enum)
def test_every_node_status(status_world, status) -> None:
    world = status_world.healthy()
    hyperpod = world.plane.hyperpod
    node = hyperpod.nodes[CLUSTER][0]  # a nova-lite node
    node["InstanceStatus"] = {"Status": status, "Message": "health check failed"}
    code, document = world.json()
    lite = document["groups"][0]
    unhealthy = status in ("Failure", "NotFound")
    assert code == (4 if unhealthy else 0)
    expected_counts = {"total": 4, "running": 3, "unhealthy": 0, "other": 0}
    if status == "Running":
        expected_counts["running"] = 4
    else:
        expected_counts["unhealthy" if unhealthy else "other"] = 1
    assert lite["nodes"] == expected_counts
    if unhealthy:
        (finding,) = document["attention"]
        assert finding == {
            "kind": "unhealthy-nodes",
            "subject": "group nova-lite",
            "message": f"1 of 4 nodes unhealthy: {node['InstanceId']} {status} (health check "
            "failed); node recovery is Automatic, HyperPod replaces them",
            "command": f"aws sagemaker describe-cluster-node --cluster-name {CLUSTER} "
            f"--node-id {node['InstanceId']}",
        }
        assert lite["unhealthy_nodes"] == [
            {"instance_id": node["InstanceId"], "status": status, "message": "health check failed"}
        ]


def test_without_node_recovery_the_command_replaces_the_nodes(status_world) -> None:
    world = status_world
    world.healthy()
    world.plane.hyperpod.clusters[CLUSTER]["NodeRecovery"] = "None"
    for node in world.plane.hyperpod.nodes[CLUSTER][:2]:
        node["InstanceStatus"] = {"Status": "Failure"}
    _, document = world.json()
    (finding,) = document["attention"]
    ids = " ".join(n["InstanceId"] for n in world.plane.hyperpod.nodes[CLUSTER][:2])
    assert finding["command"] == (
        f"aws sagemaker batch-replace-cluster-nodes --cluster-name {CLUSTER} --node-ids {ids}"
    )


def test_nodes_are_read_page_by_page(status_world) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.node_page_size = 2
    _, document = world.json()
    assert [g["nodes"]["total"] for g in document["groups"]] == [4, 2, 1]
    assert len(world.plane.calls_to("ListClusterNodes")) == 4  # 7 nodes, 2 a page


def test_fewer_nodes_than_desired_on_an_active_plan_need_attention(status_world) -> None:
    world = status_world
    world.healthy()
    world.plane.hyperpod.set_restricted_groups(
        CLUSTER,
        [
            {
                **world.plane.hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"][0],
                "CurrentCount": 3,
            },
            world.plane.hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"][1],
        ],
    )
    _, document = world.json()
    (missing,) = document["attention"]
    assert missing == {
        "kind": "missing-nodes",
        "subject": "group nova-lite",
        "message": "3 of 4 nodes although the group is InService and its plan Active",
        "command": f"aws sagemaker list-cluster-nodes --cluster-name {CLUSTER} "
        "--instance-group-name-contains nova-lite",
    }


@pytest.mark.parametrize("status", MODEL.shape_for("ClusterStatus").enum)
def test_every_cluster_status(status_world, status) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.script_statuses(CLUSTER, [(status, "the VPC is gone")])
    code, document = world.json()
    assert document["cluster"]["status"] == status
    failing = status in ("Failed", "RollingBack", "Deleting")
    assert world.attention() == ([("cluster-failed", f"cluster {CLUSTER}")] if failing else [])
    if failing:
        assert document["attention"][0]["message"] == (
            f"the HyperPod cluster is {status}: the VPC is gone"
        )
    assert code == (4 if failing else 0)


# --- drift ----------------------------------------------------------------------------------


def test_group_counts_types_and_plans_changed_outside_cloudformation_are_drift(
    status_world,
) -> None:
    world = status_world
    world.healthy()
    hyperpod = world.plane.hyperpod
    lite, spare = hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"]
    other_plan = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/someone-elses"
    hyperpod.set_restricted_groups(
        CLUSTER,
        [
            {**lite, "TargetCount": 2, "CurrentCount": 2},
            {**spare, "InstanceType": "ml.p5e.48xlarge", "TrainingPlanArn": other_plan},
        ],
    )
    code, document = world.json()
    assert code == 4
    deploy = hyperpod_deploy(world)
    assert [(d["subject"], d["field"], d["config"], d["deployed"]) for d in document["drift"]] == [
        ("group nova-lite", "instance_count", 4, 2),
        ("group spare-rig", "instance_type", "ml.p5.48xlarge", "ml.p5e.48xlarge"),
        ("group spare-rig", "training_plan", ADOPTED_ARN, other_plan),
    ]
    assert {d["command"] for d in document["drift"]} == {deploy}
    assert [a["kind"] for a in document["attention"]] == ["drift"] * 3
    _, out, _ = world.run()
    drift = out[out.index("Drift from the config") :].splitlines()
    assert drift[1].split() == ["what", "field", "config", "deployed", "to", "bring", "it", "back"]
    assert drift[2].split() == ["group", "nova-lite", "instance_count", "4", "2", *deploy.split()]


def test_groups_added_or_removed_outside_the_config_are_drift(status_world) -> None:
    world = status_world
    world.healthy()
    hyperpod = world.plane.hyperpod
    lite, _ = hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"]
    extra = {**lite, "InstanceGroupName": "by-hand", "TrainingPlanArn": world.plan_arn}
    hyperpod.set_restricted_groups(CLUSTER, [lite, extra])  # spare-rig removed
    _, document = world.json()
    assert [(d["subject"], d["field"], d["config"], d["deployed"]) for d in document["drift"]] == [
        ("group spare-rig", "group", "spare-rig", None),
        ("group by-hand", "group", None, "by-hand"),
    ]
    assert document["drift"][1]["message"] == (
        "restricted group by-hand is in the cluster but not in the config; a deploy of the "
        "hyperpod stack removes it (and deletes its FSx for Lustre)"
    )
    by_hand = document["groups"][-1]
    assert (by_hand["name"], by_hand["in_config"], by_hand["plan"]) == ("by-hand", False, "main")


def test_a_cluster_not_deployed_is_drift(status_world) -> None:
    world = status_world
    world.buy(world.plan, status="Active", start=NOW, hours=144, count=4, fee="55000.00")
    world.plane.add_extension(world.plan, 24)
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")
    code, document = world.json()
    assert code == 4
    assert document["cluster"] == {
        "name": CLUSTER,
        "deployed": False,
        "status": None,
        "failure": None,
    }
    assert document["drift"] == [
        {
            "subject": f"cluster {CLUSTER}",
            "field": "cluster",
            "config": CLUSTER,
            "deployed": None,
            "message": f"the HyperPod cluster {CLUSTER} is not deployed",
            "command": hyperpod_deploy(world),
        }
    ]
    assert [g["deployed"] for g in document["groups"]] == [False, False, False]
    assert "ListClusterNodes" not in world.plane.operations()


def test_an_extension_the_config_asks_for_and_the_plan_lacks_is_drift(status_world) -> None:
    world = status_world
    world.buy(world.plan, status="Active", start=NOW, hours=144, count=4, fee="55000.00")
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")
    world.cluster()
    _, document = world.json()
    (drift,) = document["drift"]
    assert (drift["subject"], drift["field"], drift["config"], drift["deployed"]) == (
        "plan main",
        "extension",
        24,
        0,
    )
    assert drift["command"] == f"npx cdk deploy -c config={world.path} novapod-dev-capacity"


def test_the_groups_of_a_cluster_being_created_are_not_drift_yet(status_world) -> None:
    world = status_world
    world.healthy()
    world.plane.hyperpod.script_statuses(CLUSTER, ["Creating"])
    world.plane.hyperpod.set_restricted_groups(CLUSTER, [])
    assert world.attention() == []


# --- the purchase ledger ----------------------------------------------------------------------


def test_purchases_awaiting_reconciliation_need_attention(status_world) -> None:
    world = status_world
    world.buy(world.plan, status="Active", start=NOW, hours=144, count=4, fee="55000.00")
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")
    world.cluster()
    world.put(
        ledger_item(
            f"extension#{world.extension}", "ambiguous", Error="ReadTimeoutError: read timeout"
        )
    )
    world.put(ledger_item("plan#novapod-dev-old-0a1b2c3d", "calling"))
    code, document = world.json()
    assert code == 4
    assert [p["key"] for p in document["purchases"]] == [
        f"extension#{world.extension}",
        "plan#novapod-dev-old-0a1b2c3d",
    ]
    first = document["attention"][0]
    assert first == {
        "kind": "purchase-unsettled",
        "subject": f"purchase extension#{world.extension}",
        "message": "ambiguous: the purchase call's outcome is unknown: it may have been bought "
        "(ReadTimeoutError: read timeout)",
        "command": f"novapod purchases {world.path}",
    }
    # The extension's purchase may have gone through: no drift asks to buy it again.
    assert document["drift"] == []
    assert document["plans"][0]["purchases"] == [
        {
            "key": f"extension#{world.extension}",
            "state": "ambiguous",
            "attention": "the purchase call's outcome is unknown: it may have been bought",
        }
    ]
    _, out, _ = world.run()
    assert f"Purchases to reconcile (ledger {TABLE})" in out


# --- attention order, watch, errors ---------------------------------------------------------


def test_the_most_urgent_finding_comes_first(status_world) -> None:
    world = status_world.healthy()
    world.drop_pods(RUN_2, keep=3)  # idle
    world.plane.hyperpod.nodes[CLUSTER][0]["InstanceStatus"] = {"Status": "Failure"}
    lite, spare = world.plane.hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"]
    world.plane.hyperpod.set_restricted_groups(CLUSTER, [lite, {**spare, "TargetCount": 1}])
    assert [kind for kind, _ in world.attention()] == ["unhealthy-nodes", "plan-idle", "drift"]
    _, out, _ = world.run()
    table = out[out.index("Training plans") :].splitlines()
    assert table[2].startswith("  main ") and "plan-idle" in table[2]


def test_watch_redraws_every_n_seconds_until_interrupted(status_world, monkeypatch) -> None:
    world = status_world.healthy()
    world.drop_pods(RUN_2)  # round 1: sft's second run waits for its pods
    rounds = iter([lambda: world.running(RUN_2, start=NOW, nodes=world.nodes_of("nova-lite"))])

    def sleep(seconds: float) -> None:
        world.slept.append(seconds)
        step = next(rounds, None)
        if step is None:
            raise KeyboardInterrupt
        step()

    monkeypatch.setattr(cli, "_status_sleep", sleep)
    status, out, err = world.run("--watch", "30", "--json")
    first, second = (json.loads(line) for line in out.splitlines())
    for document in (first, second):
        json_schemas.validate(document, SCHEMA)
    assert [a["kind"] for a in first["attention"]] == ["plan-idle"]
    assert second["attention"] == [] and status == 0  # the last round's status
    assert world.slept == [30.0, 30.0]
    assert err == ""


def test_watch_without_json_redraws_text_and_keeps_the_last_status(status_world, monkeypatch):
    world = status_world.healthy()
    calls = []

    def sleep(seconds: float) -> None:
        calls.append(seconds)
        if len(calls) == 2:
            raise KeyboardInterrupt
        world.drop_pods(RUN_2, keep=2)

    monkeypatch.setattr(cli, "_status_sleep", sleep)
    status, out, _ = world.run("--watch", "0.5")
    assert status == 4 and calls == [0.5, 0.5]
    assert out.count("novapod status: environment dev") == 2
    assert "\x1b[2J" not in out  # not a terminal: no screen clearing


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf", "nan"])
def test_watch_needs_a_positive_number_of_seconds(status_world, value) -> None:
    with pytest.raises(SystemExit) as exit_:
        status_world.run("--watch", value)
    assert exit_.value.code == 2
    assert "is not a positive number of seconds" in status_world.capsys.readouterr().err


def test_an_undeployed_environment_is_named(status_world) -> None:
    world = status_world
    world.plane.stacks.clear()
    status, out, err = world.run()
    assert (status, out) == (2, "")
    assert err == (
        "novapod status: stack novapod-dev-storage is not deployed in us-east-1; deploy the "
        "environment first (cdk deploy novapod-dev-storage)\n"
    )


def test_an_aws_error_names_the_call(status_world) -> None:
    world = status_world.healthy()
    world.plane.error("ListClusterNodes", "AccessDeniedException", message="not allowed")
    status, out, err = world.run()
    assert (status, out) == (1, "")
    assert err == (
        "novapod status: an AWS call failed: An error occurred (AccessDeniedException) when "
        "calling the ListClusterNodes operation: not allowed\n"
    )


def test_without_credentials_the_first_call_and_its_permission_are_named(
    status_world, monkeypatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    status, out, err = status_world.run()
    assert (status, out) == (1, "")
    assert err.startswith(
        "novapod status: DescribeStacks (which needs cloudformation:DescribeStacks) has no "
        "usable AWS credentials (Unable to locate credentials); provide credentials"
    )
    assert status_world.plane.operations(ledger=True) == []


def test_every_object_of_the_schema_is_closed() -> None:
    """Stable keys: no object of the report takes a key the schema does not name."""
    assert_closed(SCHEMA, every_key_required=False)


# --- the example in docs/operations.md ------------------------------------------------------

OPERATIONS = ROOT / "docs" / "operations.md"
EXAMPLE_START = (
    "<!-- status example: the output of docs_example() in tests/handlers/test_status_cli.py -->"
)


def docs_example(world: StatusWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The environment the operations page shows: a day into its plan, sft's first run
    failed after six hours, its second (launched two hours later) runs on three of the
    four nova-lite nodes, the fourth failing its health check, HyperPod replaced a node of
    spare-rig three hours ago, and the system group was scaled by hand; read by a cluster
    admin, who may read the bootstrap's marker. The scheduled check saw main's four
    instances in its group all day, and spare's two only after its first six hours."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "dev.yaml").write_text(world.path.read_text())
    world.path = Path("config/dev.yaml")
    world.healthy(runs=False)
    world.plane.monitoring.metrics.clear()
    world.sampled("main", 4)
    world.sampled("spare", lambda when: 0 if when < PLAN_START + timedelta(hours=6) else 2)
    start = NOW - timedelta(days=1)
    world.kube.add_object(
        pytorchjob(
            RUN_1,
            "Failed",
            start=start,
            end=start + timedelta(hours=6),
            message=f"PyTorchJob {RUN_1} is failed because 1 Master replica(s) failed.",
        )
    )
    world.output("sft", RUN_1, "tensorboard/events.out.tfevents", start + timedelta(minutes=5))
    lite = world.nodes_of("nova-lite")
    world.running(RUN_2, start=start + timedelta(hours=8), nodes=[lite[0], *lite[2:]])
    node = world.plane.hyperpod.nodes[CLUSTER][1]
    node["InstanceStatus"] = {"Status": "Failure", "Message": "deep health check: GPU ECC errors"}
    (system,) = world.plane.hyperpod.clusters[CLUSTER]["InstanceGroups"]
    world.plane.hyperpod.set_instance_groups(
        CLUSTER, [{**system, "TargetCount": 2, "CurrentCount": 2}]
    )
    world.plane.hyperpod.add_node(CLUSTER, "system", launched=NOW - timedelta(days=2, hours=23))
    nodes = world.plane.hyperpod.nodes[CLUSTER]
    nodes.remove(next(n for n in nodes if n["InstanceGroupName"] == "spare-rig"))
    world.plane.hyperpod.add_node(CLUSTER, "spare-rig", launched=NOW - timedelta(hours=3))
    world.as_admin()
    world.marker()
    status, out, err = world.run()
    assert (status, err) == (4, "")
    return f"$ novapod status config/dev.yaml\n{out}$ echo $?\n4\n"


def test_the_operations_page_shows_the_real_output(status_world, tmp_path, monkeypatch) -> None:
    shown = docs_example(status_world, tmp_path, monkeypatch)
    text = OPERATIONS.read_text(encoding="utf-8")
    start = text.index(EXAMPLE_START)
    block = text[text.index("```text\n", start) + len("```text\n") :]
    assert block[: block.index("```\n")] == shown, f"docs/operations.md should show:\n{shown}"


def test_an_environment_whose_plan_windows_ended_is_still_read(status_world, monkeypatch) -> None:
    """After the window a config buys in has ended, validation refuses to synthesize (no plan
    can be bought for it); status buys nothing and reads the environment all the same."""
    world = status_world.healthy()
    monkeypatch.setenv("NOVAPOD_VALIDATE_AS_OF", "2027-09-01T00:00:00Z")
    status, out, err = world.run()
    assert (status, err) == (0, "")
    assert out.startswith("novapod status: environment dev (us-east-1)")
    assert cli.main(["validate", str(world.path)]) == 2
    _, err = world.capsys.readouterr()
    assert "end_before: 2027-08-30T00:00:00+00:00 is in the past" in err
