"""The NovaEnvironment custom resource: checks at deploy that the cluster can take a Nova job.

Two constructs in two stacks. `NovaEnvironmentHandlers` (NovaBaseStack) holds the
handler (code in `handler/`, beside this file) behind a CDK `Provider`, its network
placement and every permission known at synth: nothing in it waits for a cluster, so
CloudFormation builds it while the clusters are created. `NovaEnvironment` (NovaStack,
after the HyperPod cluster) holds the custom resource, the function role's EKS access
entry and its permission on the HyperPod cluster's ARN (which ends in an ID known only
once the cluster exists).

is_complete waits for the HyperPod cluster, then reads the namespace and the training
operator's CRD through the EKS cluster's private API endpoint, so it runs in the
private subnets in a security group of its own. on_event only logs the request: it
stays outside the VPC (no network interface to create for it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import CfnOutput, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from novapod.capacity.naming import training_plan_name
from novapod.config import NovapodConfig
from novapod.constructs.network import PrivatePlacement
from novapod.constructs.provider import (
    HandlerProvider,
    attach_to_vpc,
    core_handler_module,
    handler_code,
    https_egress_group,
)
from novapod.constructs.security_group import admit_to_eks_api
from novapod.nova.kubernetes import ENVIRONMENT_CHECK_GROUP

HANDLER_ROOT = Path(__file__).resolve().parent
RESOURCE_TYPE = "Custom::NovapodNovaEnvironment"
# The CRD the Nova recipes' PyTorchJobs need (handler/decisions.py, KNOWN_CRDS).
REQUIRED_CRDS = ("pytorchjobs.kubeflow.org",)
# How long is_complete waits for the HyperPod cluster to be InService before it fails
# with its own sentence; the Provider gives up a few minutes later (CloudFormation
# allows a custom resource one hour).
CHECK_TIMEOUT_SECONDS = 3000
TOTAL_TIMEOUT = Duration.minutes(55)
QUERY_INTERVAL = Duration.seconds(30)
ON_EVENT_TIMEOUT = Duration.minutes(1)
# At least handler/index.py worst_case_seconds(MAX_GROUPS, MAX_CRDS) (600 s): every
# AWS and Kubernetes call retried to its limit (tests check the bound).
IS_COMPLETE_TIMEOUT = Duration.minutes(11)


@dataclass(frozen=True)
class GroupPlan:
    """A restricted instance group and the ARN of its training plan."""

    name: str
    plan_arn: str


def restricted_group_plans(scope: Construct, config: NovapodConfig) -> list[GroupPlan]:
    """Each restricted group's plan ARN, as the HyperPod stack writes it: the adopted
    ARN, else the deterministic name of the plan this environment buys."""
    assert config.hyperpod is not None
    requests = {spec.name: (spec, request) for spec, request in config.training_plan_requests()}
    stack = Stack.of(scope)
    out = []
    for group in config.hyperpod.restricted_instance_groups:
        spec, request = requests[group.training_plan]
        arn = spec.existing_arn or stack.format_arn(
            service="sagemaker",
            resource="training-plan",
            resource_name=training_plan_name(config.name, request),
        )
        out.append(GroupPlan(group.name, arn))
    return out


class NovaEnvironmentHandlers(Construct):
    """The check's functions, network placement and synth-known permissions.

    Attributes: `handlers` (HandlerProvider), `role` (is_complete's role, which the
    checks run as), `log_group` (is_complete's: the progress of every poll and the
    verdict), `security_group`, `ingress`.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        eks_cluster_name: str,
        groups: Sequence[GroupPlan],
        placement: PrivatePlacement,
        log_retention_days: int,
        key: kms.IKey | None = None,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        self.handlers = HandlerProvider(
            self,
            "Handlers",
            code=handler_code(HANDLER_ROOT),
            handler_module=core_handler_module(HANDLER_ROOT),
            purpose="NovaEnvironment",
            on_event_timeout=ON_EVENT_TIMEOUT,
            is_complete_timeout=IS_COMPLETE_TIMEOUT,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            log_retention_days=log_retention_days,
            encryption_key=key,
        )
        check = self.handlers.is_complete
        assert check.role is not None
        self.role: iam.IRole = check.role
        self.log_group: logs.ILogGroup = self.handlers.is_complete_logs

        # A group of its own: HTTPS out only (the SageMaker, EKS and STS APIs through the
        # VPC's NAT route or endpoints, and the EKS private endpoint), nothing in.
        self.security_group = https_egress_group(
            self,
            "SecurityGroup",
            vpc_id=placement.vpc_id,
            description="novapod NovaEnvironment check: HTTPS to the EKS API and AWS APIs",
            destination="HTTPS to the EKS API endpoint and AWS service APIs",
        )
        # The private endpoint answers on the control plane's cross-account network
        # interfaces, which carry the security groups given at CreateCluster
        # (securityGroupIds, docs.aws.amazon.com/eks/latest/APIReference/
        # API_VpcConfigRequest.html): the EKS stack gives the HyperPod group. Admit the
        # check there on HTTPS, as the cluster bootstrap's build is admitted.
        self.ingress = admit_to_eks_api(
            self,
            cluster_group_id=placement.security_group_id,
            source_group_id=self.security_group.attr_group_id,
            who="NovaEnvironment check",
        )
        # The private endpoint is reachable from the VPC only; the shared helper sets the
        # VpcConfig and grants what Lambda needs (configuration-vpc.html).
        attach_to_vpc(check, subnet_ids=placement.subnet_ids, security_group=self.security_group)
        self.handlers.keep_outside_vpc(
            "on_event only logs the request and answers it (the check runs in is_complete, "
            "which is in the private subnets): it reaches nothing, in the VPC or outside.",
            self.handlers.on_event,
        )
        eks_cluster_arn = stack.format_arn(
            service="eks", resource="cluster", resource_name=eks_cluster_name
        )
        check.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeEksCluster",
                actions=["eks:DescribeCluster"],
                resources=[eks_cluster_arn],
            )
        )
        if groups:
            check.add_to_role_policy(
                iam.PolicyStatement(
                    sid="DescribeGroupPlans",
                    actions=["sagemaker:DescribeTrainingPlan"],
                    resources=sorted({g.plan_arn for g in groups}),
                )
            )

    @property
    def service_token(self) -> str:
        return self.handlers.service_token


class NovaEnvironment(Construct):
    """The check itself, after the HyperPod cluster: the custom resource, the check
    role's EKS access entry and its permission to describe the HyperPod cluster.

    Attributes: `resource` (the custom resource), `access_entry`, `policy`.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        handlers: NovaEnvironmentHandlers,
        cluster_name: str,
        eks_cluster_name: str,
        hyperpod_cluster_arn: str,
        namespace: str,
        groups: Sequence[GroupPlan],
    ) -> None:
        super().__init__(scope, id_)
        role_arn = handlers.role.role_arn
        self.policy = iam.Policy(
            self,
            "DescribeHyperPodCluster",
            roles=[iam.Role.from_role_name(self, "CheckRole", handlers.role.role_name)],
            statements=[
                iam.PolicyStatement(
                    sid="DescribeHyperPodCluster",
                    actions=["sagemaker:DescribeCluster"],
                    resources=[hyperpod_cluster_arn],
                )
            ],
        )

        # A Kubernetes group and no access policy: the eks stack's bootstrap build binds
        # the group to a ClusterRole of get on namespaces and customresourcedefinitions
        # (novapod/nova/kubernetes.py), which is all the check reads. No EKS access policy
        # is that narrow: AmazonEKSViewPolicy cannot read CRDs, AmazonEKSAdminViewPolicy
        # reads every resource, Secrets included (docs.aws.amazon.com/eks/latest/
        # userguide/access-policy-permissions.html).
        self.access_entry = eks.CfnAccessEntry(
            self,
            "AccessEntry",
            cluster_name=eks_cluster_name,
            principal_arn=role_arn,
            type="STANDARD",
            kubernetes_groups=[ENVIRONMENT_CHECK_GROUP],
        )

        properties: dict[str, object] = {
            "ClusterName": cluster_name,
            "EksClusterName": eks_cluster_name,
            "Namespace": namespace,
            "RestrictedGroups": [{"Name": g.name, "TrainingPlanArn": g.plan_arn} for g in groups],
            "RequiredCrds": list(REQUIRED_CRDS),
            "TimeoutSeconds": str(CHECK_TIMEOUT_SECONDS),
            "RoleArn": role_arn,
        }
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=handlers.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
            # The check creates nothing: deleting it deletes nothing.
            removal_policy=RemovalPolicy.DESTROY,
        )
        # The check needs its cluster access and its permissions before the first poll
        # (and they stay until it is deleted); its network path and the rest of its
        # permissions are in NovaBaseStack, which NovaStack deploys after.
        self.resource.node.add_dependency(self.access_entry, self.policy)

    def output(self, scope: Construct, handlers: NovaEnvironmentHandlers) -> CfnOutput:
        return CfnOutput(
            scope,
            "NovaEnvironmentLogGroup",
            value=handlers.log_group.log_group_name,
            description="Log group of the deploy-time check that the cluster can take a Nova "
            "job (cluster InService, namespace and PyTorchJob CRD present, each restricted "
            "group's nodes or plan start); one JSON line per step.",
        )


def nova_environment_handlers(
    scope: Construct,
    *,
    config: NovapodConfig,
    cluster_name: str,
    placement: PrivatePlacement,
    key: kms.IKey | None = None,
) -> NovaEnvironmentHandlers:
    """The check's functions and placement in `scope` (NovaBaseStack).

    The HyperPod and EKS clusters share the name `novapod-<env>` (environment.py).
    """
    return NovaEnvironmentHandlers(
        scope,
        "NovaEnvironment",
        eks_cluster_name=cluster_name,
        groups=restricted_group_plans(scope, config),
        placement=placement,
        log_retention_days=config.eks.log_retention_days if config.eks else 365,
        key=key,
    )


def nova_environment(
    scope: Construct,
    *,
    config: NovapodConfig,
    handlers: NovaEnvironmentHandlers,
    cluster_name: str,
    hyperpod_cluster_arn: str,
) -> NovaEnvironment:
    """The environment's check in `scope` (NovaStack), with its log group's output."""
    check = NovaEnvironment(
        scope,
        "NovaEnvironment",
        handlers=handlers,
        cluster_name=cluster_name,
        eks_cluster_name=cluster_name,
        hyperpod_cluster_arn=hyperpod_cluster_arn,
        namespace=config.nova_settings.namespace,
        groups=restricted_group_plans(scope, config),
    )
    check.output(scope, handlers)
    return check
