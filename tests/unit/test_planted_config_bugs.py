"""Config and planner bugs a mutation probe planted and the suite once let through (issue 8).

Each test names the bug it kills and asserts the exact outcome.
"""

from __future__ import annotations

from typing import Any

import pytest

from novapod.config import RIG_ENDPOINTS, ConfigError, parse_config
from tests.conftest import VALIDATION_TIME as NOW
from tests.unit.golden import SFT, SFT_PLAN

NETWORK = {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["use1-az4", "use1-az6"]}}
BASE: dict[str, Any] = {"name": "dev", "region": "us-east-1", "network": NETWORK}


def issues_of(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, now=NOW)
    return dict(caught.value.issues)


def _plan_with_window(end_before: str, approve: str) -> dict[str, Any]:
    plan = {
        "name": "main",
        "instance_type": "ml.p5.48xlarge",
        "instance_count": 4,
        "duration_hours": 48,
        "start_after": "2027-01-04T00:00:00Z",
        "end_before": end_before,
        "purchase": {"approve": approve, "max_upfront_fee": "1"},
    }
    return {**BASE, "capacity": {"training_plans": [plan]}}


# --- the plan-window check: a window exactly as long as the plan fits ------------------


def test_a_window_exactly_as_long_as_the_plan_is_accepted() -> None:
    """Bug: `window_hours < duration` turned into `<=` refuses the tightest window."""
    data = _plan_with_window("2027-01-06T00:00:00Z", "novapod-dev-main-aef5c5b2")
    assert parse_config(data, now=NOW).purchase_names() == {"main": "novapod-dev-main-aef5c5b2"}


def test_a_window_one_hour_short_is_refused() -> None:
    data = _plan_with_window("2027-01-05T23:00:00Z", "novapod-dev-main-aef5c5b2")
    assert issues_of(data) == {
        "capacity.training_plans[0]": (
            "training plan main: the window from start_after to end_before is 47 h, shorter "
            "than its 48 h duration; widen the window or shorten the plan"
        )
    }


# --- restricted instance groups need the S3 gateway endpoint ---------------------------


def test_restricted_groups_without_the_s3_gateway_endpoint_are_refused() -> None:
    """Bug: the S3 gateway endpoint dropped from the restricted-group endpoint check."""
    assert "s3" not in RIG_ENDPOINTS
    data = {
        **BASE,
        "network": {**NETWORK, "endpoints": list(RIG_ENDPOINTS)},
        "jobs": [{**SFT, "plan": None, "instance_group": "rig"}],
        "capacity": {
            "training_plans": [
                {"name": "main", "purchase": {"approve": SFT_PLAN, "max_upfront_fee": "1"}}
            ],
        },
        "eks": {},
        "hyperpod": {"restricted_instance_groups": [{"name": "rig", "training_plan": "main"}]},
    }
    assert issues_of(data) == {
        "network.endpoints": (
            "restricted instance groups have no internet access and reach AWS only through "
            "endpoints; add s3"
        )
    }


# --- the aws: tag prefix is reserved in any case ---------------------------------------


@pytest.mark.parametrize("key", ["AWS:owner", "Aws:owner", "aWs:owner"])
def test_the_aws_tag_prefix_is_refused_in_any_case(key: str) -> None:
    """Bug: a case-sensitive prefix check lets AWS:owner through. The prefix is reserved
    in "any upper or lowercase combination" (see https://docs.aws.amazon.com/batch/latest/
    userguide/tag-restrictions.html)."""
    assert issues_of({**BASE, "tags": {key: "me"}}) == {
        "tags": f"the aws: prefix is reserved by AWS; rename {key}"
    }
