"""cdk-nag acknowledgements for the IAM policies CDK Pipelines generates in PipelineStack.

CDK Pipelines builds the pipeline's roles itself (aws-cdk-lib pipelines/lib/codepipeline/
codepipeline.ts and private/codebuild-factory.ts). Their wildcards are of a few known
kinds; `wildcard_reason` names the reason for each, and a wildcard it does not know
gets none, so a new one (a CDK upgrade, a step added) fails synthesis until a reviewer
has looked at it. Every acknowledgement is for one finding on one policy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from novapod.constructs.acknowledge import acknowledge, nag_resource

ARTIFACTS = (
    "aws-cdk-lib's bucket and key grants (Bucket.grantRead/grantReadWrite) on the "
    "pipeline's own artifact bucket and KMS key only: CodePipeline and CodeBuild read and "
    "write artifacts under object keys they generate."
)
PROJECT_LOGS = (
    "The log streams of this CodeBuild project's own log group (/aws/codebuild/<project>); "
    "CodeBuild names one stream per build."
)
PROJECT_REPORTS = (
    "Report groups of this CodeBuild project only (<project>-<name>), which CodeBuild "
    "creates when a build publishes test reports."
)
SHARED_ASSET_ROLE = (
    "CDK Pipelines' asset-publishing role is shared by the asset projects and created "
    "before them (pipelines codepipeline.ts, assetsRole), so it cannot name their log "
    "groups, report groups or builds."
)
SELF_MUTATION_READS = (
    "The self-mutation step runs cdk deploy, which describes the bootstrap stack and "
    "lists its bucket, whose names it learns only at run time (pipelines codepipeline.ts)."
)
BOOTSTRAP_ROLES = (
    "cdk deploy assumes the bootstrap roles of this account only, limited by the condition "
    "iam:ResourceTag/aws-cdk:bootstrap-role to the deploy and publishing roles."
)
CLUSTER_DESCRIBE = (
    "A HyperPod cluster ARN ends in an ID SageMaker generates (cluster/<id>), unknown until "
    "the stage deploys; DescribeCluster only, in this account and region."
)
STACK_DESCRIBE = (
    "A stack ARN ends in an ID CloudFormation generates (stack/<name>/<id>); the name is "
    "exact, and only DescribeStacks and DescribeStackResource."
)

_PROJECT_LOGS = re.compile(r"^arn:[^:]+:logs:[^:]+:\d{12}:log-group:/aws/codebuild/<[^>]+>:\*$")
_PROJECT_REPORTS = re.compile(r"^arn:[^:]+:codebuild:[^:]+:\d{12}:report-group/<[^>]+>-\*$")
_ANY_PROJECT_LOGS = re.compile(r"^arn:[^:]+:logs:[^:]+:\d{12}:log-group:/aws/codebuild/\*$")
_ANY_REPORTS = re.compile(r"^arn:[^:]+:codebuild:[^:]+:\d{12}:report-group/\*$")
_ACCOUNT_ROLES = re.compile(r"^arn:\*:iam::\d{12}:role/\*$")
_BUILDS = {"codebuild:BatchGetBuilds", "codebuild:StartBuild", "codebuild:StopBuild"}
_SELF_MUTATION = {"cloudformation:DescribeStacks", "s3:ListBucket"}
_OWN_SIDS = {"DescribeHyperPodCluster": CLUSTER_DESCRIBE, "DescribeNovaStack": STACK_DESCRIBE}


def wildcard_reason(
    statement: Mapping[str, Any], finding: str, *, artifacts: frozenset[str]
) -> str | None:
    """Why `finding` (an IAM5 finding ID such as `Action::s3:List*`) is acceptable in
    `statement` (rendered as cdk-nag renders it), or None when it is not known."""
    own = _OWN_SIDS.get(str(statement.get("Sid", "")))
    if own is not None and finding.startswith("Resource::"):
        return own
    resources = set(_as_list(statement.get("Resource")))
    actions = set(_as_list(statement.get("Action")))
    if resources <= artifacts:
        return ARTIFACTS  # action groups and <bucket>/* on the artifact bucket and key
    if not finding.startswith("Resource::"):
        return None
    resource = finding.removeprefix("Resource::")
    if _PROJECT_LOGS.match(resource):
        return PROJECT_LOGS
    if _PROJECT_REPORTS.match(resource):
        return PROJECT_REPORTS
    if _ANY_PROJECT_LOGS.match(resource) or _ANY_REPORTS.match(resource):
        return SHARED_ASSET_ROLE
    if resource == "*" and actions <= _BUILDS:
        return SHARED_ASSET_ROLE
    if resource == "*" and actions <= _SELF_MUTATION:
        return SELF_MUTATION_READS
    if _ACCOUNT_ROLES.match(resource) and "aws-cdk:bootstrap-role" in str(
        statement.get("Condition")
    ):
        return BOOTSTRAP_ROLES
    return None


def acknowledge_pipeline_policies(stack: Stack, *, artifact_arns: Sequence[str]) -> None:
    """Acknowledge the known wildcards of every IAM policy in `stack` (not its stages)."""
    artifacts = frozenset(nag_resource(stack, arn) for arn in artifact_arns)
    for policy in _policies(stack):
        document = stack.resolve(policy.policy_document)
        for statement in document.get("Statement", []):
            rendered = _rendered(stack, statement)
            for finding in _findings(rendered):
                reason = wildcard_reason(rendered, finding, artifacts=artifacts)
                if reason is not None:
                    acknowledge(policy, f"AwsSolutions-IAM5[{finding}]", reason)


def _policies(stack: Stack) -> Iterator[iam.CfnPolicy]:
    for construct in stack.node.find_all():
        if isinstance(construct, iam.CfnPolicy) and _stack_of(construct) is stack:
            yield construct


def _stack_of(construct: IConstruct) -> Stack:
    return Stack.of(construct)


def _rendered(stack: Stack, statement: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(statement)
    out["Resource"] = [_name(stack, r) for r in _as_list(statement.get("Resource"))]
    return out


def _name(stack: Stack, resource: Any) -> str:
    try:
        return nag_resource(stack, resource)
    except ValueError:  # an intrinsic nag_resource has no short form for (Fn::Sub)
        return json.dumps(resource, separators=(",", ":"))


def _findings(statement: Mapping[str, Any]) -> Iterator[str]:
    """The IAM5 finding IDs cdk-nag reports for one statement's wildcards."""
    for action in _as_list(statement.get("Action")):
        if "*" in action:
            yield f"Action::{action}"
    for resource in _as_list(statement.get("Resource")):
        if "*" in resource:
            yield f"Resource::{resource}"


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
