"""The nova section: its defaults, and each mistake as one sentence at its field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from novapod.config import ConfigError, load_config, parse_config
from novapod.constructs.bedrock_model.handler.decisions import PropertyError, parse_properties
from tests.conftest import ROOT
from tests.unit.test_config import FULL

SCIENTIST = "arn:aws:iam::111122223333:role/NovaScientist"
ADMIN = "arn:aws:iam::111122223333:role/PlatformAdmin"
EVAL = {
    "name": "sft-eval",
    "model": "lite",
    "technique": "evaluation",
    "hours_per_run": 2,
    "instance_group": "rig",
    "from": "job:sft",
    "evaluation": {"task": "general-text"},
}


def full(nova: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(FULL)
    data["jobs"].append(copy.deepcopy(EVAL))
    data.update(changes)
    if nova is not None:
        data["nova"] = nova
    return data


def issues(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return info.value.issues


def test_defaults_without_a_nova_section() -> None:
    config = parse_config(full())
    assert config.nova is None
    assert config.has_nova_stack
    nova = config.nova_settings
    # Not the Nova SDK's kubeflow: that namespace holds the training operator's
    # ServiceAccount (issue 19), so the jobs get one of their own.
    assert (nova.namespace, nova.scientists, nova.bedrock_models) == ("nova-jobs", [], [])
    assert (nova.mlflow.enabled, nova.mlflow.size) == (False, "Small")


def test_a_full_nova_section_is_kept() -> None:
    config = parse_config(
        full(
            {
                "namespace": "nova-jobs",
                "scientists": [SCIENTIST],
                "mlflow": {"enabled": True, "size": "Medium"},
                "bedrock_models": [
                    {"name": "lite-sft-model", "job": "sft", "deployment": "on-demand"}
                ],
            }
        )
    )
    nova = config.nova_settings
    assert nova.namespace == "nova-jobs"
    assert nova.scientists == [SCIENTIST]
    assert nova.mlflow.size == "Medium"
    model = nova.bedrock_models[0]
    assert (model.name, model.job, model.deployment, model.retain) == (
        "lite-sft-model",
        "sft",
        "on-demand",
        True,
    )


def test_the_example_serves_its_mlflow_job() -> None:
    config = load_config(ROOT / "config/examples/nova-jobs.yaml")
    assert config.nova_settings.mlflow.enabled
    assert config.nova_settings.scientists == [SCIENTIST]
    assert [j.name for j in config.jobs if j.mlflow] == ["lite-sft"]


MISTAKES = [
    # (case id, data, expected (path, message))
    (
        "mlflow-job-without-server",
        full(jobs=[{**FULL["jobs"][0], "mlflow": True}]),
        (
            "jobs[0].mlflow",
            "the job logs to the environment's MLflow server; set nova.mlflow.enabled: true, "
            "or mlflow: false",
        ),
    ),
    (
        "scientist-twice",
        full({"scientists": [SCIENTIST, SCIENTIST]}),
        ("nova.scientists[1]", f"{SCIENTIST} is listed twice; remove one"),
    ),
    (
        "scientist-is-admin",
        full({"scientists": [ADMIN]}, eks={"admin_principals": [ADMIN]}),
        (
            "nova.scientists[0]",
            f"{ADMIN} is in eks.admin_principals, and a principal has one access entry per "
            "cluster; remove it from one of the lists",
        ),
    ),
    (
        "scientist-is-a-user",
        full({"scientists": ["arn:aws:iam::111122223333:user/alice"]}),
        (
            "nova.scientists[0]",
            "'arn:aws:iam::111122223333:user/alice' does not match an IAM role ARN such as "
            "arn:aws:iam::111122223333:role/NovaScientist",
        ),
    ),
    (
        "bedrock-unknown-job",
        full({"bedrock_models": [{"name": "m", "job": "sfx"}]}),
        ("nova.bedrock_models[0].job", "no job is named sfx; use one of sft"),
    ),
    (
        "bedrock-evaluation-job",
        full({"bedrock_models": [{"name": "m", "job": "sft-eval"}]}),
        (
            "nova.bedrock_models[0].job",
            "sft-eval (evaluation) leaves no checkpoint of its own to import; use a training "
            "job: sft",
        ),
    ),
    (
        "bedrock-name-twice",
        full({"bedrock_models": [{"name": "m", "job": "sft"}, {"name": "m", "job": "sft"}]}),
        ("nova.bedrock_models[1].name", "m is used twice; rename one"),
    ),
    (
        "reserved-namespace",
        full({"namespace": "kube-system"}),
        (
            "nova.namespace",
            "kube-system is a namespace Kubernetes or HyperPod keeps for itself; use another, "
            "such as nova-jobs",
        ),
    ),
    (
        "kubeflow-beside-standard-groups",
        full(
            {"namespace": "kubeflow"},
            hyperpod={
                **FULL["hyperpod"],
                "instance_groups": [
                    {"name": "cpu", "instance_type": "ml.m5.2xlarge", "instance_count": 1}
                ],
            },
        ),
        (
            "nova.namespace",
            "kubeflow holds the HyperPod training operator's ServiceAccount, bound "
            "cluster-wide to pods, pods/exec and secrets, and anyone who may launch jobs "
            "there could run any image as it on the standard groups (cpu); use another "
            "namespace, such as nova-jobs (the default)",
        ),
    ),
    (
        "nova-without-hyperpod",
        {k: v for k, v in full({"scientists": [SCIENTIST]}).items() if k != "hyperpod"}
        | {"jobs": [{**FULL["jobs"][0], "instance_group": None, "plan": "main"}]},
        (
            "nova",
            "the Nova environment stack serves jobs on a HyperPod cluster; add jobs and a "
            "hyperpod section, or remove nova",
        ),
    ),
]


@pytest.mark.parametrize(
    ("data", "expected"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_mistake_is_one_sentence_at_its_field(
    data: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert expected in issues(data)


def test_a_sizing_only_config_may_mark_jobs_for_mlflow() -> None:
    # No hyperpod section, so no Nova stack to enable a server in: the recipes keep the
    # placeholder and `novapod launch` says what is missing.
    data = full(
        hyperpod=None,
        jobs=[{**FULL["jobs"][0], "instance_group": None, "plan": "main", "mlflow": True}],
    )
    data.pop("hyperpod")
    assert parse_config(data).jobs[0].mlflow


def test_kubeflow_is_allowed_on_restricted_groups_only() -> None:
    # RIG nodes run only Nova images, so the training operator's ServiceAccount cannot be
    # borrowed by an arbitrary container there (reference section 3).
    assert parse_config(full({"namespace": "kubeflow"})).nova_settings.namespace == "kubeflow"


def test_namespace_must_be_a_dns_label() -> None:
    found = issues(full({"namespace": "Nova_Jobs"}))
    assert found[0][0] == "nova.namespace"
    assert "lowercase letters, digits and '-'" in found[0][1]


def test_bedrock_models_are_imported_so_no_warning() -> None:
    config = parse_config(full({"bedrock_models": [{"name": "m", "job": "sft"}]}))
    assert config.warnings() == []


@pytest.mark.parametrize("name", ["m" * 55, "model-"])
def test_bedrock_model_names_leave_room_for_the_checkpoint_suffix(name: str) -> None:
    found = issues(full({"bedrock_models": [{"name": name, "job": "sft"}]}))
    assert found == [
        (
            "nova.bedrock_models[0].name",
            f"{name} must be at most 54 characters and not end in - or _ (novapod appends "
            "-<8 hex of the checkpoint> to make the Bedrock name)",
        )
    ]
    # The handler takes what the config lets through.
    props = {
        "OutputPrefix": "s3://bucket/nova/e/sft/",
        "RoleArn": "arn:aws:iam::111122223333:role/r",
    }
    parse_properties({**props, "ModelName": "m" * 54})
    with pytest.raises(PropertyError):
        parse_properties({**props, "ModelName": name})
