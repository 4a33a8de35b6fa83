"""HyperPodStack: the SageMaker HyperPod cluster, orchestrated by EKS.

Restricted instance groups run on training-plan capacity: each takes its plan's ARN
and the subnets the TrainingPlan resource reports for the plan's zone, so the nodes
land where the capacity is. Standard groups run system pods and CPU work with our
lifecycle scripts. The cluster waits for ClusterBootstrap (HyperPod dependencies)
and for the execution roles with their policies: both are in EksStack, which this
stack deploys after. In an environment without a nova stack, the managed policy
`novapod status` needs (constructs/status_policy.py) is here, after the cluster whose ARN
it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import CfnOutput, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from novapod.config import HyperPod, NovapodConfig, RestrictedGroup, StandardGroup
from novapod.config.stacks import HYPERPOD_CLUSTER_LOGICAL_ID
from novapod.constructs.execution_role import (
    ROLE_IDS,
    ExecutionRole,
    GroupKind,
    execution_role_kinds,
)
from novapod.constructs.lifecycle_scripts import LifecycleScripts
from novapod.constructs.network import VpcHandle
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.constructs.status_policy import health_policy, status_policy
from novapod.constructs.training_plan.construct import TrainingPlan

CLUSTER_LOGICAL_ID = HYPERPOD_CLUSTER_LOGICAL_ID


class HyperPodStack(Stack):
    """Exposes `cluster` (CfnCluster), the execution roles it uses, by group kind, and
    `execution_role_names`: each role's name as this stack's output, for stacks that
    deploy after this one and attach policies to the roles (NovaStack)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: NovapodConfig,
        cluster_name: str,
        eks_cluster_arn: str,
        network: VpcHandle,
        security_group: ec2.ISecurityGroup,
        execution_roles: Mapping[GroupKind, ExecutionRole],
        lifecycle_scripts: LifecycleScripts | None,
        plans: Mapping[str, TrainingPlan],
        bootstrap: Construct | None,
        ledger: PurchaseLedger | None = None,
        key: kms.IKey | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        spec = config.hyperpod
        assert spec is not None
        self.spec: HyperPod = spec
        self.plans = plans
        self.requests = {spec.name: request for spec, request in config.training_plan_requests()}
        self.security_group_id = security_group.security_group_id

        # EksStack created the roles (this stack deploys after it, so they and their
        # policies exist before the cluster starts nodes); here they are only referenced.
        needed = execution_role_kinds(spec)
        missing = [k for k in needed if k not in execution_roles]
        if missing:
            raise ValueError(f"the EKS stack created no {', '.join(missing)} execution role")
        self.roles: dict[GroupKind, ExecutionRole] = {k: execution_roles[k] for k in needed}
        for execution_role in self.roles.values():
            # Said outright, not left to the ARN reference: CloudFormation creates this
            # stack only after the roles' stack has completed, policies included.
            if Stack.of(execution_role) is not self:
                self.add_stack_dependency(
                    Stack.of(execution_role), "the HyperPod execution roles and their policies"
                )
        scripts = lifecycle_scripts
        if spec.instance_groups and scripts is None:
            raise ValueError("standard instance groups need the lifecycle scripts deployed")

        self.cluster = sagemaker.CfnCluster(
            self,
            "Cluster",
            cluster_name=cluster_name,
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=eks_cluster_arn
                )
            ),
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=[self.security_group_id],
                subnets=[s.subnet_id for s in network.private_subnets],
            ),
            node_recovery=spec.node_recovery,
            restricted_instance_groups=[
                self._restricted(g) for g in spec.restricted_instance_groups
            ]
            or None,
            instance_groups=[self._standard(g, scripts) for g in spec.instance_groups] or None,
        )
        self.cluster.override_logical_id(CLUSTER_LOGICAL_ID)
        if bootstrap is not None:
            # The HyperPod dependencies chart must be in the cluster before HyperPod.
            self.cluster.node.add_dependency(bootstrap)
        CfnOutput(
            self,
            "ClusterName",
            value=cluster_name,
            description="HyperPod cluster name (aws sagemaker describe-cluster --cluster-name)",
        )
        CfnOutput(
            self,
            "ClusterArn",
            value=self.cluster.attr_cluster_arn,
            description="HyperPod cluster ARN (the HyperPod CLI and SageMaker console use it)",
        )
        # Re-published here so a consumer reads them from this stack (Fn::GetStackOutput)
        # and depends on it alone, not on the EKS stack that created the roles.
        self.execution_role_names: dict[GroupKind, str] = {}
        for kind, execution_role in self.roles.items():
            output = CfnOutput(
                self,
                f"{ROLE_IDS[kind]}Name",
                value=execution_role.role.role_name,
                description=f"Name of the IAM role the {kind} instance groups' nodes use",
            )
            output.override_logical_id(f"{ROLE_IDS[kind]}Name")
            self.execution_role_names[kind] = Fn.get_stack_output(
                self.stack_name, f"{ROLE_IDS[kind]}Name"
            )
        if ledger is not None and key is not None:  # without a nova stack, here
            status_policy(
                self,
                config=config,
                cluster_arn=self.cluster.attr_cluster_arn,
                ledger=ledger,
                key=key,
            )
            health_policy(self, config=config, cluster_arn=self.cluster.attr_cluster_arn)

    def _plan_vpc(self, plan_name: str | None) -> tuple[str | None, Any]:
        if plan_name is None:
            return None, None
        plan = self.plans[plan_name]
        override = sagemaker.CfnCluster.VpcConfigProperty(
            security_group_ids=[self.security_group_id], subnets=plan.subnet_ids
        )
        # The ARN is written out from the plan's deterministic name, not read across
        # stacks: when what is bought changes, so does this template, and the cluster
        # is updated onto the new plan (its subnet is re-read in the same deploy).
        arn = plan.spec.existing_arn or Stack.of(self).format_arn(
            service="sagemaker", resource="training-plan", resource_name=plan.plan_name
        )
        return arn, override

    def _count(self, group: RestrictedGroup | StandardGroup) -> int:
        if group.instance_count is not None:
            return group.instance_count
        assert group.training_plan is not None
        return self.requests[group.training_plan].instance_count

    def _restricted(
        self, group: RestrictedGroup
    ) -> sagemaker.CfnCluster.ClusterRestrictedInstanceGroupProperty:
        plan_arn, override = self._plan_vpc(group.training_plan)
        request = self.requests[group.training_plan]
        return sagemaker.CfnCluster.ClusterRestrictedInstanceGroupProperty(
            instance_group_name=group.name,
            instance_type=group.instance_type or request.instance_type,
            instance_count=self._count(group),
            execution_role=self.roles["restricted"].role.role_arn,
            training_plan_arn=plan_arn,
            override_vpc_config=override,
            environment_config=sagemaker.CfnCluster.EnvironmentConfigProperty(
                f_sx_lustre_config=sagemaker.CfnCluster.FSxLustreConfigProperty(
                    size_in_gib=group.fsx_size_gib,
                    per_unit_storage_throughput=group.fsx_throughput,
                )
            ),
            on_start_deep_health_checks=list(group.deep_health_checks) or None,
            threads_per_core=group.threads_per_core,
        )

    def _standard(
        self, group: StandardGroup, scripts: LifecycleScripts | None
    ) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
        assert scripts is not None
        plan_arn, override = self._plan_vpc(group.training_plan)
        return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
            instance_group_name=group.name,
            instance_type=group.instance_type,
            instance_count=group.instance_count,
            execution_role=self.roles["standard"].role.role_arn,
            life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                source_s3_uri=scripts.source_s3_uri, on_create=scripts.on_create
            ),
            instance_storage_configs=[
                sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                    ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                        volume_size_in_gb=group.ebs_volume_gib
                    )
                )
            ],
            training_plan_arn=plan_arn,
            override_vpc_config=override,
            on_start_deep_health_checks=list(group.deep_health_checks) or None,
            threads_per_core=group.threads_per_core,
        )
