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


def test_plan_json_follows_the_published_schema(capsys) -> None:
    import jsonschema

    from novapod.planning import CAPACITY_PLAN_JSON_SCHEMA
    from tests.conftest import ROOT

    assert main(["plan", str(ROOT / "config/examples/single-rig-purchase.yaml"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, CAPACITY_PLAN_JSON_SCHEMA)
    (plan,) = document["training_plans"]
    assert (plan["name"], plan["instance_count"], plan["duration_hours"]) == ("lite-sft", 4, 144)
    assert plan["target_resources"] == ["hyperpod-cluster"]
    assert [j["name"] for j in document["jobs"]] == ["sft-lora", "eval"]
    assert document["jobs"][0]["instance_hours"] == 480


def test_plan_table_lists_jobs_and_plans(capsys) -> None:
    from tests.conftest import ROOT

    assert main(["plan", str(ROOT / "config/examples/single-rig-purchase.yaml")]) == 0
    out = capsys.readouterr().out
    assert "lite-sft" in out and "sft-lora" in out and "ml.p5.48xlarge" in out


def test_plan_reports_planning_errors_as_config_errors(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: dev\nregion: us-east-1\nnetwork:\n  vpc:\n    zone_ids: [use1-az4, use1-az6]\n"
        "capacity:\n  workloads:\n    - {name: cpt, model: nova-2-lite, technique: cpt, hours_per_run: 5}\n"
    )
    result = run("plan", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith("capacity.workloads[0]: workload 'cpt': cpt is not documented")
    assert "Traceback" not in result.stderr


def test_plan_lists_adopted_plans(capsys) -> None:
    from tests.conftest import ROOT

    assert main(["plan", str(ROOT / "config/examples/adopt-existing-plan.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Adopted plans (described and checked at deploy, never bought)" in out
    assert "reserved: arn:aws:sagemaker:us-east-1:111122223333:training-plan/team-p5-january" in out
