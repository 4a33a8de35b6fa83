"""cdk-nag v3 acknowledgements: one rule, one construct, one reason a reviewer can check."""

from __future__ import annotations

import json

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge `rule` (e.g. `AwsSolutions-IAM5[Resource::*]`) on exactly this construct."""
    if len(reason) < 20:
        raise ValueError(f"acknowledging {rule} needs a specific reason, got {reason!r}")
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))


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
