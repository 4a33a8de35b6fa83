"""Fault matrix: CloudFormation lifecycles of the TrainingPlan handler against the fake AWS.

Every scenario checks the purchase invariant from the fake's own call log (at most one
CreateTrainingPlan per plan name over the whole scenario, and exactly the expected
count), then either the exact attributes of a success or the message of a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
import pytest

from novapod.constructs.training_plan.handler import index
from tests.fakes.aws_control_plane import Fault, Segment
from tests.handlers.interleave import Crash, crashing_before, interleaved
from tests.handlers.lifecycle import CREATE_FAILED_MARKER, Outcome
from tests.handlers.world import OTHER_PLAN, OUR_SUBNETS, PLAN, T0, World

ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"

BOUGHT = {
    "PlanArn": ARN + PLAN,
    "PlanName": PLAN,
    "Status": "Scheduled",
    "AvailabilityZone": "us-east-1b",
    "AvailabilityZoneId": "use1-az6",
    "SubnetIds": "subnet-0b1,subnet-0b2",
    "SubnetId": "subnet-0b1",
    "StartTime": "2030-01-06T00:00:00Z",
    "EndTime": "2030-01-08T00:00:00Z",
    "UpfrontFee": "90000.00",
    "CurrencyCode": "USD",
}
BOUGHT_NOW = {**BOUGHT, "PurchasedAt": "2030-01-01T00:00:00Z"}
OTHER_BOUGHT = {
    **BOUGHT,
    "PlanArn": ARN + OTHER_PLAN,
    "PlanName": OTHER_PLAN,
    "AvailabilityZone": "us-east-1a",
    "AvailabilityZoneId": "use1-az4",
    "SubnetIds": "subnet-0a",
    "SubnetId": "subnet-0a",
    "StartTime": "2030-01-05T00:00:00Z",
    "EndTime": "2030-01-08T00:00:00Z",
    "UpfrontFee": "95000.00",
}
TEAM_PLAN = {
    "PlanArn": ARN + "team-plan",
    "PlanName": "team-plan",
    "Status": "Active",
    "AvailabilityZone": "us-east-1a",
    "AvailabilityZoneId": "use1-az4",
    "SubnetIds": "subnet-0a",
    "SubnetId": "subnet-0a",
    "StartTime": "2030-01-02T00:00:00Z",
    "EndTime": "2030-01-04T00:00:00Z",
    "UpfrontFee": "120000.00",
    "CurrencyCode": "USD",
}
WINDOW = "starting after 2030-01-01T00:00:00Z ending before 2030-01-31T00:00:00Z"
RERUN = "re-run the deploy, which describes the plan first and never buys it twice"
# An ambiguous purchase whose plan never shows: is_complete keeps looking (600 s, the
# pending timeout here, from the call 7 s of confirming describes before on_event ended),
# then says so, and the ledger item blocks every later purchase until it is released.
LEDGER_MAY_HAVE_BOUGHT = (
    f"training plan {PLAN} may have been bought: the purchase ledger holds plan#{PLAN} as "
    "ambiguous ({error}) and DescribeTrainingPlan has not shown the plan in 607 s, so no "
    "deploy buys it again while that item stands; check with `aws sagemaker "
    f"describe-training-plan --training-plan-name {PLAN}` (and the SageMaker console's "
    "training plans) and only if it is certainly not bought, release the claim with "
    f"`novapod purchases CONFIG --release plan#{PLAN}`, then deploy again"
)
RETRY_PLAN = "novapod-test-p5-ad1adc5d"  # retry: 1
FAILED_DECLINED = (
    f"training plan {PLAN} is Failed (Payment was declined) and reserves no capacity; a plan of "
    "this name exists, so no deploy buys under it again: to buy a new plan, set `retry: N` on "
    "this plan's entry in capacity.training_plans (1, or one more than its current value), "
    "which gives a new plan name that must be approved like any purchase"
)


@dataclass(frozen=True)
class Expect:
    """creates: exact CreateTrainingPlan requests per name; then data XOR error.

    data=None and error=None means success without attributes (Delete).
    """

    creates: Mapping[str, int]
    data: Mapping[str, str] | None = None
    error: str | None = None  # "{URL}" stands for the fake's endpoint URL
    never: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    run: Callable[[World], Outcome]
    expect: Expect


SCENARIOS: dict[str, Scenario] = {}


def scenario(expect: Expect) -> Callable[[Callable[[World], Outcome]], Callable[[World], Outcome]]:
    def register(run: Callable[[World], Outcome]) -> Callable[[World], Outcome]:
        SCENARIOS[run.__name__] = Scenario(run, expect)
        return run

    return register


def team_plan(w: World, offering_id: str = "tpo-early", *, status: str = "Active") -> str:
    offering = next(o for o in w.plane.offerings if o["TrainingPlanOfferingId"] == offering_id)
    return w.plane.add_plan("team-plan", offering, statuses=[status])


# --- Create -----------------------------------------------------------------------------


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def create_buys_the_cheapest_offering_and_waits(w: World) -> Outcome:
    outcome = w.stack().create(w.props())
    assert w.plane.operations() == [
        "DescribeTrainingPlan",
        "SearchTrainingPlanOfferings",
        "DescribeAvailabilityZones",
        "CreateTrainingPlan",
        "DescribeTrainingPlan",  # Pending
        "DescribeTrainingPlan",  # Scheduled
        "DescribeAvailabilityZones",
    ]
    (create,) = w.plane.calls_to("CreateTrainingPlan")
    assert create == {
        "TrainingPlanName": PLAN,
        "TrainingPlanOfferingId": "tpo-cheap",
        "Tags": [{"Key": "project", "Value": "novapod"}],
    }
    assert outcome.physical_id == PLAN
    assert outcome.polls == 2
    return outcome


@scenario(
    Expect(
        creates={PLAN: 1},
        data={
            **TEAM_PLAN,
            "PlanArn": ARN + PLAN,
            "PlanName": PLAN,
            "Status": "Scheduled",
            "PurchasedAt": "2030-01-01T00:00:00Z",
        },
    )
)
def create_earliest_policy_buys_the_first_start(w: World) -> Outcome:
    return w.stack().create(w.props(ChoicePolicy="earliest", MaxUpfrontFee="150000"))


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def duplicate_create_adopts_instead_of_buying(w: World) -> Outcome:
    event = w.driver.event("Create", w.props())
    first = w.driver.send(event)
    assert first.ok and first.data == BOUGHT_NOW
    mark = w.plane.mark()
    second = w.driver.send(event)
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return second


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def create_adopts_a_plan_bought_concurrently(w: World) -> Outcome:
    w.plane.rival_buys_first()  # the name is taken between our describe and our create
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={},
        error=f"training plan {PLAN} exists but does not fit this request: its instance type "
        "is ml.p4d.24xlarge, not ml.p5.48xlarge",
    )
)
def create_refuses_an_existing_plan_that_does_not_fit(w: World) -> Outcome:
    offering = w.plane.add_offering(
        "tpo-p4d", zones=["us-east-1a"], start=T0, fee="1.00", instance_type="ml.p4d.24xlarge"
    )
    w.plane.add_plan(PLAN, offering, statuses=["Active"])
    return w.stack().create(w.props())


# --- faults on reads: botocore's standard retries absorb them ---------------------------


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def throttled_reads_are_retried(w: World) -> Outcome:
    for operation in (
        "DescribeTrainingPlan",
        "SearchTrainingPlanOfferings",
        "DescribeAvailabilityZones",
    ):
        w.plane.throttle(operation, times=2)
    outcome = w.stack().create(w.props())
    assert len(w.plane.calls_to("SearchTrainingPlanOfferings")) == 3
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def server_errors_on_reads_are_retried(w: World) -> Outcome:
    w.plane.server_error("SearchTrainingPlanOfferings", times=2)
    w.plane.server_error("DescribeTrainingPlan", times=1, status=503)
    w.plane.server_error("DescribeAvailabilityZones", times=1)
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def slow_search_times_out_and_is_retried(w: World) -> Outcome:
    w.plane.slow("SearchTrainingPlanOfferings", seconds=2.0)
    outcome = w.stack().create(w.props())
    assert len(w.plane.calls_to("SearchTrainingPlanOfferings")) == 2
    return outcome


@scenario(
    Expect(
        creates={},
        error=f"searching offerings for training plan {PLAN} failed "
        "(ThrottlingException: Rate exceeded)",
    )
)
def reads_throttled_past_the_retries_fail_before_buying(w: World) -> Outcome:
    w.plane.throttle("SearchTrainingPlanOfferings", times=5)
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def plan_not_yet_visible_after_purchase_is_awaited(w: World) -> Outcome:
    # The first describe (before buying) finds nothing anyway; the second, right after
    # the purchase, lags behind; the handler waits for the plan instead of failing.
    w.plane.error("DescribeTrainingPlan", "ResourceNotFound", times=2)
    stack = w.stack()
    outcome = stack.create(w.props())
    assert outcome.polls == 3
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def plan_without_zone_ids_is_mapped_through_ec2(w: World) -> Outcome:
    w.plane.describe_includes_zone_id = False
    return w.stack().create(w.props())


# --- faults on the purchase: never a second CreateTrainingPlan --------------------------


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def create_response_lost_to_a_timeout_adopts_the_bought_plan(w: World) -> Outcome:
    w.plane.lose_response("CreateTrainingPlan", how="timeout", seconds=2.0)
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def create_connection_dropped_adopts_the_bought_plan(w: World) -> Outcome:
    w.plane.lose_response("CreateTrainingPlan", how="drop")
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def create_dropped_and_plan_visible_only_on_a_later_look_adopts_it(w: World) -> Outcome:
    w.plane.lose_response("CreateTrainingPlan", how="drop")
    # The describe before buying finds nothing anyway; the first confirming one lags.
    w.plane.error("DescribeTrainingPlan", "ResourceNotFound", times=2)
    started = w.clock.now()
    outcome = w.stack().create(w.props())
    after_create = w.plane.operations()[w.plane.operations().index("CreateTrainingPlan") + 1 :]
    assert after_create[:2] == ["DescribeTrainingPlan", "DescribeTrainingPlan"]
    assert w.clock.now() - started >= timedelta(seconds=2)  # paused on the fake clock only
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def create_500_after_buying_adopts_the_bought_plan(w: World) -> Outcome:
    w.plane.lose_response("CreateTrainingPlan", how="server_error")
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def create_connection_reset_after_buying_adopts_the_bought_plan(w: World) -> Outcome:
    w.plane.lose_response("CreateTrainingPlan", how="reset")
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"CreateTrainingPlan for training plan {PLAN} was refused "
        f"(ThrottlingException: Rate exceeded), so nothing was bought; SageMaker throttled the "
        f"purchase; {RERUN}",
    )
)
def create_throttled_buys_nothing_and_is_not_resent(w: World) -> Outcome:
    w.plane.throttle("CreateTrainingPlan", times=3)
    outcome = w.stack().create(w.props())
    # The service refused: nothing to confirm, nothing resent.
    assert w.plane.operations()[-1] == "CreateTrainingPlan"
    return outcome


# An ambiguous failure (5xx, timeout, reset) whose describes find nothing: the plan may
# become visible later, so the message never says that nothing was bought.


@scenario(
    Expect(
        creates={PLAN: 1},
        error=LEDGER_MAY_HAVE_BOUGHT.format(error="InternalFailure: An internal error occurred"),
    )
)
def create_500_and_no_plan_seen_may_have_bought(w: World) -> Outcome:
    w.plane.server_error("CreateTrainingPlan")
    outcome = w.stack().create(w.props())
    after_create = w.plane.operations()[w.plane.operations().index("CreateTrainingPlan") + 1 :]
    # Three confirming describes in on_event, then one a poll for 600 s: only describes.
    assert after_create == ["DescribeTrainingPlan"] * (3 + outcome.polls)
    assert outcome.polls == 21
    (item,) = w.ledger()
    assert (item["State"], item["Fields"]["Error"]) == (
        "ambiguous",
        "InternalFailure: An internal error occurred",
    )
    return outcome


@scenario(
    Expect(
        creates={PLAN: 1},
        error=LEDGER_MAY_HAVE_BOUGHT.format(
            error='ReadTimeoutError: Read timeout on endpoint URL: "{URL}/"'
        ),
    )
)
def create_timed_out_and_no_plan_seen_may_have_bought(w: World) -> Outcome:
    w.plane.hang("CreateTrainingPlan", seconds=1.5)  # past the 1 s read timeout
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={PLAN: 1},
        error=LEDGER_MAY_HAVE_BOUGHT.format(
            error="ConnectionClosedError: Connection was closed before we received a valid "
            'response from endpoint URL: "{URL}/".'
        ),
    )
)
def create_connection_reset_and_no_plan_seen_may_have_bought(w: World) -> Outcome:
    w.plane.reset_connection("CreateTrainingPlan")
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={PLAN: 1},
        error=LEDGER_MAY_HAVE_BOUGHT.format(error="InternalFailure: An internal error occurred"),
    )
)
def create_500_and_describes_failing_may_have_bought(w: World) -> Outcome:
    w.plane.server_error("CreateTrainingPlan")
    w.plane.throttle("DescribeTrainingPlan", times=9, after=1)  # 3 confirms x 3 attempts
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def plan_visible_only_after_the_confirms_is_awaited_and_adopted(w: World) -> Outcome:
    # The answer is lost and the plan shows only after the confirming describes (AWS may
    # show a plan 30-120 s late): is_complete keeps looking and settles the ledger.
    w.plane.lose_response("CreateTrainingPlan", how="drop")
    w.plane.error("DescribeTrainingPlan", "ResourceNotFound", times=6)
    stack = w.stack()
    first = stack.create(w.props())
    assert first.ok, first.reason
    (item,) = w.ledger()
    assert item["State"] == "bought" and item["Fields"]["Source"] == "reconciled"
    mark = w.plane.mark()
    second = stack.create(w.props())  # the next deploy, request unchanged
    assert second.ok and "CreateTrainingPlan" not in w.plane.operations_since(mark)
    return first


# The service refused (4xx): nothing was bought, and the message says how to go on.


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"CreateTrainingPlan for training plan {PLAN} was refused (ResourceLimitExceeded: "
        "training plan quota reached), so nothing was bought; the account is at a SageMaker "
        "training-plan quota: request a quota increase in Service Quotas (service Amazon "
        "SageMaker, search 'training plan') and deploy again once it is granted",
    )
)
def create_over_the_account_limit_asks_for_a_quota_increase(w: World) -> Outcome:
    w.plane.error(
        "CreateTrainingPlan", "ResourceLimitExceeded", message="training plan quota reached"
    )
    outcome = w.stack().create(w.props())
    assert w.plane.operations()[-1] == "CreateTrainingPlan"
    return outcome


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"CreateTrainingPlan for training plan {PLAN} was refused (AccessDeniedException: "
        "not authorized), so nothing was bought; the handler's role may not buy this plan; fix "
        f"its permissions, then {RERUN}",
    )
)
def create_access_denied_buys_nothing(w: World) -> Outcome:
    w.plane.error("CreateTrainingPlan", "AccessDeniedException", message="not authorized")
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"CreateTrainingPlan for training plan {PLAN} was refused (ValidationException: 1 "
        "validation error detected: Value 'cost{center}' at 'tags.1.member.key' failed to "
        "satisfy constraint: Member must satisfy regular expression pattern: "
        "([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)), so nothing was bought; fix the cause, then "
        f"{RERUN}",
    )
)
def create_with_a_tag_the_service_model_refuses_buys_nothing(w: World) -> Outcome:
    return w.stack().create(w.props(Tags=[{"Key": "cost{center}", "Value": "x"}]))


@scenario(
    Expect(
        creates={},
        error=f"CreateTrainingPlan for training plan {PLAN} never reached SageMaker "
        '(EndpointConnectionError: Could not connect to the endpoint URL: "http://127.0.0.1:9/")'
        f", so nothing was bought; {RERUN}",
    )
)
def create_that_cannot_connect_buys_nothing(w: World) -> Outcome:
    # Only the purchase client points at a closed port (discard, 9).
    real_client = index._client

    def client(service: str, **kwargs: Any) -> Any:
        if kwargs.get("max_attempts") == 1:
            config = real_client(service, **kwargs).meta.config
            return boto3.client(service, endpoint_url="http://127.0.0.1:9", config=config)
        return real_client(service, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(index, "_client", client)
        return w.stack().create(w.props())


# --- guardrails: nothing is bought ------------------------------------------------------


@scenario(
    Expect(
        creates={},
        error=f"buying training plan {PLAN} is not approved: ApprovedPlanName is "
        f"'{PLAN}-old', and the custom resource spends money only when it equals PlanName "
        "(purchase.approve in the config names this exact plan)",
    )
)
def not_approved_makes_no_call_at_all(w: World) -> Outcome:
    stack = w.stack()
    outcome = stack.create(w.props(ApprovedPlanName=f"{PLAN}-old"))
    assert w.plane.calls == []
    # CloudFormation's rollback Delete carries the framework's marker and is dropped.
    assert stack.history[-1].physical_id == CREATE_FAILED_MARKER and stack.history[-1].ok
    return outcome


@scenario(
    Expect(
        creates={},
        error="the chosen offering tpo-cheap costs 90000.00 USD, above MaxUpfrontFee 80000 USD "
        f"(the cheapest offering in our zones costs 90000.00 USD), so training plan {PLAN} was "
        "not bought; raise the cap or change the request",
    )
)
def fee_above_the_cap_is_refused(w: World) -> Outcome:
    return w.stack().create(w.props(MaxUpfrontFee="80000"))


@scenario(
    Expect(
        creates={},
        error="the chosen offering tpo-early costs 120000.00 USD, above MaxUpfrontFee 100000 USD "
        f"(the cheapest offering in our zones costs 90000.00 USD), so training plan {PLAN} was "
        "not bought; raise the cap or change the request",
    )
)
def earliest_offering_above_the_cap_names_the_cheapest(w: World) -> Outcome:
    return w.stack().create(w.props(ChoicePolicy="earliest"))


EUR = "it is priced in USD, not in EUR (the currency of MaxUpfrontFee)"


@scenario(
    Expect(
        creates={},
        error=f"none of the 5 offerings for 4 x ml.p5.48xlarge for 48 h {WINDOW} fits, so no "
        f"plan was bought (tpo-elsewhere: {EUR}, its zone us-east-1c (use1-az1) has no private "
        f"subnet of ours; tpo-split: {EUR}, its capacity spans 2 zones (us-east-1a, us-east-1b); "
        f"tpo-cheap: {EUR}; tpo-early: {EUR}; tpo-p4d-eur: its instance type is ml.p4d.24xlarge, "
        "not ml.p5.48xlarge; our private subnets are in use1-az4, use1-az6)",
    )
)
def other_currency_is_never_bought(w: World) -> Outcome:
    w.plane.add_offering(
        "tpo-p4d-eur",
        zones=["us-east-1a"],
        start=T0,
        fee="1.00",
        currency="EUR",
        instance_type="ml.p4d.24xlarge",
        near_match=True,
    )
    return w.stack().create(w.props(Currency="EUR"))


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def offerings_in_other_currencies_are_skipped_not_ranked(w: World) -> Outcome:
    # Numerically cheapest, in our zone, but not in the cap's currency (or in none).
    w.plane.add_offering(
        "tpo-eur", zones=["us-east-1b"], start=T0 + timedelta(days=1), fee="1.00", currency="EUR"
    )
    w.plane.add_offering(
        "tpo-unpriced",
        zones=["us-east-1b"],
        start=T0 + timedelta(days=1),
        fee="0.50",
        currency=None,
    )
    outcome = w.stack().create(w.props())
    (create,) = w.plane.calls_to("CreateTrainingPlan")
    assert create["TrainingPlanOfferingId"] == "tpo-cheap"
    return outcome


def near_misses(w: World) -> None:
    """Offerings the search returns as best matches, cheaper than tpo-cheap, that each
    differ from the request (4 x p5 for 48 h in January, for HyperPod) in one way."""
    day = T0 + timedelta(days=2)
    for offering_id, changes in {
        "tpo-fewer": {"instance_count": 2},
        "tpo-more": {"instance_count": 8},
        "tpo-p4d": {"instance_type": "ml.p4d.24xlarge"},
        "tpo-72h": {"duration_hours": 72},
        "tpo-february": {"start": T0 + timedelta(days=40)},
        "tpo-jobs": {"target_resources": ["training-job"]},
        "tpo-segments": {
            "segments": [
                Segment("us-east-1b", 4, day, 24),
                Segment("us-east-1b", 4, day + timedelta(days=3), 24),
            ]
        },
        "tpo-two-zones": {
            "segments": [Segment("us-east-1a", 2, day, 48), Segment("us-east-1b", 2, day, 48)]
        },
    }.items():
        fields: dict[str, Any] = {"zones": ["us-east-1b"], "start": day, "fee": "10.00"}
        w.plane.add_offering(offering_id, **{**fields, **changes}, near_match=True)


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def near_matches_are_checked_and_skipped_before_buying(w: World) -> Outcome:
    near_misses(w)
    outcome = w.stack().create(w.props())
    (create,) = w.plane.calls_to("CreateTrainingPlan")
    assert create["TrainingPlanOfferingId"] == "tpo-cheap"
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def a_larger_cheaper_offering_is_never_bought(w: World) -> Outcome:
    # 8 x p5 for 48 h in our zone, returned for any search, cheaper than tpo-cheap and
    # within the fee cap: a larger purchase than the approved 4-instance one.
    w.plane.add_offering(
        "tpo-eight",
        zones=["us-east-1b"],
        start=T0 + timedelta(days=2),
        fee="80000.00",
        instance_count=8,
        near_match=True,
    )
    outcome = w.stack().create(w.props())
    creates = w.plane.calls_to("CreateTrainingPlan")
    assert [(c["TrainingPlanName"], c["TrainingPlanOfferingId"]) for c in creates] == [
        (PLAN, "tpo-cheap")
    ]
    plan = boto3.client("sagemaker").describe_training_plan(TrainingPlanName=PLAN)
    assert plan["TotalInstanceCount"] == 4
    return outcome


@scenario(
    Expect(
        creates={},
        error=f"none of the 8 offerings for 4 x ml.p5.48xlarge for 48 h {WINDOW} fits, so no "
        "plan was bought (tpo-fewer: it offers 2 instances in total, not 4; tpo-more: it "
        "offers 8 instances in total, not 4; tpo-p4d: its "
        "instance type is ml.p4d.24xlarge, not ml.p5.48xlarge; tpo-72h: it lasts 72 h, not "
        "48 h; tpo-february: it ends 2030-02-12T00:00:00Z, after EndTimeBefore "
        "2030-01-31T00:00:00Z; tpo-jobs: its target resources ['training-job'] lack "
        "hyperpod-cluster; tpo-segments: its capacity is split into 2 segments at different "
        "times (2030-01-03T00:00:00Z..2030-01-04T00:00:00Z, 2030-01-06T00:00:00Z.."
        "2030-01-07T00:00:00Z), not one continuous reservation; tpo-two-zones: its capacity "
        "spans 2 zones (us-east-1a, us-east-1b); our private subnets are in use1-az4, use1-az6)",
        never=("CreateTrainingPlan",),
    )
)
def only_near_matches_buy_nothing(w: World) -> Outcome:
    w.plane.offerings.clear()
    near_misses(w)
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={},
        error=f"none of the 4 offerings for 4 x ml.p5.48xlarge for 48 h {WINDOW} fits, so no "
        "plan was bought (tpo-elsewhere: its zone us-east-1c (use1-az1) has no private subnet of "
        "ours; tpo-split: its capacity spans 2 zones (us-east-1a, us-east-1b); tpo-cheap: its "
        "zone us-east-1b (use1-az6) has no private subnet of ours; tpo-early: its zone "
        "us-east-1a (use1-az4) has no private subnet of ours; our private subnets are in "
        "use1-az2)",
    )
)
def no_offering_in_our_zones(w: World) -> Outcome:
    return w.stack().create(w.props(SubnetIdsByZoneId={"use1-az2": ["subnet-0d"]}))


@scenario(
    Expect(
        creates={},
        error=f"SearchTrainingPlanOfferings found no offering for 8 x ml.p5.48xlarge for 48 h "
        f"{WINDOW}, so no plan was bought; widen the window or change the instance count",
    )
)
def no_offering_at_all(w: World) -> Outcome:
    # 8 instances: the name whose digest covers them (the handler recomputes it).
    return w.stack().create(w.props(InstanceCount="8", PlanName="novapod-test-p5-22f42091"))


# --- waiting for the plan ---------------------------------------------------------------


@scenario(Expect(creates={PLAN: 1}, error=FAILED_DECLINED))
def failed_plan_fails_the_deploy_and_says_how_to_go_on(w: World) -> Outcome:
    w.plane.script_statuses(PLAN, ["Pending", ("Failed", "Payment was declined")])
    return w.stack().create(w.props())


@scenario(Expect(creates={}, error=FAILED_DECLINED, never=("SearchTrainingPlanOfferings",)))
def a_failed_plan_is_never_adopted_as_a_success(w: World) -> Outcome:
    w.plane.add_plan(PLAN, w.plane.offerings[2], statuses=[("Failed", "Payment was declined")])
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, error=FAILED_DECLINED))
def a_failed_plan_seen_after_a_lost_answer_is_not_adopted(w: World) -> Outcome:
    w.plane.script_statuses(PLAN, [("Failed", "Payment was declined")])
    w.plane.lose_response("CreateTrainingPlan", how="drop")
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={RETRY_PLAN: 1},
        data={**BOUGHT_NOW, "PlanArn": ARN + RETRY_PLAN, "PlanName": RETRY_PLAN},
    )
)
def a_retry_name_buys_a_new_plan_beside_the_failed_one(w: World) -> Outcome:
    w.plane.add_plan(PLAN, w.plane.offerings[2], statuses=[("Failed", "Payment was declined")])
    stack = w.stack()
    assert stack.create(w.props()).reason == FAILED_DECLINED
    # `retry: 1` in the config gives the plan a new name (approved like any purchase).
    return stack.create(w.props(PlanName=RETRY_PLAN, ApprovedPlanName=RETRY_PLAN, Retry="1"))


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def failing_describes_while_waiting_keep_waiting(w: World) -> Outcome:
    # Two polls find DescribeTrainingPlan throttled past botocore's retries, and the
    # zone lookup of the first ready poll fails: the handler waits and asks again.
    w.plane.throttle("DescribeTrainingPlan", times=6, after=1)
    w.plane.throttle("DescribeAvailabilityZones", times=3, after=1)
    outcome = w.stack().create(w.props())
    assert outcome.polls == 5  # throttled, throttled, Pending, Scheduled (no zones), ready
    return outcome


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"training plan {PLAN} is bought, but DescribeTrainingPlan kept failing until the "
        "pending timeout (ThrottlingException: Rate exceeded); pay the invoice if one is due: "
        "the next deploy adopts the plan and does not buy again",
    )
)
def describes_failing_until_the_timeout_say_bought_and_adopt_next_time(w: World) -> Outcome:
    w.plane.throttle("DescribeTrainingPlan", times=1000, after=1)
    outcome = w.stack().create(w.props(PendingTimeoutSeconds="300"))
    assert outcome.polls == 11  # at 0, 30, ..., 300 s after the purchase
    return outcome


PENDING_MESSAGE = (
    f"training plan {PLAN} is bought and Pending (awaiting payment or fulfilment); pay the "
    "invoice / wait, then re-run the deploy: it adopts the plan and does not buy again"
)


@scenario(Expect(creates={PLAN: 1}, error=PENDING_MESSAGE))
def pending_past_the_timeout_says_pay_and_rerun(w: World) -> Outcome:
    w.plane.script_statuses(PLAN, ["Pending"])
    outcome = w.stack().create(w.props(PendingTimeoutSeconds="300"))
    assert outcome.polls == 11  # at 0, 30, ..., 300 s after the purchase
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def rerun_after_pending_timeout_adopts_without_buying(w: World) -> Outcome:
    w.plane.script_statuses(PLAN, ["Pending"])
    stack = w.stack()
    first = stack.create(w.props(PendingTimeoutSeconds="300"))
    assert first.reason == PENDING_MESSAGE
    assert stack.history[-1].request_type == "Delete" and stack.history[-1].ok
    w.plane.script_statuses(PLAN, ["Scheduled"])  # the invoice is paid
    return stack.create(w.props(PendingTimeoutSeconds="300"))


# --- Update and rollback ----------------------------------------------------------------


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def update_keeping_the_name_buys_nothing(w: World) -> Outcome:
    stack = w.stack()
    assert stack.create(w.props()).ok
    mark = w.plane.mark()
    outcome = stack.update(w.props(Tags=[{"Key": "team", "Value": "nova"}]))
    assert not stack.rolled_back and outcome.request_type == "Update"
    assert w.plane.operations_since(mark) == [
        "DescribeTrainingPlan",
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
    ]
    assert outcome.physical_id == PLAN
    return outcome


@scenario(
    Expect(
        creates={PLAN: 1, OTHER_PLAN: 1},
        data={**OTHER_BOUGHT, "PurchasedAt": "2030-01-01T00:00:30Z"},
    )
)
def update_to_a_new_name_buys_the_new_plan_and_keeps_the_old(w: World) -> Outcome:
    stack = w.stack()
    assert stack.create(w.props()).ok
    outcome = stack.update(w.props(PlanName=OTHER_PLAN, DurationHours="72"))
    assert not stack.rolled_back
    cleanup = stack.history[-1]
    assert (cleanup.request_type, cleanup.physical_id, cleanup.ok) == ("Delete", PLAN, True)
    assert outcome.physical_id == OTHER_PLAN
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def rollback_update_after_a_refused_purchase_keeps_the_old_plan(w: World) -> Outcome:
    stack = w.stack()
    assert stack.create(w.props()).ok
    outcome = stack.update(w.props(PlanName=OTHER_PLAN, DurationHours="72", MaxUpfrontFee="1000"))
    failed_update, rollback = stack.history[-2:]
    assert stack.rolled_back
    assert not failed_update.ok and "above MaxUpfrontFee 1000 USD" in failed_update.reason
    assert rollback is outcome and outcome.physical_id == PLAN
    return outcome


@scenario(Expect(creates={PLAN: 1, OTHER_PLAN: 1}, data=BOUGHT))
def rollback_update_after_another_resource_failed_adopts_the_old_plan(w: World) -> Outcome:
    stack = w.stack()
    assert stack.create(w.props()).ok
    outcome = stack.update(
        w.props(PlanName=OTHER_PLAN, DurationHours="72"), another_resource_fails=True
    )
    # The rollback Update carries the new physical ID and the old properties: the
    # handler adopts the old plan by name; the clean-up Delete keeps the new one.
    rollback, cleanup = stack.history[-2:]
    assert rollback.physical_id == PLAN
    assert (cleanup.request_type, cleanup.physical_id, cleanup.ok) == ("Delete", OTHER_PLAN, True)
    return outcome


# --- Delete -----------------------------------------------------------------------------


@scenario(Expect(creates={PLAN: 1}))
def delete_keeps_the_plan_and_calls_nothing(w: World) -> Outcome:
    stack = w.stack()
    assert stack.create(w.props()).ok
    mark = w.plane.mark()
    outcome = stack.delete()
    assert w.plane.operations_since(mark) == []
    assert outcome.physical_id == PLAN
    return outcome


@scenario(Expect(creates={}))
def delete_of_a_plan_that_never_existed_succeeds(w: World) -> Outcome:
    outcome = w.driver.send(w.driver.event("Delete", w.props(), physical_id="never-bought"))
    assert w.plane.calls == []
    return outcome


# --- adopt by ARN -----------------------------------------------------------------------


@scenario(Expect(creates={}, data=TEAM_PLAN, never=("SearchTrainingPlanOfferings",)))
def adopt_by_arn_validates_and_returns_the_plan(w: World) -> Outcome:
    arn = team_plan(w)
    outcome = w.stack().create(w.adopt_props(arn))
    assert w.plane.operations() == [
        "DescribeTrainingPlan",
        "DescribeTrainingPlan",
        "DescribeAvailabilityZones",
    ]
    return outcome


@scenario(
    Expect(
        creates={},
        error="training plan team-plan exists but does not fit this request: its instance type "
        "is ml.p4d.24xlarge, not ml.p5.48xlarge",
        never=("SearchTrainingPlanOfferings",),
    )
)
def adopt_by_arn_refuses_another_instance_type(w: World) -> Outcome:
    w.plane.add_offering(
        "tpo-p4d", zones=["us-east-1a"], start=T0, fee="1.00", instance_type="ml.p4d.24xlarge"
    )
    return w.stack().create(w.adopt_props(team_plan(w, "tpo-p4d")))


@scenario(
    Expect(
        creates={},
        error="training plan team-plan exists but does not fit this request: it has 4 "
        "instances, fewer than 8",
        never=("SearchTrainingPlanOfferings",),
    )
)
def adopt_by_arn_refuses_too_few_instances(w: World) -> Outcome:
    return w.stack().create(w.adopt_props(team_plan(w), InstanceCount="8"))


@scenario(
    Expect(
        creates={},
        error="training plan team-plan exists but does not fit this request: its target "
        "resources ['training-job'] lack hyperpod-cluster",
        never=("SearchTrainingPlanOfferings",),
    )
)
def adopt_by_arn_refuses_a_training_job_plan(w: World) -> Outcome:
    w.plane.add_offering(
        "tpo-jobs", zones=["us-east-1a"], start=T0, fee="1.00", target_resources=["training-job"]
    )
    return w.stack().create(w.adopt_props(team_plan(w, "tpo-jobs")))


@scenario(
    Expect(
        creates={},
        error="training plan team-plan exists but does not fit this request: it is Expired",
        never=("SearchTrainingPlanOfferings",),
    )
)
def adopt_by_arn_refuses_an_expired_plan(w: World) -> Outcome:
    return w.stack().create(w.adopt_props(team_plan(w, status="Expired")))


@scenario(
    Expect(
        creates={},
        error="training plan team-plan exists but does not fit this request: its ARN is "
        f"{ARN}team-plan, not arn:aws:sagemaker:us-east-1:999999999999:training-plan/team-plan",
        never=("SearchTrainingPlanOfferings",),
    )
)
def adopt_by_arn_refuses_a_namesake_from_another_account(w: World) -> Outcome:
    team_plan(w)
    foreign = "arn:aws:sagemaker:us-east-1:999999999999:training-plan/team-plan"
    return w.stack().create(w.adopt_props(foreign))


@scenario(
    Expect(
        creates={},
        error=f"training plan {ARN}ghost does not exist, so it cannot be adopted",
        never=("SearchTrainingPlanOfferings",),
    )
)
def adopt_by_arn_of_a_missing_plan_fails(w: World) -> Outcome:
    return w.stack().create(w.adopt_props(ARN + "ghost"))


@scenario(
    Expect(
        creates={},
        error="training plan team-plan reserves capacity in us-east-1c (use1-az1) but the VPC "
        "has no private subnet there (our zones: use1-az4, use1-az6)",
        never=("SearchTrainingPlanOfferings",),
    )
)
def adopt_by_arn_refuses_a_plan_outside_our_zones(w: World) -> Outcome:
    return w.stack().create(w.adopt_props(team_plan(w, "tpo-elsewhere")))


# --- the purchase ledger ------------------------------------------------------------------


def ledger_unusable(detail: str) -> str:
    return (
        f"training plan {PLAN} was not bought by this event: "
        f"the purchase ledger could not be used ({detail}), "
        "and novapod buys only under a claim in it; no purchase call was made, deploy again "
        "once the table answers"
    )


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def the_purchase_is_claimed_before_the_search_and_recorded(w: World) -> Outcome:
    outcome = w.stack().create(w.props())
    assert w.plane.operations(ledger=True)[:9] == [
        "DescribeTrainingPlan",
        "GetItem",  # not in the ledger
        "PutItem",  # claimed, before any search result is acted on
        "SearchTrainingPlanOfferings",
        "DescribeAvailabilityZones",
        "PutItem",  # calling, right before the one purchase call
        "CreateTrainingPlan",
        "PutItem",  # bought
        "DescribeTrainingPlan",
    ]
    claim, calling, bought = w.plane.calls_to("PutItem")
    assert claim["ConditionExpression"] == "attribute_not_exists(#sk)"
    assert calling["ConditionExpression"] == bought["ConditionExpression"] == "#seq = :seq"
    assert [c["ExpressionAttributeValues"][":seq"] for c in (calling, bought)] == [
        {"N": "1"},
        {"N": "2"},
    ]
    assert all(c["Item"]["Environment"] == {"S": "test"} for c in (claim, calling, bought))
    (item,) = w.ledger()
    assert item["Purchase"] == f"plan#{PLAN}" and item["State"] == "bought"
    assert item["RequestId"] == w.driver.last_request_id
    assert {k: item["Fields"][k] for k in ("OfferingId", "UpfrontFee", "Currency", "Approval")} == {
        "OfferingId": "tpo-cheap",
        "UpfrontFee": "90000.00",
        "Currency": "USD",
        "Approval": PLAN,
    }
    assert item["Fields"]["Arn"] == ARN + PLAN
    assert item["Fields"]["BoughtAt"] == "2030-01-01T00:00:00Z"
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def two_concurrent_creates_buy_once_even_with_stale_reads(w: World) -> Outcome:
    # The duplicate delivery runs whole between this one's ledger read and its claim.
    w.plane.dynamodb.stale_reads(100)
    event = w.driver.event("Create", w.props())
    other: list[Outcome] = []
    with interleaved({("PutItem", 0): lambda: other.append(w.driver.send(event))}):
        outcome = w.driver.send(event)
    assert other[0].ok and other[0].data == BOUGHT_NOW
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def a_claim_taken_over_before_the_call_makes_its_claimant_back_off(w: World) -> Outcome:
    event = w.driver.event("Create", w.props())
    other: list[Outcome] = []
    with interleaved({("PutItem", 1): lambda: other.append(w.driver.send(event))}):
        outcome = w.driver.send(event)
    assert other[0].ok and other[0].data == BOUGHT_NOW
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT))
def a_duplicate_between_calling_and_the_purchase_waits_and_buys_nothing(w: World) -> Outcome:
    event = w.driver.event("Create", w.props())
    other: list[dict[str, Any]] = []
    duplicate = {("CreateTrainingPlan", 0): lambda: other.append(index.on_event(event, None))}
    with interleaved(duplicate):
        first = w.driver.send(event)
    assert first.ok, first.reason
    (result,) = other
    assert result["Awaiting"] == "plan" and "PurchasedAt" not in result["Data"]
    return w.driver.complete(event, result)


@scenario(
    Expect(
        creates={},
        error=ledger_unusable(
            f"reading purchase plan#{PLAN} from the purchase ledger novapod-test-PurchaseLedger failed "
            "(InternalServerError: Internal server error)"
        ),
        never=("SearchTrainingPlanOfferings",),
    )
)
def a_ledger_that_cannot_be_read_buys_nothing(w: World) -> Outcome:
    w.plane.server_error("GetItem", times=3)
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={},
        error=ledger_unusable(
            f"writing claimed for purchase plan#{PLAN} to the purchase ledger "
            "novapod-test-PurchaseLedger failed (AccessDeniedException: no), and reading it back "
            "failed too (reading purchase plan#" + PLAN + " from the purchase ledger "
            "novapod-test-PurchaseLedger failed (AccessDeniedException: no))"
        ),
        never=("SearchTrainingPlanOfferings",),
    )
)
def a_ledger_that_cannot_be_written_buys_nothing(w: World) -> Outcome:
    denied = Fault("error", code="AccessDeniedException", message="no")
    w.plane.inject("PutItem", denied)
    w.plane.inject("GetItem", denied, after=1)
    return w.stack().create(w.props())


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def a_claim_applied_then_answered_500_is_settled_by_a_read(w: World) -> Outcome:
    w.plane.lose_response("PutItem", how="server_error")
    outcome = w.stack().create(w.props())
    assert w.plane.operations(ledger=True).count("PutItem") == 4
    return outcome


@scenario(Expect(creates={PLAN: 1}, data=BOUGHT_NOW))
def a_crash_after_the_claim_is_taken_over_by_the_next_deploy(w: World) -> Outcome:
    stack = w.stack()
    with crashing_before("SearchTrainingPlanOfferings"), pytest.raises(Crash):
        stack.create(w.props())
    (item,) = w.ledger()
    assert item["State"] == "claimed"
    outcome = w.stack().create(w.props())  # the next deploy takes the claim over
    (item,) = w.ledger()
    assert (item["State"], item["Attempt"], item["Sequence"]) == ("bought", 1, 4)
    return outcome


@scenario(
    Expect(
        creates={PLAN: 1},
        error=LEDGER_MAY_HAVE_BOUGHT.format(
            error="InternalFailure: An internal error occurred"
        ).replace("in 607 s", "in 600 s"),
        never=(),
    )
)
def an_ambiguous_item_blocks_the_next_deploy_until_released(w: World) -> Outcome:
    w.plane.server_error("CreateTrainingPlan")
    first = w.stack().create(w.props())
    assert not first.ok
    mark = w.plane.mark()
    second = w.stack().create(w.props())  # the next deploy: awaits, never buys
    assert "SearchTrainingPlanOfferings" not in w.plane.operations_since(mark)
    return second


@scenario(Expect(creates={}, data={**BOUGHT, "UpfrontFee": "90000.00"}))
def a_plan_bought_before_the_ledger_is_adopted_into_it(w: World) -> Outcome:
    offering = next(o for o in w.plane.offerings if o["TrainingPlanOfferingId"] == "tpo-cheap")
    w.plane.add_plan(PLAN, offering, statuses=["Scheduled"])
    outcome = w.stack().create(w.props())
    (item,) = w.ledger()
    assert (item["State"], item["Fields"]["Source"]) == ("bought", "adopted")
    assert item["Fields"]["UpfrontFee"] == "90000.00" and item["Fields"]["Arn"] == ARN + PLAN
    return outcome


@scenario(
    Expect(
        creates={},
        error=(
            f"training plan {PLAN} exists but belongs to environment test-a (its novapod:environment "
            "tag), not test: novapod never adopts another environment's plan (two clusters would "
            "share one reservation) and bought nothing; rename this plan or this environment so the "
            "derived names differ"
        ),
    )
)
def a_plan_of_another_environment_is_never_adopted(w: World) -> Outcome:
    offering = next(o for o in w.plane.offerings if o["TrainingPlanOfferingId"] == "tpo-cheap")
    w.plane.add_plan(PLAN, offering, statuses=["Scheduled"])
    w.plane.tag_plan(PLAN, "novapod:environment", "test-a")
    outcome = w.stack().create(w.props())
    assert w.ledger() == []
    return outcome


@scenario(
    Expect(
        creates={},
        error=(
            f"PlanName {PLAN} does not name what this resource would buy (64 x ml.p5.48xlarge for "
            "48 h, whose name ends in -10fb76d5), so nothing was bought: the name is the approval, "
            "and the template must come from `cdk synth` of the approved config, not from a hand edit"
        ),
    )
)
def a_hand_edited_count_is_refused_by_the_names_digest(w: World) -> Outcome:
    mark = w.plane.mark()
    outcome = w.stack().create(w.props(InstanceCount="64"))
    assert w.plane.operations_since(mark, ledger=True) == []  # before any call
    return outcome


def test_a_refused_purchase_is_claimed_again_by_the_next_deploy(world: World) -> None:
    world.plane.error("CreateTrainingPlan", "ResourceLimitExceeded", message="quota")
    assert not world.stack().create(world.props()).ok
    (item,) = world.ledger()
    assert (item["State"], item["Attempt"]) == ("refused", 1)
    assert world.stack().create(world.props()).ok
    (item,) = world.ledger()
    assert (item["State"], item["Attempt"]) == ("bought", 2)
    assert [a["State"] for a in item["Attempts"]] == ["refused"]
    assert item["Attempts"][0]["Error"] == "ResourceLimitExceeded: quota"
    assert list(world.plane.plans) == [PLAN]  # one plan bought, two calls


# --- the matrix -------------------------------------------------------------------------


def test_the_matrix_is_broad() -> None:
    assert len(SCENARIOS) >= 14


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fault_matrix(name: str, world: World) -> None:
    case = SCENARIOS[name]
    outcome = case.run(world)

    creates = world.plane.create_counts()
    assert max(creates.values(), default=0) <= 1, f"bought twice: {creates}"
    assert dict(creates) == dict(case.expect.creates)
    for operation in case.expect.never:
        assert operation not in world.plane.operations(), operation
    if case.expect.error is not None:
        assert not outcome.ok, outcome
        assert outcome.reason == case.expect.error.replace("{URL}", world.plane.url)
    else:
        assert outcome.ok, outcome.reason
        assert outcome.data == dict(case.expect.data or {})
    # Nothing waits in real time: the handler's pauses advance the fake clock (a wall-time
    # bound here flaked on a loaded machine; what it guarded is what slept).
    assert sum(world.slept) < 1, f"{name} slept {sum(world.slept):.1f} s in real time"


def test_subnets_by_zone_as_object_or_json_string_agree(world: World) -> None:
    as_object = world.stack().create(world.props(SubnetIdsByZoneId=OUR_SUBNETS))
    assert as_object.data == BOUGHT_NOW
    second = world.stack().create(world.props())  # JSON string, as in every scenario
    assert second.data == BOUGHT
    assert world.plane.create_counts() == {PLAN: 1}


def test_an_ambiguous_purchase_released_while_awaited_is_not_called_unbought(
    world: World,
) -> None:
    # The operator releases the ambiguous item (--force) while the deploy still waits:
    # the deploy must not say its purchase bought nothing.
    from novapod.constructs.handler_core import ledger
    from novapod.operate import purchases
    from tests.handlers.world import ENVIRONMENT, LEDGER_TABLE

    world.plane.server_error("CreateTrainingPlan")
    event = world.driver.event("Create", world.props())
    result = index.on_event(event, None)
    book = ledger.Ledger(boto3.client("dynamodb"), LEDGER_TABLE, ENVIRONMENT)
    purchases.release(book, f"plan#{PLAN}", force=True)
    outcome = world.driver.complete(event, result)
    assert outcome.reason == (
        f"training plan {PLAN} was not bought by this event: the purchase ledger holds "
        f"plan#{PLAN} released by hand from ambiguous, so its last call may have bought it; "
        "check it with AWS, then deploy again to try anew"
    )
