"""Template bugs a mutation probe planted and the suite once let through (issue 8).

Small, direct assertions on the synthesized templates: an IAM action a node or a
handler needs at run time, and the environment's tags.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import EXAMPLES, ROOT, joined, resources

MIXED = ROOT / "config" / "examples" / "rig-plus-standard.yaml"
ADOPT = ROOT / "config" / "examples" / "adopt-existing-plan.yaml"
PURCHASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
ADOPTED_ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/team-p5-january"


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements_by_sid(template: dict[str, Any], role_fragment: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        if role_fragment in logical_id:
            out |= {
                s.get("Sid", ""): s for s in policy["Properties"]["PolicyDocument"]["Statement"]
            }
    assert out, f"no policy for {role_fragment}"
    return out


# --- execution roles: the VPC CNI and EFA delete the interfaces they created -----------


@pytest.mark.parametrize("fragment", ["RestrictedGroupRole", "StandardGroupRole"])
def test_execution_roles_manage_the_interfaces_nodes_create(synth, fragment: str) -> None:
    """Bug: ec2:DeleteNetworkInterface dropped; nodes then leak ENIs (and subnet
    addresses) they cannot delete. The list is the ENI management of reference section 5
    (the HyperPod EKS sample's execution role: aws-samples/awsome-distributed-training
    1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/
    sagemaker-iam-role-stack.yaml)."""
    statements = statements_by_sid(synth(MIXED).templates["eks"], fragment)
    manage = statements["ManageInterfaces"]
    assert sorted(as_list(manage["Action"])) == [
        "ec2:AssignPrivateIpAddresses",
        "ec2:CreateNetworkInterfacePermission",
        "ec2:DeleteNetworkInterface",
        "ec2:DeleteNetworkInterfacePermission",
        "ec2:ModifyNetworkInterfaceAttribute",
        "ec2:UnassignPrivateIpAddresses",
    ]
    assert joined(manage["Resource"]).endswith(":network-interface/*")


# --- the training-plan handler may describe the plan it adopts -------------------------


def test_on_event_may_describe_the_adopted_plan(synth) -> None:
    """Bug: the on-event role's describe permission for adopted plans dropped; adopting
    then fails with AccessDenied at deploy."""
    on_event = statements_by_sid(synth(ADOPT).templates["capacity"], "OnEventRole")
    adopted = on_event["DescribeAdoptedPlans"]
    assert adopted["Action"] == "sagemaker:DescribeTrainingPlan"
    assert as_list(adopted["Resource"]) == [ADOPTED_ARN]


def test_is_complete_may_describe_the_adopted_plan(synth) -> None:
    is_complete = statements_by_sid(synth(ADOPT).templates["capacity"], "IsCompleteRole")
    describe = is_complete["DescribeOwnAndAdoptedPlans"]
    assert describe["Action"] == "sagemaker:DescribeTrainingPlan"
    # An environment that only adopts buys nothing: no statement on plan names of its own.
    assert [joined(r) for r in as_list(describe["Resource"])] == [ADOPTED_ARN]


# --- tags: every taggable resource carries the environment's tags ---------------------

# Types whose CloudFormation Tags property is a list of {Key, Value}; each appears in
# every example with a network, and CDK's Tags.of reaches all of them.
TAGGED_TYPES = {
    "AWS::EC2::VPC",
    "AWS::EC2::Subnet",
    "AWS::EC2::SecurityGroup",
    "AWS::IAM::Role",
    "AWS::KMS::Key",
    "AWS::Lambda::Function",
    "AWS::Logs::LogGroup",
    "AWS::S3::Bucket",
}


@pytest.mark.parametrize("path", [PURCHASE, MIXED], ids=lambda p: p.stem)
def test_every_resource_of_a_tagged_type_carries_the_environment_tags(synth, path) -> None:
    """Bug: Tags.of(...) removed leaves every resource untagged."""
    from novapod.config import load_config

    expected = load_config(path).resource_tags
    assert "novapod:environment" in expected
    result = synth(path)
    checked = 0
    for kind, template in result.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] not in TAGGED_TYPES:
                continue
            tags = {t["Key"]: t["Value"] for t in resource["Properties"].get("Tags", [])}
            missing = {k: v for k, v in expected.items() if tags.get(k) != v}
            assert not missing, f"{kind}/{logical_id} lacks {missing}"
            checked += 1
    assert checked >= 20


def test_examples_are_known() -> None:
    assert {MIXED, ADOPT, PURCHASE} <= set(EXAMPLES)
