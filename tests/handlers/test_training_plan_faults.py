"""Fault matrix: CloudFormation lifecycles of the TrainingPlan handler against the fake AWS.

Every scenario checks the purchase invariant from the fake's own call log (at most one
CreateTrainingPlan per plan name over the whole scenario, and exactly the expected
count), then either the exact attributes of a success or the message of a failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

import pytest

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
NOTHING_BOUGHT = (
    "and DescribeTrainingPlan finds no plan of that name, so nothing was bought; re-run the "
    "deploy, which describes the plan first and never buys it twice"
)


@dataclass(frozen=True)
class Expect:
    """creates: exact CreateTrainingPlan requests per name; then data XOR error.

    data=None and error=None means success without attributes (Delete).
    """

    creates: Mapping[str, int]
    data: Mapping[str, str] | None = None
    error: str | None = None
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


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"CreateTrainingPlan for training plan {PLAN} failed "
        f"(ThrottlingException: Rate exceeded) {NOTHING_BOUGHT}",
    )
)
def create_throttled_buys_nothing_and_is_not_resent(w: World) -> Outcome:
    w.plane.throttle("CreateTrainingPlan", times=3)
    outcome = w.stack().create(w.props())
    after_create = w.plane.operations()[w.plane.operations().index("CreateTrainingPlan") + 1 :]
    assert after_create == ["DescribeTrainingPlan"] * 3  # confirming, then giving up
    return outcome


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"CreateTrainingPlan for training plan {PLAN} failed "
        f"(InternalFailure: An internal error occurred) {NOTHING_BOUGHT}",
    )
)
def create_500_without_buying_fails_clearly(w: World) -> Outcome:
    w.plane.server_error("CreateTrainingPlan")
    return w.stack().create(w.props())


@scenario(
    Expect(
        creates={PLAN: 1},
        error=f"CreateTrainingPlan for training plan {PLAN} failed "
        f"(ResourceLimitExceeded: training plan quota reached) {NOTHING_BOUGHT}",
    )
)
def create_over_the_account_limit_fails_clearly(w: World) -> Outcome:
    w.plane.error(
        "CreateTrainingPlan", "ResourceLimitExceeded", message="training plan quota reached"
    )
    return w.stack().create(w.props())


# --- guardrails: nothing is bought ------------------------------------------------------


@scenario(
    Expect(
        creates={},
        error=f'buying training plan {PLAN} is not approved: PurchaseApproved must be "true" '
        "for the custom resource to spend money",
    )
)
def not_approved_makes_no_call_at_all(w: World) -> Outcome:
    stack = w.stack()
    outcome = stack.create(w.props(PurchaseApproved="false"))
    assert w.plane.calls == []
    # CloudFormation's rollback Delete carries the framework's marker and is dropped.
    assert stack.history[-1].physical_id == CREATE_FAILED_MARKER and stack.history[-1].ok
    return outcome


@scenario(
    Expect(
        creates={},
        error="the chosen offering tpo-cheap costs 90000.00 USD, above MaxUpfrontFee 80000 USD "
        "(the cheapest offering in our zones costs 90000.00 USD), so no plan was bought; raise "
        "the cap or change the request",
    )
)
def fee_above_the_cap_is_refused(w: World) -> Outcome:
    return w.stack().create(w.props(MaxUpfrontFee="80000"))


@scenario(
    Expect(
        creates={},
        error="the chosen offering tpo-early costs 120000.00 USD, above MaxUpfrontFee 100000 USD "
        "(the cheapest offering in our zones costs 90000.00 USD), so no plan was bought; raise "
        "the cap or change the request",
    )
)
def earliest_offering_above_the_cap_names_the_cheapest(w: World) -> Outcome:
    return w.stack().create(w.props(ChoicePolicy="earliest"))


@scenario(
    Expect(
        creates={},
        error="offering tpo-cheap is priced in USD but MaxUpfrontFee is in EUR, so no plan "
        "was bought",
    )
)
def other_currency_is_refused(w: World) -> Outcome:
    return w.stack().create(w.props(Currency="EUR"))


@scenario(
    Expect(
        creates={},
        error=f"none of the 4 offerings for 4 x ml.p5.48xlarge for 48 h {WINDOW} lies in a "
        "single Availability Zone where the VPC has private subnets (offered: us-east-1a "
        "(use1-az4), us-east-1a (use1-az4) + us-east-1b (use1-az6), us-east-1b (use1-az6), "
        "us-east-1c (use1-az1); our subnets: use1-az2), so no plan was bought",
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
    return w.stack().create(w.props(InstanceCount="8"))


# --- waiting for the plan ---------------------------------------------------------------


@scenario(Expect(creates={PLAN: 1}, error=f"training plan {PLAN} is Failed: Payment was declined"))
def failed_plan_fails_the_deploy_with_its_message(w: World) -> Outcome:
    w.plane.script_statuses(PLAN, ["Pending", ("Failed", "Payment was declined")])
    return w.stack().create(w.props())


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


# --- the matrix -------------------------------------------------------------------------


def test_the_matrix_is_broad() -> None:
    assert len(SCENARIOS) >= 14


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fault_matrix(name: str, world: World) -> None:
    case = SCENARIOS[name]
    started = time.monotonic()
    outcome = case.run(world)
    elapsed = time.monotonic() - started

    creates = world.plane.create_counts()
    assert max(creates.values(), default=0) <= 1, f"bought twice: {creates}"
    assert dict(creates) == dict(case.expect.creates)
    for operation in case.expect.never:
        assert operation not in world.plane.operations(), operation
    if case.expect.error is not None:
        assert not outcome.ok, outcome
        assert outcome.reason == case.expect.error
    else:
        assert outcome.ok, outcome.reason
        assert outcome.data == dict(case.expect.data or {})
    assert elapsed < 5, f"{name} took {elapsed:.1f} s"


def test_subnets_by_zone_as_object_or_json_string_agree(world: World) -> None:
    as_object = world.stack().create(world.props(SubnetIdsByZoneId=OUR_SUBNETS))
    assert as_object.data == BOUGHT_NOW
    second = world.stack().create(world.props())  # JSON string, as in every scenario
    assert second.data == BOUGHT
    assert world.plane.create_counts() == {PLAN: 1}
