"""Log retention: days (validated by the config) to CDK's enum, and log groups using it."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from novapod.config import LOG_RETENTION_DAYS

# CDK lists the finite retentions in ascending order, the same values CloudWatch
# offers; tests/constructs/test_log_retention.py checks every pair in a template.
_BY_DAYS = dict(
    zip(LOG_RETENTION_DAYS, [r for r in logs.RetentionDays if r.name != "INFINITE"], strict=True)
)


def retention(days: int) -> logs.RetentionDays:
    return _BY_DAYS[days]


def log_group(
    scope: Construct, id_: str, *, days: int, key: kms.IKey | None = None
) -> logs.LogGroup:
    """A log group of a function or build: set retention, removed with its stack."""
    return logs.LogGroup(
        scope,
        id_,
        retention=retention(days),
        encryption_key=key,
        removal_policy=RemovalPolicy.DESTROY,
    )
