"""The customer-managed policy `novapod status` needs, and nothing more: attach it to
the platform engineers' roles (the `StatusPolicyArn` output of the nova stack, of the
hyperpod stack in an environment without jobs, or of the capacity stack in one of
training plans alone, whose policy has no cluster statements). It names the HyperPod
cluster's ARN, so
it is created after the cluster: in the nova stack beside the Nova check (which takes
longer), so it adds nothing to the deploy's critical path there.

One statement per thing `novapod status` reads (novapod/operate/status/collect.py makes
the calls; its ACTIONS are these actions):

- `cloudformation:DescribeStacks` on the storage stack (the ledger table's name is its
  output); a stack ARN ends in an ID CloudFormation generates (stack/<name>/<id>,
  list_awscloudformation.html in the Service Authorization Reference).
- `dynamodb:Query` on the purchase ledger, this environment's items only
  (`dynamodb:LeadingKeys`, as the handlers' grants: constructs/purchase_ledger.py).
- `kms:Decrypt` and `kms:DescribeKey` on the environment's key through DynamoDB only
  (`kms:ViaService`): the ledger is encrypted with it, and reading a table under a
  customer managed key uses the key on the caller's behalf (what aws-cdk-lib's
  Table.grantReadData grants for such a table: KEY_READ_ACTIONS in aws-dynamodb perms).
- `sagemaker:DescribeTrainingPlan` and `DescribeTrainingPlanExtensionHistory` on each
  plan of the config, by its exact ARN (resource type training-plan,
  list_amazonsagemaker.html).
- `sagemaker:DescribeCluster` and `ListClusterNodes` on the HyperPod cluster's ARN
  (resource type cluster, list_amazonsagemaker.html).
- `cloudformation:DescribeStackResource` on the hyperpod stack (when CloudFormation last
  updated the cluster; resource type stack, as DescribeStacks).
- `eks:DescribeCluster` on the EKS cluster (its Kubernetes version, endpoint and CA;
  resource type cluster, list_amazonelastickubernetesservice.html).
- With the scheduled check (`config.has_monitor`), `cloudwatch:GetMetricData` for the
  share of each plan's reserved instance-hours in use: the Service Authorization
  Reference lists no resource type and no condition key for it (list_amazoncloudwatch.html),
  so it is granted on "*" (and acknowledged so); it reads metrics only.
- With training-job jobs (`config.training_jobs`), `sagemaker:ListTrainingJobs` on "*":
  the Service Authorization Reference lists no resource type for it
  (list_amazonsagemaker.html), so it cannot be narrowed (acknowledged so; it lists jobs'
  summaries only); and `sagemaker:DescribeTrainingJob` on `training-job/<prefix>--*`, the
  names novapod gives its training jobs (novapod/nova/training_jobs.py; resource type
  training-job, whose ARN SageMaker writes in lower case, as the prefix is).
- With jobs (the nova stack's policy), `s3:ListBucket` on the artifacts bucket for the
  jobs' outputs prefix `nova/<env>/` only (ListObjectsV2 is authorized as ListBucket,
  with the request's Prefix as `s3:prefix`: list_amazons3.html).

The Kubernetes API itself is not IAM: it reads the bootstrap's marker ConfigMap in
kube-system and the jobs' PyTorchJobs and pods with the caller's access entry. The roles
in `nova.scientists` have one whose Role may get and list PyTorchJobs and pods in the
jobs' namespace (novapod/nova/kubernetes.py), not kube-system; `eks.admin_principals`
are cluster admins. What a caller may not read, `status` says it did not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import Aws, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from novapod.capacity.extension import plan_name
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.nova.render import output_prefix
from novapod.nova.training_jobs import name_prefix

if TYPE_CHECKING:
    from novapod.config import NovapodConfig

LEDGER_KEY_ACTIONS = ("kms:Decrypt", "kms:DescribeKey")


def status_policy(
    scope: Stack,
    *,
    config: NovapodConfig,
    cluster_arn: str | None,
    ledger: PurchaseLedger,
    key: kms.IKey,
    artifacts_bucket_arn: str | None = None,
) -> iam.ManagedPolicy:
    """The policy, and its ARN as the `StatusPolicyArn` output of `scope`;
    `artifacts_bucket_arn` for a config with jobs (their outputs are listed);
    `cluster_arn` None for an environment without a HyperPod cluster (the capacity
    stack's policy: the plans, the ledger and the metrics only)."""
    environment = config.name
    plan_arns = [
        spec.existing_arn
        or scope.format_arn(
            service="sagemaker",
            resource="training-plan",
            resource_name=plan_name(spec, config.name, request),
        )
        for spec, request in config.training_plan_requests()
    ]
    storage, hyperpod = (
        scope.format_arn(
            service="cloudformation", resource="stack", resource_name=f"{config.prefix}-{kind}/*"
        )
        for kind in ("storage", "hyperpod")
    )
    statements = [
        iam.PolicyStatement(
            sid="ReadLedgerTableName",
            actions=["cloudformation:DescribeStacks"],
            resources=[storage],
        ),
        iam.PolicyStatement(
            sid="QueryPurchaseLedger",
            actions=["dynamodb:Query"],
            resources=[ledger.table.table_arn],
            conditions={
                "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [environment]},
                "Null": {"dynamodb:LeadingKeys": "false"},
            },
        ),
        iam.PolicyStatement(
            sid="DecryptPurchaseLedger",
            actions=list(LEDGER_KEY_ACTIONS),
            resources=[key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"dynamodb.{Aws.REGION}.amazonaws.com"}},
        ),
    ]
    if cluster_arn is not None:
        statements += [
            iam.PolicyStatement(
                sid="DescribeHyperPodCluster",
                actions=["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
                resources=[cluster_arn],
            ),
            iam.PolicyStatement(
                sid="ReadClusterUpdateTime",
                actions=["cloudformation:DescribeStackResource"],
                resources=[hyperpod],
            ),
            # The EKS cluster the environment creates (novapod-<env>, environment.py).
            iam.PolicyStatement(
                sid="DescribeEksCluster",
                actions=["eks:DescribeCluster"],
                resources=[
                    scope.format_arn(service="eks", resource="cluster", resource_name=config.prefix)
                ],
            ),
        ]
    if plan_arns:
        statements.insert(
            3,
            iam.PolicyStatement(
                sid="DescribeTrainingPlans",
                actions=[
                    "sagemaker:DescribeTrainingPlan",
                    "sagemaker:DescribeTrainingPlanExtensionHistory",
                ],
                resources=list(plan_arns),
            ),
        )
    if config.has_monitor:
        statements.append(
            iam.PolicyStatement(
                sid="ReadPlanMetrics",
                actions=["cloudwatch:GetMetricData"],
                resources=["*"],
            )
        )
    if config.training_jobs:
        statements += [
            iam.PolicyStatement(
                sid="ListTrainingJobs", actions=["sagemaker:ListTrainingJobs"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="DescribeTrainingJobs",
                actions=["sagemaker:DescribeTrainingJob"],
                resources=[
                    scope.format_arn(
                        service="sagemaker",
                        resource="training-job",
                        resource_name=f"{name_prefix(config.prefix)}*",
                    )
                ],
            ),
        ]
    if artifacts_bucket_arn is not None:
        statements.append(
            iam.PolicyStatement(
                sid="ListJobOutputs",
                actions=["s3:ListBucket"],
                resources=[artifacts_bucket_arn],
                conditions={"StringEquals": {"s3:prefix": output_prefix(config)}},
            )
        )
    policy = iam.ManagedPolicy(
        scope,
        "StatusPolicy",
        # The description is kept as it was: changing it replaces the policy (a new ARN,
        # and the old one cannot be deleted while roles have it attached).
        description=f"novapod {environment}: what novapod status reads (plans, the purchase "
        "ledger, the HyperPod cluster and its nodes); attach to the platform engineers' roles",
        statements=statements,
    )
    read_stacks = [(storage, "DescribeStacks")]
    if cluster_arn is not None:
        read_stacks.append((hyperpod, "DescribeStackResource"))
    for stack, action in read_stacks:
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(scope, stack)}]",
            "A stack ARN ends in an ID CloudFormation generates (stack/<name>/<uuid>); the "
            f"name is exact, {action} only.",
        )
    anywhere = []
    if config.has_monitor:
        anywhere.append(
            "cloudwatch:GetMetricData has no resource-level permissions (the Service "
            "Authorization Reference lists no resource type or condition key for it); the "
            "statement allows only that read of metrics."
        )
    if config.training_jobs:
        anywhere.append(
            "sagemaker:ListTrainingJobs has no resource-level permissions (the Service "
            "Authorization Reference lists no resource type for it); it lists training "
            "jobs' summaries only, each described on this environment's jobs alone."
        )
    if anywhere:
        acknowledge(policy, "AwsSolutions-IAM5[Resource::*]", " ".join(anywhere))
    for resource, reason in (
        (
            scope.format_arn(
                service="sagemaker",
                resource="training-job",
                resource_name=f"{name_prefix(config.prefix)}*",
            ),
            "Training jobs are named <prefix>--<job>-<run> at launch "
            "(novapod/nova/training_jobs.py); DescribeTrainingJob only, this environment's.",
        ),
    ):
        if config.training_jobs:
            acknowledge(
                policy, f"AwsSolutions-IAM5[Resource::{nag_resource(scope, resource)}]", reason
            )
    CfnOutput(
        scope,
        "StatusPolicyArn",
        value=policy.managed_policy_arn,
        description="Attach this managed policy to the roles that run novapod status "
        "(read-only: plans, purchase ledger, cluster and nodes).",
    )
    return policy


def health_policy(scope: Stack, *, config: NovapodConfig, cluster_arn: str) -> iam.ManagedPolicy:
    """The one write `novapod health` makes, and its ARN as the `HealthCheckPolicyArn`
    output of `scope`: `sagemaker:StartClusterHealthCheck` on the HyperPod cluster only
    (resource type cluster, list_amazonsagemaker.html). It is not in the read-only
    StatusPolicy: a deep health check takes the group's nodes out of service while it runs,
    so it is for the operators who may do that. `health` also reads what `status` reads
    of the cluster (DescribeCluster, ListClusterNodes) and, for its refusal while a job
    runs, the EKS cluster: attach the StatusPolicy beside it."""
    policy = iam.ManagedPolicy(
        scope,
        "HealthCheckPolicy",
        description=f"novapod {config.name}: start HyperPod's deep health check on the "
        "cluster's nodes (novapod health); attach to the operators' roles with the "
        "StatusPolicy",
        statements=[
            iam.PolicyStatement(
                sid="StartDeepHealthCheck",
                actions=["sagemaker:StartClusterHealthCheck"],
                resources=[cluster_arn],
            )
        ],
    )
    CfnOutput(
        scope,
        "HealthCheckPolicyArn",
        value=policy.managed_policy_arn,
        description="Attach this managed policy (with StatusPolicyArn's) to the roles that run "
        "novapod health (starts deep health checks on the cluster's nodes).",
    )
    return policy
