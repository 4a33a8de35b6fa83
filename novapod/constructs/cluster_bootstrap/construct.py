"""ClusterBootstrap: install the HyperPod dependencies into EKS before HyperPod exists.

HyperPod needs its dependencies Helm chart (and, for restricted instance groups, the
RIG dependencies) in the EKS cluster before the SageMaker cluster is created. That
needs helm, kubectl, git and yq, and can outlast a Lambda, so the work runs in a
CodeBuild project inside the VPC. A custom resource (CDK `Provider`: on_event starts
the build, is_complete polls it) ties it into the deployment: HyperPod depends on
`ClusterBootstrap.resource`. Pins come from novapod/data/hyperpod_dependencies.yaml;
the build's scripts live in `codebuild/` beside this file and ship as an S3 asset.

Deploy time: the project, its role, the handler functions and the Provider's state
machine are built from values known at synth (the cluster's name, ARNs formatted from
it), so CloudFormation creates them while the EKS cluster is being created. Only the
custom resource itself (the build start) waits for the cluster, its access entry and
the caller's `after` (the add-ons).

With `nova_access` (a config with Nova jobs), the same build also keeps the jobs'
namespace and its RBAC objects in the cluster. One in-cluster mechanism on purpose,
rather than aws_eks_v2 manifests: those need a kubectl provider (a Lambda with a
kubectl/helm layer, placed in the private subnets for a private endpoint, with its own
cluster-admin access entry and Provider; docs.aws.amazon.com/cdk/api/v2/python/
aws_cdk.aws_eks_v2/KubectlProviderOptions.html), i.e. a second kubectl outside the
checksum pins, a second admin principal and a second deploy wait, while this build
already runs the pinned, sha256-verified kubectl inside the VPC as a cluster admin,
records what it applied in its marker ConfigMap and reports what a delete left.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import (
    Annotations,
    ArnFormat,
    Aws,
    CustomResource,
    Duration,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct, IDependable

from novapod.config import LOG_RETENTION_DAYS
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.log_retention import log_group
from novapod.constructs.network import PrivatePlacement
from novapod.constructs.provider import (
    HandlerProvider,
    core_handler_module,
    default_policy,
    handler_code,
)
from novapod.nova.kubernetes import NovaAccess
from novapod.pins import HyperPodDependencies, default_pins

from .buildspec import build_environment, build_spec

HERE = Path(__file__).resolve().parent
SCRIPTS_DIR = HERE / "codebuild"
RESOURCE_TYPE = "Custom::NovapodClusterBootstrap"
BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_7_0  # x86_64: the pins are linux amd64
# The build must end (and is_complete report it) before CloudFormation's 1 h limit for
# a custom resource: 10 min in the queue + 45 min of build < 60 min total.
BUILD_TIMEOUT = Duration.minutes(45)
QUEUED_TIMEOUT = Duration.minutes(10)
TOTAL_TIMEOUT = Duration.minutes(60)
QUERY_INTERVAL = Duration.seconds(30)
ON_EVENT_TIMEOUT = Duration.minutes(1)
IS_COMPLETE_TIMEOUT = Duration.minutes(1)
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
HTTPS = 443


class ClusterBootstrap(Construct):
    """The HyperPod dependencies chart (and RIG dependencies), installed once per cluster.

    Attributes: `resource` (the custom resource HyperPod must depend on), `project`
    (the CodeBuild project), `role` (its role, a cluster admin through an EKS access
    entry), `access_entry`, `log_group` (build logs), `handlers` (whose `on_event_logs`
    and `is_complete_logs` show which build started and its status per poll), `pins` and
    `nova_access`.

    `cluster_name` is the cluster's name as a plain string (the cluster must be created
    with that name): everything but the custom resource is built from it, not from the
    cluster's attributes, so none of it waits for the cluster. `after` are further
    resources the build needs first (e.g. the cluster's add-ons). `nova_access`: the Nova
    jobs' namespace and RBAC objects to keep in the cluster (novapod/nova/kubernetes.py),
    or None to keep none (and remove those an earlier deploy applied).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        cluster: eks.ICluster,
        cluster_name: str,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        security_group: ec2.ISecurityGroup,
        install_rig_dependencies: bool,
        log_retention_days: int = 365,
        encryption_key: kms.IKey | None = None,
        after: Sequence[IDependable] = (),
        nova_access: NovaAccess | None = None,
        handler_placement: PrivatePlacement | None = None,
    ) -> None:
        super().__init__(scope, id_)
        if Token.is_unresolved(cluster_name) or not cluster_name:
            raise ValueError(
                "ClusterBootstrap needs the EKS cluster's name as a plain string (create "
                "the cluster with that name), so that its build and handlers need not wait "
                "for the cluster"
            )
        if not subnets:
            raise ValueError(
                "ClusterBootstrap needs at least one private subnet (with a NAT route) "
                "for its CodeBuild project"
            )
        if log_retention_days not in LOG_RETENTION_DAYS:
            raise ValueError(
                f"ClusterBootstrap: CloudWatch Logs does not offer a retention of "
                f"{log_retention_days} days"
            )
        self.pins: HyperPodDependencies = default_pins()
        self.nova_access = nova_access
        self.cluster_name = cluster_name
        self._days = log_retention_days
        self._key = encryption_key
        missing = self.pins.missing(rig=install_rig_dependencies)
        if missing:
            Annotations.of(self).add_warning_v2(
                "novapod:hyperpod-dependencies-unpinned",
                f"novapod/data/hyperpod_dependencies.yaml has no verified {', '.join(missing)}; "
                "the bootstrap build will refuse to run until they are pinned.",
            )
        stack = Stack.of(self)
        region = stack.region
        if not Token.is_unresolved(region) and self.pins.health_agent.image(region) is None:
            Annotations.of(self).add_error(
                f"novapod/data/hyperpod_dependencies.yaml names no health-monitoring agent "
                f"registry for {region}; add its account under "
                "health_monitoring_agent.registry_accounts (see the chart's _helpers.tpl)."
            )
        # From the name, not the cluster's Arn attribute: no dependency on the cluster.
        cluster_arn = stack.format_arn(
            service="eks", resource="cluster", resource_name=cluster_name
        )

        self.log_group = self._log_group("BuildLogs")
        scripts = s3_assets.Asset(self, "Scripts", path=str(SCRIPTS_DIR))
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
            description="novapod ClusterBootstrap: installs the HyperPod dependencies with Helm",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeThisCluster",
                actions=["eks:DescribeCluster"],
                resources=[cluster_arn],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadBootstrapScripts",
                actions=["s3:GetObject"],
                resources=[scripts.bucket.arn_for_objects(scripts.s3_object_key)],
            )
        )
        self.project = codebuild.Project(
            self,
            "Project",
            description="novapod: installs the SageMaker HyperPod dependencies into EKS",
            role=self.role,
            vpc=vpc,
            subnet_selection=ec2.SubnetSelection(subnets=list(subnets)),
            security_groups=[security_group],
            environment=codebuild.BuildEnvironment(
                build_image=BUILD_IMAGE, compute_type=codebuild.ComputeType.SMALL
            ),
            environment_variables={
                "CLUSTER_NAME": codebuild.BuildEnvironmentVariable(value=cluster_name),
                "SCRIPTS_BUCKET": codebuild.BuildEnvironmentVariable(value=scripts.s3_bucket_name),
                "SCRIPTS_KEY": codebuild.BuildEnvironmentVariable(value=scripts.s3_object_key),
            },
            build_spec=codebuild.BuildSpec.from_object(
                build_spec(self.pins, "install", install_rig_dependencies, region)
            ),
            timeout=BUILD_TIMEOUT,
            queued_timeout=QUEUED_TIMEOUT,
            # Helm serialises nothing across builds: one build at a time per cluster.
            concurrent_build_limit=1,
            logging=codebuild.LoggingOptions(
                cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=self.log_group)
            ),
            grant_report_group_permissions=False,
        )
        if encryption_key is not None:
            self._encrypt_project(encryption_key)

        self.access_entry = eks.AccessEntry(
            self,
            "AccessEntry",
            cluster=cluster,
            principal=self.role.role_arn,
            access_policies=[
                eks.AccessPolicy.from_access_policy_name(
                    CLUSTER_ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                )
            ],
        )
        # The build reaches the cluster's private endpoint from its security group.
        # Only on the security group EKS creates for the control plane: the caller's
        # groups are the caller's to manage (novapod's already admits itself).
        try:
            control_plane: ec2.ISecurityGroup | None = cluster.cluster_security_group
        except RuntimeError:  # an imported cluster without one: its owner manages access
            control_plane = None
        if control_plane is not None:
            # CDK puts the rule under the cluster's scope: the dependency on `cluster`
            # below covers it.
            control_plane.add_ingress_rule(
                security_group, ec2.Port.tcp(HTTPS), "novapod ClusterBootstrap build to the EKS API"
            )

        self.handlers = self._provider(log_retention_days, handler_placement)
        self.provider = self.handlers.provider
        self.on_event = self.handlers.on_event
        self.is_complete = self.handlers.is_complete
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.handlers.service_token,
            resource_type=RESOURCE_TYPE,
            properties={
                "ProjectName": self.project.project_name,
                "ClusterName": cluster_name,
                "PinsSha256": self.pins.digest(),
                "ScriptSha256": scripts.asset_hash,
                "InstallRigDependencies": "true" if install_rig_dependencies else "false",
                # Every build runs with the pins of its own event (see handler/decisions.py),
                # and with the Nova access objects it declares (the manifests, readable here).
                "BuildEnvironment": build_environment(
                    self.pins, rig=install_rig_dependencies, region=region, access=nova_access
                ),
                # For reviewers of the template; PinsSha256 already covers them.
                "ChartRevision": self.pins.chart.revision,
                "RigRevision": self.pins.rig.revision if install_rig_dependencies else "",
                # Absent without Nova jobs, so such templates are unchanged.
                **({"KubernetesSha256": nova_access.digest()} if nova_access else {}),
            },
            # Delete runs a best-effort uninstall build (see handler/index.py).
            removal_policy=RemovalPolicy.DESTROY,
        )
        # The build needs the cluster (with the API ingress rule CDK puts under it), its
        # permissions and cluster access for every event, Delete too: these go after the
        # resource is deleted and exist before it is created. Nothing else in this
        # construct waits for the cluster.
        self.resource.node.add_dependency(cluster, self.access_entry, self.role, *after)
        self._acknowledge(encrypted=encryption_key is not None)

    # --- building blocks ------------------------------------------------------------

    def _log_group(self, id_: str) -> logs.LogGroup:
        return log_group(self, id_, days=self._days, key=self._key)

    def _encrypt_project(self, key: kms.IKey) -> None:
        # Set on the L1 and granted here with exact actions; CDK's own grant would add
        # kms:ReEncrypt* and kms:GenerateDataKey*.
        cfn_project = self.project.node.default_child
        assert isinstance(cfn_project, codebuild.CfnProject)
        cfn_project.encryption_key = key.key_arn
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="EncryptBuildOutput",
                actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
                resources=[key.key_arn],
            )
        )

    def _provider(
        self, log_retention_days: int, placement: PrivatePlacement | None
    ) -> HandlerProvider:
        handlers = HandlerProvider(
            self,
            "Handlers",
            code=handler_code(HERE),
            handler_module=core_handler_module(HERE),
            purpose="ClusterBootstrap",
            on_event_timeout=ON_EVENT_TIMEOUT,
            is_complete_timeout=IS_COMPLETE_TIMEOUT,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            log_retention_days=log_retention_days,
            encryption_key=self._key,
            # In the private subnets: they run only after the NAT routes and endpoints
            # exist (`after`), and reach CodeBuild's API through them.
            placement=placement,
        )
        if placement is None:
            handlers.keep_outside_vpc(
                "No private subnets were given for the handlers (ClusterBootstrap's "
                "handler_placement); they call only CodeBuild's StartBuild and BatchGetBuilds."
            )
        handlers.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="StartBootstrapBuild",
                actions=["codebuild:StartBuild"],
                resources=[self.project.project_arn],
            )
        )
        handlers.is_complete.add_to_role_policy(
            iam.PolicyStatement(
                sid="PollBootstrapBuild",
                actions=["codebuild:BatchGetBuilds"],
                resources=[self.project.project_arn],
            )
        )
        return handlers

    # --- cdk-nag ----------------------------------------------------------------------

    def _acknowledge(self, *, encrypted: bool) -> None:
        build_policy = default_policy(self.role)
        acknowledge(
            self.project.node.find_child("PolicyDocument"),
            "AwsSolutions-IAM5[Resource::*]",
            "CodeBuild in a VPC needs ec2:CreateNetworkInterface, DeleteNetworkInterface and "
            "Describe{NetworkInterfaces,Subnets,SecurityGroups,DhcpOptions,Vpcs}, which have "
            "no resource-level permissions; CDK grants them for the project's VPC config.",
        )
        stack = Stack.of(self)
        # CDK writes this ARN with pseudo parameters even in an environment-bound stack.
        any_interface = f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:{Aws.ACCOUNT_ID}:network-interface/*"
        acknowledge(
            build_policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, any_interface)}]",
            "ec2:CreateNetworkInterfacePermission for the build's ENIs, whose IDs are unknown "
            "in advance; CDK's statement is conditioned on this project's subnets and on "
            "codebuild.amazonaws.com as the authorized service.",
        )
        default_group = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"/aws/codebuild/{self.project.project_name}",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        acknowledge(
            build_policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, default_group)}:*]",
            "CodeBuild's default log group statement (log streams of /aws/codebuild/<this "
            "project>, added by CDK); the build writes to its own log group with retention.",
        )
        acknowledge(
            self.project,
            "CodeBuildProjectSourceRepoUrl",
            "The project has no source repository (NO_SOURCE, an inline buildspec): its "
            "scripts come from a CDK asset in S3, so there are no GitHub or Bitbucket "
            "credentials for the rule to check.",
        )
        if not encrypted:
            acknowledge(
                self.project,
                "AwsSolutions-CB4",
                "No customer key was given: the project keeps no artifacts and no cache, and "
                "CodeBuild encrypts what it stores with the AWS managed key (alias/aws/s3).",
            )
