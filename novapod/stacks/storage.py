"""StorageStack (stateful): KMS key, S3 buckets, optional FSx for Lustre.

Everything here is retained on stack deletion and has a pinned logical ID, so
refactoring the construct tree can never replace a bucket, key or file system.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, CfnResource, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from novapod.config import Storage
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.buckets import access_log_bucket, encrypted_bucket
from novapod.constructs.lifecycle_scripts import LifecycleScripts
from novapod.constructs.lustre import LinkedLustre
from novapod.constructs.network import VpcHandle

# Logical IDs of stateful resources: changing one replaces data. Tests pin them.
PINNED_IDS = {
    "key": "EncryptionKey",
    "access_logs": "AccessLogsBucket",
    "data": "DataBucket",
    "artifacts": "ArtifactsBucket",
    "lustre": "LustreFileSystem",
    "lustre_association": "LustreDataRepositoryAssociation",
}


class StorageStack(Stack):
    """Exposes `key`, `data_bucket`, `artifacts_bucket` and `lustre` (or None)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        storage: Storage,
        name: str,
        lifecycle_scripts: bool,
        network: VpcHandle,
        security_group: ec2.ISecurityGroup,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, termination_protection=True, **kwargs)
        self.key = kms.Key(
            self,
            "Key",
            description=f"novapod {name}: buckets, FSx, EKS secrets",
            enable_key_rotation=True,
            alias=f"alias/novapod/{name}",
            removal_policy=RemovalPolicy.RETAIN,
        )
        _pin(self.key, PINNED_IDS["key"])
        self.access_logs_bucket = access_log_bucket(
            self, "AccessLogs", expire_after_days=storage.access_log_days
        )
        _pin(self.access_logs_bucket, PINNED_IDS["access_logs"])
        self.data_bucket = encrypted_bucket(
            self,
            "Data",
            key=self.key,
            access_logs=self.access_logs_bucket,
            noncurrent_version_days=storage.noncurrent_version_days,
        )
        _pin(self.data_bucket, PINNED_IDS["data"])
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
        _pin(self.artifacts_bucket, PINNED_IDS["artifacts"])

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
            _pin(self.lustre.file_system, PINNED_IDS["lustre"])
            self.lustre.association.override_logical_id(PINNED_IDS["lustre_association"])
            CfnOutput(self, "LustreFileSystemId", value=self.lustre.file_system.file_system_id)

        self.node_policies = self._node_policies()
        self.lifecycle_scripts = (
            LifecycleScripts(self, "LifecycleScripts", bucket=self.artifacts_bucket, key=self.key)
            if lifecycle_scripts
            else None
        )

        CfnOutput(self, "DataBucketName", value=self.data_bucket.bucket_name)
        CfnOutput(self, "ArtifactsBucketName", value=self.artifacts_bucket.bucket_name)
        CfnOutput(self, "KeyArn", value=self.key.key_arn)

    def _node_policies(self) -> list[iam.ManagedPolicy]:
        """What HyperPod nodes may do with the buckets and key: read inputs, write outputs.

        Defined here, beside the buckets, so no bucket ARN crosses a stack boundary
        inside a policy document; execution roles attach these by ARN.
        """
        data, artifacts = self.data_bucket, self.artifacts_bucket
        read = iam.ManagedPolicy(
            self,
            "ReadInputsPolicy",
            description="novapod: list both buckets, read data and artifacts objects",
            statements=[
                iam.PolicyStatement(
                    sid="ListBuckets",
                    actions=["s3:ListBucket"],
                    resources=[data.bucket_arn, artifacts.bucket_arn],
                ),
                iam.PolicyStatement(
                    sid="ReadObjects",
                    actions=["s3:GetObject"],
                    resources=[data.arn_for_objects("*"), artifacts.arn_for_objects("*")],
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
            artifacts: "Job outputs, manifests, evaluation results and lifecycle scripts are "
            "arbitrary keys in the artifacts bucket (object actions only).",
        }
        for policy, buckets in ((read, (data, artifacts)), (write, (artifacts,))):
            for bucket in buckets:
                objects = nag_resource(self, bucket.arn_for_objects("*"))
                acknowledge(policy, f"AwsSolutions-IAM5[Resource::{objects}]", reasons[bucket])
        return [read, write]


def _pin(construct: Construct, logical_id: str) -> None:
    resource = construct.node.default_child
    assert isinstance(resource, CfnResource)
    resource.override_logical_id(logical_id)
