"""`novapod pipeline-check`: after a pipeline stage deploys, check that its HyperPod cluster
is InService and that the Nova environment check passed.

The pipeline's post-deploy step (novapod/stacks/pipeline.py) runs it with a role that may
call only SageMaker DescribeCluster (docs.aws.amazon.com/sagemaker/latest/APIReference/
API_DescribeCluster.html: ClusterStatus is Creating | Updating | RollingBack |
SystemUpdating | InService | Deleting | Failed) and CloudFormation DescribeStacks and
DescribeStackResource on the Nova stack. The check is the NovaEnvironment custom
resource: CloudFormation marks it CREATE_COMPLETE or UPDATE_COMPLETE only when its
handler reported success, and a failure rolls the stack back (API_StackResourceDetail,
API_Stack in the CloudFormation API reference).

The decisions are pure functions of the API answers; `run` makes the calls.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from novapod.operate import aws_session

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
# Stack states after a deploy that went through; *_ROLLBACK_COMPLETE is a failed one.
STACK_DEPLOYED = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})
RESOURCE_DONE = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})


@dataclass(frozen=True)
class Target:
    """What one stage's check reads."""

    region: str
    cluster_name: str
    nova_stack: str | None = None
    check_resource: str | None = None  # logical ID of the NovaEnvironment resource


def cluster_problem(cluster: Mapping[str, Any]) -> str | None:
    """Why the HyperPod cluster is not ready (DescribeCluster's answer), or None."""
    name = cluster.get("ClusterName", "?")
    status = cluster.get("ClusterStatus")
    if status == "InService":
        return None
    failure = cluster.get("FailureMessage")
    why = f": {failure}" if failure else ""
    return f"HyperPod cluster {name} is {status}, not InService{why}"


def stack_problem(stack: Mapping[str, Any]) -> str | None:
    """Why the Nova stack's last deploy did not go through (DescribeStacks), or None."""
    status = stack.get("StackStatus")
    if status in STACK_DEPLOYED:
        return None
    reason = stack.get("StackStatusReason")
    why = f" ({reason})" if reason else ""
    return f"stack {stack.get('StackName', '?')} is {status}{why}, so its last deploy failed"


def check_resource_problem(resource: Mapping[str, Any]) -> str | None:
    """Why the Nova environment check did not pass (DescribeStackResource), or None."""
    status = resource.get("ResourceStatus")
    if status in RESOURCE_DONE:
        return None
    reason = resource.get("ResourceStatusReason")
    why = f": {reason}" if reason else ""
    return (
        f"the Nova environment check {resource.get('LogicalResourceId', '?')} is {status}{why}"
        " (its log group is the NovaEnvironmentLogGroup output)"
    )


@dataclass(frozen=True)
class Outcome:
    problems: tuple[str, ...]
    passed: tuple[str, ...]


def run(sagemaker: Any, cloudformation: Any, target: Target) -> Outcome:
    """Make the calls and judge them; an AWS error propagates (botocore's own words)."""
    problems: list[str] = []
    passed: list[str] = []
    cluster = sagemaker.describe_cluster(ClusterName=target.cluster_name)
    problem = cluster_problem(cluster)
    (problems if problem else passed).append(
        problem or f"HyperPod cluster {target.cluster_name} is InService"
    )
    if target.nova_stack is not None and target.check_resource is not None:
        stack = cloudformation.describe_stacks(StackName=target.nova_stack)["Stacks"][0]
        problem = stack_problem(stack)
        if problem:
            problems.append(problem)
        detail = cloudformation.describe_stack_resource(
            StackName=target.nova_stack, LogicalResourceId=target.check_resource
        )["StackResourceDetail"]
        problem = check_resource_problem(detail)
        (problems if problem else passed).append(
            problem
            or f"Nova environment check passed ({detail.get('ResourceStatus')} at "
            f"{detail.get('LastUpdatedTimestamp')})"
        )
    return Outcome(tuple(problems), tuple(passed))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", required=True, help="the environment's region")
    parser.add_argument(
        "--cluster", required=True, help="the HyperPod cluster's name (novapod-<env>)"
    )
    parser.add_argument("--nova-stack", help="the Nova stack's name (with the stage's prefix)")
    parser.add_argument(
        "--check-resource", help="logical ID of the NovaEnvironment check in the Nova stack"
    )


def main(args: argparse.Namespace) -> int:
    """The `novapod pipeline-check` command: exit 0 when every check passed, 1 when one
    did not or an AWS call failed, 2 for arguments that do not go together."""
    if (args.nova_stack is None) != (args.check_resource is None):
        print(
            "novapod pipeline-check: --nova-stack and --check-resource go together; give both "
            "or neither",
            file=sys.stderr,
        )
        return EXIT_USAGE
    target = Target(args.region, args.cluster, args.nova_stack, args.check_resource)
    try:
        session = aws_session.session(target.region)
        outcome = run(session.client("sagemaker"), session.client("cloudformation"), target)
    except (BotoCoreError, ClientError) as error:
        print(f"novapod pipeline-check: an AWS call failed: {error}", file=sys.stderr)
        return EXIT_FAILED
    for line in outcome.passed:
        print(f"ok: {line}")
    for problem in outcome.problems:
        print(f"novapod pipeline-check: {problem}", file=sys.stderr)
    return EXIT_FAILED if outcome.problems else EXIT_OK
