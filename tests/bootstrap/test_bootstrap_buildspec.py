"""build_spec: pinned, non-interactive, runs bootstrap.sh in the requested mode."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from novapod.constructs.cluster_bootstrap.buildspec import UNPINNED, build_spec
from novapod.pins import default_pins

INTERACTIVE = re.compile(r"\bread\b|\byes\s*\||--interactive|\s-it?\b|\bselect\b")


@pytest.mark.parametrize("mode", ["install", "delete"])
@pytest.mark.parametrize("rig", [True, False])
def test_buildspec_pins_every_version_and_checksum(mode: str, rig: bool) -> None:
    pins = default_pins()
    spec = build_spec(pins, mode, rig, "eu-west-2")  # type: ignore[arg-type]
    variables = spec["env"]["variables"]
    assert spec["version"] == "0.2"
    assert spec["env"]["shell"] == "bash"
    for tool, prefix in ((pins.helm, "HELM"), (pins.kubectl, "KUBECTL"), (pins.yq, "YQ")):
        assert variables[f"{prefix}_VERSION"] == tool.version
        assert variables[f"{prefix}_URL"] == tool.url
        assert variables[f"{prefix}_SHA256"] == tool.sha256
    assert variables["CHART_COMMIT"] == pins.chart.commit
    assert variables["RIG_COMMIT"] == pins.rig.commit
    assert variables["CHART_BRANCH"] == variables["RIG_BRANCH"] == "release_v2"
    assert variables["HMA_VALUES_KEY"] == "health-monitoring-agent.hmaimage"
    assert variables["HMA_IMAGE"].startswith("011528288831.dkr.ecr.eu-west-2.amazonaws.com/")
    assert variables["CHART_NAMESPACE"] == "kube-system"
    assert variables["CHART_RELEASE"] == "dependencies"
    assert variables["RIG_RELEASE"] == "rig-dependencies"
    assert variables["HYPERPOD_REPO_URL"] == pins.repository
    assert variables["PINS_SHA256"] == pins.digest()
    assert variables["BOOTSTRAP_MODE"] == mode
    assert variables["INSTALL_RIG"] == ("true" if rig else "false")
    assert all(isinstance(v, str) and v for v in variables.values())


def test_buildspec_runs_bootstrap_with_the_mode_and_stdin_closed() -> None:
    commands = build_spec(default_pins(), "delete", True, "us-east-1")["phases"]["build"][
        "commands"
    ]
    assert commands[0].startswith('aws s3 cp "s3://${SCRIPTS_BUCKET}/${SCRIPTS_KEY}"')
    assert "unzip" in commands[1]
    assert re.fullmatch(r'bash \S+/bootstrap\.sh "\$\{BOOTSTRAP_MODE\}" < /dev/null', commands[2])


def test_buildspec_has_no_interactive_command() -> None:
    spec = build_spec(default_pins(), "install", True, "us-east-1")
    for command in spec["phases"]["build"]["commands"]:
        assert not INTERACTIVE.search(command), command
    assert "sudo" not in json.dumps(spec)


def test_null_pins_become_a_value_the_script_refuses() -> None:
    pins = default_pins()
    pins = replace(pins, yq=replace(pins.yq, sha256=None), rig=replace(pins.rig, commit=None))
    variables = build_spec(pins, "install", True, "me-central-1")["env"]["variables"]
    assert variables["YQ_SHA256"] == UNPINNED
    assert variables["RIG_COMMIT"] == UNPINNED
    assert variables["HMA_IMAGE"] == UNPINNED  # no registry known in that region
    assert not re.fullmatch(r"[0-9a-f]{64}", UNPINNED)


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode must be one of install, delete"):
        build_spec(default_pins(), "upgrade", True, "us-east-1")  # type: ignore[arg-type]
