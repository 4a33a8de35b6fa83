"""Unit tests of the TrainingPlan handler's pure decisions (no AWS, no fake)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from novapod.constructs.handler_core import values
from novapod.constructs.training_plan.handler import decisions
from novapod.constructs.training_plan.handler.decisions import (
    OfferingRequest,
    PropertyError,
    TrainingPlanError,
)
from tests.handlers.world import World

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ZONES = {"us-east-1a": "use1-az4", "us-east-1b": "use1-az6", "us-east-1c": "use1-az1"}
SUBNETS = {"use1-az4": ("subnet-0a",), "use1-az6": ("subnet-0b1", "subnet-0b2")}


def raw(**overrides: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:f",
        "Mode": "purchase",
        "PlanName": "nova-plan-1",
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": "4",
        "DurationHours": "48",
        "ApprovedPlanName": "nova-plan-1",
        "MaxUpfrontFee": "100000.50",
        "Currency": "USD",
        "SubnetIdsByZoneId": json.dumps({"use1-az4": ["subnet-0a"]}),
    }
    props.update(overrides)
    return {k: v for k, v in props.items() if v is not None}


def offering(
    offering_id: str,
    *,
    fee: str = "100.00",
    start_days: float = 1,
    zones: tuple[str, ...] = ("us-east-1a",),
    currency: str = "USD",
) -> dict[str, Any]:
    start = T0 + timedelta(days=start_days)
    return {
        "TrainingPlanOfferingId": offering_id,
        "TargetResources": ["hyperpod-cluster"],
        "UpfrontFee": fee,
        "CurrencyCode": currency,
        "DurationHours": 48,
        "ReservedCapacityOfferings": [
            {
                "InstanceType": "ml.p5.48xlarge",
                "InstanceCount": 4 // len(zones),
                "AvailabilityZone": zone,
                "StartTime": start,
                "EndTime": start + timedelta(hours=48),
            }
            for zone in zones
        ],
    }


def plan(**overrides: Any) -> dict[str, Any]:
    described: dict[str, Any] = {
        "TrainingPlanArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/nova-plan-1",
        "TrainingPlanName": "nova-plan-1",
        "Status": "Scheduled",
        "StartTime": T0,
        "EndTime": T0 + timedelta(hours=48),
        "UpfrontFee": "90000.00",
        "CurrencyCode": "USD",
        "TotalInstanceCount": 4,
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [
            {
                "InstanceType": "ml.p5.48xlarge",
                "TotalInstanceCount": 4,
                "AvailabilityZone": "us-east-1a",
                "AvailabilityZoneId": "use1-az4",
            }
        ],
    }
    described.update(overrides)
    return described


# --- properties -------------------------------------------------------------------------


def test_purchase_properties_parse_from_cloudformation_strings() -> None:
    props = decisions.parse_properties(
        raw(
            StartTimeAfter="2030-01-01T00:00:00Z",
            EndTimeBefore="2030-02-01T00:00:00+01:00",
            TargetResources=json.dumps(["hyperpod-cluster", "training-job"]),
            Tags=[{"Key": "team", "Value": "nova"}],
            PendingTimeoutSeconds="1200",
            ChoicePolicy="earliest",
        )
    )
    assert props.mode == "purchase"
    assert (props.instance_type, props.instance_count, props.duration_hours) == (
        "ml.p5.48xlarge",
        4,
        48,
    )
    assert props.start_time_after == T0
    assert props.end_time_before == datetime(2030, 1, 31, 23, tzinfo=UTC)
    assert props.target_resources == ("hyperpod-cluster", "training-job")
    assert props.max_upfront_fee == Decimal("100000.50")
    assert props.purchase_approved is True
    assert props.pending_timeout_seconds == 1200
    assert props.choice_policy == "earliest"
    assert props.subnet_ids_by_zone_id == {"use1-az4": ("subnet-0a",)}
    assert props.tag_list() == [{"Key": "team", "Value": "nova"}]
    assert props.lookup_name == "nova-plan-1"
    assert props.offering_request().search_kwargs() == {
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 4,
        "DurationHours": 48,
        "TargetResources": ["hyperpod-cluster", "training-job"],
        "StartTimeAfter": T0,
        "EndTimeBefore": datetime(2030, 1, 31, 23, tzinfo=UTC),
    }


def test_defaults_and_native_types_are_accepted() -> None:
    props = decisions.parse_properties(
        raw(
            InstanceCount=8,
            DurationHours=24,
            SubnetIdsByZoneId={"use1-az4": ["subnet-0a"], "use1-az6": []},
            StartTimeAfter="",
        )
    )
    assert (props.instance_count, props.duration_hours) == (8, 24)
    assert props.target_resources == ("hyperpod-cluster",)
    assert props.choice_policy == "cheapest"
    assert props.pending_timeout_seconds == decisions.DEFAULT_PENDING_TIMEOUT_SECONDS
    assert props.purchase_approved is True
    assert props.subnet_ids_by_zone_id == {"use1-az4": ("subnet-0a",)}  # empty zones dropped
    assert props.start_time_after is None
    assert props.tags == ()


@pytest.mark.parametrize(
    "approval", [None, "true", True, "nova-plan-2", "NOVA-PLAN-1", "nova-plan-1 ", ""]
)
def test_only_the_plan_name_itself_is_an_approval(approval: Any) -> None:
    props = decisions.parse_properties(raw(ApprovedPlanName=approval))
    assert props.purchase_approved is False
    shown = repr(approval) if isinstance(approval, str) else "None"
    assert decisions.purchase_refusal(props) == (
        f"buying training plan nova-plan-1 is not approved: ApprovedPlanName is {shown}, and "
        "the custom resource spends money only when it equals PlanName (purchase.approve in "
        "the config names this exact plan)"
    )


def test_adopt_mode_needs_only_the_arn_and_subnets() -> None:
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/team-plan"
    props = decisions.parse_properties(
        {
            "Mode": "adopt",
            "PlanName": "team-plan",
            "ExistingArn": arn,
            "SubnetIdsByZoneId": {"use1-az4": ["subnet-0a"]},
        }
    )
    assert props.lookup_name == "team-plan"
    assert (props.instance_type, props.instance_count, props.max_upfront_fee) == (None, None, None)
    assert decisions.purchase_refusal(props) is None
    with pytest.raises(TrainingPlanError, match="not in purchase mode"):
        props.offering_request()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"Mode": None}, "Mode must be one of purchase, adopt, not None"),
        ({"Mode": "buy"}, "Mode must be one of purchase, adopt, not 'buy'"),
        ({"PlanName": None}, "PlanName is required and must be a non-empty string"),
        ({"PlanName": "-plan"}, "PlanName '-plan' must be 1-64 letters, digits and inner"),
        ({"PlanName": "a" * 65}, "must be 1-64 letters"),
        ({"PlanName": "plan_1"}, "must be 1-64 letters"),
        ({"InstanceType": None}, "InstanceType is required and must be a non-empty string"),
        ({"InstanceType": "p5.48xlarge"}, "InstanceType 'p5.48xlarge' must be an ml.*"),
        ({"InstanceCount": "four"}, "InstanceCount must be a whole number, not 'four'"),
        ({"InstanceCount": "0"}, "InstanceCount must be between 1 and 256, not 0"),
        ({"InstanceCount": "257"}, "InstanceCount must be between 1 and 256, not 257"),
        ({"DurationHours": None}, "DurationHours is required"),
        ({"DurationHours": "1.5"}, "DurationHours must be a whole number, not '1.5'"),
        ({"StartTimeAfter": "next week"}, "StartTimeAfter must be an ISO-8601 timestamp"),
        (
            {"StartTimeAfter": "2030-02-01T00:00:00Z", "EndTimeBefore": "2030-01-01T00:00:00Z"},
            "StartTimeAfter must be earlier than EndTimeBefore",
        ),
        ({"TargetResources": ["endpoint"]}, "TargetResources must be a non-empty list of"),
        ({"TargetResources": []}, "TargetResources must be a non-empty list of"),
        ({"TargetResources": "[nope"}, "TargetResources is a string but not valid JSON"),
        ({"ChoicePolicy": "random"}, "ChoicePolicy must be one of cheapest, earliest"),
        ({"MaxUpfrontFee": None}, "MaxUpfrontFee is required and must be a decimal number"),
        ({"MaxUpfrontFee": "lots"}, "MaxUpfrontFee must be a decimal number, not 'lots'"),
        ({"MaxUpfrontFee": "-1"}, "MaxUpfrontFee must be a finite number of at least 0"),
        ({"MaxUpfrontFee": "Infinity"}, "MaxUpfrontFee must be a finite number of at least 0"),
        ({"MaxUpfrontFee": True}, "MaxUpfrontFee is required and must be a decimal number"),
        ({"Currency": None}, "Currency is required and must be a non-empty string"),
        ({"Currency": "usd"}, "Currency 'usd' must be a three-letter code"),
        ({"PendingTimeoutSeconds": "0"}, "PendingTimeoutSeconds must be between 1 and 86400"),
        ({"SubnetIdsByZoneId": None}, "SubnetIdsByZoneId must be an object of zone ID"),
        ({"SubnetIdsByZoneId": "{"}, "SubnetIdsByZoneId is a string but not valid JSON"),
        ({"SubnetIdsByZoneId": {"use1-az4": ["sg-1"]}}, "SubnetIdsByZoneId['use1-az4'] must"),
        ({"SubnetIdsByZoneId": {"use1-az4": []}}, "SubnetIdsByZoneId must list at least one"),
        ({"Tags": [{"Key": "", "Value": "x"}]}, "Tags entries must be objects with a Key"),
        ({"Tags": [{"Key": "k"}]}, "Tags entries must be objects with a Key"),
        ({"Tags": [{"Key": "k", "Value": "v"}] * 51}, "Tags must be a list of at most 50"),
        ({"Mode": "adopt"}, "ExistingArn is required and must be a non-empty string"),
        ({"Mode": "adopt", "ExistingArn": "arn:aws:s3:::b"}, "ExistingArn 'arn:aws:s3:::b' is"),
    ],
)
def test_invalid_properties_name_the_property(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(PropertyError) as caught:
        decisions.parse_properties(raw(**overrides))
    assert isinstance(caught.value, ValueError)
    assert message in str(caught.value)


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 300), st.text(max_size=12), st.just("")
)
_VALUES = st.one_of(
    _SCALARS, st.lists(_SCALARS, max_size=3), st.dictionaries(st.text(max_size=8), _SCALARS)
)
_PROPERTY_NAMES = {
    *raw(),
    "ExistingArn",
    "Tags",
    "TargetResources",
    "ChoicePolicy",
    "StartTimeAfter",
    "EndTimeBefore",
    "PendingTimeoutSeconds",
} - {"ServiceToken"}
_KEYS = st.sampled_from([*sorted(raw()), "ExistingArn", "Tags", "TargetResources", "Extra"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=8), st.booleans())
def test_any_properties_parse_or_raise_a_property_error(
    changes: dict[str, Any], start_valid: bool
) -> None:
    properties = {**(raw() if start_valid else {}), **changes}
    try:
        parsed = decisions.parse_properties(properties)
    except PropertyError as exc:
        # The message starts with the property it is about (see PropertyError).
        named = re.match(r"[A-Za-z]+", str(exc))
        assert named is not None and named.group() in _PROPERTY_NAMES, str(exc)
    else:
        assert parsed.subnet_ids_by_zone_id
        assert parsed.plan_name == properties["PlanName"]


# --- offerings --------------------------------------------------------------------------


def in_zones(
    offered: list[dict[str, Any]], subnets: dict[str, tuple[str, ...]] | None
) -> list[dict[str, Any]]:
    kept = [decisions.zone_problem(o, ZONES, subnets)[0] for o in offered]
    return [o for o in kept if o is not None]


def test_zone_problem_keeps_single_zone_offerings_where_we_have_subnets() -> None:
    offered = [
        offering("tpo-a", zones=("us-east-1a",)),
        offering("tpo-b", zones=("us-east-1b",)),
        offering("tpo-c", zones=("us-east-1c",)),  # no subnet there
        offering("tpo-split", zones=("us-east-1a", "us-east-1b")),
        offering("tpo-unknown", zones=("us-east-1z",)),  # zone not in this account's map
        {**offering("tpo-empty"), "ReservedCapacityOfferings": []},
    ]
    kept = in_zones(offered, SUBNETS)
    assert [o["TrainingPlanOfferingId"] for o in kept] == ["tpo-a", "tpo-b"]
    assert {k: kept[1][k] for k in ("AvailabilityZone", "AvailabilityZoneId", "SubnetIds")} == {
        "AvailabilityZone": "us-east-1b",
        "AvailabilityZoneId": "use1-az6",
        "SubnetIds": ["subnet-0b1", "subnet-0b2"],
    }
    assert "AvailabilityZone" not in offered[1]  # the input is not changed
    assert decisions.zone_problem(offered[5], ZONES, SUBNETS) == (None, "it lists no zone")


def test_zone_problem_without_a_vpc_keeps_any_single_zone() -> None:
    offered = [
        offering("tpo-c", zones=("us-east-1c",)),
        offering("tpo-split", zones=("us-east-1a", "us-east-1b")),
    ]
    kept = in_zones(offered, None)
    assert [(o["TrainingPlanOfferingId"], o["SubnetIds"]) for o in kept] == [("tpo-c", [])]


def test_cheapest_prefers_the_lowest_fee_then_the_earliest_start() -> None:
    candidates = [
        offering("tpo-dear-early", fee="200.00", start_days=1),
        offering("tpo-cheap-late", fee="99.50", start_days=9),
        offering("tpo-cheap-soon", fee="99.5", start_days=3),
        offering("tpo-no-fee", fee="", start_days=0),
    ]
    chosen = decisions.choose_offering(candidates, "cheapest")
    assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-cheap-soon"


def test_cheapest_compares_fees_as_decimals_not_strings() -> None:
    candidates = [offering("tpo-nine", fee="9.00"), offering("tpo-ten", fee="10.00")]
    chosen = decisions.choose_offering(candidates, "cheapest")
    assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-nine"


def test_earliest_prefers_the_first_start_then_the_lowest_fee() -> None:
    candidates = [
        offering("tpo-cheap-late", fee="10.00", start_days=9),
        offering("tpo-soon-dear", fee="300.00", start_days=2),
        offering("tpo-soon-cheap", fee="200.00", start_days=2),
    ]
    chosen = decisions.choose_offering(candidates, "earliest")
    assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-soon-cheap"


def test_full_ties_keep_the_service_order_and_nothing_chooses_none() -> None:
    candidates = [offering("tpo-first"), offering("tpo-second")]
    policies: tuple[decisions.ChoicePolicy, ...] = ("cheapest", "earliest")
    for policy in policies:
        chosen = decisions.choose_offering(candidates, policy)
        assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-first"
    assert decisions.choose_offering([], "cheapest") is None


# --- fee cap ----------------------------------------------------------------------------


def test_fee_at_or_under_the_cap_may_be_bought() -> None:
    assert decisions.check_fee_cap(offering("tpo", fee="100.00"), Decimal(100), "USD") is None
    assert decisions.check_fee_cap(offering("tpo", fee="99.99"), Decimal(100), "USD") is None


def test_fee_above_the_cap_names_the_cheapest_seen_and_the_cap() -> None:
    chosen = offering("tpo-early", fee="150.00")
    seen = [
        chosen,
        offering("tpo-cheap", fee="120.00"),
        offering("tpo-eur", fee="1", currency="EUR"),
    ]
    assert decisions.check_fee_cap(chosen, Decimal("100"), "USD", candidates=seen) == (
        "the chosen offering tpo-early costs 150.00 USD, above MaxUpfrontFee 100 USD (the "
        "cheapest offering in our zones costs 120.00 USD), so no plan was bought; raise the cap "
        "or change the request"
    )


@pytest.mark.parametrize(
    ("candidate", "cap", "currency", "message"),
    [
        (
            offering("tpo", currency="EUR"),
            Decimal(1000),
            "USD",
            "offering tpo is priced in EUR but MaxUpfrontFee is in USD, so no plan was bought",
        ),
        (
            offering("tpo", fee="call us"),
            Decimal(1000),
            "USD",
            "offering tpo has no readable UpfrontFee ('call us'), so no plan was bought",
        ),
        (
            offering("tpo"),
            None,
            None,
            "offering tpo cannot be checked without MaxUpfrontFee and Currency, so no plan was "
            "bought",
        ),
    ],
)
def test_fee_cap_refuses_what_it_cannot_compare(
    candidate: dict[str, Any], cap: Decimal | None, currency: str | None, message: str
) -> None:
    assert decisions.check_fee_cap(candidate, cap, currency) == message


def test_no_offering_message_lists_offered_zones_and_ours() -> None:
    request = OfferingRequest("ml.p5.48xlarge", 4, 48, subnet_ids_by_zone_id=SUBNETS)
    offered = [offering("a", zones=("us-east-1c",)), offering("b", zones=("us-east-1z",))]
    assert decisions.no_offering_message(request, offered, ZONES) == (
        "none of the 2 offerings for 4 x ml.p5.48xlarge for 48 h fits, so no plan was bought "
        "(a: its zone us-east-1c (use1-az1) has no private subnet of ours; b: its zone "
        "us-east-1z is not one this account's DescribeAvailabilityZones lists; our private "
        "subnets are in use1-az4, use1-az6)"
    )


# --- adopt, status, zone ----------------------------------------------------------------


def test_next_step_buys_only_when_nothing_exists_and_buying_is_allowed() -> None:
    props = decisions.parse_properties(raw())
    assert decisions.next_step(None, props) == "purchase"
    assert decisions.next_step(plan(), props) == "adopt"
    with pytest.raises(TrainingPlanError, match="keeps the plan name, so it buys nothing"):
        decisions.next_step(None, props, may_purchase=False)
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/gone"
    adopt = decisions.parse_properties(raw(Mode="adopt", ExistingArn=arn))
    with pytest.raises(TrainingPlanError, match=f"^training plan {arn} does not exist"):
        decisions.next_step(None, adopt)


def test_adoption_problems_are_all_listed() -> None:
    props = decisions.parse_properties(
        raw(InstanceCount="8", TargetResources=["hyperpod-cluster", "training-job"])
    )
    described = plan(
        Status="Failed",
        StatusMessage="capacity withdrawn",
        TargetResources=["training-job"],
        ReservedCapacitySummaries=[{"InstanceType": "ml.p4d.24xlarge"}],
    )
    assert decisions.adoption_problems(described, props) == [
        "it is Failed (capacity withdrawn)",
        "its instance type is ml.p4d.24xlarge, not ml.p5.48xlarge",
        "it has 4 instances, fewer than 8",
        "its target resources ['training-job'] lack hyperpod-cluster",
    ]
    with pytest.raises(TrainingPlanError, match=r"^training plan nova-plan-1 exists but does not"):
        decisions.validate_plan(plan(TotalInstanceCount=2), props)
    # A Failed plan of the name we buy is never adopted; the message says how to go on.
    with pytest.raises(TrainingPlanError, match=r"is Failed \(capacity withdrawn\) and reserves"):
        decisions.validate_plan(described, props)


def test_a_pending_plan_without_capacity_listed_yet_can_be_adopted() -> None:
    props = decisions.parse_properties(raw())
    assert (
        decisions.adoption_problems(plan(Status="Pending", ReservedCapacitySummaries=[]), props)
        == []
    )
    assert decisions.adoption_problems(plan(TotalInstanceCount=8), props) == []


@pytest.mark.parametrize(
    ("status", "verdict"), [("Scheduled", "ready"), ("Active", "ready"), ("Pending", "pending")]
)
def test_status_verdicts(status: str, verdict: str) -> None:
    assert decisions.status_verdict(plan(Status=status)) == verdict


@pytest.mark.parametrize(
    ("described", "message"),
    [
        (
            plan(Status="Failed", StatusMessage="payment declined"),
            "training plan nova-plan-1 is Failed (payment declined) and reserves no capacity; a "
            "plan of this name exists, so no deploy buys under it again: to buy a new plan, set "
            "`retry: N` on this plan's entry in capacity.training_plans (1, or one more than its "
            "current value), which gives a new plan name that must be approved like any purchase",
        ),
        (
            plan(Status="Failed"),
            "training plan nova-plan-1 is Failed (no status message) and reserves no capacity; a "
            "plan of this name exists, so no deploy buys under it again: to buy a new plan, set "
            "`retry: N` on this plan's entry in capacity.training_plans (1, or one more than its "
            "current value), which gives a new plan name that must be approved like any purchase",
        ),
        (
            plan(Status="Expired"),
            "training plan nova-plan-1 is Expired (it ended 2030-01-03T00:00:00Z) and reserves "
            "no capacity; change the plan request to buy a new plan",
        ),
        (plan(Status="Melting"), "training plan nova-plan-1 has an unknown status 'Melting'"),
    ],
)
def test_failed_and_expired_plans_raise_one_sentence(
    described: dict[str, Any], message: str
) -> None:
    with pytest.raises(TrainingPlanError) as caught:
        decisions.status_verdict(described)
    assert str(caught.value) == message


def test_pending_timeout_counts_from_its_start() -> None:
    assert not values.timed_out(T0, T0 + timedelta(seconds=2999), 3000)
    assert values.timed_out(T0, T0 + timedelta(seconds=3000), 3000)
    assert decisions.pending_timeout_message("p") == (
        "training plan p is bought and Pending (awaiting payment or fulfilment); pay the invoice "
        "/ wait, then re-run the deploy: it adopts the plan and does not buy again"
    )


def test_plan_data_is_all_strings_and_maps_zone_names_without_ids() -> None:
    described = plan(
        ReservedCapacitySummaries=[
            {"InstanceType": "ml.p5.48xlarge", "AvailabilityZone": "us-east-1b"}
        ]
    )
    assert decisions.plan_data(described, ZONES, SUBNETS) == {
        "PlanArn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/nova-plan-1",
        "PlanName": "nova-plan-1",
        "Status": "Scheduled",
        "AvailabilityZone": "us-east-1b",
        "AvailabilityZoneId": "use1-az6",
        "SubnetIds": "subnet-0b1,subnet-0b2",
        "SubnetId": "subnet-0b1",
        "StartTime": "2030-01-01T00:00:00Z",
        "EndTime": "2030-01-03T00:00:00Z",
        "UpfrontFee": "90000.00",
        "CurrencyCode": "USD",
    }


@pytest.mark.parametrize(
    ("summaries", "message"),
    [
        ([], "training plan nova-plan-1 lists no reserved capacity and no zone"),
        (
            [{"AvailabilityZone": "us-east-1a"}, {"AvailabilityZone": "us-east-1b"}],
            "training plan nova-plan-1 reserves capacity in several zones (us-east-1a "
            "(use1-az4), us-east-1b (use1-az6)), and a restricted instance group needs one",
        ),
        (
            [{"AvailabilityZone": "us-east-1z"}],
            "training plan nova-plan-1 reserves capacity in zone us-east-1z, which this "
            "account's DescribeAvailabilityZones does not map to a zone ID",
        ),
        (
            [{"AvailabilityZone": "us-east-1c", "AvailabilityZoneId": "use1-az1"}],
            "training plan nova-plan-1 reserves capacity in us-east-1c (use1-az1) but the VPC "
            "has no private subnet there (our zones: use1-az4, use1-az6)",
        ),
    ],
)
def test_plan_zone_refuses_what_a_restricted_group_cannot_use(
    summaries: list[dict[str, str]], message: str
) -> None:
    with pytest.raises(TrainingPlanError) as caught:
        decisions.plan_zone(plan(ReservedCapacitySummaries=summaries), ZONES, SUBNETS)
    assert str(caught.value) == message


def test_a_pending_plan_without_a_count_yet_is_adoptable_and_checked_when_ready() -> None:
    props = decisions.parse_properties(World.props())
    pending = {
        "TrainingPlanArn": "arn:aws:sagemaker:us-east-1:111122223333:training-plan/x",
        "Status": "Pending",
        "TargetResources": ["hyperpod-cluster"],
    }
    assert decisions.adoption_problems(pending, props) == []
    ready = {**pending, "Status": "Scheduled", "TotalInstanceCount": 0}
    assert decisions.adoption_problems(ready, props) == ["it has 0 instances, fewer than 4"]
    small = {**pending, "TotalInstanceCount": 2}
    assert decisions.adoption_problems(small, props) == ["it has 2 instances, fewer than 4"]
