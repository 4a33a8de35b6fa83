"""Without usable AWS credentials, the CLI's AWS commands say which call needed them, the
permission it needs and how to provide them, in one sentence and exit 1 (issue 21 §2);
botocore alone says only "Unable to locate credentials"."""

from __future__ import annotations

import pytest

from novapod.cli import main
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers import test_offerings_cli as offerings_cli
from tests.handlers.nova_world import config_file, plane

__all__ = ["plane"]  # fixture

HOW = (
    "provide credentials allowed to make it: AWS_PROFILE=NAME (after aws sso login for an "
    "SSO profile) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then check them with "
    "aws sts get-caller-identity"
)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    # The session fixture already points the config and credentials files at /dev/null and
    # turns the instance metadata service off; without the keys nothing is left.
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")


@pytest.mark.parametrize(
    ("argv", "call"),
    [
        (["results"], "DescribeStacks (which needs cloudformation:DescribeStacks)"),
        (
            ["launch", "@", "sft-again"],
            "DescribeStacks (which needs cloudformation:DescribeStacks)",
        ),
        (["purchases"], "DescribeStacks (which needs cloudformation:DescribeStacks)"),
    ],
    ids=["results", "launch", "purchases"],
)
@pytest.mark.usefixtures("no_credentials")
def test_a_command_without_credentials_names_the_call_and_the_fix(
    plane, tmp_path, capsys, argv, call
) -> None:
    path = str(config_file(tmp_path))
    argv = [argv[0], path, *argv[2:]] if "@" in argv else [*argv, path]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"novapod {argv[0]}: {call} has no usable AWS credentials (Unable to locate "
        f"credentials); {HOW}\n"
    )
    assert plane.operations() == []  # nothing reached AWS unsigned


def test_offerings_without_credentials_names_the_search(
    control_plane: FakeControlPlane, no_credentials, tmp_path, capsys
) -> None:
    control_plane.reset()
    path = offerings_cli.write(tmp_path, offerings_cli.CONFIG)
    assert main(["offerings", str(path), "--plan", "main"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("novapod offerings: ") and err.count("\n") == 1, err
    assert err == (
        "novapod offerings: SearchTrainingPlanOfferings (which needs "
        "sagemaker:SearchTrainingPlanOfferings) has no usable AWS credentials (Unable to "
        f"locate credentials); {HOW}\n"
    )
