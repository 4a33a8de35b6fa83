"""The extension's pure decisions (handler/extension.py) and the fake's extension APIs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from novapod.capacity.naming import extension_name
from novapod.constructs.training_plan.handler import claims, extension
from novapod.constructs.training_plan.handler.decisions import PropertyError
from tests.handlers.world import PLAN, World

NAME = extension_name(PLAN, 48)
START = datetime(2030, 1, 6, tzinfo=UTC)
PLAN_48H = {"StartTime": START, "EndTime": START + timedelta(hours=48)}


def props(**overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "ExtendHours": "48",
        "ExtensionName": NAME,
        "ApprovedExtensionName": NAME,
        "ExtensionMaxUpfrontFee": "40000",
        "ExtensionCurrency": "USD",
        "DurationHours": "48",
    }
    raw.update(overrides)
    return {k: v for k, v in raw.items() if v is not None}


def parsed(**overrides: Any) -> extension.ExtensionProperties:
    found = extension.parse_extension(props(**overrides), PLAN)
    assert found is not None
    return found


# --- properties ---------------------------------------------------------------------------


def test_properties_parse_into_the_approved_extension() -> None:
    assert parsed() == extension.ExtensionProperties(
        name=NAME,
        hours=48,
        bought_hours=48,
        approved_name=NAME,
        max_upfront_fee=Decimal(40000),
        currency="USD",
    )
    assert extension.parse_extension({"PlanName": PLAN}, PLAN) is None
    assert extension.extension_refusal(parsed()) is None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ExtendHours": None}, "ExtensionName needs ExtendHours, the hours it adds in total"),
        ({"ExtendHours": "12"}, "ExtendHours must be between 24 and 4368, not 12"),
        (
            {"ExtensionName": extension_name("other-plan", 48)},
            f"ExtensionName '{extension_name('other-plan', 48)}' does not name an extension of "
            f"training plan {PLAN} by 48 h",
        ),
        (
            {"ExtendHours": "96"},
            f"ExtensionName '{NAME}' does not name an extension of training plan {PLAN} by 96 h",
        ),
        ({"DurationHours": None}, "DurationHours is required"),
        (
            {"ExtensionMaxUpfrontFee": None},
            "ExtensionMaxUpfrontFee is required and must be a decimal number",
        ),
        ({"ExtensionCurrency": "usd"}, "ExtensionCurrency 'usd' must be a three-letter code"),
    ],
)
def test_bad_properties_are_named(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(PropertyError) as caught:
        extension.parse_extension(props(**overrides), PLAN)
    assert str(caught.value) == message


def test_an_unapproved_extension_is_refused() -> None:
    assert extension.extension_refusal(parsed(ApprovedExtensionName=None)) == (
        f"extension {NAME} is not approved: ApprovedExtensionName is None, and the custom "
        "resource extends a plan only when it equals ExtensionName (extend.approve in the "
        "config names this exact extension)"
    )


# --- what the plan has --------------------------------------------------------------------


def test_failed_extensions_add_no_hours() -> None:
    history = [
        {"DurationHours": 24, "Status": "Active"},
        {"DurationHours": 48, "Status": "Failed"},
        {"DurationHours": 24, "Status": "Pending"},
    ]
    assert extension.extended_hours(PLAN_48H, history, 48) == 48


def test_the_end_time_counts_when_the_history_lags() -> None:
    plan = {**PLAN_48H, "EndTime": START + timedelta(hours=120)}
    assert extension.extended_hours(plan, [], 48) == 72
    assert extension.extended_hours({}, [], 48) == 0
    # The larger of the two reads wins: neither alone is allowed to buy again.
    assert extension.extended_hours(plan, [{"DurationHours": 96, "Status": "Active"}], 48) == 96


@pytest.mark.parametrize(
    ("seen", "target", "missing"), [(0, 48, 48), (24, 48, 24), (48, 48, 0), (96, 48, 0)]
)
def test_only_the_missing_hours_are_bought(seen: int, target: int, missing: int) -> None:
    assert extension.missing_hours(seen, target) == missing


@pytest.mark.parametrize(
    ("seen", "hours", "sellable"),
    [(0, 336, True), (0, 360, False), (0, 504, True), (0, 4368, True), (24, 360, True)],
)
def test_one_extension_is_whole_days_to_14_or_whole_weeks(
    seen: int, hours: int, sellable: bool
) -> None:
    name = extension_name(PLAN, hours)
    ext = parsed(ExtendHours=str(hours), ExtensionName=name, ApprovedExtensionName=name)
    assert (extension.sellable_problem(PLAN, ext, seen) is None) is sellable


# --- offerings ------------------------------------------------------------------------------


def offer(offering_id: str, **fields: Any) -> dict[str, Any]:
    base = {
        "TrainingPlanExtensionOfferingId": offering_id,
        "DurationHours": 48,
        "UpfrontFee": "100.00",
        "CurrencyCode": "USD",
        "AvailabilityZone": "us-east-1b",
        "StartDate": START,
    }
    return {**base, **fields}


def test_screening_keeps_only_what_fits_and_says_why() -> None:
    screening = extension.screen_extension_offerings(
        [
            offer("a"),
            offer("b", DurationHours=72),
            offer("c", AvailabilityZone="us-east-1a"),
            offer("d", CurrencyCode="EUR"),
            offer("e", UpfrontFee="n/a"),
        ],
        hours=48,
        currency="USD",
        zones={"us-east-1b"},
    )
    assert [c["TrainingPlanExtensionOfferingId"] for c in screening.candidates] == ["a"]
    assert screening.skipped == [
        ("b", ("it adds 72 h, not 48 h",)),
        ("c", ("its zone us-east-1a is not the plan's (us-east-1b)",)),
        ("d", ("it is priced in EUR, not in USD (the currency of ExtensionMaxUpfrontFee)",)),
        ("e", ("its UpfrontFee 'n/a' is not a number",)),
    ]


def test_the_cheapest_is_chosen_then_the_earliest_then_the_first() -> None:
    later = START + timedelta(days=1)
    choice = extension.choose_extension(
        [offer("late", StartDate=later), offer("dear", UpfrontFee="101"), offer("early")]
    )
    assert choice is not None and choice["TrainingPlanExtensionOfferingId"] == "early"
    tie = extension.choose_extension([offer("first"), offer("second")])
    assert tie is not None and tie["TrainingPlanExtensionOfferingId"] == "first"
    assert extension.choose_extension([]) is None


def test_the_cap_is_inclusive() -> None:
    ext = parsed(ExtensionMaxUpfrontFee="100")
    assert extension.extension_fee_refusal(offer("a"), ext, PLAN) is None
    assert extension.extension_fee_refusal(offer("a", UpfrontFee="100.01"), ext, PLAN) == (
        "the cheapest extension offering a costs 100.01 USD, above ExtensionMaxUpfrontFee 100 "
        f"USD, so training plan {PLAN} was not extended; raise extend.max_upfront_fee or "
        "extend by less"
    )


# --- after the purchase ---------------------------------------------------------------------


def test_an_extension_adopted_without_an_attempt_is_ready_once_paid_and_in_place() -> None:
    # claims.in_place: no timestamps, only the plan's total and the payments it lists.
    paid = [{"DurationHours": 48, "Status": "Active"}]
    pending = [{"DurationHours": 48, "Status": "Pending"}]
    assert claims.in_place(paid, 48, 48) is True
    assert claims.in_place(pending, 48, 48) is False
    assert claims.in_place([], 0, 48) is False  # not shown yet
    assert claims.in_place(paid, 72, 48) is True  # more than asked: nothing is undone


# --- the fake's extension APIs, as botocore sends and reads them ----------------------------


def sagemaker() -> Any:
    return boto3.client("sagemaker")


def bought_plan(world: World) -> str:
    return world.plane.add_plan(PLAN, world.plane.offerings[2], statuses=["Scheduled"])


def test_the_fake_sells_an_extension_and_moves_the_end(world: World) -> None:
    arn = bought_plan(world)
    world.plane.add_extension_offering(PLAN, "tpeo-a", hours=48, fee="10.00", zone="us-east-1b")
    client = sagemaker()
    found = client.search_training_plan_offerings(TrainingPlanArn=arn, DurationHours=40)
    (offering,) = found["TrainingPlanExtensionOfferings"]  # 40 h is rounded up to 48 h
    assert offering["StartDate"] == datetime(2030, 1, 8, tzinfo=UTC).astimezone()
    assert found["TrainingPlanOfferings"] == []
    bought = client.extend_training_plan(TrainingPlanExtensionOfferingId="tpeo-a")
    assert [e["DurationHours"] for e in bought["TrainingPlanExtensions"]] == [48]
    end = client.describe_training_plan(TrainingPlanName=PLAN)["EndTime"]
    assert end == datetime(2030, 1, 10, tzinfo=UTC).astimezone()
    assert world.plane.extend_counts() == {PLAN: 1}


def test_the_fake_pages_the_history_with_botocores_paginator(world: World) -> None:
    arn = bought_plan(world)
    world.plane.history_page_size = 2
    for hours in (24, 48, 72):
        world.plane.add_extension(PLAN, hours)
    pages = list(
        sagemaker()
        .get_paginator("describe_training_plan_extension_history")
        .paginate(TrainingPlanArn=arn)
    )
    assert [[e["DurationHours"] for e in p["TrainingPlanExtensions"]] for p in pages] == [
        [24, 48],
        [72],
    ]


def test_the_fake_refuses_what_the_service_model_refuses(world: World) -> None:
    bought_plan(world)
    with pytest.raises(ClientError) as short:
        sagemaker().describe_training_plan_extension_history(
            TrainingPlanArn="arn:aws:sagemaker:us-east-1:123456789012:notebook-instance/x"
        )
    assert short.value.response["Error"]["Code"] == "ValidationException"
    assert "regular expression pattern" in short.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as unknown:
        sagemaker().extend_training_plan(TrainingPlanExtensionOfferingId="tpeo-none")
    assert unknown.value.response["Error"]["Code"] == "ResourceNotFound"


def test_the_fake_sells_no_extension_of_a_pending_plan(world: World) -> None:
    arn = world.plane.add_plan(PLAN, world.plane.offerings[2], statuses=["Pending"])
    with pytest.raises(ClientError) as pending:
        sagemaker().search_training_plan_offerings(TrainingPlanArn=arn, DurationHours=48)
    assert pending.value.response["Error"]["Message"] == (
        f"Training plan {PLAN} is Pending; only Active or Scheduled plans can be extended."
    )
