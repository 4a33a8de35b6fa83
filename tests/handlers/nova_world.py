"""The world of `novapod launch` and `novapod results` tests: a config with Nova jobs, its
deployed stacks and buckets in the fake control plane, and a fake HyperPod CLI."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.aws_control_plane import FakeControlPlane

EXAMPLE = Path(__file__).resolve().parents[2] / "config/examples/single-rig-purchase.yaml"
# The example (sft-lora, then eval from: job:sft-lora) plus: the base model evaluated on
# the same task, a job that only waits for sft-lora, a distillation and an MLflow job.
EXTRA_JOBS = """\
  - name: eval-base
    model: lite
    technique: evaluation
    hours_per_run: 2
    instance_group: nova-lite
    evaluation: {task: gen-qa, dataset: eval/gen_qa.jsonl}
  - name: sft-again
    model: lite
    technique: sft-lora
    hours_per_run: 5
    instance_group: nova-lite
    after: [sft-lora]
    data: {train: sft/more.jsonl}
  - name: distill
    model: micro
    technique: distillation
    hours_per_run: 6
  - name: tracked
    model: lite
    technique: sft-lora
    hours_per_run: 5
    instance_group: nova-lite
    mlflow: true
    data: {train: sft/train.jsonl}
"""
DATA = "novapod-nova-lite-data-111122223333"
ARTIFACTS = "novapod-nova-lite-artifacts-111122223333"
CLUSTER = "novapod-nova-lite"
STORAGE_STACK = "novapod-nova-lite-storage"
HYPERPOD_STACK = "novapod-nova-lite-hyperpod"
T1 = datetime(2027, 1, 10, 8, 0, tzinfo=UTC)
T2 = datetime(2027, 1, 11, 8, 0, tzinfo=UTC)
T3 = datetime(2027, 1, 12, 8, 0, tzinfo=UTC)

FAKE_HYPERPOD = """\
#!{python}
# Records its argv (and the first PATH entry) as one JSON line; prints the Helm release
# line start-job prints (`NAME: <run>`); exits FAKE_HYPERPOD_STATUS for the subcommand
# named by FAKE_HYPERPOD_FAIL.
import json, os, sys
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "path0": os.environ["PATH"].split(os.pathsep)[0]}}) + "\\n")
command = sys.argv[1]
if os.environ.get("FAKE_HYPERPOD_FAIL") == command:
    print("boom from " + command, file=sys.stderr)
    sys.exit(int(os.environ.get("FAKE_HYPERPOD_STATUS", "1")))
if command == "start-job":
    overrides = json.loads(sys.argv[sys.argv.index("--override-parameters") + 1])
    print("Final command: python3 main.py ...")
    print("NAME: " + overrides["recipes.run.name"] + "-abcde")
    print("STATUS: deployed")
else:
    print("connected to " + sys.argv[sys.argv.index("--cluster-name") + 1])
"""


def config_file(tmp_path: Path) -> Path:
    text = EXAMPLE.read_text().replace("capacity:\n", EXTRA_JOBS + "capacity:\n", 1)
    # `tracked` logs to MLflow, which the config must enable (the server is not deployed here).
    text += "nova:\n  mlflow: {enabled: true}\n"
    path = tmp_path / "env.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def plane(control_plane: FakeControlPlane) -> Iterator[FakeControlPlane]:
    """The fake AWS with the environment's storage and HyperPod stacks deployed."""
    control_plane.reset()
    control_plane.add_stack(
        STORAGE_STACK,
        {
            "DataBucketName": DATA,
            "ArtifactsBucketName": ARTIFACTS,
            "KeyArn": "arn:aws:kms:us-east-1:111122223333:key/abc",
        },
    )
    control_plane.add_stack(
        HYPERPOD_STACK,
        {
            "ClusterName": CLUSTER,
            "ClusterArn": "arn:aws:sagemaker:us-east-1:111122223333:cluster/abc123",
        },
    )
    control_plane.add_bucket(ARTIFACTS)
    yield control_plane
    assert control_plane.violations == []


@pytest.fixture
def hyperpod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake `hyperpod` first on PATH; returns the JSON-lines file of its calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "hyperpod-calls.jsonl"
    write_fake_hyperpod(bin_dir / "hyperpod", log)
    monkeypatch.setenv("PATH", f"{bin_dir}:{_path_without_hyperpod()}")
    monkeypatch.delenv("FAKE_HYPERPOD_FAIL", raising=False)
    return log


def write_fake_hyperpod(path: Path, log: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_HYPERPOD.format(python=sys.executable, log=str(log)))
    path.chmod(0o755)


def _path_without_hyperpod() -> str:
    import os
    import shutil

    entries = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(e for e in entries if not shutil.which("hyperpod", path=e))


def calls(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def manifest(checkpoint: str) -> bytes:
    return json.dumps({"checkpoint_s3_bucket": checkpoint}).encode()


def output_key(job: str, rest: str) -> str:
    return f"nova/nova-lite/{job}/{rest}"
