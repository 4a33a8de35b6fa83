"""`offerings.py` (shared with the `novapod offerings` command) with real boto3 clients
against the fake control plane."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3

from novapod.constructs.training_plan.handler import offerings
from tests.handlers.world import T0, ZONES, World, offering_request


def clients() -> tuple[Any, Any]:
    return boto3.client("sagemaker"), boto3.client("ec2")


request = offering_request


def test_zone_name_to_id_reads_this_accounts_zones(world: World) -> None:
    _, ec2 = clients()
    assert offerings.zone_name_to_id(ec2) == ZONES
    assert world.plane.operations() == ["DescribeAvailabilityZones"]


def test_search_sends_the_request_as_the_service_model_serializes_it(world: World) -> None:
    sagemaker, _ = clients()
    found = offerings.search(sagemaker, request())
    assert [o["TrainingPlanOfferingId"] for o in found] == [
        "tpo-elsewhere",
        "tpo-split",
        "tpo-cheap",
        "tpo-early",
    ]
    (sent,) = world.plane.calls_to("SearchTrainingPlanOfferings")
    assert sent == {
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 4,
        "DurationHours": 48,
        "TargetResources": ["hyperpod-cluster"],
        "StartTimeAfter": T0.timestamp(),  # JSON protocol timestamps are epoch seconds
        "EndTimeBefore": (T0 + timedelta(days=30)).timestamp(),
    }


def test_candidates_are_annotated_and_the_policy_picks_one(world: World) -> None:
    sagemaker, ec2 = clients()
    fitting, chosen = offerings.candidates(sagemaker, ec2, request())
    assert [
        (o["TrainingPlanOfferingId"], o["AvailabilityZoneId"], o["SubnetIds"]) for o in fitting
    ] == [
        ("tpo-cheap", "use1-az6", ["subnet-0b1", "subnet-0b2"]),
        ("tpo-early", "use1-az4", ["subnet-0a"]),
    ]
    assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-cheap"
    _, earliest = offerings.candidates(sagemaker, ec2, request(choice_policy="earliest"))
    assert earliest is not None and earliest["TrainingPlanOfferingId"] == "tpo-early"
    assert "CreateTrainingPlan" not in world.plane.operations()


def test_candidates_without_a_vpc_keep_every_single_zone_offering(world: World) -> None:
    sagemaker, ec2 = clients()
    fitting, chosen = offerings.candidates(sagemaker, ec2, request(subnet_ids_by_zone_id=None))
    assert [o["TrainingPlanOfferingId"] for o in fitting] == [
        "tpo-elsewhere",
        "tpo-cheap",
        "tpo-early",
    ]
    assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-elsewhere"


def test_no_offering_gives_no_candidates_and_no_choice(world: World) -> None:
    sagemaker, ec2 = clients()
    assert offerings.candidates(sagemaker, ec2, request(instance_count=64)) == ([], None)


def test_a_larger_cheaper_offering_is_skipped_with_its_count(world: World) -> None:
    # Returned for any search, in our zone, cheaper than tpo-cheap: only its 8 instances
    # (not the 4 asked for) keep it from being chosen.
    world.plane.add_offering(
        "tpo-eight",
        zones=["us-east-1b"],
        start=T0 + timedelta(days=2),
        fee="80000.00",
        instance_count=8,
        near_match=True,
    )
    sagemaker, ec2 = clients()
    found = offerings.find(sagemaker, ec2, request(currency="USD"))
    assert ("tpo-eight", ("it offers 8 instances in total, not 4",)) in found.skipped
    assert "tpo-eight" not in [c["TrainingPlanOfferingId"] for c in found.candidates]
    assert found.chosen is not None and found.chosen["TrainingPlanOfferingId"] == "tpo-cheap"
    assert "CreateTrainingPlan" not in world.plane.operations()
