"""Which stacks a config makes, their names, and the names that must never change.

Pure (no CDK), so that what builds the stacks and what destroys them read one source:
`novapod.environment.build_environment` builds exactly `stack_kinds(config)`, named
`stack_name(config, kind)`, and `novapod destroy-plan` (novapod/operate/destroy.py)
destroys them in the reverse order. The stacks pin the logical IDs and names below;
changing one replaces (or orphans) a resource that holds data or money.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from novapod.config.root import NovapodConfig

# Every kind of stack, in an order they deploy in: each after the stacks it depends on
# (nova-base needs only network and storage, so it is built while the clusters are; the
# monitor, which nothing depends on, last, so it is destroyed first).
STACK_KINDS = ("network", "storage", "capacity", "eks", "nova-base", "hyperpod", "nova", "monitor")
# CloudFormation refuses to delete these until termination protection is turned off.
TERMINATION_PROTECTED = frozenset({"storage"})

# Logical IDs of the storage stack's stateful resources: changing one replaces data.
STORAGE_PINNED_IDS = {
    "key": "EncryptionKey",
    "access_logs": "AccessLogsBucket",
    "data": "DataBucket",
    "artifacts": "ArtifactsBucket",
    "lustre": "LustreFileSystem",
    "lifecycle_scripts": "LifecycleScriptsBucket",
    "lustre_association": "LustreDataRepositoryAssociation",
    "purchase_ledger": "PurchaseLedger",
}
# The HyperPod cluster's logical ID in the hyperpod stack (`novapod status` reads when
# CloudFormation last updated it: DescribeStackResource).
HYPERPOD_CLUSTER_LOGICAL_ID = "HyperPodCluster"


def stack_kinds(config: NovapodConfig) -> tuple[str, ...]:
    """The kinds of the config's stacks, in `STACK_KINDS` order."""
    present = {
        "network": True,
        "storage": True,
        "capacity": bool(config.capacity.training_plans),
        "eks": config.eks is not None,
        "hyperpod": config.hyperpod is not None,
        # The Nova environment serves jobs on the HyperPod cluster.
        "nova-base": config.has_nova_stack,
        "nova": config.has_nova_stack,
        # The scheduled check of the plans and groups (novapod/stacks/monitor.py).
        "monitor": config.has_monitor,
    }
    return tuple(kind for kind in STACK_KINDS if present[kind])


def stack_name(config: NovapodConfig, kind: str) -> str:
    """`novapod-<env>-<kind>`: set, not derived (environment.py says why)."""
    return f"{config.prefix}-{kind}"


def plan_logical_id(plan: str) -> str:
    """Pinned logical ID of a plan's custom resource: TrainingPlan<PlanName>."""
    return "TrainingPlan" + "".join(p.capitalize() for p in plan.split("-"))


def control_plane_log_group(cluster_name: str) -> str:
    """The EKS control-plane log group, named as EKS names it (created before the cluster
    so that EKS does not create it without retention)."""
    return f"/aws/eks/{cluster_name}/cluster"


def lifecycle_bucket_name(environment: str, account: str, region: str) -> str:
    """The standard groups' lifecycle-scripts bucket. HyperPod's cluster-instance policy
    reads buckets whose name starts with `sagemaker-` (at most 61 characters here)."""
    return f"sagemaker-np-{environment}-{account}-{region}"
