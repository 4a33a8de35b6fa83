"""The fake control plane answers real boto3 clients in the shapes botocore parses."""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.handlers.world import World

ONE_ATTEMPT = Config(retries={"mode": "standard", "total_max_attempts": 1})


def test_describe_subnets_filters_by_vpc_and_zone_id(world: World) -> None:
    world.plane.add_subnet("subnet-0a", "us-east-1a", vpc_id="vpc-1")
    world.plane.add_subnet("subnet-0b", "us-east-1b", vpc_id="vpc-1")
    world.plane.add_subnet("subnet-0x", "us-east-1a", vpc_id="vpc-2")
    ec2 = boto3.client("ec2")
    subnets = ec2.describe_subnets(
        Filters=[
            {"Name": "vpc-id", "Values": ["vpc-1"]},
            {"Name": "availability-zone-id", "Values": ["use1-az4", "use1-az1"]},
        ]
    )["Subnets"]
    assert [(s["SubnetId"], s["AvailabilityZone"], s["AvailabilityZoneId"]) for s in subnets] == [
        ("subnet-0a", "us-east-1a", "use1-az4")
    ]
    assert [s["SubnetId"] for s in ec2.describe_subnets(SubnetIds=["subnet-0x"])["Subnets"]] == [
        "subnet-0x"
    ]
    zones = ec2.describe_availability_zones(ZoneNames=["us-east-1b"])["AvailabilityZones"]
    assert [(z["ZoneName"], z["ZoneId"], z["State"]) for z in zones] == [
        ("us-east-1b", "use1-az6", "available")
    ]


def test_ec2_errors_parse_as_client_errors(world: World) -> None:
    world.plane.throttle("DescribeAvailabilityZones")
    with pytest.raises(ClientError) as caught:
        boto3.client("ec2", config=ONE_ATTEMPT).describe_availability_zones()
    assert caught.value.response["Error"]["Code"] == "RequestLimitExceeded"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503


def test_list_training_plans_filters_by_status_and_pages(world: World) -> None:
    offering = world.plane.offerings[0]
    world.plane.add_plan("plan-a", offering, statuses=["Active"])
    world.plane.add_plan("plan-b", offering, statuses=["Expired"])
    world.plane.add_plan("plan-c", offering, statuses=["Active"])
    sagemaker = boto3.client("sagemaker")
    active = sagemaker.list_training_plans(Filters=[{"Name": "Status", "Value": "Active"}])
    assert [p["TrainingPlanName"] for p in active["TrainingPlanSummaries"]] == ["plan-a", "plan-c"]
    first = sagemaker.list_training_plans(MaxResults=2)
    rest = sagemaker.list_training_plans(MaxResults=2, NextToken=first["NextToken"])
    names = [p["TrainingPlanName"] for p in first["TrainingPlanSummaries"]]
    assert names + [p["TrainingPlanName"] for p in rest["TrainingPlanSummaries"]] == [
        "plan-a",
        "plan-b",
        "plan-c",
    ]
    assert "NextToken" not in rest


def test_create_rejects_a_taken_name_and_an_unknown_offering(world: World) -> None:
    sagemaker = boto3.client("sagemaker", config=ONE_ATTEMPT)
    sagemaker.create_training_plan(TrainingPlanName="p", TrainingPlanOfferingId="tpo-cheap")
    for name, offering_id, code in [
        ("p", "tpo-cheap", "ResourceInUse"),
        ("q", "tpo-missing", "ResourceNotFound"),
    ]:
        with pytest.raises(ClientError) as caught:
            sagemaker.create_training_plan(
                TrainingPlanName=name, TrainingPlanOfferingId=offering_id
            )
        assert caught.value.response["Error"]["Code"] == code
    assert world.plane.tags[world.plane.plans["p"]["TrainingPlanArn"]] == []
    assert world.plane.create_counts() == {"p": 2, "q": 1}
