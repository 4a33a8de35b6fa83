"""The capacity plan as text (`novapod plan`): the table of jobs, plans, split advice
and on-demand jobs, and each plan's schedule as a Gantt chart."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from novapod.capacity import packing
from novapod.capacity.models import CapacityPlan, PlanRequest, SplitAdvice, totals
from novapod.capacity.units import HOURS_PER_DAY, days_text, hours_text


def render_table(
    plan: CapacityPlan,
    plan_names: Mapping[str, str] | None = None,
    advice: Sequence[SplitAdvice] | None = None,
) -> str:
    """The plan as plain text: jobs, training plans with their required and reserved
    instance-hours (and the total), split advice, on-demand jobs, notes.

    With `plan_names`, it lists the name each plan is bought under, to paste into
    `purchase.approve`; with `advice` (split_advice), what a split would save.
    """
    lines = ["Jobs"]
    lines += _columns(
        ("name", "model", "technique", "instance type", "count", "hours/run", "runs", "inst-h"),
        [
            (
                job.name,
                job.model,
                job.technique,
                job.instance_type,
                str(job.instance_count),
                hours_text(job.hours_per_run),
                str(job.runs),
                hours_text(job.instance_hours),
            )
            for job in plan.jobs
        ],
        right=range(4, 8),
    )
    lines += ["", "Training plans"]
    if plan.training_plans:
        required, reserved, waste = totals(plan)
        lines += _columns(
            (
                "name",
                "instance type",
                "count",
                "hours",
                "start after",
                "end before",
                "required",
                "reserved",
                "waste",
                "ratio",
                "jobs",
            ),
            [
                *(
                    (
                        request.name,
                        request.instance_type,
                        str(request.instance_count),
                        str(request.duration_hours),
                        request.start_after or "-",
                        request.end_before or "-",
                        hours_text(request.required_instance_hours),
                        hours_text(request.reserved_instance_hours),
                        hours_text(request.waste_instance_hours),
                        _ratio(request.reserved_instance_hours, request.required_instance_hours),
                        ", ".join(request.jobs),
                    )
                    for request in plan.training_plans
                ),
                (
                    "total",
                    "",
                    "",
                    "",
                    "",
                    "",
                    hours_text(required),
                    hours_text(reserved),
                    hours_text(waste),
                    _ratio(reserved, required),
                    "",
                ),
            ],
            right=(2, 3, 6, 7, 8, 9),
        )
    else:
        lines.append("(none)")
    # Only where a split is possible: a plan with two or more groups of linked jobs.
    if advice is not None and any(
        len(packing.linked_groups(tasks)) > 1 for tasks in plan.packed.values()
    ):
        lines += ["", "Split advice (never applied: move jobs with plan: or instance_group)"]
        lines += [line for item in advice for line in _advice_lines(item)] or [
            "(none: no split into plans that sell reserves fewer instance-hours)"
        ]
    # Where each plan's capacity goes, when any is for more than HyperPod (a plan is
    # specific to its target resource: a training-job plan serves only training jobs).
    if any(r.target_resources != ("hyperpod-cluster",) for r in plan.training_plans):
        lines += ["", "Targets (what may use each plan's capacity)"]
        lines += [
            f"{request.name}: {', '.join(request.target_resources)}"
            for request in plan.training_plans
        ]
    if plan_names:
        lines += ["", "Names the plans are bought under (purchase.approve must say the same)"]
        lines += [
            f"{request.name}: {plan_names[request.name]}"
            for request in plan.training_plans
            if request.name in plan_names
        ]
    lines += ["", "On demand (instance types training plans do not sell)"]
    if plan.on_demand:
        lines += [
            f"{job.name}: {job.instance_count} x {job.instance_type}, "
            f"{hours_text(job.instance_hours)} instance-hours"
            + (", a training job on demand" if job.target == "training-job" else "")
            for job in plan.on_demand
        ]
    else:
        lines.append("(none)")
    if plan.notes:
        lines += ["", "Notes"]
        lines += [f"- {note}" for note in plan.notes]
    return "\n".join(lines) + "\n"


def _ratio(reserved: float, required: float) -> str:
    """Reserved over required instance-hours: 1.23x; '-' for a plan with no jobs."""
    return f"{reserved / required:.2f}x" if required > 0 else "-"


def _advice_lines(advice: SplitAdvice) -> list[str]:
    lines = [
        f"- {advice.plan}: {len(advice.parts)} plans would reserve "
        f"{hours_text(advice.split_reserved_instance_hours)} instance-hours instead of "
        f"{hours_text(advice.reserved_instance_hours)}, "
        f"{hours_text(advice.saved_instance_hours)} fewer "
        f"({_ratio(advice.split_reserved_instance_hours, advice.required_instance_hours)} "
        f"instead of {_ratio(advice.reserved_instance_hours, advice.required_instance_hours)} "
        f"the {hours_text(advice.required_instance_hours)} required):"
    ]
    lines += [
        f"  {i}. {part.instance_count} x {part.duration_hours} h, "
        f"{hours_text(part.reserved_instance_hours)} reserved: {', '.join(part.jobs)}"
        for i, part in enumerate(advice.parts, start=1)
    ]
    return lines


# Text bars: at most this many cells per plan, each a whole number of hours.
_GANTT_CELLS = 72
_GANTT_HOURS_PER_CELL = (1, 2, 3, 4, 6, 8, 12, 24)


def render_gantt(plan: CapacityPlan) -> str:
    """Each training plan's schedule as text: one bar per job over the plan's days.

    A cell is a fixed number of hours (the header says how many); `#` where the job
    holds its instances for any part of the cell, `.` where it does not; `|` between days.
    """
    blocks = []
    for request in plan.training_plans:
        if not request.schedule:
            continue
        blocks.append("\n".join(_gantt(request)))
    if not blocks:
        return "No training plan has jobs to schedule.\n"
    return "\n\n".join(blocks) + "\n"


def _gantt(request: PlanRequest) -> list[str]:
    hours = request.duration_hours
    days = hours // HOURS_PER_DAY
    per_cell = next(
        (h for h in _GANTT_HOURS_PER_CELL if hours // h <= _GANTT_CELLS),
        HOURS_PER_DAY * math.ceil(days / _GANTT_CELLS),
    )
    cells = math.ceil(hours / per_cell)
    # `|` between days when a day has several cells; else the bar would be half bars.
    per_day = HOURS_PER_DAY // per_cell if per_cell < HOURS_PER_DAY else 0

    def bar(marks: Sequence[str]) -> str:
        if not per_day:
            return "".join(marks)
        return "|".join("".join(marks[d : d + per_day]) for d in range(0, cells, per_day))

    names = [slot.job for slot in request.schedule]
    name_width = max(len("job"), *map(len, names))
    spans = [f"{slot.start_hour}-{slot.end_hour}" for slot in request.schedule]
    span_width = max(len("hours"), *map(len, spans))
    count_width = max(len("count"), len(str(request.instance_count)))
    cell_days = per_cell // HOURS_PER_DAY
    unit = f"{per_cell} h" if per_cell < HOURS_PER_DAY else days_text(cell_days)
    lines = [
        f"{request.name}: {request.instance_count} x {request.instance_type} for {hours} h "
        f"({days_text(days)}); one cell = {unit}"
    ]
    # Day numbers where a day starts, as long as they do not run into each other.
    axis = [" "] * cells
    free = 0
    for c in range(cells):
        if c >= free and (c * per_cell) % HOURS_PER_DAY == 0:
            label = str(c * per_cell // HOURS_PER_DAY + 1)
            if per_day and per_day < len(label):
                continue  # would cross into the next day's cells
            axis[c : c + len(label)] = list(label)[: cells - c]
            free = c + len(label) + 1
    days_axis = bar(axis)
    head = f"{'job'.ljust(name_width)}  {'count'.rjust(count_width)}  {'hours'.rjust(span_width)}"
    lines.append(f"{head}  |{days_axis}|  (day)")
    for slot, span in zip(request.schedule, spans, strict=True):
        marks = [
            "#" if slot.start_hour < (c + 1) * per_cell and slot.end_hour > c * per_cell else "."
            for c in range(cells)
        ]
        lines.append(
            f"{slot.job.ljust(name_width)}  {str(slot.instance_count).rjust(count_width)}  "
            f"{span.rjust(span_width)}  |{bar(marks)}|"
        )
    return lines


def _columns(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Iterable[int]
) -> list[str]:
    right_aligned = set(right)
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.rjust(width) if i in right_aligned else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    return [line(header), *(line(row) for row in rows)]
