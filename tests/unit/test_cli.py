"""The `novapod` command: exit codes and messages, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from novapod.cli import main
from tests.conftest import ALL_CONFIGS, ROOT

CONFIG_VARIABLE = "NOVAPOD_CONFIG"


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
    assert lines[0].startswith(f"{bad}: name: 'Dev' does not match an environment name")
    assert f"{bad}: network.vpc.zone_ids: list at least 2 zone IDs, because EKS" in result.stderr
    assert f"{bad}: network.vpc.colour: unknown key" in result.stderr
    assert all(line.startswith(f"{bad}: ") for line in lines)
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

    from novapod.capacity import CAPACITY_PLAN_JSON_SCHEMA
    from tests.conftest import ROOT

    assert main(["plan", str(ROOT / "config/examples/single-rig-purchase.yaml"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, CAPACITY_PLAN_JSON_SCHEMA)
    (plan,) = document["training_plans"]
    assert (plan["name"], plan["instance_count"], plan["duration_hours"]) == ("lite-sft", 4, 144)
    assert plan["target_resources"] == ["hyperpod-cluster"]
    assert [j["name"] for j in document["jobs"]] == ["sft-lora", "eval"]
    assert document["jobs"][0]["instance_hours"] == 480
    # The schedule: eval starts from sft-lora's checkpoint, so after its 4 x 30 h.
    assert plan["schedule"] == [
        {"job": "sft-lora", "start_hour": 0, "end_hour": 120, "instance_count": 4},
        {"job": "eval", "start_hour": 120, "end_hour": 128, "instance_count": 1},
    ]
    assert plan["lower_bound_instance_hours"] == 576
    assert document["totals"] == {
        "required_instance_hours": 488,
        "reserved_instance_hours": 576,
        "waste_instance_hours": 88,
    }
    assert document["split_advice"] == []  # one chain of jobs: nothing to split


GANTT = """\
lite-sft: 4 x ml.p5.48xlarge for 144 h (6 days); one cell = 2 h
job       count    hours  |1           |2           |3           |4           |5           \
|6           |  (day)
sft-lora      4    0-120  |############|############|############|############|############\
|............|
eval          1  120-128  |............|............|............|............|............\
|####........|
"""


def test_plan_gantt_draws_the_schedule(capsys) -> None:
    assert main(["plan", str(ROOT / "config/examples/single-rig-purchase.yaml"), "--gantt"]) == 0
    assert capsys.readouterr().out == GANTT


def test_plan_json_and_gantt_are_one_or_the_other() -> None:
    result = run("plan", "config/examples/single-rig-purchase.yaml", "--json", "--gantt")
    assert result.returncode == 2
    assert "argument --gantt: not allowed with argument --json" in result.stderr


def test_plan_table_lists_jobs_and_plans(capsys) -> None:
    from tests.conftest import ROOT

    assert main(["plan", str(ROOT / "config/examples/single-rig-purchase.yaml")]) == 0
    out = capsys.readouterr().out
    assert "lite-sft" in out and "sft-lora" in out and "ml.p5.48xlarge" in out
    lines = out.splitlines()
    assert "total" in lines[lines.index("Training plans") + 3].split()
    assert "1.18x" in lines[lines.index("Training plans") + 2].split()  # 576 / 488
    # One chain of jobs: there is no split to advise, and no section to say so.
    assert "Split advice" not in out


def test_plan_reports_planning_errors_as_config_errors(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: dev\nregion: us-east-1\nnetwork:\n  vpc:\n    zone_ids: [use1-az4, use1-az6]\n"
        "jobs:\n  - {name: dpo, model: nova-2-lite, technique: dpo-lora, hours_per_run: 5}\n"
    )
    result = run("plan", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"{path}: jobs[0].technique: dpo-lora is not published for Nova 2 Lite on HyperPod"
    )
    assert "Traceback" not in result.stderr


def test_plan_lists_adopted_plans(capsys) -> None:
    from tests.conftest import ROOT

    assert main(["plan", str(ROOT / "config/examples/adopt-existing-plan.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Adopted plans (described and checked at deploy, never bought)" in out
    assert "reserved: arn:aws:sagemaker:us-east-1:111122223333:training-plan/team-p5-january" in out


# ------------------------------------------------------------- offline, AWS settings

HOSTILE_AWS_PROFILE = "novapod-test-no-such-profile"


def hostile_aws_environment(tmp_path) -> dict[str, str]:
    """AWS settings that make any botocore Session fail: a missing profile, unparsable
    config and credentials files, a nonsense region."""
    config = tmp_path / "aws-config"
    config.write_text("[default\nregion = \n")
    credentials = tmp_path / "aws-credentials"
    credentials.write_text("garbage [[[\n")
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != CONFIG_VARIABLE
    }
    return {
        **environment,
        "AWS_PROFILE": HOSTILE_AWS_PROFILE,
        "AWS_CONFIG_FILE": str(config),
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
        "AWS_DEFAULT_REGION": "!!not-a-region",
        "AWS_REGION": "!!not-a-region",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def run_in(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "novapod.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        env=environment,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "config/default.yaml"),
        ("validate", "config/examples/rig-plus-standard.yaml"),
        ("plan", "config/examples/two-rigs-two-plans.yaml"),
        ("plan", "config/examples/single-rig-purchase.yaml", "--json"),
        ("plan", "config/examples/nova-jobs.yaml", "--gantt"),
        ("destroy-plan", "config/examples/nova-jobs.yaml"),
        ("schema",),
    ],
    ids=lambda a: "-".join(a).replace("/", "_"),
)
def test_offline_commands_never_read_aws_settings(tmp_path, args) -> None:
    result = run_in(hostile_aws_environment(tmp_path), *args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout.strip()


def test_hostile_aws_environment_does_break_a_botocore_session(tmp_path) -> None:
    """The environment above is hostile indeed: what a Session-based reader would hit."""
    probe = (
        "import botocore.session\nbotocore.session.get_session().get_service_model('sagemaker')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        env=hostile_aws_environment(tmp_path),
    )
    assert result.returncode != 0
    assert "ConfigParseError" in result.stderr or "ProfileNotFound" in result.stderr


def test_offerings_with_a_missing_profile_says_so_in_one_sentence(tmp_path) -> None:
    environment = hostile_aws_environment(tmp_path)
    environment["AWS_CONFIG_FILE"] = os.devnull
    environment["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
    result = run_in(environment, "offerings", "config/examples/single-rig-purchase.yaml")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("novapod offerings: cannot use your AWS settings:")
    assert f"The config profile ({HOSTILE_AWS_PROFILE}) could not be found" in line
    assert "AWS_PROFILE" in line.split("could not be found", 1)[1]


def test_offerings_with_a_broken_aws_config_file_says_so_in_one_sentence(tmp_path) -> None:
    result = run_in(
        hostile_aws_environment(tmp_path), "offerings", "config/examples/single-rig-purchase.yaml"
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "cannot use your AWS settings: Unable to parse config file" in line


# ------------------------------------------------------------ --version, NOVAPOD_CONFIG


def test_version_prints_the_installed_package_version() -> None:
    from importlib.metadata import version

    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"novapod {version('novapod')}"


def test_validate_without_a_file_reads_novapod_config(tmp_path) -> None:
    environment = {**os.environ, CONFIG_VARIABLE: "config/examples/dev-two-zones.yaml"}
    result = run_in(environment, "validate")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "config/examples/dev-two-zones.yaml (from NOVAPOD_CONFIG): valid (environment"
    )


def test_validate_without_a_file_reports_errors_of_the_novapod_config_file(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: dev\nregion: us-east-1\nnetwork: {}\n")
    result = run_in({**os.environ, CONFIG_VARIABLE: str(bad)}, "validate")
    assert result.returncode == 2
    assert result.stderr.startswith(f"{bad}: network: set exactly one of network.vpc")


def test_validate_with_neither_file_nor_novapod_config_says_so_in_one_sentence() -> None:
    environment = {k: v for k, v in os.environ.items() if k != CONFIG_VARIABLE}
    result = run_in(environment, "validate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "novapod validate: no config file: name one (novapod validate config/my-env.yaml) "
        "or set NOVAPOD_CONFIG"
    )


def test_plan_also_reads_novapod_config(capsys, monkeypatch) -> None:
    monkeypatch.setenv(CONFIG_VARIABLE, str(ROOT / "config/examples/single-rig-purchase.yaml"))
    assert main(["plan"]) == 0
    assert "lite-sft" in capsys.readouterr().out


# ---------------------------------------------------------------- encodings


def test_validate_names_the_file_and_byte_of_a_latin1_config(tmp_path) -> None:
    path = tmp_path / "latin1.yaml"
    text = (ROOT / "config/default.yaml").read_text(encoding="utf-8")
    path.write_bytes(("# équipe données\n" + text).encode("latin-1"))
    result = run("validate", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"{path}: byte 2 (line 1, 0xe9) is not valid UTF-8; save the file as UTF-8 "
        "(in most editors: Save with Encoding, UTF-8)"
    )


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_validate_reads_configs_with_a_byte_order_mark(tmp_path, encoding) -> None:
    path = tmp_path / f"{encoding}.yaml"
    text = (ROOT / "config/default.yaml").read_text(encoding="utf-8")
    path.write_bytes(("# équipe\n" + text).encode(encoding))  # Python writes the BOM
    result = run("validate", str(path))
    assert result.returncode == 0, result.stderr
    assert "valid (environment default" in result.stdout


def test_validate_refuses_utf16_without_a_byte_order_mark(tmp_path) -> None:
    path = tmp_path / "utf16le.yaml"
    path.write_bytes("name: dev\n".encode("utf-16-le"))
    result = run("validate", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"{path}: byte 1 (line 1) is a NUL byte: the file looks like UTF-16 or UTF-32 "
        "without a byte-order mark; save it as UTF-8"
    )


# ------------------------------------------------------- the Nova Pro PPO note


PPO_BASE = (
    "name: dev\nregion: us-east-1\nnetwork:\n  vpc:\n    zone_ids: [use1-az4, use1-az6]\njobs:\n"
)


@pytest.mark.parametrize(
    ("workload", "noted"),
    [
        ("  - {name: ppo, model: pro, technique: ppo, data: {train: t.jsonl}}\n", True),
        ("  - {name: ppo, model: lite, technique: ppo, data: {train: t.jsonl}}\n", False),
        (
            "  - {name: sft, model: pro, technique: sft-lora, hours_per_run: 10, "
            "data: {train: t.jsonl}}\n",
            False,
        ),
    ],
    ids=["pro-ppo", "lite-ppo", "pro-sft"],
)
def test_plan_prints_the_ppo_260_286_note_only_for_nova_pro_ppo(
    tmp_path, capsys, workload, noted
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(PPO_BASE + workload)
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("260" in out and "286" in out and "Nova Pro ppo" in out) is noted
    assert ("prints 260" in out) is noted
    assert main(["plan", str(path), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("prints 260" in note for note in notes) is noted
