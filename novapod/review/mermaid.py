"""A training plan's schedule as a Mermaid `gantt` chart, for the review's comment
(GitHub renders a ```mermaid block in Markdown as a diagram).

One section for the plan (the hours it holds), one per job (its runs as tasks, in
compact mode on one row: the runs follow each other), one for the reserved instances no
job uses (`done`, grey). Syntax as Mermaid documents it (mermaid-js/mermaid,
packages/mermaid/src/docs/syntax/gantt.md): `dateFormat`, `axisFormat` (d3-time-format),
`tickInterval`, `todayMarker off`, `section`, tasks `name :tags, id, start, end`, and
`displayMode: compact` in the front matter. A chart has no day numbers, only dates, so
hour 0 is drawn at 2024-01-01 00:00 and the axis shows the day of the year (`day %-j`):
day 1 is the plan's first day. Mermaid reads and prints these dates in the browser's own
time zone, so they agree wherever the comment is read. Mermaid's gantt grammar takes `:`
for the start of a task's data and `#` and `;` as ends of a line (mermaid-js/mermaid
issue 1981), so names lose them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from novapod.capacity.chart import (
    PlanChart,
    chart_from_json,
    size_text,
    target_text,
    window_text,
)
from novapod.capacity.units import HOURS_PER_DAY, hours_text

ANCHOR = datetime(2024, 1, 1)  # a Monday, the first day of a year: day N is the Nth day
DATE_FORMAT = "YYYY-MM-DD HH:mm"
# Past this many runs in one chart, each job is one task ("runs 1-50"), not one per run,
# so that a schedule stays a picture and leaves the comment room for the rest.
MAX_RUN_TASKS = 40
DAILY_TICKS_UP_TO_DAYS = 14
_SPECIAL = re.compile(r"[:;#\r\n`]+")
_PERCENTS = re.compile(r"%{2,}")


def label(value: object) -> str:
    """Text Mermaid shows as written: no `:`, `;`, `#`, backtick or line break, no `%%`
    (a comment), no leading or doubled spaces."""
    cleaned = _PERCENTS.sub("%", _SPECIAL.sub(" ", str(value)))
    return " ".join(cleaned.split())


def at(hour: float) -> str:
    """An hour of the plan as a `dateFormat` date (to the minute)."""
    return (ANCHOR + timedelta(minutes=round(hour * 60))).strftime("%Y-%m-%d %H:%M")


def gantt(chart: PlanChart) -> list[str]:
    """The ```mermaid block's lines, fences included."""
    lines = [
        "```mermaid",
        "---",
        "displayMode: compact",
        "---",
        "gantt",
        f"    title {label(f'{chart.plan} - {size_text(chart)}')}",
        f"    dateFormat {DATE_FORMAT}",
        "    axisFormat day %-j",
    ]
    if chart.hours // HOURS_PER_DAY <= DAILY_TICKS_UP_TO_DAYS:
        lines.append("    tickInterval 1day")
    lines += [
        "    todayMarker off",
        "    section plan",
        f"    {chart.hours} h reserved :active, plan, {at(0)}, {at(chart.hours)}",
    ]
    per_run = sum(bar.runs for bar in chart.jobs) <= MAX_RUN_TASKS
    for j, bar in enumerate(chart.jobs, start=1):
        lines.append(
            f"    section {label(bar.job)} ({bar.instance_count} of {chart.instance_count})"
        )
        if per_run:
            lines += [
                f"    run {run.number} of {bar.runs} :j{j}r{run.number}, "
                f"{at(run.start_hour)}, {at(run.end_hour)}"
                for run in bar.run_spans()
            ]
        else:
            last = bar.run_spans()[-1]
            lines.append(
                f"    runs 1-{bar.runs}, {hours_text(bar.hours_per_run)} h each :j{j}, "
                f"{at(bar.start_hour)}, {at(last.end_hour)}"
            )
    idle = chart.idle()
    if idle:
        lines.append("    section idle")
        lines += [
            f"    {gap.instances} of {chart.instance_count} idle :done, i{i}, "
            f"{at(gap.start_hour)}, {at(gap.end_hour)}"
            for i, gap in enumerate(idle, start=1)
        ]
    lines.append("```")
    return lines


def schedule_lines(entry: Mapping[str, Any], code: Callable[[object], str]) -> list[str]:
    """One plan's part of the comment: what it is, then its chart, or, when the schedule
    changed, the base's and the head's one after the other. `code` quotes a name as the
    rest of the comment does. Empty when the recorded schedule cannot be read."""
    after = chart_from_json(entry["after"])
    before = chart_from_json(entry["before"]) if entry["before"] is not None else None
    if after is None:
        return []
    where = f"{code(entry['plan'])} ({code(entry['stack'])})"
    head = _what(after)
    if before is None:
        return [f"Schedule of {where}, new (none recorded at the base): {head}.", "", *gantt(after)]
    base = _what(before)
    return [
        f"Schedule of {where}, changed:",
        "",
        f"Before (base): {base}.",
        "",
        *gantt(before),
        "",
        f"After (head): {head}.",
        "",
        *gantt(after),
    ]


def _what(chart: PlanChart) -> str:
    """4 x ml.p5.48xlarge for 144 h (6 days), for a HyperPod cluster; window: ..."""
    return (
        f"{size_text(chart)}, {target_text(chart.target)}; "
        f"{window_text(chart.start_after, chart.end_before)}"
    )
