"""Every taggable resource of every shipped config carries the config's tags.

Which types are taggable, and whether their tags are a Key/Value list or a map, comes
from the CloudFormation resource schemas that ship with cfn-lint, never from a hand-kept
list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # type: ignore[import-untyped]
from cfnlint.schema._exceptions import ResourceNotFoundError  # type: ignore[import-untyped]

from novapod.config import load_config
from tests.conftest import ALL_CONFIGS, ROOT

# (resource type, logical ID) -> why it carries no tags. Custom::* resources are not
# in the schemas (CloudFormation cannot tag them) and so are never checked here.
EXCEPTIONS: dict[tuple[str, str], str] = {}
# The tags the shipped configs set, written out so that a config model that drops them
# from resource_tags fails here.
CONFIG_TAGS = {
    "default": {"project": "novapod"},
    "dev-two-zones": {"project": "nova-customization", "cost-center": "ml-research"},
    "standard-group-on-plan": {"team": "platform"},
}


def tag_property(resource_type: str) -> tuple[str, str] | None:
    """(property name, "array" | "object") of a taggable type, or None."""
    try:
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", resource_type).schema
    except ResourceNotFoundError:
        return None
    tagging = schema.get("tagging")
    if tagging is not None and not tagging.get("taggable", False):
        return None
    pointer = (tagging or {}).get("tagProperty", "/properties/Tags")
    name = pointer.removeprefix("/properties/")
    prop = schema.get("properties", {}).get(name)
    if prop is None:
        return None  # e.g. AWS::IAM::Policy: no tagging block and no Tags property
    return name, prop.get("type", "array")


def tags_of(properties: dict[str, Any], name: str, shape: str) -> dict[str, Any]:
    value = properties.get(name)
    if value is None:
        return {}
    if shape == "object":
        assert isinstance(value, dict), value
        return value
    assert isinstance(value, list), value
    return {t["Key"]: t["Value"] for t in value}


def test_schema_shapes() -> None:
    """The reader knows lists from maps, and what is not taggable."""
    assert tag_property("AWS::EC2::Subnet") == ("Tags", "array")
    assert tag_property("AWS::SSM::Parameter") == ("Tags", "object")
    assert tag_property("AWS::FSx::FileSystem") == ("Tags", "array")  # no tagging block
    assert tag_property("AWS::EC2::Route") is None
    assert tag_property("AWS::IAM::Policy") is None
    assert tag_property("Custom::NovapodTrainingPlan") is None


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: Path(p).stem)
def test_every_taggable_resource_carries_the_config_tags(synth, path) -> None:
    config = load_config(path)
    expected = config.resource_tags
    assert expected == {**CONFIG_TAGS.get(Path(path).stem, {}), "novapod:environment": config.name}
    result = synth(path)
    checked: set[str] = set()
    missing = []
    for kind, template in result.templates.items():
        for logical_id, resource in template["Resources"].items():
            found = tag_property(resource["Type"])
            if found is None or (resource["Type"], logical_id) in EXCEPTIONS:
                continue
            checked.add(resource["Type"])
            tags = tags_of(resource.get("Properties", {}), *found)
            absent = {k: v for k, v in expected.items() if tags.get(k) != v}
            if absent:
                missing.append(f"{kind}/{logical_id} ({resource['Type']}) lacks {absent}")
    assert missing == []
    # Every config has buckets, a key and roles (the storage stack), so the walk saw them.
    assert {"AWS::S3::Bucket", "AWS::KMS::Key", "AWS::IAM::Role"} <= checked


def test_the_kubectl_barrier_parameter_is_tagged_as_a_map(synth) -> None:
    # aws_eks_v2 creates it as a plain CfnResource, out of Tags.of's reach.
    result = synth(ROOT / "config" / "examples" / "standard-group-on-plan.yaml")
    (barrier,) = [
        r
        for r in result.templates["eks"]["Resources"].values()
        if r["Type"] == "AWS::SSM::Parameter"
        and r["Properties"].get("Value") == "aws:cdk:eks:kubectl-ready"
    ]
    assert barrier["Properties"]["Tags"] == {
        "team": "platform",
        "novapod:environment": "std-plan",
    }


def test_bought_plans_are_tagged_with_the_plan_name(synth) -> None:
    """The TrainingPlan custom resource passes the tags on to CreateTrainingPlan."""
    result = synth(ROOT / "config" / "examples" / "standard-group-on-plan.yaml")
    plan = result.templates["capacity"]["Resources"]["TrainingPlanP5Std"]
    assert tags_of(plan["Properties"], "Tags", "array") == {
        "team": "platform",
        "novapod:environment": "std-plan",
        "novapod:plan": "p5-std",
    }
