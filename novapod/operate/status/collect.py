"""The facts `novapod status` judges, read with the caller's credentials through the
clients passed in (tests point them at the fake control plane). Read-only: every call is
a Describe, List or Query.

- CloudFormation DescribeStacks of the storage stack: the purchase ledger's table name
  (its `PurchaseLedgerTableName` output), as `novapod purchases` finds it.
- DynamoDB Query of the ledger (strongly consistent, this environment's partition only):
  `handler_core.ledger.Ledger.entries`, the same read as `novapod purchases`.
- SageMaker DescribeTrainingPlan of each plan the config lists, by its name; a plan not
  bought is ResourceNotFound (the error DescribeTrainingPlan documents:
  docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingPlan.html).
  Its output (botocore's DescribeTrainingPlanResponse) holds Status (Pending | Active |
  Scheduled | Expired | Failed), StartTime, EndTime, UpfrontFee, CurrencyCode and the
  Total/Available/InUse/Unhealthy instance counts.
- DescribeTrainingPlanExtensionHistory of each plan found, every page (its paginator):
  TrainingPlanExtensions[] with Status, PaymentStatus, StartDate, EndDate, DurationHours
  (optional in the model), UpfrontFee, CurrencyCode (describe-extension-history-api-cli-
  sdk.html in the SageMaker developer guide).
- DescribeCluster of the HyperPod cluster (ResourceNotFound when it is not deployed):
  ClusterStatus, InstanceGroups[] and RestrictedInstanceGroups[] with CurrentCount,
  TargetCount, InstanceType, Status, TrainingPlanArn, TrainingPlanStatus
  (API_DescribeCluster.html, ClusterInstanceGroupDetails and
  ClusterRestrictedInstanceGroupDetails in botocore's model).
- ListClusterNodes, every page (its paginator): ClusterNodeSummaries[] with
  InstanceGroupName, InstanceId, InstanceType, LaunchTime and InstanceStatus {Status,
  Message} (API_ListClusterNodes.html).

Any other AWS error propagates (the CLI says which call failed and what it needs);
a ledger that cannot be read raises `ledger.LedgerError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from novapod.capacity.naming import EXTENSION_NAME
from novapod.constructs.handler_core import ledger
from novapod.nova import launch
from novapod.operate.status.expected import Expected, expected

if TYPE_CHECKING:
    from novapod.config import NovapodConfig

NOT_FOUND = "ResourceNotFound"
# The IAM actions these calls need (the managed policy of `status` grants exactly these):
# the Service Authorization Reference names each SageMaker, DynamoDB and CloudFormation
# action after its operation (list_amazonsagemaker.html, list_amazondynamodb.html,
# list_awscloudformation.html); reading the ledger's items also needs kms:Decrypt on the
# environment's key, which encrypts the table.
ACTIONS = (
    "cloudformation:DescribeStacks",
    "dynamodb:Query",
    "sagemaker:DescribeTrainingPlan",
    "sagemaker:DescribeTrainingPlanExtensionHistory",
    "sagemaker:DescribeCluster",
    "sagemaker:ListClusterNodes",
)


@dataclass(frozen=True)
class PlanFacts:
    name: str  # the config entry's name
    described: Mapping[str, Any] | None  # DescribeTrainingPlan; None: not bought
    history: tuple[Mapping[str, Any], ...]  # DescribeTrainingPlanExtensionHistory
    ledger: tuple[ledger.Entry, ...]  # the plan's item and its extensions' items


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    described: Mapping[str, Any] | None  # DescribeCluster; None: not deployed
    nodes: tuple[Mapping[str, Any], ...]  # ListClusterNodes


@dataclass(frozen=True)
class Facts:
    expected: Expected
    config_path: str
    observed_at: datetime
    ledger_table: str
    plans: tuple[PlanFacts, ...]
    ledger: tuple[ledger.Entry, ...]  # every item of the environment
    cluster: ClusterFacts | None  # None: the config has no HyperPod cluster


def collect(
    config: NovapodConfig,
    config_path: str,
    *,
    cloudformation: Any,
    sagemaker: Any,
    dynamodb: Any,
    now: datetime,
) -> Facts:
    """Every fact of one round; `launch.LaunchError` when the storage stack (and so the
    ledger) is not deployed."""
    wanted = expected(config)
    table = launch.deployed_names(cloudformation, config, ["PurchaseLedger"])["PurchaseLedger"]
    entries = tuple(ledger.Ledger(dynamodb, table, config.name).entries())
    plans = []
    for plan in wanted.plans:
        described = _described(sagemaker.describe_training_plan, TrainingPlanName=plan.plan_name)
        history: tuple[Mapping[str, Any], ...] = ()
        if described is not None:
            pages = sagemaker.get_paginator("describe_training_plan_extension_history")
            history = tuple(
                extension
                for page in pages.paginate(TrainingPlanArn=described["TrainingPlanArn"])
                for extension in page.get("TrainingPlanExtensions", [])
            )
        plans.append(
            PlanFacts(
                name=plan.name,
                described=described,
                history=history,
                ledger=tuple(e for e in entries if ledger_plan(e) == plan.plan_name),
            )
        )
    cluster = None
    if wanted.cluster_name is not None:
        described = _described(sagemaker.describe_cluster, ClusterName=wanted.cluster_name)
        nodes: tuple[Mapping[str, Any], ...] = ()
        if described is not None:
            pages = sagemaker.get_paginator("list_cluster_nodes")
            nodes = tuple(
                node
                for page in pages.paginate(ClusterName=wanted.cluster_name)
                for node in page.get("ClusterNodeSummaries", [])
            )
        cluster = ClusterFacts(wanted.cluster_name, described, nodes)
    return Facts(
        expected=wanted,
        config_path=config_path,
        observed_at=now,
        ledger_table=table,
        plans=tuple(plans),
        ledger=entries,
        cluster=cluster,
    )


def ledger_plan(entry: ledger.Entry) -> str | None:
    """The training plan a ledger item buys (a plan's name, or the plan an extension's
    name starts with), or None for other purchases (Bedrock imports, deployments)."""
    if entry.kind == "plan":
        return entry.name
    if entry.kind == "extension":
        match = EXTENSION_NAME.match(entry.name)
        return match.group("plan") if match else None
    return None


def _described(call: Any, **params: str) -> Mapping[str, Any] | None:
    try:
        answer: Mapping[str, Any] = call(**params)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == NOT_FOUND:
            return None
        raise
    return answer
