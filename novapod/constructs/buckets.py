"""S3 buckets with novapod's defaults: private, TLS-only, versioned, logged, retained."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from novapod.constructs.acknowledge import acknowledge

REPLICATION_REASON = (
    "Cross-Region replication needs a destination bucket, Region and key that are the "
    "account owner's choice, not novapod's; the bucket is versioned and retained with its "
    "key, which covers deletion and overwrite within the Region."
)


def access_log_bucket(scope: Construct, id_: str, *, expire_after_days: int) -> s3.Bucket:
    """Target of S3 server access logging.

    S3 delivers server access logs only to buckets encrypted with SSE-S3 (SSE-KMS
    targets are not supported), so this one bucket uses S3-managed keys.
    """
    bucket = s3.Bucket(
        scope,
        id_,
        encryption=s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        versioned=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=RemovalPolicy.RETAIN,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="expire-access-logs",
                expiration=Duration.days(expire_after_days),
                noncurrent_version_expiration=Duration.days(1),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            )
        ],
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        "This bucket is the server-access-log target; logging it into itself would loop.",
    )
    acknowledge(
        bucket,
        "S3DefaultEncryptionKMS",
        "S3 server access logging delivers only to buckets encrypted with SSE-S3, not "
        "SSE-KMS (S3 User Guide, enable-server-access-logging.html).",
    )
    acknowledge(bucket, "S3BucketReplicationEnabled", REPLICATION_REASON)
    return bucket


def encrypted_bucket(
    scope: Construct,
    id_: str,
    *,
    key: kms.IKey,
    access_logs: s3.IBucket,
    noncurrent_version_days: int,
    infrequent_access_days: int | None = None,
    bucket_name: str | None = None,
) -> s3.Bucket:
    """A KMS-encrypted, versioned, TLS-only bucket that logs access to `access_logs`."""
    transitions = (
        [
            s3.Transition(
                storage_class=s3.StorageClass.INFREQUENT_ACCESS,
                transition_after=Duration.days(infrequent_access_days),
            )
        ]
        if infrequent_access_days
        else None
    )
    bucket = s3.Bucket(
        scope,
        id_,
        bucket_name=bucket_name,
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        bucket_key_enabled=True,  # fewer KMS requests for many small checkpoint files
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        versioned=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=f"{id_}/",
        removal_policy=RemovalPolicy.RETAIN,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="expire-old-versions",
                noncurrent_version_expiration=Duration.days(noncurrent_version_days),
                abort_incomplete_multipart_upload_after=Duration.days(7),
                transitions=transitions,
            )
        ],
    )
    acknowledge(bucket, "S3BucketReplicationEnabled", REPLICATION_REASON)
    return bucket
