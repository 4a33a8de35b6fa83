"""The real CDK CLI (`npx cdk synth`) where the CLI itself is under test: the default
config, the fullest example by context, and the ways a synth must fail."""

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


def test_cdk_synth_default_config_offline_whatever_the_aws_settings(tmp_path) -> None:
    """The default config under the real CLI, with a missing profile and broken AWS
    files: neither app.py nor the synthesis reads them."""
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
    manifest = json.loads((tmp_path / "cdk.out" / "manifest.json").read_text())
    stacks = {
        k for k, v in manifest["artifacts"].items() if v["type"] == "aws:cloudformation:stack"
    }
    assert {"novapod-default-network", "novapod-default-storage", "novapod-default-eks"} <= stacks
    network = json.loads(
        (tmp_path / "cdk.out" / "novapod-default-network.template.json").read_text()
    )
    assert any(r["Type"] == "AWS::EC2::VPC" for r in network["Resources"].values())
    assert (tmp_path / "cdk.out" / "novapod-default-eks.template.json").exists()


def test_cdk_synth_takes_the_config_from_context(tmp_path) -> None:
    """The real CLI on the fullest example (HyperPod, jobs, plans, Bedrock). Every shipped
    config is synthesized in-process by the session's `synth` fixture (tests/conftest.py)
    with the same create_app; the CLI adds only app.py, -c and the asset staging, which
    this run and the default config's cover."""
    example = ROOT / "config" / "examples" / "nova-jobs.yaml"
    result = cdk_synth(tmp_path, "-c", f"config={example}")
    assert result.returncode == 0, result.stderr[-2000:]
    written = {p.name for p in (tmp_path / "cdk.out").glob("*.template.json")}
    for kind in ("network", "storage", "eks", "hyperpod", "nova"):
        assert any(name.endswith(f"-{kind}.template.json") for name in written), (kind, written)


def test_app_py_takes_the_config_from_context_then_the_environment() -> None:
    """app.py's choice (the CLI run above proves -c reaches it): context, then
    $NOVAPOD_CONFIG, then config/default.yaml."""
    import runpy

    choose = runpy.run_path(str(ROOT / "app.py"), run_name="app")["config_path"]
    default = str(ROOT / "config" / "default.yaml")
    assert choose("a.yaml", {"NOVAPOD_CONFIG": "b.yaml"}) == "a.yaml"
    assert choose(None, {"NOVAPOD_CONFIG": "b.yaml"}) == "b.yaml"
    assert choose(None, {"NOVAPOD_CONFIG": ""}) == default
    assert choose(None, {}) == default


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


def test_a_plan_window_that_ended_stops_the_synth(tmp_path) -> None:
    example = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
    late = {"NOVAPOD_VALIDATE_AS_OF": "2027-09-01T00:00:00Z"}
    result = cdk_synth(tmp_path, "-c", f"config={example}", env=late)
    assert result.returncode != 0  # the app exits 2; the CDK CLI reports that as 1
    assert (
        f"{example}: capacity.training_plans[0].end_before: 2027-08-29T00:00:00+00:00 is in the "
        "past, and no plan can be bought for a window that has ended"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "cdk.out").glob("*.template.json"))
