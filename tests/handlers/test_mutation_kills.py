"""TrainingPlan handler behaviour that `make mutation` showed no test pinned.

Each test names the observable promise it keeps: the confirming describes after an
ambiguous purchase go on past a failed one, the failure message blames the describes
only when none of them answered, every step reaches the log a `cdk deploy` user reads,
and Delete hands back the resource's own physical ID. Mutants left alive on purpose
are listed in tests/mutation_equivalents.md.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest

from novapod.constructs.training_plan.handler import decisions, index
from tests.handlers.world import PLAN, World

MAY_HAVE_BOUGHT = (
    "it may have been bought: the next deploy adopts it if it exists; do not change the "
    "request until then"
)


def log_lines(capsys: pytest.CaptureFixture[str], step: str) -> list[dict[str, object]]:
    """The handler's JSON log records of one step (Lambda sends stdout to CloudWatch)."""
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    return [record for record in records if record.get("step") == step]


def test_a_failed_confirming_describe_is_followed_by_the_next_one(world: World) -> None:
    # The answer to the purchase is lost; the first confirming describe is throttled past
    # botocore's 3 attempts; the second sees the bought plan and adopts it.
    world.plane.lose_response("CreateTrainingPlan", how="drop")
    world.plane.throttle("DescribeTrainingPlan", times=3, after=1)
    outcome = world.stack().create(world.props())
    assert outcome.ok, outcome.reason
    assert outcome.data["PlanName"] == PLAN
    assert len(world.plane.calls_to("CreateTrainingPlan")) == 1


def test_when_a_later_describe_answers_the_message_does_not_blame_the_describes(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # CreateTrainingPlan fails with a 500 and buys nothing; the first confirming describe
    # is throttled, the later ones answer "no such plan": the describes did answer.
    world.plane.server_error("CreateTrainingPlan")
    world.plane.throttle("DescribeTrainingPlan", times=3, after=1)
    capsys.readouterr()
    outcome = world.stack().create(world.props())
    assert not outcome.ok
    (waiting,) = log_lines(capsys, "await-purchase")
    message = str(waiting["message"])
    assert "describing it failed too" not in message
    assert message.endswith(MAY_HAVE_BOUGHT + "; waiting for the plan to show")
    assert len(world.plane.calls_to("CreateTrainingPlan")) == 1


def test_each_confirming_describe_is_logged_with_the_plan_and_its_pause(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.plane.lose_response("CreateTrainingPlan", how="drop")
    world.plane.throttle("DescribeTrainingPlan", times=3, after=1)
    capsys.readouterr()
    assert world.stack().create(world.props()).ok
    confirms = log_lines(capsys, "confirm")
    assert confirms[0] == {
        "step": "confirm",
        "message": f"describing training plan {PLAN} failed (ThrottlingException: Rate exceeded)",
        "plan_name": PLAN,
    }
    assert confirms[1]["plan_name"] == PLAN
    assert confirms[1]["after_seconds"] == 2
    assert str(confirms[1]["message"]).startswith(f"training plan {PLAN} exists and is ")
    assert len(confirms) == 2


def test_delete_keeps_the_plan_and_returns_its_physical_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    arn = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}"
    event = {"RequestType": "Delete", "PhysicalResourceId": arn, "ResourceProperties": {}}
    capsys.readouterr()
    assert index.on_event(event, None) == {"PhysicalResourceId": arn}
    (retain,) = log_lines(capsys, "retain")
    assert retain["plan_name"] == arn
    assert str(retain["message"]).startswith(f"keeping training plan {arn}: ")


def test_a_failed_purchase_and_its_adoption_are_logged_with_the_plan_and_the_error(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.plane.lose_response("CreateTrainingPlan", how="server_error")
    capsys.readouterr()
    outcome = world.stack().create(world.props())
    assert outcome.ok, outcome.reason
    out = capsys.readouterr().out
    records = [json.loads(line) for line in out.splitlines() if line]
    (failed,) = [r for r in records if r.get("step") == "create-failed"]
    error = "InternalFailure: An internal error occurred"
    assert failed == {
        "step": "create-failed",
        "message": f"CreateTrainingPlan for training plan {PLAN} failed ({error}); "
        "classified as ambiguous",
        "plan_name": PLAN,
        "error": error,
        "kind": "ambiguous",
    }
    (adopted,) = [r for r in records if r.get("step") == "adopt-after-failed-create"]
    assert adopted["plan_name"] == PLAN
    assert adopted["bought_by_this_event"] is True
    assert str(adopted["message"]).startswith(f"training plan {PLAN} exists after the failed call")


def test_without_a_vpc_the_no_offering_message_says_we_have_no_zone() -> None:
    # `novapod offerings` searches before any VPC exists: no subnets to name.
    request = decisions.OfferingRequest("ml.p5.48xlarge", 4, 48)
    offered = [{"TrainingPlanOfferingId": "a", "ReservedCapacityOfferings": []}]
    message = decisions.no_offering_message(
        request, offered, {}, skipped=[("a", ["it holds 2 instances, not 4"])]
    )
    assert message == (
        "none of the 1 offerings for 4 x ml.p5.48xlarge for 48 h fits, so no plan was bought "
        "(a: it holds 2 instances, not 4; our private subnets are in no zone)"
    )


def test_a_describe_failing_before_the_purchase_is_the_reason_given(world: World) -> None:
    world.plane.throttle("DescribeTrainingPlan", times=3)
    outcome = world.stack().create(world.props())
    assert not outcome.ok
    assert (
        f"DescribeTrainingPlan for training plan {PLAN} failed (ThrottlingException: "
        "Rate exceeded)" in outcome.reason
    )
    assert world.plane.calls_to("CreateTrainingPlan") == []


def test_the_handler_clock_is_utc_aware() -> None:
    # Plan windows and SageMaker's times are aware; a naive "now" cannot be compared.
    assert index._now().utcoffset() == timedelta(0)


def test_the_handler_pause_sleeps_the_given_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real pause between confirming describes (scenario tests use a fake clock).
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    index._sleep(2.5)
    assert slept == [2.5]
