"""Purchase-path bugs a mutation probe planted and the suite once let through (issue 8).

Each test names the bug it kills; all assert what the fake AWS received (no
CreateTrainingPlan where nothing may be bought) or the exact refusal.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from novapod.constructs.training_plan.handler import decisions
from tests.handlers.world import LEDGER_TABLE, PLAN, T0, World, ZONES

NO_CURRENCY: dict[str, Any] = {
    "TrainingPlanOfferingId": "tpo-no-currency",
    "TargetResources": ["hyperpod-cluster"],
    "DurationHours": 48,
    "DurationMinutes": 0,
    "UpfrontFee": "1000.00",
    "ReservedCapacityOfferings": [
        {
            "InstanceType": "ml.p5.48xlarge",
            "InstanceCount": 4,
            "AvailabilityZone": "us-east-1b",
            "DurationHours": 48,
            "DurationMinutes": 0,
            "StartTime": T0 + timedelta(days=2),
            "EndTime": T0 + timedelta(days=4),
        }
    ],
}


# --- an Update that keeps the plan name is not a new request ---------------------------


def test_update_keeping_the_name_buys_nothing_when_the_plan_is_gone(world: World) -> None:
    """Bug: the Update treated as a new request would buy the missing plan again."""
    props = world.props()
    event = world.driver.event("Update", props, physical_id=PLAN, old_props=props)
    outcome = world.driver.send(event)
    assert (outcome.status, outcome.reason) == (
        "FAILED",
        f"training plan {PLAN} does not exist and this update keeps the plan name, so it "
        "buys nothing; change the plan request to buy a new plan",
    )
    assert world.plane.operations() == ["DescribeTrainingPlan"]


def test_update_keeping_the_name_needs_no_new_approval(world: World) -> None:
    """Bug: the Update treated as a new request would refuse the plan it already has
    once the approval is withdrawn (it buys nothing, so it needs none)."""
    assert world.stack().create(world.props()).ok
    mark = world.plane.mark()
    # Sent directly: a failed Update would be hidden by the rollback that adopts.
    event = world.driver.event(
        "Update",
        world.props(ApprovedPlanName="", MaxUpfrontFee="1"),
        physical_id=PLAN,
        old_props=world.props(),
    )
    outcome = world.driver.send(event)
    assert (outcome.status, outcome.reason, outcome.physical_id) == ("SUCCESS", "", PLAN)
    assert outcome.data["PlanName"] == PLAN
    assert "CreateTrainingPlan" not in world.plane.operations_since(mark)
    assert dict(world.plane.create_counts()) == {PLAN: 1}


# --- only ResourceNotFound means "no such plan" ----------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "message"),
    [
        (
            "AccessDeniedException",
            400,
            "User is not authorized to perform: sagemaker:DescribeTrainingPlan",
        ),
        ("ValidationException", 400, "1 validation error detected"),
    ],
)
def test_a_failed_describe_never_leads_to_a_purchase(
    world: World, code: str, status: int, message: str
) -> None:
    """Bug: every DescribeTrainingPlan error read as "no such plan" buys blind."""
    world.plane.error("DescribeTrainingPlan", code, status=status, message=message)
    outcome = world.stack().create(world.props())
    assert (outcome.status, outcome.reason) == (
        "FAILED",
        f"DescribeTrainingPlan for training plan {PLAN} failed ({code}: {message})",
    )
    assert world.plane.operations() == ["DescribeTrainingPlan"]
    assert world.plane.calls_to("CreateTrainingPlan") == []


def test_a_describe_failing_with_5xx_after_retries_never_leads_to_a_purchase(
    world: World,
) -> None:
    world.plane.server_error("DescribeTrainingPlan", times=20)
    outcome = world.stack().create(world.props())
    assert outcome.status == "FAILED"
    assert outcome.reason.startswith(f"DescribeTrainingPlan for training plan {PLAN} failed (")
    assert set(world.plane.operations()) == {"DescribeTrainingPlan"}


# --- an offering without a currency never passes the fee cap ---------------------------


def test_the_fee_cap_refuses_an_offering_without_a_currency() -> None:
    assert decisions.check_fee_cap(NO_CURRENCY, Decimal("100000"), "USD", plan_name=PLAN) == (
        "offering tpo-no-currency is priced in an unknown currency but MaxUpfrontFee is in "
        f"USD, so training plan {PLAN} was not bought"
    )


def test_screening_skips_an_offering_without_a_currency() -> None:
    request = decisions.parse_properties(World.props()).offering_request()
    assert decisions.offering_problems(NO_CURRENCY, request) == [
        "it is priced in no currency, not in USD (the currency of MaxUpfrontFee)"
    ]


def test_an_offering_without_a_currency_is_never_bought(world: World) -> None:
    world.plane.reset()
    world.plane.dynamodb.create_table(
        LEDGER_TABLE, partition_key="Environment", sort_key="Purchase"
    )
    world.plane.set_zones(ZONES)
    world.plane.add_offering(
        "tpo-no-currency",
        zones=["us-east-1b"],
        start=T0 + timedelta(days=2),
        fee="1000.00",
        currency=None,
    )
    outcome = world.stack().create(world.props())
    assert outcome.status == "FAILED"
    assert "tpo-no-currency" in outcome.reason
    assert "it is priced in no currency, not in USD" in outcome.reason
    assert world.plane.calls_to("CreateTrainingPlan") == []
