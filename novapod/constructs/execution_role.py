"""Execution roles of HyperPod instance groups: one per group kind, least privilege.

What a node needs (reference section 5): the SageMaker cluster-instance managed
policy, ENI management for EFA and the VPC CNI, ECR pulls, EKS Pod Identity on this
cluster, FSx describe; and, through StorageStack's managed policies, S3 read of inputs
and write of outputs (object actions on `bucket/*`, list on the bucket) and use of
the environment's KMS key.

Nodes pull every image with this role, the system images included (aws-node and its
RIG copy, kube-proxy, CoreDNS, the pod identity agent, the EFA device plugin, the
health-monitoring agent). AWS's HyperPod EKS sample grants the ECR pull actions on
Resource '*' (aws-samples/awsome-distributed-training 1.architectures/
7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/sagemaker-iam-role-stack.yaml);
we name the AWS-owned repositories instead (novapod/data/node_images.yaml). Restricted
groups run the Nova jobs, whose charts pull from the Nova registry of the region the
launcher runs in (its main, init and side images: launcher/nova/utils.py of the pinned
recipes); they may pull exactly the repositories of those images in the role's region,
from the upstream facts (novapod/data/nova_upstream.yaml): `init-container-repo` beside
the `nova-*` ones.

EksStack creates these roles, from values known at synth (the EKS cluster's ARN is
written from its name), so they exist while the EKS cluster is still being created;
HyperPodStack, which deploys after EksStack, only passes their ARNs to the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from novapod.config import HyperPod
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.service_grants import (
    ECR_PULL,
    INTERFACE_LIFECYCLE_ACTIONS,
    create_interfaces_statement,
    network_interfaces_arn,
    repository_arn,
)
from novapod.node_images import ImageRepository, node_image_registries
from novapod.nova.upstream import upstream_facts
from novapod.pins import default_pins

INSTANCE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
# The VPC CNI and EFA also assign addresses and modify the interfaces they manage.
ENI_ACTIONS = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
    *INTERFACE_LIFECYCLE_ACTIONS,
    "ec2:ModifyNetworkInterfaceAttribute",
)
# Attach and detach also authorize on the instance, which HyperPod runs in an account of
# its own: the instance ARN can name no account of ours.
ATTACH_ACTIONS = ("ec2:AttachNetworkInterface", "ec2:DetachNetworkInterface")
DESCRIBE_ACTIONS = (
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeInstances",
    # The VPC CNI reads ENI and address limits per instance type (AmazonEKS_CNI_Policy
    # grants it: docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonEKS_CNI_Policy.html).
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeTags",
    "fsx:DescribeFileSystems",
    "cloudwatch:DescribeAlarms",
)
GroupKind = Literal["restricted", "standard"]
# Construct IDs, kept from when HyperPodStack built the roles (same logical IDs).
ROLE_IDS: dict[GroupKind, str] = {
    "restricted": "RestrictedGroupRole",
    "standard": "StandardGroupRole",
}


def nova_image_repositories(region: str) -> tuple[ImageRepository, ...]:
    """The ECR repositories of every image a Nova chart pulls in `region` (main, init and
    side images), from the upstream facts; none where the region has no Nova registry."""
    return tuple(
        ImageRepository(region, account, name)
        for account, name in upstream_facts().repositories(region)
    )


def execution_role_kinds(hyperpod: HyperPod | None) -> tuple[GroupKind, ...]:
    """The role kinds a cluster's groups use: none without a HyperPod cluster."""
    if hyperpod is None:
        return ()
    kinds: list[GroupKind] = []
    if hyperpod.restricted_instance_groups:
        kinds.append("restricted")
    if hyperpod.instance_groups:
        kinds.append("standard")
    return tuple(kinds)


class ExecutionRole(Construct):
    """The role HyperPod nodes of one group kind (`restricted` or `standard`) assume."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        kind: GroupKind,
        region: str,
        cluster_arn: str,
        subnet_ids: Sequence[str],
        security_group_id: str,
        storage_policies: Sequence[iam.IManagedPolicy],
    ) -> None:
        super().__init__(scope, id_)
        if kind not in {"restricted", "standard"}:
            raise ValueError(f"unknown instance group kind {kind!r}")
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"novapod HyperPod {kind} instance groups",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_POLICY),
                # S3 and KMS access, defined by StorageStack beside the buckets and key.
                *storage_policies,
            ],
        )

        interfaces = network_interfaces_arn(self)
        # Standard groups run any workload: every repository (pulls only).
        repositories = stack.format_arn(
            service="ecr", account="*", resource="repository", resource_name="*"
        )
        pulls = (
            [repository_arn(self, r) for r in nova_image_repositories(region)]
            if kind == "restricted"
            else [repositories]
        )
        statements = [
            create_interfaces_statement(
                self, subnet_ids=subnet_ids, security_group_id=security_group_id
            ),
            iam.PolicyStatement(
                sid="ManageInterfaces", actions=list(ENI_ACTIONS), resources=[interfaces]
            ),
            iam.PolicyStatement(
                sid="AttachInterfaces",
                actions=list(ATTACH_ACTIONS),
                resources=[interfaces, self._any_instance()],
            ),
            # Unconditioned: the VPC CNI tags interfaces that already exist (ones it
            # attached earlier), not only at creation, as AmazonEKS_CNI_Policy allows.
            iam.PolicyStatement(
                sid="TagInterfaces", actions=["ec2:CreateTags"], resources=[interfaces]
            ),
            iam.PolicyStatement(
                sid="DescribeWithoutResourceLevel", actions=list(DESCRIBE_ACTIONS), resources=["*"]
            ),
            # The registry login token is account-wide: the action has no resource type.
            iam.PolicyStatement(
                sid="EcrAuthorizationToken", actions=["ecr:GetAuthorizationToken"], resources=["*"]
            ),
            *(
                [iam.PolicyStatement(sid="PullImages", actions=list(ECR_PULL), resources=pulls)]
                if pulls
                else []
            ),
            iam.PolicyStatement(
                sid="PullNodeSystemImages",
                actions=list(ECR_PULL),
                resources=[
                    repository_arn(self, r)
                    for r in node_image_registries().system_repositories(
                        region, default_pins().health_agent
                    )
                ],
            ),
            iam.PolicyStatement(
                sid="PodIdentityOnThisCluster",
                actions=["eks-auth:AssumeRoleForPodIdentity"],
                resources=[cluster_arn],
            ),
        ]
        self.policy = iam.Policy(self, "Policy", statements=statements, roles=[self.role])
        self._acknowledge(kind, interfaces, repositories)

    def _any_instance(self) -> str:
        return Stack.of(self).format_arn(
            service="ec2", account="*", resource="instance", resource_name="*"
        )

    def _acknowledge(self, kind: GroupKind, interfaces: str, repositories: str) -> None:
        acknowledge(
            self.role,
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{INSTANCE_POLICY}]",
            f"{INSTANCE_POLICY} is the AWS-maintained policy HyperPod requires on every "
            "cluster instance role (node registration, health reporting, logs).",
        )
        reasons = {
            "Resource::*": "EC2 Describe* (incl. DescribeInstanceTypes), fsx:DescribeFileSystems, "
            "cloudwatch:DescribeAlarms and ecr:GetAuthorizationToken (a registry login token, "
            "account-wide) have no resource-level permissions, so they need Resource '*'.",
            f"Resource::{nag_resource(self, self._any_instance())}": "HyperPod instances run "
            "in a service-owned account, so attach/detach cannot name an instance of ours.",
            f"Resource::{nag_resource(self, interfaces)}": "Network interfaces that the VPC "
            "CNI and EFA create do not exist yet, and the CNI tags the ones it manages; "
            "creation is limited to our subnets and group.",
        }
        if kind == "standard":
            reasons[f"Resource::{nag_resource(self, repositories)}"] = (
                "Standard groups run EKS system images from AWS-owned registries that differ "
                "per region and add-on; pulls only (no push)."
            )
        for finding, reason in reasons.items():
            acknowledge(self.policy, f"AwsSolutions-IAM5[{finding}]", reason)
