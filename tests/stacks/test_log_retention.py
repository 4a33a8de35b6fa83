"""Every retention the config accepts maps to the same number of days in a template."""

from __future__ import annotations

from aws_cdk import App, Stack
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Template

from novapod.config import LOG_RETENTION_DAYS
from novapod.constructs.log_retention import retention


def test_every_retention_value_round_trips() -> None:
    stack = Stack(App(), "Retention")
    for days in LOG_RETENTION_DAYS:
        logs.LogGroup(stack, f"G{days}", retention=retention(days))
    groups = Template.from_stack(stack).find_resources("AWS::Logs::LogGroup")
    assert sorted(g["Properties"]["RetentionInDays"] for g in groups.values()) == sorted(
        LOG_RETENTION_DAYS
    )
