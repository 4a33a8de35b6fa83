"""cdk-nag v3 acknowledgements: one rule, one construct, one reason a reviewer can check."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge `rule` (e.g. `AwsSolutions-IAM5[Resource::*]`) on exactly this construct."""
    if len(reason) < 20:
        raise ValueError(f"acknowledging {rule} needs a specific reason, got {reason!r}")
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))
