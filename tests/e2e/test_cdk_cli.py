"""The real CDK CLI (`npx cdk synth`) on the default config, and on a bad one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

CDK = ROOT / "node_modules" / ".bin" / "cdk"

pytestmark = pytest.mark.skipif(
    not CDK.exists() and not os.environ.get("CI"),
    reason="CDK CLI not installed; `make test` installs it (required under CI)",
)


def cdk_synth(tmp_path: Path, *extra: str, env: dict[str, str] | None = None):
    venv_bin = str(Path(os.sys.executable).parent)  # type: ignore[attr-defined]
    environment = {
        **os.environ,
        "PATH": f"{venv_bin}:{os.environ['PATH']}",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CDK_DISABLE_VERSION_CHECK": "1",
    }
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        environment.pop(key, None)
    environment.update(env or {})
    return subprocess.run(
        [str(CDK), "synth", "--quiet", "--output", str(tmp_path / "cdk.out"), *extra],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_cdk_synth_default_config_offline(tmp_path) -> None:
    result = cdk_synth(tmp_path)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "cdk.out" / "manifest.json").read_text())
    stacks = {
        k for k, v in manifest["artifacts"].items() if v["type"] == "aws:cloudformation:stack"
    }
    assert {"novapod-default-network", "novapod-default-storage"} <= stacks
    network = json.loads(
        (tmp_path / "cdk.out" / "novapod-default-network.template.json").read_text()
    )
    assert any(r["Type"] == "AWS::EC2::VPC" for r in network["Resources"].values())


def test_cdk_synth_never_reads_aws_settings(tmp_path) -> None:
    """A missing profile and broken AWS files stop neither app.py nor the synthesis."""
    config = tmp_path / "aws-config"
    config.write_text("[default\nregion = \n")
    credentials = tmp_path / "aws-credentials"
    credentials.write_text("garbage [[[\n")
    hostile = {
        "AWS_PROFILE": "novapod-test-no-such-profile",
        "AWS_CONFIG_FILE": str(config),
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
        "AWS_DEFAULT_REGION": "!!not-a-region",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    result = cdk_synth(tmp_path, env=hostile)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert (tmp_path / "cdk.out" / "novapod-default-eks.template.json").exists()


def test_cdk_synth_selects_config_by_context_and_env(tmp_path) -> None:
    closed = ROOT / "config" / "examples" / "closed-network.yaml"
    by_context = cdk_synth(tmp_path / "ctx", "-c", f"config={closed}")
    assert by_context.returncode == 0, by_context.stderr
    assert (tmp_path / "ctx" / "cdk.out" / "novapod-secure-network.template.json").exists()
    by_env = cdk_synth(tmp_path / "env", env={"NOVAPOD_CONFIG": str(closed)})
    assert by_env.returncode == 0, by_env.stderr
    assert (tmp_path / "env" / "cdk.out" / "novapod-secure-network.template.json").exists()


def test_cdk_synth_bad_config_fails_cleanly(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: dev\nregion: us-east-1\nnetwork:\n  vpc:\n    zone_ids: [use1-az4]\n")
    result = cdk_synth(tmp_path, "-c", f"config={bad}")
    assert result.returncode != 0
    assert f"{bad}: network.vpc.zone_ids: list at least 2 zone IDs, because EKS" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "cdk.out").glob("*.template.json"))


def test_cdk_binary_is_the_pinned_one() -> None:
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    assert shutil.which(str(CDK))
    out = subprocess.run([str(CDK), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(pinned)


def test_every_example_synthesizes_with_the_cdk_cli(tmp_path) -> None:
    """The real CLI on every example, two at a time (cdk-nag runs inside each synth)."""
    from concurrent.futures import ThreadPoolExecutor

    examples = sorted((ROOT / "config" / "examples").glob("*.yaml"))

    def run(example: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
        return example, cdk_synth(tmp_path / example.stem, "-c", f"config={example}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, examples))
    for example, result in results:
        assert result.returncode == 0, f"{example.name}: {result.stderr[-2000:]}"
        written = {p.name for p in (tmp_path / example.stem / "cdk.out").glob("*.template.json")}
        assert any(name.endswith("-network.template.json") for name in written), example.name
        if "hyperpod:" in example.read_text():
            assert any(name.endswith("-hyperpod.template.json") for name in written), example.name


def test_a_plan_window_that_ended_stops_the_synth(tmp_path) -> None:
    example = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
    late = {"NOVAPOD_VALIDATE_AS_OF": "2027-03-01T00:00:00Z"}
    result = cdk_synth(tmp_path, "-c", f"config={example}", env=late)
    assert result.returncode != 0  # the app exits 2; the CDK CLI reports that as 1
    assert (
        f"{example}: capacity.training_plans[0].end_before: 2027-02-28T00:00:00+00:00 is in the "
        "past, and no plan can be bought for a window that has ended"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "cdk.out").glob("*.template.json"))
