"""Entry-point details of the TrainingPlan handler that the fault matrix does not show."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from novapod.constructs.training_plan.handler import index
from tests.handlers.world import PLAN, World


def test_decisions_are_logged_as_json_lines_without_secrets(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = world.stack()
    assert stack.create(world.props()).ok
    assert stack.delete().ok
    lines = capsys.readouterr().out.splitlines()
    decisions = [json.loads(line)["decision"] for line in lines]
    assert decisions == ["start", "purchase", "bought", "wait", "ready", "retain"]
    printed = "\n".join(lines)
    assert "fake-secret" not in printed
    assert "cloudformation-custom-resource-response" not in printed  # the signed ResponseURL
    retain = json.loads(lines[-1])
    assert retain["plan_name"] == PLAN
    assert "cannot be cancelled" in retain["reason"]


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


def test_handler_folder_imports_on_its_own_as_the_lambda_asset_root(tmp_path: Path) -> None:
    # Lambda loads `handler.index` from the asset root: no novapod, no aws_cdk there.
    shutil.copytree(Path(index.__file__).parent, tmp_path / "handler")
    probe = (
        "import sys, handler.index as h; "
        "assert callable(h.on_event) and callable(h.is_complete); "
        "assert not [m for m in sys.modules if m.split('.')[0] in ('novapod', 'aws_cdk')]"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, check=True)
