"""StorageStack: encryption, TLS-only, no public access, retention, pinned logical IDs."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from novapod.config.stacks import STORAGE_PINNED_IDS as PINNED_IDS
from tests.conftest import ALL_CONFIGS, DEFAULT_CONFIG, ROOT, resources

DEV = ROOT / "config" / "examples" / "dev-two-zones.yaml"
BUCKETS = ("AccessLogsBucket", "DataBucket", "ArtifactsBucket")


def bucket_policy(template: dict[str, Any], bucket_id: str) -> list[dict[str, Any]]:
    for policy in resources(template, "AWS::S3::BucketPolicy").values():
        if policy["Properties"]["Bucket"] == {"Ref": bucket_id}:
            return policy["Properties"]["PolicyDocument"]["Statement"]
    raise AssertionError(f"no bucket policy for {bucket_id}")


@pytest.mark.parametrize("bucket_id", BUCKETS)
def test_bucket_denies_plain_http_and_old_tls(synth, bucket_id) -> None:
    statements = bucket_policy(synth(DEFAULT_CONFIG).templates["storage"], bucket_id)
    denies = [s for s in statements if s["Effect"] == "Deny"]
    assert any(
        s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and s["Action"] == "s3:*"
        for s in denies
    )
    assert any(s["Condition"] == {"NumericLessThan": {"s3:TlsVersion": 1.2}} for s in denies)


@pytest.mark.parametrize("bucket_id", BUCKETS)
def test_bucket_blocks_public_access_is_versioned_and_retained(synth, bucket_id) -> None:
    bucket = synth(DEFAULT_CONFIG).templates["storage"]["Resources"][bucket_id]
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert bucket["DeletionPolicy"] == "Retain"
    assert bucket["UpdateReplacePolicy"] == "Retain"
    assert props["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]


@pytest.mark.parametrize("bucket_id", ["DataBucket", "ArtifactsBucket"])
def test_data_buckets_use_the_kms_key_and_log_access(synth, bucket_id) -> None:
    props = synth(DEFAULT_CONFIG).templates["storage"]["Resources"][bucket_id]["Properties"]
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::GetAtt": ["EncryptionKey", "Arn"]},
    }
    assert rule["BucketKeyEnabled"] is True
    assert props["LoggingConfiguration"] == {
        "DestinationBucketName": {"Ref": "AccessLogsBucket"},
        "LogFilePrefix": f"{bucket_id.removesuffix('Bucket')}/",
    }


def test_access_log_bucket_uses_s3_managed_keys(synth) -> None:
    props = synth(DEFAULT_CONFIG).templates["storage"]["Resources"]["AccessLogsBucket"][
        "Properties"
    ]
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    (lifecycle,) = props["LifecycleConfiguration"]["Rules"]
    assert lifecycle["ExpirationInDays"] == 365


def test_lifecycle_rules_follow_config(synth) -> None:
    resources_ = synth(DEV).templates["storage"]["Resources"]
    (data_rule,) = resources_["DataBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert data_rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}
    assert data_rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}
    (artifact_rule,) = resources_["ArtifactsBucket"]["Properties"]["LifecycleConfiguration"][
        "Rules"
    ]
    assert artifact_rule["Transitions"] == [{"StorageClass": "STANDARD_IA", "TransitionInDays": 90}]


def test_artifacts_infrequent_access_null_removes_the_transition(synth) -> None:
    path = ROOT / "config" / "examples" / "standard-group-on-plan.yaml"
    bucket = synth(path).templates["storage"]["Resources"]["ArtifactsBucket"]
    (rule,) = bucket["Properties"]["LifecycleConfiguration"]["Rules"]
    assert "Transitions" not in rule
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 90}  # the rest stays


def test_key_rotates_and_is_retained(synth) -> None:
    key = synth(DEFAULT_CONFIG).templates["storage"]["Resources"]["EncryptionKey"]
    assert key["Type"] == "AWS::KMS::Key"
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_stateful_logical_ids_are_pinned(synth, path) -> None:
    result = synth(path)
    storage = result.templates["storage"]["Resources"]
    expected = {
        PINNED_IDS["key"]: "AWS::KMS::Key",
        PINNED_IDS["access_logs"]: "AWS::S3::Bucket",
        PINNED_IDS["data"]: "AWS::S3::Bucket",
        PINNED_IDS["artifacts"]: "AWS::S3::Bucket",
        "PurchaseLedger": "AWS::DynamoDB::Table",
    }
    for logical_id, type_ in expected.items():
        assert storage[logical_id]["Type"] == type_
        assert storage[logical_id]["DeletionPolicy"] == "Retain"
    # No other stateful resource may sit under a generated ID.
    stateful = {"AWS::KMS::Key", "AWS::S3::Bucket", "AWS::FSx::FileSystem", "AWS::DynamoDB::Table"}
    assert {k for k, r in storage.items() if r["Type"] in stateful} <= set(PINNED_IDS.values())
    assert result.termination_protection["storage"] is True


def test_lustre_is_persistent_2_encrypted_and_linked_to_the_data_bucket(synth) -> None:
    result = synth(DEV)
    storage = result.templates["storage"]
    fs = storage["Resources"]["LustreFileSystem"]
    assert fs["DeletionPolicy"] == "Retain"
    props = fs["Properties"]
    assert props["StorageCapacity"] == 1200
    assert props["KmsKeyId"] == {"Ref": "EncryptionKey"}
    assert props["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"
    assert props["LustreConfiguration"]["PerUnitStorageThroughput"] == 250
    assert len(props["SubnetIds"]) == 1
    association = storage["Resources"]["LustreDataRepositoryAssociation"]["Properties"]
    assert association["FileSystemPath"] == "/data"
    assert association["DataRepositoryPath"] == {
        "Fn::Join": ["", ["s3://", {"Ref": "DataBucket"}, "/fsx/"]]
    }
    assert association["S3"]["AutoExportPolicy"]["Events"] == ["NEW", "CHANGED", "DELETED"]
    result.template("storage").has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Sid": "FsxS3DataRepositoryUseOfTheKey", "Effect": "Allow"}
                        )
                    ]
                )
            }
        },
    )


def test_lustre_sits_in_the_configured_zone(synth) -> None:
    result = synth(DEV)
    subnet = result.templates["storage"]["Resources"]["LustreFileSystem"]["Properties"][
        "SubnetIds"
    ][0]
    # The subnet comes from the network stack through an import of the use1-az4 subnet.
    assert "PrivateSubnetUse1Az4" in str(subnet)
