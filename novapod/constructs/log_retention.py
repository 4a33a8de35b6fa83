"""Map a retention in days (validated by the config) to CDK's RetentionDays enum."""

from __future__ import annotations

from aws_cdk import aws_logs as logs

from novapod.config import LOG_RETENTION_DAYS

# CDK lists the finite retentions in ascending order, the same values CloudWatch
# offers; tests/constructs/test_log_retention.py checks every pair in a template.
_BY_DAYS = dict(
    zip(LOG_RETENTION_DAYS, [r for r in logs.RetentionDays if r.name != "INFINITE"], strict=True)
)


def retention(days: int) -> logs.RetentionDays:
    return _BY_DAYS[days]
