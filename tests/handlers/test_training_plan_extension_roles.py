"""An extension bought with the handler roles of a synthesized template: the fake
refuses whatever their statements do not allow (see test_fake_iam.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.conftest import ROOT, Synthesized
from tests.fakes import iam
from tests.fakes.iam import Principal
from tests.handlers.test_fake_iam import (
    EXAMPLE_ACCOUNT,
    NOW,
    denied,
    strict_stack,
    with_storage_outputs,
)
from tests.handlers.world import LEDGER_TABLE, World

EXTENDED = ROOT / "tests" / "fixtures" / "extend-plans.yaml"
LITE = "novapod-ext-lite-31e61478"
LITE_ARN = f"arn:aws:sagemaker:us-east-1:{EXAMPLE_ACCOUNT}:training-plan/{LITE}"
START = datetime(2027, 1, 10, tzinfo=NOW.tzinfo)


def _roles(result: Synthesized) -> tuple[Principal, Principal, dict[str, Any]]:
    template = with_storage_outputs(result.templates["capacity"], EXAMPLE_ACCOUNT)
    functions = iam.provider_functions(template, "TrainingPlanLite")

    def principal(function_id: str) -> Principal:
        role = iam.function_role(template, function_id)
        statements = iam.role_statements(
            template, role, account=EXAMPLE_ACCOUNT, region="us-east-1"
        )
        return Principal(role, statements)

    raw = template["Resources"]["TrainingPlanLite"]["Properties"]  # LedgerTable resolved
    props = {k: copy.deepcopy(v) for k, v in raw.items() if k != "ServiceToken"}
    props["SubnetIdsByZoneId"] = {z: [f"subnet-{z}"] for z in sorted(props["SubnetIdsByZoneId"])}
    return principal(functions["on_event"]), principal(functions["is_complete"]), props


@pytest.fixture(scope="module")
def roles(synth: Callable[[Any], Synthesized]) -> tuple[Principal, Principal, dict[str, Any]]:
    return _roles(synth(EXTENDED))


def _bought_lite(world: World) -> None:
    offering = world.plane.add_offering(
        "tpo-lite", zones=["us-east-1b"], start=START, fee="55000.00", duration_hours=144
    )
    world.plane.add_plan(LITE, offering, statuses=["Scheduled"])
    world.plane.add_extension_offering(LITE, "tpeo-lite", hours=48, fee="15000.00")


def test_the_synthesized_roles_extend_the_plan(world: World, roles) -> None:
    on_event, is_complete, props = roles
    stack = strict_stack(world, on_event=on_event, is_complete=is_complete, account=EXAMPLE_ACCOUNT)
    _bought_lite(world)  # after the account is set: the plan's ARN names it
    outcome = stack.create(props)
    assert outcome.ok, outcome.reason
    assert outcome.data["ExtendedHours"] == "48"
    assert outcome.data["EndTime"] == (START + timedelta(hours=192)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert world.plane.calls_to("ExtendTrainingPlan") == [
        {"TrainingPlanExtensionOfferingId": "tpeo-lite"}
    ]


def test_without_the_extension_statement_nothing_is_bought(world: World, roles) -> None:
    on_event, is_complete, props = roles
    stack = strict_stack(
        world,
        on_event=on_event.without("ExtendOwnPlans"),
        is_complete=is_complete,
        account=EXAMPLE_ACCOUNT,
    )
    _bought_lite(world)
    outcome = stack.create(props)
    action = "sagemaker:DescribeTrainingPlanExtensionHistory"
    assert outcome.reason == (
        f"DescribeTrainingPlanExtensionHistory for training plan {LITE} failed "
        f"({denied(on_event, action, LITE_ARN)})"
    )
    assert "ExtendTrainingPlan" not in world.plane.operations()
    assert world.plane.extensions == {}


LITE_EXT = "novapod-ext-lite-31e61478-ext48h-ef01e65d"
LITE_MARK = f"novapod-extension:{LITE_EXT}:0a1b2c3d4e5f"


def test_the_synthesized_roles_claim_the_extension_in_the_ledger(world: World, roles) -> None:
    on_event, is_complete, props = roles
    stack = strict_stack(world, on_event=on_event, is_complete=is_complete, account=EXAMPLE_ACCOUNT)
    _bought_lite(world)
    assert stack.create(props).ok
    states = {i["Purchase"]: (i["Environment"], i["State"]) for i in world.ledger()}
    assert states == {
        f"plan#{LITE}": ("ext", "bought"),  # adopted: bought before the ledger knew it
        f"extension#{LITE_EXT}": ("ext", "bought"),
    }
    assert not world.plane.calls_to("AddTags")  # no tag markers any more


def test_without_the_ledger_statement_nothing_is_bought(world: World, roles) -> None:
    on_event, is_complete, props = roles
    stack = strict_stack(
        world,
        on_event=on_event.without("PurchaseLedger"),
        is_complete=is_complete,
        account=EXAMPLE_ACCOUNT,
    )
    _bought_lite(world)
    outcome = stack.create(props)
    assert outcome.reason.startswith(
        f"training plan {LITE} was not bought by this event: "
        f"the purchase ledger could not be used (reading "
        f"purchase plan#{LITE} from the purchase ledger {LEDGER_TABLE} failed "
        "(AccessDeniedException: "
    )
    assert "ExtendTrainingPlan" not in world.plane.operations()


def test_the_ledger_statement_reaches_only_the_environments_items(world: World, roles) -> None:
    on_event, _, _ = roles
    world.plane.account = EXAMPLE_ACCOUNT
    world.plane.act_as(on_event)
    dynamodb = boto3.client("dynamodb")
    own = {"Environment": {"S": "ext"}, "Purchase": {"S": "plan#x"}}
    dynamodb.get_item(TableName=LEDGER_TABLE, Key=own, ConsistentRead=True)
    other = {"Environment": {"S": "ext-a"}, "Purchase": {"S": "plan#x"}}
    for call in (
        lambda: dynamodb.get_item(TableName=LEDGER_TABLE, Key=other, ConsistentRead=True),
        lambda: dynamodb.put_item(TableName=LEDGER_TABLE, Item={**other, "State": {"S": "x"}}),
    ):
        with pytest.raises(ClientError) as raised:
            call()
        assert raised.value.response["Error"]["Code"] == "AccessDeniedException"


def test_the_marker_statement_only_deletes_old_markers(world: World, roles) -> None:
    on_event, _, _ = roles
    world.plane.account = EXAMPLE_ACCOUNT
    _bought_lite(world)
    world.plane.tag_plan(LITE, LITE_MARK, "bought tpeo-lite")
    world.plane.act_as(on_event)
    sagemaker = boto3.client("sagemaker")
    for call in (
        lambda: sagemaker.add_tags(ResourceArn=LITE_ARN, Tags=[{"Key": "owner", "Value": "m"}]),
        lambda: sagemaker.add_tags(ResourceArn=LITE_ARN, Tags=[{"Key": LITE_MARK, "Value": "x"}]),
        lambda: sagemaker.delete_tags(ResourceArn=LITE_ARN, TagKeys=["project", LITE_MARK]),
    ):
        with pytest.raises(ClientError) as raised:
            call()
        assert raised.value.response["Error"]["Code"] == "AccessDeniedException"
    sagemaker.delete_tags(ResourceArn=LITE_ARN, TagKeys=[LITE_MARK])
