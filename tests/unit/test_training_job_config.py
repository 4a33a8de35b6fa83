"""Jobs on SageMaker training jobs (`runs_on: training-job`): each mistake is one
sentence at its field path (exit 2 from `novapod validate`); the example config with
HyperPod and training-job jobs validates and plans; existing configs are unchanged."""

from __future__ import annotations

import copy
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from novapod import yamlsafe
from novapod.config import ConfigError, parse_config
from novapod.config.checks import warnings
from tests.conftest import ROOT

EXAMPLE = ROOT / "config" / "examples" / "training-jobs.yaml"
BASE: dict[str, Any] = yamlsafe.load(EXAMPLE.read_text())
R5 = "ml.r5.24xlarge"


def job(name: str) -> int:
    return next(i for i, j in enumerate(BASE["jobs"]) if j["name"] == name)


def edited(**changes: dict[str, Any]) -> dict[str, Any]:
    """The example with jobs (by name) or plans (by name) updated; None deletes a key."""
    data = copy.deepcopy(BASE)
    for key, update in changes.items():
        name = key.replace("_", "-")
        target = next((j for j in data["jobs"] if j["name"] == name), None) or next(
            p for p in data["capacity"]["training_plans"] if p["name"] == name
        )
        for field, value in update.items():
            if value is None:
                target.pop(field, None)
            else:
                target[field] = value
    return data


def issues(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return dict(info.value.issues)


SFT, EVAL, DISTILL, LITE = (
    f"jobs[{job(n)}]" for n in ("micro-sft", "micro-eval", "distill", "lite-sft")
)


def test_the_example_validates_and_plans_a_rig_plan_a_training_job_plan_and_on_demand() -> None:
    config = parse_config(copy.deepcopy(BASE))
    plan = config.capacity_plan()
    by_name = {r.name: r for r in plan.training_plans}
    assert by_name["lite-rig"].target_resources == ("hyperpod-cluster",)
    assert by_name["lite-rig"].jobs == ("lite-sft",)
    assert by_name["micro-tj"].target_resources == ("training-job",)
    assert by_name["micro-tj"].jobs == ("micro-sft", "micro-eval")
    # Sized from the jobs: the largest replicas side by side (2), the evaluation after
    # the training it evaluates (10 h + 2 h in one day).
    assert (by_name["micro-tj"].instance_count, by_name["micro-tj"].duration_hours) == (2, 24)
    assert [j.name for j in plan.on_demand] == ["distill"]
    assert plan.on_demand[0].instance_type == R5
    # The names money depends on, pinned.
    assert config.purchase_names(plan) == {
        "lite-rig": "novapod-mixed-tj-lite-rig-f7e6f14e",
        "micro-tj": "novapod-mixed-tj-micro-tj-43d97959",
    }


def test_validate_exits_2_with_one_line_naming_the_field() -> None:
    data = edited(micro_tj={"target_resources": ["hyperpod-cluster"]})
    with tempfile.TemporaryDirectory() as scratch:
        bad = Path(scratch) / "bad.yaml"
        bad.write_text(yaml.safe_dump(data))
        done = subprocess.run(
            [sys.executable, "-m", "novapod.cli", "validate", str(bad)],
            capture_output=True, text=True, check=False, cwd=ROOT,
        )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert any(f"{SFT}.plan: micro-tj is not bought for training-job" in line for line in lines)


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        (
            edited(micro_tj={"target_resources": ["hyperpod-cluster"]}),
            f"{SFT}.plan",
            "micro-tj is not bought for training-job, and a training job runs only on a plan "
            "reserved for training jobs (plans are specific to their target resource); add "
            "training-job to its target_resources, or use another plan",
        ),
        (
            edited(micro_sft={"plan": None}),
            f"{SFT}.plan",
            "a training-job job runs on a training plan whose target_resources include "
            "training-job (plan: NAME) or on demand (on_demand: true); set one of them",
        ),
        (
            edited(micro_sft={"on_demand": True, "instance_type": "ml.p5.48xlarge"}),
            f"{SFT}.on_demand",
            "a training job runs on its plan or on demand, not both; remove plan or on_demand",
        ),
        (
            edited(distill={"instance_type": None}),
            f"{DISTILL}.instance_type",
            "an on-demand training job needs its instance type; set instance_type to one of "
            "ml.r5.24xlarge",
        ),
        (
            edited(micro_sft={"instance_group": "nova-lite"}),
            f"{SFT}.instance_group",
            "a training-job job runs on no instance group; remove instance_group (plan: NAME "
            "or on_demand: true says where it runs)",
        ),
        (
            edited(lite_sft={"on_demand": True}),
            f"{LITE}.on_demand",
            "only training-job jobs run on demand; set runs_on: training-job, or remove on_demand",
        ),
        (
            edited(lite_sft={"instance_type": "ml.p5.48xlarge"}),
            f"{LITE}.instance_type",
            "a HyperPod job runs on its group's instance type; remove instance_type, or set "
            "runs_on: training-job",
        ),
        (
            # g5 is never plan-backed: a plan refuses it.
            edited(
                micro_tj={"instance_type": None},
                micro_sft={"instance_type": "ml.g5.12xlarge", "replicas": None},
                micro_eval={"instance_type": "ml.g5.12xlarge"},
            ),
            f"{SFT}.instance_type",
            "training plans do not sell ml.g5.12xlarge (they sell ml.p4d.24xlarge, "
            "ml.p4de.24xlarge, ml.p5.48xlarge, ml.p5.4xlarge, ml.p5e.48xlarge, "
            "ml.p5en.48xlarge, ml.p6-b200.48xlarge, ml.p6-b300.48xlarge, "
            "ml.p6e-gb200.36xlarge, ml.trn1.32xlarge, ml.trn2.48xlarge); use on_demand: true "
            "with instance_type: ml.g5.12xlarge instead of plan",
        ),
        (
            edited(micro_sft={"technique": "cpt"}),
            f"{SFT}.technique",
            "cpt has no training-job image upstream: run it on a HyperPod restricted group "
            "(runs_on: hyperpod)",
        ),
        (
            edited(micro_eval={"evaluation": {"task": "llm-judge", "dataset": "e.jsonl"}}),
            f"{EVAL}.evaluation.task",
            "the llm-judge evaluation has no training-job image upstream: run it on a HyperPod "
            "restricted group (runs_on: hyperpod)",
        ),
        (
            edited(micro_sft={"replicas": 3}),
            f"{SFT}.replicas",
            "Nova Micro sft-lora on a ml.p5.48xlarge training job runs on 1, 2, 4, 8 instances "
            "(its InstanceCount); use one of them",
        ),
        (
            edited(micro_sft={"instance_type": "ml.p4d.24xlarge"}),
            f"{SFT}.instance_type",
            "ml.p4d.24xlarge differs from plan micro-tj's ml.p5.48xlarge, and a training job's "
            "InstanceType must be its plan's (use-training-plan-for-training-jobs-using-api-"
            "cli-sdk.html); use the plan's type or leave it out",
        ),
        (
            edited(distill={"instance_type": "ml.p5.48xlarge"}),
            f"{DISTILL}.instance_type",
            "Nova Micro distillation has no training-job recipe for ml.p5.48xlarge; use "
            "instance_type ml.r5.24xlarge",
        ),
    ],
    ids=[
        "plan-without-training-job-target",
        "neither-plan-nor-on-demand",
        "plan-and-on-demand",
        "on-demand-without-type",
        "instance-group",
        "hyperpod-on-demand",
        "hyperpod-instance-type",
        "plan-type-not-sold",
        "technique-refused",
        "task-refused",
        "replicas",
        "type-differs-from-plan",
        "distillation-type",
    ],
)
def test_each_training_job_mistake_is_one_sentence_at_its_field(data, path, message) -> None:
    found = issues(data)
    assert found.get(path) == message, found


def test_a_hyperpod_job_on_a_plan_without_hyperpod_cluster_is_refused() -> None:
    data = {
        "name": "dev",
        "region": "us-east-1",
        "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["use1-az4", "use1-az6"]}},
        "jobs": [
            {"name": "sft", "model": "micro", "technique": "sft-lora", "plan": "p",
             "hours_per_run": 5, "data": {"train": "t.jsonl"}},
        ],
        "capacity": {"training_plans": [{"name": "p", "target_resources": ["training-job"]}]},
    }  # fmt: skip
    assert issues(data)["jobs[0].plan"] == (
        "p is not bought for hyperpod-cluster, and a plan for another target cannot give a "
        "HyperPod job its capacity (plans are specific to their target resource); add "
        "hyperpod-cluster to its target_resources, or set runs_on: training-job"
    )
    data["jobs"][0]["runs_on"] = "training-job"  # the same plan serves a training job
    parse_config(data, approvals=False)


def test_a_region_without_training_job_images_is_refused() -> None:
    data = {
        "name": "dev",
        "region": "eu-west-2",
        "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["euw2-az1", "euw2-az2"]}},
        "jobs": [
            {"name": "d", "model": "micro", "technique": "distillation",
             "runs_on": "training-job", "on_demand": True, "instance_type": R5,
             "hours_per_run": 5},
        ],
    }  # fmt: skip
    assert issues(data)["region"] == (
        "Nova training-job images are published in us-east-1, us-west-2, ap-northeast-1, not "
        "eu-west-2; deploy the environment in one of those regions"
    )


@pytest.mark.parametrize(
    ("parent", "child", "technique", "message"),
    [
        (
            "hyperpod",
            "training-job",
            "sft-lora",
            "src trains on HyperPod and dst runs on a SageMaker training job, but a Nova "
            "checkpoint is continued only on the platform that trained it; set runs_on: hyperpod "
            "on dst, or start it from a job that runs on training-job",
        ),
        (
            "training-job",
            "hyperpod",
            "sft-lora",
            "src trains on a SageMaker training job and dst runs on HyperPod, but a Nova "
            "checkpoint is continued only on the platform that trained it; set runs_on: "
            "training-job on dst, or start it from a job that runs on hyperpod",
        ),
        (
            "hyperpod",
            "training-job",
            "evaluation",
            "src trains on HyperPod and dst runs on a SageMaker training job, but a Nova "
            "checkpoint is evaluated only on the platform that trained it; set runs_on: hyperpod "
            "on dst, or start it from a job that runs on training-job",
        ),
        ("training-job", "hyperpod", "evaluation", "is evaluated only on the platform"),
        ("training-job", "training-job", "sft-lora", None),
        ("hyperpod", "hyperpod", "evaluation", None),
    ],
    ids=["hp-to-tj", "tj-to-hp", "eval-hp-to-tj", "eval-tj-to-hp", "tj-to-tj", "hp-to-hp"],
)
def test_from_job_never_crosses_platforms(parent, child, technique, message) -> None:
    """AWS's Nova SDK: "SMHP-trained checkpoints can only be used on SMHP. SMTJ-trained
    checkpoints can only be used on SMTJ." (nova-customization-sdk util/platform_util.py
    validate_platform_compatibility)."""

    def place(spec: dict[str, Any], runs_on: str) -> dict[str, Any]:
        if runs_on == "training-job":
            return {**spec, "runs_on": "training-job", "plan": "micro-tj"}
        return {**spec, "plan": "hp"}

    src = {
        "name": "src",
        "model": "micro",
        "technique": "sft-lora",
        "hours_per_run": 4,
        "data": {"train": "t.jsonl"},
    }
    dst: dict[str, Any] = {
        "name": "dst",
        "model": "micro",
        "technique": technique,
        "hours_per_run": 2,
        "from": "job:src",
    }
    if technique == "evaluation":
        dst["evaluation"] = {"task": "general-text"}
    else:
        dst["data"] = {"train": "t.jsonl"}
    data = {
        "name": "dev",
        "region": "us-east-1",
        "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["use1-az4", "use1-az6"]}},
        "jobs": [place(src, parent), place(dst, child)],
        "capacity": {"training_plans": [
            {"name": "micro-tj", "target_resources": ["training-job"]},
            {"name": "hp"},
        ]},
    }  # fmt: skip
    try:
        parse_config(data)
        found: dict[str, str] = {}
    except ConfigError as exc:
        found = dict(exc.issues)
    if message is None:
        assert "jobs[1].from" not in found, found
    else:
        assert message in found.get("jobs[1].from", ""), found


def test_a_plan_for_both_targets_is_warned_about_not_refused() -> None:
    """Shipped tests buy a plan for [hyperpod-cluster, training-job] (test_config's
    approval edits), so validation warns: AWS says plans "are specific to their target
    resource ... and cannot be interchanged" (reserve-capacity-with-training-plans.html)."""
    data = edited(micro_tj={"target_resources": ["hyperpod-cluster", "training-job"]})
    config = parse_config(data, approvals=False)
    (warning,) = [w for w in warnings(config) if "target_resources" in w]
    assert warning.startswith(
        "capacity.training_plans[1].target_resources: micro-tj lists both hyperpod-cluster "
        "and training-job, but AWS says training plans"
    )
    assert not [w for w in warnings(parse_config(copy.deepcopy(BASE))) if "target" in w]
