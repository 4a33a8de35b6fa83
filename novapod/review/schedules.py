"""The training-plan schedules a change adds or moves, read from the two assemblies.

The capacity stack records each plan's schedule as construct metadata
(`novapod.capacity.chart.METADATA_TYPE`): what the planner of that commit made of that
commit's config, beside its templates and never in them, so a schedule shows in the review
without the config file, and a schedule that moves while no template does still shows. A
plan is known by its stack and its name in the config (a new purchase name is the same
plan, resized). A base synthesized before schedules were recorded has none: every plan
of the head then shows as new. A base recorded before CHART_VERSION 2 has no target or
placement of its jobs: its schedule is compared with the head's without them, so only a
schedule that moved shows (its target then reads as not recorded).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from novapod.capacity.chart import METADATA_TYPE, PlanChart, chart_from_json, chart_json
from novapod.review.assembly import StackArtifact


def _charts(stack: StackArtifact | None) -> dict[str, PlanChart]:
    if stack is None:
        return {}
    found = {}
    for _, data in stack.metadata(METADATA_TYPE):
        chart = chart_from_json(data)
        if chart is not None:
            found[chart.plan] = chart
    return found


def _as_recorded_by(base: PlanChart, head: PlanChart) -> PlanChart:
    """The head's chart as the base's version recorded it: without the target and the
    jobs' placement when the base has none (chart_from_json reads version 1 so)."""
    if base.target is not None:
        return head
    bars = tuple(replace(bar, runs_on=None, instance_group=None) for bar in head.jobs)
    return replace(head, target=None, jobs=bars)


def schedule_changes(
    name: str, base: StackArtifact | None, head: StackArtifact | None
) -> list[dict[str, Any]]:
    """One entry per plan of the head whose schedule is new or differs from the base's,
    by plan name: stack, plan, change (added | changed), before (None when added), after
    (each as `chart_json` writes it). A plan the head no longer has is left out: the
    purchases section says what its removal does."""
    old, new = _charts(base), _charts(head)
    entries = []
    for plan in sorted(new):
        before = chart_json(old[plan]) if plan in old else None
        if plan in old and before == chart_json(_as_recorded_by(old[plan], new[plan])):
            continue
        after = chart_json(new[plan])
        entries.append(
            {
                "stack": name,
                "plan": plan,
                "change": "added" if before is None else "changed",
                "before": before,
                "after": after,
            }
        )
    return entries
