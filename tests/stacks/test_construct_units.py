"""The execution role and the security group built alone, in each test (no shared
synthesis): every statement and rule is written out here as a literal, so a dropped
action, a wrong resource or a missing rule fails one of these tests. They are also what
`make mutation` maps to these constructs (the session-wide synthesis of the examples
runs in fixtures, which mutmut does not attribute to a test)."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from novapod.config import HyperPod
from novapod.constructs.execution_role import ExecutionRole, execution_role_kinds
from novapod.constructs.security_group import HyperPodSecurityGroup

ACCOUNT = "111122223333"
CLUSTER = f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/novapod-dev"
STORAGE_POLICY = f"arn:aws:iam::{ACCOUNT}:policy/novapod-dev-data"


def _stack() -> Stack:
    return Stack(App(), "Unit", env=Environment(account=ACCOUNT, region="us-east-1"))


def _text(value: Any) -> Any:
    """A CloudFormation value with the partition resolved, as a plain string."""
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_text(p) for p in parts)
    if isinstance(value, dict) and value == {"Ref": "AWS::Partition"}:
        return "aws"
    if isinstance(value, list):
        return [_text(v) for v in value]
    return value


def _role_template(kind: str) -> Template:
    stack = _stack()
    ExecutionRole(
        stack,
        "Exec",
        kind=kind,  # type: ignore[arg-type]
        region="us-east-1",
        cluster_arn=CLUSTER,
        subnet_ids=["subnet-a", "subnet-b"],
        security_group_id="sg-1",
        storage_policies=[iam.ManagedPolicy.from_managed_policy_arn(stack, "Data", STORAGE_POLICY)],
    )
    return Template.from_stack(stack)


def _statements(template: Template) -> dict[str, tuple[Any, Any]]:
    (policy,) = template.find_resources("AWS::IAM::Policy").values()
    return {
        s["Sid"]: (s["Action"], _text(s["Resource"]))
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    }


DESCRIBE = [
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeTags",
    "fsx:DescribeFileSystems",
    "cloudwatch:DescribeAlarms",
]
ENI = f"arn:aws:ec2:us-east-1:{ACCOUNT}:network-interface/*"
SYSTEM_IMAGES = [
    "arn:aws:ecr:us-east-1:602401143452:repository/amazon-k8s-cni",
    "arn:aws:ecr:us-east-1:602401143452:repository/amazon-k8s-cni-init",
    "arn:aws:ecr:us-east-1:602401143452:repository/amazon/aws-network-policy-agent",
    "arn:aws:ecr:us-east-1:602401143452:repository/eks/kube-proxy",
    "arn:aws:ecr:us-east-1:602401143452:repository/eks/coredns",
    "arn:aws:ecr:us-east-1:602401143452:repository/eks/eks-pod-identity-agent",
    "arn:aws:ecr:us-east-1:602401143452:repository/eks/pause",
    "arn:aws:ecr:us-east-1:602401143452:repository/eks/aws-efa-k8s-device-plugin",
    "arn:aws:ecr:us-west-2:602401143452:repository/eks/aws-efa-k8s-device-plugin",
    "arn:aws:ecr:us-east-1:767398015722:repository/hyperpod-health-monitoring-agent",
]
PULL = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability"]


# The Nova registry of us-east-1 (novapod/data/nova_upstream.yaml): the jobs' main and
# side images, and the init container every Nova chart adds.
NOVA_US_EAST_1 = [
    "arn:aws:ecr:us-east-1:708977205387:repository/init-container-repo",
    "arn:aws:ecr:us-east-1:708977205387:repository/nova-evaluation-repo",
    "arn:aws:ecr:us-east-1:708977205387:repository/nova-fine-tune-repo",
]


@pytest.mark.parametrize(
    ("kind", "repositories"),
    [("restricted", NOVA_US_EAST_1),
     ("standard", "arn:aws:ecr:us-east-1:*:repository/*")],
)  # fmt: skip
def test_execution_role_statements(kind: str, repositories: str | list[str]) -> None:
    template = _role_template(kind)
    assert _statements(template) == {
        "CreateInterfacesInOurSubnets": (
            "ec2:CreateNetworkInterface",
            [
                ENI,
                f"arn:aws:ec2:us-east-1:{ACCOUNT}:subnet/subnet-a",
                f"arn:aws:ec2:us-east-1:{ACCOUNT}:subnet/subnet-b",
                f"arn:aws:ec2:us-east-1:{ACCOUNT}:security-group/sg-1",
            ],
        ),
        "ManageInterfaces": (
            [
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
                "ec2:ModifyNetworkInterfaceAttribute",
            ],
            ENI,
        ),
        "AttachInterfaces": (
            ["ec2:AttachNetworkInterface", "ec2:DetachNetworkInterface"],
            [ENI, "arn:aws:ec2:us-east-1:*:instance/*"],
        ),
        "TagInterfaces": ("ec2:CreateTags", ENI),
        "DescribeWithoutResourceLevel": (DESCRIBE, "*"),
        "EcrAuthorizationToken": ("ecr:GetAuthorizationToken", "*"),
        "PullImages": (PULL, repositories),
        "PullNodeSystemImages": (PULL, SYSTEM_IMAGES),
        "PodIdentityOnThisCluster": ("eks-auth:AssumeRoleForPodIdentity", CLUSTER),
    }
    (role,) = template.find_resources("AWS::IAM::Role").values()
    properties = role["Properties"]
    assert properties["Description"] == f"novapod HyperPod {kind} instance groups"
    assert properties["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
        }
    ]
    assert _text(properties["ManagedPolicyArns"]) == [
        "arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy",
        STORAGE_POLICY,
    ]


def test_execution_role_findings_are_acknowledged_with_reasons() -> None:
    stack = _stack()
    role = ExecutionRole(
        stack,
        "Exec",
        kind="restricted",
        region="us-east-1",
        cluster_arn=CLUSTER,
        subnet_ids=["subnet-a"],
        security_group_id="sg-1",
        storage_policies=[],
    )
    acknowledged = {
        str(entry.data) for node in (role.role, role.policy) for entry in node.node.metadata
    }
    text = " ".join(acknowledged)
    assert (
        "AmazonSageMakerClusterInstanceRolePolicy is the AWS-maintained policy HyperPod "
        "requires on every cluster instance role (node registration, health reporting, logs)."
    ) in text
    assert (
        "EC2 Describe* (incl. DescribeInstanceTypes), fsx:DescribeFileSystems, "
        "cloudwatch:DescribeAlarms and ecr:GetAuthorizationToken (a registry login token, "
        "account-wide) have no resource-level permissions, so they need Resource '*'."
    ) in text
    assert "HyperPod instances run in a service-owned account" in text
    assert "creation is limited to our subnets and group" in text
    # Exact repositories: no wildcard to acknowledge.
    assert "nova-*" not in text


def test_an_unknown_group_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown instance group kind 'gpu'"):
        ExecutionRole(
            _stack(),
            "Exec",
            kind="gpu",  # type: ignore[arg-type]
            region="us-east-1",
            cluster_arn=CLUSTER,
            subnet_ids=[],
            security_group_id="sg-1",
            storage_policies=[],
        )


def test_execution_role_kinds_follow_the_groups() -> None:
    rig = {"name": "rig", "training_plan": "main"}
    std = {"name": "sys", "instance_type": "ml.m5.2xlarge", "instance_count": 1}
    assert execution_role_kinds(None) == ()
    assert execution_role_kinds(HyperPod(restricted_instance_groups=[rig])) == ("restricted",)
    assert execution_role_kinds(HyperPod(instance_groups=[std])) == ("standard",)
    both = HyperPod(restricted_instance_groups=[rig], instance_groups=[std])
    assert execution_role_kinds(both) == ("restricted", "standard")


def _group_template(closed: bool) -> Template:
    stack = _stack()
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-1",
        availability_zones=["us-east-1a"],
        vpc_cidr_block="10.0.0.0/16",
    )
    HyperPodSecurityGroup(stack, "Nodes", vpc=vpc, vpc_cidr="10.0.0.0/16", closed=closed)
    return Template.from_stack(stack)


def _group_rules(template: Template) -> tuple[dict[str, Any], list[Any], list[Any]]:
    (group,) = template.find_resources("AWS::EC2::SecurityGroup").values()
    ingress = sorted(
        (
            r["Properties"]["IpProtocol"],
            r["Properties"].get("FromPort"),
            r["Properties"].get("ToPort"),
            r["Properties"]["Description"],
        )
        for r in template.find_resources("AWS::EC2::SecurityGroupIngress").values()
    )
    egress = sorted(
        (
            r["Properties"]["IpProtocol"],
            r["Properties"].get("FromPort"),
            r["Properties"].get("ToPort"),
            r["Properties"]["Description"],
        )
        for r in template.find_resources("AWS::EC2::SecurityGroupEgress").values()
    )
    return group["Properties"], ingress, egress


SELF_INGRESS = [
    ("-1", None, None, "EFA and node-to-node traffic"),
    ("tcp", 988, 988, "FSx for Lustre"),
    ("tcp", 1018, 1023, "FSx for Lustre"),
]


def test_open_network_group_rules() -> None:
    properties, ingress, egress = _group_rules(_group_template(closed=False))
    assert properties["GroupDescription"] == (
        "novapod HyperPod nodes, FSx for Lustre and VPC endpoints"
    )
    assert properties["SecurityGroupIngress"] == [
        {
            "CidrIp": "10.0.0.0/16",
            "Description": "HTTPS to VPC endpoints from the VPC",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    assert properties["SecurityGroupEgress"] == [
        {"CidrIp": "0.0.0.0/0", "Description": "Allow all outbound traffic by default",
         "IpProtocol": "-1"}
    ]  # fmt: skip
    assert ingress == SELF_INGRESS
    assert egress == [("-1", None, None, "EFA and node-to-node traffic")]


def test_closed_network_group_rules() -> None:
    properties, ingress, egress = _group_rules(_group_template(closed=True))
    assert properties["SecurityGroupEgress"] == [
        {
            "CidrIp": "0.0.0.0/0",
            "Description": "HTTPS to VPC endpoints and S3 gateway",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    assert ingress == SELF_INGRESS
    assert egress == SELF_INGRESS
