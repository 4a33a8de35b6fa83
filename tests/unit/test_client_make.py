"""`make client`: the tools it checks first, and the pinned launcher it builds.

`client-tools` runs for real with a PATH of stand-in `helm`/`aws` scripts; the wheel
build is read as make would run it (`make -n`), since it needs GitHub."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="make is not installed")


def tools(tmp_path: Path, **versions: str) -> Path:
    """A bin directory with a stand-in for each named tool (helm prints its version)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, version in versions.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/bash\necho {version}\n")
        script.chmod(0o755)
    return bin_dir


def client_tools(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    assert MAKE is not None
    return subprocess.run(
        [MAKE, "-s", "-C", str(ROOT), "client-tools"],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_helm_make_client_says_so_in_one_sentence(tmp_path: Path) -> None:
    done = client_tools(tools(tmp_path, aws="aws-cli/2.17.0"))
    assert done.returncode != 0
    assert done.stdout.strip() == (
        "make client: helm is not on PATH; install Helm 3 or 4 "
        "(https://helm.sh/docs/intro/install/), which the recipes launcher runs."
    )


def test_without_aws_make_client_says_so_in_one_sentence(tmp_path: Path) -> None:
    done = client_tools(tools(tmp_path, helm="v4.2.4"))
    assert done.returncode != 0
    assert done.stdout.strip().startswith("make client: the aws CLI is not on PATH; install it")


def test_a_helm_other_than_3_or_4_is_refused(tmp_path: Path) -> None:
    done = client_tools(tools(tmp_path, helm="v2.17.0", aws="aws-cli/2.17.0"))
    assert done.returncode != 0
    assert "helm v2.17.0 is neither Helm 3 nor Helm 4" in done.stdout


@pytest.mark.parametrize("helm", ["v3.20.1", "v4.2.4"])
def test_helm_3_and_4_with_aws_pass(tmp_path: Path, helm: str) -> None:
    done = client_tools(tools(tmp_path, helm=helm, aws="aws-cli/2.17.0"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_holds_the_recipes_commit_the_facts_were_read_from() -> None:
    assert MAKE is not None
    dry = subprocess.run(
        [MAKE, "-n", "-C", str(ROOT), "client-wheel"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    facts = (ROOT / "novapod" / "data" / "nova_upstream.yaml").read_text()
    recipes = facts.split("recipes:\n    repo: aws/sagemaker-hyperpod-recipes\n    commit: ")[1]
    commit = recipes.split()[0]
    submodule = "src/hyperpod_cli/sagemaker_hyperpod_recipes"
    # The recipes are fetched at that commit (not the branch tip setup.py would take) ...
    assert f"/{submodule} fetch --quiet --depth 1 " in dry
    assert f"sagemaker-hyperpod-recipes.git {commit}\n" in dry
    # ... git is told not to move them, and the commit is checked after the build.
    assert f"config submodule.{submodule}.update none" in dry
    assert dry.index("update none") < dry.index("pip wheel") < dry.rindex(f"= {commit}")
