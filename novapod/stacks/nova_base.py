"""NovaBaseStack: the parts of the Nova environment that need no cluster.

The Nova environment is two stacks so that a deploy does not wait for what does not
have to wait (architecture.md: resources that need no deployed value must not wait
for one; issue 7's critical path). This one, `<prefix>-nova-base`, depends on the
network and storage stacks only, so CloudFormation builds it while the EKS cluster
and the HyperPod cluster are being created:

- the optional SageMaker managed MLflow tracking server and its role. Creating one
  takes a long time (its CloudFormation handler allows 95 minutes: the
  AWS::SageMaker::MlflowTrackingServer resource schema, handlers.create
  .timeoutInMinutes), which after the HyperPod cluster would add that much to every
  first deploy;
- the recipe bundle, whose deploy-time names are all known without the clusters
  (bucket names, the cluster name, the tracking server's ARN formatted from its name);
- the functions, roles and waiter state machines of the NovaEnvironment check and the
  Bedrock import (the custom resources themselves are in NovaStack, after the cluster);
- the Bedrock import role (and the import handlers' grant on the storage stack's
  purchase ledger, read as its outputs like the buckets and the key).

NovaStack (`<prefix>-nova`) holds what needs the deployed clusters: the access
entries, the grants on the HyperPod cluster's ARN and the restricted execution role,
the NovaEnvironment check and the Bedrock models.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from novapod.config import NovapodConfig
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.bedrock_model.construct import BedrockImport, bedrock_import
from novapod.constructs.network import PrivatePlacement
from novapod.constructs.nova_environment.construct import (
    NovaEnvironmentHandlers,
    nova_environment_handlers,
)
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.constructs.recipe_bundle.construct import RecipeBundle
from novapod.nova import render

MLFLOW_PREFIX = "mlflow/"


def mlflow_server_arn(stack: Stack, name: str) -> str:
    """The tracking server's ARN, known at synth: it ends in the server's name."""
    return stack.format_arn(
        service="sagemaker", resource="mlflow-tracking-server", resource_name=name
    )


class NovaBaseStack(Stack):
    """Exposes `mlflow_server` (or None), `mlflow_arn` (or None), `bundle`,
    `check_handlers` (NovaEnvironmentHandlers), `bedrock` (BedrockImport or None) and
    the storage names it was given (`data_bucket_name`, `artifacts_bucket_name`,
    `key_arn`). `ledger` is the storage stack's PurchaseLedger (the Bedrock imports are
    claimed in it)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: NovapodConfig,
        cluster_name: str,
        placement: PrivatePlacement,
        data_bucket_name: str,
        artifacts_bucket_name: str,
        key_arn: str,
        ledger: PurchaseLedger,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.config = config
        self.cluster_name = cluster_name
        # As given (storage's outputs, read with Fn::GetStackOutput): NovaStack reads the
        # same outputs through these.
        self.data_bucket_name = data_bucket_name
        self.artifacts_bucket_name = artifacts_bucket_name
        self.key_arn = key_arn
        self.artifacts_bucket = s3.Bucket.from_bucket_name(
            self, "ArtifactsBucket", artifacts_bucket_name
        )
        data_bucket = s3.Bucket.from_bucket_name(self, "DataBucket", data_bucket_name)
        self.key = kms.Key.from_key_arn(self, "Key", key_arn)
        nova = config.nova_settings
        days = config.eks.log_retention_days if config.eks else 365

        self.mlflow_server: sagemaker.CfnMlflowTrackingServer | None = None
        self.mlflow_arn: str | None = None
        if nova.mlflow.enabled:
            self.mlflow_server = self._mlflow(size=nova.mlflow.size)
            self.mlflow_arn = mlflow_server_arn(self, cluster_name)

        variables = {
            "DataBucket": data_bucket.bucket_name,
            "ArtifactsBucket": self.artifacts_bucket.bucket_name,
            "ClusterName": cluster_name,
        }
        if self.mlflow_arn is not None:
            # Formatted, not the server's attribute: the bundle need not wait for the
            # server (the recipes only name it; jobs run after the deploy).
            variables["MlflowTrackingServerArn"] = self.mlflow_arn
        self.bundle = RecipeBundle(
            self,
            "RecipeBundle",
            files=render.bundle(config),
            bucket=self.artifacts_bucket,
            key=self.key,
            variables=variables,
            log_retention_days=days,
        )
        self.check_handlers: NovaEnvironmentHandlers = nova_environment_handlers(
            self, config=config, cluster_name=cluster_name, placement=placement, key=self.key
        )
        self.bedrock: BedrockImport | None = bedrock_import(
            self,
            config=config,
            artifacts_bucket=self.artifacts_bucket,
            key=self.key,
            ledger=ledger,
            placement=placement,
        )

    def _mlflow(self, *, size: str) -> sagemaker.CfnMlflowTrackingServer:
        """The tracking server, its artifacts under mlflow/ in the artifacts bucket.

        The role is the server's own (docs.aws.amazon.com/sagemaker/latest/dg/
        mlflow-create-tracking-server-iam.html asks for S3 access to the artifact store;
        here objects under that prefix only, and the key that encrypts them). The server
        lists and locates the bucket itself, without a prefix: CreateMlflowTrackingServer's
        RoleArn "should have AmazonS3FullAccess permissions" (docs.aws.amazon.com/sagemaker/
        latest/APIReference/API_CreateMlflowTrackingServer.html), whose s3:List* and
        s3:Get* grant ListBucket and GetBucketLocation unconditioned; GetBucketLocation has
        no s3:prefix key at all, so a prefix condition would refuse it.
        """
        role = iam.Role(
            self,
            "MlflowRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="novapod: the MLflow tracking server's access to its artifact store",
        )
        objects = self.artifacts_bucket.arn_for_objects(f"{MLFLOW_PREFIX}*")
        policy = iam.Policy(
            self,
            "MlflowPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    sid="ListArtifactStore",
                    actions=["s3:ListBucket", "s3:GetBucketLocation"],
                    resources=[self.artifacts_bucket.bucket_arn],
                ),
                iam.PolicyStatement(
                    sid="ReadWriteArtifacts",
                    actions=["s3:GetObject", "s3:PutObject"],
                    resources=[objects],
                ),
                iam.PolicyStatement(
                    sid="UseTheKey",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[self.key.key_arn],
                ),
            ],
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, objects)}]",
            "MLflow writes each run's artifacts under keys of its own choosing below the "
            "artifact store prefix mlflow/; the role may touch that prefix only.",
        )
        server = sagemaker.CfnMlflowTrackingServer(
            self,
            "MlflowTrackingServer",
            tracking_server_name=self.cluster_name,
            artifact_store_uri=f"s3://{self.artifacts_bucket.bucket_name}/{MLFLOW_PREFIX}",
            role_arn=role.role_arn,
            tracking_server_size=size,
            automatic_model_registration=False,
        )
        # Experiments outlive the stack; the server's name is its ID (and in its ARN).
        server.apply_removal_policy(RemovalPolicy.RETAIN)
        server.node.add_dependency(policy)
        return server
