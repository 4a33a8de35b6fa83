"""IAM statements that more than one execution role writes the same way.

- Network interfaces a SageMaker service creates in our VPC on a role's behalf: creation
  names the interface, our subnets and our security group (the Service Authorization
  Reference, list_amazonec2.html: CreateNetworkInterface authorizes on network-interface,
  subnet and security-group); the interface's own lifecycle (permissions, deletion) is on
  interfaces of this account and Region, whose IDs do not exist before the call.
- ECR repositories named exactly (account, Region, name), never `repository/*`.

Used by the HyperPod groups' roles (constructs/execution_role.py) and the training-job
role (constructs/training_job_role.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from novapod.node_images import ImageRepository

# What SageMaker does to the interfaces it creates for a job's containers in our VPC:
# "If you specify a private VPC for your training job, add the following permissions"
# (docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-roles.html, CreateTrainingJob API:
# Execution Role Permissions), without the Describe* calls (no resource-level permission).
INTERFACE_LIFECYCLE_ACTIONS = (
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
)
# EC2 reads with no resource-level permissions (list_amazonec2.html): Resource "*".
VPC_DESCRIBE_ACTIONS = (
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
)
ECR_PULL = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability")


def network_interfaces_arn(scope: IConstruct) -> str:
    """Every network interface of the stack's account and Region."""
    return Stack.of(scope).format_arn(
        service="ec2", resource="network-interface", resource_name="*"
    )


def create_interfaces_statement(
    scope: IConstruct, *, subnet_ids: Sequence[str], security_group_id: str
) -> iam.PolicyStatement:
    """ec2:CreateNetworkInterface, only in `subnet_ids` and with `security_group_id`."""
    stack = Stack.of(scope)
    return iam.PolicyStatement(
        sid="CreateInterfacesInOurSubnets",
        actions=["ec2:CreateNetworkInterface"],
        resources=[
            network_interfaces_arn(scope),
            *(
                stack.format_arn(service="ec2", resource="subnet", resource_name=s)
                for s in subnet_ids
            ),
            stack.format_arn(
                service="ec2", resource="security-group", resource_name=security_group_id
            ),
        ],
    )


def repository_arn(scope: IConstruct, repository: ImageRepository) -> str:
    """The ARN of one ECR repository, in its own account and Region."""
    return Stack.of(scope).format_arn(
        service="ecr",
        region=repository.region,
        account=repository.account,
        resource="repository",
        resource_name=repository.name,
    )
