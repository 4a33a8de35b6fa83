"""Lifecycle scripts of standard instance groups, copied to S3 as plain files.

HyperPod runs `OnCreate` from an S3 *prefix* of unzipped files, so a zipped CDK
asset is not enough: a BucketDeployment unpacks it. The prefix carries the asset
hash, so editing a script changes `SourceS3Uri` (an in-place group update) and old
prefixes stay for nodes created from them.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as assets
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct, IConstruct

from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.log_retention import retention

# Package data (pyproject.toml), so an installed novapod has them too.
SCRIPTS = Path(__file__).resolve().parent.parent / "lifecycle_scripts"
ON_CREATE = "on_create.sh"


class LifecycleScripts(Construct):
    """Exposes `source_s3_uri` and `on_create` for `LifeCycleConfig`."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        bucket: s3.IBucket,
        key: kms.IKey,
        source: Path = SCRIPTS,
        log_retention_days: int = 365,
    ) -> None:
        super().__init__(scope, id_)
        asset = assets.Asset(self, "Asset", path=str(source), exclude=["README.md", ".*"])
        prefix = f"lifecycle-scripts/{asset.asset_hash[:16]}/"
        self.source_s3_uri = f"s3://{bucket.bucket_name}/{prefix}"
        self.on_create = ON_CREATE

        # The deployment's own role, with exact permissions; the construct receives an
        # immutable reference so it cannot attach its broader default grants.
        role = iam.Role(
            self,
            "DeploymentRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="novapod: copy lifecycle scripts to the artifacts bucket",
        )
        log_group = logs.LogGroup(
            self,
            "DeploymentLogs",
            retention=retention(log_retention_days),
            encryption_key=key,
            removal_policy=RemovalPolicy.DESTROY,
        )
        destination = bucket.arn_for_objects(f"{prefix}*")
        source_object = asset.bucket.arn_for_objects(asset.s3_object_key)
        policy = iam.Policy(
            self,
            "DeploymentPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(actions=["s3:GetObject"], resources=[source_object]),
                iam.PolicyStatement(
                    actions=["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
                    resources=[destination],
                ),
                iam.PolicyStatement(actions=["s3:ListBucket"], resources=[bucket.bucket_arn]),
                iam.PolicyStatement(
                    actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[key.key_arn]
                ),
                iam.PolicyStatement(
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[log_group.log_group_arn],
                ),
            ],
        )
        self.deployment = s3deploy.BucketDeployment(
            self,
            "Deployment",
            sources=[s3deploy.Source.bucket(asset.bucket, asset.s3_object_key)],
            # A plain reference (no key attached): the construct then adds no grants of
            # its own to the key policy; the role above has exactly what it needs.
            destination_bucket=s3.Bucket.from_bucket_attributes(
                self, "Destination", bucket_arn=bucket.bucket_arn
            ),
            destination_key_prefix=prefix,
            prune=False,
            retain_on_delete=True,
            memory_limit=256,
            log_group=log_group,
            role=iam.Role.from_role_arn(self, "ImmutableRole", role.role_arn, mutable=False),
        )
        self.deployment.node.add_dependency(policy)
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, destination)}]",
            "The deployment writes the unpacked scripts under this one content-addressed "
            "prefix of the artifacts bucket; file names come from lifecycle_scripts/.",
        )
        handler = self._handler()
        acknowledge(
            handler,
            "AwsSolutions-L1",
            "The BucketDeployment handler's runtime is chosen by aws-cdk-lib (pinned with "
            "the library) and cannot be set from outside the construct.",
        )
        self._settle(handler)

    def _settle(self, handler: IConstruct) -> None:
        """The BucketDeployment handler (aws-cdk-lib's): one copy per deploy."""
        cfn = handler.node.default_child
        assert isinstance(cfn, lambda_.CfnFunction)
        # It serves this one deployment; CloudFormation invokes it asynchronously, and
        # Lambda retries an asynchronous event it throttled.
        cfn.reserved_concurrent_executions = 1
        acknowledge(
            handler,
            "LambdaDLQ",
            "CloudFormation invokes the handler for one custom resource and waits for its "
            "answer; a failed copy fails the deploy, and an event in a dead-letter queue "
            "could not be replayed into it.",
        )
        acknowledge(
            handler,
            "LambdaInsideVPC",
            "The handler copies between two S3 buckets and reaches nothing in the VPC; it "
            "runs in the eks stack while the S3 gateway endpoint it would need there is "
            "being built beside it.",
        )
        acknowledge(
            handler,
            "LambdaEnvironmentEncryption",
            "Its one variable, AWS_CA_BUNDLE, is the path of a certificate file in the "
            "runtime, no secret; Lambda encrypts it at rest with its AWS managed key.",
        )

    def _handler(self) -> IConstruct:
        stack = Stack.of(self)
        for child in stack.node.children:
            if child.node.id.startswith("Custom::CDKBucketDeployment"):
                return child
        raise LookupError("BucketDeployment handler not found")
