"""novapod installed like any package (issue 21): its wheel, built from the sources,
installed into a fresh virtualenv, and an own CDK app, run with the pinned CDK CLI
from a directory outside the checkout (no cdk.json there), that composes novapod's
stacks on a config file as docs/cdk-app.md shows.

The fresh virtualenv sees the dev environment's packages (aws-cdk-lib, cdk-nag, ...)
through a .pth file, which Python reads as a list of directories: it does not run the
.pth files inside them, so the dev environment's editable novapod (a finder its own
.pth installs) stays out, and `novapod` can only be the installed wheel. Nothing is
cached: each session builds the wheel and the virtualenv anew (about 20 s with the
synthesis of a HyperPod config, on one core).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, ROOT

CDK = ROOT / "node_modules" / ".bin" / "cdk"
# HyperPod with a standard group (lifecycle scripts), a restricted group on a plan
# (the purchase handler), Nova jobs (the Nova stacks' handlers and catalog), EKS (the
# bootstrap's build scripts): every kind of file the package ships that synthesis reads.
CONFIG = next(p for p in EXAMPLES if p.name == "rig-plus-standard.yaml")
KINDS = ("network", "storage", "capacity", "eks", "hyperpod", "nova-base", "nova", "monitor")
# Package data a synthesis needs (pyproject.toml: [tool.setuptools.package-data]).
SHIPPED = (
    "novapod/data/feature_flags.json",
    "novapod/lifecycle_scripts/on_create.sh",
    "novapod/constructs/cluster_bootstrap/codebuild/bootstrap.sh",
    "novapod/nova/catalog.yaml",
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CDK.exists() and not os.environ.get("CI"),
        reason="CDK CLI not installed; `make test` installs it (required under CI)",
    ),
]

# docs/cdk-app.md's sample, with the config file as its argument, on the App itself (a
# Stage's templates differ from the checkout's in some logical IDs, which would hide
# what this compares; tests/stacks/test_entry_point.py covers a Stage). It says which
# novapod it imported, so the test can tell the wheel from the checkout.
OWN_APP = """\
import sys

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2

import novapod

print(f"novapod imported from {novapod.__file__}", file=sys.stderr)
app = cdk.App()
config = novapod.load_config(sys.argv[1])
stacks = novapod.build_environment(app, config)
team = cdk.Stack(app, "Team", env=cdk.Environment(account=config.account, region=config.region))
ec2.SecurityGroup(team, "Notebooks", vpc=stacks.network.handle.vpc, description="notebooks")
app.synth()
"""


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    assert done.returncode == 0, f"{command}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def build_wheel(out: Path) -> Path:
    """The wheel, built offline with the dev environment's setuptools (pinned in the dev
    extras) from a copy of the sources: an in-tree build reuses build/, which keeps files
    deleted since and would put them in the wheel."""
    setuptools = metadata.version("setuptools")
    if tuple(int(part) for part in setuptools.split(".")[:2]) < (70, 1):
        pytest.fail(
            f"setuptools {setuptools} of the dev environment builds no wheel without the wheel "
            "package; `make setup` installs the one pyproject.toml's dev extras pin"
        )
    source = out / "source"
    shutil.copytree(
        ROOT / "novapod",
        source / "novapod",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    wheels = out / "dist"
    offline = ("--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check")
    run([sys.executable, "-m", "pip", "wheel", *offline, "--quiet", "-w", str(wheels), str(source)])
    (wheel,) = wheels.glob("novapod-*.whl")
    return wheel


def dev_site_directories() -> list[str]:
    """Where the dev environment's packages are: the site-packages on our path (a .pth
    of the dev environment may add more); not the checkout, which pytest puts first."""
    return [entry for entry in sys.path if entry.endswith("site-packages") and Path(entry).is_dir()]


def fresh_virtualenv(venv: Path, wheel: Path) -> Path:
    """A new virtualenv with the wheel installed (no dependencies: the dev environment's
    are made visible instead, since only PyPI could supply them)."""
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    offline = ("--no-deps", "--no-index", "--disable-pip-version-check", "--quiet")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", *offline, str(wheel)])
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "novapod_test_dev_packages.pth").write_text("\n".join(dev_site_directories()) + "\n")
    return python


def clean_environment(home: Path) -> dict[str, str]:
    """Ours without the checkout on any path, without AWS credentials, the CLI quiet."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "VIRTUAL_ENV", "NOVAPOD_CONFIG"} and not key.startswith("AWS_")
    }
    env.update(
        HOME=str(home),  # no ~/.cdk.json of the user's
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        CDK_DISABLE_VERSION_CHECK="1",
        AWS_EC2_METADATA_DISABLED="true",
    )
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fresh virtualenv's python, the wheel)."""
    work = tmp_path_factory.mktemp("install")
    assert not work.resolve().is_relative_to(ROOT)
    wheel = build_wheel(work)
    return fresh_virtualenv(work / "venv", wheel), wheel


def test_the_wheel_ships_what_synthesis_reads(installed) -> None:
    _, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [name for name in SHIPPED if name not in names] == []


def test_an_own_app_synthesizes_from_the_installed_wheel_outside_the_checkout(
    installed, tmp_path, synth
) -> None:
    python, _ = installed
    project = tmp_path / "my-cdk-app"  # a user's own project: app.py and a config
    project.mkdir()
    (project / "app.py").write_text(OWN_APP)
    shutil.copy2(CONFIG, project / "env.yaml")
    env = clean_environment(tmp_path)
    probe = run(
        [str(python), "-c", "import novapod; print(novapod.__file__)"], cwd=project, env=env
    )
    assert Path(probe.stdout.strip()).is_relative_to(python.parent.parent), probe.stdout

    done = run(
        [str(CDK), "synth", "--quiet", "--app", f"{python} app.py env.yaml", "--output", "out"],
        cwd=project,
        env=env,
        timeout=300,
    )
    imported = next(line for line in done.stderr.splitlines() if "novapod imported from" in line)
    assert Path(imported.rsplit(" ", 1)[1]).is_relative_to(python.parent.parent), imported
    assembly = project / "out"
    manifest = json.loads((assembly / "manifest.json").read_text())
    templates = {  # stack name (the artifact's ID unless it says otherwise) -> template
        artifact["properties"].get("stackName", artifact_id): json.loads(
            (assembly / artifact["properties"]["templateFile"]).read_text()
        )
        for artifact_id, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    assert set(templates) == {f"novapod-mixed-{kind}" for kind in KINDS} | {"Team"}

    # The same stacks as the checkout builds (its feature flags, scripts and handlers):
    # every resource but the CDK's metadata (asset paths differ by design).
    def resources(template: dict) -> dict:
        return {
            logical_id: {k: v for k, v in resource.items() if k != "Metadata"}
            for logical_id, resource in template["Resources"].items()
            if resource["Type"] != "AWS::CDK::Metadata"
        }

    checkout = synth(CONFIG)
    for kind in KINDS:
        assert resources(templates[f"novapod-mixed-{kind}"]) == (
            resources(checkout.templates[kind])
        ), kind
    # The user's stack takes the VPC by a weak reference (novapod's flag, set on the App).
    team = templates["Team"]["Resources"].values()
    (group,) = [r for r in team if r["Type"] == "AWS::EC2::SecurityGroup"]
    assert group["Properties"]["VpcId"]["Fn::GetStackOutput"]["StackName"] == (
        "novapod-mixed-network"
    )
