"""The monitoring section: the environment's scheduled check and what it samples."""

from __future__ import annotations

from pydantic import Field

from novapod.config.base import _Model


class Monitoring(_Model):
    """A check every few minutes (EventBridge Scheduler, a Lambda function in the private
    subnets) that samples each training plan's instance counts and each instance group's
    nodes into CloudWatch metrics (namespace novapod). Built only when the config has
    training plans or a HyperPod cluster."""

    enabled: bool = Field(
        True,
        description="Build the check; false removes it (nothing else depends on it).",
    )
    every_minutes: int = Field(5, ge=1, le=60, description="Minutes between two runs of the check.")
