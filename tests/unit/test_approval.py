"""Purchase approval by exact plan name, and the explanation of what an edit changed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from novapod.capacity.approval import approval_problem, describe_change, find_edit
from novapod.facts import plan_instance_types
from tests.unit.golden import REQUEST

# Pinned: the name of REQUEST in environment dev. If this changes, every deployed plan
# would be bought again: a naming change needs a migration that adopts the old names.
NAME = "novapod-dev-main-e41dea05"
TYPES = sorted(plan_instance_types())


def test_the_pinned_name_is_approved() -> None:
    assert (
        approval_problem(
            environment="dev",
            request=REQUEST,
            approve=NAME,
            fee_cap="100",
            currency="USD",
            instance_types=TYPES,
        )
        is None
    )


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"instance_type": "ml.p5e.48xlarge"}, "instance_type ml.p5.48xlarge -> ml.p5e.48xlarge"),
        ({"instance_count": 2}, "instance_count 4 -> 2"),
        ({"duration_hours": 24 * 182}, "duration_hours 48 -> 4368"),
        (
            {"start_after": "2027-01-11T00:00:00+00:00"},
            "start_after 2027-01-04T00:00:00+00:00 -> 2027-01-11T00:00:00+00:00",
        ),
        ({"end_before": None}, "end_before 2027-02-28T00:00:00+00:00 -> unset"),
        (
            {"target_resources": ("training-job",)},
            "target_resources [hyperpod-cluster] -> [training-job]",
        ),
        ({"retry": 3}, "retry 0 -> 3"),
        (
            {"instance_type": "ml.p4d.24xlarge", "instance_count": 8},
            "instance_type ml.p5.48xlarge -> ml.p4d.24xlarge, instance_count 4 -> 8",
        ),
        (
            {"instance_count": 16, "duration_hours": 96},
            "instance_count 4 -> 16, duration_hours 48 -> 96",
        ),
        (
            {
                "start_after": "2027-03-04T00:00:00+00:00",
                "end_before": "2027-04-28T00:00:00+00:00",
            },
            "start_after 2027-01-04T00:00:00+00:00 -> 2027-03-04T00:00:00+00:00, "
            "end_before 2027-02-28T00:00:00+00:00 -> 2027-04-28T00:00:00+00:00",
        ),
    ],
)
def test_each_purchase_input_edit_is_named(edit, expected) -> None:
    """Approved NAME; the config now asks for the edited request."""
    edited = replace(REQUEST, **edit)
    assert describe_change(NAME, "dev", edited, TYPES) == expected


def test_three_inputs_changed_at_once_is_said_plainly() -> None:
    edited = replace(REQUEST, instance_count=8, duration_hours=72, end_before=None)
    assert describe_change(NAME, "dev", edited, TYPES) == (
        "what is bought changed in more than one of instance type, count, duration, window "
        "and targets"
    )


def test_renames_are_named() -> None:
    renamed = replace(REQUEST, name="other")
    assert describe_change(NAME, "dev", renamed, TYPES) == (
        "the plan was renamed from main to other"
    )
    assert describe_change(NAME, "prod", REQUEST, TYPES) == (
        "the environment was renamed from dev to prod"
    )
    assert describe_change("my-own-plan", "dev", REQUEST, TYPES) == (
        "my-own-plan is not a plan name novapod derives"
    )


def test_find_edit_returns_none_for_an_unrelated_digest() -> None:
    assert find_edit("00000000", REQUEST, TYPES) is None


def test_novapod_plan_prints_the_names_to_approve(capsys) -> None:
    from novapod.cli import main
    from tests.conftest import ROOT

    path = ROOT / "config" / "examples" / "two-rigs-two-plans.yaml"
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "lite: novapod-two-plans-lite-fc9be8ed\npro: novapod-two-plans-pro-db2a8b01\n" in out
    assert main(["plan", str(path), "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["training_plans"]
    assert [p["plan_name"] for p in plans] == [
        "novapod-two-plans-lite-fc9be8ed",
        "novapod-two-plans-pro-db2a8b01",
    ]
