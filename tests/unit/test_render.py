"""Rendered Nova recipes and launch specs, field by field, against the upstream recipes.

Every expected recipe below is written by hand from the upstream recipes
(aws/sagemaker-hyperpod-recipes@263199555b2e, recipes_collection/recipes/{training,
fine-tuning,evaluation}/nova; summarised with sources in notes/nova-recipes-facts.md
§0, §1, §1b, §2, §3): the recipe's defaults, with the values each job sets at the
upstream path of its family (Nova 1 `training_config.model.optim.lr`, Nova 2 CPT
`training_config.optim.lr`, Nova 2 SFT `training_config.optim_config.lr`, RFT
`training_config.trainer.optim_config.lr`, ...). Never from the catalog or the renderer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from novapod.config import NovapodConfig, load_config, parse_config
from novapod.nova.catalog import CatalogError
from novapod.nova.render import bundle, launch_spec, render_recipe
from tests.conftest import ROOT

ZONES = {
    "us-east-1": ["use1-az4", "use1-az6"],
    "us-west-2": ["usw2-az1", "usw2-az2"],
    "ap-northeast-1": ["apne1-az1", "apne1-az4"],
}
REWARD = "arn:aws:lambda:us-east-1:111122223333:function:reward"
METRICS = "arn:aws:lambda:us-east-1:111122223333:function:metrics"
US_EAST_1 = "708977205387.dkr.ecr.us-east-1.amazonaws.com"
US_WEST_2 = "176779409107.dkr.ecr.us-west-2.amazonaws.com"
AP_NORTHEAST_1 = "878185805882.dkr.ecr.ap-northeast-1.amazonaws.com"
NO_MLFLOW = {"mlflow_tracking_uri": "", "mlflow_experiment_name": "", "mlflow_run_name": ""}


def config_of(*jobs: dict[str, Any], region: str = "us-east-1") -> NovapodConfig:
    """A config without a hyperpod section: jobs are sized on the recipe's first type."""
    return parse_config(
        {
            "name": "dev",
            "region": region,
            "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ZONES[region]}},
            "jobs": [{"hours_per_run": 10, **job} for job in jobs],
        }
    )


def rendered(
    *jobs: dict[str, Any], region: str = "us-east-1"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The recipe and launch spec of the LAST job."""
    config = config_of(*jobs, region=region)
    job = config.jobs[-1]
    return render_recipe(config, job), launch_spec(config, job)


def flat(tree: Any, prefix: str = "") -> dict[str, tuple[str, Any]]:
    """Dotted path -> (type name, value) of every leaf: compared field by field, type too
    (so "null" is not None, "20000" is not 20000, 1 is not 1.0)."""
    if isinstance(tree, dict) and tree:
        out: dict[str, tuple[str, Any]] = {}
        for key, value in tree.items():
            out.update(flat(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): (type(tree).__name__, tree)}


def assert_fields(actual: dict[str, Any], expected_yaml: str) -> None:
    expected = flat(yaml.safe_load(expected_yaml))
    got = flat(actual)
    assert sorted(got) == sorted(expected), "recipe fields differ"
    for path, value in expected.items():
        assert got[path] == value, path


def overrides_of(spec: dict[str, Any]) -> dict[str, Any]:
    """The override parameters as the CLI receives them (the JSON in the command)."""
    start = spec["commands"][1]
    assert start[start.index("--override-parameters") - 1] == spec["recipe"]
    document = json.loads(start[start.index("--override-parameters") + 1])
    assert document == spec["override_parameters"]
    return dict(document)


def assert_commands(spec: dict[str, Any], region: str) -> None:
    """Two commands: connect, then start-job with the recipe and its overrides (no group
    in these configs, so no label selector)."""
    connect, start = spec["commands"]
    assert connect == [
        "hyperpod", "connect-cluster", "--cluster-name", "${ClusterName}",
        "--region", region, "--namespace", "nova-jobs",
    ]  # fmt: skip
    recipe = spec["recipe"]
    assert start[:6] == ["hyperpod", "start-job", "--namespace", "nova-jobs", "--recipe", recipe]
    assert start[6] == "--override-parameters"
    assert len(start) == 8
    assert spec["label_selector"] is None


# ------------------------------------------------------------------------ training

NOVA1_OPTIM = """
      name: distributed_fused_adam
      adam_w_mode: true
      betas: [0.9, 0.999]
"""


def test_cpt_nova1_micro() -> None:
    recipe, spec = rendered(
        {
            "name": "cpt",
            "model": "micro",
            "technique": "cpt",
            "replicas": 4,
            "data": {"train": "cpt/train.jsonl"},
            "hyperparameters": {"max_epochs": 3, "learning_rate": 2.0e-5, "warmup_steps": 20},
        }
    )
    assert_fields(
        recipe,
        """
run:
  name: cpt
  model_type: amazon.nova-micro-v1:0:128k
  model_name_or_path: nova-micro/prod
  replicas: 4
  data_s3_path: s3://${DataBucket}/cpt/train.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/cpt/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: cpt
training_config:
  max_length: 8192
  global_batch_size: 256
  trainer: {max_epochs: 3}
  model:
    hidden_dropout: 0.0
    attention_dropout: 0.0
    ffn_dropout: 0.0
    optim:
      lr: 2.0e-5
      name: distributed_fused_adam
      adam_w_mode: true
      eps: 1.0e-6
      weight_decay: 0.0
      betas: [0.9, 0.999]
      sched: {warmup_steps: 20, constant_steps: 0, min_lr: 1.0e-6}
""",
    )
    assert (
        spec["recipe"] == "training/nova/nova_1_0/nova_micro/CPT/nova_micro_1_0_p5x8_gpu_pretrain"
    )
    assert overrides_of(spec) == {
        "container": f"{US_EAST_1}/nova-fine-tune-repo:HP-CPT-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "cpt",
        "recipes.run.model_name_or_path": "nova-micro/prod",
        "recipes.run.data_s3_path": "s3://${DataBucket}/cpt/train.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/cpt/",
        "recipes.run.replicas": 4,
        "recipes.training_config.trainer.max_epochs": 3,
        "recipes.training_config.model.optim.lr": 2.0e-5,
        "recipes.training_config.model.optim.sched.warmup_steps": 20,
    }
    assert_commands(spec, "us-east-1")


def test_cpt_nova2_with_mlflow() -> None:
    recipe, spec = rendered(
        {
            "name": "cpt2",
            "model": "nova-2-lite",
            "technique": "cpt",
            "mlflow": True,
            "data": {"train": "s3://corpus-bucket/cpt/", "validation": "cpt/val.jsonl"},
            "hyperparameters": {
                "max_steps": 200,
                "learning_rate": 3.0e-5,
                "min_learning_rate": 2.0e-6,
                "weight_decay": 0.1,
            },
        }
    )
    assert_fields(
        recipe,
        """
run:
  name: cpt2
  model_type: amazon.nova-2-lite-v1:0:256k
  model_name_or_path: nova-lite-2/prod
  replicas: 8
  data_s3_path: s3://corpus-bucket/cpt/
  validation_data_s3_path: s3://${DataBucket}/cpt/val.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/cpt2/
  mlflow_tracking_uri: ${MlflowTrackingServerArn}
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: cpt2
training_config:
  task_type: cpt
  max_length: 8192
  global_batch_size: 256
  trainer: {max_steps: 200, val_check_interval: 10, limit_val_batches: 2}
  model: {hidden_dropout: 0.0, attention_dropout: 0.0}
  optim:
    optimizer: adam
    lr: 3.0e-5
    name: distributed_fused_adam
    adam_w_mode: true
    eps: 1.0e-6
    weight_decay: 0.1
    adam_beta1: 0.9
    adam_beta2: 0.95
    sched: {warmup_steps: 10, constant_steps: 0, min_lr: 2.0e-6}
""",
    )
    assert spec["recipe"] == "training/nova/nova_2_0/nova_lite/CPT/nova_lite_2_0_p5x8_gpu_pretrain"
    assert overrides_of(spec) == {
        "container": f"{US_EAST_1}/nova-fine-tune-repo:SM-HP-CPT-V2-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "cpt2",
        "recipes.run.model_name_or_path": "nova-lite-2/prod",
        "recipes.run.data_s3_path": "s3://corpus-bucket/cpt/",
        # Nova 2 CPT has the key: no "+".
        "recipes.run.validation_data_s3_path": "s3://${DataBucket}/cpt/val.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/cpt2/",
        "recipes.run.replicas": 8,
        "recipes.run.mlflow_tracking_uri": "${MlflowTrackingServerArn}",
        "recipes.run.mlflow_experiment_name": "novapod-dev",
        "recipes.run.mlflow_run_name": "cpt2",
        "recipes.training_config.trainer.max_steps": 200,
        "recipes.training_config.optim.lr": 3.0e-5,
        "recipes.training_config.optim.sched.min_lr": 2.0e-6,
        "recipes.training_config.optim.weight_decay": 0.1,
    }
    assert_commands(spec, "us-east-1")


def test_sft_lora_nova1_pro_from_an_s3_checkpoint() -> None:
    recipe, spec = rendered(
        {
            "name": "sft",
            "model": "pro",
            "technique": "sft-lora",
            "from": "s3://escrow-bucket/job/checkpoints/step_100",
            "replicas": 12,
            "data": {"train": "s3://other-bucket/sft/train.jsonl"},
            "hyperparameters": {
                "lora_alpha": 64,
                "lora_plus_lr_ratio": 8,
                "lora_dropout": 0.05,
                "global_batch_size": 16,
            },
        }
    )
    assert_fields(
        recipe,
        """
run:
  name: sft
  model_type: amazon.nova-pro-v1:0:300k
  model_name_or_path: s3://escrow-bucket/job/checkpoints/step_100
  replicas: 12
  data_s3_path: s3://other-bucket/sft/train.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/sft/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: sft
training_config:
  max_length: 32768
  global_batch_size: 16
  trainer: {max_epochs: 2}
  model:
    hidden_dropout: 0.0
    attention_dropout: 0.0
    ffn_dropout: 0.0
    optim:
      lr: 1.0e-5
      name: distributed_fused_adam
      adam_w_mode: true
      eps: 1.0e-6
      weight_decay: 0.0
      betas: [0.9, 0.999]
      sched: {warmup_steps: 10, constant_steps: 0, min_lr: 1.0e-6}
    peft:
      peft_scheme: lora
      lora_tuning: {loraplus_lr_ratio: 8.0, alpha: 64, adapter_dropout: 0.05}
""",
    )
    assert (
        spec["recipe"] == "fine-tuning/nova/nova_1_0/nova_pro/SFT/nova_pro_1_0_p5_p4d_gpu_lora_sft"
    )
    assert overrides_of(spec) == {
        "container": f"{US_EAST_1}/nova-fine-tune-repo:SM-HP-SFT-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "sft",
        "recipes.run.model_name_or_path": "s3://escrow-bucket/job/checkpoints/step_100",
        "recipes.run.data_s3_path": "s3://other-bucket/sft/train.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/sft/",
        "recipes.run.replicas": 12,
        "recipes.training_config.model.peft.lora_tuning.alpha": 64,
        "recipes.training_config.model.peft.lora_tuning.loraplus_lr_ratio": 8.0,
        "recipes.training_config.model.peft.lora_tuning.adapter_dropout": 0.05,
        "recipes.training_config.global_batch_size": 16,
    }
    assert_commands(spec, "us-east-1")


NOVA2_SFT_RUN = """
run:
  name: {name}
  model_type: amazon.nova-2-lite-v1:0:256k
  model_name_or_path: nova-lite-2/prod
  replicas: {replicas}
  data_s3_path: s3://${{DataBucket}}/sft/train.jsonl
  {validation}
  output_s3_path: s3://${{ArtifactsBucket}}/nova/dev/{name}/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: {name}
"""


def test_sft_lora_nova2_in_us_west_2() -> None:
    recipe, spec = rendered(
        {
            "name": "sft2",
            "model": "nova-2-lite",
            "technique": "sft-lora",
            "replicas": 8,
            "data": {"train": "sft/train.jsonl", "validation": "sft/val.jsonl"},
            "hyperparameters": {
                "max_steps": 500,
                "max_length": 65536,
                "learning_rate": 2.0e-5,
                "warmup_steps": 30,
                "lora_alpha": 128,
                "lora_plus_lr_ratio": 32,
            },
        },
        region="us-west-2",
    )
    run = NOVA2_SFT_RUN.format(
        name="sft2",
        replicas=8,
        validation="validation_data_s3_path: s3://${DataBucket}/sft/val.jsonl",
    )
    assert_fields(
        recipe,
        run
        + """
training_config:
  max_steps: 500
  save_steps: "${oc.select:training_config.max_steps}"
  save_top_k: 5
  max_length: 65536
  global_batch_size: 32
  reasoning_enabled: true
  val_check_interval: 2500
  limit_val_batches: 2
  lr_scheduler: {warmup_steps: 30, min_lr: 1.0e-6}
  optim_config: {lr: 2.0e-5, weight_decay: 0.0, adam_beta1: 0.9, adam_beta2: 0.95}
  peft:
    peft_scheme: lora
    lora_tuning: {alpha: 128, lora_plus_lr_ratio: 32.0}
  model_importance_score: {fine_tuned_model: 1.0}
""",
    )
    assert spec["recipe"] == "fine-tuning/nova/nova_2_0/nova_lite/SFT/nova_lite_2_0_p5_gpu_lora_sft"
    assert overrides_of(spec) == {
        "container": f"{US_WEST_2}/nova-fine-tune-repo:SM-HP-SFT-V2-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "sft2",
        "recipes.run.model_name_or_path": "nova-lite-2/prod",
        "recipes.run.data_s3_path": "s3://${DataBucket}/sft/train.jsonl",
        # Nova 2 SFT has the key: no "+".
        "recipes.run.validation_data_s3_path": "s3://${DataBucket}/sft/val.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/sft2/",
        "recipes.run.replicas": 8,
        "recipes.training_config.max_steps": 500,
        "recipes.training_config.max_length": 65536,
        "recipes.training_config.optim_config.lr": 2.0e-5,
        "recipes.training_config.lr_scheduler.warmup_steps": 30,
        "recipes.training_config.peft.lora_tuning.alpha": 128,
        "recipes.training_config.peft.lora_tuning.lora_plus_lr_ratio": 32.0,
    }
    assert_commands(spec, "us-west-2")


def test_sft_full_nova1_lite() -> None:
    recipe, spec = rendered(
        {
            "name": "full",
            "model": "lite",
            "technique": "sft-full",
            "data": {"train": "sft/train.jsonl"},
            "hyperparameters": {"max_epochs": 2, "max_length": 16384, "hidden_dropout": 0.1},
        }
    )
    assert_fields(
        recipe,
        """
run:
  name: full
  model_type: amazon.nova-lite-v1:0:300k
  model_name_or_path: nova-lite/prod
  replicas: 4
  data_s3_path: s3://${DataBucket}/sft/train.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/full/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: full
training_config:
  max_length: 16384
  global_batch_size: 16
  trainer: {max_epochs: 2}
  model:
    hidden_dropout: 0.1
    attention_dropout: 0.0
    ffn_dropout: 0.0
    optim:
      lr: 5.0e-6
      name: distributed_fused_adam
      adam_w_mode: true
      eps: 1.0e-6
      weight_decay: 0.0
      betas: [0.9, 0.999]
      sched: {warmup_steps: 10, constant_steps: 0, min_lr: 5.0e-7}
    peft: {peft_scheme: null}
""",
    )
    assert spec["recipe"] == "fine-tuning/nova/nova_1_0/nova_lite/SFT/nova_lite_1_0_p5_p4d_gpu_sft"
    assert overrides_of(spec) == {
        "container": f"{US_EAST_1}/nova-fine-tune-repo:SM-HP-SFT-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "full",
        "recipes.run.model_name_or_path": "nova-lite/prod",
        "recipes.run.data_s3_path": "s3://${DataBucket}/sft/train.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/full/",
        "recipes.run.replicas": 4,
        "recipes.training_config.trainer.max_epochs": 2,
        "recipes.training_config.max_length": 16384,
        "recipes.training_config.model.hidden_dropout": 0.1,
    }


def test_sft_full_nova2_writes_the_string_null() -> None:
    recipe, spec = rendered(
        {
            "name": "full2",
            "model": "nova-2-lite",
            "technique": "sft-full",
            "data": {"train": "sft/train.jsonl"},
        }
    )
    run = NOVA2_SFT_RUN.format(name="full2", replicas=4, validation="")
    assert_fields(
        recipe,
        run
        + """
training_config:
  max_steps: 100
  save_steps: "${oc.select:training_config.max_steps}"
  save_top_k: 5
  max_length: 32768
  global_batch_size: 32
  reasoning_enabled: true
  val_check_interval: 2500
  limit_val_batches: 2
  lr_scheduler: {warmup_steps: 15, min_lr: 1.0e-6}
  optim_config: {lr: 1.0e-5, weight_decay: 0.0, adam_beta1: 0.9, adam_beta2: 0.95}
  peft: {peft_scheme: "null"}
  model_importance_score: {fine_tuned_model: 1.0}
""",
    )
    assert spec["recipe"] == "fine-tuning/nova/nova_2_0/nova_lite/SFT/nova_lite_2_0_p5_gpu_sft"
    assert overrides_of(spec)["container"] == f"{US_EAST_1}/nova-fine-tune-repo:SM-HP-SFT-V2-latest"


def test_dpo_lora_micro_from_a_job_checkpoint() -> None:
    recipe, spec = rendered(
        {
            "name": "sft",
            "model": "micro",
            "technique": "sft-lora",
            "data": {"train": "sft/train.jsonl"},
        },
        {
            "name": "dpo",
            "model": "micro",
            "technique": "dpo-lora",
            "from": "job:sft",
            "data": {"train": "dpo/train.jsonl"},
            "hyperparameters": {"dpo_beta": 0.05, "lora_alpha": 32},
        },
    )
    assert_fields(
        recipe,
        """
run:
  name: dpo
  model_type: amazon.nova-micro-v1:0:128k
  model_name_or_path: "{{checkpoint:sft}}"
  replicas: 2
  data_s3_path: s3://${DataBucket}/dpo/train.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/dpo/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: dpo
training_config:
  max_length: 16384
  global_batch_size: 64
  trainer: {max_epochs: 2}
  model:
    hidden_dropout: 0.0
    attention_dropout: 0.0
    ffn_dropout: 0.0
    optim:
      lr: 1.0e-5
      name: distributed_fused_adam
      adam_w_mode: true
      eps: 1.0e-8
      weight_decay: 0.01
      betas: [0.9, 0.999]
      sched: {warmup_steps: 10, constant_steps: 0, min_lr: 1.0e-6}
    dpo_cfg: {beta: 0.05}
    peft:
      peft_scheme: lora
      lora_tuning: {loraplus_lr_ratio: 20.0, alpha: 32, adapter_dropout: 0.01}
""",
    )
    assert spec["recipe"] == (
        "fine-tuning/nova/nova_1_0/nova_micro/DPO/nova_micro_1_0_p5_p4d_gpu_lora_dpo"
    )
    assert spec["after"] == ["sft"]
    assert overrides_of(spec) == {
        "container": f"{US_EAST_1}/nova-fine-tune-repo:SM-HP-DPO-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "dpo",
        "recipes.run.model_name_or_path": "{{checkpoint:sft}}",
        "recipes.run.data_s3_path": "s3://${DataBucket}/dpo/train.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/dpo/",
        "recipes.run.replicas": 2,
        "recipes.training_config.model.dpo_cfg.beta": 0.05,
        "recipes.training_config.model.peft.lora_tuning.alpha": 32,
    }


def test_dpo_full_pro() -> None:
    recipe, spec = rendered(
        {
            "name": "dpo",
            "model": "pro",
            "technique": "dpo-full",
            "data": {"train": "dpo/train.jsonl"},
            "hyperparameters": {"max_epochs": 1},
        }
    )
    assert_fields(
        recipe,
        """
run:
  name: dpo
  model_type: amazon.nova-pro-v1:0:300k
  model_name_or_path: nova-pro/prod
  replicas: 6
  data_s3_path: s3://${DataBucket}/dpo/train.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/dpo/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: dpo
training_config:
  max_length: 16384
  global_batch_size: 32
  trainer: {max_epochs: 1}
  model:
    hidden_dropout: 0.0
    attention_dropout: 0.0
    ffn_dropout: 0.0
    optim:
      lr: 1.0e-5
      name: distributed_fused_adam
      adam_w_mode: true
      eps: 1.0e-8
      weight_decay: 0.01
      betas: [0.9, 0.999]
      sched: {warmup_steps: 10, constant_steps: 0, min_lr: 1.0e-6}
    dpo_cfg: {beta: 0.1}
    peft: {peft_scheme: null}
""",
    )
    assert spec["recipe"] == "fine-tuning/nova/nova_1_0/nova_pro/DPO/nova_pro_1_0_p5_gpu_dpo"
    assert overrides_of(spec) == {
        "container": f"{US_EAST_1}/nova-fine-tune-repo:SM-HP-DPO-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "dpo",
        "recipes.run.model_name_or_path": "nova-pro/prod",
        "recipes.run.data_s3_path": "s3://${DataBucket}/dpo/train.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/dpo/",
        "recipes.run.replicas": 6,
        "recipes.training_config.trainer.max_epochs": 1,
    }


def test_ppo_micro_in_ap_northeast_1() -> None:
    recipe, spec = rendered(
        {
            "name": "ppo",
            "model": "micro",
            "technique": "ppo",
            "data": {"train": "ppo/train.jsonl"},
            "hyperparameters": {"learning_rate": 1.0e-6, "critic_learning_rate": 2.0e-6},
        },
        region="ap-northeast-1",
    )
    assert_fields(
        recipe,
        """
run:
  name: ppo
  model_type: amazon.nova-micro-v1:0:128k
  model_name_or_path: nova-micro/prod
  actor_train_replicas: 2
  rm_replicas: 1
  cm_replicas: 1
  am_replicas: 1
  actor_generation_replicas: 2
  data_s3_path: s3://${DataBucket}/ppo/train.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/ppo/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: ppo
ppo_reward:
  max_length: 8192
  trainer: {num_nodes: "${recipes.run.rm_replicas}"}
  model: {global_batch_size: 40}
ppo_critic:
  max_length: 8192
  trainer: {num_nodes: "${recipes.run.cm_replicas}"}
  model:
    global_batch_size: 32
    optim: {lr: 2.0e-6, name: distributed_fused_adam, adam_w_mode: true, eps: 1.0e-6,
            weight_decay: 0.0, betas: [0.9, 0.999]}
ppo_anchor:
  max_length: 8192
  trainer: {num_nodes: "${recipes.run.am_replicas}"}
  model: {global_batch_size: 40}
ppo_actor_generation:
  actor_model_max_length: 8192
  trainer: {num_nodes: "${recipes.run.actor_generation_replicas}"}
ppo_actor_train:
  max_length: 8192
  max_steps: 520
  actor_model_max_length: 8192
  reward_model_max_length: 8192
  trajectory_buffer_scale: 8
  trainer: {num_nodes: "${recipes.run.actor_train_replicas}"}
  model:
    global_batch_size: 256
    ent_coeff: 0
    clip_ratio: 0.2
    lam: 1
    kl_loss_coeff: 0.0
    kl_loss_type: low_var_kl
    kl_reward_penalty_coeff: 0.0
    hidden_dropout: 0.0
    attention_dropout: 0.0
    ffn_dropout: 0.0
    optim: {lr: 1.0e-6, name: distributed_fused_adam, adam_w_mode: true, eps: 1.0e-8,
            weight_decay: 0.0, betas: [0.9, 0.999]}
""",
    )
    assert "training_config" not in recipe
    assert spec["recipe"] == "fine-tuning/nova/nova_1_0/nova_micro/PPO/nova_micro_1_0_p5_gpu_ppo"
    # No recipes.run.replicas: the PPO run block has per-role replicas only.
    assert overrides_of(spec) == {
        "container": f"{AP_NORTHEAST_1}/nova-fine-tune-repo:SMHP-PPO-TRAIN-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "ppo",
        "recipes.run.model_name_or_path": "nova-micro/prod",
        "recipes.run.data_s3_path": "s3://${DataBucket}/ppo/train.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/ppo/",
        "recipes.ppo_actor_train.model.optim.lr": 1.0e-6,
        "recipes.ppo_critic.model.optim.lr": 2.0e-6,
    }
    assert_commands(spec, "ap-northeast-1")


def test_ppo_pro_runs_six_actor_train_replicas_for_1040_steps() -> None:
    recipe, _ = rendered(
        {"name": "ppo", "model": "pro", "technique": "ppo", "data": {"train": "p.jsonl"}}
    )
    assert recipe["run"]["actor_train_replicas"] == 6
    assert recipe["run"]["actor_generation_replicas"] == 2
    assert recipe["ppo_actor_train"]["max_steps"] == 1040
    assert recipe["ppo_actor_train"]["model"]["global_batch_size"] == 160


def test_rft_lora_nova2() -> None:
    recipe, spec = rendered(
        {
            "name": "rft",
            "model": "nova-2-lite",
            "technique": "rft-lora",
            "replicas": 4,
            "reward_lambda_arn": REWARD,
            "data": {"train": "rft/train.jsonl"},
            "hyperparameters": {"number_generation": 4, "lora_alpha": 64, "learning_rate": 1e-6},
        }
    )
    assert_fields(
        recipe,
        """
run:
  name: rft
  model_type: amazon.nova-2-lite-v1:0:256k
  model_name_or_path: nova-lite-2/prod
  replicas: 4
  generation_replicas: 2
  rollout_worker_replicas: 1
  reward_lambda_arn: arn:aws:lambda:us-east-1:111122223333:function:reward
  data_s3_path: s3://${DataBucket}/rft/train.jsonl
  output_s3_path: s3://${ArtifactsBucket}/nova/dev/rft/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: novapod-dev
  mlflow_run_name: rft
training_config:
  max_length: 10240
  global_batch_size: 256
  reasoning_effort: high
  data: {shuffle: false}
  rollout:
    rollout_strategy: {type: off_policy_async, age_tolerance: 2}
    advantage_strategy: {number_generation: 4}
    generator: {max_new_tokens: 8192, set_random_seed: true, temperature: 1, top_k: 0}
    rewards:
      api_endpoint: {lambda_arn: "${oc.select:run.reward_lambda_arn}",
                     lambda_concurrency_limit: 100}
  trainer:
    max_steps: 100
    save_steps: "${oc.select:training_config.trainer.max_steps}"
    save_top_k: 5
    refit_freq: 4
    clip_ratio_high: 0.2
    ent_coeff: 0.001
    loss_scale: 1
    optim_config: {lr: 1.0e-6, weight_decay: 0.0, adam_beta1: 0.9, adam_beta2: 0.95}
    peft:
      peft_scheme: lora
      lora_tuning: {alpha: 64, loraplus_lr_ratio: 64.0}
""",
    )
    assert spec["recipe"] == "fine-tuning/nova/nova_2_0/nova_lite/RFT/nova_lite_2_0_p5_gpu_lora_rft"
    assert overrides_of(spec) == {
        "container": f"{US_EAST_1}/nova-fine-tune-repo:SM-HP-RFT-TRAIN-V2-latest",
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": "rft",
        "recipes.run.model_name_or_path": "nova-lite-2/prod",
        "recipes.run.data_s3_path": "s3://${DataBucket}/rft/train.jsonl",
        "recipes.run.output_s3_path": "s3://${ArtifactsBucket}/nova/dev/rft/",
        "recipes.run.replicas": 4,
        "recipes.run.reward_lambda_arn": REWARD,
        "recipes.training_config.rollout.advantage_strategy.number_generation": 4,
        "recipes.training_config.trainer.peft.lora_tuning.alpha": 64,
        "recipes.training_config.trainer.optim_config.lr": 1.0e-6,
    }


def test_distillation_keeps_the_upstream_run_block_and_string_values() -> None:
    config = config_of(
        {
            "name": "distill",
            "model": "pro",
            "technique": "distillation",
            "hyperparameters": {"max_prompts": 10000, "temperature": 0.5},
        }
    )
    (job,) = config.jobs
    # Upstream fine-tuning/nova/nova_1_0/nova_pro/distill/nova_pro_1_0_r5_cpu_distill: the
    # teacher's model_type, an empty model_name_or_path, no replicas/data/output; its
    # customer_bucket ("S3 bucket for input/output data", required by the template
    # parameters) is the environment's data bucket, resolved at deploy.
    assert_fields(
        render_recipe(config, job),
        """
run:
  name: distill
  model_type: amazon.nova-pro-v1:0:300k
  model_name_or_path: ''
training_config:
  distillation_data: 'true'
  maxNumberOfPrompts: '10000'
  maxResponseLength: '5000'
  minNumberOfPrompts: '0'
  maxInputFileSizeInGB: '2'
  maxLineLengthInKB: '180'
  maxStudentModelFineTuningContextLengthInTokens: '32000'
  teacherModelId: us.amazon.nova-pro-v1:0
  temperature: '0.5'
  top_p: '0.9'
  customer_bucket: ${DataBucket}
  kms_key: ''
""",
    )
    with pytest.raises(CatalogError) as info:
        launch_spec(config, job)
    assert str(info.value) == (
        "distillation cannot run on HyperPod: upstream publishes distillation only for "
        "SageMaker training jobs (no HyperPod container); run it as a training job "
        "(runs_on: training-job, on_demand: true)"
    )


# ---------------------------------------------------------------------- evaluation

NOVA1_INFERENCE = (
    "inference: {max_new_tokens: 8196, top_k: -1, top_p: 1.0, temperature: 0, top_logprobs: 0}"
)


def eval_run(name: str, model_type: str, source: str, data: str) -> str:
    return f"""
run:
  name: {name}
  model_type: {model_type}
  model_name_or_path: "{source}"
  replicas: 1
  data_s3_path: "{data}"
  output_s3_path: s3://${{ArtifactsBucket}}/nova/dev/{name}/
  mlflow_tracking_uri: ''
  mlflow_experiment_name: ''
  mlflow_run_name: ''
"""


def eval_overrides(name: str, image: str, source: str, data: str | None = None) -> dict[str, Any]:
    """No recipes.run.replicas: 1 is fixed for HyperPod evaluations."""
    out = {
        "container": image,
        "instance_type": "ml.p5.48xlarge",
        "recipes.run.name": name,
        "recipes.run.model_name_or_path": source,
        "recipes.run.output_s3_path": f"s3://${{ArtifactsBucket}}/nova/dev/{name}/",
    }
    if data is not None:
        out["recipes.run.data_s3_path"] = data
    return out


def test_general_text_benchmark_micro() -> None:
    recipe, spec = rendered(
        {
            "name": "mmlu",
            "model": "micro",
            "technique": "evaluation",
            "evaluation": {"task": "general-text"},
        }
    )
    assert_fields(
        recipe,
        eval_run("mmlu", "amazon.nova-micro-v1:0:128k", "nova-micro/prod", "")
        + """
evaluation: {task: mmlu, strategy: zs_cot, metric: accuracy, subtask: ''}
"""
        + NOVA1_INFERENCE,
    )
    assert spec["recipe"] == (
        "evaluation/nova/nova_1_0/nova_micro/nova_micro_1_0_p5_48xl_gpu_general_text_benchmark_eval"
    )
    assert overrides_of(spec) == eval_overrides(
        "mmlu", f"{US_EAST_1}/nova-evaluation-repo:SM-HP-Eval-V2-latest", "nova-micro/prod"
    )
    assert_commands(spec, "us-east-1")


def test_multimodal_benchmark_nova2_of_an_s3_checkpoint() -> None:
    checkpoint = "s3://customer-escrow-111122223333-hp-abc/run/outputs/checkpoints/step_100"
    recipe, spec = rendered(
        {
            "name": "mmmu",
            "model": "nova-2-lite",
            "technique": "evaluation",
            "from": checkpoint,
            "evaluation": {"task": "multimodal", "inference": {"top_p": 0.9}},
        }
    )
    assert_fields(
        recipe,
        eval_run("mmmu", "amazon.nova-2-lite-v1:0:256k", checkpoint, "")
        + """
evaluation: {task: mmmu, strategy: zs_cot, metric: accuracy, subtask: ''}
inference: {max_new_tokens: 32768, top_k: -1, top_p: 0.9, temperature: 0, top_logprobs: 0,
            reasoning_effort: null}
""",
    )
    assert spec["recipe"] == (
        "evaluation/nova/nova_2_0/nova_lite/"
        "nova_lite_2_0_p5_48xl_gpu_general_multi_modal_benchmark_eval"
    )
    assert overrides_of(spec) == {
        **eval_overrides(
            "mmmu", f"{US_EAST_1}/nova-evaluation-repo:SM-HP-Eval-V2-latest", checkpoint
        ),
        "recipes.inference.top_p": 0.9,
    }


def test_gen_qa_nova1_without_a_metrics_lambda() -> None:
    recipe, spec = rendered(
        {
            "name": "qa",
            "model": "pro",
            "technique": "evaluation",
            "evaluation": {
                "task": "gen-qa",
                "dataset": "eval/qa.jsonl",
                "inference": {"max_new_tokens": 2048, "temperature": 0.2},
            },
        }
    )
    assert_fields(
        recipe,
        eval_run(
            "qa", "amazon.nova-pro-v1:0:300k", "nova-pro/prod", "s3://${DataBucket}/eval/qa.jsonl"
        )
        + """
evaluation: {task: gen_qa, strategy: gen_qa, metric: all}
inference: {max_new_tokens: 2048, top_k: -1, top_p: 1.0, temperature: 0.2, top_logprobs: 0}
processor:
  lambda_arn: ''
  lambda_type: rft
  preprocessing: {enabled: false}
  postprocessing: {enabled: true}
  aggregation: average
""",
    )
    assert spec["recipe"] == (
        "evaluation/nova/nova_1_0/nova_pro/nova_pro_1_0_p5_48xl_gpu_bring_your_own_dataset_eval"
    )
    assert overrides_of(spec) == {
        **eval_overrides(
            "qa",
            f"{US_EAST_1}/nova-evaluation-repo:SM-HP-Eval-V2-latest",
            "nova-pro/prod",
            "s3://${DataBucket}/eval/qa.jsonl",
        ),
        "recipes.inference.max_new_tokens": 2048,
        "recipes.inference.temperature": 0.2,
    }


def test_gen_qa_nova2_with_a_metrics_lambda() -> None:
    recipe, spec = rendered(
        {
            "name": "qa2",
            "model": "nova-2-lite",
            "technique": "evaluation",
            "evaluation": {
                "task": "gen-qa",
                "dataset": "s3://eval-bucket/qa.jsonl",
                "metrics_lambda_arn": METRICS,
            },
        }
    )
    # Nova 2's gen_qa recipe adds preset_reward_function ("do not modify").
    assert_fields(
        recipe,
        eval_run(
            "qa2", "amazon.nova-2-lite-v1:0:256k", "nova-lite-2/prod", "s3://eval-bucket/qa.jsonl"
        )
        + """
evaluation: {task: gen_qa, strategy: gen_qa, metric: all}
inference: {max_new_tokens: 32768, top_k: -1, top_p: 1.0, temperature: 0, top_logprobs: 0,
            reasoning_effort: null}
processor:
  preset_reward_function: ''
  lambda_arn: arn:aws:lambda:us-east-1:111122223333:function:metrics
  lambda_type: custom_metrics
  preprocessing: {enabled: false}
  postprocessing: {enabled: true}
  aggregation: average
""",
    )
    assert spec["recipe"] == (
        "evaluation/nova/nova_2_0/nova_lite/nova_lite_2_0_p5_48xl_gpu_bring_your_own_dataset_eval"
    )
    assert overrides_of(spec) == {
        **eval_overrides(
            "qa2",
            f"{US_EAST_1}/nova-evaluation-repo:SM-HP-Eval-V2-latest",
            "nova-lite-2/prod",
            "s3://eval-bucket/qa.jsonl",
        ),
        "recipes.processor.lambda_arn": METRICS,
        "recipes.processor.lambda_type": "custom_metrics",
    }


def test_llm_judge_nova1_has_top_k_50_and_no_max_new_tokens() -> None:
    recipe, spec = rendered(
        {"name": "sft", "model": "lite", "technique": "sft-lora", "data": {"train": "t.jsonl"}},
        {
            "name": "judge",
            "model": "lite",
            "technique": "evaluation",
            "from": "job:sft",
            "evaluation": {"task": "llm-judge", "dataset": "eval/pairs.jsonl"},
        },
    )
    assert_fields(
        recipe,
        eval_run(
            "judge",
            "amazon.nova-lite-v1:0:300k",
            "{{checkpoint:sft}}",
            "s3://${DataBucket}/eval/pairs.jsonl",
        )
        + """
evaluation: {task: llm_judge, strategy: judge, metric: all}
inference: {top_k: 50, top_p: 1.0, temperature: 0, top_logprobs: 0}
""",
    )
    assert (
        spec["recipe"]
        == "evaluation/nova/nova_1_0/nova_lite/nova_lite_1_0_p5_48xl_gpu_llm_judge_eval"
    )
    # SM-HP-Eval-V2-latest: no upstream commit names an SM-HP-Eval-latest tag.
    assert overrides_of(spec) == eval_overrides(
        "judge",
        f"{US_EAST_1}/nova-evaluation-repo:SM-HP-Eval-V2-latest",
        "{{checkpoint:sft}}",
        "s3://${DataBucket}/eval/pairs.jsonl",
    )


def test_max_new_tokens_on_a_nova1_llm_judge_is_sent_as_a_new_key() -> None:
    # Nova 1 llm_judge recipes have no inference.max_new_tokens: without `+` Hydra stops
    # with "Could not override 'recipes.inference.max_new_tokens'".
    _, spec = rendered(
        {
            "name": "judge",
            "model": "micro",
            "technique": "evaluation",
            "evaluation": {
                "task": "llm-judge",
                "dataset": "eval/pairs.jsonl",
                "inference": {"max_new_tokens": 512, "top_p": 0.9},
            },
        }
    )
    overrides = overrides_of(spec)
    assert overrides["+recipes.inference.max_new_tokens"] == 512
    assert "recipes.inference.max_new_tokens" not in overrides
    # top_p is in the recipe: a plain override (`+` on an existing key fails too).
    assert overrides["recipes.inference.top_p"] == 0.9
    assert "+recipes.inference.top_p" not in overrides


def test_rubric_judge_nova2() -> None:
    recipe, spec = rendered(
        {
            "name": "rubric",
            "model": "nova-2-lite",
            "technique": "evaluation",
            "evaluation": {"task": "rubric-judge", "dataset": "eval/rubric.jsonl"},
        }
    )
    assert_fields(
        recipe,
        eval_run(
            "rubric",
            "amazon.nova-2-lite-v1:0:256k",
            "nova-lite-2/prod",
            "s3://${DataBucket}/eval/rubric.jsonl",
        )
        + """
evaluation: {task: rubric_llm_judge, strategy: judge, metric: all}
inference: {max_new_tokens: 32768, top_k: 50, top_p: 1.0, temperature: 0, top_logprobs: 0,
            reasoning_effort: null}
""",
    )
    assert spec["recipe"] == (
        "evaluation/nova/nova_2_0/nova_lite/nova_lite_2_0_p5_48xl_gpu_rubric_llm_judge_eval"
    )
    assert overrides_of(spec) == eval_overrides(
        "rubric",
        f"{US_EAST_1}/nova-evaluation-repo:SM-HP-Eval-V2-latest",
        "nova-lite-2/prod",
        "s3://${DataBucket}/eval/rubric.jsonl",
    )


def test_rft_eval_nova1_sets_the_reward_lambda() -> None:
    recipe, spec = rendered(
        {
            "name": "rfteval",
            "model": "micro",
            "technique": "evaluation",
            "evaluation": {
                "task": "rft-eval",
                "dataset": "eval/rft.jsonl",
                "reward_lambda_arn": REWARD,
            },
        }
    )
    assert_fields(
        recipe,
        eval_run(
            "rfteval",
            "amazon.nova-micro-v1:0:128k",
            "nova-micro/prod",
            "s3://${DataBucket}/eval/rft.jsonl",
        )
        + """
evaluation: {task: rft_eval, strategy: rft_eval, metric: all}
rl_env: {reward_lambda_arn: "arn:aws:lambda:us-east-1:111122223333:function:reward"}
"""
        + NOVA1_INFERENCE,
    )
    # The one recipe name without a second "_eval".
    assert (
        spec["recipe"] == "evaluation/nova/nova_1_0/nova_micro/nova_micro_1_0_p5_48xl_gpu_rft_eval"
    )
    assert overrides_of(spec) == {
        **eval_overrides(
            "rfteval",
            f"{US_EAST_1}/nova-evaluation-repo:SM-HP-Eval-V2-latest",
            "nova-micro/prod",
            "s3://${DataBucket}/eval/rft.jsonl",
        ),
        "recipes.rl_env.reward_lambda_arn": REWARD,
    }


# ------------------------------------------------------ instance group, determinism

PURCHASE = ROOT / "config/examples/single-rig-purchase.yaml"


def test_a_job_on_a_restricted_group_is_pinned_to_it_by_a_hydra_dict_label_selector() -> None:
    config = load_config(PURCHASE)
    job = next(j for j in config.jobs if j.name == "sft-lora")
    spec = launch_spec(config, job)
    # Hydra dict syntax with unquoted keys (JSON fails to parse in the launcher) and a
    # quoted value (a string to Hydra whatever the group's name looks like).
    selector = "{required: {sagemaker.amazonaws.com/instance-group-name: ['nova-lite']}}"
    assert spec["label_selector"] == selector
    assert spec["instance_group"] == "nova-lite"
    assert spec["commands"] == [
        [
            "hyperpod", "connect-cluster", "--cluster-name", "${ClusterName}",
            "--region", "us-east-1", "--namespace", "nova-jobs",
        ],
        [
            "hyperpod", "start-job", "--namespace", "nova-jobs",
            "--recipe", "fine-tuning/nova/nova_1_0/nova_lite/SFT/nova_lite_1_0_p5_p4d_gpu_lora_sft",
            "--override-parameters",
            '{"container":"708977205387.dkr.ecr.us-east-1.amazonaws.com/'
            'nova-fine-tune-repo:SM-HP-SFT-latest",'
            '"instance_type":"ml.p5.48xlarge",'
            '"recipes.run.data_s3_path":"s3://${DataBucket}/sft/train.jsonl",'
            '"recipes.run.model_name_or_path":"nova-lite/prod",'
            '"recipes.run.name":"sft-lora",'
            '"recipes.run.output_s3_path":"s3://${ArtifactsBucket}/nova/nova-lite/sft-lora/",'
            '"recipes.run.replicas":4,'
            '"recipes.training_config.model.optim.lr":1e-05,'
            '"recipes.training_config.model.peft.lora_tuning.alpha":64,'
            '"recipes.training_config.trainer.max_epochs":2}',
            "--label-selector", selector,
        ],
    ]  # fmt: skip


def on_group(group: str) -> NovapodConfig:
    """A job on a restricted group of that name (an adopted plan, nothing bought)."""
    return parse_config(
        {
            "name": "dev",
            "region": "us-east-1",
            "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ZONES["us-east-1"]}},
            "jobs": [
                {"name": "sft", "model": "lite", "technique": "sft-lora", "hours_per_run": 10,
                 "instance_group": group, "data": {"train": "sft/train.jsonl"}},
            ],
            "capacity": {"training_plans": [{
                "name": "main",
                "existing_arn": "arn:aws:sagemaker:us-east-1:111122223333:training-plan/main",
                "instance_type": "ml.p5.48xlarge", "instance_count": 4,
            }]},
            "eks": {},
            "hyperpod": {"restricted_instance_groups": [{"name": group, "training_plan": "main"}]},
        }
    )  # fmt: skip


@pytest.mark.parametrize("group", ["1e5", "123", "true", "null", "0x1f", "rig-a"])
def test_the_group_name_in_the_label_selector_stays_a_string(group: str) -> None:
    # Unquoted, Hydra (the CLI passes the selector as `+cluster.label_selector=...`) reads
    # 1e5 as a float, 123 as an int, true as a bool, null as None; the chart then quotes
    # 100000.0 into the nodeAffinity as "100000" and the pods never schedule.
    config = on_group(group)
    spec = launch_spec(config, config.jobs[0])
    selector = f"{{required: {{sagemaker.amazonaws.com/instance-group-name: ['{group}']}}}}"
    assert spec["label_selector"] == selector
    assert spec["commands"][1][-2:] == ["--label-selector", selector]
    # The same text read as YAML keeps the name a string as well.
    assert yaml.safe_load(selector) == {
        "required": {"sagemaker.amazonaws.com/instance-group-name": [group]}
    }


def test_training_recipes_name_the_mlflow_experiment_and_run_even_without_mlflow() -> None:
    # Upstream training recipes: mlflow_experiment_name / mlflow_run_name "Optional for
    # MLFlow. Note: leave this field non-empty"; the evaluation recipes default them to "".
    config = config_of(
        {"name": "sft", "model": "micro", "technique": "sft-lora", "data": {"train": "t.jsonl"}},
        {"name": "eval", "model": "micro", "technique": "evaluation",
         "evaluation": {"task": "general-text"}},
    )  # fmt: skip
    sft, evaluation = (render_recipe(config, job)["run"] for job in config.jobs)
    assert (sft["mlflow_tracking_uri"], sft["mlflow_experiment_name"]) == ("", "novapod-dev")
    assert sft["mlflow_run_name"] == "sft"
    names = ("mlflow_tracking_uri", "mlflow_experiment_name", "mlflow_run_name")
    assert [evaluation[k] for k in names] == ["", "", ""]
    # MLflow off: nothing about it is sent to the launcher (the recipe's own names stay).
    assert not [k for k in launch_spec(config, config.jobs[0])["override_parameters"]
                if "mlflow" in k]  # fmt: skip


def test_rendering_twice_gives_the_same_bytes() -> None:
    first = bundle(load_config(PURCHASE))
    second = bundle(load_config(PURCHASE))
    assert first == second
    assert list(first) == sorted(first)
    jobs = [
        {"name": "sft", "model": "micro", "technique": "sft-lora", "data": {"train": "t.jsonl"}},
        {"name": "dpo", "model": "micro", "technique": "dpo-lora", "from": "job:sft",
         "data": {"train": "d.jsonl"}, "hyperparameters": {"lora_alpha": 32, "dpo_beta": 0.05}},
        {"name": "ppo", "model": "micro", "technique": "ppo", "data": {"train": "p.jsonl"}},
        {"name": "distill", "model": "pro", "technique": "distillation"},
    ]  # fmt: skip
    assert bundle(config_of(*jobs)) == bundle(config_of(*jobs))
    # Jobs listed in the other order give the same files: only dependencies order them.
    reordered = [jobs[1], jobs[0], *jobs[2:]]
    assert (
        bundle(config_of(*reordered))["recipes/dpo.yaml"]
        == (bundle(config_of(*jobs))["recipes/dpo.yaml"])
    )
