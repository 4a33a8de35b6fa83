"""The monitoring and notifications sections: the check's schedule and thresholds, the
addresses alerted, and what the stacks make of them."""

from __future__ import annotations

from typing import Any

import pytest

from novapod.config import parse_config
from novapod.config.stacks import stack_kinds
from tests.unit.test_config import VALID, errors_of, with_

HYPERPOD: dict[str, Any] = with_(
    "hyperpod",
    {"instance_groups": [{"name": "cpu", "instance_type": "ml.m5.2xlarge", "instance_count": 1}]},
    with_("eks", {}),
)


def test_the_defaults() -> None:
    config = parse_config(HYPERPOD)
    monitoring = config.monitoring
    assert (monitoring.enabled, monitoring.every_minutes) == (True, 5)
    assert (monitoring.idle_alert_minutes, monitoring.ending_alert_days) == (60, 3)
    assert config.notifications.emails == []
    assert config.has_monitor and stack_kinds(config)[-1] == "monitor"


def test_nothing_to_watch_no_monitor() -> None:
    config = parse_config(VALID)
    assert not config.has_monitor
    assert "monitor" not in stack_kinds(config)


def test_turned_off() -> None:
    config = parse_config(with_("monitoring", {"enabled": False}, HYPERPOD))
    assert not config.has_monitor
    assert "monitor" not in stack_kinds(config)


@pytest.mark.parametrize(
    ("path", "value", "found"),
    [
        ("monitoring.every_minutes", 0, "must be at least 1, got 0"),
        ("monitoring.every_minutes", 61, "must be at most 60, got 61"),
        ("monitoring.idle_alert_minutes", 4, "must be at least 5, got 4"),
        ("monitoring.ending_alert_days", 31, "must be at most 30, got 31"),
        ("monitoring.schedule", "rate(5 minutes)", "unknown key; remove it or fix its spelling"),
    ],
)
def test_bounds(path: str, value: Any, found: str) -> None:
    (issue,) = errors_of(with_(path, value, HYPERPOD))
    assert issue[0] == path and issue[1].startswith(found), issue


def test_addresses_are_emails_listed_once() -> None:
    good = parse_config(with_("notifications", {"emails": ["ops@example.com"]}, HYPERPOD))
    assert good.notifications.emails == ["ops@example.com"]
    (issue,) = errors_of(with_("notifications", {"emails": ["ops at example"]}, HYPERPOD))
    assert issue == (
        "notifications.emails[0]",
        "'ops at example' does not match an email address such as platform-team@example.com",
    )
    (issue,) = errors_of(
        with_("notifications", {"emails": ["ops@example.com", "OPS@example.com"]}, HYPERPOD)
    )
    assert issue == (
        "notifications.emails",
        "ops@example.com is listed twice; list each address once",
    )


@pytest.mark.parametrize(
    "base",
    [VALID, with_("monitoring", {"enabled": False}, HYPERPOD)],
    ids=["nothing-to-watch", "turned-off"],
)
def test_addresses_without_anything_that_alerts_are_refused(base: dict[str, Any]) -> None:
    (issue,) = errors_of(with_("notifications", {"emails": ["ops@example.com"]}, base))
    assert issue == (
        "notifications.emails",
        "nothing sends alerts in this environment: alerts come with training plans or a "
        "HyperPod cluster to watch, and monitoring.enabled true",
    )
