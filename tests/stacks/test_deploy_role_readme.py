"""The scoped-down execution-role section of docs/deploying.md covers what CloudFormation
needs."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator

import pytest
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # type: ignore[import-untyped]

from novapod.config import load_config
from tests.conftest import DEFAULT_CONFIG, ROOT

HEADING = "## Deploying with a scoped-down CloudFormation execution role"
PAGE = ROOT / "docs" / "deploying.md"


def section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    return text[start : end if end != -1 else len(text)]


def test_section_follows_the_deploy_commands() -> None:
    """Read right after the commands, whose `cdk bootstrap` gives the execution role
    AdministratorAccess unless this section's policies are passed."""
    text = PAGE.read_text(encoding="utf-8")
    order = [line for line in text.splitlines() if line.startswith(("## ", "### "))]
    assert order[order.index("## Deploying an environment") + 1] == HEADING
    assert "npx cdk bootstrap" in text.split(HEADING, 1)[0]


def test_every_hyperpod_cluster_handler_permission_is_listed() -> None:
    """CloudFormation's resource schema names what its handler calls with our role."""
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", "AWS::SageMaker::Cluster")
    handlers = schema.schema["handlers"]
    needed = {p for h in ("create", "update", "delete") for p in handlers[h]["permissions"]}
    text = section()
    missing = sorted(p for p in needed if f"`{p}`" not in text)
    assert missing == []
    for fragment in (
        "iam:PassedToService",
        "AWSServiceRoleForSageMakerHyperPod",
        "training-plan/novapod-<name>-*",
        "reserved-capacity/*",
        "--cloudformation-execution-policies",
    ):
        assert fragment in text, fragment


def stack_outputs_read(template: object) -> Iterator[str]:
    """The StackName of every Fn::GetStackOutput in a template."""
    if isinstance(template, dict):
        if "Fn::GetStackOutput" in template:
            yield template["Fn::GetStackOutput"]["StackName"]
        for value in template.values():
            yield from stack_outputs_read(value)
    elif isinstance(template, list):
        for value in template:
            yield from stack_outputs_read(value)


@pytest.mark.slow
def test_reading_other_stacks_outputs_is_listed_on_the_stacks_read(synth) -> None:
    """Fn::GetStackOutput without a RoleArn reads the other stack with the execution role,
    which needs cloudformation:DescribeStacks on it (CloudFormation template reference)."""
    result = synth(DEFAULT_CONFIG)
    read = {name for t in result.templates.values() for name in stack_outputs_read(t)}
    assert read, "the default config has cross-stack references"
    (row,) = [line for line in section().splitlines() if "`cloudformation:DescribeStacks`" in line]
    assert "Fn::GetStackOutput" in row
    name = load_config(DEFAULT_CONFIG).name
    patterns = [p.replace("<name>", name) for p in re.findall(r"`(stack/[^`]+)`", row)]
    for stack in read:
        # A stack ARN's resource part: stack/<name>/<id CloudFormation generates>.
        arn_resource = f"stack/{stack}/0a1b2c3d-0000-0000-0000-000000000000"
        assert any(fnmatch.fnmatchcase(arn_resource, p) for p in patterns), (stack, patterns)
