"""`novapod offerings`: the handler's search, filter and choice with the user's credentials."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from novapod.cli import main
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers.world import T0, ZONES

CONFIG = """
name: dev
region: us-east-1
network:
  vpc:
    zone_ids: [use1-az4, use1-az6]
jobs:
  - name: sft
    model: lite
    technique: sft-lora
    runs: 2
    hours_per_run: 24
    plan: main
    data: {train: sft/train.jsonl}
"""
APPROVED = """
capacity:
  training_plans:
    - name: main
      purchase: {approve: novapod-dev-main-951cd24c, max_upfront_fee: LIMIT}
"""


@pytest.fixture
def fake(control_plane: FakeControlPlane) -> FakeControlPlane:
    control_plane.reset()
    control_plane.set_zones(ZONES)
    control_plane.add_offering("tpo-elsewhere", zones=["us-east-1c"], start=T0, fee="10.00")
    control_plane.add_offering(
        "tpo-cheap", zones=["us-east-1b"], start=T0 + timedelta(days=5), fee="90000.00"
    )
    control_plane.add_offering(
        "tpo-early", zones=["us-east-1a"], start=T0 + timedelta(days=1), fee="120000.00"
    )
    return control_plane


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "env.yaml"
    path.write_text(text)
    return path


def test_lists_candidates_in_our_zones_and_the_choice(fake, tmp_path, capsys) -> None:
    assert main(["offerings", str(write(tmp_path, CONFIG)), "--plan", "main"]) == 0
    out = capsys.readouterr().out
    assert "3 offered, 2 fit the request in one of our zones" in out
    # Listed as skipped, with its reason, never as a candidate.
    assert (
        "skipped tpo-elsewhere: its zone us-east-1c (use1-az1) has no private subnet of ours" in out
    )
    assert not [line for line in out.splitlines() if "tpo-elsewhere" in line and "USD" in line]
    chosen = [line for line in out.splitlines() if line.startswith("*")]
    assert len(chosen) == 1 and "tpo-cheap" in chosen[0] and "use1-az6" in chosen[0]
    assert (
        "nothing is bought until the plan is in capacity.training_plans with purchase.approve: "
        "novapod-dev-main-951cd24c and max_upfront_fee"
    ) in out
    (search,) = fake.calls_to("SearchTrainingPlanOfferings")
    assert search["InstanceType"] == "ml.p5.48xlarge"
    assert (search["InstanceCount"], search["DurationHours"]) == (4, 48)
    assert fake.calls_to("CreateTrainingPlan") == []


@pytest.mark.parametrize(
    ("limit", "verdict"),
    [("100000", "a deploy would buy tpo-cheap"), ("50000", "above MaxUpfrontFee 50000 USD")],
)
def test_reports_the_fee_cap_verdict(fake, tmp_path, capsys, limit, verdict) -> None:
    path = write(tmp_path, CONFIG + APPROVED.replace("LIMIT", limit))
    assert main(["offerings", str(path)]) == 0
    assert verdict in capsys.readouterr().out
    assert fake.calls_to("CreateTrainingPlan") == []


def test_unknown_plan_is_a_config_error(fake, tmp_path, capsys) -> None:
    assert main(["offerings", str(write(tmp_path, CONFIG)), "--plan", "nope"]) == 2
    assert "--plan nope: no such plan; choose one of main" in capsys.readouterr().err


def test_aws_errors_are_one_line(fake, tmp_path, capsys) -> None:
    fake.error("SearchTrainingPlanOfferings", "ResourceLimitExceeded", message="too many searches")
    assert main(["offerings", str(write(tmp_path, CONFIG))]) == 1
    err = capsys.readouterr().err
    assert err.startswith("novapod offerings: the search failed:") and "Traceback" not in err


def test_offerings_in_another_currency_are_skipped_as_the_deploy_skips_them(
    fake, tmp_path, capsys
) -> None:
    fake.add_offering("tpo-euro", zones=["us-east-1a"], start=T0, fee="1.00", currency="EUR")
    path = write(tmp_path, CONFIG + APPROVED.replace("LIMIT", "100000"))
    assert main(["offerings", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 offered, 2 fit the request in one of our zones" in out
    (skipped,) = [line for line in out.splitlines() if line.startswith("skipped tpo-euro")]
    assert "EUR" in skipped
    assert "a deploy would buy tpo-cheap" in out
    assert fake.calls_to("CreateTrainingPlan") == []


def test_a_larger_cheaper_offering_is_skipped_with_its_count(fake, tmp_path, capsys) -> None:
    # Returned for any search, in our zone, cheaper than tpo-cheap and within the cap.
    fake.add_offering(
        "tpo-eight",
        zones=["us-east-1b"],
        start=T0 + timedelta(days=2),
        fee="80000.00",
        instance_count=8,
        near_match=True,
    )
    path = write(tmp_path, CONFIG + APPROVED.replace("LIMIT", "100000"))
    assert main(["offerings", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 offered, 2 fit the request in one of our zones" in out
    assert "skipped tpo-eight: it offers 8 instances in total, not 4" in out.splitlines()
    assert not [line for line in out.splitlines() if line.startswith("*") and "tpo-eight" in line]
    assert "a deploy would buy tpo-cheap" in out
    assert fake.calls_to("CreateTrainingPlan") == []


@pytest.mark.parametrize(
    "approve", ["true", "novapod-dev-main-00000000"], ids=["approve-true", "approve-stale"]
)
def test_an_unapproved_purchase_still_shows_offerings_and_its_name(
    fake, tmp_path, capsys, approve
) -> None:
    text = CONFIG + APPROVED.replace("novapod-dev-main-951cd24c", approve).replace(
        "LIMIT", "100000"
    )
    assert main(["offerings", str(write(tmp_path, text)), "--plan", "main"]) == 0
    out = capsys.readouterr().out
    assert "3 offered, 2 fit the request in one of our zones" in out
    assert out.splitlines()[-1] == (
        "would choose tpo-cheap (cheapest; within the cap); nothing is bought until "
        f"purchase.approve is novapod-dev-main-951cd24c (it is {approve})"
    )
    assert "a deploy would buy" not in out
    assert main(["validate", str(tmp_path / "env.yaml")]) == 2  # buying still needs it
