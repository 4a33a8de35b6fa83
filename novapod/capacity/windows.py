"""A plan's window: `start_after` and `end_before` (ISO 8601 with a UTC offset), the
whole days between them, and the checks that refuse an inverted or too short one."""

from __future__ import annotations

import math
from datetime import datetime

from novapod.capacity.models import PlanningError, PlanSettings
from novapod.capacity.units import HOURS_PER_DAY, PLAN_MAX_DAYS, PLAN_MIN_HOURS, hours_text


def days_in_window(where: str, settings: PlanSettings) -> int:
    """Whole days between start_after and end_before (the longest plan when either is
    unset); a window shorter than a day is refused by check_window's messages."""
    start = _parse_time(where, "start_after", settings.start_after)
    end = _parse_time(where, "end_before", settings.end_before)
    if start is None or end is None:
        return PLAN_MAX_DAYS
    hours = (end - start).total_seconds() / 3600
    if hours < PLAN_MIN_HOURS:
        # Inverted, or shorter than a day: refused with the window's own sentence.
        check_window(where, settings, settings.duration_hours or PLAN_MIN_HOURS)
    return max(1, math.floor(hours / HOURS_PER_DAY))


def aware_time(value: str) -> datetime | None:
    """An ISO 8601 time with a UTC offset, or None for anything else."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _parse_time(where: str, key: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    parsed = aware_time(value)
    if parsed is None:
        raise PlanningError(
            f"{where}: {key} {value!r} is not an ISO 8601 time with a UTC offset; write it "
            "like 2026-03-01T00:00:00Z"
        )
    return parsed


def check_window(where: str, settings: PlanSettings, duration: int) -> None:
    """Refuse a window that is inverted or shorter than the plan's `duration` hours."""
    start = _parse_time(where, "start_after", settings.start_after)
    end = _parse_time(where, "end_before", settings.end_before)
    if start is None or end is None:
        return
    window_hours = (end - start).total_seconds() / 3600
    if window_hours <= 0:
        raise PlanningError(
            f"{where}: start_after {settings.start_after} is not before end_before "
            f"{settings.end_before}; the window is inverted, swap the two times"
        )
    if window_hours < duration:
        raise PlanningError(
            f"{where}: the window from start_after to end_before is {hours_text(window_hours)} h, "
            f"shorter than its {duration} h duration; widen the window or shorten the plan"
        )
