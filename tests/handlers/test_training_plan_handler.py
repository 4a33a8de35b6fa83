"""Entry-point details of the TrainingPlan handler that the fault matrix does not show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from novapod.constructs.training_plan.handler import index
from tests.handlers.world import PLAN, World

ARN = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}"


def test_a_purchase_logs_every_step_as_json_lines_without_secrets(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a `cdk deploy` user reads in the on_event and is_complete log groups.
    stack = world.stack()
    assert stack.create(world.props()).ok
    assert stack.delete().ok
    lines = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines]
    assert [(r["step"], r["message"]) for r in records] == [
        ("start", f"Create of training plan {PLAN} (purchase)"),
        ("describe", f"training plan {PLAN} does not exist"),
        ("ledger-read", f"plan#{PLAN} is not in the ledger"),
        ("claim", f"claimed plan#{PLAN} (attempt 1) before searching"),
        (
            "search",
            "SearchTrainingPlanOfferings found 4 offerings for 4 x ml.p5.48xlarge for 48 h "
            "starting after 2030-01-01T00:00:00Z ending before 2030-01-31T00:00:00Z; 2 fit the "
            "request",
        ),
        (
            "skip",
            "offering tpo-elsewhere skipped: its zone us-east-1c (use1-az1) has no private "
            "subnet of ours",
        ),
        ("skip", "offering tpo-split skipped: its capacity spans 2 zones (us-east-1a, us-east-1b)"),
        (
            "choose",
            "chose offering tpo-cheap (cheapest): 90000.00 USD within MaxUpfrontFee 100000 USD, "
            "4 x ml.p5.48xlarge in us-east-1b (use1-az6) from 2030-01-06T00:00:00Z",
        ),
        ("ledger", f"recorded plan#{PLAN} as calling"),
        (
            "create",
            f"calling CreateTrainingPlan for training plan {PLAN} with offering tpo-cheap (one "
            "attempt, never resent)",
        ),
        ("ledger", f"recorded plan#{PLAN} as bought"),
        ("bought", f"bought training plan {PLAN} ({ARN}); waiting until it is Scheduled"),
        ("poll", f"training plan {PLAN} exists and is Pending"),
        ("poll", f"training plan {PLAN} exists and is Scheduled"),
        ("ready", f"training plan {PLAN} is Scheduled"),
        (
            "retain",
            f"keeping training plan {PLAN}: SageMaker training plans cannot be cancelled or "
            "deleted; the plan (if it exists) stays in the account until it expires",
        ),
    ]
    skipped = [r for r in records if r["step"] == "skip"]
    assert skipped[0]["offering_id"] == "tpo-elsewhere" and skipped[0]["reasons"]
    choose = next(r for r in records if r["step"] == "choose")
    assert (choose["upfront_fee"], choose["currency"], choose["zone_id"]) == (
        "90000.00",
        "USD",
        "use1-az6",
    )
    printed = "\n".join(lines)
    assert "fake-secret" not in printed
    assert "cloudformation-custom-resource-response" not in printed  # the signed ResponseURL


def test_a_failed_purchase_call_logs_its_classification(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.plane.server_error("CreateTrainingPlan")
    assert not world.stack().create(world.props()).ok
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    failed = next(r for r in records if r["step"] == "create-failed")
    assert failed["kind"] == "ambiguous"
    assert [r["message"] for r in records if r["step"] == "confirm"] == [
        f"training plan {PLAN} does not exist"
    ] * 3


def test_purchases_go_through_a_client_that_never_retries(world: World) -> None:
    buyer = index._client("sagemaker", max_attempts=1, read_timeout=7)
    reader = index._client("sagemaker")
    assert buyer.meta.config.retries == {"mode": "standard", "total_max_attempts": 1}
    assert (buyer.meta.config.read_timeout, reader.meta.config.read_timeout) == (7, 1.0)
    assert reader.meta.config.retries == {
        "mode": "standard",
        "total_max_attempts": index.MAX_ATTEMPTS,
    }


def test_delete_is_complete_at_once_without_aws(world: World) -> None:
    event = world.driver.event("Delete", {"PlanName": "x"}, physical_id="x")
    assert index.is_complete(event, None) == {"IsComplete": True}
    assert world.plane.calls == []


def test_on_event_result_carries_the_wait_start_outside_the_attributes(world: World) -> None:
    result = index.on_event(world.driver.event("Create", world.props()), None)
    assert result == {
        "PhysicalResourceId": PLAN,
        "Data": {
            "PlanName": PLAN,
            "PlanArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}",
            "PurchasedAt": "2030-01-01T00:00:00Z",
        },
        "WaitStartedAt": "2030-01-01T00:00:00Z",
    }


def test_a_tampered_stage_is_built_anew() -> None:
    from novapod.constructs.provider import _stage_with_core

    root = Path(index.__file__).parent.parent
    stage = _stage_with_core(root)
    planted = stage / "novapod_lambda" / "training_plan" / "handler" / "index.py"
    original = planted.read_bytes()
    planted.write_bytes(b"raise SystemExit('planted')\n")
    assert _stage_with_core(root) == stage
    assert planted.read_bytes() == original
    assert stage.parent.stat().st_mode & 0o077 == 0  # this user's only
