"""Which VPC endpoints the config creates for what its jobs' pods call from restricted
groups (Lambda functions, RFT's queues, MLflow) and what its training jobs call from the
private subnets (the S3 gateway, Bedrock for distillation), in open and closed networks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from novapod import yamlsafe
from novapod.config import ConfigError, Network, parse_config
from tests.conftest import ROOT

# Jobs without Lambda functions or MLflow: an SFT job and a gen-qa evaluation.
LITE = yamlsafe.load((ROOT / "config" / "examples" / "single-rig-purchase.yaml").read_text())
# RFT with a reward Lambda, and an SFT job logging to MLflow.
NOVA_JOBS = yamlsafe.load((ROOT / "config" / "examples" / "nova-jobs.yaml").read_text())
# A HyperPod job beside training jobs: SFT and an evaluation on a plan, distillation.
TRAINING_JOBS = yamlsafe.load((ROOT / "config" / "examples" / "training-jobs.yaml").read_text())
REWARD = "arn:aws:lambda:us-east-1:111122223333:function:nova-reward"
METRICS = "arn:aws:lambda:us-east-1:111122223333:function:qa-metrics"
# Written out, not read from novapod.config's tables (they would vouch for themselves).
OPEN_DEFAULT = (
    "s3", "ecr.api", "ecr.dkr", "sts", "logs", "monitoring", "eks", "eks-auth", "ssm",
    "ssmmessages", "ec2messages",
)  # fmt: skip
CLOSED_DEFAULT = (*OPEN_DEFAULT, "lambda", "sqs")


def lite(edit: Any = None) -> dict[str, Any]:
    data = copy.deepcopy(LITE)
    if edit is not None:
        edit(data)
    return data


def _eval(data: dict[str, Any]) -> dict[str, Any]:
    job: dict[str, Any] = data["jobs"][1]
    assert job["technique"] == "evaluation"
    return job


def _metrics(data: dict[str, Any]) -> None:
    _eval(data)["evaluation"]["metrics_lambda_arn"] = METRICS


def _rft_eval(data: dict[str, Any]) -> None:
    _eval(data)["evaluation"] = {
        "task": "rft-eval",
        "dataset": "eval/rft.jsonl",
        "reward_lambda_arn": REWARD,
    }


def _mlflow(data: dict[str, Any]) -> None:
    data["jobs"][0]["mlflow"] = True
    data["nova"] = {"mlflow": {"enabled": True}}


def test_jobs_without_functions_or_mlflow_add_nothing() -> None:
    config = parse_config(lite())
    assert config.job_endpoints == {}
    assert config.endpoint_names == OPEN_DEFAULT


def test_rft_adds_lambda_and_sqs_and_mlflow_its_endpoint() -> None:
    config = parse_config(NOVA_JOBS)
    assert config.job_endpoints == {
        "lambda": "nova2-rft",
        "sqs": "nova2-rft",
        "sagemaker.experiments": "lite-sft",
    }
    assert config.endpoint_names == (*OPEN_DEFAULT, "lambda", "sqs", "sagemaker.experiments")


@pytest.mark.parametrize(
    ("edit", "added"),
    [
        (_metrics, ("lambda",)),  # gen-qa's custom metrics function
        (_rft_eval, ("lambda",)),  # rft-eval's reward function: no RFT queues
        (_mlflow, ("sagemaker.experiments",)),
    ],
    ids=["metrics-lambda", "rft-eval", "mlflow"],
)
def test_an_open_network_gets_what_its_jobs_call(edit, added) -> None:
    config = parse_config(lite(edit))
    assert config.network.endpoint_names == OPEN_DEFAULT  # the network's own, unchanged
    assert config.endpoint_names == (*OPEN_DEFAULT, *added)


# A closed network cannot have an eks section yet (the bootstrap downloads from the
# internet), so no closed config runs jobs on restricted groups: its endpoint choice is
# tested on the network section with what jobs would call.
CLOSED = Network.model_validate(
    {"closed": True, "vpc": {"cidr": "10.30.0.0/16", "zone_ids": ["usw2-az1", "usw2-az2"]}}
)


def test_a_closed_network_has_every_endpoint_but_mlflows_and_adds_it_for_jobs() -> None:
    assert CLOSED.endpoints_with(()) == CLOSED_DEFAULT
    # Nor Bedrock's, which only distillation's training jobs call.
    assert CLOSED.endpoints_with(("bedrock-runtime",)) == (*CLOSED_DEFAULT, "bedrock-runtime")
    assert CLOSED.endpoints_with(("lambda", "sqs")) == CLOSED_DEFAULT
    assert CLOSED.endpoints_with(("sagemaker.experiments", "lambda")) == (
        *CLOSED_DEFAULT,
        "sagemaker.experiments",
    )


def test_jobs_without_a_hyperpod_cluster_add_nothing() -> None:
    # Sized and rendered only: the jobs run elsewhere, not in this VPC.
    data = copy.deepcopy(NOVA_JOBS)
    for key in ("hyperpod", "eks", "nova"):
        del data[key]
    for job in data["jobs"]:
        job["plan"] = {"rig-tune": "tune", "rig-rl": "rl"}[job.pop("instance_group")]
    config = parse_config(data)
    assert config.job_endpoints == {}
    assert config.endpoint_names == OPEN_DEFAULT


def test_a_listed_endpoint_set_must_name_what_the_jobs_call() -> None:
    data = copy.deepcopy(NOVA_JOBS)
    data["network"]["endpoints"] = [*OPEN_DEFAULT, "lambda"]
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert info.value.issues == [
        (
            "network.endpoints",
            "jobs on restricted groups and training jobs reach AWS through endpoints; add sqs "
            "(for job nova2-rft), sagemaker.experiments (for job lite-sft)",
        )
    ]
    data["network"]["endpoints"] += ["sqs", "sagemaker.experiments"]
    assert parse_config(data).endpoint_names == (
        *OPEN_DEFAULT,
        "lambda",
        "sqs",
        "sagemaker.experiments",
    )


def test_a_closed_list_needs_every_endpoint_but_mlflows() -> None:
    listed = CLOSED.model_copy(update={"endpoints": list(reversed(CLOSED_DEFAULT))})
    assert listed.endpoints_with(("sagemaker.experiments",)) == CLOSED_DEFAULT  # as listed
    data = {
        "name": "secure",
        "region": "us-west-2",
        "network": {
            "closed": True,
            "vpc": {"cidr": "10.30.0.0/16", "zone_ids": ["usw2-az1", "usw2-az2"]},
            "endpoints": list(CLOSED_DEFAULT),
        },
    }
    assert parse_config(data).endpoint_names == CLOSED_DEFAULT
    data["network"]["endpoints"] = [*OPEN_DEFAULT, "lambda"]
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert info.value.issues == [
        (
            "network.endpoints",
            "a closed network reaches AWS only through endpoints; add sqs or remove the list "
            "to get all of them",
        )
    ]


def test_training_jobs_add_the_s3_gateway_and_bedrock_for_distillation() -> None:
    config = parse_config(TRAINING_JOBS)
    assert [job.name for job in config.training_jobs] == ["micro-sft", "micro-eval", "distill"]
    assert config.job_endpoints == {"s3": "micro-sft", "bedrock-runtime": "distill"}
    assert config.endpoint_names == (*OPEN_DEFAULT, "bedrock-runtime")


def test_training_jobs_without_distillation_add_no_interface_endpoint() -> None:
    data = copy.deepcopy(TRAINING_JOBS)
    data["jobs"] = [job for job in data["jobs"] if job["technique"] != "distillation"]
    config = parse_config(data)
    assert config.job_endpoints == {"s3": "micro-sft"}
    assert config.endpoint_names == OPEN_DEFAULT


def test_a_training_job_that_logs_to_mlflow_gets_its_endpoint() -> None:
    data = copy.deepcopy(TRAINING_JOBS)
    data["jobs"][1]["mlflow"] = True  # micro-sft, a training job
    data["nova"] = {"mlflow": {"enabled": True}}
    config = parse_config(data)
    assert config.job_endpoints == {
        "s3": "micro-sft",
        "sagemaker.experiments": "micro-sft",
        "bedrock-runtime": "distill",
    }


def test_a_listed_endpoint_set_must_name_what_the_training_jobs_call() -> None:
    data = copy.deepcopy(TRAINING_JOBS)
    data["network"]["endpoints"] = list(OPEN_DEFAULT)
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    assert info.value.issues == [
        (
            "network.endpoints",
            "jobs on restricted groups and training jobs reach AWS through endpoints; add "
            "bedrock-runtime (for job distill)",
        )
    ]
    data["network"]["endpoints"].append("bedrock-runtime")
    assert parse_config(data).endpoint_names == (*OPEN_DEFAULT, "bedrock-runtime")
