"""Jobs that move: between HyperPod and training jobs, between plans, on or off demand,
to another restricted group, or resized, read from the two assemblies' metadata.

Where each job runs is what that commit's planner made of that commit's config, recorded
as construct metadata (novapod/capacity/placements.py): a job on a plan is a bar of the
plan's chart in the capacity stack, an on-demand job a record of the nova-base stack.
The review reads both from every stack of each assembly, so a job that moves from a plan
(capacity stack) to on demand (nova-base stack) is one entry. Jobs are paired within an
environment, known by its stack-name prefix (`novapod-<name>`, with its Stage path:
stacks are named `novapod-<name>-<kind>`, novapod.add_environment), so two environments
in one assembly never pair their jobs.

A job on one side only (added or removed) is not a move and is left out: the schedules
say what its plan holds. A base recorded before CHART_VERSION 2 has no platform or
group: its jobs' platform is "unknown", and only what it recorded (plan or on demand,
instance type and count) is compared, so such a base shows a move only where one of those
changed. A base recorded before on-demand jobs were (no ON_DEMAND_METADATA_TYPE) has no
on-demand jobs: a job it ran on demand counts as added.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from novapod.capacity.chart import METADATA_TYPE, chart_from_json
from novapod.capacity.placements import (
    ON_DEMAND_METADATA_TYPE,
    Placement,
    chart_placements,
    on_demand_from_json,
)
from novapod.config.stacks import STACK_KINDS
from novapod.review.assembly import StackArtifact

# What an entry's `changed` names, in this order; `platform` and `instance_group` only
# when both sides recorded them.
FIELDS = ("platform", "plan", "on_demand", "instance_group", "instance_type", "instance_count")
_RECORDED_BY_EVERY_VERSION = ("plan", "on_demand", "instance_type", "instance_count")
# Longest first: `-nova-base` before `-nova`... never shadowed by a shorter kind.
_SUFFIXES = sorted((f"-{kind}" for kind in STACK_KINDS), key=len, reverse=True)


def environment_of(stack: str) -> str:
    """The stack-name prefix of a stack's environment: `Prod/novapod-dev` of
    `Prod/novapod-dev-capacity`; the whole name for a stack not named by kind."""
    for suffix in _SUFFIXES:
        if stack.endswith(suffix) and len(stack) > len(suffix):
            return stack.removesuffix(suffix)
    return stack


def placements(stacks: Mapping[str, StackArtifact]) -> dict[tuple[str, str], Placement]:
    """(environment, job) -> where it runs, for every job an assembly recorded."""
    found: dict[tuple[str, str], Placement] = {}
    for name in sorted(stacks):
        stack, environment = stacks[name], environment_of(name)
        for _, data in stack.metadata(METADATA_TYPE):
            chart = chart_from_json(data)
            if chart is not None:
                for job, placement in chart_placements(chart).items():
                    found[environment, job] = placement
        for _, data in stack.metadata(ON_DEMAND_METADATA_TYPE):
            record = on_demand_from_json(data)
            if record is not None:
                found[environment, record[0]] = record[1]
    return found


def _changed(before: Placement, after: Placement) -> list[str]:
    old, new = before.as_json(), after.as_json()
    compared = FIELDS if before.known and after.known else _RECORDED_BY_EVERY_VERSION
    return [field for field in FIELDS if field in compared and old[field] != new[field]]


def job_moves(
    base: Mapping[str, StackArtifact], head: Mapping[str, StackArtifact]
) -> list[dict[str, Any]]:
    """One entry per job of both assemblies whose placement differs, by environment and
    job: environment, job, changed (the fields that differ, FIELDS' order), before and
    after (each: platform, plan, on_demand, instance_group, instance_type,
    instance_count)."""
    old, new = placements(base), placements(head)
    entries = []
    for key in sorted(set(old) & set(new)):
        changed = _changed(old[key], new[key])
        if changed:
            entries.append(
                {
                    "environment": key[0],
                    "job": key[1],
                    "changed": changed,
                    "before": old[key].as_json(),
                    "after": new[key].as_json(),
                }
            )
    return entries
