"""EksStack: the EKS cluster HyperPod is orchestrated by, prepared for HyperPod.

Native `AWS::EKS::Cluster` (aws_eks_v2), EKS Auto Mode off, the standard managed
add-ons at pinned versions, all control-plane logs with retention, secrets encrypted
with the environment's key, a private endpoint unless config opens it to a CIDR list,
and HTTPS to that private endpoint from the connected networks the config lists.
The HyperPod dependencies are installed by the ClusterBootstrap custom resource.
The HyperPod execution roles are created here too, from values known at synth, so
they are ready while the cluster and the bootstrap still run and HyperPodStack (which
deploys after this stack) only references them.
When the network stack defers it, NAT egress is built here too: only the bootstrap
build (and the HyperPod nodes, deployed after this stack) needs the internet, so the
EKS cluster does not wait for NAT gateways.
Outputs tell a `cdk deploy` user how to reach the cluster and where the long
bootstrap wait logs its progress.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, cast

from aws_cdk import CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from novapod.config import Eks, FlowLogs
from novapod.config.stacks import control_plane_log_group
from novapod.constructs.acknowledge import acknowledge
from novapod.constructs.cluster_bootstrap.construct import ClusterBootstrap
from novapod.constructs.endpoints import VpcEndpoints
from novapod.constructs.execution_role import ROLE_IDS, ExecutionRole, GroupKind
from novapod.constructs.flow_logs import VpcFlowLog
from novapod.constructs.lifecycle_scripts import LifecycleScripts
from novapod.constructs.log_retention import retention
from novapod.constructs.network import Egress, EgressHandover, PrivatePlacement, VpcHandle
from novapod.constructs.security_group import HTTPS
from novapod.facts import ADDON_NAMES, eks_facts
from novapod.nova.kubernetes import NovaAccess

ALL_LOG_TYPES = (
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
)
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
ADMIN_ID_DIGEST_CHARS = 10


def admin_entry_id(principal: str) -> str:
    """Construct ID of a principal's access entry: stable whatever its list position,
    so removing one admin never replaces (and collides with) another's entry."""
    digest = hashlib.sha256(principal.encode("utf-8")).hexdigest()[:ADMIN_ID_DIGEST_CHARS]
    return f"Admin{digest}"


def kubeconfig_command(cluster_name: str, region: str) -> str:
    return f"aws eks update-kubeconfig --name {cluster_name} --region {region}"


class EksStack(Stack):
    """Exposes `cluster` (eks_v2.Cluster), `cluster_name`, `execution_roles` (by kind) and
    `egress` (NAT gateways and private default routes when the network stack handed
    them over as the `egress` argument, else None). `nova_access`: the Nova jobs'
    namespace and RBAC objects the bootstrap keeps in the cluster, when there are jobs."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        spec: Eks,
        cluster_name: str,
        network: VpcHandle,
        security_group: ec2.ISecurityGroup,
        key: kms.IKey,
        install_rig_dependencies: bool,
        execution_role_kinds: Sequence[GroupKind] = (),
        node_policies: Sequence[iam.IManagedPolicy] = (),
        egress: EgressHandover | None = None,
        endpoints: Sequence[str] = (),
        lifecycle_bucket_name: str | None = None,
        nova_access: NovaAccess | None = None,
        flow_logs: FlowLogs | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.cluster_name = cluster_name
        # The VPC's flow logs, under the storage key, beside the cluster (which does not
        # wait for them): see novapod/constructs/flow_logs.py.
        if flow_logs is not None and flow_logs.enabled:
            VpcFlowLog(
                self,
                "VpcFlowLog",
                vpc=network.vpc,
                key=key,
                retention_days=flow_logs.retention_days,
            )
        # The network stack is deployed before this one, its internet gateway attached.
        self.egress = Egress(self, "Egress", handover=egress) if egress else None
        # The standard groups' lifecycle scripts, copied into their bucket (storage stack)
        # here rather than there: HyperPod needs them, the EKS cluster does not.
        self.lifecycle_scripts = (
            LifecycleScripts(
                self,
                "LifecycleScriptsDeployment",
                # By name from the storage stack's output, as NovaStack reads its buckets,
                # so the cdk-nag acknowledgement names the prefix ARN exactly.
                bucket=s3.Bucket.from_bucket_name(self, "LifecycleBucket", lifecycle_bucket_name),
                key=key,
                log_retention_days=spec.log_retention_days,
            )
            if lifecycle_bucket_name is not None
            else None
        )
        # Built beside the cluster, which does not wait for them; the bootstrap does.
        self.endpoints = (
            VpcEndpoints(
                self,
                "Endpoints",
                network=network,
                names=tuple(endpoints),
                security_group=security_group,
            )
            if endpoints
            else None
        )
        # EKS creates this log group itself, without retention, unless it exists first.
        control_plane_logs = logs.LogGroup(
            self,
            "ControlPlaneLogs",
            log_group_name=control_plane_log_group(cluster_name),
            retention=retention(spec.log_retention_days),
            encryption_key=key,
            removal_policy=RemovalPolicy.RETAIN,
        )
        endpoint = (
            eks.EndpointAccess.PRIVATE
            if spec.endpoint == "private"
            else eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*spec.public_access_cidrs)
        )
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=cluster_name,
            version=eks.KubernetesVersion.of(spec.kubernetes_version),
            vpc=network.vpc,
            vpc_subnets=[network.subnet_selection],
            # The HyperPod group: control-plane ENIs and HyperPod nodes reach each other.
            security_group=security_group,
            # Auto Mode off: HyperPod documents the standard add-ons, not Auto Mode.
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            endpoint_access=endpoint,
            cluster_logging=list(ALL_LOG_TYPES),
            secrets_encryption_key=key,
            bootstrap_cluster_creator_admin_permissions=False,
        )
        # Envelope encryption of Kubernetes secrets: the cluster role uses the key.
        self.cluster.role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="EncryptKubernetesSecrets",
                actions=["kms:Encrypt", "kms:Decrypt", "kms:DescribeKey", "kms:CreateGrant"],
                resources=[key.key_arn],
            )
        )
        self.private_access_rules = self._private_access(spec, security_group)
        cfn_cluster = self.cluster.node.default_child
        assert isinstance(cfn_cluster, eks.CfnCluster)
        cfn_cluster.add_property_override(
            "AccessConfig.AuthenticationMode", spec.authentication_mode
        )
        cfn_cluster.node.add_dependency(control_plane_logs)
        # EKS checks at CreateCluster that the cluster role may use the secrets key; a
        # role whose policy is not attached yet fails the create (the KMS propagation race
        # in hashicorp/terraform-provider-aws#49247, retried there, not by CloudFormation).
        role_policy = cast(iam.Role, self.cluster.role).node.try_find_child("DefaultPolicy")
        assert role_policy is not None
        cfn_cluster.node.add_dependency(role_policy)

        pins = eks_facts().addon_versions(spec.kubernetes_version)
        assert pins is not None  # the config refuses versions without pins
        self.addons: dict[str, eks.CfnAddon] = {}
        for name in ADDON_NAMES:
            self.addons[name] = eks.CfnAddon(
                self,
                "Addon" + "".join(p.capitalize() for p in name.split("-")),
                cluster_name=self.cluster.cluster_name,
                addon_name=name,
                addon_version=pins[name],
                # With Auto Mode off EKS bootstraps self-managed copies of these; the
                # managed add-on takes them over.
                resolve_conflicts="OVERWRITE",
                preserve_on_delete=False,
            )
            # On the cluster resource only (its Ref already says so), not the whole
            # construct: its kubectl barrier is for kubectl-based resources, not add-ons.
            self.addons[name].node.add_dependency(cfn_cluster)

        # Keyed by principal, not by list position (see admin_entry_id).
        for principal in dict.fromkeys(spec.admin_principals):
            eks.AccessEntry(
                self,
                admin_entry_id(principal),
                cluster=cast(eks.ICluster, self.cluster),
                principal=principal,
                access_policies=[
                    eks.AccessPolicy.from_access_policy_name(
                        CLUSTER_ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                    )
                ],
            )

        # The HyperPod dependencies, installed before the HyperPod cluster (which depends
        # on this resource) by a CodeBuild project in the private subnets.
        # Its project, roles and handlers are built from the cluster's name (known at
        # synth), so they are created while the cluster is; only the build start waits
        # for the cluster, for the add-ons (the chart expects a working CNI, DNS and
        # pod identity) and for the private default routes built here, if any (the build
        # downloads helm, kubectl, yq and the chart from the internet; CodeBuild in a VPC
        # reaches it through a NAT route: docs.aws.amazon.com/codebuild/latest/userguide/
        # enabling-vpc-access-in-projects.html).
        self.bootstrap = ClusterBootstrap(
            self,
            "HyperPodDependencies",
            cluster=cast(eks.ICluster, self.cluster),
            cluster_name=cluster_name,
            vpc=network.vpc,
            subnets=[s.subnet for s in network.private_subnets],
            security_group=security_group,
            install_rig_dependencies=install_rig_dependencies,
            log_retention_days=spec.log_retention_days,
            after=[
                *self.addons.values(),
                *(self.egress.routes.values() if self.egress else ()),
                *(self.endpoints.all if self.endpoints else ()),
            ],
            # The Nova jobs' namespace and RBAC, applied by the same build (see its README).
            nova_access=nova_access,
            encryption_key=key,
            handler_placement=PrivatePlacement(
                vpc_id=network.vpc.vpc_id,
                subnet_ids=tuple(s.subnet_id for s in network.private_subnets),
                security_group_id=security_group.security_group_id,
            ),
        )
        self.execution_roles: dict[GroupKind, ExecutionRole] = {
            kind: ExecutionRole(
                self,
                ROLE_IDS[kind],
                kind=kind,
                region=self.region,
                # From the name (arn:...:eks:<region>:<account>:cluster/<name>, as in
                # docs.aws.amazon.com/resilience-hub/latest/APIReference/API_EksSource.html),
                # not the cluster's Arn attribute: the roles must not wait for the cluster.
                cluster_arn=self.format_arn(
                    service="eks", resource="cluster", resource_name=cluster_name
                ),
                subnet_ids=[s.subnet_id for s in network.private_subnets],
                security_group_id=security_group.security_group_id,
                storage_policies=node_policies,
            )
            for kind in execution_role_kinds
        }
        self._acknowledge()
        self._outputs()

    def _private_access(
        self, spec: Eks, security_group: ec2.ISecurityGroup
    ) -> list[ec2.CfnSecurityGroupIngress]:
        """HTTPS to the private endpoint from the networks in eks.private_access_cidrs.

        The endpoint's ENIs carry the HyperPod group, which admits 443 from the VPC CIDR
        only; a connected network (VPN, peering, transit gateway) needs its own rule on
        443 (EKS User Guide, cluster-endpoint.html, "Accessing a private only API
        server"). Written here, not in the network stack: the rules follow the eks
        section. Keyed by the CIDR, so reordering the list replaces no rule (a
        replacement would create a duplicate rule first, which EC2 refuses)."""
        return [
            ec2.CfnSecurityGroupIngress(
                self,
                "PrivateEndpointAccess" + cidr.replace(".", "x").replace("/", "m"),
                group_id=security_group.security_group_id,
                ip_protocol="tcp",
                from_port=HTTPS,
                to_port=HTTPS,
                cidr_ip=cidr,
                description=f"Kubernetes API private endpoint from {cidr} "
                "(eks.private_access_cidrs)",
            )
            for cidr in spec.private_access_cidrs
        ]

    def _outputs(self) -> None:
        CfnOutput(
            self,
            "ClusterName",
            value=self.cluster.cluster_name,
            description="Name of the EKS cluster that orchestrates HyperPod.",
        )
        CfnOutput(
            self,
            "ClusterArn",
            value=self.cluster.cluster_arn,
            description="ARN of the EKS cluster that orchestrates HyperPod.",
        )
        CfnOutput(
            self,
            "KubeconfigCommand",
            value=kubeconfig_command(self.cluster_name, self.region),
            description="Run this to point kubectl at the cluster (needs an access entry, "
            "e.g. one of eks.admin_principals, and a route to the endpoint).",
        )
        bootstrap = self.bootstrap
        CfnOutput(
            self,
            "BootstrapBuildLogGroup",
            value=bootstrap.log_group.log_group_name,
            description="CloudWatch log group of the HyperPod dependencies install "
            "(CodeBuild: helm and the RIG script); watch it while cdk deploy waits on "
            "HyperPodDependencies.",
        )
        CfnOutput(
            self,
            "BootstrapStartLogGroup",
            value=bootstrap.handlers.on_event_logs.log_group_name,
            description="Log group of the bootstrap custom resource's on_event handler: "
            "which build each deploy started, or why none was needed.",
        )
        CfnOutput(
            self,
            "BootstrapProgressLogGroup",
            value=bootstrap.handlers.is_complete_logs.log_group_name,
            description="Log group of the bootstrap custom resource's is_complete handler: "
            "the build's status and phase at every poll, with a link to its log.",
        )

    def _acknowledge(self) -> None:
        acknowledge(
            self.cluster,
            "@aws-cdk/aws-eks:clusterMustManuallyTagSubnet",
            "novapod tags the private subnets it creates with kubernetes.io/role/internal-elb; "
            "subnets of an imported VPC are tagged by their owner "
            "(docs/configuration.md: Notes the schema does not carry).",
        )
        role = self.cluster.role
        acknowledge(
            role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy]",
            "AmazonEKSClusterPolicy is the policy EKS requires on the cluster service role; "
            "AWS maintains it with the permissions the control plane needs.",
        )
