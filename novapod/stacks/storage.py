"""StorageStack (stateful): KMS key, S3 buckets, the purchase ledger, optional FSx for
Lustre (and the VPC flow logs when there is no eks stack).

Everything here is retained on stack deletion and has a pinned logical ID, so
refactoring the construct tree can never replace a bucket, key or file system.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import ArnFormat, Aws, CfnOutput, CfnResource, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from novapod.config import FlowLogs, Storage
from novapod.config.stacks import STORAGE_PINNED_IDS, lifecycle_bucket_name
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.buckets import access_log_bucket, encrypted_bucket
from novapod.constructs.flow_logs import VpcFlowLog
from novapod.constructs.lustre import LinkedLustre
from novapod.constructs.network import VpcHandle
from novapod.constructs.purchase_ledger import PurchaseLedger


class StorageStack(Stack):
    """Exposes `key`, `data_bucket`, `artifacts_bucket` and `lustre` (or None)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        storage: Storage,
        name: str,
        environment: str,
        lifecycle_scripts: bool,
        network: VpcHandle,
        security_group: ec2.ISecurityGroup,
        flow_logs: FlowLogs | None = None,
        alert_publishers: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, termination_protection=True, **kwargs)
        self.key = kms.Key(
            self,
            "Key",
            description=f"novapod {name}: buckets, FSx, EKS secrets, log groups",
            enable_key_rotation=True,
            alias=f"alias/novapod/{name}",
            removal_policy=RemovalPolicy.RETAIN,
        )
        _pin(self.key, STORAGE_PINNED_IDS["key"])
        self._let_cloudwatch_logs_use_the_key()
        if alert_publishers:
            self._let_services_publish_alerts(alert_publishers)
        if flow_logs is not None and flow_logs.enabled:
            # Only without an eks stack (environment.py): here it makes this stack wait
            # for the network stack.
            VpcFlowLog(
                self,
                "VpcFlowLog",
                vpc=network.vpc,
                key=self.key,
                retention_days=flow_logs.retention_days,
            )
        self.access_logs_bucket = access_log_bucket(
            self, "AccessLogs", expire_after_days=storage.access_log_days
        )
        _pin(self.access_logs_bucket, STORAGE_PINNED_IDS["access_logs"])
        self.data_bucket = encrypted_bucket(
            self,
            "Data",
            key=self.key,
            access_logs=self.access_logs_bucket,
            noncurrent_version_days=storage.noncurrent_version_days,
        )
        _pin(self.data_bucket, STORAGE_PINNED_IDS["data"])
        # Nova jobs write manifests, TensorBoard logs and evaluation results here; the
        # execution roles get use of the key. (Checkpoints themselves land in a
        # service-managed bucket with a SageMaker-managed key.)
        self.artifacts_bucket = encrypted_bucket(
            self,
            "Artifacts",
            key=self.key,
            access_logs=self.access_logs_bucket,
            noncurrent_version_days=storage.noncurrent_version_days,
            infrequent_access_days=storage.artifacts_infrequent_access_days,
        )
        _pin(self.artifacts_bucket, STORAGE_PINNED_IDS["artifacts"])
        # Every purchase (training plans, extensions, Bedrock imports) is claimed here
        # with a conditional write before its call, and recorded: the audit trail that
        # `novapod purchases` reads.
        self.ledger = PurchaseLedger(
            self, "PurchaseLedger", key=self.key, logical_id=STORAGE_PINNED_IDS["purchase_ledger"]
        )

        self.lustre: LinkedLustre | None = None
        if storage.lustre is not None:
            zone = storage.lustre.zone_id or network.zone_ids[0]
            self.lustre = LinkedLustre(
                self,
                "Lustre",
                spec=storage.lustre,
                vpc=network.vpc,
                subnet=network.subnets_in(zone)[0],
                security_group=security_group,
                key=self.key,
                data_bucket=self.data_bucket,
            )
            _pin(self.lustre.file_system, STORAGE_PINNED_IDS["lustre"])
            self.lustre.association.override_logical_id(STORAGE_PINNED_IDS["lustre_association"])
            CfnOutput(self, "LustreFileSystemId", value=self.lustre.file_system.file_system_id)

        # HyperPod expects lifecycle scripts in a bucket whose name starts with
        # "sagemaker-" (what its cluster-instance managed policy can read): a bucket of
        # their own, named from the environment, account and region (at most 61 chars).
        # The scripts themselves are copied in by the EKS stack (LifecycleScripts), beside
        # the EKS cluster: a stack waits for the whole of this one, and the copy (a
        # Lambda layer, function and custom resource, ~45 s) is needed by HyperPod only.
        self.lifecycle_bucket: s3.Bucket | None = None
        if lifecycle_scripts:
            self.lifecycle_bucket = encrypted_bucket(
                self,
                "LifecycleScripts",
                key=self.key,
                access_logs=self.access_logs_bucket,
                noncurrent_version_days=storage.noncurrent_version_days,
                bucket_name=lifecycle_bucket_name(environment, Aws.ACCOUNT_ID, Aws.REGION),
            )
            _pin(self.lifecycle_bucket, STORAGE_PINNED_IDS["lifecycle_scripts"])
            CfnOutput(
                self,
                "LifecycleScriptsBucketName",
                value=self.lifecycle_bucket.bucket_name,
                description="Bucket of the standard groups' lifecycle scripts",
            )
        self.node_policies = self._node_policies()

        CfnOutput(self, "DataBucketName", value=self.data_bucket.bucket_name)
        CfnOutput(self, "ArtifactsBucketName", value=self.artifacts_bucket.bucket_name)
        CfnOutput(self, "KeyArn", value=self.key.key_arn)
        CfnOutput(
            self,
            "PurchaseLedgerTableName",
            value=self.ledger.table_name,
            description="DynamoDB table of every purchase (novapod purchases CONFIG reads it)",
        )

    def _let_cloudwatch_logs_use_the_key(self) -> None:
        """Log groups of every stack of the environment are encrypted with this key.

        CloudWatch Logs uses a customer managed key only if the key policy lets its
        regional service principal do so, for log groups named in the encryption context
        (docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html; its
        statement, with the actions written out): any log group of this account and
        Region, since CloudFormation names most of them.
        """
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchLogsOfThisAccountAndRegion",
                principals=[iam.ServicePrincipal(f"logs.{self.region}.amazonaws.com")],
                actions=[
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncryptFrom",
                    "kms:ReEncryptTo",
                    "kms:GenerateDataKey",
                    "kms:GenerateDataKeyWithoutPlaintext",
                    "kms:DescribeKey",
                ],
                resources=["*"],  # in a key policy, "*" means this key
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": self.format_arn(
                            service="logs",
                            resource="log-group",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    }
                },
            )
        )

    def _let_services_publish_alerts(self, services: Sequence[str]) -> None:
        """The monitor's alert topic is encrypted with this key; AWS services that publish
        to it as themselves (EventBridge rules:
        novapod/constructs/monitor/alerts.py, service_publishers, says which and why)
        need its use in the key policy: the SNS developer guide's "Enable compatibility
        between event sources from AWS services and encrypted topics"
        (docs.aws.amazon.com/sns/latest/dg/sns-key-management.html) and the Knowledge
        Center's sns-not-getting-eventbridge-notification. Its actions are written out
        (the guide writes kms:GenerateDataKey*; SNS calls GenerateDataKey and Decrypt,
        the two calls its cost formula counts), only through SNS in this Region
        (kms:ViaService) and for this account (aws:SourceAccount, the condition the
        guide gives; aws:SourceArn is not supported there)."""
        # The second: the same services keep what they could not deliver in the dead-letter
        # queue, encrypted with this key: SQS's "Configure KMS permissions for AWS
        # services" (docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/
        # sqs-key-management.html) asks the same two actions of an event source sending
        # to a queue under a customer managed key; through SQS in this Region only.
        for sid, service in (
            ("AlertPublishersThroughSns", "sns"),
            ("AlertDeadLettersThroughSqs", "sqs"),
        ):
            self.key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=sid,
                    principals=[iam.ServicePrincipal(s) for s in services],
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=["*"],  # in a key policy, "*" means this key
                    conditions={
                        "StringEquals": {
                            "kms:ViaService": f"{service}.{self.region}.amazonaws.com",
                            "aws:SourceAccount": self.account,
                        }
                    },
                )
            )

    def _node_policies(self) -> list[iam.ManagedPolicy]:
        """What HyperPod nodes may do with the buckets and key: read inputs, write outputs.

        Defined here, beside the buckets, so no bucket ARN crosses a stack boundary
        inside a policy document; execution roles attach these by ARN.
        """
        data, artifacts = self.data_bucket, self.artifacts_bucket
        readable = [data, artifacts] + ([self.lifecycle_bucket] if self.lifecycle_bucket else [])
        read = iam.ManagedPolicy(
            self,
            "ReadInputsPolicy",
            description="novapod: list and read the data, artifacts and lifecycle buckets",
            statements=[
                iam.PolicyStatement(
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[b.bucket_arn for b in readable],
                ),
                iam.PolicyStatement(
                    sid="ReadObjects",
                    actions=["s3:GetObject"],
                    resources=[b.arn_for_objects("*") for b in readable],
                ),
                iam.PolicyStatement(
                    sid="DecryptWithTheKey",
                    actions=["kms:Decrypt", "kms:DescribeKey"],
                    resources=[self.key.key_arn],
                ),
            ],
        )
        write = iam.ManagedPolicy(
            self,
            "WriteOutputsPolicy",
            description="novapod: write job outputs to the artifacts bucket",
            statements=[
                iam.PolicyStatement(
                    sid="WriteObjects",
                    actions=["s3:PutObject", "s3:AbortMultipartUpload"],
                    resources=[artifacts.arn_for_objects("*")],
                ),
                iam.PolicyStatement(
                    sid="EncryptWithTheKey",
                    actions=["kms:GenerateDataKey"],
                    resources=[self.key.key_arn],
                ),
            ],
        )
        reasons = {
            data: "Training inputs are arbitrary object keys in the environment's data bucket "
            "(object actions only; listing is on the bucket ARN).",
            artifacts: "Job outputs, manifests and evaluation results are arbitrary keys in "
            "the artifacts bucket (object actions only).",
        }
        if self.lifecycle_bucket is not None:
            reasons[self.lifecycle_bucket] = (
                "Lifecycle scripts live under content-addressed prefixes of their own bucket; "
                "nodes read whichever prefix their group's SourceS3Uri names."
            )
        for policy, buckets in ((read, readable), (write, [artifacts])):
            for bucket in buckets:
                objects = nag_resource(self, bucket.arn_for_objects("*"))
                acknowledge(policy, f"AwsSolutions-IAM5[Resource::{objects}]", reasons[bucket])
        return [read, write]


def _pin(construct: Construct, logical_id: str) -> None:
    resource = construct.node.default_child
    assert isinstance(resource, CfnResource)
    resource.override_logical_id(logical_id)
