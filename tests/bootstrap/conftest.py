"""Fixtures for ClusterBootstrap tests: a sandbox that runs bootstrap.sh against fakes.

The fakes (tests/bootstrap/fakes/) record every call as one shell-quoted line. `curl`
serves files from a downloads folder whose sha256s the sandbox computes and passes as
pins, so `sha256sum -c` (the real one) verifies real bytes. The "downloaded" helm,
kubectl and yq are themselves fakes: once installed they are what the script runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from novapod.constructs.cluster_bootstrap.buildspec import access_variables, pin_variables
from novapod.nova.kubernetes import nova_access
from novapod.pins import HyperPodDependencies, default_pins

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "novapod" / "constructs" / "cluster_bootstrap" / "codebuild"
BOOTSTRAP = SCRIPTS / "bootstrap.sh"
FAKES = Path(__file__).resolve().parent / "fakes"
CLUSTER = "novapod-test-eks"
REGION = "us-east-1"
CHART_COMMIT = "1" * 40
RIG_COMMIT = "2" * 40


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Sandbox:
    """One isolated run directory: fakes on PATH, downloads, state and the call log."""

    root: Path
    pins: HyperPodDependencies
    env: dict[str, str] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        return self.root / "calls.log"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"

    def run(
        self, mode: str = "install", *, rig: bool = True, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """bootstrap.sh MODE with stdin closed (/dev/null), as CodeBuild runs it."""
        self.log.write_text("")
        variables = pin_variables(self.pins, mode="install", rig=rig, region=REGION)
        full_env = {
            "PATH": f"{self.root / 'bin'}:/usr/bin:/bin",
            "HOME": str(self.root / "home"),
            "TMPDIR": str(self.root / "tmp"),
            "CLUSTER_NAME": CLUSTER,
            "AWS_REGION": REGION,
            "FAKE_LOG": str(self.log),
            "FAKE_STATE": str(self.state),
            "FAKE_DOWNLOADS": str(self.downloads),
            "FAKE_REPO_TREE": str(self.root / "repo"),
            "FAKE_GIT_COMMITS": f"{CHART_COMMIT} {RIG_COMMIT}",
            **variables,
            **self.env,
            **env,
        }
        return subprocess.run(
            ["bash", str(BOOTSTRAP), mode],
            env=full_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def calls(self, program: str | None = None) -> list[list[str]]:
        lines = [shlex.split(line) for line in self.log.read_text().splitlines() if line]
        return [c for c in lines if program is None or c[0] == program]

    def releases(self) -> dict[str, str]:
        folder = self.state / "helm"
        if not folder.is_dir():
            return {}
        return {p.name: p.read_text().strip() for p in folder.iterdir()}

    def marker(self) -> dict[str, str]:
        folder = self.state / "configmap"
        if not folder.is_dir():
            return {}
        return {p.name: p.read_text() for p in folder.iterdir()}

    def set_release(self, name: str, status: str = "deployed") -> None:
        (self.state / "helm").mkdir(parents=True, exist_ok=True)
        (self.state / "helm" / name).write_text(status)

    def set_marker(self, **data: str) -> None:
        (self.state / "configmap").mkdir(parents=True, exist_ok=True)
        for key, value in data.items():
            (self.state / "configmap" / key).write_text(value)

    def namespaces(self) -> dict[str, str]:
        """Namespace -> its app.kubernetes.io/managed-by label ("" when unlabelled)."""
        folder = self.state / "namespaces"
        if not folder.is_dir():
            return {}
        return {p.name: p.read_text() for p in folder.iterdir()}

    def set_namespace(self, name: str, managed_by: str = "") -> None:
        (self.state / "namespaces").mkdir(parents=True, exist_ok=True)
        (self.state / "namespaces" / name).write_text(managed_by)

    def set_jobs(self, namespace: str, *names: str) -> None:
        (self.state / "pytorchjobs").mkdir(parents=True, exist_ok=True)
        lines = "".join(f"pytorchjob.kubeflow.org/{n}\n" for n in names)
        (self.state / "pytorchjobs" / namespace).write_text(lines)

    def applied(self) -> list[Any]:
        """The documents given to `kubectl apply --server-side`, in order, parsed."""
        folder = self.state / "applied"
        if not folder.is_dir():
            return []
        files = sorted(folder.glob("*.json"), key=lambda p: int(p.stem))
        return [json.loads(p.read_text()) for p in files]


def nova_env(namespace: str) -> dict[str, str]:
    """The build variables of a config whose Nova jobs run in `namespace`."""
    return access_variables(nova_access(namespace))


def _executable(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    target.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    for name in ("curl", "aws", "git"):
        _executable(FAKES / name, tmp_path / "bin" / name)
    for folder in ("home", "tmp", "state"):
        (tmp_path / folder).mkdir()

    # What the "remote" repository holds at the pinned commits.
    repo = tmp_path / "repo" / "helm_chart"
    (repo / "HyperPodHelmChart").mkdir(parents=True)
    (repo / "HyperPodHelmChart" / "Chart.yaml").write_text("apiVersion: v2\nname: fake\n")
    _executable(FAKES / "install_rig_dependencies.sh", repo / "install_rig_dependencies.sh")

    pins = default_pins()
    downloads = tmp_path / "downloads"
    helm_tree = tmp_path / "helm-tree"
    _executable(FAKES / "helm", helm_tree / "linux-amd64" / "helm")
    tarball = downloads / pins.helm.url.rsplit("/", 1)[1]
    downloads.mkdir()
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(helm_tree / "linux-amd64", arcname="linux-amd64")
    kubectl = downloads / pins.kubectl.url.rsplit("/", 1)[1]
    yq = downloads / pins.yq.url.rsplit("/", 1)[1]
    _executable(FAKES / "kubectl", kubectl)
    _executable(FAKES / "yq", yq)

    pins = replace(
        pins,
        chart=replace(pins.chart, commit=CHART_COMMIT),
        rig=replace(pins.rig, commit=RIG_COMMIT),
        helm=replace(pins.helm, sha256=sha256(tarball)),
        kubectl=replace(pins.kubectl, sha256=sha256(kubectl)),
        yq=replace(pins.yq, sha256=sha256(yq)),
    )
    assert os.access(BOOTSTRAP, os.R_OK)
    yield Sandbox(root=tmp_path, pins=pins)
