"""`novapod launch CONFIG JOB [--run]`: the HyperPod CLI commands with the deployed names
(CloudFormation outputs) and predecessors' checkpoints (manifest.json in S3) resolved,
against the fake control plane and a fake `hyperpod` that records its arguments."""

from __future__ import annotations

import json
import shlex
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from novapod.cli import main
from tests.fakes.training_jobs import archive
from tests.handlers.nova_world import (
    ARTIFACTS,
    CLUSTER,
    DATA,
    HYPERPOD_STACK,
    STORAGE_STACK,
    T1,
    T2,
    T3,
    calls,
    config_file,
    hyperpod,
    manifest,
    output_key,
    plane,
    write_fake_hyperpod,
)

__all__ = ["hyperpod", "plane"]  # fixtures

CONNECT = [
    "hyperpod", "connect-cluster", "--cluster-name", CLUSTER,
    "--region", "us-east-1", "--namespace", "nova-jobs",
]  # fmt: skip
SELECTOR = "{required: {sagemaker.amazonaws.com/instance-group-name: ['nova-lite']}}"
SFT_RECIPE = "fine-tuning/nova/nova_1_0/nova_lite/SFT/nova_lite_1_0_p5_p4d_gpu_lora_sft"
EVAL_RECIPE = (
    "evaluation/nova/nova_1_0/nova_lite/nova_lite_1_0_p5_48xl_gpu_bring_your_own_dataset_eval"
)
SFT_OVERRIDES = {
    "container": "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-fine-tune-repo:SM-HP-SFT-latest",
    "instance_type": "ml.p5.48xlarge",
    "recipes.run.data_s3_path": f"s3://{DATA}/sft/train.jsonl",
    "recipes.run.model_name_or_path": "nova-lite/prod",
    "recipes.run.name": "sft-lora",
    "recipes.run.output_s3_path": f"s3://{ARTIFACTS}/nova/nova-lite/sft-lora/",
    "recipes.run.replicas": 4,
    "recipes.training_config.model.optim.lr": 1e-05,
    "recipes.training_config.model.peft.lora_tuning.alpha": 64,
    "recipes.training_config.trainer.max_epochs": 2,
}
ESCROW = "s3://customer-escrow-111122223333-hp-abc123/sft-lora-k3j9x/outputs/checkpoints"


def eval_overrides(checkpoint: str) -> dict[str, Any]:
    return {
        "container": (
            "708977205387.dkr.ecr.us-east-1.amazonaws.com/nova-evaluation-repo:SM-HP-Eval-V2-latest"
        ),
        "instance_type": "ml.p5.48xlarge",
        "recipes.inference.max_new_tokens": 2048,
        "recipes.inference.temperature": 0.0,
        "recipes.run.data_s3_path": f"s3://{DATA}/eval/gen_qa.jsonl",
        "recipes.run.model_name_or_path": checkpoint,
        "recipes.run.name": "eval",
        "recipes.run.output_s3_path": f"s3://{ARTIFACTS}/nova/nova-lite/eval/",
    }


def start_job(recipe: str, overrides: dict[str, Any]) -> list[str]:
    return [
        "hyperpod", "start-job", "--namespace", "nova-jobs", "--recipe", recipe,
        "--override-parameters", json.dumps(overrides, sort_keys=True, separators=(",", ":")),
        "--label-selector", SELECTOR,
    ]  # fmt: skip


def launch(tmp_path: Path, *args: str) -> int:
    return main(["launch", str(config_file(tmp_path)), *args])


def printed_commands(out: str) -> list[list[str]]:
    return [shlex.split(line) for line in out.splitlines()]


def overrides_of(argv: list[str]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(argv[argv.index("--override-parameters") + 1])
    return parsed


def test_prints_the_commands_with_the_deployed_names(plane, tmp_path, capsys) -> None:
    assert launch(tmp_path, "sft-lora") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == (
        "hyperpod connect-cluster --cluster-name novapod-nova-lite --region us-east-1 "
        "--namespace nova-jobs"
    )
    assert lines[1].startswith(
        f"hyperpod start-job --namespace nova-jobs --recipe {SFT_RECIPE} --override-parameters "
        """'{"container":"708977205387.dkr.ecr.us-east-1.amazonaws.com/"""
    )
    # shlex quoting of the selector's own single quotes.
    assert lines[1].endswith(
        "}' --label-selector '{required: {sagemaker.amazonaws.com/instance-group-name: "
        """['"'"'nova-lite'"'"']}}'"""
    )
    connect, start = printed_commands(out)
    assert connect == CONNECT
    assert overrides_of(start) == SFT_OVERRIDES
    assert start == start_job(SFT_RECIPE, SFT_OVERRIDES)
    assert len(lines) == 2
    assert plane.calls_to("DescribeStacks") == [
        {"StackName": STORAGE_STACK},
        {"StackName": HYPERPOD_STACK},
    ]
    # A job from the base model reads nothing in S3.
    assert plane.calls_to("ListObjectsV2") == []


def test_the_checkpoint_comes_from_the_predecessors_manifest(plane, tmp_path, capsys) -> None:
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-k3j9x/manifest.json"),
                     manifest(ESCROW), T1)  # fmt: skip
    assert launch(tmp_path, "eval") == 0
    captured = capsys.readouterr()
    connect, start = printed_commands(captured.out)
    assert connect == CONNECT
    assert overrides_of(start) == eval_overrides(ESCROW)
    assert start == start_job(EVAL_RECIPE, eval_overrides(ESCROW))
    assert (
        f"# sft-lora: checkpoint {ESCROW} from run sft-lora-k3j9x (s3://{ARTIFACTS}/"
        "nova/nova-lite/sft-lora/sft-lora-k3j9x/manifest.json)"
    ) in captured.err
    (listing,) = plane.calls_to("ListObjectsV2")
    assert (listing["Bucket"], listing["Prefix"]) == (ARTIFACTS, "nova/nova-lite/sft-lora/")
    assert [c["Key"] for c in plane.calls_to("GetObject")] == [
        "nova/nova-lite/sft-lora/sft-lora-k3j9x/manifest.json"
    ]


def test_the_checkpoint_comes_from_output_tar_gz(plane, tmp_path, capsys) -> None:
    body = archive(
        {
            "model/config.json": b"{}",  # the manifest need not come first
            "manifest.json": manifest(ESCROW),
        }
    )
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-q1w2e/output/output.tar.gz"),
                     body, T1)  # fmt: skip
    assert launch(tmp_path, "eval") == 0
    _, start = printed_commands(capsys.readouterr().out)
    assert overrides_of(start)["recipes.run.model_name_or_path"] == ESCROW


def test_the_newest_run_wins(plane, tmp_path, capsys) -> None:
    newest = "s3://customer-escrow-111122223333-hp-abc123/sft-lora-zzzzz/outputs/checkpoints"
    # Key order and time order disagree: sft-lora-aaaaa sorts first but is the newest.
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-zzzzz/manifest.json"),
                     manifest(ESCROW), T1)  # fmt: skip
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-mmmmm/output/output.tar.gz"),
                     archive({"manifest.json": manifest("s3://older/ckpt")}), T2)  # fmt: skip
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-aaaaa/manifest.json"),
                     manifest(newest), T3)  # fmt: skip
    # Not a run's manifest: deeper in a run's tree, or beside the runs.
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-aaaaa/x/manifest.json"),
                     manifest("s3://wrong/deeper"), T3 + timedelta(hours=1))  # fmt: skip
    plane.put_object(ARTIFACTS, output_key("sft-lora", "manifest.json"),
                     manifest("s3://wrong/beside"), T3 + timedelta(hours=1))  # fmt: skip
    assert launch(tmp_path, "eval") == 0
    _, start = printed_commands(capsys.readouterr().out)
    assert overrides_of(start)["recipes.run.model_name_or_path"] == newest


def test_a_newer_archive_beats_an_older_manifest(plane, tmp_path, capsys) -> None:
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-aaaaa/manifest.json"),
                     manifest("s3://older/ckpt"), T1)  # fmt: skip
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-bbbbb/output/output.tar.gz"),
                     archive({"./manifest.json": manifest(ESCROW)}), T2)  # fmt: skip
    assert launch(tmp_path, "eval") == 0
    _, start = printed_commands(capsys.readouterr().out)
    assert overrides_of(start)["recipes.run.model_name_or_path"] == ESCROW


def test_refuses_while_the_predecessor_has_no_manifest(plane, hyperpod, tmp_path, capsys) -> None:
    # A run that started (TensorBoard events) but left no manifest has not finished.
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-k3j9x/events.out"), b"x", T1)
    assert launch(tmp_path, "eval", "--run") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "novapod launch: job sft-lora has not finished (no manifest.json under "
        f"s3://{ARTIFACTS}/nova/nova-lite/sft-lora/); launch sft-lora first or wait for it\n"
    )
    assert calls(hyperpod) == []


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (json.dumps({"checkpoint_s3_bucket": "sft-lora-k3j9x/checkpoints"}).encode(), "relative"),
        (b"{not json", "broken"),
        (json.dumps({"other": "s3://x/y"}).encode(), "absent"),
    ],
)
def test_refuses_a_manifest_without_an_s3_checkpoint(plane, tmp_path, capsys, body, why) -> None:
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-k3j9x/manifest.json"), body, T1)
    assert launch(tmp_path, "eval") == 2, why
    assert capsys.readouterr().err == (
        f"novapod launch: job sft-lora's manifest s3://{ARTIFACTS}/nova/nova-lite/sft-lora/"
        "sft-lora-k3j9x/manifest.json names no s3:// checkpoint_s3_bucket; launch sft-lora "
        "again or set from: to the checkpoint's s3:// URI\n"
    )


@pytest.mark.parametrize(
    "body",
    [archive({"model/config.json": b"{}"}), b"not a tar", archive({})[:20]],
    # Named: a gzip header carries its time, and pytest-xdist workers must collect the
    # same test IDs.
    ids=["no-manifest", "not-a-tar", "truncated-gzip"],
)
def test_refuses_an_archive_without_a_manifest(plane, tmp_path, capsys, body) -> None:
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-q1w2e/output/output.tar.gz"),
                     body, T1)  # fmt: skip
    assert launch(tmp_path, "eval") == 2
    assert capsys.readouterr().err == (
        f"novapod launch: job sft-lora's run sft-lora-q1w2e wrote s3://{ARTIFACTS}/nova/"
        "nova-lite/sft-lora/sft-lora-q1w2e/output/output.tar.gz without a manifest.json at "
        "its root; launch sft-lora again or set from: to the checkpoint's s3:// URI\n"
    )


def test_an_after_job_waits_unless_forced(plane, tmp_path, capsys) -> None:
    assert launch(tmp_path, "sft-again") == 2
    assert capsys.readouterr().err == (
        "novapod launch: job sft-lora has not finished (no manifest.json under "
        f"s3://{ARTIFACTS}/nova/nova-lite/sft-lora/); launch sft-lora first or wait for it "
        "(--force launches sft-again anyway)\n"
    )
    assert launch(tmp_path, "sft-again", "--force") == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "# warning: sft-lora has no finished run under "
        f"s3://{ARTIFACTS}/nova/nova-lite/sft-lora/; --force\n"
    )
    _, start = printed_commands(captured.out)
    # Waiting is all `after` does: the model is still the base one.
    assert overrides_of(start)["recipes.run.model_name_or_path"] == "nova-lite/prod"
    plane.put_object(ARTIFACTS, output_key("sft-lora", "sft-lora-k3j9x/manifest.json"),
                     manifest(ESCROW), T1)  # fmt: skip
    assert launch(tmp_path, "sft-again") == 0
    assert capsys.readouterr().err == (
        f"# sft-lora finished: run sft-lora-k3j9x (s3://{ARTIFACTS}/nova/nova-lite/sft-lora/"
        "sft-lora-k3j9x/manifest.json)\n"
    )


def test_a_missing_stack_or_output_names_the_stack(control_plane, tmp_path, capsys) -> None:
    control_plane.reset()
    control_plane.add_stack(
        STORAGE_STACK, {"DataBucketName": DATA, "ArtifactsBucketName": ARTIFACTS}
    )
    assert launch(tmp_path, "sft-lora") == 2
    assert capsys.readouterr().err == (
        "novapod launch: stack novapod-nova-lite-hyperpod is not deployed in us-east-1; deploy "
        "the environment first (cdk deploy novapod-nova-lite-hyperpod)\n"
    )
    control_plane.add_stack(
        HYPERPOD_STACK, {"ClusterArn": "arn:x"}, status="UPDATE_ROLLBACK_COMPLETE"
    )
    assert launch(tmp_path, "sft-lora") == 2
    assert capsys.readouterr().err == (
        "novapod launch: stack novapod-nova-lite-hyperpod (UPDATE_ROLLBACK_COMPLETE) has no "
        "output ClusterName; deploy this version of novapod (cdk deploy "
        "novapod-nova-lite-hyperpod)\n"
    )


def test_an_aws_failure_is_exit_1_with_the_services_words(plane, tmp_path, capsys) -> None:
    plane.error("DescribeStacks", "AccessDenied", status=403, message="not you")
    assert launch(tmp_path, "sft-lora") == 1
    assert capsys.readouterr().err == (
        "novapod launch: an AWS call failed: An error occurred (AccessDenied) when calling "
        "the DescribeStacks operation: not you\n"
    )


def test_mlflow_jobs_need_the_nova_stack_deployed(plane, tmp_path, capsys) -> None:
    assert launch(tmp_path, "tracked") == 2
    assert capsys.readouterr().err == (
        "novapod launch: stack novapod-nova-lite-nova is not deployed in us-east-1; deploy the "
        "environment first (cdk deploy novapod-nova-lite-nova)\n"
    )


def test_mlflow_jobs_log_to_the_deployed_tracking_server(plane, tmp_path, capsys) -> None:
    server = "arn:aws:sagemaker:us-east-1:111122223333:mlflow-tracking-server/novapod-nova-lite"
    plane.add_stack("novapod-nova-lite-nova", {"MlflowTrackingServerArn": server})
    assert launch(tmp_path, "tracked") == 0
    start = shlex.split(capsys.readouterr().out.splitlines()[-1])
    overrides = json.loads(start[start.index("--override-parameters") + 1])
    assert overrides["recipes.run.mlflow_tracking_uri"] == server
    assert overrides["recipes.run.mlflow_experiment_name"] == "novapod-nova-lite"
    assert overrides["recipes.run.mlflow_run_name"] == "tracked"


def test_unknown_and_unlaunchable_jobs(tmp_path, capsys) -> None:
    # Refused before any AWS call: no fake control plane here.
    assert launch(tmp_path, "sft") == 2
    assert capsys.readouterr().err == (
        "novapod launch: no job is named sft; the config's jobs are: sft-lora, eval, "
        "eval-base, sft-again, distill, tracked\n"
    )
    assert main(["launch", str(config_file(tmp_path))]) == 2
    assert capsys.readouterr().err == (
        f"novapod launch: name the job to launch after the config: novapod launch "
        f"{tmp_path / 'env.yaml'} JOB\n"
    )
    assert launch(tmp_path, "distill") == 2
    assert capsys.readouterr().err.startswith(
        "novapod launch: job distill cannot be launched on HyperPod: upstream publishes "
        "distillation only for SageMaker training jobs"
    )


def test_run_executes_the_commands_and_names_the_run(plane, hyperpod, tmp_path, capsys) -> None:
    assert launch(tmp_path, "sft-lora", "--run") == 0
    recorded = calls(hyperpod)
    assert [c["argv"] for c in recorded] == [
        CONNECT[1:],
        start_job(SFT_RECIPE, SFT_OVERRIDES)[1:],
    ]
    assert overrides_of(recorded[1]["argv"]) == SFT_OVERRIDES
    captured = capsys.readouterr()
    assert captured.out == (
        "connected to novapod-nova-lite\n"
        "Final command: python3 main.py ...\n"
        "NAME: sft-lora-abcde\n"
        "STATUS: deployed\n"
        "started job sft-lora as run sft-lora-abcde: outputs in "
        f"s3://{ARTIFACTS}/nova/nova-lite/sft-lora/sft-lora-abcde/\n"
    )
    assert captured.err.splitlines()[0] == f"+ {shlex.join(CONNECT)}"


def test_run_stops_at_the_first_failure(plane, hyperpod, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_HYPERPOD_FAIL", "connect-cluster")
    monkeypatch.setenv("FAKE_HYPERPOD_STATUS", "3")
    assert launch(tmp_path, "sft-lora", "--run") == 3
    assert [c["argv"][0] for c in calls(hyperpod)] == ["connect-cluster"]
    assert capsys.readouterr().err.splitlines()[-1] == (
        "novapod launch: `hyperpod connect-cluster` failed with exit status 3; the commands "
        "after it were not run"
    )


def test_run_without_the_cli_says_how_to_install_it(plane, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    assert launch(tmp_path, "sft-lora", "--run") == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "novapod launch: the HyperPod CLI is not installed; run `make client` (installs "
        "aws/sagemaker-hyperpod-cli release_v2 at a pinned commit)"
    )


def test_run_uses_make_clients_venv_with_its_bin_first_on_path(
    plane, tmp_path, capsys, monkeypatch
) -> None:
    log = tmp_path / "calls.jsonl"
    venv_bin = tmp_path / ".venv-client" / "bin"
    write_fake_hyperpod(venv_bin / "hyperpod", log)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    assert launch(tmp_path, "sft-lora", "--run") == 0
    recorded = calls(log)
    assert [c["argv"][0] for c in recorded] == ["connect-cluster", "start-job"]
    # The CLI runs `aws` and the recipes launcher's python3 from its own environment.
    assert {c["path0"] for c in recorded} == {str(venv_bin)}
    assert "started job sft-lora as run sft-lora-abcde" in capsys.readouterr().out
