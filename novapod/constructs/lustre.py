"""A customer-managed FSx for Lustre file system linked to the data bucket."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from novapod.config import Lustre
from novapod.constructs.acknowledge import acknowledge

FILE_SYSTEM_PATH = "/data"


class LinkedLustre(Construct):
    """PERSISTENT_2 Lustre in one zone, `/data` linked both ways to the data bucket.

    Restricted instance groups get their own service-managed FSx; this one serves
    standard instance groups and data staging.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        spec: Lustre,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
        key: kms.Key,
        data_bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, id_)
        self.file_system = fsx.LustreFileSystem(
            self,
            "FileSystem",
            vpc=vpc,
            vpc_subnet=subnet,
            security_group=security_group,
            storage_capacity_gib=spec.storage_capacity_gib,
            kms_key=key,
            removal_policy=RemovalPolicy.RETAIN,
            file_system_type_version=fsx.FileSystemTypeVersion.V_2_15,
            lustre_configuration=fsx.LustreConfiguration(
                deployment_type=fsx.LustreDeploymentType.PERSISTENT_2,
                per_unit_storage_throughput=spec.throughput_per_unit,
                data_compression_type=fsx.LustreDataCompressionType.LZ4,
            ),
        )
        self.cfn_file_system = self.file_system.node.default_child
        self.association = fsx.CfnDataRepositoryAssociation(
            self,
            "DataRepositoryAssociation",
            file_system_id=self.file_system.file_system_id,
            file_system_path=FILE_SYSTEM_PATH,
            data_repository_path=f"s3://{data_bucket.bucket_name}/{spec.data_repository_prefix}",
            batch_import_meta_data_on_create=True,
            s3=fsx.CfnDataRepositoryAssociation.S3Property(
                auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                    events=["NEW", "CHANGED", "DELETED"]
                ),
                auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                    events=["NEW", "CHANGED", "DELETED"]
                ),
            ),
        )
        # FSx reaches an SSE-KMS bucket through a per-file-system service-linked role,
        # whose AWS-managed permissions do not cover customer keys.
        # FSx reaches an SSE-KMS bucket through a per-file-system service-linked role
        # (AWSServiceRoleForFSxS3Access_<fs-id>), whose AWS-managed permissions do not
        # cover customer keys: the key policy must name that role itself, only via S3.
        stack = Stack.of(self)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="FsxS3DataRepositoryUseOfTheKey",
                principals=[iam.AnyPrincipal()],
                actions=[
                    "kms:Decrypt",
                    "kms:Encrypt",
                    "kms:GenerateDataKey",
                    "kms:DescribeKey",
                ],
                resources=["*"],  # in a key policy, "*" means this key
                conditions={
                    "ArnLike": {
                        "aws:PrincipalArn": stack.format_arn(
                            service="iam",
                            region="",
                            resource="role",
                            resource_name=(
                                "aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
                                "AWSServiceRoleForFSxS3Access_*"
                            ),
                        )
                    },
                    "StringEquals": {
                        "kms:CallerAccount": stack.account,
                        "kms:ViaService": f"s3.{stack.region}.amazonaws.com",
                    },
                },
            )
        )
        acknowledge(
            key,
            "KMSKeyPolicyWildcardPrincipal",
            "The statement with principal '*' admits only FSx's S3 data-repository "
            "service-linked role of this account (aws:PrincipalArn), calling through S3 in "
            "this Region (kms:CallerAccount, kms:ViaService); that role's name ends in the "
            "file system's ID, so it cannot be named as a principal before it exists.",
        )
