"""`novapod validate` and `novapod schema`: exit codes and messages, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from novapod.cli import main
from tests.conftest import ALL_CONFIGS


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "novapod.cli", *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_validate_accepts_shipped_configs(path, capsys) -> None:
    assert main(["validate", str(path)]) == 0
    assert "valid" in capsys.readouterr().out


def test_validate_reports_field_paths_with_status_2(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: Dev\nregion: us-east-1\nnetwork:\n  vpc:\n    zone_ids: [use1-az4]\n    colour: blue\n"
    )
    result = run("validate", str(bad))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("name: 'Dev' does not match")
    assert "network.vpc.zone_ids: the list should have at least 2 items" in result.stderr
    assert "network.vpc.colour: unknown key" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "text",
    ["", "just a string", "name: [unclosed\n", "- a\n- b\n", "name: dev\nnetwork: 3\n"],
    ids=["empty", "scalar", "bad-yaml", "list", "wrong-type"],
)
def test_validate_never_tracebacks(tmp_path, text) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    result = run("validate", str(path))
    assert result.returncode == 2
    assert result.stderr.strip()
    assert "Traceback" not in result.stderr


def test_validate_missing_file(tmp_path) -> None:
    result = run("validate", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert "cannot read" in result.stderr and "Traceback" not in result.stderr


def test_schema_is_json_for_editors(capsys) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "novapod environment configuration"
    assert "network" in schema["properties"]
