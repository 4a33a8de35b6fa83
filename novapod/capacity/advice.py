"""What the planner says besides the plan: notes on the shapes it chose and on orders
across plans, and split advice (several plans that would reserve less than one). Advice
only: it never changes the config."""

from __future__ import annotations

import math
from collections.abc import Mapping

from novapod.capacity import packing
from novapod.capacity.models import (
    CapacityPlan,
    JobPlan,
    PlanRequest,
    PlanSettings,
    SplitAdvice,
    SplitPart,
)
from novapod.capacity.requirements import sizing_view
from novapod.capacity.units import (
    HOURS_PER_DAY,
    PLAN_INSTANCE_COUNTS,
    PLAN_MAX_DAYS,
    hours_text,
    sellable_instance_count,
)
from novapod.capacity.windows import days_in_window


def plan_notes(
    jobs: list[JobPlan],
    requests: list[PlanRequest],
    groups: Mapping[str, list[JobPlan]],
    settings: Mapping[str, PlanSettings],
) -> list[str]:
    """The notes of a capacity plan: each job's documented caveat, counts rounded up to
    one plans sell or raised to run jobs side by side, searches that stopped at their
    limit, and jobs that wait for a job on another plan."""
    catalog = sizing_view()
    notes: list[str] = []
    for model, technique in dict.fromkeys((job.model, job.technique) for job in jobs):
        note = catalog.requirements[(model, technique)].note
        if note:
            notes.append(f"{catalog.display_names[model]} {technique}: {note}")
    plan_of = {job.name: name for name, members in groups.items() for job in members}
    for request in requests:
        if request.name not in groups:
            continue  # standalone plan: its count was given, not derived
        members = groups[request.name]
        largest = max(job.instance_count for job in members)
        explicit = settings.get(request.name)
        rounded = sellable_instance_count(largest)
        if explicit is None or explicit.instance_count is None:
            if largest < request.instance_count == rounded:
                notes.append(
                    f"training plan {request.name}: its largest job needs {largest} "
                    f"instances, rounded up to {request.instance_count}, the next count "
                    "plans sell"
                )
            elif request.instance_count > rounded:
                notes.append(
                    f"training plan {request.name}: {request.instance_count} instances, more "
                    f"than the {rounded} its largest job needs, run its jobs side by side in "
                    f"{request.duration_hours // HOURS_PER_DAY} days: fewer instance-hours "
                    "than fewer instances for longer"
                )
        bound = request.lower_bound_instance_hours
        if bound is not None and bound < request.reserved_instance_hours:
            notes.append(
                f"training plan {request.name}: the search stopped at its limit; no shape "
                f"reserves fewer than {hours_text(bound)} instance-hours, this one reserves "
                f"{hours_text(request.reserved_instance_hours)}"
            )
        for job in members:
            for before in job.after:
                other = plan_of.get(before)
                if other == request.name:
                    continue
                on = f"training plan {other}" if other else "on-demand capacity"
                notes.append(
                    f"job {job.name} (training plan {request.name}) waits for {before} "
                    f"({on}): plans are scheduled apart, so start {request.name} after "
                    f"{before} ends (start_after)"
                )
    return notes


def split_advice(plan: CapacityPlan) -> list[SplitAdvice]:
    """For each plan whose shape the planner chose: a split of its jobs into two or more
    plans of sellable shapes that reserves less, if one is found (packing.split_plan).
    Advice only: the config is never changed."""
    jobs = {job.name: job for job in plan.jobs}
    advice = []
    for request in plan.training_plans:
        tasks = plan.packed.get(request.name)
        if not tasks:
            continue
        window = PlanSettings(
            request.name, start_after=request.start_after, end_before=request.end_before
        )
        max_days = min(PLAN_MAX_DAYS, days_in_window(f"training plan {request.name}", window))
        found = packing.split_plan(tasks, PLAN_INSTANCE_COUNTS, max_days=max_days)
        if found is None:
            continue
        parts = tuple(
            SplitPart(
                instance_count=part.instance_count,
                duration_hours=part.duration_hours,
                jobs=tuple(slot.job for slot in part.slots),
                required_instance_hours=math.fsum(
                    jobs[slot.job].instance_hours for slot in part.slots
                ),
            )
            for part in found
        )
        advice.append(
            SplitAdvice(
                request.name,
                request.required_instance_hours,
                request.reserved_instance_hours,
                parts,
            )
        )
    return advice
