"""The fake control plane answers real boto3 clients in the shapes botocore parses."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from tests.fakes.aws_control_plane import JSON_CONTENT_TYPE, Segment
from tests.handlers.world import T0, World

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


# --- the service models ------------------------------------------------------------------

UNCHECKED = Config(
    retries={"mode": "standard", "total_max_attempts": 1}, parameter_validation=False
)


def refusal(call: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    error = caught.value.response["Error"]
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    return f"{error['Code']}: {error['Message']}"


def test_sagemaker_requests_are_checked_against_the_service_model(world: World) -> None:
    # botocore checks types and required members only; the fake checks the rest, as
    # SageMaker does, and buys nothing for a refused request.
    sagemaker = boto3.client("sagemaker", config=ONE_ATTEMPT)
    assert refusal(
        lambda: sagemaker.create_training_plan(
            TrainingPlanName="plan_1", TrainingPlanOfferingId="tpo-cheap"
        )
    ) == (
        "ValidationException: 1 validation error detected: Value 'plan_1' at "
        "'trainingPlanName' failed to satisfy constraint: Member must satisfy regular "
        "expression pattern: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}"
    )
    assert "Member must satisfy enum value set: [ml.p4d.24xlarge, ml.p5.48xlarge" in refusal(
        lambda: sagemaker.search_training_plan_offerings(InstanceType="ml.g5.xlarge")
    )
    tags = [{"Key": f"k{i}", "Value": "v"} for i in range(51)]
    assert "at 'tags' failed to satisfy constraint: Member must have length less than or " in (
        refusal(
            lambda: sagemaker.create_training_plan(
                TrainingPlanName="p", TrainingPlanOfferingId="tpo-cheap", Tags=tags
            )
        )
    )
    assert "at 'instanceCount' failed to satisfy constraint: Member must have value less " in (
        refusal(lambda: sagemaker.search_training_plan_offerings(InstanceCount=300))
    )
    unchecked = boto3.client("sagemaker", config=UNCHECKED)
    assert refusal(lambda: unchecked.create_training_plan(TrainingPlanName="p")) == (
        "ValidationException: 1 validation error detected: Value None at "
        "'trainingPlanOfferingId' failed to satisfy constraint: Member must not be null"
    )
    assert world.plane.plans == {}


def raw_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # loopback only
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_unknown_members_and_parameters_are_refused(world: World) -> None:
    status, body = raw_post(
        world.plane.url,
        json.dumps({"TrainingPlanName": "p", "Colour": "red"}).encode(),
        {"X-Amz-Target": "SageMaker.DescribeTrainingPlan", "Content-Type": JSON_CONTENT_TYPE},
    )
    assert status == 400
    assert json.loads(body)["message"] == (
        "1 validation error detected: 'colour' is not a member of DescribeTrainingPlanRequest"
    )
    status, body = raw_post(
        world.plane.url,
        b"Action=DescribeAvailabilityZones&Version=2016-11-15&ZoneName.1=us-east-1a&Colour=red"
        b"&AllAvailabilityZones=maybe",
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert status == 400
    assert "<Code>UnknownParameter</Code>" in body
    assert "The parameter Colour is not recognized" in body
    assert "Invalid value 'maybe' for AllAvailabilityZones: a boolean is true or false" in body


def test_answers_outside_the_output_shapes_are_reported(world: World) -> None:
    world.plane.add_plan("p", world.plane.offerings[0], statuses=["Active"])
    world.plane.plans["p"]["Colour"] = "red"
    world.plane.plans["p"]["TotalInstanceCount"] = -1
    boto3.client("sagemaker").describe_training_plan(TrainingPlanName="p")
    found, world.plane.violations[:] = list(world.plane.violations), []  # checked at teardown
    assert found == [
        "DescribeTrainingPlan answer: Value -1 at 'totalInstanceCount' failed to satisfy "
        "constraint: Member must have value greater than or equal to 0",
        "DescribeTrainingPlan answer: 'colour' is not a member of DescribeTrainingPlanResponse",
    ]


def test_near_matches_and_segments_are_offered_for_any_search(world: World) -> None:
    start = T0 + timedelta(days=2)
    world.plane.add_offering(
        "tpo-segments",
        fee="1.00",
        segments=[
            Segment("us-east-1b", 2, start, 24),
            Segment("us-east-1b", 2, start + timedelta(days=2), 24, "ml.p5e.48xlarge"),
        ],
        near_match=True,
    )
    found = boto3.client("sagemaker").search_training_plan_offerings(
        InstanceType="ml.trn1.32xlarge", InstanceCount=64, DurationHours=24
    )["TrainingPlanOfferings"]
    assert [o["TrainingPlanOfferingId"] for o in found] == ["tpo-segments"]
    capacity = found[0]["ReservedCapacityOfferings"]
    assert [(c["InstanceType"], c["InstanceCount"], c["StartTime"]) for c in capacity] == [
        ("ml.p5.48xlarge", 2, start),
        ("ml.p5e.48xlarge", 2, start + timedelta(days=2)),
    ]


def test_offerings_hold_every_scripted_instance_and_may_be_larger_than_asked(
    world: World,
) -> None:
    # 9 over two zones is 5 + 4 (the fake used to drop the remainder and sell 4 + 4).
    odd = world.plane.add_offering(
        "tpo-odd", zones=["us-east-1a", "us-east-1b"], start=T0, fee="1.00", instance_count=9
    )
    assert [
        (r["AvailabilityZone"], r["InstanceCount"]) for r in odd["ReservedCapacityOfferings"]
    ] == [
        ("us-east-1a", 5),
        ("us-east-1b", 4),
    ]
    # A near match larger than the search asks for is offered, and sells what it holds.
    world.plane.add_offering(
        "tpo-eight", zones=["us-east-1b"], start=T0, fee="1.00", instance_count=8, near_match=True
    )
    sagemaker = boto3.client("sagemaker", config=ONE_ATTEMPT)
    found = sagemaker.search_training_plan_offerings(
        InstanceType="ml.p5.48xlarge", InstanceCount=4, DurationHours=48
    )["TrainingPlanOfferings"]
    assert "tpo-eight" in [o["TrainingPlanOfferingId"] for o in found]
    assert "tpo-odd" not in [o["TrainingPlanOfferingId"] for o in found]
    sagemaker.create_training_plan(TrainingPlanName="big", TrainingPlanOfferingId="tpo-eight")
    plan = sagemaker.describe_training_plan(TrainingPlanName="big")
    assert (plan["TotalInstanceCount"], plan["AvailableInstanceCount"]) == (8, 8)
    assert world.plane.violations == []


@pytest.mark.parametrize(
    ("inject", "error"),
    [
        (lambda plane: plane.hang("CreateTrainingPlan", seconds=1.5), ReadTimeoutError),
        (lambda plane: plane.reset_connection("CreateTrainingPlan"), ConnectionClosedError),
    ],
)
def test_a_hung_or_reset_call_is_never_worked(world: World, inject: Any, error: type) -> None:
    inject(world.plane)
    buyer = boto3.client(
        "sagemaker",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}, read_timeout=1),
    )
    with pytest.raises(error):
        buyer.create_training_plan(TrainingPlanName="p", TrainingPlanOfferingId="tpo-cheap")
    assert world.plane.plans == {}
    assert world.plane.create_counts() == {"p": 1}
