"""The pipeline file (config/pipeline.example.yaml): validated by `novapod validate` and by
pipeline_app.py, one `pipeline.<field>: sentence` per mistake and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from novapod import yamlsafe
from novapod.cli import main
from novapod.config import ConfigError, is_pipeline_file, load_pipeline
from tests.conftest import DEFAULT_CONFIG, ROOT

EXAMPLE = ROOT / "config" / "pipeline.example.yaml"
EXAMPLES = ROOT / "config" / "examples"
CONNECTION = (
    "arn:aws:codeconnections:us-east-1:111122223333:connection/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
)


def pipeline_file(tmp_path: Path, **changes: object) -> Path:
    """The example, with `changes` applied to its pipeline section, written to tmp_path
    with the example environments' paths made absolute."""
    data = yamlsafe.load(EXAMPLE.read_text())
    spec = data["pipeline"]
    for entry in spec["environments"]:
        entry["config"] = str(EXAMPLE.parent / entry["config"])
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def errors(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path)
    return caught.value.issues


def test_the_example_loads_its_environments_in_order() -> None:
    pipeline = load_pipeline(EXAMPLE)
    assert pipeline.spec.account == "111122223333"
    assert pipeline.connection_arn == CONNECTION
    assert pipeline.source.repository == "my-org/novapod-environments"
    assert pipeline.source.branch == "main"
    assert [(d.config.name, d.production) for d in pipeline.deployments] == [
        ("mixed", False),
        ("nova-jobs", True),
    ]
    assert pipeline.deployments[0].path == EXAMPLES / "rig-plus-standard.yaml"


def test_validate_accepts_the_example(capsys) -> None:
    assert main(["validate", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out == (
        f"{EXAMPLE}: valid (pipeline novapod, environments mixed, nova-jobs)\n"
    )


def test_only_files_with_a_pipeline_section_are_pipeline_files(tmp_path) -> None:
    assert is_pipeline_file(EXAMPLE)
    assert not is_pipeline_file(DEFAULT_CONFIG)
    assert not is_pipeline_file(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("pipeline: [\n")
    assert not is_pipeline_file(broken)  # load_config then reports the YAML error


def test_missing_connection(tmp_path, capsys) -> None:
    path = pipeline_file(
        tmp_path, source={"repository": "my-org/novapod-environments", "branch": "main"}
    )
    assert errors(path) == [
        (
            "pipeline.source.connection_arn",
            "required: the ARN of the AWS CodeConnections connection to your repository "
            "(aws codeconnections list-connections shows it); add it",
        )
    ]
    # Through the CLI: one line naming the file and the field, exit status 2.
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"{path}: pipeline.source.connection_arn: required: the ARN of the AWS "
        "CodeConnections connection to your repository (aws codeconnections "
        "list-connections shows it); add it\n"
    )


def test_a_connection_arn_of_another_service(tmp_path) -> None:
    wrong = "arn:aws:codecommit:us-east-1:111122223333:novapod"
    path = pipeline_file(tmp_path, source={"connection_arn": wrong, "repository": "my-org/envs"})
    assert errors(path) == [
        (
            "pipeline.source.connection_arn",
            f"{wrong!r} does not match a connection ARN such as arn:aws:codeconnections:"
            "us-east-1:111122223333:connection/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
        )
    ]


def test_the_older_codestar_connections_arn_is_accepted(tmp_path) -> None:
    older = CONNECTION.replace(":codeconnections:", ":codestar-connections:")
    path = pipeline_file(tmp_path, source={"connection_arn": older, "repository": "o/r"})
    assert load_pipeline(path).connection_arn == older


def test_unknown_environment_file(tmp_path, capsys) -> None:
    path = pipeline_file(tmp_path, environments=[{"config": "envs/prod.yaml"}])
    assert errors(path) == [
        (
            "pipeline.environments[0].config",
            f"no environment file {tmp_path / 'envs' / 'prod.yaml'} (paths are relative to "
            f"the pipeline file's folder, {tmp_path}); fix the path",
        )
    ]
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"{path}: pipeline.environments[0].config: ")


def test_duplicate_environment(tmp_path) -> None:
    mixed = str(EXAMPLES / "rig-plus-standard.yaml")
    path = pipeline_file(
        tmp_path,
        environments=[
            {"config": mixed},
            {"config": str(DEFAULT_CONFIG)},
            {"config": mixed, "production": True},
        ],
    )
    assert errors(path) == [
        (
            "pipeline.environments[2].config",
            f"environment mixed is already deployed by environments[0] ({mixed}); list each "
            "environment once (its name names its stacks and resources)",
        )
    ]


def test_an_environment_in_another_account_or_region(tmp_path) -> None:
    path = pipeline_file(tmp_path, account="444455556666")
    assert errors(path) == [
        (
            "pipeline.environments[0].config",
            "environment mixed is in account 111122223333, the pipeline in 444455556666; "
            "deploy it from a pipeline in its own account",
        )
    ]
    path = pipeline_file(tmp_path, region="eu-west-1")
    assert errors(path) == [
        (
            "pipeline.environments[0].config",
            "environment mixed is in region us-east-1, the pipeline in eu-west-1; deploy it "
            "from a pipeline in its own region",
        )
    ]


def test_an_invalid_environment_file_reports_its_own_lines(tmp_path, capsys) -> None:
    broken = tmp_path / "dev.yaml"
    broken.write_text(
        "name: Dev\nregion: us-east-1\nnetwork: {vpc: {zone_ids: [use1-az4, use1-az6]}}\n"
    )
    path = pipeline_file(tmp_path, environments=[{"config": "dev.yaml"}])
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"{broken}: name: 'Dev' does not match")


def test_field_errors_name_the_path(tmp_path) -> None:
    path = pipeline_file(tmp_path, environments=[])
    assert errors(path) == [
        (
            "pipeline.environments",
            "list at least one environment file to deploy, e.g. environments: [{config: dev.yaml}]",
        )
    ]
    path = pipeline_file(tmp_path, name="My Pipeline", colour="blue", account=111122223333)
    found = dict(errors(path))
    assert found["pipeline.name"].startswith("'My Pipeline' does not match a pipeline name")
    assert found["pipeline.colour"].startswith("unknown key")
    assert found["pipeline.account"] == (
        'YAML read this as the number 111122223333; quote it: account: "111122223333"'
    )


def run_app(pipeline: str | None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NOVAPOD_PIPELINE"}
    if pipeline is not None:
        env["CDK_CONTEXT_JSON"] = json.dumps({"pipeline": pipeline})  # what `cdk -c` passes
    return subprocess.run(
        [sys.executable, str(ROOT / "pipeline_app.py")],
        capture_output=True, text=True, check=False, env=env, cwd=cwd,
    )  # fmt: skip


def test_pipeline_app_exits_2_on_an_invalid_pipeline(tmp_path) -> None:
    path = pipeline_file(tmp_path, source={"repository": "o/r"})
    result = run_app(str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"novapod-pipeline: invalid pipeline configuration {path}:",
        f"{path}: pipeline.source.connection_arn: required: the ARN of the AWS "
        "CodeConnections connection to your repository (aws codeconnections "
        "list-connections shows it); add it",
    ]


def test_pipeline_app_needs_a_file_inside_the_repository(tmp_path) -> None:
    result = run_app(str(pipeline_file(tmp_path)))  # valid, but outside the clone
    assert result.returncode == 2
    assert "the pipeline file must be inside the repository" in result.stderr


def test_pipeline_app_without_a_pipeline_file() -> None:
    result = run_app(None)
    assert result.returncode == 2
    assert result.stderr == (
        "novapod-pipeline: no pipeline file; pass -c pipeline=config/pipeline.yaml "
        "(or set NOVAPOD_PIPELINE)\n"
    )
