"""Which config `make synth` reads (issue 21): CONFIG= on the command line wins over an
exported NOVAPOD_CONFIG; two different ones on the command line stop make."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT


def synth_command(*args: str, exported: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NOVAPOD_CONFIG"}
    if exported is not None:
        env["NOVAPOD_CONFIG"] = exported
    # -n prints what would run and runs nothing.
    return subprocess.run(
        ["make", "-n", "--no-print-directory", "synth", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def config_of(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "cdk synth" in line]
    return line.rsplit("-c config=", 1)[1]


@pytest.mark.parametrize(
    ("args", "exported", "expected"),
    [
        ((), None, "config/default.yaml"),
        ((), "config/my-env.yaml", "config/my-env.yaml"),
        (("CONFIG=config/other.yaml",), "config/my-env.yaml", "config/other.yaml"),
        (("CONFIG=config/other.yaml",), None, "config/other.yaml"),
        (("NOVAPOD_CONFIG=config/b.yaml",), "config/my-env.yaml", "config/b.yaml"),
        (("CONFIG=config/a.yaml", "NOVAPOD_CONFIG=config/a.yaml"), None, "config/a.yaml"),
    ],
    ids=["default", "exported", "explicit-wins", "explicit", "variable-given", "both-same"],
)
def test_the_explicit_config_wins(args, exported, expected) -> None:
    assert config_of(synth_command(*args, exported=exported)) == expected


def test_two_different_configs_on_the_command_line_stop_make() -> None:
    done = synth_command("CONFIG=config/a.yaml", "NOVAPOD_CONFIG=config/b.yaml", exported=None)
    assert done.returncode == 2
    assert done.stdout == ""
    assert (
        "CONFIG=config/a.yaml and NOVAPOD_CONFIG=config/b.yaml name different configs; "
        "give one of them.  Stop." in done.stderr
    )
