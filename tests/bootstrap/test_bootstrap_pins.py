"""The pins file: the shipped values, the loader's refusals, missing() and digest()."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from novapod import yamlsafe
from novapod.facts import eks_facts
from novapod.pins import (
    PinsError,
    default_pins,
    load_pins,
    parse_pins,
)

ROOT = Path(__file__).resolve().parents[2]
PINS_FILE = ROOT / "novapod" / "data" / "hyperpod_dependencies.yaml"


def raw() -> dict[str, Any]:
    data: dict[str, Any] = yamlsafe.load(PINS_FILE.read_text(encoding="utf-8"))
    return data


def test_shipped_pins_are_complete_and_well_formed() -> None:
    pins = default_pins()
    assert pins.repository == "https://github.com/aws/sagemaker-hyperpod-cli.git"
    assert pins.chart.path == "helm_chart/HyperPodHelmChart"
    assert pins.chart.namespace == "kube-system"
    assert pins.chart.release == "dependencies"  # the chart README's release name
    assert pins.rig.script == "helm_chart/install_rig_dependencies.sh"
    assert pins.rig.release == "rig-dependencies"
    assert pins.missing(rig=True) == ()
    for tool in pins.tools:
        assert tool.sha256 is not None and re.fullmatch(r"[0-9a-f]{64}", tool.sha256)
        assert tool.version in tool.url and "amd64" in tool.url
    assert pins.helm.archive_member == "linux-amd64/helm"
    assert pins.helm.version.startswith("v3.")
    assert int(pins.yq.version.split(".")[0].lstrip("v")) >= 4  # the RIG script needs yq 4


RELEASE_V2_HEAD_2026_04_14 = "abcdc77b3e4ca160874021c6615baf0dbb96c69b"


def test_the_pinned_commit_is_recorded_with_its_branch() -> None:
    # The commit pinned before (0543363c...) was reachable only from refs/pull/107/head.
    pins = default_pins()
    assert (pins.chart.commit, pins.chart.branch) == (RELEASE_V2_HEAD_2026_04_14, "release_v2")
    assert (pins.rig.commit, pins.rig.branch) == (RELEASE_V2_HEAD_2026_04_14, "release_v2")


def test_the_health_agent_image_follows_the_region() -> None:
    agent = default_pins().health_agent
    assert agent.values_key == "health-monitoring-agent.hmaimage"
    assert agent.image("eu-west-2") == (
        "011528288831.dkr.ecr.eu-west-2.amazonaws.com/"
        "hyperpod-health-monitoring-agent:1.0.674.0_1.0.199.0"
    )
    assert str(agent.image("us-east-1")).startswith("767398015722.dkr.ecr.us-east-1.")
    assert agent.image("me-central-1") is None  # no registry known: the build refuses
    # Every RIG region has one.
    assert all(agent.image(r) for r in eks_facts().rig_regions)


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
        (
            lambda d: d["chart"].update(branch="refs/pull/107/head"),
            "chart.branch: must name the branch the commit belongs to",
        ),
        (lambda d: d["rig"].update(branch="pull/107/head"), "rig.branch: must name the branch"),
        (lambda d: d["rig"].pop("branch"), "rig.branch: is required"),
        (
            lambda d: d["health_monitoring_agent"]["registry_accounts"].update(
                {"us-east-1": 767398015722}
            ),
            "registry_accounts.us-east-1: must be a quoted 12-digit account ID",
        ),
        (
            lambda d: d["health_monitoring_agent"]["registry_accounts"].update(
                {"Virginia": "1" * 12}
            ),
            "registry_accounts.Virginia: is not an AWS region name",
        ),
        (
            lambda d: d["health_monitoring_agent"].update(tag="latest tag"),
            "health_monitoring_agent.tag: is not well formed",
        ),
        (lambda d: d.pop("health_monitoring_agent"), "health_monitoring_agent: must be a mapping"),
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
    assert pins.digest() != replace(pins, rig=replace(pins.rig, branch="release_v3")).digest()
    agent = replace(pins.health_agent, tag="1.0.700.0_1.0.200.0")
    assert pins.digest() != replace(pins, health_agent=agent).digest()


def test_revisions_are_commit_and_path() -> None:
    pins = default_pins()
    assert pins.chart.revision == f"{pins.chart.commit}:helm_chart/HyperPodHelmChart"
    assert pins.rig.revision == f"{pins.rig.commit}:helm_chart/install_rig_dependencies.sh"
