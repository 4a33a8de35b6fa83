"""Golden plan names: the name is CreateTrainingPlan's only idempotency key.

Every expected name here is a literal, computed once from the original implementation.
If one of these tests fails, every deployed plan would be bought again under a new
name: change the naming scheme only together with a migration that adopts the old names.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import pytest

from novapod.capacity.naming import (
    name_head,
    purchase_digest,
    purchase_inputs,
    split_name,
    training_plan_name,
)
from novapod.config import parse_config
from tests.conftest import VALIDATION_TIME as NOW
from tests.unit.golden import REQUEST, SFT

NAME = "novapod-dev-main-e41dea05"
# The exact bytes the digest of REQUEST is taken over: sorted keys, no spaces.
CANONICAL = (
    '{"duration_hours":48,"end_before":"2027-02-28T00:00:00+00:00","instance_count":4,'
    '"instance_type":"ml.p5.48xlarge","start_after":"2027-01-04T00:00:00+00:00",'
    '"target_resources":["hyperpod-cluster"]}'
)


def test_the_fixed_request_has_its_pinned_name() -> None:
    assert training_plan_name("dev", REQUEST) == NAME


def test_the_digest_is_sha256_of_the_canonical_json() -> None:
    assert hashlib.sha256(CANONICAL.encode()).hexdigest()[:8] == "e41dea05"
    assert purchase_digest(purchase_inputs(REQUEST)) == "e41dea05"


def test_the_digest_does_not_depend_on_key_order() -> None:
    inputs = purchase_inputs(REQUEST)
    assert purchase_digest(dict(reversed(list(inputs.items())))) == "e41dea05"


def test_target_order_does_not_change_the_name() -> None:
    both = replace(REQUEST, target_resources=("training-job", "hyperpod-cluster"))
    assert training_plan_name("dev", both) == "novapod-dev-main-c4763b38"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"instance_type": "ml.p5e.48xlarge"}, "novapod-dev-main-9a76779d"),
        ({"instance_count": 8}, "novapod-dev-main-d7905042"),
        ({"duration_hours": 72}, "novapod-dev-main-0663ff74"),
        ({"start_after": "2027-01-11T00:00:00+00:00"}, "novapod-dev-main-59f9ba95"),
        ({"start_after": None}, "novapod-dev-main-cb891fae"),
        ({"end_before": "2027-03-28T00:00:00+00:00"}, "novapod-dev-main-b82632de"),
        ({"end_before": None}, "novapod-dev-main-6ff5dd80"),
        (
            {"target_resources": ("hyperpod-cluster", "training-job")},
            "novapod-dev-main-c4763b38",
        ),
        ({"target_resources": ("training-job",)}, "novapod-dev-main-4a7aee1b"),
        ({"retry": 1}, "novapod-dev-main-124f009d"),
        ({"name": "other"}, "novapod-dev-other-e41dea05"),
    ],
    ids=[
        "instance_type",
        "instance_count",
        "duration_hours",
        "start_after",
        "start_after-unset",
        "end_before",
        "end_before-unset",
        "target_resources-added",
        "target_resources-other",
        "retry",
        "plan-name",
    ],
)
def test_each_purchase_input_changes_the_name(edit: dict[str, Any], expected: str) -> None:
    assert training_plan_name("dev", replace(REQUEST, **edit)) == expected


def test_the_environment_name_changes_the_name() -> None:
    assert training_plan_name("prod", REQUEST) == "novapod-prod-main-e41dea05"


def test_planner_bookkeeping_does_not_change_the_name() -> None:
    """Which jobs fill the plan and the hours they use are not part of what is bought."""
    edited = replace(
        REQUEST,
        jobs=("sft", "eval"),
        required_instance_hours=150.0,
        reserved_instance_hours=192.0,
        waste_instance_hours=42.0,
    )
    assert training_plan_name("dev", edited) == NAME


def test_a_long_name_is_cut_to_64_characters_keeping_the_digest() -> None:
    long = replace(REQUEST, name="nova-lite-sft-evaluation")
    name = training_plan_name("research-platform-team-ab", long)
    assert name == "novapod-research-platform-team-ab-nova-lite-sft-evaluat-e41dea05"
    assert len(name) == 64


def test_a_cut_that_ends_on_a_hyphen_drops_it() -> None:
    long = replace(REQUEST, name="nova-lite-sft-evaluation")
    assert name_head("research-platform-team-nova-labs", long.name) == (
        "novapod-research-platform-team-nova-labs-nova-lite-sft"
    )
    assert training_plan_name("research-platform-team-nova-labs", long) == (
        "novapod-research-platform-team-nova-labs-nova-lite-sft-e41dea05"
    )


def test_split_name_recognises_only_derived_names() -> None:
    assert split_name(NAME) == ("novapod-dev-main", "e41dea05")
    assert split_name("novapod-dev-main-E41DEA05") is None
    assert split_name("my-own-plan-e41dea05") is None


# ------------------------------------------------------------ guardrails, via config

PLAN: dict[str, Any] = {
    "name": "main",
    "start_after": "2027-01-04T00:00:00Z",
    "end_before": "2027-02-28T00:00:00Z",
    "purchase": {"approve": NAME, "max_upfront_fee": "20000"},
}


def _config(plan: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": "dev",
        "region": "us-east-1",
        "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["use1-az4", "use1-az6"]}},
        "jobs": [SFT],
        "capacity": {"training_plans": [] if plan is None else [plan]},
    }


def test_the_config_buys_the_fixed_request_under_its_pinned_name() -> None:
    assert parse_config(_config(PLAN), now=NOW).purchase_names() == {"main": NAME}


@pytest.mark.parametrize(
    "edit",
    [
        {"purchase": {"approve": NAME, "max_upfront_fee": "99999.50"}},
        {"purchase": {"approve": NAME, "max_upfront_fee": "20000", "currency": "EUR"}},
        {"choice": "earliest"},
    ],
    ids=["fee-cap", "currency", "choice"],
)
def test_guardrails_do_not_change_the_name(edit: dict[str, Any]) -> None:
    assert parse_config(_config({**PLAN, **edit}), now=NOW).purchase_names() == {"main": NAME}


def test_approval_does_not_change_the_name() -> None:
    """Unlisted (so never approved), the plan the planner proposes has the name it is
    bought under once listed and approved."""
    proposed = parse_config(_config(None), now=NOW).purchase_names()
    assert proposed == {"main": "novapod-dev-main-951cd24c"}
    approved = {
        "name": "main",
        "purchase": {"approve": "novapod-dev-main-951cd24c", "max_upfront_fee": "1"},
    }
    assert parse_config(_config(approved), now=NOW).purchase_names() == proposed
