"""How much of a plan's reserved capacity was in use, for `novapod status`: the
instance-hours reserved so far (the plan's total instances times the hours since its
start, to its end at most: no metrics needed) and, of an Active plan, what the
environment's scheduled check sampled of them. Pure: a plan's DescribeTrainingPlan, the
samples `collect` read and a time in, the plan row's `utilization` out.

Each run of the check puts, for each plan, the plan's InUseInstanceCount times the
seconds that sample stands for (`InUseInstanceSeconds`: the schedule's `every_minutes`
when the run was made, which the schedule passes the check) and, while the plan is
Active, those seconds (`SampledSeconds`; novapod/constructs/monitor/handler/decisions.py).
The share in use is the first's sum over the plan's total instances times the second's
sum, `sum(InUseInstanceSeconds) / (total x sum(SampledSeconds))`: no interval is read
from the config, so a plan sampled every 5 minutes, then every 15 after
`monitoring.every_minutes` changed, counts each sample for the interval it stood for,
and a sample put twice (EventBridge Scheduler invokes at least once, and botocore retries
a PutMetricData whose answer was lost) adds to both sums alike, so it leaves the share
as it is. The hours sampled are the second's sum over 3600, at most the hours since the
start; the instance-hours in use are the share of the instance-hours reserved in those
hours (the first's sum over 3600, unless duplicates took the hours sampled past the
window). The share is of the hours sampled, so a check that started late or was off for
a while makes the share no less true; how much of the window the samples cover says how
far it can be trusted. The window can be short of the samples by up to an interval at
each end (the first sample lands up to an interval after the start, the last up to one
before now), each end's own interval: the longest sample of the first and of the last
period sampled (the Maximum of SampledSeconds per period), so a day sampled every 60
minutes does not hide a later gap at 5 minutes. A gap that duplicates fill is not seen
(the sums cannot tell a sample from its copy). Samples put
before the check weighted them (only `InUseInstances`) are not read: the hours they
stood for count as not sampled. No samples, or the monitor stack off in the config,
give no figure: null, and a note that says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from novapod.constructs.handler_core.values import as_utc, iso
from novapod.operate.status.collect import COMPLETE, DENIED, UsageFacts


def _round(value: float, places: int = 1) -> float:
    return round(value, places) + 0.0  # + 0.0: never -0.0


def utilization(
    plan: Mapping[str, Any] | None,
    usage: UsageFacts | None,
    now: datetime,
    monitored: bool,
    deploy_monitor: str,
) -> dict[str, Any]:
    """The plan row's `utilization` (docs/reference/status.schema.json); `monitored`:
    the config has the monitor stack (`monitoring.enabled`)."""
    plan = plan or {}
    row: dict[str, Any] = {
        "reserved_instance_hours": None,
        "elapsed_hours": None,
        "sampled_hours": None,
        "coverage": None,
        "in_use_instance_hours": None,
        "in_use_share": None,
        "first_sample": None,
        "period_seconds": None,
        "note": None,
    }
    start, end = as_utc(plan.get("StartTime")), as_utc(plan.get("EndTime"))
    total = plan.get("TotalInstanceCount")
    if start is None or not isinstance(total, int) or isinstance(total, bool):
        return row
    until = max(start, min(now, end) if end is not None else now)
    elapsed = (until - start).total_seconds() / 3600
    row["reserved_instance_hours"] = _round(total * elapsed)
    row["elapsed_hours"] = _round(elapsed)
    if plan.get("Status") != "Active":
        return row
    if not monitored:
        row["note"] = (
            "no samples of its use: monitoring.enabled is false, so the scheduled check "
            "is not deployed"
        )
        return row
    if usage is None:
        return row
    if usage.status == DENIED:
        row["note"] = (
            "the scheduled check's samples were not read: you may not call "
            "cloudwatch:GetMetricData (the StatusPolicy grants it: deploy the stack that "
            "holds the policy again, or attach it)"
        )
        return row
    row["period_seconds"] = usage.period
    if usage.status != COMPLETE:
        row["note"] = (
            f"CloudWatch answered {usage.status} for the scheduled check's samples; "
            "run status again"
        )
        return row
    sampled_seconds = sum(value for _, value in usage.sampled_seconds)
    if not sampled_seconds:
        row["note"] = (
            "no samples of the scheduled check since the plan started: is the monitor "
            f"stack deployed ({deploy_monitor}) and its function running?"
        )
        return row
    in_use_seconds = sum(value for _, value in usage.in_use_seconds)
    share = min(1.0, in_use_seconds / (total * sampled_seconds)) if total else None
    sampled = min(sampled_seconds / 3600, elapsed)
    first = next(when for when, value in usage.sampled_seconds if value)
    row.update(
        sampled_hours=_round(sampled),
        coverage=_round(sampled / elapsed, 4) if elapsed else None,
        in_use_instance_hours=_round(min(in_use_seconds / 3600, (share or 0.0) * total * sampled)),
        in_use_share=_round(share, 4) if share is not None else None,
        first_sample=iso(first),
    )
    if elapsed - sampled >= _edge_intervals(usage) / 3600:
        row["note"] = (
            f"the check's samples cover {_round(sampled):g} of the {_round(elapsed):g} hours "
            f"since the plan started (sampled from {iso(first)}): the share is of those hours"
        )
    return row


def _edge_intervals(usage: UsageFacts) -> float:
    """How far short of the window the samples may fall with no gap, in seconds: the
    interval of the first period sampled (the first sample lands up to one after the
    start) and of the last (the last up to one before now), each the longest sample of
    its period."""
    longest = [value for _, value in sorted(usage.longest) if value]
    return longest[0] + longest[-1] if longest else 0.0
