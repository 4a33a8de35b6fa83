"""`novapod status` output: text for a terminal, JSON for scripts (the contract).

Text: a header line, then what needs attention (most urgent first, each with its next
command), then a table per section (plans, their reserved instance-hours and the share in
use, instance groups and the nodes launched since the stack last updated the cluster, the
EKS cluster and its bootstrap, jobs and their runs, drift, purchases to reconcile), rows
that need attention first. JSON: `Report.json()`, keys sorted, as
docs/reference/status.schema.json describes it; `--watch` prints one document per line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from novapod.operate.status.assess import Report


def to_json(report: Report, *, compact: bool = False) -> str:
    if compact:
        return json.dumps(report.json(), sort_keys=True, separators=(",", ":"))
    return json.dumps(report.json(), indent=2, sort_keys=True)


def table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns two spaces apart, trailing spaces removed."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def _count(value: Any) -> str:
    return "-" if value is None else str(value)


def _when(text: str | None) -> str:
    """2030-01-02T12:00:00Z -> 2030-01-02 12:00 (the header says UTC)."""
    return text.replace("T", " ")[:16] if text else "-"


def _span(hours: int | None, *, past: bool = False) -> str:
    if hours is None:
        return "-"
    days, rest = divmod(abs(hours), 24)
    text = f"{days}d {rest}h" if days else f"{rest}h"
    return f"{text} ago" if past else f"in {text}"


# The fee of a plan not paid for (yet): Pending until the payment succeeds, Failed when
# the purchase failed (docs.aws.amazon.com/sagemaker/latest/dg/training-plan-details-
# using-api-cli-sdk.html).
UNPAID = {"Pending": "due", "Failed": "not paid"}


def _fee(plan: dict[str, Any]) -> str:
    fee = plan["fee"]
    if not fee["amount"]:
        return "-"
    text = f"{fee['amount']} {fee['currency'] or ''}".strip()
    unpaid = UNPAID.get(plan["status"])
    return f"{text}, {unpaid}" if unpaid else text


def _plan_rows(plans: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = [
        [
            "plan",
            "status",
            "window (UTC)",
            "ends",
            "instances total/free/used/bad",
            "fee paid",
            "extensions",
            "notes",
        ]
    ]
    for plan in sorted(plans, key=lambda p: not p["attention"]):
        counts = plan["instances"]
        ext = plan["extensions"]
        hours_to_end = plan["hours_to_end"]
        ends = "-"
        if hours_to_end is not None and plan["status"] != "Failed":  # a Failed plan never ends
            ends = _span(hours_to_end, past=hours_to_end < 0)
        window = "-"
        if plan["start"] or plan["end"]:
            window = f"{_when(plan['start'])} -> {_when(plan['end'])}"
        extensions = "-"
        if ext["hours"] or ext["wanted_hours"]:
            extensions = f"+{ext['hours']} h"
            paid = [
                f"{p['amount']} {p['currency'] or ''}".strip() for p in ext["paid"] if p["amount"]
            ]
            if paid:
                extensions += f" ({', '.join(paid)})"
            if ext["wanted_hours"] != ext["hours"]:
                extensions += f", config +{ext['wanted_hours']} h"
        notes = [*plan["attention"], *([plan["note"]] if plan["note"] else [])]
        rows.append(
            [
                plan["name"],
                plan["status"],
                window,
                ends,
                "/".join(_count(counts[k]) for k in ("total", "available", "in_use", "unhealthy"))
                if plan["status"] != "NotBought"
                else "-",
                _fee(plan),
                extensions,
                "; ".join(notes) or "ok",
            ]
        )
    return rows


def _figure(value: float | None, unit: str = "") -> str:
    """96.0 -> 96, 1234.5 -> 1,234.5; None -> -."""
    if value is None:
        return "-"
    text = f"{value:,.1f}".removesuffix(".0")
    return f"{text}{unit}"


def _use_rows(plans: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The plans' instance-hours: reserved so far, sampled, in use and its share."""
    rows = [["plan", "reserved so far", "sampled", "in use", "share", "notes"]]
    for plan in plans:
        use = plan["utilization"]
        if use["reserved_instance_hours"] is None:
            continue
        sampled = "-"
        if use["sampled_hours"] is not None:
            sampled = f"{_figure(use['sampled_hours'])} of {_figure(use['elapsed_hours'])} h"
        share = use["in_use_share"]
        rows.append(
            [
                plan["name"],
                _figure(use["reserved_instance_hours"], " inst-h"),
                sampled,
                _figure(use["in_use_instance_hours"], " inst-h"),
                "-" if share is None else f"{share:.0%}",
                use["note"] or ("ok" if share is not None else "-"),
            ]
        )
    return rows if len(rows) > 1 else []


def _group_rows(
    groups: Sequence[dict[str, Any]], cluster_status: str | None = None
) -> list[list[str]]:
    rows = [
        [
            "group",
            "kind",
            "type",
            "nodes current/desired",
            "running/bad/other",
            "status",
            "plan",
            "plan status",
            "notes",
        ]
    ]
    for group in sorted(groups, key=lambda g: not g["attention"]):
        nodes = group["nodes"]
        notes = list(group["attention"])
        if not group["deployed"]:
            # While the cluster is created its groups come one by one: nothing to deploy.
            notes.append("not created yet" if cluster_status == "Creating" else "not deployed")
        if not group["in_config"]:
            notes.append("not in the config")
        if group["replaced_nodes"]:
            notes.append(f"{len(group['replaced_nodes'])} launched since the deploy")
        rows.append(
            [
                group["name"],
                group["kind"] or "-",
                group["instance_type"] or "-",
                f"{_count(group['current'])}/{_count(group['desired'])}",
                f"{nodes['running']}/{nodes['unhealthy']}/{nodes['other']}",
                group["status"] or "-",
                group["plan"] or ("-" if not group["plan_arn"] else group["plan_arn"]),
                group["plan_status"] or "-",
                "; ".join(notes) or "ok",
            ]
        )
    return rows


SCHEDULE = {
    "done": "done",
    "at-risk": "at risk",
    "late": "late",
    "on-time": "on time",
    "unscheduled": "-",
}


def _job_rows(jobs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = [
        [
            "job",
            "plan",
            "runs done/running/failed/left",
            "state",
            "planned (UTC)",
            "projected end",
            "schedule",
            "notes",
        ]
    ]
    for job in sorted(jobs, key=lambda j: not j["attention"]):
        counts, schedule = job["counts"], job["schedule"]
        planned = "-"
        if schedule["planned_start"]:
            planned = f"{_when(schedule['planned_start'])} -> {_when(schedule['planned_end'])}"
        notes = [*job["attention"], *([job["note"]] if job["note"] else [])]
        if counts["unknown"]:  # runs only S3 knows, the cluster not read: in no column
            notes.append(f"{counts['unknown']} run{'s' if counts['unknown'] > 1 else ''} unknown")
        rows.append(
            [
                job["name"],
                job["plan"] or "-",
                f"{counts['succeeded']}/{counts['running']}/{counts['failed']}/"
                f"{counts['not_started']}",
                job["state"],
                planned,
                _when(schedule["projected_end"]),
                SCHEDULE[schedule["verdict"]],
                "; ".join(notes) or "ok",
            ]
        )
    return rows


def _run_rows(jobs: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = [["run", "job", "state", "phase", "started", "ended", "notes"]]
    for job in jobs:
        for run in job["runs"]:
            notes = [run["message"]] if run["message"] else []
            if run["training_job"] is not None:
                notes.insert(0, _training_job_note(run["training_job"]))
            rows.append(
                [
                    run["name"],
                    job["name"],
                    run["state"],
                    run["phase"] or "-",
                    _when(run["start"]),
                    _when(run["end"]),
                    "; ".join(notes),
                ]
            )
    return rows


def _training_job_note(found: dict[str, Any]) -> str:
    """A training job's run: its status, the plan it runs on (or on demand), its
    instances and the seconds billed."""
    plan = found["plan_arn"]
    where = f"plan {plan.rsplit('/', 1)[-1]}" if plan else "on demand"
    note = (
        f"training job {found['status']}, {found['instance_count']} x "
        f"{found['instance_type']} on {where}"
    )
    if found["billable_seconds"] is not None:
        note += f", {found['billable_seconds']} s billed"
    return note


def _jobs_lines(jobs: dict[str, Any]) -> list[str]:
    source = "the cluster and S3" if jobs["kubernetes_read"] else "S3 only"
    lines = ["", f"Jobs in namespace {jobs['namespace']} (runs from {source})"]
    if jobs["note"]:
        lines.append(f"  the cluster was not read: {jobs['note']}")
    on_training_jobs = [j["name"] for j in jobs["items"] if j["runs_on"] == "training-job"]
    if on_training_jobs:
        lines.append(
            f"  training jobs ({', '.join(on_training_jobs)}): runs as SageMaker listed them "
            "(ListTrainingJobs, which may not show a job started seconds ago)"
        )
    if jobs["items"]:
        lines += table(_job_rows(jobs["items"]))
    if any(job["runs"] for job in jobs["items"]):
        lines += ["", "Runs", *table(_run_rows(jobs["items"]))]
    return lines


def _replaced_lines(cluster: dict[str, Any], groups: Sequence[dict[str, Any]]) -> list[str]:
    rows = [["node", "group", "launched (UTC)", "status"]]
    rows += [
        [node["instance_id"], group["name"], _when(node["launch_time"]), node["status"]]
        for group in groups
        for node in group["replaced_nodes"]
    ]
    if len(rows) == 1:
        return []
    return [
        "",
        f"Nodes launched since CloudFormation last updated the cluster "
        f"({_when(cluster['stack_updated_at'])} UTC): replaced (by HyperPod or by hand), added "
        "outside CloudFormation, or provisioned when their group's capacity came",
        *table(rows),
    ]


def _eks_lines(eks: dict[str, Any]) -> list[str]:
    if not eks["deployed"]:
        return ["", f"EKS cluster {eks['name']}: not deployed"]
    version, wanted = eks["kubernetes_version"], eks["config_kubernetes_version"]
    same = "the config's" if version == wanted else f"the config has {wanted}"
    lines = ["", f"EKS cluster {eks['name']}: {eks['status']}, Kubernetes {version} ({same})"]
    marker = eks["marker"]
    if marker is None:
        return lines
    where = f"bootstrap marker {marker['namespace']}/{marker['name']}"
    if not marker["read"]:
        return [*lines, f"  {where} not read: {marker['note']}"]
    if not marker["found"]:
        return [*lines, f"  {where}: missing"]
    recorded = marker["recorded"]
    differs = [k for k, v in marker["expected"].items() if recorded.get(k) != v]
    if not differs:
        return [*lines, f"  {where}: as the pins and the config say"]
    return [*lines, f"  {where}: {', '.join(differs)} differ (see the drift)"]


def to_text(report: Report) -> str:
    document = report.json()
    count = len(report.attention)
    verdict = f"{count} need{'s' if count == 1 else ''} attention" if count else "healthy"
    lines = [
        f"novapod status: environment {report.environment} ({report.region}) at "
        f"{document['observed_at']}: {verdict}"
    ]
    if report.attention:
        lines += ["", "Attention (most urgent first)"]
        for number, item in enumerate(report.attention, 1):
            lines.append(f"  {number}. {item.subject}: {item.message} [{item.kind}]")
            if item.command:
                lines.append(f"     next: {item.command}")
    if report.plans:
        lines += ["", "Training plans", *table(_plan_rows(report.plans))]
        use = _use_rows(report.plans)
        if use:
            lines += ["", "Reserved instance-hours (in use: the scheduled check's samples)"]
            lines += table(use)
    if report.cluster is not None:
        cluster = report.cluster
        state = cluster["status"] or "not deployed"
        failure = f" ({cluster['failure']})" if cluster.get("failure") else ""
        lines += ["", f"Instance groups of HyperPod cluster {cluster['name']}: {state}{failure}"]
        if report.groups:
            lines += table(_group_rows(report.groups, cluster["status"]))
        if cluster["deployed"]:
            lines += _replaced_lines(cluster, report.groups)
    if report.eks is not None:
        lines += _eks_lines(report.eks)
    if report.jobs is not None:
        lines += _jobs_lines(report.jobs)
    if report.drift:
        lines += ["", "Drift from the config"]
        rows = [["what", "field", "config", "deployed", "to bring it back"]]
        rows += [
            [d.subject, d.field, _count(d.config), _count(d.deployed), d.command]
            for d in report.drift
        ]
        lines += table(rows)
    if report.purchases:
        lines += ["", f"Purchases to reconcile (ledger {report.ledger_table})"]
        rows = [["purchase", "state", "why"]]
        rows += [[p["key"], p["state"], p["attention"]] for p in report.purchases]
        lines += table(rows)
    return "\n".join(lines)
