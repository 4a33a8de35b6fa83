"""The Nova catalog: what it lists renders, what it does not is refused with the rule.

The expected recipes, instance types, replicas and images below are written from the
upstream facts (aws/sagemaker-hyperpod-recipes@263199555b2e recipes, metadata and
regional parameters; notes/nova-recipes-facts.md §1, §2, §5), not from catalog.yaml.
"""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

import pytest

from novapod import yamlsafe
from novapod.config import ConfigError, NovapodConfig, parse_config
from novapod.nova.catalog import CatalogError, catalog, parse_catalog
from novapod.nova.render import launch_spec, render_recipe

P5, P5EN, P4D = "ml.p5.48xlarge", "ml.p5en.48xlarge", "ml.p4d.24xlarge"
G12 = ("ml.g5.12xlarge", "ml.g6.12xlarge")
G48 = ("ml.g5.48xlarge", "ml.g6.48xlarge")
R5 = "ml.r5.24xlarge"
FT1 = "fine-tuning/nova/nova_1_0"
DISTILL = f"{FT1}/nova_pro/distill/nova_pro_1_0_r5_cpu_distill"
REWARD = "arn:aws:lambda:us-east-1:111122223333:function:reward"


def rows(types: tuple[str, ...], recipe: str, default: int, allowed: tuple[int, ...]) -> dict:
    return {t: (recipe, default, allowed) for t in types}


# (model, technique) -> instance type -> (recipe path, default replicas, allowed replicas).
# Excluded on purpose: the g5/g6 LoRA DPO recipes (no HyperPod image in the regional
# parameters, §1.3/§5.10) and the SMTJ-only RFT and MTRL recipes.
EXPECTED: dict[tuple[str, str], dict[str, tuple[str, int, tuple[int, ...]]]] = {
    ("micro", "cpt"): rows(
        (P5,), "training/nova/nova_1_0/nova_micro/CPT/nova_micro_1_0_p5x8_gpu_pretrain",
        8, (2, 4, 8, 16, 32),
    ),
    ("micro", "sft-lora"): {
        **rows((P5, P5EN, P4D), f"{FT1}/nova_micro/SFT/nova_micro_1_0_p5_p4d_gpu_lora_sft",
               2, (2, 4, 8)),
        **rows(G12, f"{FT1}/nova_micro/SFT/nova_micro_1_0_g5_g6_12x_gpu_lora_sft", 1, (1,)),
        **rows(G48, f"{FT1}/nova_micro/SFT/nova_micro_1_0_g5_g6_48x_gpu_lora_sft", 1, (1,)),
    },
    ("micro", "sft-full"): {
        **rows((P5, P5EN, P4D), f"{FT1}/nova_micro/SFT/nova_micro_1_0_p5_p4d_gpu_sft",
               2, (2, 4, 8)),
        **rows(G48, f"{FT1}/nova_micro/SFT/nova_micro_1_0_g5_g6_48x_gpu_sft", 1, (1,)),
    },
    ("micro", "dpo-lora"): rows(
        (P5, P5EN, P4D), f"{FT1}/nova_micro/DPO/nova_micro_1_0_p5_p4d_gpu_lora_dpo", 2, (2, 4, 8)
    ),
    ("micro", "dpo-full"): rows(
        (P5, P5EN, P4D), f"{FT1}/nova_micro/DPO/nova_micro_1_0_p5_p4d_gpu_dpo", 2, (2, 4, 8)
    ),
    ("micro", "ppo"): rows((P5,), f"{FT1}/nova_micro/PPO/nova_micro_1_0_p5_gpu_ppo", 2, (2,)),
    ("lite", "cpt"): rows(
        (P5,), "training/nova/nova_1_0/nova_lite/CPT/nova_lite_1_0_p5x16_gpu_pretrain",
        16, (4, 8, 16, 32),
    ),
    ("lite", "sft-lora"): {
        **rows((P5, P5EN, P4D), f"{FT1}/nova_lite/SFT/nova_lite_1_0_p5_p4d_gpu_lora_sft",
               4, (4, 8, 16)),
        **rows(G12, f"{FT1}/nova_lite/SFT/nova_lite_1_0_g5_g6_12x_gpu_lora_sft", 1, (1,)),
        **rows(G48, f"{FT1}/nova_lite/SFT/nova_lite_1_0_g5_g6_48x_gpu_lora_sft", 1, (1,)),
    },
    ("lite", "sft-full"): rows(
        (P5, P5EN, P4D), f"{FT1}/nova_lite/SFT/nova_lite_1_0_p5_p4d_gpu_sft", 4, (4, 8, 16)
    ),
    ("lite", "dpo-lora"): rows(
        (P5, P5EN, P4D), f"{FT1}/nova_lite/DPO/nova_lite_1_0_p5_p4d_gpu_lora_dpo", 4, (4, 8, 16)
    ),
    ("lite", "dpo-full"): rows(
        (P5, P5EN, P4D), f"{FT1}/nova_lite/DPO/nova_lite_1_0_p5_p4d_gpu_dpo", 4, (4, 8, 16)
    ),
    ("lite", "ppo"): rows((P5,), f"{FT1}/nova_lite/PPO/nova_lite_1_0_p5_gpu_ppo", 2, (2,)),
    ("pro", "cpt"): rows(
        (P5,), "training/nova/nova_1_0/nova_pro/CPT/nova_pro_1_0_p5x24_gpu_pretrain",
        24, (6, 12, 24),
    ),
    ("pro", "sft-lora"): rows(
        (P5, P5EN, P4D), f"{FT1}/nova_pro/SFT/nova_pro_1_0_p5_p4d_gpu_lora_sft", 6, (6, 12, 24)
    ),
    # Pro full-rank SFT has no p4d recipe.
    ("pro", "sft-full"): rows(
        (P5, P5EN), f"{FT1}/nova_pro/SFT/nova_pro_1_0_p5_gpu_sft", 6, (6, 12, 24)
    ),
    ("pro", "dpo-lora"): rows(
        (P5, P5EN, P4D), f"{FT1}/nova_pro/DPO/nova_pro_1_0_p5_p4d_gpu_lora_dpo", 6, (6, 12, 24)
    ),
    ("pro", "dpo-full"): {
        **rows((P5, P5EN), f"{FT1}/nova_pro/DPO/nova_pro_1_0_p5_gpu_dpo", 6, (6, 12, 24)),
        **rows((P4D,), f"{FT1}/nova_pro/DPO/nova_pro_1_0_p4d_gpu_dpo", 12, (12, 24)),
    },
    ("pro", "ppo"): rows((P5,), f"{FT1}/nova_pro/PPO/nova_pro_1_0_p5_gpu_ppo", 6, (6,)),
    # p5 only: the recipe's note "This recipe can run on p5.48xlarge" and
    # nova_metadata.json nova_lite_2_0_p5x8_gpu_pretrain instance_types [ml.p5.48xlarge].
    ("nova-2-lite", "cpt"): rows(
        (P5,), "training/nova/nova_2_0/nova_lite/CPT/nova_lite_2_0_p5x8_gpu_pretrain",
        8, (4, 8, 16, 32),
    ),
    # Replicas: the recipe comment allows {1,4,8,16,32}, the template parameters
    # {4,8,16,32} (CONFLICT): the intersection, from 4.
    ("nova-2-lite", "sft-lora"): rows(
        (P5, P5EN, P4D), "fine-tuning/nova/nova_2_0/nova_lite/SFT/nova_lite_2_0_p5_gpu_lora_sft",
        4, (4, 8, 16, 32),
    ),
    ("nova-2-lite", "sft-full"): rows(
        (P5, P5EN, P4D), "fine-tuning/nova/nova_2_0/nova_lite/SFT/nova_lite_2_0_p5_gpu_sft",
        4, (4, 8, 16, 32),
    ),
    ("nova-2-lite", "rft-lora"): rows(
        (P5, P5EN), "fine-tuning/nova/nova_2_0/nova_lite/RFT/nova_lite_2_0_p5_gpu_lora_rft",
        2, (2, 4, 8, 16),
    ),
    ("nova-2-lite", "rft-full"): rows(
        (P5, P5EN), "fine-tuning/nova/nova_2_0/nova_lite/RFT/nova_lite_2_0_p5_gpu_rft",
        2, (2, 4, 8, 16),
    ),
}  # fmt: skip
for _model in ("micro", "lite", "pro", "nova-2-lite"):
    EXPECTED[(_model, "distillation")] = rows((R5,), DISTILL, 1, (1,))
    _gen = (
        "nova_2_0/nova_lite/nova_lite_2_0"
        if _model == "nova-2-lite"
        else (f"nova_1_0/nova_{_model}/nova_{_model}_1_0")
    )
    EXPECTED[(_model, "evaluation")] = rows(
        (P5,), f"evaluation/nova/{_gen}_p5_48xl_gpu_{{suffix}}", 1, (1,)
    )

# task -> (recipe suffix, models it is published for), from the evaluation table (§1.7).
TASKS = {
    "general-text": ("general_text_benchmark_eval", ("micro", "lite", "pro", "nova-2-lite")),
    "multimodal": ("general_multi_modal_benchmark_eval", ("lite", "pro", "nova-2-lite")),
    "gen-qa": ("bring_your_own_dataset_eval", ("micro", "lite", "pro", "nova-2-lite")),
    "llm-judge": ("llm_judge_eval", ("micro", "lite", "pro")),
    "rubric-judge": ("rubric_llm_judge_eval", ("nova-2-lite",)),
    "rft-eval": ("rft_eval", ("micro", "lite", "pro", "nova-2-lite")),
}
MODELS = ("micro", "lite", "pro", "nova-2-lite")
TECHNIQUES = (
    "cpt", "sft-lora", "sft-full", "dpo-lora", "dpo-full", "ppo", "rft-lora", "rft-full",
    "distillation", "evaluation",
)  # fmt: skip
ALL_TYPES = (P5, P5EN, P4D, *G12, *G48, R5, "ml.p4de.24xlarge", "ml.trn1.32xlarge")
COMBINATIONS = [
    (model, technique, instance_type)
    for (model, technique), types in EXPECTED.items()
    for instance_type in types
]


def test_the_catalog_lists_exactly_the_upstream_recipes() -> None:
    nova = catalog()
    listed = {
        (model, technique): {
            t: (v.recipe, v.default_replicas, v.allowed_replicas)
            for v in nova.variants[(model, technique)]
            for t in v.instance_types
        }
        for (model, technique) in nova.variants
    }
    assert listed == EXPECTED


def _job(model: str, technique: str, task: str | None) -> dict[str, Any]:
    job: dict[str, Any] = {"name": "j", "model": model, "technique": technique}
    if technique == "evaluation":
        assert task is not None
        evaluation: dict[str, Any] = {"task": task}
        if task not in ("general-text", "multimodal"):
            evaluation["dataset"] = "eval/data.jsonl"
        if task == "rft-eval":
            evaluation["reward_lambda_arn"] = REWARD
        job["evaluation"] = evaluation
    elif technique != "distillation":
        job["data"] = {"train": "train.jsonl"}
    if technique.startswith("rft-"):
        job["reward_lambda_arn"] = REWARD
    if technique != "ppo":
        job["hours_per_run"] = 5
    return job


def minimal_config(
    model: str, technique: str, instance_type: str, task: str | None = None
) -> NovapodConfig:
    """A valid config whose one job runs on `instance_type`: through an adopted plan of
    that type where training plans sell it, else sized on the recipe's first type (a
    g5/g6/r5 job cannot name its type in a config: restricted groups need a plan)."""
    job = _job(model, technique, task)
    data: dict[str, Any] = {
        "name": "dev",
        "region": "us-east-1",
        "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["use1-az4", "use1-az6"]}},
        "jobs": [job],
    }
    family = instance_type.split(".")[1]
    if family in catalog().plan_families:
        needed = catalog().variant(model, technique, instance_type).instance_count()
        count = next(c for c in (1, 2, 4, 8, 16, 32, 64) if c >= needed)  # counts plans sell
        data["capacity"] = {
            "training_plans": [
                {
                    "name": "p",
                    "existing_arn": "arn:aws:sagemaker:us-east-1:111122223333:training-plan/p",
                    "instance_type": instance_type,
                    "instance_count": count,
                }
            ]
        }
        job["plan"] = "p"
    return parse_config(data)


@pytest.mark.parametrize(("model", "technique", "instance_type"), COMBINATIONS, ids=str)
def test_every_listed_combination_renders(model, technique, instance_type) -> None:
    recipe_path, default, _ = EXPECTED[(model, technique)][instance_type]
    tasks = [t for t, (_, models) in TASKS.items() if model in models]
    for task in tasks if technique == "evaluation" else [None]:
        config = minimal_config(model, technique, instance_type, task)
        (job,) = config.jobs
        # Where the config names the type (its plan), the renderer finds it by itself.
        named = instance_type.split(".")[1] in catalog().plan_families
        variant = None if named else catalog().variant(model, technique, instance_type)
        recipe = render_recipe(config, job, variant)
        assert recipe["run"]["name"] == "j"
        if technique == "distillation":
            with pytest.raises(CatalogError, match="distillation cannot run on HyperPod"):
                launch_spec(config, job, instance_type)
            continue
        replicas = "actor_train_replicas" if technique == "ppo" else "replicas"
        assert recipe["run"][replicas] == default
        spec = launch_spec(config, job, None if named else instance_type)
        suffix = TASKS[task][0] if task else ""
        assert spec["recipe"] == recipe_path.replace("{suffix}", suffix)
        assert spec["instance_type"] == spec["override_parameters"]["instance_type"]
        assert spec["instance_type"] == instance_type
        assert spec["override_parameters"]["container"].startswith(
            "708977205387.dkr.ecr.us-east-1.amazonaws.com/"
        )


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("technique", TECHNIQUES)
def test_every_unlisted_combination_is_refused_with_its_rule(model, technique) -> None:
    nova = catalog()
    display = nova.models[model].display_name
    listed = EXPECTED.get((model, technique))
    if listed is None:
        with pytest.raises(CatalogError) as info:
            nova.variant(model, technique)
        assert str(info.value).startswith(
            f"{technique} is not published for {display} on HyperPod; use one of "
        )
        return
    for instance_type in ALL_TYPES:
        if instance_type in listed:
            continue
        with pytest.raises(CatalogError) as info:
            nova.variant(model, technique, instance_type)
        assert str(info.value) == (
            f"{display} {technique} has no recipe for {instance_type}; use a group of "
            f"{', '.join(sorted(listed))}"
        )


def test_nova_2_cpt_on_p5en_is_refused() -> None:
    with pytest.raises(CatalogError) as info:
        catalog().variant("nova-2-lite", "cpt", P5EN)
    assert str(info.value) == (
        "Nova 2 Lite cpt has no recipe for ml.p5en.48xlarge; use a group of ml.p5.48xlarge"
    )


# (model, technique) -> instance type -> (longest sequence, the multiple it must be in),
# from the recipes' max_length comments and, for Nova 1 SFT on p5, the user guide's
# compute tables (65536 on 2 / 4 / 6 nodes, Lite LoRA 32768).
SEQUENCES = {
    ("micro", "sft-lora"): {P5: (65536, None), P5EN: (32768, None), P4D: (32768, None),
                            G12[0]: (8192, 1024), G48[1]: (8192, 1024)},
    ("micro", "sft-full"): {P5: (65536, None), P5EN: (32768, None), P4D: (32768, None),
                            G48[0]: (4096, 1024)},
    ("lite", "sft-lora"): {P5: (32768, None), P5EN: (32768, None), P4D: (32768, None),
                           G12[1]: (8192, 1024)},
    ("lite", "sft-full"): {P5: (65536, None), P5EN: (32768, None), P4D: (32768, None)},
    ("pro", "sft-lora"): {P5: (65536, None), P5EN: (32768, None), P4D: (32768, None)},
    ("pro", "sft-full"): {P5: (65536, None), P5EN: (32768, None)},
    ("micro", "dpo-lora"): {P5: (32768, 1024), P5EN: (32768, 1024), P4D: (16384, 1024)},
    ("lite", "dpo-full"): {P5: (32768, 1024), P4D: (16384, 1024)},
    ("pro", "dpo-full"): {P5: (32768, 1024), P4D: (16384, 1024)},
    ("nova-2-lite", "sft-lora"): {P5: (65536, None), P4D: (65536, None)},
    ("nova-2-lite", "cpt"): {P5: (8192, None)},
}  # fmt: skip


@pytest.mark.parametrize(("model", "technique"), SEQUENCES, ids=str)
def test_sequence_limits_per_instance_type(model, technique) -> None:
    for instance_type, (longest, multiple) in SEQUENCES[(model, technique)].items():
        found = catalog().variant(model, technique, instance_type)
        assert (found.max_length, found.max_length_multiple) == (longest, multiple), instance_type


def test_only_nova_2_cpt_and_sft_take_validation_data() -> None:
    # The recipes whose run block has validation_data_s3_path (training/nova/nova_2_0/
    # nova_lite/CPT/..., fine-tuning/nova/nova_2_0/nova_lite/SFT/...); no other does.
    takers = {key for key, found in catalog().variants.items() if found[0].validation_data}
    assert takers == {("nova-2-lite", "cpt"), ("nova-2-lite", "sft-lora"),
                      ("nova-2-lite", "sft-full")}  # fmt: skip


def test_ppo_on_p4d_is_refused() -> None:
    with pytest.raises(CatalogError) as info:
        catalog().variant("pro", "ppo", P4D)
    assert str(info.value) == (
        "Nova Pro ppo has no recipe for ml.p4d.24xlarge; use a group of ml.p5.48xlarge"
    )


def test_dpo_on_nova_2_and_rft_on_nova_1_are_refused() -> None:
    with pytest.raises(CatalogError) as info:
        catalog().variant("nova-2-lite", "dpo-lora")
    assert str(info.value) == (
        "dpo-lora is not published for Nova 2 Lite on HyperPod; use one of cpt, sft-lora, "
        "sft-full, rft-lora, rft-full, distillation, evaluation, or another model"
    )
    with pytest.raises(CatalogError) as info:
        catalog().variant("lite", "rft-full")
    assert str(info.value) == (
        "rft-full is not published for Nova Lite on HyperPod; use one of cpt, sft-lora, "
        "sft-full, dpo-lora, dpo-full, ppo, distillation, evaluation, or another model"
    )


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("model", MODELS)
def test_evaluation_tasks_per_model(task, model) -> None:
    suffix, models = TASKS[task]
    if model in models:
        assert catalog().evaluation_task(task, model).recipe_suffix == suffix
        return
    names = ", ".join(catalog().models[m].display_name for m in models)
    with pytest.raises(CatalogError) as info:
        catalog().evaluation_task(task, model)
    display = catalog().models[model].display_name
    assert str(info.value) == (
        f"the {task} evaluation is published for {names} only, not {display}; pick another "
        "task or model"
    )


@pytest.mark.parametrize(
    ("model", "task", "message"),
    [
        ("micro", "multimodal", "published for Nova Lite, Nova Pro, Nova 2 Lite only, not Nova Micro"),
        ("pro", "rubric-judge", "published for Nova 2 Lite only, not Nova Pro"),
        ("nova-2-lite", "llm-judge", "published for Nova Micro, Nova Lite, Nova Pro only, not Nova 2 Lite"),
    ],
)  # fmt: skip
def test_a_config_with_an_unpublished_evaluation_is_refused(model, task, message) -> None:
    job = _job(model, "evaluation", task)
    data = {
        "name": "dev",
        "region": "us-east-1",
        "network": {"vpc": {"zone_ids": ["use1-az4", "use1-az6"]}},
        "jobs": [job],
    }
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert (
        "jobs[0].evaluation.task",
        f"the {task} evaluation is {message}; pick another task or model",
    ) in info.value.issues


# -------------------------------------------------------------------------- images


@pytest.mark.parametrize(
    ("model", "technique", "region", "task", "uri"),
    [
        ("lite", "sft-lora", "us-east-1", None,
         "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-fine-tune-repo:SM-HP-SFT-latest"),
        ("nova-2-lite", "sft-full", "us-west-2", None,
         "176779409107.dkr.ecr.us-west-2.amazonaws.com/nova-fine-tune-repo:SM-HP-SFT-V2-latest"),
        ("pro", "dpo-full", "ap-northeast-1", None,
         "878185805882.dkr.ecr.ap-northeast-1.amazonaws.com/nova-fine-tune-repo:SM-HP-DPO-latest"),
        ("micro", "cpt", "us-west-2", None,
         "176779409107.dkr.ecr.us-west-2.amazonaws.com/nova-fine-tune-repo:HP-CPT-latest"),
        ("nova-2-lite", "cpt", "ap-northeast-1", None,
         "878185805882.dkr.ecr.ap-northeast-1.amazonaws.com/nova-fine-tune-repo:SM-HP-CPT-V2-latest"),
        ("pro", "ppo", "ap-northeast-1", None,
         "878185805882.dkr.ecr.ap-northeast-1.amazonaws.com/nova-fine-tune-repo:SMHP-PPO-TRAIN-latest"),
        ("nova-2-lite", "rft-lora", "us-east-1", None,
         "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-fine-tune-repo:SM-HP-RFT-TRAIN-V2-latest"),
        ("micro", "evaluation", "us-west-2", "general-text",
         "176779409107.dkr.ecr.us-west-2.amazonaws.com/nova-evaluation-repo:SM-HP-Eval-V2-latest"),
        ("lite", "evaluation", "ap-northeast-1", "gen-qa",
         "878185805882.dkr.ecr.ap-northeast-1.amazonaws.com/nova-evaluation-repo:SM-HP-Eval-V2-latest"),
        # No regional-parameters entry: the one evaluation tag upstream names.
        ("pro", "evaluation", "us-east-1", "llm-judge",
         "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-evaluation-repo:SM-HP-Eval-V2-latest"),
        ("nova-2-lite", "evaluation", "us-east-1", "rubric-judge",
         "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-evaluation-repo:SM-HP-Eval-V2-latest"),
    ],
)  # fmt: skip
def test_image_uris_per_region(model, technique, region, task, uri) -> None:
    assert catalog().image(model, technique, region, task) == uri


def test_eu_west_2_has_no_training_images() -> None:
    with pytest.raises(CatalogError) as info:
        catalog().image("lite", "sft-lora", "eu-west-2")
    assert str(info.value) == (
        "region eu-west-2 has no Nova training images (the Nova registry there "
        "(470633809225) holds only the init and inference images); use one of us-east-1, "
        "us-west-2, ap-northeast-1"
    )


def test_a_region_without_any_nova_registry_is_refused() -> None:
    with pytest.raises(CatalogError) as info:
        catalog().image("lite", "sft-lora", "eu-north-1")
    assert str(info.value) == (
        "Nova training images are published in us-east-1, us-west-2, ap-northeast-1, not "
        "eu-north-1; deploy the environment in one of those regions"
    )


@pytest.mark.parametrize(
    ("model", "technique", "display"),
    [
        ("lite", "ppo", "proximal policy optimization"),
        ("nova-2-lite", "rft-lora", "reinforcement fine-tuning (LoRA)"),
        ("nova-2-lite", "rft-full", "reinforcement fine-tuning (full rank)"),
    ],
)
def test_ppo_and_rft_are_refused_in_us_west_2(model, technique, display) -> None:
    with pytest.raises(CatalogError) as info:
        catalog().image(model, technique, "us-west-2")
    assert str(info.value) == (
        f"{display} runs only in us-east-1, ap-northeast-1 (the recipe launcher has no side "
        "images for us-west-2); use one of those regions"
    )


def test_distillation_is_not_launchable() -> None:
    assert catalog().techniques["distillation"].not_launchable is not None
    with pytest.raises(CatalogError) as info:
        catalog().image("pro", "distillation", "us-east-1")
    assert str(info.value).startswith(
        "distillation cannot run on HyperPod: upstream publishes distillation only for "
        "SageMaker training jobs"
    )


# -------------------------------------------------------------------------- loader


def _document() -> dict[str, Any]:
    text = (resources.files("novapod.nova") / "catalog.yaml").read_text(encoding="utf-8")
    return copy.deepcopy(yamlsafe.load(text))


def test_the_shipped_document_parses() -> None:
    assert parse_catalog(_document()).models["micro"].display_name == "Nova Micro"


def _mangle_unknown_model(doc: dict[str, Any]) -> None:
    doc["variants"]["mega"] = doc["variants"]["micro"]


def _mangle_default_replicas(doc: dict[str, Any]) -> None:
    doc["variants"]["micro"]["cpt"][0]["replicas"] = {"default": 3, "allowed": [2, 4, 8]}


def _mangle_unknown_technique(doc: dict[str, Any]) -> None:
    doc["variants"]["micro"]["orpo"] = doc["variants"]["micro"]["cpt"]


def _mangle_ppo_roles(doc: dict[str, Any]) -> None:
    del doc["variants"]["micro"]["ppo"][0]["roles"]["am"]


def _mangle_twice_listed_type(doc: dict[str, Any]) -> None:
    doc["variants"]["micro"]["sft-lora"][1]["instance_types"].append("ml.p5.48xlarge")


def _mangle_validation_data(doc: dict[str, Any]) -> None:
    doc["variants"]["micro"]["sft-lora"][0]["validation_data"] = True


def _mangle_shape(doc: dict[str, Any]) -> None:
    doc["techniques"]["cpt"]["hyperparameters"][1] = ["nova1-warp"]


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (_mangle_unknown_model, "catalog.yaml: variants name unknown model 'mega'"),
        (
            _mangle_default_replicas,
            "catalog.yaml: micro cpt training/nova/nova_1_0/nova_micro/CPT/"
            "nova_micro_1_0_p5x8_gpu_pretrain: default replicas 3 is not allowed",
        ),
        (_mangle_unknown_technique, "catalog.yaml: micro has unknown technique 'orpo'"),
        (_mangle_ppo_roles, "PPO roles must be exactly cm, rm, am, actor_train, actor_generation"),
        (_mangle_twice_listed_type, "catalog.yaml: micro sft-lora: ml.p5.48xlarge twice"),
        (_mangle_shape, "catalog.yaml: cpt names unknown shape 'nova1-warp'"),
        (_mangle_validation_data, "catalog.yaml: micro sft-lora: validation_data differs"),
    ],
    ids=lambda v: getattr(v, "__name__", "message"),
)
def test_the_loader_rejects_a_malformed_document(mangle, message) -> None:
    doc = _document()
    mangle(doc)
    with pytest.raises(ValueError) as info:
        parse_catalog(doc)
    assert message in str(info.value)
