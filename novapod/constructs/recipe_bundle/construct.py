"""RecipeBundle: the rendered recipes, launch specs and index, written to S3 at deploy.

One `Custom::NovaBundleFile` per file, whose `Body` is `Fn::Sub` of the file text with
the deploy-time names (data and artifacts buckets, cluster name, MLflow ARN): the names
are substituted by CloudFormation, so `s3://<artifacts>/recipes/index.json` always
matches the deployed environment. One resource per file keeps each event small (a
recipe is a few KB) and lets CloudFormation write them in parallel.

A small Python function behind a CDK Provider (on_event only) writes the object; the
CDK's AwsCustomResource would JSON-encode the call with the Body spliced in unescaped,
which breaks on the quotes and newlines of YAML and JSON text.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aws_cdk import CustomResource, Duration, Fn
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import custom_resources as cr
from constructs import Construct

from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.log_retention import log_group
from novapod.constructs.provider import (
    FRAMEWORK_REASONS,
    HANDLER_DLQ_REASON,
    MAX_RESERVED,
    MEMORY_MB,
    RUNTIME,
    core_handler_module,
    default_policy,
    handler_code,
)
from novapod.nova.access import BUNDLE_PREFIX, bundle_key, placeholders_in, sub_text

HANDLER_ROOT = Path(__file__).resolve().parent
RESOURCE_TYPE = "Custom::NovaBundleFile"


def file_id(path: str) -> str:
    """Construct ID of a bundle file: from its path, so adding a job adds resources
    without renaming the others."""
    return "File" + "".join(p.capitalize() for p in path.replace("/", "-").split("-"))


class RecipeBundle(Construct):
    """Exposes `files` (bundle path -> its custom resource) and `log_group`."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        files: Mapping[str, str],
        bucket: s3.IBucket,
        key: kms.IKey,
        variables: Mapping[str, str],
        log_retention_days: int,
    ) -> None:
        super().__init__(scope, id_)
        self.log_group = log_group(self, "Logs", days=log_retention_days, key=key)
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="novapod: write the Nova recipe bundle to the artifacts bucket",
        )
        objects = bucket.arn_for_objects(f"{BUNDLE_PREFIX}*")
        policy = iam.Policy(
            self,
            "Policy",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    sid="WriteBundleFiles",
                    actions=["s3:PutObject", "s3:DeleteObject"],
                    resources=[objects],
                ),
                iam.PolicyStatement(
                    sid="EncryptWithTheKey",
                    actions=["kms:GenerateDataKey"],
                    resources=[key.key_arn],
                ),
                iam.PolicyStatement(
                    sid="OwnLogs",
                    actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                    resources=[self.log_group.log_group_arn],
                ),
            ],
        )
        reserved = min(max(len(files), 1), MAX_RESERVED)
        function = lambda_.Function(
            self,
            "OnEvent",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            code=handler_code(HANDLER_ROOT),
            handler=f"{core_handler_module(HANDLER_ROOT)}.on_event",
            timeout=Duration.minutes(1),
            memory_size=MEMORY_MB,
            role=role,
            log_group=self.log_group,
            description="novapod RecipeBundle: write one bundle file",
            # One execution per file at most (CloudFormation writes them in parallel);
            # see novapod/constructs/provider.py for why this is safe when capped.
            reserved_concurrent_executions=reserved,
        )
        function.node.add_dependency(policy)
        framework_role = iam.Role(
            self,
            "FrameworkRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="novapod RecipeBundle: custom-resource framework",
        )
        framework_logs = log_group(self, "FrameworkLogs", days=log_retention_days, key=key)
        framework_role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[framework_logs.log_group_arn],
            )
        )
        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=function,
            log_group=framework_logs,
            framework_on_event_role=framework_role,
        )
        framework = provider.node.find_child("framework-onEvent")
        cfn_framework = framework.node.default_child
        assert isinstance(cfn_framework, lambda_.CfnFunction)
        cfn_framework.reserved_concurrent_executions = reserved
        for rule, reason in FRAMEWORK_REASONS.items():
            acknowledge(framework, rule, reason)
        acknowledge(function, "LambdaDLQ", HANDLER_DLQ_REASON)
        acknowledge(
            function,
            "LambdaInsideVPC",
            "The bundle writer puts objects in S3 and reaches nothing in the VPC; it runs "
            "while nova-base deploys beside the eks stack, before the NAT routes and the S3 "
            "gateway endpoint (built there) that it would need in the private subnets.",
        )
        self.files: dict[str, CustomResource] = {}
        for path, text in files.items():
            used = placeholders_in(text)
            body = (
                Fn.sub(sub_text(text), {name: variables[name] for name in used}) if used else text
            )
            self.files[path] = CustomResource(
                self,
                file_id(path),
                service_token=provider.service_token,
                resource_type=RESOURCE_TYPE,
                properties={"Bucket": bucket.bucket_name, "Key": bundle_key(path), "Body": body},
            )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, objects)}]",
            "The bundle's files are one object per job and the index, all under the "
            "recipes/ prefix of the artifacts bucket; writes are limited to that prefix.",
        )
        acknowledge(
            default_policy(framework_role),
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, function.function_arn)}:*]",
            "The Provider framework invokes this one handler function and its versions "
            "(ARN:*), as CDK grants it.",
        )
