"""The training-job half of the Nova catalog: what runs on SageMaker training jobs, on
which instance types and counts, with which image; everything else refused with its rule.

The expected recipes and counts are written from the sources, not from catalog.yaml:
the recipes and regional parameters of aws/sagemaker-hyperpod-recipes@263199555b2e (read
here through novapod/data/nova_upstream.yaml as plain YAML, not through the catalog) and
AWS's "Selecting instance type and count" table for training jobs (Fine-tune Nova 1.0,
https://docs.aws.amazon.com/nova/latest/userguide/nova-fine-tune-1.html).
"""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import pytest
import yaml

from novapod import yamlsafe
from novapod.nova.catalog import CatalogError, catalog, parse_catalog
from tests.conftest import ROOT

FACTS: dict[str, Any] = yaml.safe_load((ROOT / "novapod/data/nova_upstream.yaml").read_text())
P5, P5EN, P4D, R5 = "ml.p5.48xlarge", "ml.p5en.48xlarge", "ml.p4d.24xlarge", "ml.r5.24xlarge"
G5_12, G6_12, G5_48, G6_48 = "ml.g5.12xlarge", "ml.g6.12xlarge", "ml.g5.48xlarge", "ml.g6.48xlarge"
TASK_SUFFIX = {
    "general-text": "general_text_benchmark_eval",
    "multimodal": "general_multi_modal_benchmark_eval",
    "gen-qa": "bring_your_own_dataset_eval",
}
SMTJ = "SM-TJ-"


def combinations() -> list[tuple[str, str, str | None]]:
    """(model, technique, task) of every training-job entry of the catalog."""
    nova = catalog()
    out: list[tuple[str, str, str | None]] = []
    for model, technique in nova.training_jobs.variants:
        if technique != "evaluation":
            out.append((model, technique, None))
            continue
        for task in nova.training_jobs.evaluation_tasks:
            if model in nova.evaluation_tasks[task].models:
                out.append((model, technique, task))
    return out


COMBINATIONS = combinations()


@pytest.mark.parametrize(("model", "technique", "task"), COMBINATIONS, ids=str)
def test_every_training_job_recipe_and_image_is_one_upstream_publishes(
    model: str, technique: str, task: str | None
) -> None:
    published = FACTS["training_jobs"]
    for variant in catalog().training_job_variants(model, technique, task):
        recipe = variant.recipe.replace("{suffix}", TASK_SUFFIX[task] if task else "")
        assert recipe in published, recipe
        for region in catalog().registries:
            if region in published[recipe]["regions"]:
                image = catalog().training_job_image(model, technique, region, task)
                assert image == published[recipe]["image"]["regions"][region]
                assert SMTJ in image


def test_every_upstream_training_job_recipe_is_in_the_catalog() -> None:
    """Nothing upstream runs on training jobs that the catalog leaves out, except the
    Nova Premier distillation (novapod's students distil from the Nova Pro recipe)."""
    listed = {
        v.recipe.replace("{suffix}", TASK_SUFFIX[t] if t else "")
        for m, tech, t in COMBINATIONS
        for v in catalog().training_job_variants(m, tech, t)
    }
    premier = "fine-tuning/nova/nova_1_0/nova_premier/distill/nova_premier_1_0_r5_cpu_distill"
    assert set(FACTS["training_jobs"]) - listed == {premier}


def test_training_plans_sell_exactly_botocores_reserved_capacity_types() -> None:
    """The catalog's literal list is the SageMaker model's ReservedCapacityInstanceType
    enum, read from botocore's data files (a botocore upgrade that adds a type fails this)."""
    import botocore.loaders

    model = botocore.loaders.Loader().load_service_model("sagemaker", "service-2")
    enum = model["shapes"]["ReservedCapacityInstanceType"]["enum"]
    assert sorted(catalog().training_jobs.plan_instance_types) == sorted(enum)
    for on_demand_only in (G5_12, G6_12, G5_48, G6_48, R5):
        assert on_demand_only not in enum


# (model, technique) -> instance type -> (default, allowed): the AWS table for Nova 1;
# Nova 2 from the recipes' replicas and their comments.
EXPECTED_COUNTS: dict[tuple[str, str], dict[str, tuple[int, tuple[int, ...]]]] = {
    ("micro", "sft-lora"): {P5: (1, (1, 2, 4, 8)), P5EN: (1, (1, 2, 4, 8)), P4D: (2, (2, 4, 8)),
                            G5_12: (1, (1,)), G6_48: (1, (1,))},
    ("micro", "sft-full"): {P5: (1, (1, 2, 4, 8)), P4D: (2, (2, 4, 8)), G5_48: (1, (1,))},
    ("micro", "dpo-lora"): {P5: (2, (2, 4, 8)), P4D: (2, (2, 4, 8)), G6_12: (1, (1,)),
                            G5_48: (1, (1,))},
    ("micro", "dpo-full"): {P5EN: (2, (2, 4, 8))},
    ("lite", "sft-lora"): {P5: (1, (1, 4, 8, 16)), P4D: (4, (4, 8, 16)), G5_12: (1, (1,))},
    ("lite", "sft-full"): {P5: (2, (2, 4, 8, 16)), P4D: (4, (4, 8, 16))},
    ("lite", "dpo-lora"): {P5: (4, (4, 8, 16)), G6_48: (1, (1,))},
    ("lite", "dpo-full"): {P4D: (4, (4, 8, 16))},
    ("pro", "sft-lora"): {P5: (3, (3, 6, 12, 24)), P4D: (6, (6, 12, 24))},
    ("pro", "sft-full"): {P5EN: (6, (6, 12, 24))},
    ("pro", "dpo-lora"): {P5: (4, (4, 8, 16)), P4D: (6, (6, 12, 24))},
    ("pro", "dpo-full"): {P5: (4, (4, 8, 16)), P4D: (12, (12, 24))},
    ("nova-2-lite", "sft-lora"): {P5: (1, (1, 4, 8, 16, 32))},
    ("nova-2-lite", "sft-full"): {P4D: (4, (4, 8, 16, 32))},
    ("nova-2-lite", "rft-lora"): {P5EN: (4, (4,))},
    ("nova-2-lite", "rft-full"): {P5: (4, (4,))},
    ("pro", "distillation"): {R5: (1, (1,))},
}  # fmt: skip


@pytest.mark.parametrize(("key", "types"), EXPECTED_COUNTS.items(), ids=str)
def test_instance_counts_are_the_training_job_table(key, types) -> None:
    for instance_type, (default, allowed) in types.items():
        variant = catalog().training_job_variant(*key, instance_type)
        assert (variant.default_replicas, variant.allowed_replicas) == (default, allowed)


def test_the_g5_g6_dpo_recipes_are_training_job_only() -> None:
    """Upstream gives them no HyperPod (k8s) image: the HyperPod catalog refuses g5/g6 DPO."""
    with pytest.raises(CatalogError):
        catalog().variant("micro", "dpo-lora", G5_12)
    assert (
        catalog()
        .training_job_variant("micro", "dpo-lora", G5_12)
        .recipe.endswith("nova_micro_1_0_g5_g6_12x_gpu_lora_dpo")
    )


def test_distillation_runs_only_on_an_r5_training_job() -> None:
    for model in ("micro", "lite", "pro", "nova-2-lite"):
        (variant,) = catalog().training_job_variants(model, "distillation")
        assert variant.instance_types == (R5,)
        assert R5 not in catalog().training_jobs.plan_instance_types  # so: on demand
    assert catalog().training_job_image("lite", "distillation", "us-west-2") == (
        "176779409107.dkr.ecr.us-west-2.amazonaws.com/nova-distillation-repo:SM-TJ-DISTILL-LATEST"
    )


@pytest.mark.parametrize(
    ("model", "technique", "task", "rule"),
    [
        (
            "micro",
            "cpt",
            None,
            "cpt has no training-job image upstream: run it on a HyperPod restricted group",
        ),
        ("nova-2-lite", "cpt", None, "cpt has no training-job image upstream"),
        (
            "pro",
            "ppo",
            None,
            "ppo has no training-job image upstream: run it on a HyperPod restricted group",
        ),
        (
            "lite",
            "evaluation",
            "llm-judge",
            "the llm-judge evaluation has no training-job "
            "image upstream: run it on a HyperPod restricted group",
        ),
        (
            "nova-2-lite",
            "evaluation",
            "rubric-judge",
            "the rubric-judge evaluation has no training-job image upstream",
        ),
        ("micro", "evaluation", "rft-eval", "the rft-eval evaluation has no training-job image"),
        (
            "micro",
            "rft-lora",
            None,
            "rft-lora has no training-job recipe for Nova Micro "
            "upstream; run it on a HyperPod restricted group",
        ),
        ("pro", "dpo-lora", None, None),
    ],
    ids=str,
)
def test_what_does_not_run_on_training_jobs_is_refused_with_its_rule(
    model, technique, task, rule
) -> None:
    if rule is None:  # a control: this one runs
        catalog().training_job_variants(model, technique, task)
        return
    with pytest.raises(CatalogError) as info:
        catalog().training_job_variants(model, technique, task)
    assert str(info.value).startswith(rule)


def test_every_technique_and_task_either_runs_on_training_jobs_or_has_a_rule() -> None:
    nova = catalog()
    for model in nova.models:
        for technique in nova.techniques:
            tasks = [t for t, s in nova.evaluation_tasks.items() if model in s.models]
            for task in tasks if technique == "evaluation" else [None]:
                try:
                    variants = nova.training_job_variants(model, technique, task)
                except CatalogError as exc:
                    assert str(exc).endswith(
                        ("run it on a HyperPod restricted group",)
                    ) or "on training jobs" in str(exc), (model, technique, task, str(exc))
                    continue
                assert variants, (model, technique)


def test_a_type_without_a_training_job_recipe_names_the_ones_it_has() -> None:
    with pytest.raises(CatalogError) as info:
        catalog().training_job_variant("pro", "sft-full", P4D)
    assert str(info.value) == (
        "Nova Pro sft-full has no training-job recipe for ml.p4d.24xlarge; use instance_type "
        "ml.p5.48xlarge, ml.p5en.48xlarge"
    )


@pytest.mark.parametrize("region", ["eu-west-2", "eu-central-1", "sa-east-1"])
def test_regions_without_sm_tj_images_are_refused(region: str) -> None:
    with pytest.raises(CatalogError) as info:
        catalog().training_job_image("micro", "sft-lora", region)
    assert str(info.value) == (
        "Nova training-job images are published in us-east-1, us-west-2, ap-northeast-1, "
        f"not {region}; deploy the environment in one of those regions"
    )


def _document() -> dict[str, Any]:
    text = (resources.files("novapod.nova") / "catalog.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yamlsafe.load(text))


def test_the_loader_refuses_a_technique_neither_imaged_nor_refused() -> None:
    data = _document()
    del data["training_jobs"]["refused"]["cpt"]
    with pytest.raises(ValueError, match="must image or refuse every technique"):
        parse_catalog(data)
    data = _document()
    data["training_jobs"]["evaluation_tasks"].remove("gen-qa")
    with pytest.raises(ValueError, match="must offer or refuse every task"):
        parse_catalog(data)
