"""The README's scoped-down execution-role section covers what CloudFormation needs."""

from __future__ import annotations

from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # type: ignore[import-untyped]

from tests.conftest import ROOT

HEADING = "## Deploying with a scoped-down CloudFormation execution role"


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.index("\n## ", start + len(HEADING))
    return text[start:end]


def test_section_follows_buying_capacity_safely() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    order = [line for line in text.splitlines() if line.startswith(("## ", "### "))]
    assert order[order.index("### Buying capacity safely") + 1] == HEADING


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
