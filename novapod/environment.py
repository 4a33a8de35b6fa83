"""Compose one environment's stacks from a validated config.

`build_environment` takes any scope (the App of app.py, a Stage of your own app or
of a pipeline) so the same composition serves `cdk deploy` and CDK Pipelines. The
public entry point for your own CDK app is `novapod.build_environment`, which also
sets novapod's feature flags on the scope and adds the policy checks; this one assumes
the flags are set and leaves the checks to its caller (app.py, create_app).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import App, CfnResource, Environment, Fn, Tags, Validations
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NagPack, NIST80053R5Checks
from constructs import Construct, IConstruct

from novapod.compliance.rules import acknowledge_inline_policies
from novapod.config import CompliancePack, NovapodConfig
from novapod.config.stacks import stack_kinds, stack_name
from novapod.constructs.execution_role import execution_role_kinds
from novapod.constructs.monitor.alerts import service_publishers
from novapod.nova.kubernetes import nova_access
from novapod.stacks.capacity import CapacityStack
from novapod.stacks.eks import EksStack
from novapod.stacks.hyperpod import HyperPodStack
from novapod.stacks.monitor import MonitorStack
from novapod.stacks.network import NetworkStack
from novapod.stacks.nova import NovaStack
from novapod.stacks.nova_base import NovaBaseStack
from novapod.stacks.storage import StorageStack

# The CDK context (feature flags) the stacks are built and tested with: shipped in the
# package, so an installed wheel synthesizes what a checkout does. app.py and
# pipeline_app.py pass it to their App (cdk.json holds only the app command).
FEATURE_FLAGS = Path(__file__).resolve().parent / "data" / "feature_flags.json"

# cdk-nag's rule packs: AWS Solutions always runs, the others by the config's
# `compliance` names.
AWS_SOLUTIONS = "aws-solutions"
_PACKS: dict[str, Callable[[Construct], NagPack]] = {
    AWS_SOLUTIONS: AwsSolutionsChecks,
    "nist-800-53-r5": NIST80053R5Checks,
    "hipaa": HIPAASecurityChecks,
}
# The packs add_policy_checks has added to each App (its root construct).
_PACKS_ADDED: weakref.WeakKeyDictionary[IConstruct, set[str]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class EnvironmentStacks:
    """One environment's stacks; those the config does not ask for are None."""

    network: NetworkStack
    storage: StorageStack
    capacity: CapacityStack | None
    eks: EksStack | None
    hyperpod: HyperPodStack | None
    nova: NovaStack | None = None
    nova_base: NovaBaseStack | None = None
    monitor: MonitorStack | None = None


def build_environment(scope: Construct, config: NovapodConfig) -> EnvironmentStacks:
    """The environment's stacks under `scope`, which carries novapod's feature flags."""
    env = Environment(account=config.account, region=config.region)
    prefix = config.prefix
    # Which stacks, and their names, from one pure source (novapod/config/stacks.py) that
    # `novapod destroy-plan` reads too. Names are set, not derived: inside a Stage (CDK
    # Pipelines) CDK would prefix them with the stage's name, and `novapod launch`, the
    # scientists' policy and the cross-stack reads all find them as novapod-<env>-<kind>.
    kinds = stack_kinds(config)
    name = {kind: stack_name(config, kind) for kind in kinds}
    network = NetworkStack(
        scope,
        name["network"],
        stack_name=name["network"],
        network=config.network,
        # The network's endpoints and those the jobs' pods call from restricted groups.
        endpoints=config.endpoint_names,
        name=prefix,
        # Egress beside the first thing that needs it: with EKS, the bootstrap build in
        # the eks stack, so the EKS cluster does not wait ~2 minutes for NAT gateways.
        # Without EKS the network stack keeps it: an open network always has egress.
        defer_egress=config.eks is not None,
        # Endpoints too: the EKS cluster needs none, its bootstrap build waits for them.
        defer_endpoints=config.eks is not None,
        training_jobs=bool(config.training_jobs),
        env=env,
        description=f"novapod {config.name}: VPC, endpoints, HyperPod security group",
    )
    storage = StorageStack(
        scope,
        name["storage"],
        stack_name=name["storage"],
        storage=config.storage,
        name=prefix,
        environment=config.name,
        lifecycle_scripts=bool(config.hyperpod and config.hyperpod.instance_groups),
        network=network.handle,
        security_group=network.security_group,
        # The VPC's flow logs: here only without an eks stack (constructs/flow_logs.py).
        flow_logs=config.network.flow_logs if config.eks is None else None,
        # The monitor's topic is encrypted with the storage key (constructs/monitor/alerts.py).
        alert_publishers=service_publishers() if "monitor" in kinds else (),
        env=env,
        description=f"novapod {config.name}: KMS key, S3 buckets, FSx for Lustre (retained)",
    )
    capacity = None
    if "capacity" in kinds:
        capacity = CapacityStack(
            scope,
            name["capacity"],
            stack_name=name["capacity"],
            config=config,
            network=network.handle,
            key=storage.key,
            ledger=storage.ledger,
            env=env,
            description=f"novapod {config.name}: training plans (bought with approval, or adopted)",
        )
    eks = None
    if "eks" in kinds:
        assert config.eks is not None
        eks = EksStack(
            scope,
            name["eks"],
            stack_name=name["eks"],
            spec=config.eks,
            cluster_name=prefix,
            network=network.handle,
            security_group=network.security_group,
            key=storage.key,
            install_rig_dependencies=bool(
                config.hyperpod and config.hyperpod.restricted_instance_groups
            ),
            # Built here, not in the HyperPod stack: created while the EKS cluster is.
            execution_role_kinds=execution_role_kinds(config.hyperpod),
            node_policies=storage.node_policies,
            egress=network.deferred_egress,
            endpoints=network.deferred_endpoints,
            lifecycle_bucket_name=(
                Fn.get_stack_output(storage.stack_name, "LifecycleScriptsBucketName")
                if storage.lifecycle_bucket is not None
                else None
            ),
            # Only with jobs: the namespace and RBAC exist before HyperPod and NovaStack.
            nova_access=nova_access(config.nova_settings.namespace)
            if config.has_nova_stack
            else None,
            flow_logs=config.network.flow_logs,
            env=env,
            description=f"novapod {config.name}: EKS cluster with the HyperPod dependencies",
        )
    hyperpod = None
    if "hyperpod" in kinds:
        assert eks is not None  # the config requires eks with hyperpod
        hyperpod = HyperPodStack(
            scope,
            name["hyperpod"],
            stack_name=name["hyperpod"],
            config=config,
            cluster_name=prefix,
            eks_cluster_arn=eks.cluster.cluster_arn,
            network=network.handle,
            security_group=network.security_group,
            execution_roles=eks.execution_roles,
            lifecycle_scripts=eks.lifecycle_scripts,
            plans=capacity.plans if capacity else {},
            bootstrap=eks.bootstrap.resource,
            # The managed policy of `novapod status` (it reads the ledger with the key) is
            # here without a nova stack, else in the nova stack beside the Nova check.
            ledger=None if config.has_nova_stack else storage.ledger,
            key=None if config.has_nova_stack else storage.key,
            env=env,
            description=f"novapod {config.name}: SageMaker HyperPod cluster",
        )
    nova = nova_base = None
    if "nova" in kinds:
        assert hyperpod is not None  # the Nova environment serves the HyperPod cluster
        stored = {
            name: Fn.get_stack_output(storage.stack_name, name)
            for name in ("DataBucketName", "ArtifactsBucketName", "KeyArn")
        }
        # Everything of the Nova environment that needs no cluster, built while the
        # clusters are (novapod/stacks/nova_base.py says why it is a stack of its own).
        nova_base = NovaBaseStack(
            scope,
            name["nova-base"],
            stack_name=name["nova-base"],
            config=config,
            cluster_name=prefix,
            placement=network.placement,
            data_bucket_name=stored["DataBucketName"],
            artifacts_bucket_name=stored["ArtifactsBucketName"],
            key_arn=stored["KeyArn"],
            # The Bedrock import and deployment are claimed in it (weak references:
            # storage outputs read with Fn::GetStackOutput, like the names above).
            ledger=storage.ledger,
            # The training jobs' role and launch policy: their own security group.
            training_job_security_group=network.training_job_security_group,
            subnets_by_zone=network.handle.subnet_ids_by_zone(),
            env=env,
            description=f"novapod {config.name}: the Nova environment's parts that need no "
            "cluster (MLflow, recipe bundle, custom-resource functions"
            + (", the training jobs' role)" if config.training_jobs else ")"),
        )
        nova_base.add_stack_dependency(storage, "the buckets and the key")
        nova = NovaStack(
            scope,
            name["nova"],
            stack_name=name["nova"],
            config=config,
            cluster_name=prefix,
            hyperpod_cluster_arn=hyperpod.cluster.attr_cluster_arn,
            restricted_role_name=hyperpod.execution_role_names.get("restricted"),
            base=nova_base,
            ledger=storage.ledger,
            env=env,
            description=f"novapod {config.name}: where the Nova jobs run (access, data "
            "grants, readiness check, Bedrock models)",
        )
        # Said outright: values read with Fn::GetStackOutput are not references to CDK.
        nova.add_stack_dependency(hyperpod, "the HyperPod cluster and its execution roles")
        nova.add_stack_dependency(storage, "the buckets and the key")
        nova.add_stack_dependency(nova_base, "the custom resources' functions and MLflow")
    monitor = None
    if "monitor" in kinds:
        # Nothing depends on it; it is built while the clusters are (novapod/stacks/monitor.py).
        monitor = MonitorStack(
            scope,
            name["monitor"],
            stack_name=name["monitor"],
            config=config,
            placement=network.placement,
            key_arn=Fn.get_stack_output(storage.stack_name, "KeyArn"),
            env=env,
            description=f"novapod {config.name}: the scheduled check of the plans and "
            "instance groups (metrics, dashboard) and the alerts",
        )
        monitor.add_stack_dependency(storage, "the key of its log group")
        if eks is not None:
            monitor.add_stack_dependency(eks, "the NAT routes its function's calls take")
    for key, value in config.resource_tags.items():
        Tags.of(scope).add(key, value)
    if eks is not None:
        _tag_kubectl_barrier(eks, config.resource_tags)
    acknowledge_inline_policies(scope)
    return EnvironmentStacks(
        network=network,
        storage=storage,
        capacity=capacity,
        eks=eks,
        hyperpod=hyperpod,
        nova=nova,
        nova_base=nova_base,
        monitor=monitor,
    )


def _tag_kubectl_barrier(eks: EksStack, tags: dict[str, str]) -> None:
    """Tag the SSM parameter aws_eks_v2 adds as a kubectl-ready barrier.

    aws-cdk-lib builds it as a plain CfnResource (aws-eks-v2/lib/cluster.js,
    `KubectlReadyBarrier`), which Tags.of cannot reach; SSM parameters take a map.
    """
    barrier = eks.cluster.node.try_find_child("KubectlReadyBarrier")
    if isinstance(barrier, CfnResource) and barrier.cfn_resource_type == "AWS::SSM::Parameter":
        barrier.add_property_override("Tags", dict(tags))


def create_app(config: NovapodConfig, *, outdir: str | Path | None = None) -> App:
    """An App with the environment's stacks, the cdk-nag AWS Solutions checks and the
    packs the config's `compliance` lists.

    The App carries novapod's feature flags, as app.py's does, so the templates are the
    ones `cdk synth` writes.
    """
    app = App(outdir=str(outdir) if outdir else None, context=feature_flags())
    build_environment(app, config)
    add_policy_checks(app, config.compliance)
    return app


def feature_flags() -> dict[str, Any]:
    """The CDK context (feature flags) novapod's stacks are built and tested with."""
    try:
        text = FEATURE_FLAGS.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RuntimeError(
            f"novapod's feature flags are missing: {FEATURE_FLAGS} is not there; "
            "reinstall novapod (its package ships data/feature_flags.json)"
        ) from None
    flags: dict[str, Any] = json.loads(text)
    return flags


def add_policy_checks(scope: Construct, compliance: Sequence[CompliancePack] = ()) -> None:
    """cdk-nag runs at synth (AWS Solutions, and the `compliance` packs); an
    unacknowledged finding fails synthesis. The plugins check the whole App, whichever
    scope (App or Stage) they are added to, so each pack is added once per App: a
    second call adds only the packs not there yet."""
    added = _PACKS_ADDED.setdefault(scope.node.root, set())
    wanted = [name for name in (AWS_SOLUTIONS, *compliance) if name not in added]
    if wanted:
        added.update(wanted)
        Validations.of(scope).add_plugins(*(_PACKS[name](scope) for name in wanted))
