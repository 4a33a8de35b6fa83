"""Acknowledged findings: one rule, one construct, one reason a reviewer can check.

A reason is written once and serves both policy tools:

- cdk-nag v3 acknowledgements (`Validations.of(c).acknowledge`), for the AwsSolutions
  pack that always runs and for the NIST 800-53 R5 and HIPAA Security packs that a
  config's `compliance` list adds (novapod/environment.py);
- checkov's resource metadata, `Metadata.checkov.skip: [{id, comment}]` on the
  construct's CloudFormation resource (bridgecrewio/checkov, docs/2.Basics/Suppressing
  and Skipping Policies.md; checkov/cloudformation/context_parser.py reads exactly
  `id` and `comment`).

`EQUIVALENT_RULES` is the one table of which rule IDs of each tool flag the same thing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from constructs import IConstruct

NIST = "NIST.800.53.R5"
HIPAA = "HIPAA.Security"
MIN_REASON_CHARS = 20


@dataclass(frozen=True)
class Equivalent:
    """One concern as each tool names it: cdk-nag rule IDs and checkov check IDs."""

    nag: tuple[str, ...]
    checkov: tuple[str, ...] = ()


def _packs(rule: str, *packs: str) -> tuple[str, ...]:
    """The rule as the NIST 800-53 R5 and HIPAA packs name it (both use one name)."""
    return tuple(f"{pack}-{rule}" for pack in packs or (NIST, HIPAA))


# Key: what a caller acknowledges (an AwsSolutions rule, or the name the NIST and HIPAA
# packs share). A key absent here is a cdk-nag rule acknowledged as it is.
EQUIVALENT_RULES: dict[str, Equivalent] = {
    # VPC flow logs (the flow log is in another stack than its VPC).
    "AwsSolutions-VPC7": Equivalent(("AwsSolutions-VPC7", *_packs("VPCFlowLogsEnabled"))),
    # S3 server access logging (the access-log bucket itself).
    "AwsSolutions-S1": Equivalent(
        ("AwsSolutions-S1", *_packs("S3BucketLoggingEnabled")), ("CKV_AWS_18",)
    ),
    # A statement on Resource "*": checkov flags it when it allows write actions.
    "AwsSolutions-IAM5[Resource::*]": Equivalent(
        ("AwsSolutions-IAM5[Resource::*]",), ("CKV_AWS_111",)
    ),
    "CloudWatchLogGroupEncrypted": Equivalent(
        _packs("CloudWatchLogGroupEncrypted"), ("CKV_AWS_158",)
    ),
    "LambdaDLQ": Equivalent(_packs("LambdaDLQ"), ("CKV_AWS_116",)),
    "LambdaConcurrency": Equivalent(_packs("LambdaConcurrency"), ("CKV_AWS_115",)),
    "LambdaInsideVPC": Equivalent(_packs("LambdaInsideVPC"), ("CKV_AWS_117",)),
    "CloudWatchAlarmAction": Equivalent(_packs("CloudWatchAlarmAction")),
    # checkov only: environment variables encrypted with a customer managed key.
    "LambdaEnvironmentEncryption": Equivalent((), ("CKV_AWS_173",)),
    "IAMNoInlinePolicy": Equivalent(_packs("IAMNoInlinePolicy")),
    "S3BucketReplicationEnabled": Equivalent(_packs("S3BucketReplicationEnabled")),
    "S3DefaultEncryptionKMS": Equivalent(_packs("S3DefaultEncryptionKMS")),
    "DynamoDBInBackupPlan": Equivalent(_packs("DynamoDBInBackupPlan")),
    "VPCNoUnrestrictedRouteToIGW": Equivalent(_packs("VPCNoUnrestrictedRouteToIGW")),
    "EC2RestrictedCommonPorts": Equivalent(_packs("EC2RestrictedCommonPorts")),
    "VPCDefaultSecurityGroupClosed": Equivalent(_packs("VPCDefaultSecurityGroupClosed")),
    "CodeBuildProjectSourceRepoUrl": Equivalent(_packs("CodeBuildProjectSourceRepoUrl", HIPAA)),
    # checkov only: a key policy statement whose principal is "*" (with conditions).
    "KMSKeyPolicyWildcardPrincipal": Equivalent((), ("CKV_AWS_33",)),
}


def equivalent(rule: str) -> Equivalent:
    """What acknowledging `rule` acknowledges in each tool."""
    found = EQUIVALENT_RULES.get(rule)
    if found is not None:
        return found
    if rule.startswith((NIST, HIPAA, "CKV")):
        raise ValueError(f"{rule}: acknowledge it by its key in EQUIVALENT_RULES")
    return Equivalent((rule,))


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge `rule` (e.g. `AwsSolutions-IAM5[Resource::*]`, `LambdaDLQ`) on exactly
    this construct, in cdk-nag and, where the table names checkov checks, in checkov."""
    if len(reason) < MIN_REASON_CHARS:
        raise ValueError(f"acknowledging {rule} needs a specific reason, got {reason!r}")
    rules = equivalent(rule)
    for nag_rule in rules.nag:
        Validations.of(construct).acknowledge(Acknowledgment(id=nag_rule, reason=reason))
    if rules.checkov:
        skip_in_checkov(cfn_resource(construct), rules.checkov, reason)


def cfn_resource(construct: IConstruct) -> CfnResource:
    """The CloudFormation resource a construct stands for (itself, or its default child)."""
    if isinstance(construct, CfnResource):
        return construct
    child = construct.node.default_child
    if isinstance(child, CfnResource):
        return child
    raise ValueError(f"{construct.node.path} has no CloudFormation resource of its own")


def skip_in_checkov(resource: CfnResource, checks: tuple[str, ...], reason: str) -> None:
    """Add checkov skips to the resource's metadata; a check skipped twice keeps both
    reasons."""
    current: Any = resource.get_metadata("checkov") or {}
    skips: list[dict[str, str]] = [dict(s) for s in current.get("skip", [])]
    for check in checks:
        same = next((s for s in skips if s["id"] == check), None)
        if same is None:
            skips.append({"id": check, "comment": reason})
        elif reason not in same["comment"]:
            same["comment"] = f"{same['comment']} / {reason}"
    resource.add_metadata("checkov", {"skip": skips})


def nag_resource(scope: IConstruct, value: str) -> str:
    """How cdk-nag names a resource string in a finding ID, e.g. `<Fn.Arn>:*`.

    cdk-nag prints resolved literals as they are, intrinsics as `<Ref>` or
    `<LogicalId.Attribute>` and a stack output read (Fn::GetStackOutput) as its JSON,
    so acknowledgements can name exactly one finding.
    """
    resolved = Stack.of(scope).resolve(value)
    return _render(resolved)


def _render(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return str(separator).join(_render(p) for p in parts)
        if "Ref" in value:
            return f"<{value['Ref']}>"
        if "Fn::GetStackOutput" in value:
            # What it prints for an intrinsic it has no short form for: the JSON.
            return json.dumps(value, separators=(",", ":"))
        if "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            return f"<{logical_id}.{attribute}>"
    raise ValueError(f"cannot name {value!r} the way cdk-nag does")
