"""The real CDK CLI (`npx cdk synth`) where the CLI itself is under test: the default
config, the fullest example by context, and the ways a synth must fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

CDK = ROOT / "node_modules" / ".bin" / "cdk"

pytestmark = pytest.mark.skipif(
    not CDK.exists() and not os.environ.get("CI"),
    reason="CDK CLI not installed; `make test` installs it (required under CI)",
)


def cli_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """Ours with the venv first on PATH (the CLI runs `python3 app.py`), no AWS
    credentials, and `env`."""
    venv_bin = str(Path(sys.executable).parent)
    environment = {
        **os.environ,
        "PATH": f"{venv_bin}:{os.environ['PATH']}",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CDK_DISABLE_VERSION_CHECK": "1",
    }
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        environment.pop(key, None)
    environment.update(env or {})
    return environment


def cdk_synth(tmp_path: Path, *extra: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [str(CDK), "synth", "--quiet", "--output", str(tmp_path / "cdk.out"), *extra],
        cwd=ROOT,
        env=cli_environment(env),
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
    result = cdk_synth(tmp_path, env={**hostile, "NOVAPOD_CONFIG": ""})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    # Which config the CLI's app read, and its stacks (what `cdk destroy NAME` can select).
    assert (
        f"novapod: config {ROOT / 'config' / 'default.yaml'} (the default; choose another "
        "with -c config=FILE or $NOVAPOD_CONFIG): stacks novapod-default-network, "
        "novapod-default-storage, novapod-default-eks\n"
    ) in result.stderr
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
    result = cdk_synth(tmp_path, "-c", f"config={example}", env={"NOVAPOD_CONFIG": "other.yaml"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"novapod: config {example} (-c config): stacks novapod-nova-jobs-network, " in (
        result.stderr
    )
    written = {p.name for p in (tmp_path / "cdk.out").glob("*.template.json")}
    for kind in ("network", "storage", "eks", "hyperpod", "nova"):
        assert any(name.endswith(f"-{kind}.template.json") for name in written), (kind, written)


def test_app_py_takes_the_config_from_context_then_the_environment() -> None:
    """app.py's choice (the CLI run above proves -c reaches it): context, then
    $NOVAPOD_CONFIG, then config/default.yaml, and where it came from (app.py prints it)."""
    import runpy

    choose = runpy.run_path(str(ROOT / "app.py"), run_name="app")["config_path"]
    default = str(ROOT / "config" / "default.yaml")
    chosen_by_default = "the default; choose another with -c config=FILE or $NOVAPOD_CONFIG"
    assert choose("a.yaml", {"NOVAPOD_CONFIG": "b.yaml"}) == ("a.yaml", "-c config")
    assert choose(None, {"NOVAPOD_CONFIG": "b.yaml"}) == ("b.yaml", "$NOVAPOD_CONFIG")
    assert choose(None, {"NOVAPOD_CONFIG": ""}) == (default, chosen_by_default)
    assert choose(None, {}) == (default, chosen_by_default)


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


# `make destroy` (tools/cdk_destroy.py) over the real CLI, synthesized once. No call
# reaches AWS: the selection happens on the synthesized assembly, and without a terminal
# `cdk destroy` asks for no confirmation and deletes nothing.
OFFLINE = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_DEFAULT_REGION": "us-east-1"}
DEFAULT_STACKS = "novapod-default-network, novapod-default-storage, novapod-default-eks"


def offline(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=ROOT,
        env=cli_environment(OFFLINE),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_make_destroy_stops_on_a_stack_the_config_does_not_define(tmp_path) -> None:
    out = tmp_path / "out"
    wrapper = [sys.executable, str(ROOT / "tools" / "cdk_destroy.py")]
    names = ("novapod-default-eks", "novapod-prod-network")
    done = offline([*wrapper, "--config", "config/default.yaml", "--output", str(out), *names])
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"novapod: config config/default.yaml (-c config): stacks {DEFAULT_STACKS}\n" in (
        done.stderr
    )
    assert (
        "make destroy: STACK novapod-prod-network matches none of the stacks of "
        f"config/default.yaml ({DEFAULT_STACKS}); name one of those, or give CONFIG= the "
        "file that defines it\n"
    ) in done.stderr
    assert "novapod-default-eks matches none" not in done.stderr
    # What the pinned CLI alone does with that name: one line, and success.
    bare = offline([str(CDK), "destroy", "--app", str(out), "novapod-prod-network"])
    assert bare.returncode == 0
    # (the CLI writes its messages to stderr, and to stdout when CI is set)
    assert "No stacks match the name(s): novapod-prod-network" in bare.stderr + bare.stdout
    # What make destroy hands a name of the config to (tests/unit/test_cdk_destroy.py):
    # it selects the stack, and cdk destroy itself refuses to go on without a terminal.
    handed = offline(
        [str(CDK), "destroy", "--exclusively", "--app", str(out), "novapod-default-n*"]
    )
    assert handed.returncode == 1, handed.stderr[-2000:]
    assert "terminal (TTY) is not attached" in handed.stderr + handed.stdout
