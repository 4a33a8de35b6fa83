"""NovaStack: the environment where the config's Nova jobs run and are tracked.

Deploys after the HyperPod, storage and Nova base stacks and reads only their outputs
(weak references, see docs/development.md): the buckets' names and the key's ARN from storage's
own named outputs (so cdk-nag findings on ARNs built from them can be named exactly),
the HyperPod cluster's ARN and the restricted execution role's name from hyperpod
(which re-publishes it from the EKS stack), the handlers' service tokens and roles
from NovaBaseStack (novapod/stacks/nova_base.py, which holds everything that need not
wait for the clusters: MLflow, the recipe bundle, the custom resources' functions).
The EKS cluster is named at synth (`novapod-<env>`), so the access entries need no
reference to the EKS stack either.

Contents: the scientists' EKS access entries (a Kubernetes group, no cluster-admin) and
their customer-managed policy; the platform engineers' policy for `novapod status`
(novapod/constructs/status_policy.py); the data grants of the restricted execution role;
the NovaEnvironment check (novapod/constructs/nova_environment/) that the cluster can take
a Nova job; the Bedrock custom models (novapod/constructs/bedrock_model/); outputs
that tell a scientist where things are.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import ArnFormat, Aws, CfnOutput, Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from novapod.config import NovapodConfig
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.bedrock_model.construct import bedrock_models
from novapod.constructs.nova_environment.construct import nova_environment
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.constructs.status_policy import health_policy, status_policy
from novapod.constructs.training_job_role import acknowledge_launch_rights
from novapod.nova import render
from novapod.nova.access import (
    BUNDLE_PREFIX,
    HYPERPOD_LOG_GROUP_PREFIX,
    SCIENTISTS_GROUP,
    bundle_key,
    data_grants,
    scientist_entry_id,
)
from novapod.nova.mlflow import mlflow_actions
from novapod.stacks.nova_base import NovaBaseStack, mlflow_server_arn

# What RFT's pods do with queues, and on which: the AWS RIG sample grants these three on
# queues named *SageMaker* (awslabs/awsome-distributed-ai@95b939cd 1.architectures/
# 7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/sagemaker_iam_role/
# main.tf, rig_rft_sqs_access; its README: for a custom reward service outside the RIG).
RFT_QUEUE_ACTIONS = ("sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage")
RFT_QUEUE_NAMES = "*SageMaker*"
# What a scientist needs to read the experiments (the UI through a presigned URL).
MLFLOW_READ_ACTIONS = (
    "sagemaker:CreatePresignedMlflowTrackingServerUrl",
    "sagemaker:DescribeMlflowTrackingServer",
    "sagemaker-mlflow:AccessUI",
    "sagemaker-mlflow:GetExperiment",
    "sagemaker-mlflow:GetExperimentByName",
    "sagemaker-mlflow:GetMetricHistory",
    "sagemaker-mlflow:GetRun",
    "sagemaker-mlflow:ListArtifacts",
    "sagemaker-mlflow:SearchExperiments",
    "sagemaker-mlflow:SearchRuns",
)
# The stacks whose outputs `novapod launch` and `novapod results` read; with training-job
# jobs, nova-base's too (their role, subnets and security group: NovaBaseStack).
READABLE_STACKS = ("storage", "hyperpod", "nova")
TRAINING_JOB_STACKS = ("nova-base",)


def job_log_groups(scope: Stack, cluster_name: str) -> str:
    """The HyperPod cluster's log groups and their streams, where Nova jobs log."""
    return scope.format_arn(
        service="logs",
        resource="log-group",
        resource_name=f"{HYPERPOD_LOG_GROUP_PREFIX}{cluster_name}/*",
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )


def connect_command(cluster_name: str, region: str, namespace: str) -> str:
    return (
        f"hyperpod connect-cluster --cluster-name {cluster_name} --region {region} "
        f"--namespace {namespace}"
    )


class NovaStack(Stack):
    """Exposes `scientist_policy`, `data_grants` (the restricted execution role's
    policy, or None without restricted groups), `environment_check` and
    `bedrock_models` (or None)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: NovapodConfig,
        cluster_name: str,
        hyperpod_cluster_arn: str,
        restricted_role_name: str | None,
        base: NovaBaseStack,
        ledger: PurchaseLedger | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        # The storage stack's outputs, as nova-base reads them.
        data_bucket = s3.Bucket.from_bucket_name(self, "DataBucket", base.data_bucket_name)
        artifacts_bucket = s3.Bucket.from_bucket_name(
            self, "ArtifactsBucket", base.artifacts_bucket_name
        )
        key = kms.Key.from_key_arn(self, "Key", base.key_arn)
        nova = config.nova_settings
        self.config = config
        self.cluster_name = cluster_name
        self.data_bucket = data_bucket
        self.artifacts_bucket = artifacts_bucket
        self.key = key
        self.outputs_prefix = render.output_prefix(config)

        self.mlflow_arn: str | None = None
        if nova.mlflow.enabled:
            self.mlflow_arn = mlflow_server_arn(self, cluster_name)

        # Keyed by principal, not by list position (see scientist_entry_id). No access
        # policy: the group gets its rights from the namespaced Role the cluster
        # bootstrap applies, never cluster-admin as the Nova guides suggest.
        for principal in nova.scientists:
            eks.CfnAccessEntry(
                self,
                scientist_entry_id(principal),
                cluster_name=cluster_name,
                principal_arn=principal,
                kubernetes_groups=[SCIENTISTS_GROUP],
                type="STANDARD",
            )
        self.scientist_policy = self._scientist_policy(hyperpod_cluster_arn, base)
        self.data_grants = self._data_grants(restricted_role_name) if restricted_role_name else None
        self._outputs(nova.namespace, base)
        # The deploy-time check that the cluster can take a Nova job (and its log's output).
        self.environment_check = nova_environment(
            self,
            config=config,
            handlers=base.check_handlers,
            cluster_name=cluster_name,
            hyperpod_cluster_arn=hyperpod_cluster_arn,
        )
        self.bedrock_models = bedrock_models(self, config=config, importer=base.bedrock)
        # What `novapod status` reads, beside the check (which takes longer than a policy).
        self.status_policy = (
            status_policy(
                self,
                config=config,
                cluster_arn=hyperpod_cluster_arn,
                ledger=ledger,
                key=key,
                artifacts_bucket_arn=artifacts_bucket.bucket_arn,
            )
            if ledger is not None
            else None
        )
        # What `novapod health` starts, beside it (the operators attach both).
        health_policy(self, config=config, cluster_arn=hyperpod_cluster_arn)

    def _objects(self, prefix: str) -> str:
        return self.artifacts_bucket.arn_for_objects(f"{prefix}*")

    def _data_grants(self, role_name: str) -> iam.Policy:
        """What the restricted groups' nodes need for the config's jobs: read the datasets
        (object ARNs), list only their keys (bucket ARNs with s3:prefix), write and read
        back the jobs' outputs, use the key, call the jobs' functions, RFT's queues and
        MLflow."""
        # The cluster's jobs only: a training job reads its data with its own role
        # (nova-base's TrainingJobExecutionRole), not through the groups' nodes.
        grants = data_grants(self.config, [j for j in self.config.jobs if not j.on_training_job])
        statements: list[iam.PolicyStatement] = []
        datasets = [self.data_bucket.arn_for_objects(k) for k in grants.data_keys] + [
            f"arn:{Aws.PARTITION}:s3:::{bucket}/{k}"
            for bucket, keys in grants.external.items()
            for k in keys
        ]
        if datasets:
            statements.append(
                iam.PolicyStatement(
                    sid="ReadDatasets", actions=["s3:GetObject"], resources=datasets
                )
            )
        listed: list[tuple[str, tuple[str, ...]]] = []
        if grants.data_keys:
            listed.append((self.data_bucket.bucket_arn, grants.data_keys))
        listed += [
            (f"arn:{Aws.PARTITION}:s3:::{bucket}", keys) for bucket, keys in grants.external.items()
        ]
        for i, (bucket_arn, keys) in enumerate(listed):
            statements.append(
                iam.PolicyStatement(
                    sid=f"ListDatasets{i}",
                    actions=["s3:ListBucket"],
                    resources=[bucket_arn],
                    conditions={"StringEquals": {"s3:prefix": list(keys)}},
                )
            )
        outputs = self._objects(self.outputs_prefix)
        statements += [
            # GetObject too: jobs read back their manifests and checkpoints' records.
            iam.PolicyStatement(
                sid="WriteOutputs", actions=["s3:PutObject", "s3:GetObject"], resources=[outputs]
            ),
            iam.PolicyStatement(
                sid="UseTheKey",
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[self.key.key_arn],
            ),
        ]
        if grants.lambdas:
            statements.append(
                iam.PolicyStatement(
                    sid="InvokeJobFunctions",
                    actions=["lambda:InvokeFunction"],
                    resources=list(grants.lambdas),
                )
            )
        if self.mlflow_arn is not None and any(job.mlflow for job in self.config.jobs):
            statements.append(
                iam.PolicyStatement(
                    sid="TrackRuns",
                    actions=list(mlflow_actions().run_actions()),
                    resources=[self.mlflow_arn],
                )
            )
        queues = self._rft_queues()
        if queues is not None:
            statements.append(queues)
        role = iam.Role.from_role_name(self, "RestrictedGroupRole", role_name)
        policy = iam.Policy(self, "RestrictedGroupDataGrants", roles=[role], statements=statements)
        if queues is not None:
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{nag_resource(self, queues.resources[0])}]",
                "RFT's reward service exchanges messages through queues whose names contain "
                "SageMaker, the grant of the AWS RIG sample (awsome-distributed-ai "
                "hyperpod-eks-tf); this account and Region only, send/receive/delete only.",
            )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, outputs)}]",
            "The Nova launcher names each run's folder below the job's output prefix "
            "(nova/<env>/<job>/<run>-<random>/); writes are limited to this environment's "
            "prefix.",
        )
        return policy

    def _rft_queues(self) -> iam.PolicyStatement | None:
        """With RFT jobs, what the RIG sample grants on RFT's queues, in this account and
        Region (the sample names any: the sqs endpoint in this VPC serves this Region's
        queues, and the reward service is the account's own)."""
        if not any(job.technique.startswith("rft-") for job in self.config.jobs):
            return None
        queues = self.format_arn(
            service="sqs", resource=RFT_QUEUE_NAMES, arn_format=ArnFormat.NO_RESOURCE_NAME
        )
        return iam.PolicyStatement(
            sid="UseRftQueues", actions=list(RFT_QUEUE_ACTIONS), resources=[queues]
        )

    def _scientist_policy(
        self, hyperpod_cluster_arn: str, base: NovaBaseStack
    ) -> iam.ManagedPolicy:
        """For account owners to attach to the scientists' roles: describe the clusters,
        read the bundle, the outputs and results, the MLflow experiments, the stacks.
        With training-job jobs, also what the nova-base stack's TrainingJobLaunchPolicy
        grants (start, describe and stop them), merged in: this policy is the one the
        scientists' roles carry, and a managed policy cannot include another."""
        training_jobs = base.training_jobs
        results = self._objects(self.outputs_prefix)
        bundle = self._objects(BUNDLE_PREFIX)
        stacks = [
            self.format_arn(
                service="cloudformation",
                resource="stack",
                resource_name=f"{self.config.prefix}-{kind}/*",
            )
            for kind in READABLE_STACKS + (TRAINING_JOB_STACKS if training_jobs else ())
        ]
        eks_cluster = self.format_arn(
            service="eks", resource="cluster", resource_name=self.cluster_name
        )
        logs = job_log_groups(self, self.cluster_name)
        statements = [
            iam.PolicyStatement(
                sid="DescribeHyperPodCluster",
                actions=[
                    "sagemaker:DescribeCluster",
                    "sagemaker:ListClusterNodes",
                    "sagemaker:DescribeClusterNode",
                ],
                resources=[hyperpod_cluster_arn],
            ),
            iam.PolicyStatement(
                sid="DescribeEksCluster", actions=["eks:DescribeCluster"], resources=[eks_cluster]
            ),
            # `hyperpod get-log` asks whether the CloudWatch observability add-on is
            # installed (aws/sagemaker-hyperpod-cli@abcdc77b:src/hyperpod_cli/service/
            # get_logs.py, is_container_insights_addon_enabled: eks ListAddons).
            iam.PolicyStatement(
                sid="ListEksAddons", actions=["eks:ListAddons"], resources=[eks_cluster]
            ),
            # RIG restricts `kubectl logs`: the jobs' logs are in the HyperPod cluster's
            # log group /aws/sagemaker/Clusters/<name>/<cluster id>, one stream per node
            # (named SagemakerHyperPodTrainingJob...), read with FilterLogEvents as the Nova SDK
            # does (aws/nova-forge-sdk@1db84f8c:src/amzn_nova_customization_sdk/monitor/
            # log_monitor.py, SMHPStrategy). Log-group and log-stream ARNs both start with
            # the group's name (docs.aws.amazon.com/service-authorization/latest/reference/
            # list_amazoncloudwatchlogs.html).
            iam.PolicyStatement(
                sid="ReadJobLogs",
                actions=["logs:DescribeLogStreams", "logs:FilterLogEvents", "logs:GetLogEvents"],
                resources=[logs],
            ),
            iam.PolicyStatement(
                sid="ListOutputsAndBundle",
                actions=["s3:ListBucket"],
                resources=[self.artifacts_bucket.bucket_arn],
                conditions={
                    "StringLike": {"s3:prefix": [f"{self.outputs_prefix}*", f"{BUNDLE_PREFIX}*"]}
                },
            ),
            iam.PolicyStatement(
                sid="ReadOutputsAndBundle", actions=["s3:GetObject"], resources=[results, bundle]
            ),
            iam.PolicyStatement(
                sid="DecryptWithTheKey", actions=["kms:Decrypt"], resources=[self.key.key_arn]
            ),
            iam.PolicyStatement(
                sid="ReadStackOutputs", actions=["cloudformation:DescribeStacks"], resources=stacks
            ),
        ]
        if self.mlflow_arn is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="ReadExperiments",
                    actions=list(MLFLOW_READ_ACTIONS),
                    resources=[self.mlflow_arn],
                )
            )
        if training_jobs is not None:
            statements += training_jobs.launch_statements
        policy = iam.ManagedPolicy(
            self,
            "ScientistPolicy",
            description=f"novapod {self.config.name}: what a Nova scientist reads "
            + ("and starts " if training_jobs is not None else "")
            + "(attach to the roles in nova.scientists)",
            statements=statements,
        )
        if training_jobs is not None:
            acknowledge_launch_rights(policy, training_jobs.launch_wildcards)
        reasons = {
            results: "Job outputs and evaluation results land below run folders the launcher "
            "names (nova/<env>/<job>/<run>/); read only, this environment's prefix only.",
            bundle: "The recipe bundle holds one file per job below recipes/; read only.",
        }
        for resource, reason in reasons.items():
            acknowledge(
                policy, f"AwsSolutions-IAM5[Resource::{nag_resource(self, resource)}]", reason
            )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, logs)}]",
            "HyperPod names the cluster's log group /aws/sagemaker/Clusters/<name>/<cluster "
            "id> (an ID it generates) with a stream per node; read only, this cluster's only.",
        )
        for stack in stacks:
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{nag_resource(self, stack)}]",
                "A stack ARN ends in an ID CloudFormation generates (stack/<name>/<uuid>); the "
                "name is exact, DescribeStacks only.",
            )
        return policy

    def _outputs(self, namespace: str, base: NovaBaseStack) -> None:
        artifacts = self.artifacts_bucket.bucket_name
        CfnOutput(
            self,
            "ConnectClusterCommand",
            value=connect_command(self.cluster_name, self.region, namespace),
            description="Run this (HyperPod CLI, release_v2) to point hyperpod start-job at the "
            "cluster and the jobs' namespace.",
        )
        CfnOutput(
            self,
            "Namespace",
            value=namespace,
            description="Kubernetes namespace of the Nova jobs (nova.namespace).",
        )
        CfnOutput(
            self,
            "RecipeIndexUri",
            value=f"s3://{artifacts}/{bundle_key('index.json')}",
            description="The recipe bundle's index: every job's recipe, launch spec and "
            "output locations, with this environment's names filled in.",
        )
        CfnOutput(
            self,
            "OutputsPrefix",
            value=f"s3://{artifacts}/{self.outputs_prefix}",
            description="Where jobs write: <job>/<run>/ holds the manifest, TensorBoard logs "
            "and evaluation results (eval-result/).",
        )
        CfnOutput(
            self,
            "ScientistPolicyArn",
            value=self.scientist_policy.managed_policy_arn,
            description="Attach this managed policy to the roles in nova.scientists.",
        )
        CfnOutput(
            self,
            "RecipeBundleLogGroup",
            value=base.bundle.log_group.log_group_name,
            description="Log group of the function that writes the recipe bundle at deploy.",
        )
        if self.mlflow_arn is not None:
            CfnOutput(
                self,
                "MlflowTrackingServerArn",
                value=self.mlflow_arn,
                description="MLflow tracking server of the jobs with mlflow: true (their "
                "recipes' run.mlflow_tracking_uri).",
            )
