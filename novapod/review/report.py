"""The review of two cloud assemblies as one JSON document (the contract).

Top-level keys, each list sorted so that the same inputs give the same bytes:
  format     "novapod-review/1"
  engine     the diff engine and its version
  summary    changed (bool), stacks by status, counts per section; `purchases` counts
             the training plans bought (entries with purchase: true), nothing else
  gates      gate name -> whether the change trips it (see GATES)
  purchases  training plans bought / adopted / updated / removed, Bedrock imports; a
             plan's cap_changes: fee caps raised, lowered or in another currency under
             an unchanged plan or extension name (the approval); its cap_warnings: a
             plan bought again because it grew, under the cap of the smaller one
  stateful   replacement or removal of stateful resources, by category
  instance_groups  each HyperPod instance group an in-place cluster update adds,
             removes or changes: count, type and training plan, old -> new, and the
             effect on the jobs running on it (groups.py)
  security   iam (broadenings), iam_new_principals (one summary per role or principal of
             a stack or role the base does not have), security_groups (openings),
             endpoints
  schedules  training-plan schedules added or changed (schedules.py), each with the
             schedule before and after, as the capacity stack recorded them
  job_moves  each job both sides place whose placement differs (moves.py): between
             HyperPod and training jobs, plans, on demand, groups, instance type or
             count; environment, job, changed, before and after
  stacks     every stack: status and every resource change the engine found
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from novapod.review import groups, iam, moves, schedules, semantics
from novapod.review.assembly import StackArtifact, read_stacks
from novapod.review.engine import PACKAGE, diff_templates

FORMAT = "novapod-review/1"
# Gate -> what trips it. "may-replace" is not in the default set: the engine says
# "maybe" when it cannot know (a value resolved at deploy), so it is opt-in.
GATES = {
    "purchase": "a training plan is bought, or a fee cap is raised or changes currency",
    "stateful-replacement": "a stateful resource will be replaced or destroyed",
    "may-replace": "a stateful resource may be replaced",
    "iam-broadening": "an IAM statement or policy grants more",
    "security-group-opening": "a security-group rule is added",
}


def _stack_status(base: StackArtifact | None, head: StackArtifact | None, diff: Any) -> str:
    if base is None:
        return "added"
    if head is None:
        return "removed"
    changed = diff["resources"] or diff["outputs"] or diff["parameters"] or diff["other"]
    return "changed" if changed else "unchanged"


def build(base_dir: Path, head_dir: Path) -> dict[str, Any]:
    """The review of head against base (two cdk.out directories); no AWS calls."""
    base_stacks = read_stacks(base_dir, "--base")
    head_stacks = read_stacks(head_dir, "--head")
    names = sorted(set(base_stacks) | set(head_stacks))
    pairs = [
        (
            base_stacks[n].template_path if n in base_stacks else None,
            head_stacks[n].template_path if n in head_stacks else None,
        )
        for n in names
    ]
    result = diff_templates(pairs)
    report: dict[str, Any] = {
        "format": FORMAT,
        "engine": f"{PACKAGE} {result.version}",
        "purchases": [],
        "stateful": [],
        "instance_groups": [],
        "security": {"iam": [], "iam_new_principals": [], "security_groups": [], "endpoints": []},
        "schedules": [],
        "job_moves": moves.job_moves(base_stacks, head_stacks),
        "stacks": [],
    }
    for name, diff in zip(names, result.diffs, strict=True):
        _add_stack(report, name, base_stacks.get(name), head_stacks.get(name), diff)
        report["schedules"] += schedules.schedule_changes(
            name, base_stacks.get(name), head_stacks.get(name)
        )
    # A plan's ARN joins the statements that read it once the plan is bought; that
    # purchase is listed (and gated) under Purchases, not again as a broadening.
    security = report["security"]
    security["iam"] = iam.without_purchase_grants(security["iam"], report["purchases"])
    _sort(report)
    report["summary"] = _summary(report)
    report["gates"] = tripped(report)
    return {key: report[key] for key in sorted(report)}


def _add_stack(
    report: dict[str, Any],
    name: str,
    base: StackArtifact | None,
    head: StackArtifact | None,
    diff: Mapping[str, Any],
) -> None:
    status = _stack_status(base, head, diff)
    removed = status == "removed"
    old = base.template().get("Resources", {}) if base else {}
    new = head.template().get("Resources", {}) if head else {}
    hashes = (base.asset_hashes if base else frozenset()) | (
        head.asset_hashes if head else frozenset()
    )
    resources = []
    for change in diff["resources"]:
        logical_id = change["logical_id"]
        before, after = old.get(logical_id), new.get(logical_id)
        entry = semantics.resource_entry(change, before, after, hashes)
        resources.append(entry)
        type_ = entry["type"]
        purchase = None
        if type_ == semantics.TRAINING_PLAN:
            purchase = semantics.training_plan(
                name, logical_id, before, after, stack_removed=removed
            )
        elif type_ == semantics.BEDROCK_MODEL:
            purchase = semantics.bedrock_model(
                name, logical_id, before, after, stack_removed=removed
            )
        if purchase is not None:
            report["purchases"].append(purchase)
        report["stateful"] += semantics.stateful(name, entry, before, after, stack_removed=removed)
        report["instance_groups"] += groups.changes(name, entry, before, after)
        endpoint = semantics.endpoint_change(name, entry, before, after)
        if endpoint is not None:
            report["security"]["endpoints"].append(endpoint)
    broadenings, summaries = iam.new_grants(
        name, diff["iam"], iam.new_roles(old, new), stack_added=status == "added"
    )
    report["security"]["iam"] += broadenings
    report["security"]["iam_new_principals"] += summaries
    report["security"]["security_groups"] += semantics.security_group_openings(
        name, diff["security_groups"]
    )
    report["stacks"].append(
        {
            "stack": name,
            "status": status,
            "resources": resources,
            "outputs": list(diff["outputs"]),
            "parameters": list(diff["parameters"]),
            "other": list(diff["other"]),
        }
    )


def _key(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True)


def _sort(report: dict[str, Any]) -> None:
    report["purchases"].sort(key=lambda e: (e["stack"], e["logical_id"]))
    order = {c: i for i, c in enumerate(semantics.CATEGORIES)}
    report["stateful"].sort(
        key=lambda e: (order[e["category"]], e["stack"], e["logical_id"], e["what"])
    )
    report["instance_groups"].sort(
        key=lambda e: (e["stack"], e["logical_id"], e["kind"], e["group"])
    )
    for section in report["security"].values():
        section.sort(key=lambda e: (e["stack"], e.get("principal", ""), _key(e)))
    report["stacks"].sort(key=lambda s: s["stack"])


def _summary(report: Mapping[str, Any]) -> dict[str, Any]:
    stacks: dict[str, list[str]] = {"added": [], "changed": [], "removed": [], "unchanged": []}
    for stack in report["stacks"]:
        stacks[stack["status"]].append(stack["stack"])
    security = report["security"]
    return {
        "changed": any(stacks[s] for s in ("added", "changed", "removed")),
        "stacks": stacks,
        "purchases": sum(1 for e in report["purchases"] if e["purchase"]),
        "stateful": {
            c: sum(1 for e in report["stateful"] if e["category"] == c)
            for c in semantics.CATEGORIES
        },
        "iam_broadenings": len(security["iam"]),
        "iam_new_principals": len(security["iam_new_principals"]),
        "security_group_openings": len(security["security_groups"]),
        "endpoint_changes": len(security["endpoints"]),
        "instance_group_changes": len(report["instance_groups"]),
        "job_moves": len(report["job_moves"]),
        "resource_changes": sum(len(s["resources"]) for s in report["stacks"]),
    }


def tripped(report: Mapping[str, Any]) -> dict[str, bool]:
    """Gate -> whether this review trips it."""
    categories = {e["category"] for e in report["stateful"]}
    # A report from before cap_changes (the same format) still gates as it did.
    return {
        "purchase": any(
            e["purchase"] or any(c["may_spend_more"] for c in e.get("cap_changes", ()))
            for e in report["purchases"]
        ),
        "stateful-replacement": bool(categories & {"will-replace", "destroy"}),
        "may-replace": "may-replace" in categories,
        # A new role or stack grants more than nothing: its summaries count too.
        "iam-broadening": bool(
            report["security"]["iam"] or report["security"].get("iam_new_principals")
        ),
        "security-group-opening": bool(report["security"]["security_groups"]),
    }
