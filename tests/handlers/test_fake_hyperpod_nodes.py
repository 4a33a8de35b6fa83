"""The fake's HyperPod nodes, instance groups and plan counts, read by real boto3 clients:
every answer fits botocore's output shapes (the `world` fixture asserts no violation)."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError

from tests.fakes.hyperpod import restricted_group, standard_group
from tests.handlers.world import World

CLUSTER = "novapod-dev"
MODEL = botocore.session.get_session().get_service_model("sagemaker")
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
