"""`novapod plan`, `recipes` and `offerings` work on a config whose purchases are not
approved yet (issue 21 §1): they are where the names to approve and the prices come from.
`validate`, synthesis and deploy still refuse it. A real mistake elsewhere hides the name
to paste: it is derived from the whole config and would be the wrong one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from novapod.cli import main
from novapod.config import ConfigError, load_config
from tests.conftest import ROOT

EXAMPLE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
NAME = "novapod-nova-lite-lite-sft-50d13e0b"  # pinned: what the example buys
APPROVE_LINE = re.compile(r"^        approve: novapod-nova-lite-lite-sft-50d13e0b.*\n", re.M)


def variant(tmp_path: Path, approve: str | None) -> Path:
    text = EXAMPLE.read_text()
    assert APPROVE_LINE.search(text)
    line = "" if approve is None else f"        approve: {approve}\n"
    path = tmp_path / "env.yaml"
    path.write_text(APPROVE_LINE.sub(line, text, count=1))
    return path


UNAPPROVED = {
    "missing": None,
    "true": "true",
    "stale": "novapod-nova-lite-lite-sft-31e61478",  # the name before the window moved
}


@pytest.mark.parametrize("approve", UNAPPROVED.values(), ids=UNAPPROVED.keys())
def test_plan_shows_the_name_to_approve(tmp_path, capsys, approve) -> None:
    path = variant(tmp_path, approve)
    assert main(["plan", str(path)]) == 0
    out, err = capsys.readouterr()
    assert f"lite-sft: {NAME}" in out.splitlines()
    # And what validate will refuse, with the name to approve.
    (note,) = err.splitlines()
    assert note.startswith(f"{path}: not approved yet: capacity.training_plans[0].purchase")
    assert NAME in note
    assert main(["plan", str(path), "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["training_plans"]
    assert [p["plan_name"] for p in plans] == [NAME]


@pytest.mark.parametrize("approve", UNAPPROVED.values(), ids=UNAPPROVED.keys())
def test_recipes_are_written_for_an_unapproved_config(tmp_path, capsys, approve) -> None:
    out = tmp_path / "recipes"
    assert main(["recipes", str(variant(tmp_path, approve)), "--out", str(out)]) == 0
    index = json.loads((out / "index.json").read_text())
    assert "sft-lora" in json.dumps(index)
    assert list((out / "recipes").iterdir())


@pytest.mark.parametrize("approve", UNAPPROVED.values(), ids=UNAPPROVED.keys())
def test_validate_and_synthesis_still_refuse_it(tmp_path, capsys, approve) -> None:
    path = variant(tmp_path, approve)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "capacity.training_plans[0].purchase.approve: " in err or (
        approve is None and "capacity.training_plans[0].purchase: " in err
    ), err
    assert NAME in err  # the one name to approve
    with pytest.raises(ConfigError):
        load_config(path)  # what app.py and the pipeline's synth read it with


def test_a_real_mistake_is_still_refused_by_plan(tmp_path, capsys) -> None:
    path = variant(tmp_path, "true")
    path.write_text(
        path.read_text().replace("instance_group: nova-lite ", "instance_group: nope ", 1)
    )
    assert main(["plan", str(path)]) == 2
    assert "nope" in capsys.readouterr().err


def test_with_another_mistake_no_name_is_offered_to_paste(tmp_path, capsys) -> None:
    path = variant(tmp_path, UNAPPROVED["stale"])
    path.write_text(
        path.read_text().replace("instance_group: nova-lite ", "instance_group: nope ", 1)
    )
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    (approve,) = [line for line in lines if ".purchase.approve:" in line]
    assert approve.endswith(
        "capacity.training_plans[0].purchase.approve: not approved as the config stands, and "
        "the name to approve is derived from all of it (jobs, windows, counts): fix the other "
        "mistakes first, then `novapod validate` prints the name"
    )
    assert "novapod-nova-lite-lite-sft-" not in approve.split(": ", 1)[1]
    assert any("nope" in line for line in lines if line is not approve)
