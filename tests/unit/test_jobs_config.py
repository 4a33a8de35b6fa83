"""The `jobs` section: each mistake is one sentence at its field path; the planner sizes
jobs on their groups' plans; dependency order puts predecessors first."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from novapod.config import ConfigError, NovapodConfig, load_config, parse_config
from novapod.config.jobs import Job, dependency_order
from novapod.nova.render import bundle
from tests.conftest import ROOT

PLAN_ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/{}"
REWARD = "arn:aws:lambda:us-east-1:111122223333:function:reward"


def adopted(name: str, instance_type: str, count: int) -> dict[str, Any]:
    """A plan already owned: checked and sized against, never bought (no approval)."""
    return {
        "name": name,
        "existing_arn": PLAN_ARN.format(name),
        "instance_type": instance_type,
        "instance_count": count,
    }


# Groups: rig (8 x p5), rig-four (a group of 4 on an 8 x p5 plan), rig-a100 (16 x p4d),
# and a standard group, system.
CLUSTER: dict[str, Any] = {
    "name": "dev",
    "region": "us-east-1",
    "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["use1-az4", "use1-az6"]}},
    "jobs": [],
    "capacity": {
        "training_plans": [
            adopted("main", "ml.p5.48xlarge", 8),
            adopted("four", "ml.p5.48xlarge", 8),
            adopted("a100", "ml.p4d.24xlarge", 16),
        ]
    },
    "eks": {},
    "hyperpod": {
        "restricted_instance_groups": [
            {"name": "rig", "training_plan": "main"},
            {"name": "rig-four", "training_plan": "four", "instance_count": 4},
            {"name": "rig-a100", "training_plan": "a100"},
        ],
        "instance_groups": [
            {"name": "system", "instance_type": "ml.m5.2xlarge", "instance_count": 1}
        ],
    },
}

SFT: dict[str, Any] = {
    "name": "sft",
    "model": "lite",
    "technique": "sft-lora",
    "hours_per_run": 10,
    "instance_group": "rig",
    "data": {"train": "sft/train.jsonl"},
}
PPO: dict[str, Any] = {
    "name": "ppo",
    "model": "micro",
    "technique": "ppo",
    "instance_group": "rig",
    "data": {"train": "ppo/prompts.jsonl"},
}
RFT: dict[str, Any] = {
    "name": "rft",
    "model": "nova-2-lite",
    "technique": "rft-lora",
    "hours_per_run": 10,
    "instance_group": "rig",
    "data": {"train": "rft/train.jsonl"},
    "reward_lambda_arn": REWARD,
}
EVAL: dict[str, Any] = {
    "name": "eval",
    "model": "lite",
    "technique": "evaluation",
    "hours_per_run": 1,
    "instance_group": "rig",
    "evaluation": {"task": "general-text"},
}


def config(*jobs: dict[str, Any], **root: Any) -> dict[str, Any]:
    """CLUSTER with these jobs and root keys replaced (None removes a key)."""
    data = copy.deepcopy(CLUSTER)
    data["jobs"] = [copy.deepcopy(job) for job in jobs]
    for key, value in root.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return data


def without(job: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k not in keys}


def issues_of(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return dict(info.value.issues)


def no_cluster(*jobs: dict[str, Any]) -> dict[str, Any]:
    """A config without eks and hyperpod: jobs name plans, not groups."""
    return config(*jobs, eks=None, hyperpod=None)


def elsewhere(region: str, zones: list[str], *jobs: dict[str, Any]) -> dict[str, Any]:
    return config(*jobs, region=region, network={"vpc": {"zone_ids": zones}})


LONG_NAME = "a" * 35

MISTAKES = [
    # (case id, data, field path, words the one-sentence message must contain)
    (
        "multimodal-on-micro",
        config({**EVAL, "model": "micro", "evaluation": {"task": "multimodal"}}),
        "jobs[0].evaluation.task",
        ("multimodal evaluation", "Nova Lite, Nova Pro, Nova 2 Lite only", "not Nova Micro"),
    ),
    (
        "replicas-outside-allowed",
        config({**SFT, "replicas": 3}),
        "jobs[0].replicas",
        ("Nova Lite sft-lora on ml.p5.48xlarge", "runs on 4, 8, 16 replicas", "use one of"),
    ),
    (
        "sequence-over-maximum",
        config({**SFT, "hyperparameters": {"max_length": 65536}}),
        "jobs[0].hyperparameters.max_length",
        ("takes sequences up to 32768 tokens, not 65536", "set max_length to 32768 or less"),
    ),
    (
        "sequence-over-maximum-on-p4d",
        config({**SFT, "technique": "dpo-lora", "instance_group": "rig-a100",
                "hyperparameters": {"max_length": 32768}}),
        "jobs[0].hyperparameters.max_length",
        ("Nova Lite dpo-lora on ml.p4d.24xlarge", "up to 16384 tokens, not 32768"),
    ),
    (
        "sequence-not-a-multiple-of-1024",
        # The DPO recipes: "should be between [1024, 32768] and multiple of 1024".
        config({**SFT, "technique": "dpo-lora", "hyperparameters": {"max_length": 5000}}),
        "jobs[0].hyperparameters.max_length",
        ("Nova Lite dpo-lora on ml.p5.48xlarge takes sequence lengths in multiples of 1024, "
         "not 5000; set max_length to 4096 or 5120",),
    ),
    (
        "sequence-over-maximum-nova1-sft-on-p4d",
        # 65536 is the compute tables' length on p5; p4d keeps the recipe's 32768.
        config({**SFT, "model": "micro", "instance_group": "rig-a100",
                "hyperparameters": {"max_length": 65536}}),
        "jobs[0].hyperparameters.max_length",
        ("Nova Micro sft-lora on ml.p4d.24xlarge", "up to 32768 tokens, not 65536"),
    ),
    (
        "validation-data-on-nova1-sft",
        config({**SFT, "data": {"train": "sft/train.jsonl", "validation": "sft/val.jsonl"}}),
        "jobs[0].data.validation",
        ("the Nova Lite sft-lora recipe takes no validation data (only Nova 2 Lite cpt, "
         "Nova 2 Lite sft-lora, Nova 2 Lite sft-full do); remove data.validation",),
    ),
    (
        "validation-data-on-ppo",
        config({**PPO, "data": {"train": "p.jsonl", "validation": "v.jsonl"}}),
        "jobs[0].data.validation",
        ("the Nova Micro ppo recipe takes no validation data",),
    ),
    (
        "validation-data-on-rft",
        config({**RFT, "data": {"train": "r.jsonl", "validation": "v.jsonl"}}),
        "jobs[0].data.validation",
        ("the Nova 2 Lite rft-lora recipe takes no validation data",),
    ),
    (
        "after-unknown-job",
        config({**SFT, "after": ["prep"]}),
        "jobs[0].after[0]",
        ("no job is named prep", "use one of sft"),
    ),
    (
        "after-itself",
        config({**SFT, "after": ["sft"]}),
        "jobs[0].after",
        ("sft cannot wait for itself", "remove it from after"),
    ),
    (
        "from-itself",
        config({**SFT, "from": "job:sft"}),
        "jobs[0].from",
        ("sft cannot start from its own checkpoint", "use base or another job"),
    ),
    (
        "two-cycle",
        config({**SFT, "name": "a", "after": ["b"]}, {**SFT, "name": "b", "after": ["a"]}),
        "jobs[0].after",
        ("in a cycle (a -> b -> a)", "remove one of those dependencies"),
    ),
    (
        "three-cycle",
        config(
            {**SFT, "name": "a", "after": ["c"]},
            {**SFT, "name": "b", "after": ["a"]},
            {**SFT, "name": "c", "after": ["b"]},
        ),
        "jobs[0].after",
        ("in a cycle (a -> c -> b -> a)", "remove one of those dependencies"),
    ),
    (
        "cycle-through-from",
        config({**SFT, "name": "a", "from": "job:b"}, {**SFT, "name": "b", "after": ["a"]}),
        "jobs[0].after",
        ("in a cycle (a -> b -> a)",),
    ),
    (
        "from-an-evaluation",
        config(EVAL, {**SFT, "from": "job:eval"}),
        "jobs[1].from",
        ("eval is an evaluation and leaves no checkpoint", "start from a training job"),
    ),
    (
        "from-another-model",
        config(SFT, {**EVAL, "model": "micro", "from": "job:sft"}),
        "jobs[1].from",
        ("sft trains Nova Lite, not Nova Micro", "continues on its own model"),
    ),
    (
        "from-unknown-job",
        config(SFT, {**EVAL, "from": "job:sft-v2"}),
        "jobs[1].from",
        ("no job is named sft-v2", "use one of sft, eval"),
    ),
    (
        "from-not-a-job-base-or-uri",
        config({**SFT, "from": "job:SFT"}),
        "jobs[0].from",
        ("base, job:<the name of another job>, or an s3:// checkpoint URI",),
    ),
    (
        "ppo-on-a-group-too-small",
        config({**PPO, "instance_group": "rig-four"}),
        "jobs[0].instance_group",
        ("Nova Micro ppo needs 7 instances but group rig-four has 4", "use a larger group"),
    ),
    (
        "group-of-another-instance-type",
        config({**PPO, "model": "pro", "instance_group": "rig-a100"}),
        "jobs[0].instance_group",
        ("Nova Pro ppo has no recipe for ml.p4d.24xlarge", "use a group of ml.p5.48xlarge"),
    ),
    (
        "standard-group",
        config({**SFT, "instance_group": "system"}),
        "jobs[0].instance_group",
        ("system is a standard group", "restricted instance groups: rig, rig-four, rig-a100"),
    ),
    (
        "unknown-group",
        config({**SFT, "instance_group": "rig-lite"}),
        "jobs[0].instance_group",
        ("no restricted instance group is named rig-lite", "use one of rig, rig-four"),
    ),
    (
        "no-group",
        config(without(SFT, "instance_group")),
        "jobs[0].instance_group",
        ("set the restricted instance group the job runs on: rig, rig-four, rig-a100",),
    ),
    (
        "plan-with-a-hyperpod-section",
        config({**SFT, "plan": "main"}),
        "jobs[0].plan",
        ("with a hyperpod section", "replace plan with instance_group"),
    ),
    (
        "group-without-a-hyperpod-section",
        no_cluster(SFT),
        "jobs[0].instance_group",
        ("the config has no hyperpod section", "or use plan to size capacity only"),
    ),
    (
        "region-without-images",
        elsewhere("eu-west-2", ["euw2-az1", "euw2-az2"], SFT),
        "region",
        ("region eu-west-2 has no Nova training images", "us-east-1, us-west-2, ap-northeast-1"),
    ),
    (
        "ppo-in-us-west-2",
        elsewhere("us-west-2", ["usw2-az1", "usw2-az2"], PPO),
        "jobs[0].technique",
        ("runs only in us-east-1, ap-northeast-1", "no side images for us-west-2"),
    ),
    (
        "training-without-data",
        config(without(SFT, "data")),
        "jobs[0].data",
        ("Nova Lite sft-lora trains from data", "set data.train"),
    ),
    (
        "data-without-train",
        config({**SFT, "data": {"validation": "sft/validation.jsonl"}}),
        "jobs[0].data.train",
        ("required",),
    ),
    (
        "data-not-a-location",
        config({**SFT, "data": {"train": "/abs/train.jsonl"}}),
        "jobs[0].data.train",
        ("a key in the data bucket", "or an s3:// URI"),
    ),
    (
        "data-s3-with-one-slash",
        config({**SFT, "data": {"train": "s3:/bucket/train.jsonl"}}),
        "jobs[0].data.train",
        ("s3:/bucket/train.jsonl is neither a data-bucket key nor an s3:// URI",
         "write s3://bucket/key"),
    ),
    (
        "data-s3-upper-case",
        config({**SFT, "data": {"train": "S3://bucket/train.jsonl"}}),
        "jobs[0].data.train",
        ("S3://bucket/train.jsonl is neither", "s3:// in lower case"),
    ),
    (
        "validation-s3-without-slashes",
        config({**SFT, "data": {"train": "sft/t.jsonl", "validation": "s3:bucket/v.jsonl"}}),
        "jobs[0].data.validation",
        ("s3:bucket/v.jsonl is neither",),
    ),
    (
        "data-an-https-url",
        config({**SFT, "data": {"train": "https://example.com/train.jsonl"}}),
        "jobs[0].data.train",
        ("https://example.com/train.jsonl is a URL", "read their data from S3 only",
         "copy it into the data bucket"),
    ),
    (
        "evaluation-dataset-a-file-url",
        config({**EVAL, "evaluation": {"task": "gen-qa", "dataset": "file:///d.jsonl"}}),
        "jobs[0].evaluation.dataset",
        ("file:///d.jsonl is a URL",),
    ),
    (
        "rft-without-reward-lambda",
        config(without(RFT, "reward_lambda_arn")),
        "jobs[0].reward_lambda_arn",
        ("reward Lambda function", "set its ARN"),
    ),
    (
        "reward-lambda-on-sft",
        config({**SFT, "reward_lambda_arn": REWARD}),
        "jobs[0].reward_lambda_arn",
        ("only RFT jobs take it",),
    ),
    (
        "reward-lambda-not-an-arn",
        config({**RFT, "reward_lambda_arn": "reward"}),
        "jobs[0].reward_lambda_arn",
        ("a Lambda function ARN such as",),
    ),
    (
        "evaluation-block-missing",
        config(without(EVAL, "evaluation")),
        "jobs[0].evaluation",
        ("an evaluation job needs evaluation.task",),
    ),
    (
        "evaluation-block-on-training",
        config({**SFT, "evaluation": {"task": "general-text"}}),
        "jobs[0].evaluation",
        ("only evaluation jobs take it", "remove it from this Nova Lite sft-lora job"),
    ),
    (
        "gen-qa-without-dataset",
        config({**EVAL, "evaluation": {"task": "gen-qa"}}),
        "jobs[0].evaluation.dataset",
        ("the gen-qa evaluation reads your dataset; set it",),
    ),
    (
        "mmlu-with-dataset",
        config({**EVAL, "evaluation": {"task": "general-text", "dataset": "eval/qa.jsonl"}}),
        "jobs[0].evaluation.dataset",
        ("the general-text benchmark brings its own data; remove it",),
    ),
    (
        "evaluation-on-two-instances",
        config({**EVAL, "replicas": 2}),
        "jobs[0].replicas",
        ("evaluations run on exactly 1 instance",),
    ),
    (
        "unknown-inference-setting",
        config({**EVAL, "evaluation": {"task": "general-text", "inference": {"beams": 4}}}),
        "jobs[0].evaluation.inference.beams",
        ("unknown inference setting", "max_new_tokens, temperature, top_k"),
    ),
    (
        "unknown-hyperparameter",
        config({**SFT, "hyperparameters": {"beta": 0.1}}),
        "jobs[0].hyperparameters.beta",
        (
            "Nova Lite sft-lora has no hyperparameter 'beta'",
            "use one of attention_dropout, ffn_dropout, global_batch_size, hidden_dropout, "
            "learning_rate, lora_alpha, lora_dropout, lora_plus_lr_ratio, max_epochs, "
            "max_length, min_learning_rate, warmup_steps, weight_decay",
        ),
    ),
    (
        "hyperparameter-above-range",
        config({**SFT, "hyperparameters": {"learning_rate": 2}}),
        "jobs[0].hyperparameters.learning_rate",
        ("2 is above the maximum 1",),
    ),
    (
        "hyperparameter-not-allowed",
        config({**SFT, "hyperparameters": {"lora_alpha": 48}}),
        "jobs[0].hyperparameters.lora_alpha",
        ("48 is not allowed; use one of 32, 64, 96, 128, 160, 192",),
    ),
    (
        "batch-size-not-on-this-recipe",
        config({**SFT, "hyperparameters": {"global_batch_size": 128}}),
        "jobs[0].hyperparameters.global_batch_size",
        (
            "Nova Lite sft-lora on ml.p5.48xlarge takes a global batch size of 16, 32, 64, "
            "not 128; use one of them",
        ),
    ),
    (
        "from-a-distillation",
        config(
            {"name": "distill", "model": "lite", "technique": "distillation", "hours_per_run": 2},
            {**SFT, "from": "job:distill"},
        ),
        "jobs[1].from",
        ("distill is a distillation", "leaves no checkpoint here"),
    ),
    (
        "training-from-s3-without-key",
        config({**SFT, "from": "s3://bucket"}),
        "jobs[0].from",
        ("an s3:// checkpoint needs a bucket and a key",),
    ),
    (
        "ppo-replicas",
        config({**PPO, "replicas": 4}),
        "jobs[0].replicas",
        (
            "Nova Micro ppo fixes its replicas per role (critic 1, reward 1, anchor 1, "
            "actor_train 2, actor_generation 2); remove replicas",
        ),
    ),
    (
        "name-longer-than-34",
        config({**SFT, "name": LONG_NAME}),
        "jobs[0].name",
        ("at most 34 characters; got 35",),
    ),
    (
        "name-not-a-dns-label",
        config({**SFT, "name": "SFT_1"}),
        "jobs[0].name",
        ("'SFT_1' does not match a job name", "at most 34 characters"),
    ),
    (
        "duplicate-names",
        config(SFT, {**SFT, "replicas": 8}),
        "jobs",
        ("job names must be unique; repeated: sft",),
    ),
    (
        "technique-not-published-for-the-model",
        config({**SFT, "technique": "rft-lora", "reward_lambda_arn": REWARD}),
        "jobs[0].technique",
        ("rft-lora is not published for Nova Lite on HyperPod",),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "path", "words"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_job_mistake_is_one_sentence_at_its_field(
    data: dict[str, Any], path: str, words: tuple[str, ...]
) -> None:
    issues = issues_of(data)
    assert path in issues, issues
    message = issues[path]
    for word in words:
        assert word in message, message
    # One sentence: one line, no traceback or regex.
    assert "\n" not in message and "^" not in message, message


def test_each_mistake_names_its_own_field_or_words() -> None:
    assert len({(m[2], m[3]) for m in MISTAKES}) == len(MISTAKES)


def test_the_bases_of_the_mistakes_are_valid() -> None:
    # Each mistake above is one edit of a valid config: these are the unedited ones.
    for jobs in ([SFT], [PPO], [RFT], [EVAL], [SFT, {**EVAL, "from": "job:sft"}]):
        assert isinstance(parse_config(config(*jobs)), NovapodConfig)
    assert isinstance(parse_config(no_cluster({**without(SFT, "instance_group")})), NovapodConfig)


@pytest.mark.parametrize(
    ("model", "technique"),
    [("micro", "sft-lora"), ("micro", "sft-full"), ("lite", "sft-full"), ("pro", "sft-lora"),
     ("pro", "sft-full")],
)  # fmt: skip
def test_nova1_sft_takes_65536_tokens_on_p5_as_the_compute_tables_run_it(
    model: str, technique: str
) -> None:
    # The user guide's Nova 1 SFT rows: 65536 tokens on 2 / 4 / 6 x ml.p5.48xlarge (the
    # recipes' 32768 is their default, not a limit). rig is 8 x p5.
    replicas = {"micro": 2, "lite": 4, "pro": 6}[model]
    data = config(
        {**SFT, "model": model, "technique": technique, "replicas": replicas,
         "hyperparameters": {"max_length": 65536}}
    )  # fmt: skip
    (job,) = parse_config(data).jobs
    assert job.hyperparameters["max_length"] == 65536


def test_validation_data_is_taken_where_the_recipe_has_the_key() -> None:
    for technique in ("cpt", "sft-lora", "sft-full"):
        data = config(
            {**SFT, "model": "nova-2-lite", "technique": technique,
             "data": {"train": "t.jsonl", "validation": "v.jsonl"}}
        )  # fmt: skip
        (job,) = parse_config(data).jobs
        assert job.data is not None and job.data.validation == "v.jsonl"


def test_a_region_without_images_is_said_once_for_all_jobs() -> None:
    data = elsewhere("eu-west-2", ["euw2-az1", "euw2-az2"], SFT, {**SFT, "name": "sft-2"})
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    regions = [m for p, m in info.value.issues if p == "region"]
    assert len(regions) == 1, info.value.issues


# ------------------------------------------------------------------- dependencies


def job(**fields: Any) -> Job:
    return Job.model_validate({**SFT, **fields})


def test_from_a_job_implies_after() -> None:
    assert job(**{"from": "job:sft"}, name="eval-sft").predecessors == ("sft",)
    assert job(**{"from": "job:b"}, name="c", after=["a"]).predecessors == ("a", "b")
    # Named in both: once.
    assert job(**{"from": "job:b"}, name="c", after=["b", "a"]).predecessors == ("b", "a")
    assert job(**{"from": "base"}).predecessors == ()
    assert job(**{"from": "s3://bucket/ckpt/"}).predecessors == ()


def test_dependency_order_puts_predecessors_first_and_keeps_config_order() -> None:
    data = config(
        {**EVAL, "name": "eval-dpo", "from": "job:dpo"},
        {**EVAL, "name": "eval-base"},
        {**SFT, "name": "dpo", "technique": "dpo-lora", "from": "job:sft"},
        {**SFT, "name": "sft"},
        {**SFT, "name": "other", "after": ["eval-base"]},
    )
    jobs = parse_config(data).jobs
    # In rounds: the jobs whose predecessors have all come, in config order.
    assert [j.name for j in dependency_order(jobs)] == [
        "eval-base",  # no predecessors, first in the file
        "sft",  # no predecessors
        "dpo",  # from sft
        "other",  # after eval-base; after dpo in the file
        "eval-dpo",  # from dpo
    ]


def test_dependency_order_of_a_cycle_keeps_config_order_one_job_at_a_time() -> None:
    # Validation refuses cycles; dependency_order itself still ends, taking the first
    # pending job of a cycle, then whatever that unblocks.
    a = Job.model_validate({**SFT, "name": "a", "after": ["b"]})
    b = Job.model_validate({**SFT, "name": "b", "after": ["a"]})
    c = Job.model_validate({**SFT, "name": "c", "after": ["a"]})
    d = Job.model_validate({**SFT, "name": "d", "after": ["c", "b"]})
    assert [j.name for j in dependency_order([d, a, b, c])] == ["d", "a", "b", "c"]


def test_planner_findings_name_the_job() -> None:
    """A sizing problem the planner finds is reported at the job it is about."""
    data = config(SFT, {**SFT, "name": "other", "hours_per_run": None})
    issues = issues_of(data)
    assert issues == {
        "jobs[1]": "job 'other': the compute tables give no hours per run for Nova Lite "
        "sft-lora; set hours_per_run"
    }


def test_planner_findings_about_an_unlisted_plan_are_reported_at_capacity() -> None:
    """A plan the planner derives (not listed) has no entry to point at: capacity."""
    data = config(
        {**SFT, "instance_group": None, "plan": None, "runs": 1000, "hours_per_run": 100},
        hyperpod=None,
        eks=None,
    )
    issues = issues_of(data)
    assert list(issues) == ["capacity"], issues
    assert issues["capacity"].startswith(
        "training plan p5-48xlarge would need 100000 h but a plan lasts at most 182 days"
    )


def test_whole_number_settings_read_as_written_in_messages() -> None:
    data = config({**SFT, "hyperparameters": {"global_batch_size": 128.0}})
    issues = issues_of(data)
    assert issues["jobs[0].hyperparameters.global_batch_size"].endswith(
        "takes a global batch size of 16, 32, 64, not 128; use one of them"
    )


def test_dependency_order_of_independent_jobs_is_config_order() -> None:
    jobs = parse_config(config({**SFT, "name": "b"}, {**SFT, "name": "a"})).jobs
    assert [j.name for j in dependency_order(jobs)] == ["b", "a"]


# ------------------------------------------------------------------------ planning


def approved(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with each plan's purchase approving the name validation asks for."""
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    data = copy.deepcopy(data)
    for path, message in info.value.issues:
        found = re.match(r"capacity\.training_plans\[(\d+)\]\.purchase$", path)
        name = re.search(r"set purchase\.approve: (novapod-[a-z0-9-]+)", message)
        assert found and name, info.value.issues
        plan = data["capacity"]["training_plans"][int(found.group(1))]
        plan["purchase"] = {"approve": name.group(1), "max_upfront_fee": 100000}
    return data


def bought(*names: str) -> dict[str, Any]:
    return {"training_plans": [{"name": name} for name in names]}


def groups(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {
        "restricted_instance_groups": [{"name": g, "training_plan": p} for g, p in pairs],
    }


def test_the_planner_sizes_a_job_on_its_groups_plan() -> None:
    data = config(
        {**SFT, "replicas": 8, "instance_group": "rig-sft"},
        {**EVAL, "instance_group": "rig-sft", "from": "job:sft"},
        {**PPO, "instance_group": "rig-ppo"},
        capacity=bought("sft-plan", "ppo-plan"),
        hyperpod=groups(("rig-sft", "sft-plan"), ("rig-ppo", "ppo-plan")),
    )
    plan = parse_config(approved(data)).capacity_plan()
    sized = {j.name: (j.instance_type, j.instance_count) for j in plan.jobs}
    assert sized == {
        "sft": ("ml.p5.48xlarge", 8),  # its replicas, not the recipe's default 4
        "eval": ("ml.p5.48xlarge", 1),  # an evaluation is one instance
        "ppo": ("ml.p5.48xlarge", 7),  # actor_train 2 + rm 1 + cm 1 + am 1 + generation 2
    }
    requests = {r.name: (r.instance_count, r.jobs) for r in plan.training_plans}
    assert requests == {
        "sft-plan": (8, ("sft", "eval")),
        "ppo-plan": (8, ("ppo",)),  # plans sell 8, not 7
    }


def test_the_planner_keeps_the_order_from_and_after_give() -> None:
    """On the 8 instances of plan main all four would start at hour 0; `from: job:` and
    `after` hold two of them back."""
    data = config(
        SFT,  # 4 instances, 10 h
        {**EVAL, "from": "job:sft"},
        {**EVAL, "name": "base-eval"},
        {**EVAL, "name": "judge", "after": ["base-eval"]},
    )
    (request,) = parse_config(data).capacity_plan().training_plans
    assert request.name == "main"
    assert {s.job: (s.start_hour, s.end_hour) for s in request.schedule} == {
        "sft": (0, 10),
        "eval": (10, 11),
        "base-eval": (0, 1),
        "judge": (1, 2),
    }


def test_a_job_without_replicas_is_sized_with_the_recipes_default() -> None:
    data = config(SFT, capacity=bought("p"), hyperpod=groups(("rig", "p")))
    (request,) = parse_config(approved(data)).capacity_plan().training_plans
    assert (request.instance_type, request.instance_count) == ("ml.p5.48xlarge", 4)


def test_a_job_on_a_p4d_group_is_sized_on_p4d() -> None:
    data = config({**SFT, "instance_group": "rig-a100"})
    sized = {j.name: j.instance_type for j in parse_config(data).capacity_plan().jobs}
    assert sized == {"sft": "ml.p4d.24xlarge"}


# ------------------------------------------------------------------ property-based

POOL = ["a", "b", "c", "d"]


@st.composite
def _job_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Half the time edges only to earlier jobs (a valid graph, in a shuffled order),
    else edges to any name of the pool or an unknown one, and names may repeat."""
    ordered = draw(st.booleans())
    if ordered:
        names = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=4, unique=True))
    else:
        names = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=4))
    jobs = []
    for k, name in enumerate(names):
        targets = names[:k] if ordered else [*POOL, "e"]
        entry: dict[str, Any] = {**SFT, "name": name}
        if targets:
            entry["after"] = draw(st.lists(st.sampled_from(targets), max_size=2))
            if draw(st.booleans()):
                entry["from"] = f"job:{draw(st.sampled_from(targets))}"
        jobs.append(entry)
    return draw(st.permutations(jobs))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_job_lists())
def test_random_job_graphs_are_valid_and_ordered_or_refused_at_jobs(
    jobs: list[dict[str, Any]],
) -> None:
    try:
        parsed = parse_config(config(*jobs))
    except ConfigError as exc:
        event("refused")
        assert exc.issues
        for path, message in exc.issues:
            assert path == "jobs" or path.startswith("jobs["), exc.issues
            assert message and "\n" not in message
        return
    event("valid")
    order = [j.name for j in dependency_order(parsed.jobs)]
    assert sorted(order) == sorted(j.name for j in parsed.jobs)
    for position, entry in enumerate(order):
        before = set(order[:position])
        current = next(j for j in parsed.jobs if j.name == entry)
        assert set(current.predecessors) <= before, (entry, order)


# ------------------------------------------------------------------ the jobs example

EXAMPLE = ROOT / "config" / "examples" / "nova-jobs.yaml"


def test_the_jobs_example_shows_every_kind_of_job() -> None:
    config = load_config(EXAMPLE)
    kinds = {
        (j.model, j.technique, j.evaluation.task if j.evaluation else None, j.from_)
        for j in config.jobs
    }
    assert kinds == {
        ("lite", "sft-lora", None, None),
        ("lite", "dpo-lora", None, "job:lite-sft"),
        ("lite", "evaluation", "general-text", None),  # the base model
        ("lite", "evaluation", "gen-qa", "job:lite-sft"),
        ("lite", "evaluation", "llm-judge", "job:lite-dpo"),
        ("nova-2-lite", "rft-lora", None, None),
        ("micro", "ppo", None, None),
    }
    assert [j.name for j in config.jobs if j.mlflow] == ["lite-sft"]
    rft = next(j for j in config.jobs if j.technique == "rft-lora")
    assert rft.reward_lambda_arn == "arn:aws:lambda:us-east-1:111122223333:function:nova-reward"


def test_the_jobs_example_plans_two_p5_plans() -> None:
    plan = load_config(EXAMPLE).capacity_plan()
    sized = {r.name: (r.instance_type, r.instance_count, r.jobs) for r in plan.training_plans}
    assert sized == {
        "tune": (
            "ml.p5.48xlarge",
            4,
            ("lite-sft", "lite-dpo", "lite-eval-base", "lite-eval-sft", "lite-judge-dpo"),
        ),
        "rl": ("ml.p5.48xlarge", 8, ("nova2-rft", "micro-ppo")),  # RFT needs 8
    }


def test_the_jobs_example_renders_every_job_in_dependency_order() -> None:
    files = bundle(load_config(EXAMPLE))
    index = json.loads(files["index.json"])
    assert [entry["job"] for entry in index["jobs"]] == [
        "lite-sft", "lite-eval-base", "nova2-rft",  # nothing to wait for
        "lite-dpo", "lite-eval-sft", "micro-ppo",  # after those
        "lite-judge-dpo",  # after lite-dpo and lite-eval-sft
    ]  # fmt: skip
    for entry in index["jobs"]:
        assert f"recipes/{entry['job']}.yaml" in files
        assert f"launch/{entry['job']}.json" in files


def test_the_old_workloads_key_says_where_jobs_went() -> None:
    data = {**copy.deepcopy(CLUSTER), "capacity": {"workloads": [SFT]}}
    with pytest.raises(ConfigError) as error:
        parse_config(data)
    assert error.value.issues == [
        (
            "capacity.workloads",
            "workloads are now the top-level jobs section: move each entry to jobs, with "
            "instance_group (or plan) and data.train (docs/reference/configuration.md: jobs)",
        )
    ]


def test_dependency_order_breaks_a_cycle_one_job_at_a_time() -> None:
    # a and b wait for each other; c waits for b. One job of the cycle is taken, then
    # b (now unblocked), and only then c: never two jobs at once out of order.
    a = Job.model_validate({**SFT, "name": "a", "after": ["b"]})
    c = Job.model_validate({**SFT, "name": "c", "after": ["b"]})
    b = Job.model_validate({**SFT, "name": "b", "after": ["a"]})
    assert [j.name for j in dependency_order([a, c, b])] == ["a", "b", "c"]
