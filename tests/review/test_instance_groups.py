"""What an in-place HyperPod cluster update does to each instance group (issue 21, §3).

The engine sees only "RestrictedInstanceGroups (update)"; the review shows each group by
name, its count, type and plan old -> new, groups added and removed, and one sentence on
the jobs running on it (novapod/review/groups.py, whose docstring cites the AWS pages).
The pairs are synthesized configs (conftest.py); the last tests exercise the rules on
the cluster's properties directly.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from novapod import review, yamlsafe
from novapod.review import groups
from novapod.stacks.hyperpod import CLUSTER_LOGICAL_ID
from tests.conftest import ROOT, Synthesized
from tests.review.conftest import PREFIX, approved
from tests.review.test_review import ENV, section

HYPERPOD = f"{ENV}-hyperpod"
PLAN = "novapod-nova-lite-lite-sft-50d13e0b"  # config/examples/single-rig-purchase.yaml
WHERE = f"(`{HYPERPOD}` `{CLUSTER_LOGICAL_ID}`)"


def _group_lines(report: dict[str, Any]) -> list[str]:
    text = section(review.render(report), 2)
    block = text.split("**HyperPod instance groups** (the cluster is updated in place)\n\n")[1]
    return [line for line in block.splitlines() if line.startswith("- ")]


def test_a_group_resize_shows_the_group_and_what_happens_to_its_jobs(review_of) -> None:
    report = review_of("base", "fewer-instances")
    assert report["instance_groups"] == [
        {
            "stack": HYPERPOD,
            "logical_id": CLUSTER_LOGICAL_ID,
            "kind": "restricted",
            "group": "nova-lite",
            "change": "update",
            "previous_instance_count": 4,
            "instance_count": 2,
            "previous_instance_type": "ml.p5.48xlarge",
            "instance_type": "ml.p5.48xlarge",
            "previous_training_plan": PLAN,
            "training_plan": PLAN,
            "changed": ["InstanceCount"],
            "effect": "scaling down from 4 to 2 terminates 2 nodes, chosen at random, and "
            "stops the jobs running on them",
        }
    ]
    assert report["summary"]["instance_group_changes"] == 1
    assert _group_lines(report) == [
        f"- **Changes** restricted group `nova-lite` {WHERE}: 4 → 2 x ml.p5.48xlarge, plan "
        f"`{PLAN}`. Scaling down from 4 to 2 terminates 2 nodes, chosen at random, and stops "
        "the jobs running on them."
    ]
    # Shown, not gated: a resize is an in-place update, as before.
    assert not any(report["gates"].values())
    # The other way round the group grows and its running jobs keep their nodes.
    (grown,) = review_of("fewer-instances", "base")["instance_groups"]
    assert (grown["previous_instance_count"], grown["instance_count"]) == (2, 4)
    assert grown["effect"] == "scaling up from 2 to 4 adds 2 nodes; running jobs keep theirs"


def test_a_group_moved_onto_a_new_plan_names_both_plans(review_of, variant_path) -> None:
    report = review_of("base", "plan-count")
    new = yamlsafe.load(variant_path("plan-count").read_text())["capacity"]["training_plans"][0][
        "purchase"
    ]["approve"]
    (entry,) = report["instance_groups"]
    assert (entry["previous_training_plan"], entry["training_plan"]) == (PLAN, new)
    assert (entry["previous_instance_count"], entry["instance_count"]) == (4, 8)
    assert entry["changed"] == ["InstanceCount", "TrainingPlanArn"]
    assert entry["effect"] == (
        "moving it to the new plan takes its 8 nodes (was 4) from that plan's reserved "
        "capacity, while it runs; AWS does not document whether nodes already running are "
        "kept, so let running jobs finish first"
    )
    (line,) = _group_lines(report)
    assert line.startswith(
        f"- **Changes** restricted group `nova-lite` {WHERE}: 4 → 8 x ml.p5.48xlarge, plan "
        f"`{PLAN}` → `{new}`. Moving it to the new plan"
    )


def test_added_and_removed_groups(review_of, variant_path) -> None:
    spare = yamlsafe.load(variant_path("extra-purchases").read_text())["capacity"][
        "training_plans"
    ][1]["purchase"]["approve"]
    (added,) = review_of("base", "extra-purchases")["instance_groups"]
    assert (added["group"], added["change"], added["changed"]) == ("spare", "add", [])
    assert (added["previous_instance_count"], added["instance_count"]) == (None, 2)
    assert added["training_plan"] == spare
    assert added["effect"] == (
        f"a new group: 2 new nodes from plan {spare}'s capacity and its own FSx for Lustre; "
        "running jobs are not touched"
    )
    removal = review_of("extra-purchases", "base")
    (removed,) = removal["instance_groups"]
    assert (removed["group"], removed["change"], removed["instance_count"]) == (
        "spare",
        "remove",
        None,
    )
    assert removed["effect"] == (
        "removing the group terminates all its nodes (2) and stops the jobs running on "
        "them; its FSx for Lustre is deleted with it"
    )
    assert _group_lines(removal) == [
        f"- **Removes** restricted group `spare` {WHERE}: 2 x ml.p5.48xlarge, plan `{spare}`. "
        "Removing the group terminates all its nodes (2) and stops the jobs running on them; "
        "its FSx for Lustre is deleted with it."
    ]


STANDARD = ROOT / "config" / "examples" / "rig-plus-standard.yaml"


@pytest.fixture(scope="module")
def standard_pair(
    synth: Callable[[Path], Synthesized], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """rig-plus-standard.yaml and an edit of its standard groups: `system` on another
    instance type, `distillation` scaled to 0."""
    data = yamlsafe.load(STANDARD.read_text())
    system, distillation = data["hyperpod"]["instance_groups"]
    system["instance_type"] = "ml.m5.4xlarge"
    distillation["instance_count"] = 0
    head = tmp_path_factory.mktemp("review-standard") / f"{PREFIX}standard-groups.yaml"
    approved(data, head)
    return synth(STANDARD).outdir, synth(head).outdir


def test_standard_groups_a_new_type_is_undocumented_and_zero_keeps_the_group(standard_pair) -> None:
    report = review.build(*standard_pair)
    by_name = {e["group"]: e for e in report["instance_groups"]}
    assert sorted(by_name) == ["distillation", "system"]
    assert {e["kind"] for e in by_name.values()} == {"standard"}
    system = by_name["system"]
    assert (system["previous_instance_type"], system["instance_type"]) == (
        "ml.m5.2xlarge",
        "ml.m5.4xlarge",
    )
    assert system["effect"] == (
        "a new InstanceType for an existing group: AWS does not document what UpdateCluster "
        "does with it (SageMaker may refuse it, and the deploy then fails and rolls back, or "
        "replace the group's nodes, which stops the jobs on them); to be safe, add a group "
        "under a new name, move the jobs, then remove this one"
    )
    assert by_name["distillation"]["effect"] == (
        "scaling to 0 terminates all its nodes (1) and stops the jobs running on them; the "
        "group stays"
    )
    lines = _group_lines(report)
    assert (
        "- **Changes** standard group `system` (`novapod-mixed-hyperpod` `HyperPodCluster`): "
        "2 x ml.m5.2xlarge → ml.m5.4xlarge, plan none. A new InstanceType for an existing "
        "group: AWS does not document"
    ) in "\n".join(lines)


# --- the rules, on the cluster's properties (no engine run) --------------------------

ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/"


def _cluster(**group: Any) -> dict[str, Any]:
    properties = {
        "InstanceGroupName": "nova-lite",
        "InstanceType": "ml.p5.48xlarge",
        "InstanceCount": 4,
        "TrainingPlanArn": f"{ARN}{PLAN}",
        "EnvironmentConfig": {"FSxLustreConfig": {"SizeInGiB": 1200}},
        **group,
    }
    return {
        "Type": groups.HYPERPOD_CLUSTER,
        "Properties": {"RestrictedInstanceGroups": [properties]},
    }


UPDATE = {"type": groups.HYPERPOD_CLUSTER, "change": "update", "logical_id": "C"}


def _effect(base: dict[str, Any], head: dict[str, Any]) -> str:
    (entry,) = groups.changes("s", UPDATE, base, head)
    return str(entry["effect"])


def test_a_restricted_group_scaled_to_zero_keeps_its_fsx() -> None:
    assert _effect(_cluster(), _cluster(InstanceCount=0)) == (
        "scaling to 0 terminates all its nodes (4) and stops the jobs running on them; the "
        "group stays, with its FSx for Lustre"
    )


def test_other_fields_are_named_and_count_type_plan_stay() -> None:
    head = _cluster(OnStartDeepHealthChecks=["InstanceStress"])
    assert _effect(_cluster(), head) == (
        "changes OnStartDeepHealthChecks; its count, type and plan stay"
    )
    both = _cluster(InstanceCount=2, OnStartDeepHealthChecks=["InstanceStress"])
    assert _effect(_cluster(), both).endswith("; also changes OnStartDeepHealthChecks")


def test_an_execution_role_change_reads_like_a_type_change() -> None:
    head = _cluster(ExecutionRole="arn:aws:iam::111122223333:role/Other")
    base = copy.deepcopy(_cluster(ExecutionRole="arn:aws:iam::111122223333:role/Nodes"))
    assert _effect(base, head).startswith("a new ExecutionRole for an existing group: AWS does")


def test_plan_names_come_from_the_arn_or_stay_as_written() -> None:
    assert groups.plan_name(f"{ARN}{PLAN}") == PLAN
    assert groups.plan_name({"Fn::GetAtt": ["Plan", "Arn"]}) == "${Plan.Arn}"
    assert groups.plan_name(None) is None
    (entry,) = groups.changes("s", UPDATE, _cluster(), _cluster(TrainingPlanArn=None))
    assert entry["training_plan"] is None
    assert entry["effect"].startswith("taking it off its plan ends the use of that plan's")


def test_only_in_place_updates_of_a_cluster_list_groups() -> None:
    base, head = _cluster(), _cluster(InstanceCount=2)
    for change in ("replace", "may-replace", "destroy", "add"):
        assert groups.changes("s", {**UPDATE, "change": change}, base, head) == []
    assert groups.changes("s", {**UPDATE, "type": "AWS::EKS::Cluster"}, base, head) == []
    assert groups.changes("s", UPDATE, base, copy.deepcopy(base)) == []


def test_a_report_without_instance_groups_still_renders(review_of) -> None:
    old = copy.deepcopy(review_of("base", "fewer-instances"))
    del old["instance_groups"]  # as report.build wrote it before the key existed
    assert "**HyperPod instance groups**" not in review.render(old)
