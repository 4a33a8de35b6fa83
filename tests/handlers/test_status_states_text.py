"""`novapod status CONFIG` in every state a plan, an instance group, a node, the cluster
and a job can be in, as the terminal shows it: the row of the plan, group, node's group
or job (its cells, literal), the Attention lines and the exit status, each next to the
JSON document of the same round (validated against docs/reference/status.schema.json).
The acceptance of issue 22 asks for text, JSON and exit status in every state; the
states are botocore's SageMaker enums (TrainingPlanStatus, InstanceGroupStatus,
ClusterInstanceStatus, ClusterStatus), so a status the model adds fails here first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from novapod import cli
from tests.fakes.service_model import service_model
from tests.handlers.status_world import (
    ADOPTED,
    ADOPTED_ARN,
    CLUSTER,
    NOW,
    RUN_1,
    RUN_2,
    StatusWorld,
    status_kube,
    status_world,
)

__all__ = ["status_kube", "status_world"]  # fixtures

MODEL = service_model("sagemaker")
HEALTHY_LITE = ["nova-lite", "restricted", "ml.p5.48xlarge", "4/4", "4/0/0", "InService",
                "main", "Active", "ok"]  # fmt: skip
HEALTHY_SYSTEM = ["system", "standard", "ml.m5.2xlarge", "1/1", "1/0/0", "InService", "-",
                  "-", "ok"]  # fmt: skip
DESCRIBE = f"     next: aws sagemaker describe-cluster --cluster-name {CLUSTER}"


@pytest.fixture(autouse=True)
def _answers_fit_the_model(status_world: StatusWorld) -> Any:
    yield
    assert status_world.plane.violations == []


@dataclass
class Shown:
    """One round of `novapod status`: the text, its exit status and the JSON document."""

    code: int
    lines: list[str]
    document: dict[str, Any]

    def section(self, title: str) -> list[str]:
        """The lines under a heading (the heading starts with `title`), to the blank line."""
        start = next(i for i, line in enumerate(self.lines) if line.startswith(title))
        rest = self.lines[start + 1 :]
        return rest[: rest.index("")] if "" in rest else rest

    def row(self, title: str, name: str) -> list[str]:
        """The cells of the row named `name` in the table under `title`."""
        (line,) = [line for line in self.section(title) if line.split()[0] == name]
        return re.split(r"\s{2,}", line.strip())

    @property
    def attention(self) -> list[str]:
        if "Attention (most urgent first)" not in self.lines:
            return []
        return self.section("Attention (most urgent first)")


def shown(world: StatusWorld) -> Shown:
    code, out, document = world.text_and_json()  # the same round's facts, as JSON too
    lines = out.splitlines()
    verdict = "healthy" if code == 0 else f"{len(document['attention'])} need"
    assert verdict in lines[0]
    return Shown(code, lines, document)


@pytest.mark.parametrize("state", ["healthy", "needs attention"])
def test_the_json_of_a_text_round_is_what_status_json_prints(status_world, state) -> None:
    """shown() renders the JSON from the text round's report: it must be the document
    `novapod status --json` prints for the same world, exit status included (and
    json_and_text's text what `novapod status` prints)."""
    world = status_world.healthy()
    if state == "needs attention":
        world.plane.set_plan_counts(world.plan, available=0, in_use=3, unhealthy=1)
        world.drop_pods(RUN_2, keep=2)
    code, out, document = world.text_and_json()
    assert (code, document) == world.json()
    # and the other way round: the text of a --json round is what status prints
    assert world.json_and_text() == (code, document, out)
    assert code == (0 if state == "healthy" else 4)
    assert bool(document["attention"]) == (state != "healthy")
    assert out.startswith("novapod status")


def adopted_active(world: StatusWorld) -> None:
    world.buy(ADOPTED, status="Active", start=NOW, hours=336, count=2, fee="30000.00")


# --- every plan status ----------------------------------------------------------------------

WINDOW_LATER = "2027-07-13 12:00 -> 2027-07-20 12:00"  # 144 h + 24 h from three days on


@pytest.mark.parametrize(
    ("status", "start_days", "exit_status", "cells", "attention"),
    [
        (
            "Pending",
            3,
            0,
            [WINDOW_LATER, "in 10d 0h", "4/0/0/0", "55000.00 USD, due", "+24 h",
             "bought, waiting to be paid and fulfilled: awaiting payment"],
            [],
        ),
        (
            "Scheduled",
            3,
            0,
            [WINDOW_LATER, "in 10d 0h", "4/0/0/0", "55000.00 USD", "+24 h", "starts in 3d 0h"],
            [],
        ),
        (
            "Active",
            -1,
            0,
            ["2027-07-09 12:00 -> 2027-07-16 12:00", "in 6d 0h", "4/0/4/0", "55000.00 USD",
             "+24 h", "ok"],
            [],
        ),
        (
            "Expired",
            -10,
            4,
            ["2027-06-30 12:00 -> 2027-07-07 12:00", "3d 0h ago", "4/0/0/0", "55000.00 USD",
             "+24 h", "ended 3d 0h ago"],
            [
                "  1. job sft: plan main has ended (2027-07-07T12:00:00Z) with 2 of 2 runs left "
                "[job-at-risk]",
                "  2. group nova-lite: runs on plan main, which expired: it gets no nodes; buy "
                "or adopt another plan for it [plan-expired-in-use]",
                "     next: novapod plan {path}",
            ],
        ),
        (
            "Failed",
            3,
            4,
            # A Failed plan reserves nothing: no countdown to its end, its fee not paid.
            [WINDOW_LATER, "-", "4/0/0/0", "55000.00 USD, not paid", "+24 h", "plan-failed"],
            [
                "  1. plan main: {plan} is Failed (payment declined) and reserves no capacity; "
                "set retry: 1 (or one more) on capacity.training_plans[0] and approve the new "
                "name [plan-failed]",
                "     next: novapod plan {path}",
            ],
        ),
    ],
)  # fmt: skip
def test_every_plan_status_in_text(  # noqa: PLR0917 - the parameters of one case
    status_world, status, start_days, exit_status, cells, attention
) -> None:
    world = status_world
    message = {"Pending": "awaiting payment", "Failed": "payment declined"}.get(status, "")
    world.buy(
        world.plan,
        status=status,
        start=NOW + timedelta(days=start_days),
        hours=144,
        count=4,
        fee="55000.00",
        message=message,
    )
    active = status == "Active"
    if not active:
        world.plane.set_plan_counts(world.plan, available=0, in_use=0)
    world.plane.add_extension(world.plan, 24)
    adopted_active(world)
    world.cluster(lite={"CurrentCount": 4 if active else 0, "TrainingPlanStatus": status})
    if active:
        world.sft_runs()
    result = shown(world)
    assert result.code == exit_status
    assert result.row("Training plans", "main") == ["main", status, *cells]
    assert result.attention == [a.format(path=world.path, plan=world.plan) for a in attention]
    assert result.document["plans"][0]["status"] == status
    # The group waits for its plan: its row shows the plan's status, no missing nodes.
    lite = result.row("Instance groups", "nova-lite")
    assert lite == ["nova-lite", "restricted", "ml.p5.48xlarge", "4/4" if active else "0/4",
                    "4/0/0" if active else "0/0/0", "InService", "main", status,
                    "plan-expired-in-use" if status == "Expired" else "ok"]  # fmt: skip


def test_the_plan_statuses_are_the_model_s() -> None:
    tested = {"Pending", "Scheduled", "Active", "Expired", "Failed"}
    assert set(MODEL.shape_for("TrainingPlanStatus").enum) == tested


def test_a_plan_not_approved_is_not_bought_and_says_how_to_buy_it(status_world) -> None:
    world = status_world
    world.path.write_text(world.path.read_text().replace(f"approve: {world.plan}, ", "", 1))
    adopted_active(world)
    world.cluster(lite={"CurrentCount": 0, "TrainingPlanStatus": "NotFound"})
    result = shown(world)
    assert result.code == 0 and result.attention == []
    assert result.row("Training plans", "main") == [
        "main",
        "NotBought",
        "-",
        "-",
        "-",
        "-",
        "+0 h, config +24 h",
        f"not bought yet: approve it with purchase.approve: {world.plan} (novapod plan "
        f"{world.path} shows the price), then deploy",
    ]
    assert result.document["plans"][0]["status"] == "NotBought"


def test_a_plan_approved_and_not_bought_is_drift_in_text(status_world) -> None:
    world = status_world
    adopted_active(world)
    world.cluster(lite={"CurrentCount": 0, "TrainingPlanStatus": "NotFound"})
    result = shown(world)
    assert result.code == 4
    assert result.row("Training plans", "main") == [
        "main", "NotBought", "-", "-", "-", "-", "+0 h, config +24 h",
        "drift; approved, not bought yet",
    ]  # fmt: skip
    deploy = f"npx cdk deploy -c config={world.path} novapod-dev-capacity"
    assert result.attention == [
        f"  1. plan main: {world.plan} is approved in the config but not bought; a deploy of "
        "the capacity stack buys it [drift]",
        f"     next: {deploy}",
    ]
    assert result.row("Drift from the config", "plan") == [
        "plan main", "plan", world.plan, "-", deploy
    ]  # fmt: skip


def test_an_adopted_plan_that_does_not_exist_is_not_bought_by_a_deploy(status_world) -> None:
    """The config adopts team-spare by ARN, and SageMaker does not know it: a deploy would
    adopt (fail), never buy, so the finding names the ARN to correct, not the deploy."""
    world = status_world
    world.buy(
        world.plan, status="Active", start=NOW - timedelta(days=1), hours=144, count=4,
        fee="55000.00",
    )  # fmt: skip
    world.plane.add_extension(world.plan, 24)
    world.cluster(spare={"CurrentCount": 0, "TrainingPlanStatus": "NotFound"})
    world.sft_runs()
    result = shown(world)
    assert result.code == 4
    assert result.row("Training plans", "spare") == [
        "spare", "NotBought", "-", "-", "-", "-", "-",
        f"drift; {ADOPTED_ARN} is not found: the adopted plan does not exist here",
    ]  # fmt: skip
    message = (
        f"the adopted plan {ADOPTED_ARN} does not exist in this account and region; correct "
        "existing_arn on capacity.training_plans[1] (the plans that exist are listed by the "
        "command)"
    )
    assert result.attention == [
        f"  1. plan spare: {message} [drift]",
        "     next: aws sagemaker list-training-plans",
    ]
    (drift,) = result.document["drift"]
    assert (drift["subject"], drift["field"], drift["message"], drift["command"]) == (
        "plan spare",
        "plan",
        message,
        "aws sagemaker list-training-plans",
    )
    spare = result.row("Instance groups", "spare-rig")
    assert spare == ["spare-rig", "restricted", "ml.p5.48xlarge", "0/2", "0/0/0", "InService",
                     "spare", "NotFound", "ok"]  # fmt: skip


# --- every group status ---------------------------------------------------------------------


@pytest.mark.parametrize("status", MODEL.shape_for("InstanceGroupStatus").enum)
def test_every_group_status_in_text(status_world, status) -> None:
    world = status_world.healthy()
    (system,) = world.plane.hyperpod.clusters[CLUSTER]["InstanceGroups"]
    world.plane.hyperpod.set_instance_groups(CLUSTER, [{**system, "Status": status}])
    result = shown(world)
    failing = status in ("Failed", "Degraded", "Deleting")
    assert result.code == (4 if failing else 0)
    row = result.row("Instance groups", "system")
    assert row == [*HEALTHY_SYSTEM[:5], status, "-", "-", "group-failed" if failing else "ok"]
    assert result.attention == (
        [f"  1. group system: the group is {status} [group-failed]", DESCRIBE] if failing else []
    )
    group = next(g for g in result.document["groups"] if g["name"] == "system")
    assert (group["status"], group["attention"]) == (status, ["group-failed"] if failing else [])
    # The rows needing attention come first.
    groups = result.section("Instance groups")[1:]
    assert groups[0].split()[0] == ("system" if failing else "nova-lite")


@pytest.mark.parametrize(
    ("status", "exit_status"),
    [("Creating", 0), ("Updating", 0), ("SystemUpdating", 0), ("InService", 4)],
)
def test_a_group_short_of_nodes_is_missing_them_only_when_in_service(
    status_world, status, exit_status
) -> None:
    """A group being created or updated gets its nodes as it goes: fewer than desired is
    no finding until it is InService."""
    world = status_world.healthy()
    (system,) = world.plane.hyperpod.clusters[CLUSTER]["InstanceGroups"]
    world.plane.hyperpod.set_instance_groups(
        CLUSTER, [{**system, "Status": status, "TargetCount": 2}]
    )
    world.path.write_text(
        world.path.read_text().replace("instance_count: 1}", "instance_count: 2}")
    )
    result = shown(world)
    assert result.code == exit_status
    missing = status == "InService"
    assert result.row("Instance groups", "system") == [
        *HEALTHY_SYSTEM[:3], "1/2", "1/0/0", status, "-", "-",
        "missing-nodes" if missing else "ok",
    ]  # fmt: skip
    assert result.attention == (
        [
            "  1. group system: 1 of 2 nodes although the group is InService [missing-nodes]",
            f"     next: aws sagemaker list-cluster-nodes --cluster-name {CLUSTER} "
            "--instance-group-name-contains system",
        ]
        if missing
        else []
    )


# --- every node status ----------------------------------------------------------------------


@pytest.mark.parametrize("status", MODEL.shape_for("ClusterInstanceStatus").enum)
def test_every_node_status_in_text(status_world, status) -> None:
    world = status_world.healthy()
    node = world.plane.hyperpod.nodes[CLUSTER][0]  # a nova-lite node
    node["InstanceStatus"] = {"Status": status, "Message": "health check failed"}
    node_id = node["InstanceId"]
    result = shown(world)
    unhealthy = status in ("Failure", "NotFound")
    counts = {"Running": "4/0/0"}.get(status, "3/1/0" if unhealthy else "3/0/1")
    assert result.code == (4 if unhealthy else 0)
    assert result.row("Instance groups", "nova-lite") == [
        *HEALTHY_LITE[:4], counts, *HEALTHY_LITE[5:8], "unhealthy-nodes" if unhealthy else "ok"
    ]  # fmt: skip
    assert result.attention == (
        [
            f"  1. group nova-lite: 1 of 4 nodes unhealthy: {node_id} {status} (health check "
            "failed); node recovery is Automatic, HyperPod replaces them [unhealthy-nodes]",
            f"     next: aws sagemaker describe-cluster-node --cluster-name {CLUSTER} "
            f"--node-id {node_id}",
        ]
        if unhealthy
        else []
    )
    lite = result.document["groups"][0]
    assert "/".join(str(lite["nodes"][k]) for k in ("running", "unhealthy", "other")) == counts


def test_the_node_statuses_include_detach_and_attach() -> None:
    """The two statuses the review found untested in text are in the model (so in the
    parametrization above)."""
    statuses = MODEL.shape_for("ClusterInstanceStatus").enum
    assert {"DetachInProgress", "AttachInProgress", "DeepHealthCheckInProgress"} <= set(statuses)


# --- every cluster status -------------------------------------------------------------------


@pytest.mark.parametrize("status", MODEL.shape_for("ClusterStatus").enum)
def test_every_cluster_status_in_text(status_world, status) -> None:
    world = status_world.healthy()
    failing = status in ("Failed", "RollingBack", "Deleting")
    world.plane.hyperpod.script_statuses(
        CLUSTER, [(status, "the VPC is gone") if failing else status]
    )
    result = shown(world)
    assert result.code == (4 if failing else 0)
    header = f"Instance groups of HyperPod cluster {CLUSTER}: {status}"
    assert (header + (" (the VPC is gone)" if failing else "")) in result.lines
    assert result.attention == (
        [
            f"  1. cluster {CLUSTER}: the HyperPod cluster is {status}: the VPC is gone "
            "[cluster-failed]",
            DESCRIBE,
        ]
        if failing
        else []
    )
    assert result.row("Instance groups", "nova-lite") == HEALTHY_LITE
    assert result.document["cluster"]["status"] == status


def test_a_cluster_being_created_without_its_groups_yet_is_no_drift(status_world) -> None:
    """CloudFormation creates the cluster before its plans start; its restricted groups
    are not there yet. Their rows say so (nothing to deploy), and the report is healthy."""
    world = status_world
    start = NOW + timedelta(days=2)
    world.buy(world.plan, status="Scheduled", start=start, hours=144, count=4, fee="55000.00")
    world.plane.add_extension(world.plan, 24)
    world.buy(ADOPTED, status="Scheduled", start=start, hours=336, count=2, fee="30000.00")
    world.cluster(statuses=("Creating",))
    world.plane.hyperpod.set_restricted_groups(CLUSTER, [])
    world.plane.hyperpod.nodes[CLUSTER] = [
        n for n in world.plane.hyperpod.nodes[CLUSTER] if n["InstanceGroupName"] == "system"
    ]
    result = shown(world)
    assert (result.code, result.attention) == (0, [])
    assert f"Instance groups of HyperPod cluster {CLUSTER}: Creating" in result.lines
    assert result.row("Instance groups", "nova-lite") == [
        "nova-lite", "restricted", "-", "-/-", "0/0/0", "-", "main", "-", "not created yet"
    ]  # fmt: skip
    assert result.row("Instance groups", "spare-rig") == [
        "spare-rig", "restricted", "-", "-/-", "0/0/0", "-", "spare", "-", "not created yet"
    ]  # fmt: skip
    assert result.row("Instance groups", "system") == HEALTHY_SYSTEM
    assert "Drift from the config" not in result.lines
    assert result.document["drift"] == []
    assert [g["deployed"] for g in result.document["groups"]] == [False, False, True]
    # Once created, a group still missing is drift, and its row says not deployed.
    world.plane.hyperpod.script_statuses(CLUSTER, ["InService"])
    result = shown(world)
    assert result.code == 4
    assert result.row("Instance groups", "nova-lite")[-1] == "drift; not deployed"


# --- job states ------------------------------------------------------------------------------

PLANNED = "2027-07-09 12:00 -> 2027-07-11 12:00"


def test_a_job_not_started_in_text(status_world) -> None:
    world = status_world.healthy(runs=False)
    result = shown(world)
    assert result.code == 4
    assert result.row("Jobs in namespace", "sft") == [
        "sft", "main", "0/0/0/2", "not-started", PLANNED, "2027-07-12 12:00", "late", "job-late"
    ]  # fmt: skip
    launch = f"     next: novapod launch {world.path} sft"
    assert result.attention == [
        "  1. job sft: 1d 0h behind the plan's schedule: planned to end 2027-07-11T12:00:00Z, "
        "at this pace it ends 2027-07-12T12:00:00Z; 2 of 2 runs left; none is running "
        "[job-late]",
        launch,
        "  2. plan main: 4 of 4 reserved instances run no job while the plan is Active (4 in "
        "its instance groups, 0 running a job); they are paid for whether or not a job runs; "
        "its jobs: sft [plan-idle]",
        launch,
    ]
    assert "Runs" not in result.lines
    (sft,) = result.document["jobs"]["items"]
    assert (sft["state"], sft["counts"]["not_started"], sft["runs"]) == ("not-started", 2, [])


def test_a_job_whose_run_only_s3_knows_is_unknown_in_text(status_world) -> None:
    """The cluster refuses the caller; a run's folder in S3 has no manifest: it may be
    running. Its row says one run is unknown, and the late finding launches nothing."""
    world = status_world.healthy(runs=False)
    world.kube.refuse(401)
    world.output("sft", RUN_1, "tensorboard/events.out.tfevents", NOW - timedelta(hours=3))
    result = shown(world)
    assert result.code == 4
    assert result.lines[result.lines.index("Jobs in namespace nova-jobs (runs from S3 only)") + 1] == (
        f"  the cluster was not read: the Kubernetes API of EKS cluster {CLUSTER} refused the "
        "read: HTTP 401, your role has no access entry in the cluster (the roles in "
        "nova.scientists have one)"
    )  # fmt: skip
    assert result.row("Jobs in namespace", "sft") == [
        "sft", "main", "0/0/0/1", "unknown", PLANNED, "2027-07-12 09:00", "late",
        "job-late; 1 run unknown",
    ]  # fmt: skip
    assert result.row("Runs", RUN_1) == [
        RUN_1, "sft", "unknown", "-", "-", "-",
        "in S3 without manifest.json; the cluster was not read",
    ]  # fmt: skip
    assert result.attention == [
        "  1. job sft: 21h 0m behind the plan's schedule: planned to end 2027-07-11T12:00:00Z, "
        "at this pace it ends 2027-07-12T09:00:00Z; 2 of 2 runs left; run sft-a1b2c may be "
        "running (the cluster was not read) [job-late]",
    ]
    (sft,) = result.document["jobs"]["items"]
    assert (sft["state"], sft["counts"]["unknown"], sft["counts"]["not_started"]) == (
        "unknown",
        1,
        1,
    )
    (late,) = result.document["attention"]
    assert late["command"] is None  # a run may be running: nothing to launch


def test_a_job_waiting_for_its_next_run_in_text(status_world) -> None:
    """sft's first run succeeded, its second is not launched yet: waiting, on time."""
    world = status_world.healthy(runs=False)
    world.finished("sft", RUN_1, start=NOW - timedelta(hours=24), end=NOW - timedelta(hours=1))
    result = shown(world)
    assert result.row("Jobs in namespace", "sft") == [
        "sft", "main", "1/0/0/1", "waiting", PLANNED, "2027-07-11 12:00", "on time", "ok"
    ]  # fmt: skip
    assert result.row("Runs", RUN_1) == [
        RUN_1, "sft", "succeeded", "-", "-", "2027-07-10 11:00"
    ]  # fmt: skip
    assert [line for line in result.attention if not line.startswith("     next:")] == [
        "  1. plan main: 4 of 4 reserved instances run no job while the plan is Active (4 in "
        "its instance groups, 0 running a job); they are paid for whether or not a job runs; "
        "its jobs: sft [plan-idle]",
    ]
    assert result.document["jobs"]["items"][0]["state"] == "waiting"


# --- the CLI's units ---------------------------------------------------------------------------


def test_ending_within_is_a_positive_number_of_hours(status_world) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["status", str(status_world.path), "--ending-within", "0"])
    assert exit_.value.code == 2
    assert "'0' is not a positive number of hours" in status_world.capsys.readouterr().err
