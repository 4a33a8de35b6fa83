"""The fake's HyperPod nodes, instance groups and plan counts, read by real boto3 clients:
every answer fits botocore's output shapes (the `world` fixture asserts no violation)."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.fakes.hyperpod import restricted_group, standard_group
from tests.fakes.service_model import service_model
from tests.handlers.world import World

CLUSTER = "novapod-dev"
MODEL = service_model("sagemaker")
NODE_STATUSES = MODEL.shape_for("ClusterInstanceStatus").enum
GROUP_STATUSES = MODEL.shape_for("InstanceGroupStatus").enum
PLAN_STATUSES = MODEL.shape_for("TrainingPlanStatus").enum


def _cluster(world: World) -> None:
    world.plane.hyperpod.add_cluster(
        CLUSTER,
        restricted_groups=[restricted_group("rig", current=2, target=2, plan_arn=None)],
        instance_groups=[standard_group("system", current=1, target=1)],
    )


def test_the_model_enums_the_fake_covers_are_the_ones_status_reads() -> None:
    # A new value in botocore's model must be handled by novapod status and the fake.
    assert set(NODE_STATUSES) == {
        "Running",
        "Failure",
        "Pending",
        "ShuttingDown",
        "SystemUpdating",
        "DeepHealthCheckInProgress",
        "NotFound",
        "DetachInProgress",
        "AttachInProgress",
    }
    assert set(GROUP_STATUSES) == {
        "InService",
        "Creating",
        "Updating",
        "Failed",
        "Degraded",
        "SystemUpdating",
        "Deleting",
    }
    assert set(PLAN_STATUSES) == {"Pending", "Active", "Scheduled", "Expired", "Failed"}


def test_list_cluster_nodes_pages_through_every_node_in_every_status(world: World) -> None:
    _cluster(world)
    world.plane.hyperpod.node_page_size = 4
    for status in NODE_STATUSES:
        world.plane.hyperpod.add_node(CLUSTER, "rig", status=status, message=f"{status} here")
    world.plane.hyperpod.add_node(CLUSTER, "system")
    paginator = boto3.client("sagemaker").get_paginator("list_cluster_nodes")
    pages = list(paginator.paginate(ClusterName=CLUSTER))
    assert len(pages) == 3  # 10 nodes, 4 a page
    nodes = [n for page in pages for n in page["ClusterNodeSummaries"]]
    assert [n["InstanceStatus"]["Status"] for n in nodes] == [*NODE_STATUSES, "Running"]
    assert [n["InstanceType"] for n in nodes][-1] == "ml.m5.2xlarge"  # the group's type
    assert len({n["InstanceId"] for n in nodes}) == 10
    assert isinstance(nodes[0]["LaunchTime"], datetime)


def test_list_cluster_nodes_filters_sorts_and_knows_no_other_cluster(world: World) -> None:
    _cluster(world)
    hyperpod = world.plane.hyperpod
    hyperpod.add_node(CLUSTER, "rig", launched=datetime(2030, 1, 2, tzinfo=UTC))
    hyperpod.add_node(CLUSTER, "system", launched=datetime(2030, 1, 3, tzinfo=UTC))
    hyperpod.add_node(CLUSTER, "rig", launched=datetime(2030, 1, 1, tzinfo=UTC))
    sagemaker = boto3.client("sagemaker")
    rig = sagemaker.list_cluster_nodes(
        ClusterName=CLUSTER,
        InstanceGroupNameContains="rig",
        SortBy="CREATION_TIME",
        SortOrder="Ascending",
    )["ClusterNodeSummaries"]
    assert [n["LaunchTime"].day for n in rig] == [1, 2]
    late = sagemaker.list_cluster_nodes(
        ClusterName=CLUSTER, CreationTimeAfter=datetime(2030, 1, 2, 12, tzinfo=UTC)
    )["ClusterNodeSummaries"]
    assert [n["InstanceGroupName"] for n in late] == ["system"]
    with pytest.raises(ClientError) as caught:
        sagemaker.list_cluster_nodes(ClusterName="novapod-other")
    assert caught.value.response["Error"]["Code"] == "ResourceNotFound"


def test_describe_cluster_shows_both_kinds_of_group_in_every_status(world: World) -> None:
    groups = [
        restricted_group(f"rig-{i}", current=0, target=1, status=s)
        for i, s in enumerate(GROUP_STATUSES)
    ]
    world.plane.hyperpod.add_cluster(
        CLUSTER,
        restricted_groups=groups,
        instance_groups=[standard_group("system", current=1, target=2, status="Degraded")],
    )
    answer = boto3.client("sagemaker").describe_cluster(ClusterName=CLUSTER)
    assert [g["Status"] for g in answer["RestrictedInstanceGroups"]] == list(GROUP_STATUSES)
    (system,) = answer["InstanceGroups"]
    assert (system["Status"], system["CurrentCount"], system["TargetCount"]) == ("Degraded", 1, 2)


def test_describe_training_plan_shows_scripted_counts(world: World) -> None:
    offering = world.plane.offerings[0]
    world.plane.add_plan("plan-a", offering, statuses=["Active"])
    world.plane.set_plan_counts("plan-a", available=1, in_use=2, unhealthy=1)
    sagemaker = boto3.client("sagemaker")
    plan = sagemaker.describe_training_plan(TrainingPlanName="plan-a")
    total = sum(r["InstanceCount"] for r in offering["ReservedCapacityOfferings"])
    assert (
        plan["TotalInstanceCount"],
        plan["AvailableInstanceCount"],
        plan["InUseInstanceCount"],
        plan["UnhealthyInstanceCount"],
    ) == (total, 1, 2, 1)
    # TrainingPlanSummary has no UnhealthyInstanceCount: the list never shows it.
    (summary,) = sagemaker.list_training_plans()["TrainingPlanSummaries"]
    assert "UnhealthyInstanceCount" not in summary


# --- StartClusterHealthCheck ------------------------------------------------------------------


def _client() -> object:
    return boto3.client("sagemaker", region_name="us-east-1")


def test_the_deep_health_check_types_are_the_model_s() -> None:
    # A new check type in botocore's model must be offered by novapod health (--checks).
    from novapod.cli import HEALTH_CHECKS

    assert tuple(MODEL.shape_for("DeepHealthCheckType").enum) == HEALTH_CHECKS


def test_a_health_check_runs_on_the_group_s_nodes_then_each_takes_its_outcome(
    world: World,
) -> None:
    _cluster(world)
    first, second = world.plane.hyperpod.add_nodes(CLUSTER, "rig", 2)
    (system,) = world.plane.hyperpod.add_nodes(CLUSTER, "system", 1)
    world.plane.hyperpod.health_outcome(second, "Failure", "GPU count mismatch")
    sagemaker = _client()
    answer = sagemaker.start_cluster_health_check(  # type: ignore[attr-defined]
        ClusterName=CLUSTER,
        DeepHealthCheckConfigurations=[
            {"InstanceGroupName": "rig", "DeepHealthChecks": ["InstanceStress"]}
        ],
    )
    assert answer["ClusterArn"] == world.plane.hyperpod.clusters[CLUSTER]["ClusterArn"]

    def statuses() -> dict[str, str]:
        listed = sagemaker.list_cluster_nodes(ClusterName=CLUSTER)  # type: ignore[attr-defined]
        return {
            n["InstanceId"]: n["InstanceStatus"]["Status"] for n in listed["ClusterNodeSummaries"]
        }

    assert statuses() == {
        first: "DeepHealthCheckInProgress",
        second: "DeepHealthCheckInProgress",
        system: "Running",  # another group: not checked
    }
    assert statuses() == {first: "Running", second: "Failure", system: "Running"}


def test_only_the_named_instances_are_checked_and_a_replaced_node_leaves(world: World) -> None:
    _cluster(world)
    first, second = world.plane.hyperpod.add_nodes(CLUSTER, "rig", 2)
    world.plane.hyperpod.health_outcome(first, "replaced")
    world.plane.hyperpod.health_check_polls = 1
    sagemaker = _client()
    sagemaker.start_cluster_health_check(  # type: ignore[attr-defined]
        ClusterName=CLUSTER,
        DeepHealthCheckConfigurations=[
            {
                "InstanceGroupName": "rig",
                "InstanceIds": [first],
                "DeepHealthChecks": ["InstanceStress"],
            }
        ],
    )
    nodes = sagemaker.list_cluster_nodes(ClusterName=CLUSTER)["ClusterNodeSummaries"]  # type: ignore[attr-defined]
    shown = {
        n["InstanceId"]: n["InstanceStatus"]["Status"]
        for n in nodes
        if n["InstanceGroupName"] == "rig"
    }
    assert first not in shown and shown[second] == "Running"
    assert sorted(shown.values()) == ["Pending", "Running"]  # its replacement comes up


@pytest.mark.parametrize(
    ("configuration", "code", "message"),
    [
        (
            {"InstanceGroupName": "rig", "DeepHealthChecks": ["GpuBurn"]},
            "ValidationException",
            "Value 'GpuBurn' at 'deepHealthCheckConfigurations.1.member.deepHealthChecks.1.member' "
            "failed to satisfy constraint: Member must satisfy enum value set",
        ),
        (
            {"InstanceGroupName": "rig", "DeepHealthChecks": []},
            "ValidationException",
            "deepHealthCheckConfigurations.1.member.deepHealthChecks",
        ),
        (
            {"InstanceGroupName": "other", "DeepHealthChecks": ["InstanceStress"]},
            "ValidationException",
            "Instance group other does not exist in cluster novapod-dev.",
        ),
        (
            {
                "InstanceGroupName": "rig",
                "InstanceIds": ["i-0123456789abcdef0"],
                "DeepHealthChecks": ["InstanceStress"],
            },
            "ValidationException",
            "Instances i-0123456789abcdef0 are not in instance group rig.",
        ),
        (
            {
                "InstanceGroupName": "rig",
                "InstanceIds": ["node-1"],
                "DeepHealthChecks": ["InstanceStress"],
            },
            "ValidationException",
            "Value 'node-1' at 'deepHealthCheckConfigurations.1.member.instanceIds.1.member' failed "
            "to satisfy constraint: Member must satisfy regular expression pattern",
        ),
    ],
    ids=["unknown-check", "no-check", "unknown-group", "instance-of-no-group", "bad-instance-id"],
)
def test_a_health_check_request_is_checked(world: World, configuration, code, message) -> None:
    _cluster(world)
    world.plane.hyperpod.add_nodes(CLUSTER, "rig", 2)
    # Without botocore's own checks, so that what the fake refuses is what is tested.
    unchecked = boto3.client(
        "sagemaker", region_name="us-east-1", config=Config(parameter_validation=False)
    )
    with pytest.raises(ClientError) as raised:
        unchecked.start_cluster_health_check(
            ClusterName=CLUSTER, DeepHealthCheckConfigurations=[configuration]
        )
    error = raised.value.response["Error"]
    assert error["Code"] == code and message in error["Message"], error
    assert world.plane.hyperpod.health_checks == []


def test_a_health_check_of_an_unknown_cluster_is_resource_not_found(world: World) -> None:
    with pytest.raises(ClientError) as raised:
        _client().start_cluster_health_check(  # type: ignore[attr-defined]
            ClusterName="nope",
            DeepHealthCheckConfigurations=[
                {"InstanceGroupName": "rig", "DeepHealthChecks": ["InstanceStress"]}
            ],
        )
    assert raised.value.response["Error"]["Code"] == "ResourceNotFound"
