"""`novapod recipes CONFIG --out DIR`: the files it writes, byte for byte, and its refusals."""

from __future__ import annotations

import json

import pytest
import yaml

from novapod.cli import main
from tests.conftest import ROOT
from tests.unit.test_cli import hostile_aws_environment, run, run_in

PURCHASE = ROOT / "config/examples/single-rig-purchase.yaml"
NETWORK = "network:\n  vpc:\n    zone_ids: [use1-az4, use1-az6]\n"


def files_under(directory) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_writes_one_recipe_and_one_launch_spec_per_job_and_the_index(tmp_path, capsys) -> None:
    out = tmp_path / "bundle" / "nested"  # missing parents are created
    assert main(["recipes", str(PURCHASE), "--out", str(out)]) == 0
    assert set(files_under(out)) == {
        "index.json",
        "launch/eval.json",
        "launch/sft-lora.json",
        "recipes/eval.yaml",
        "recipes/sft-lora.yaml",
    }
    index = json.loads((out / "index.json").read_text())
    assert [job["job"] for job in index["jobs"]] == ["sft-lora", "eval"]
    recipe = yaml.safe_load((out / "recipes/sft-lora.yaml").read_text())
    assert recipe["run"]["name"] == "sft-lora"
    printed = capsys.readouterr().out
    assert "2 job(s), 2 launchable: wrote 5 files" in printed
    assert f"index {out / 'index.json'}" in printed
    assert "not launchable" not in printed


def test_a_second_run_into_another_directory_writes_the_same_bytes(tmp_path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    assert main(["recipes", str(PURCHASE), "--out", str(first)]) == 0
    assert main(["recipes", str(PURCHASE), "--out", str(second)]) == 0
    assert files_under(first) == files_under(second)


def test_overwrites_its_own_files_and_leaves_others_alone(tmp_path) -> None:
    out = tmp_path / "out"
    (out / "recipes").mkdir(parents=True)
    (out / "recipes/sft-lora.yaml").write_text("stale\n")
    (out / "notes.txt").write_text("mine\n")
    assert main(["recipes", str(PURCHASE), "--out", str(out)]) == 0
    assert (out / "recipes/sft-lora.yaml").read_text().startswith("run:\n  name: sft-lora\n")
    assert (out / "notes.txt").read_text() == "mine\n"


def test_names_the_jobs_that_cannot_be_launched_and_why(tmp_path, capsys) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        f"name: dev\nregion: us-east-1\n{NETWORK}jobs:\n"
        "  - {name: distill, model: pro, technique: distillation, hours_per_run: 5}\n"
        "  - {name: cpt, model: micro, technique: cpt, hours_per_run: 5, plan: p,\n"
        "     data: {train: t.jsonl}}\n"
    )
    out = tmp_path / "out"
    assert main(["recipes", str(config), "--out", str(out)]) == 0
    assert set(files_under(out)) == {
        "index.json",
        "launch/cpt.json",
        "recipes/cpt.yaml",
        "recipes/distill.yaml",
    }
    printed = capsys.readouterr().out
    assert "2 job(s), 1 launchable: wrote 4 files" in printed
    assert (
        "distill (distillation) is not launchable: upstream publishes distillation only for "
        "SageMaker training jobs (no HyperPod container); run it as a training job "
        "(runs_on: training-job, on_demand: true)"
    ) in printed


def test_a_bad_config_exits_2_with_one_line_per_issue_and_writes_nothing(tmp_path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        f"name: dev\nregion: us-east-1\n{NETWORK}jobs:\n"
        "  - {name: dpo, model: nova-2-lite, technique: dpo-lora, hours_per_run: 5}\n"
    )
    out = tmp_path / "out"
    result = run("recipes", str(config), "--out", str(out))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        f"{config}: jobs[0].technique: dpo-lora is not published for Nova 2 Lite on HyperPod"
    )
    assert result.stdout == ""
    assert not out.exists()


def test_refuses_an_out_that_is_a_file(tmp_path) -> None:
    out = tmp_path / "taken"
    out.write_text("keep me\n")
    result = run("recipes", str(PURCHASE), "--out", str(out))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"novapod recipes: --out {out} is a file, not a directory; name a directory "
        "(it is created if missing)"
    )
    assert out.read_text() == "keep me\n"


def test_out_is_required() -> None:
    result = run("recipes", str(PURCHASE))
    assert result.returncode == 2
    assert "--out" in result.stderr


@pytest.mark.parametrize("config", ["config/examples/single-rig-purchase.yaml"])
def test_never_reads_aws_settings(tmp_path, config) -> None:
    out = tmp_path / "out"
    result = run_in(hostile_aws_environment(tmp_path), "recipes", config, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "index.json").is_file()
