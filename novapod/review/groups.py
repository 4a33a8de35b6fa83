"""What an in-place update of a HyperPod cluster does to each of its instance groups.

The engine sees `RestrictedInstanceGroups` (or `InstanceGroups`) as one property that
changes; a reviewer needs each group, by `InstanceGroupName`: its instance count, type
and training plan, old -> new, groups added and removed, and one sentence on what that
does to the jobs running on it. CloudFormation sends these changes to SageMaker's
UpdateCluster, so the sentences follow its documentation:

- "Updating SageMaker HyperPod cluster configuration" (docs.aws.amazon.com/sagemaker/
  latest/dg/sagemaker-hyperpod-eks-operate-cli-command-update-cluster.html): a group's
  InstanceCount may go up or down to 0. What a new InstanceType, ExecutionRole or
  ThreadsPerCore of an existing group does is not settled: the page's first step says
  each group's instance type can change, its per-field steps ask for the values the
  group was created with, the CloudFormation schema makes none of them create-only, and
  the shared reference (nova-hyperpod.md section 3) says to treat them as replacing. So
  the review says it is undocumented and gives the safe path.
- "Scale down a SageMaker HyperPod cluster" (docs.aws.amazon.com/sagemaker/latest/dg/
  smcluster-scale-down.html): scaling a group down, HyperPod chooses the instances to
  terminate at random; at 0 all are terminated and the group stays; deleting a group
  terminates all its instances and stops the workloads running on it.
- "Update a SageMaker HyperPod cluster on training plans" (docs.aws.amazon.com/
  sagemaker/latest/dg/use-training-plan-for-hyperpod-update-using-api-cli-sdk.html):
  a training plan is added, changed or removed by updating the group; what happens to
  nodes already running is not documented, so the review says so.

A restricted group's service-managed FSx for Lustre stays when it scales to 0 and goes
when the group is removed (shared reference nova-hyperpod.md section 3; the deletion is
also a stateful entry, semantics._removed_groups).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from novapod.review.semantics import HYPERPOD_CLUSTER
from novapod.review.values import integer, render

# The cluster's property -> the kind of group it holds.
GROUP_PROPERTIES = (("RestrictedInstanceGroups", "restricted"), ("InstanceGroups", "standard"))
# What an existing group may have to keep as it was created (undocumented: see above).
FIXED = ("InstanceType", "ExecutionRole", "ThreadsPerCore")
# What the entry shows old -> new; any other changed key is listed by name.
SHOWN = ("InstanceCount", "InstanceType", "TrainingPlanArn", "InstanceGroupName")
_PLAN_ARN = ":training-plan/"


def plan_name(arn: Any) -> str | None:
    """The training plan's name from its ARN (`arn:...:training-plan/NAME`); the ARN as
    `render` shows it when it is not a literal (an intrinsic); None without a plan."""
    if arn is None:
        return None
    text = render(arn)
    if isinstance(arn, str) and _PLAN_ARN in text:
        return text.rsplit(_PLAN_ARN, 1)[1]
    return text


def _groups(resource: Mapping[str, Any], key: str) -> dict[str, Mapping[str, Any]]:
    groups = (resource.get("Properties") or {}).get(key) or []
    return {render(g.get("InstanceGroupName", "?")): g for g in groups if isinstance(g, Mapping)}


def _fields(group: Mapping[str, Any] | None) -> dict[str, Any]:
    if group is None:
        return {"instance_count": None, "instance_type": None, "training_plan": None}
    return {
        "instance_count": integer(group.get("InstanceCount")),
        "instance_type": render(group["InstanceType"]) if "InstanceType" in group else None,
        "training_plan": plan_name(group.get("TrainingPlanArn")),
    }


def changes(
    stack: str,
    entry: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """Each instance group an in-place cluster update adds, removes or changes."""
    if entry["type"] != HYPERPOD_CLUSTER or entry["change"] != "update":
        return []
    if base is None or head is None:
        return []
    out: list[dict[str, Any]] = []
    for key, kind in GROUP_PROPERTIES:
        old, new = _groups(base, key), _groups(head, key)
        for name in sorted(set(old) | set(new)):
            before, after = old.get(name), new.get(name)
            if before == after:
                continue
            was, now = _fields(before), _fields(after)
            changed = sorted(
                k
                for k in set(before or {}) | set(after or {})
                if (before or {}).get(k) != (after or {}).get(k)
            )
            change = "add" if before is None else "remove" if after is None else "update"
            out.append(
                {
                    "stack": stack,
                    "logical_id": entry["logical_id"],
                    "kind": kind,
                    "group": name,
                    "change": change,
                    **{f"previous_{k}": v for k, v in was.items()},
                    **now,
                    "changed": changed if change == "update" else [],
                    "effect": _effect(kind, change, was, now, changed),
                }
            )
    return out


def _effect(
    kind: str, change: str, was: Mapping[str, Any], now: Mapping[str, Any], changed: list[str]
) -> str:
    """One sentence: what the group's change does to its nodes and the jobs on them."""
    fsx = kind == "restricted"
    if change == "add":
        plan = f" from plan {now['training_plan']}'s capacity" if now["training_plan"] else ""
        return (
            f"a new group: {now['instance_count']} new nodes{plan}"
            + (" and its own FSx for Lustre" if fsx else "")
            + "; running jobs are not touched"
        )
    if change == "remove":
        return (
            f"removing the group terminates all its nodes ({was['instance_count']}) and stops "
            "the jobs running on them" + ("; its FSx for Lustre is deleted with it" if fsx else "")
        )
    fixed = [k for k in FIXED if k in changed]
    if fixed:
        return (
            f"a new {' or '.join(fixed)} for an existing group: AWS does not document "
            "what UpdateCluster does with it (SageMaker may refuse it, and the deploy then "
            "fails and rolls back, or replace the group's nodes, which stops the jobs on "
            "them); to be safe, add a group under a new name, move the jobs, then remove "
            "this one"
        )
    # A new plan decides where every node comes from; a count change alone only adds or
    # removes nodes.
    moved = was["training_plan"] != now["training_plan"]
    main = _plan(was, now) if moved else _count(was, now, fsx)
    clauses = [main] if main else []
    others = [k for k in changed if k not in SHOWN]
    if others:
        clauses.append(
            ("also changes " if clauses else "changes ")
            + ", ".join(others)
            + ("" if clauses else "; its count, type and plan stay")
        )
    return "; ".join(clauses)


def _count(was: Mapping[str, Any], now: Mapping[str, Any], fsx: bool) -> str | None:
    before, after = was["instance_count"], now["instance_count"]
    if before == after:
        return None
    if not isinstance(before, int) or not isinstance(after, int):
        return f"its instance count changes from {before} to {after}"
    if after == 0:
        return (
            f"scaling to 0 terminates all its nodes ({before}) and stops the jobs running on "
            "them; the group stays" + (", with its FSx for Lustre" if fsx else "")
        )
    if after < before:
        return (
            f"scaling down from {before} to {after} terminates {before - after} nodes, "
            "chosen at random, and stops the jobs running on them"
        )
    return (
        f"scaling up from {before} to {after} adds {after - before} nodes; running jobs keep theirs"
    )


def _plan(was: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    before, after = was["instance_count"], now["instance_count"]
    nodes = "its nodes" if before == after else f"its {after} nodes (was {before})"
    unknown = (
        "AWS does not document whether nodes already running are kept, so let running jobs "
        "finish first"
    )
    if now["training_plan"] is None:
        return f"taking it off its plan ends the use of that plan's capacity; {unknown}"
    move = "moving it to the new plan" if was["training_plan"] else "putting it on a plan"
    # A group on a plan runs while the plan's reserved segments do (nova-hyperpod.md 2).
    return f"{move} takes {nodes} from that plan's reserved capacity, while it runs; {unknown}"
