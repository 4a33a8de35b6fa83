"""`make destroy` (tools/cdk_destroy.py) decides with the CDK CLI stood in: the CLI's
own `cdk ls` and `cdk destroy` are run for real in tests/e2e/test_cdk_destroy.py."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import pytest

from tests.conftest import ROOT
from tools import cdk_destroy

DEFINED = ["novapod-dev-network", "novapod-dev-storage", "novapod-dev-eks"]


class FakeCdk:
    """`npx cdk synth | ls | destroy`, recorded; `ls NAME` selects NAME when defined."""

    def __init__(self, synth_status: int = 0) -> None:
        self.synth_status = synth_status
        self.calls: list[list[str]] = []

    def __call__(self, command: Sequence[str], **_: object) -> subprocess.CompletedProcess[str]:
        command = list(command)
        self.calls.append(command)
        verb, rest = command[3], command[4:]
        if verb == "synth":
            return subprocess.CompletedProcess(command, self.synth_status, "", "")
        if verb == "ls":
            names = rest[2:]
            selected = [s for s in DEFINED if not names or s in names]
            return subprocess.CompletedProcess(command, 0, "\n".join(selected) + "\n", "")
        return subprocess.CompletedProcess(command, 0, "", "")

    def verbs(self) -> list[str]:
        return [call[3] for call in self.calls]


@pytest.fixture
def cdk(monkeypatch: pytest.MonkeyPatch) -> FakeCdk:
    fake = FakeCdk()
    monkeypatch.setattr(cdk_destroy.subprocess, "run", fake)
    return fake


def destroy(tmp_path, *stacks: str) -> int:
    return cdk_destroy.main(["--config", "config/dev.yaml", "--output", str(tmp_path), *stacks])


def test_a_name_the_config_does_not_define_stops_before_cdk_destroy(cdk, tmp_path, capsys) -> None:
    assert destroy(tmp_path, "novapod-dev-eks", "novapod-prod-network") == 2
    assert capsys.readouterr().err == (
        "make destroy: STACK novapod-prod-network matches none of the stacks of "
        "config/dev.yaml (novapod-dev-network, novapod-dev-storage, novapod-dev-eks); name "
        "one of those, or give CONFIG= the file that defines it\n"
    )
    assert "destroy" not in cdk.verbs()


def test_without_a_name_it_lists_the_configs_stacks(cdk, tmp_path, capsys) -> None:
    assert destroy(tmp_path) == 2
    assert capsys.readouterr().err == (
        'make destroy: name the stacks to destroy with STACK="NAME ..."; config/dev.yaml '
        "defines novapod-dev-network, novapod-dev-storage, novapod-dev-eks\n"
    )
    assert cdk.verbs() == ["synth", "ls"]


def test_named_stacks_of_the_config_go_to_cdk_destroy_of_that_assembly(cdk, tmp_path) -> None:
    assert destroy(tmp_path, "novapod-dev-eks", "novapod-dev-network") == 0
    synth, *_, last = cdk.calls
    assembly = str(tmp_path.resolve())
    assert synth == [
        *cdk_destroy.CDK,
        "synth",
        "--quiet",
        "-c",
        "config=config/dev.yaml",
        "--output",
        assembly,
    ]
    # Each name checked against that one synthesis, then destroyed from it.
    assert cdk.verbs() == ["synth", "ls", "ls", "ls", "destroy"]
    assert last == [
        *cdk_destroy.CDK,
        "destroy",
        "--exclusively",
        "--app",
        assembly,
        "novapod-dev-eks",
        "novapod-dev-network",
    ]


def test_a_config_that_does_not_synthesize_stops_with_its_status(monkeypatch, tmp_path) -> None:
    fake = FakeCdk(synth_status=1)
    monkeypatch.setattr(cdk_destroy.subprocess, "run", fake)
    assert destroy(tmp_path, "novapod-dev-eks") == 1
    assert fake.verbs() == ["synth"]


def test_make_destroy_passes_the_config_and_each_name_quoted() -> None:
    done = subprocess.run(
        [
            *("make", "-n", "--no-print-directory", "destroy"),
            *("CONFIG=config/my-env.yaml", "STACK=novapod-dev-eks novapod-dev-*"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "tools/cdk_destroy.py" in line]
    assert line.endswith(
        "tools/cdk_destroy.py --config config/my-env.yaml 'novapod-dev-eks' 'novapod-dev-*'"
    )


def test_a_config_whose_windows_ended_is_synthesized_as_destroy_plan_says(monkeypatch) -> None:
    from datetime import UTC, datetime

    monkeypatch.delenv("NOVAPOD_VALIDATE_AS_OF", raising=False)
    config = str(ROOT / "config/examples/single-rig-purchase.yaml")  # ends 2027-08-29
    ended = cdk_destroy.synth_environment(config, datetime(2027, 9, 1, tzinfo=UTC))
    assert ended["NOVAPOD_VALIDATE_AS_OF"] == "2027-08-28T23:59:59Z"
    still_open = cdk_destroy.synth_environment(config, datetime(2027, 7, 1, tzinfo=UTC))
    assert "NOVAPOD_VALIDATE_AS_OF" not in still_open
    # What the caller set stays; a config that does not load is the synthesis's to report.
    monkeypatch.setenv("NOVAPOD_VALIDATE_AS_OF", "2027-08-01T00:00:00Z")
    kept = cdk_destroy.synth_environment(config, datetime(2027, 9, 1, tzinfo=UTC))
    assert kept["NOVAPOD_VALIDATE_AS_OF"] == "2027-08-01T00:00:00Z"
    monkeypatch.delenv("NOVAPOD_VALIDATE_AS_OF")
    assert "NOVAPOD_VALIDATE_AS_OF" not in cdk_destroy.synth_environment("config/none.yaml")


def test_it_synthesizes_beside_cdk_out_not_into_it(cdk, tmp_path, monkeypatch) -> None:
    # cdk.out holds what make synth or a review built, maybe for another config.
    (tmp_path / "cdk.out").mkdir()
    (tmp_path / "cdk.out" / "manifest.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert cdk_destroy.main(["--config", "config/dev.yaml", "novapod-dev-eks"]) == 0
    synth = cdk.calls[0]
    assert synth[synth.index("--output") + 1] == str(tmp_path.resolve() / "cdk.out.destroy")
    assert (tmp_path / "cdk.out" / "manifest.json").read_text() == "{}"
