"""The monitoring and notifications sections: the environment's scheduled check (what it
samples, when it alerts) and who hears the alerts."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from novapod.config.base import _Model

# What SNS takes as an email endpoint: one address, no display name.
EMAIL_PATTERN = r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$"
Email = Annotated[str, StringConstraints(max_length=254, pattern=EMAIL_PATTERN)]


class Monitoring(_Model):
    """A check every few minutes (EventBridge Scheduler, a Lambda function in the private
    subnets) that samples each training plan's instance counts and each instance group's
    nodes into CloudWatch metrics (namespace novapod) and alerts through the environment's
    SNS topic. Built only when the config has training plans or a HyperPod cluster."""

    enabled: bool = Field(
        True,
        description="Build the check, its dashboard and the alerts; false removes them "
        "(nothing else depends on them).",
    )
    every_minutes: int = Field(5, ge=1, le=60, description="Minutes between two runs of the check.")
    idle_alert_minutes: int = Field(
        60,
        ge=5,
        le=7 * 24 * 60,
        description="Alert when an Active plan has had reserved instances unused for this "
        "many minutes (paid for, idle).",
    )
    ending_alert_days: int = Field(
        3,
        ge=1,
        le=30,
        description="Alert when an Active plan ends within this many days.",
    )


class Notifications(_Model):
    emails: list[Email] = Field(
        default_factory=list,
        description="Addresses subscribed to the environment's alert topic; each gets a "
        "confirmation email from SNS first and receives alerts once it is confirmed.",
        json_schema_extra={"uniqueItems": True},
    )

    @field_validator("emails")
    @classmethod
    def _once(cls, value: list[str]) -> list[str]:
        seen = [e.lower() for e in value]
        repeated = sorted({e for e in seen if seen.count(e) > 1})
        if repeated:
            raise ValueError(f"{repeated[0]} is listed twice; list each address once")
        return value
