"""The shipped configs must keep validating: a plan window that has ended is refused
(config/checks.py), so every window a shipped config names ends well after today. This
test reads the real clock on purpose: it fails 90 days before a window ends, so the
examples are renewed in time, not on the day users' first `novapod validate` breaks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from novapod import yamlsafe
from tests.conftest import ALL_CONFIGS, ROOT

NOTICE = timedelta(days=90)


def windows(path: Path) -> list[tuple[str, datetime]]:
    data = yamlsafe.load(path.read_text())
    plans = (data.get("capacity") or {}).get("training_plans") or []
    found = []
    for i, plan in enumerate(plans):
        end = plan.get("end_before")
        if end is not None:
            moment = end if isinstance(end, datetime) else datetime.fromisoformat(str(end))
            found.append((f"capacity.training_plans[{i}].end_before", moment.astimezone(UTC)))
    return found


def ending_soon(path: Path, today: datetime) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}: {field} {end.date()} is less than {NOTICE.days} days "
        f"away; move the window ahead (that changes the plan's name: set purchase.approve "
        "to the name `novapod validate` then prints, and update the tests and docs that "
        "pin the old name)"
        for field, end in windows(path)
        if end - today < NOTICE
    ]


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_no_shipped_window_ends_within_90_days(path: Path) -> None:
    assert ending_soon(path, datetime.now(UTC)) == []


def test_the_check_sees_a_window_about_to_end() -> None:
    example = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
    ((field, end),) = windows(example)
    assert field == "capacity.training_plans[0].end_before"
    assert ending_soon(example, end - NOTICE + timedelta(days=1)) == [
        f"config/examples/single-rig-purchase.yaml: {field} {end.date()} is less than 90 days "
        "away; move the window ahead (that changes the plan's name: set purchase.approve to "
        "the name `novapod validate` then prints, and update the tests and docs that pin the "
        "old name)"
    ]
    assert ending_soon(example, end - NOTICE - timedelta(days=1)) == []
