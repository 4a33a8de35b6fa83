"""The capacity plan as a picture (`novapod plan --format svg | html`): each training
plan's schedule as a Gantt chart in one standalone SVG.

Per plan: a header with its name, size and window dates; the hours it holds as a frame
(an extension shaded apart); a row per job, in the schedule's order, with each run as a
bar (its number on it), a dashed line for the hours it waits (for the jobs it runs after,
or for instances) and a tick from each job it waits for; under the jobs, the reserved
instances no job uses, hatched, as tall as the share idle. Every element carries a
<title> (a tooltip, and what a screen reader reads). Built from `chart.plan_charts` with
string building and XML escaping only: the same plan gives the same bytes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from xml.sax.saxutils import escape

from novapod.capacity.chart import JobBar, PlanChart, plan_charts, size_text, when, window_text
from novapod.capacity.models import CapacityPlan
from novapod.capacity.units import HOURS_PER_DAY, hours_text

MARGIN = 16
FONT_SIZE = 12
CHAR_WIDTH = 7.2  # a generous average for 12 px sans-serif: labels never overlap the bars
CHART_WIDTH = 720  # the hours a plan holds, whatever their number
ROW = 22
BAR = 14
HEADER = 40  # two lines: the plan, its window
AXIS = 18
GAP = 28
COUNT_WIDTH = 44
LABEL_GAP = 8
MIN_DAY_LABEL_SPACING = 44  # px between "day N" labels
DAY_LABEL_STEPS = (1, 2, 5, 7, 10, 14, 30)

INK = "#222222"
MUTED = "#666666"
FRAME = "#f4f4f4"
EXTENSION = "#e6efe6"
GRID = "#dddddd"
SLOT = "#c6d4e6"
RUN_FILLS = ("#3b6ea5", "#5a8cc4")  # alternate, so two runs side by side read as two
WAIT = "#b05a00"
IDLE = "#9a9a9a"
IDLE_PATTERN = "novapod-idle"

# XML 1.0 has no way to write these; a name can never hold them, a hand-built plan might.
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def text(value: object) -> str:
    """Character data, escaped (`&`, `<`, `>`), characters XML cannot hold dropped."""
    return escape(_NOT_XML.sub("", str(value)))


def attr(value: object) -> str:
    """An attribute value in double quotes, escaped."""
    cleaned = _NOT_XML.sub("", str(value))
    return '"' + escape(cleaned, {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}) + '"'


def num(value: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros (the same bytes every run)."""
    rounded = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if rounded in ("", "-0") else rounded


def render_svg(plan: CapacityPlan, environment: str) -> str:
    """Every plan with jobs to schedule, one under the other, as one SVG document."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _svg(plan_charts(plan), environment)


def render_html(plan: CapacityPlan, environment: str) -> str:
    """The same picture in a minimal HTML page (the SVG inline)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        "<head>\n"
        '<meta charset="utf-8">\n'
        f"<title>{text(_title(environment))}</title>\n"
        "</head>\n"
        "<body>\n"
        f"{_svg(plan_charts(plan), environment)}"
        "</body>\n"
        "</html>\n"
    )


def _title(environment: str) -> str:
    return f"Training-plan schedules of {environment}"


class _Layout:
    """Where things go: the label columns' width, and hours to x."""

    def __init__(self, charts: Sequence[PlanChart]) -> None:
        longest = max((len(bar.job) for c in charts for bar in c.jobs), default=0)
        self.name_width = math.ceil(max(longest, len("idle instances")) * CHAR_WIDTH)
        self.chart_left = MARGIN + self.name_width + LABEL_GAP + COUNT_WIDTH + LABEL_GAP
        self.width = self.chart_left + CHART_WIDTH + MARGIN

    @staticmethod
    def height(chart: PlanChart) -> int:
        return HEADER + AXIS + ROW * (len(chart.jobs) + 1)

    def x(self, chart: PlanChart, hour: float) -> float:
        return self.chart_left + hour * CHART_WIDTH / chart.hours


def _svg(charts: Sequence[PlanChart], environment: str) -> str:
    layout = _Layout(charts)
    blocks: list[str] = []
    top = MARGIN
    for chart in charts:
        blocks.append(_plan(layout, chart, top))
        top += layout.height(chart) + GAP
    if not charts:
        blocks.append(
            f'<text x="{MARGIN}" y="{MARGIN + FONT_SIZE}" fill="{INK}">'
            "No training plan has jobs to schedule.</text>\n"
        )
        top += FONT_SIZE + GAP
    height = top - GAP + MARGIN + FONT_SIZE + 8
    legend = _legend(layout, height - MARGIN - 4) if charts else ""
    plans = "; ".join(f"{c.plan}: {size_text(c)}" for c in charts) or "no plan has jobs"
    description = (
        f"{len(charts)} training plan{'s' if len(charts) != 1 else ''} ({plans}). Each job's "
        "runs are bars in hours from the plan's start; dashed lines are waits; hatched, the "
        "reserved instances no job uses."
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width}" height="{height}" '
        f'viewBox="0 0 {layout.width} {height}" role="img" '
        'aria-labelledby="novapod-plan-title novapod-plan-desc" '
        f'font-family="sans-serif" font-size="{FONT_SIZE}">\n'
        f'<title id="novapod-plan-title">{text(_title(environment))}</title>\n'
        f'<desc id="novapod-plan-desc">{text(description)}</desc>\n'
        "<defs>\n"
        f'<pattern id="{IDLE_PATTERN}" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)">'
        f'<rect width="6" height="6" fill="#ffffff"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{IDLE}" stroke-width="3"/></pattern>\n'
        "</defs>\n"
        f'<rect width="{layout.width}" height="{height}" fill="#ffffff"/>\n'
        + "".join(blocks)
        + legend
        + "</svg>\n"
    )


def _plan(layout: _Layout, chart: PlanChart, top: float) -> str:
    rows_top = top + HEADER + AXIS
    bottom = rows_top + ROW * (len(chart.jobs) + 1)
    left, right = layout.x(chart, 0), layout.x(chart, chart.hours)
    out = [
        f'<g class="plan" data-plan={attr(chart.plan)} data-hours="{chart.hours}">\n',
        f"<title>{text(f'Training plan {chart.plan}: {size_text(chart)}; ')}"
        f"{text(window_text(chart.start_after, chart.end_before))}</title>\n",
        f'<text class="plan-name" x="{MARGIN}" y="{num(top + 14)}" font-size="14" '
        f'font-weight="bold" fill="{INK}">{text(chart.plan)}: {text(size_text(chart))}</text>\n',
        f'<text class="plan-window" x="{MARGIN}" y="{num(top + 32)}" fill="{MUTED}">'
        f"{text(window_text(chart.start_after, chart.end_before))}; day 1 is the plan's first "
        "day</text>\n",
        f'<rect class="window" x="{num(left)}" y="{num(rows_top)}" '
        f'width="{num(right - left)}" height="{num(bottom - rows_top)}" fill="{FRAME}" '
        f'stroke="{MUTED}" stroke-width="1"><title>'
        f"{text(f'{chart.plan} holds {chart.instance_count} x {chart.instance_type} for ')}"
        f"{text(f'hours 0-{chart.hours} ({when(0)} to {when(chart.hours)})')}</title></rect>\n",
    ]
    if chart.hours > chart.bought_hours:
        start = layout.x(chart, chart.bought_hours)
        out.append(
            f'<rect class="extension" x="{num(start)}" y="{num(rows_top)}" '
            f'width="{num(right - start)}" height="{num(bottom - rows_top)}" '
            f'fill="{EXTENSION}"><title>'
            f"{text(f'extension: hours {chart.bought_hours}-{chart.hours}')}</title></rect>\n"
        )
    out += _axis(layout, chart, top + HEADER, bottom)
    y = rows_top
    rows = {bar.job: rows_top + i * ROW for i, bar in enumerate(chart.jobs)}
    for bar in chart.jobs:
        out += _job(layout, chart, bar, y, rows)
        y += ROW
    out += _idle(layout, chart, y)
    out.append("</g>\n")
    return "".join(out)


def _axis(layout: _Layout, chart: PlanChart, top: float, bottom: float) -> list[str]:
    days = chart.hours // HOURS_PER_DAY
    per_day = CHART_WIDTH / max(days, 1)
    step = next(
        (s for s in DAY_LABEL_STEPS if s * per_day >= MIN_DAY_LABEL_SPACING), DAY_LABEL_STEPS[-1]
    )
    name_x = MARGIN
    count_x = MARGIN + layout.name_width + LABEL_GAP + COUNT_WIDTH
    out = [
        f'<text x="{name_x}" y="{num(top + 13)}" fill="{MUTED}">job</text>\n',
        f'<text x="{count_x}" y="{num(top + 13)}" fill="{MUTED}" text-anchor="end">count</text>\n',
    ]
    for day in range(days + 1):
        x = layout.x(chart, day * HOURS_PER_DAY)
        if per_day >= 4 or day % step == 0:
            out.append(
                f'<line class="day" x1="{num(x)}" y1="{num(top + AXIS)}" x2="{num(x)}" '
                f'y2="{num(bottom)}" stroke="{GRID}" stroke-width="1"/>\n'
            )
        if day < days and day % step == 0:
            out.append(
                f'<text class="day-label" x="{num(x + 2)}" y="{num(top + 13)}" '
                f'fill="{MUTED}">day {day + 1}</text>\n'
            )
    return out


def _job(
    layout: _Layout, chart: PlanChart, bar: JobBar, top: float, rows: dict[str, float]
) -> list[str]:
    middle = top + ROW / 2
    bar_top = middle - BAR / 2
    runs = bar.run_spans()
    each = f"{hours_text(bar.hours_per_run)} h"
    summary = (
        f"{bar.job}: {bar.runs} run{'s' if bar.runs != 1 else ''} of {each} on "
        f"{bar.instance_count} of {chart.instance_count} instances, hours "
        f"{bar.start_hour}-{bar.end_hour} ({when(bar.start_hour)} to {when(bar.end_hour)})"
    )
    if bar.after:
        summary += f", after {', '.join(bar.after)}"
    out = [
        f'<g class="job" data-job={attr(bar.job)} data-instances="{bar.instance_count}">\n',
        f"<title>{text(summary)}</title>\n",
        f'<text class="job-name" x="{MARGIN}" y="{num(middle + 4)}" fill="{INK}">'
        f"{text(bar.job)}</text>\n",
        f'<text class="job-count" x="{MARGIN + layout.name_width + LABEL_GAP + COUNT_WIDTH}" '
        f'y="{num(middle + 4)}" fill="{INK}" text-anchor="end">{bar.instance_count}</text>\n',
    ]
    for wait in chart.waits(bar):
        why = f"for {', '.join(wait.on)} to finish" if wait.on else "for free instances"
        out.append(
            f'<line class="wait" data-on={attr(" ".join(wait.on))} '
            f'x1="{num(layout.x(chart, wait.start_hour))}" y1="{num(middle)}" '
            f'x2="{num(layout.x(chart, wait.end_hour))}" y2="{num(middle)}" stroke="{WAIT}" '
            'stroke-width="1.5" stroke-dasharray="4 3"><title>'
            f"{text(f'{bar.job} waits {why}: hours {wait.start_hour}-{wait.end_hour}')}"
            "</title></line>\n"
        )
    for before in bar.after:
        if before not in rows:
            continue
        ended = next(b.end_hour for b in chart.jobs if b.job == before)
        x = num(layout.x(chart, ended))
        # From the edge of its bar that faces this row.
        edge = BAR / 2 if rows[before] < top else -BAR / 2
        out.append(
            f'<path class="dependency" data-after={attr(before)} '
            f'd="M{x},{num(rows[before] + ROW / 2 + edge)} V{num(middle)}" '
            f'stroke="{WAIT}" stroke-width="1" fill="none"><title>'
            f"{text(f'{bar.job} runs after {before} (ends at hour {ended})')}</title></path>\n"
        )
    start, end = layout.x(chart, bar.start_hour), layout.x(chart, bar.end_hour)
    out.append(
        f'<rect class="slot" x="{num(start)}" y="{num(bar_top)}" width="{num(end - start)}" '
        f'height="{BAR}" fill="{SLOT}"><title>'
        f"{text(f'{bar.job} holds {bar.instance_count} instances, hours ')}"
        f"{bar.start_hour}-{bar.end_hour}</title></rect>\n"
    )
    for run in runs:
        x0, x1 = layout.x(chart, run.start_hour), layout.x(chart, run.end_hour)
        label = (
            f"{bar.job} run {run.number} of {bar.runs}: hours {hours_text(run.start_hour)}-"
            f"{hours_text(run.end_hour)} ({when(run.start_hour)} to {when(run.end_hour)}), "
            f"{bar.instance_count} instances"
        )
        out.append(
            f'<rect class="run" data-run="{run.number}" x="{num(x0)}" y="{num(bar_top)}" '
            f'width="{num(x1 - x0)}" height="{BAR}" fill="{RUN_FILLS[(run.number - 1) % 2]}" '
            f'stroke="#ffffff" stroke-width="0.5"><title>{text(label)}</title></rect>\n'
        )
        if x1 - x0 >= CHAR_WIDTH * len(str(run.number)) + 4:
            out.append(
                f'<text class="run-number" x="{num((x0 + x1) / 2)}" y="{num(middle + 4)}" '
                f'fill="#ffffff" font-size="11" text-anchor="middle" aria-hidden="true">'
                f"{run.number}</text>\n"
            )
    out.append("</g>\n")
    return out


def _idle(layout: _Layout, chart: PlanChart, top: float) -> list[str]:
    middle = top + ROW / 2
    out = [
        '<g class="idle-instances">\n',
        f"<title>{text(f'Reserved instances of {chart.plan} that no job uses')}</title>\n",
        f'<text x="{MARGIN}" y="{num(middle + 4)}" fill="{MUTED}">idle instances</text>\n',
    ]
    for idle in chart.idle():
        x0, x1 = layout.x(chart, idle.start_hour), layout.x(chart, idle.end_hour)
        tall = max(2.0, BAR * idle.instances / chart.instance_count)
        out.append(
            f'<rect class="idle" data-instances="{idle.instances}" x="{num(x0)}" '
            f'y="{num(middle + BAR / 2 - tall)}" width="{num(x1 - x0)}" height="{num(tall)}" '
            f'fill="url(#{IDLE_PATTERN})" stroke="{IDLE}" stroke-width="0.5"><title>'
            f"{text(f'hours {idle.start_hour}-{idle.end_hour}: {idle.instances} of ')}"
            f"{text(f'{chart.instance_count} instances idle')}</title></rect>\n"
        )
    out.append("</g>\n")
    return out


def _legend(layout: _Layout, y: float) -> str:
    x = layout.chart_left
    items = [
        f'<rect x="{num(x)}" y="{num(y - 9)}" width="18" height="10" fill="{RUN_FILLS[0]}"/>',
        f'<text x="{num(x + 24)}" y="{num(y)}" fill="{MUTED}">run (its number)</text>',
        f'<line x1="{num(x + 140)}" y1="{num(y - 4)}" x2="{num(x + 158)}" y2="{num(y - 4)}" '
        f'stroke="{WAIT}" stroke-width="1.5" stroke-dasharray="4 3"/>',
        f'<text x="{num(x + 164)}" y="{num(y)}" fill="{MUTED}">waits</text>',
        f'<rect x="{num(x + 220)}" y="{num(y - 9)}" width="18" height="10" '
        f'fill="url(#{IDLE_PATTERN})" stroke="{IDLE}" stroke-width="0.5"/>',
        f'<text x="{num(x + 244)}" y="{num(y)}" fill="{MUTED}">idle reserved instances</text>',
    ]
    return '<g class="legend" aria-hidden="true">\n' + "\n".join(items) + "\n</g>\n"
