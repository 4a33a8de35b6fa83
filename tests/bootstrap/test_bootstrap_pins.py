"""The pins file: the shipped values, the loader's refusals, missing() and digest()."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from novapod.constructs.cluster_bootstrap.pins import (
    PinsError,
    default_pins,
    load_pins,
    parse_pins,
)

ROOT = Path(__file__).resolve().parents[2]
PINS_FILE = ROOT / "novapod" / "data" / "hyperpod_dependencies.yaml"


def raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(PINS_FILE.read_text(encoding="utf-8"))
    return data


def test_shipped_pins_are_complete_and_well_formed() -> None:
    pins = default_pins()
    assert pins.repository == "https://github.com/aws/sagemaker-hyperpod-cli.git"
    assert pins.chart.path == "helm_chart/HyperPodHelmChart"
    assert pins.chart.namespace == "kube-system"
    assert pins.chart.release == "dependencies"  # the RIG script patches dependencies-*
    assert pins.rig.script == "helm_chart/install_rig_dependencies.sh"
    assert pins.rig.release == "rig-dependencies"
    assert pins.missing(rig=True) == ()
    for tool in pins.tools:
        assert tool.sha256 is not None and re.fullmatch(r"[0-9a-f]{64}", tool.sha256)
        assert tool.version in tool.url and "amd64" in tool.url
    assert pins.helm.archive_member == "linux-amd64/helm"
    assert pins.helm.version.startswith("v3.")
    assert int(pins.yq.version.split(".")[0].lstrip("v")) >= 4  # the RIG script needs yq 4


def test_load_pins_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "pins.yaml"
    path.write_text(PINS_FILE.read_text(encoding="utf-8"))
    assert load_pins(path) == default_pins()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["tools"]["helm"].update(sha256="ABC"), "tools.helm.sha256: must be 64"),
        (
            lambda d: d["tools"]["kubectl"].update(sha256="0" * 63),
            "tools.kubectl.sha256: must be 64",
        ),
        (lambda d: d["chart"].update(commit="main"), "chart.commit: must be a full 40"),
        (lambda d: d["rig"].update(commit="A" * 40), "rig.commit: must be a full 40"),
        (lambda d: d["chart"].update(namespace="aws-hyperpod"), "chart.namespace: must be"),
        (lambda d: d["chart"].update(release="Deps"), "chart.release: must be a Helm release"),
        (lambda d: d["chart"].update(path="../etc"), "chart.path: must be a relative path"),
        (lambda d: d["chart"].update(timeout="2h"), "chart.timeout: must be a Helm duration"),
        (lambda d: d["chart"].update(timeout="45m"), "chart.timeout: must be at most 30m"),
        (lambda d: d["chart"].update(wait="yes"), "chart.wait: must be true or false"),
        (lambda d: d.update(repository="git@github.com:x/y"), "repository: must be an https"),
        (
            lambda d: d["tools"]["yq"].update(url=d["tools"]["yq"]["url"].replace("4.53", "4.52")),
            "tools.yq.url: does not name version v4.53.6",
        ),
        (lambda d: d["tools"]["yq"].update(version="4.53.6"), "tools.yq.version: must look like"),
        (lambda d: d["tools"].pop("kubectl"), "tools.kubectl: must be a mapping"),
        (lambda d: d["tools"]["helm"].pop("archive_member"), "archive_member: is required"),
        (lambda d: d["tools"]["yq"].update(archive_member="x"), "unknown key(s) archive_member"),
        (lambda d: d["chart"].pop("commit"), "chart.commit: is required"),
        (lambda d: d.update(charts={}), ": unknown key(s) charts"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_invalid_pins_name_the_field(edit: Any, message: str) -> None:
    data = raw()
    edit(data)
    with pytest.raises(PinsError) as error:
        parse_pins(data, source="pins.yaml")
    assert str(error.value).startswith("pins.yaml: ")
    assert message in str(error.value)


def test_invalid_yaml_is_a_pins_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("chart: [unclosed\n")
    with pytest.raises(PinsError, match="not valid YAML"):
        load_pins(path)
    path.write_text("- a list\n")
    with pytest.raises(PinsError, match="must be a mapping"):
        load_pins(path)


def test_null_values_are_kept_and_named_by_missing() -> None:
    data = raw()
    data["tools"]["yq"]["sha256"] = None
    data["rig"]["commit"] = None
    data["tools"]["helm"]["sha256"] = None
    pins = parse_pins(data, source="pins.yaml")
    assert pins.yq.sha256 is None and pins.rig.commit is None
    assert pins.missing(rig=False) == ("tools.helm.sha256",)
    assert pins.missing(rig=True) == ("tools.helm.sha256", "rig.commit", "tools.yq.sha256")


def test_digest_follows_every_pin() -> None:
    pins = default_pins()
    assert re.fullmatch(r"[0-9a-f]{64}", pins.digest())
    assert pins.digest() == default_pins().digest()
    assert pins.digest() != replace(pins, chart=replace(pins.chart, commit="f" * 40)).digest()
    assert pins.digest() != replace(pins, yq=replace(pins.yq, sha256="e" * 64)).digest()
    assert pins.digest() != replace(pins, chart=replace(pins.chart, wait=True)).digest()


def test_revisions_are_commit_and_path() -> None:
    pins = default_pins()
    assert pins.chart.revision == f"{pins.chart.commit}:helm_chart/HyperPodHelmChart"
    assert pins.rig.revision == f"{pins.rig.commit}:helm_chart/install_rig_dependencies.sh"
