"""The review shows a job moving between HyperPod and training jobs (issue 23 §4), from
what each assembly recorded (construct metadata: the plans' charts, the on-demand jobs'
records), never from the config; and a plan bought for training jobs is a purchase like
a HyperPod plan: gated, approved by its exact name, under its fee cap.

Base: config/examples/training-jobs.yaml. Head ("moved"): lite-sft moves from its
restricted group to a training job on plan micro-tj (which grows: a new purchase), and
micro-eval from that plan to on demand; lite-rig keeps its size explicitly (it has no
job left). One synthesis besides the example's.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from novapod import review, yamlsafe
from novapod.capacity.chart import METADATA_TYPE, JobBar, PlanChart, chart_from_json, chart_json
from novapod.capacity.placements import ON_DEMAND_METADATA_TYPE
from novapod.cli import main
from tests.conftest import ROOT, Synthesized
from tests.review.conftest import PREFIX, approved

EXAMPLE = ROOT / "config" / "examples" / "training-jobs.yaml"
ENV = "novapod-mixed-tj"
CAPACITY = f"{ENV}-capacity"
P5 = "ml.p5.48xlarge"


def _moved(data: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    jobs = {job["name"]: job for job in data["jobs"]}
    lite = jobs["lite-sft"]
    del lite["instance_group"]
    lite.update({"runs_on": "training-job", "plan": "micro-tj", "replicas": 4})
    evaluation = jobs["micro-eval"]
    del evaluation["plan"]
    evaluation.update({"on_demand": True, "instance_type": P5})
    # lite-rig keeps the shape the planner gave it for lite-sft: the same purchase.
    data["capacity"]["training_plans"][0].update(
        instance_type=P5, instance_count=4, duration_hours=48
    )
    return data


@pytest.fixture(scope="module")
def outdirs(
    synth: Callable[[Path], Synthesized], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """base (the example), moved (the head), old (the base as CHART_VERSION 1 wrote it:
    no target, no placement, no on-demand records), empty (no base: a first deploy)."""
    folder = tmp_path_factory.mktemp("job-moves")
    path = folder / f"{PREFIX}tj-moved.yaml"
    approved(_moved(yamlsafe.load(EXAMPLE.read_text())), path)
    base = synth(EXAMPLE).outdir
    old = folder / "old"
    shutil.copytree(base, old, ignore=shutil.ignore_patterns("asset.*"))
    for metadata_file in old.glob("*.metadata.json"):
        metadata = json.loads(metadata_file.read_text())
        for where, entries in metadata.items():
            kept = [e for e in entries if e["type"] != ON_DEMAND_METADATA_TYPE]
            for entry in kept:
                if entry["type"] == METADATA_TYPE:
                    data = entry["data"]
                    data["version"] = 1
                    del data["target"]
                    for bar in data["jobs"]:
                        bar.pop("runs_on")
                        bar.pop("instance_group", None)
            metadata[where] = kept
        metadata_file.write_text(json.dumps(metadata))
    empty = folder / "empty"
    empty.mkdir()
    return {"base": base, "moved": synth(path).outdir, "old": old, "empty": empty}


@pytest.fixture(scope="module")
def report_of(outdirs: dict[str, Path]) -> Callable[[str, str], dict[str, Any]]:
    cache: dict[tuple[str, str], dict[str, Any]] = {}

    def make(base: str, head: str) -> dict[str, Any]:
        if (base, head) not in cache:
            cache[base, head] = review.build(outdirs[base], outdirs[head])
        return cache[base, head]

    return make


def _where(platform: str, plan: str | None, group: str | None, count: int) -> dict[str, Any]:
    return {
        "platform": platform,
        "plan": plan,
        "on_demand": plan is None,
        "instance_group": group,
        "instance_type": P5,
        "instance_count": count,
    }


def test_a_job_moving_from_a_restricted_group_to_a_training_job_is_listed(report_of) -> None:
    report = report_of("base", "moved")
    (lite,) = [e for e in report["job_moves"] if e["job"] == "lite-sft"]
    assert lite == {
        "environment": ENV,
        "job": "lite-sft",
        "changed": ["platform", "plan", "instance_group"],
        "before": _where("hyperpod", "lite-rig", "nova-lite", 4),
        "after": _where("training-job", "micro-tj", None, 4),
    }
    # micro-sft stays where it was (plan micro-tj, 2 instances), distill stays on demand.
    assert [e["job"] for e in report["job_moves"]] == ["lite-sft", "micro-eval"]
    assert report["summary"]["job_moves"] == 2
    markdown = review.render(report)
    line = (
        f"- `lite-sft` (`{ENV}`) moves from restricted group `nova-lite` on plan `lite-rig` "
        f"(4 x {P5}) to a training job on plan `micro-tj` (4 x {P5})."
    )
    assert line in markdown
    # Beside the schedules (what each plan now holds), before the stateful resources.
    assert markdown.index("**Schedules**") < markdown.index("**Job moves**") < markdown.index(line)
    assert markdown.index(line) < markdown.index("### 2. Stateful")


def test_a_job_moving_from_a_plan_to_on_demand_is_listed(report_of) -> None:
    (evaluation,) = [e for e in report_of("base", "moved")["job_moves"] if e["job"] == "micro-eval"]
    assert evaluation == {
        "environment": ENV,
        "job": "micro-eval",
        "changed": ["plan", "on_demand"],
        "before": _where("training-job", "micro-tj", None, 1),
        "after": _where("training-job", None, None, 1),
    }
    assert (
        f"- `micro-eval` (`{ENV}`) moves from a training job on plan `micro-tj` (1 x {P5}) "
        f"to a training job on demand (1 x {P5})."
    ) in review.render(report_of("base", "moved"))
    # ... and back: the same entry, sides swapped.
    (back,) = [e for e in report_of("moved", "base")["job_moves"] if e["job"] == "micro-eval"]
    assert (back["before"], back["after"]) == (evaluation["after"], evaluation["before"])


def test_an_unchanged_config_moves_no_job(report_of) -> None:
    report = report_of("base", "base")
    assert report["job_moves"] == [] and report["summary"]["job_moves"] == 0
    assert "Job moves" not in review.render(report)


def test_a_base_recorded_before_placements_reads_its_platform_as_unknown(report_of) -> None:
    report = report_of("old", "moved")  # no crash
    by_job = {e["job"]: e for e in report["job_moves"]}
    # Only what version 1 recorded is compared: the plan, on demand, type and count.
    assert by_job["lite-sft"] == {
        "environment": ENV,
        "job": "lite-sft",
        "changed": ["plan"],
        "before": _where("unknown", "lite-rig", None, 4),
        "after": _where("training-job", "micro-tj", None, 4),
    }
    assert by_job["micro-eval"]["before"] == _where("unknown", "micro-tj", None, 1)
    # distill ran on demand at the base too, but version 1 recorded no on-demand job.
    assert sorted(by_job) == ["lite-sft", "micro-eval"]
    markdown = review.render(report)
    assert f"moves from plan `lite-rig` (platform not recorded at the base) (4 x {P5})" in markdown
    assert "for 24 h (1 day), target not recorded (synthesized by an older novapod)" in markdown
    # Against the same config, an old base shows no move and no schedule change: a
    # target or placement it did not record is no change.
    same = report_of("old", "base")
    assert same["job_moves"] == [] and same["schedules"] == []


def test_a_new_training_job_plan_is_a_purchase_approved_by_its_exact_name(
    report_of, capsys, outdirs
) -> None:
    data = yamlsafe.load(EXAMPLE.read_text())
    approve = data["capacity"]["training_plans"][1]["purchase"]["approve"]
    report = report_of("empty", "base")  # a first deploy: both plans are bought
    (plan,) = [p for p in report["purchases"] if p["logical_id"] == "TrainingPlanMicroTj"]
    assert (plan["action"], plan["purchase"], plan["plan_name"]) == ("buy", True, approve)
    assert plan["target_resources"] == ["training-job"]
    assert (plan["instance_count"], plan["duration_hours"]) == (2, 24)
    assert (plan["max_upfront_fee"], plan["currency"]) == ("10000", "USD")
    assert report["summary"]["purchases"] == 2 and report["gates"]["purchase"] is True
    assert (
        f"- **Buys** training plan `{approve}` (`{CAPACITY}` `TrainingPlanMicroTj`): "
        f"2 x {P5} for training jobs, for 24 h, between 2027-09-06T00:00:00+00:00 and "
        "2027-10-31T00:00:00+00:00, fee cap 10000 USD."
    ) in review.render(report)
    (rig,) = [p for p in report["purchases"] if p["logical_id"] == "TrainingPlanLiteRig"]
    assert rig["target_resources"] == ["hyperpod-cluster"]
    # The plan grows when lite-sft joins it: a new name (the approval), bought again,
    # under the cap written for the smaller plan; the gate stops the pipeline.
    (grown,) = [
        p
        for p in report_of("base", "moved")["purchases"]
        if p["logical_id"] == "TrainingPlanMicroTj"
    ]
    assert (grown["action"], grown["previous_plan_name"]) == ("buy", approve)
    assert grown["plan_name"] != approve and grown["target_resources"] == ["training-job"]
    assert [w["warning"] for w in grown["cap_warnings"]] == ["cap-unchanged"]
    status = main(
        ["review", "--base", str(outdirs["base"]), "--head", str(outdirs["moved"]),
         "--fail-on", "purchase"]
    )  # fmt: skip
    assert status == 3
    assert "purchase" in capsys.readouterr().err


def test_a_chart_of_version_1_reads_without_placement() -> None:
    bar = JobBar("sft", 2, 0, 10, 1, 10.0, (), runs_on="training-job")
    chart = PlanChart("p", P5, 2, 24, 24, None, None, (bar,), target="training-job")
    data = chart_json(chart)
    # The assembly leaves out null values: the chart still reads.
    stripped = {k: v for k, v in data.items() if v is not None}
    stripped["jobs"] = [{k: v for k, v in b.items() if v is not None} for b in data["jobs"]]
    assert chart_from_json(stripped) == chart
    old = copy.deepcopy(stripped)
    old["version"] = 1
    read = chart_from_json(old)
    assert read is not None and read.target is None
    assert (read.jobs[0].runs_on, read.jobs[0].instance_group) == (None, None)
    assert chart_from_json(dict(stripped, version=3)) is None
