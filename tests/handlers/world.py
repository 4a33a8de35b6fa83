"""The handler tests' world: the fake AWS's standard zones and offerings, a fake
clock and CloudFormation-style resource properties."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from novapod.capacity.naming import extension_name
from novapod.constructs.training_plan.handler.decisions import OfferingRequest
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers.lifecycle import ProviderDriver, Stack

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ZONES = {
    "us-east-1a": "use1-az4",
    "us-east-1b": "use1-az6",
    "us-east-1c": "use1-az1",
    "us-east-1d": "use1-az2",
}
OUR_SUBNETS = {"use1-az4": ["subnet-0a"], "use1-az6": ["subnet-0b1", "subnet-0b2"]}
# Plan names end with the digest of what they buy (the handler recomputes it).
PLAN = "novapod-test-p5-6b8bb2d5"
# The purchase ledger the handlers claim in (created in the fake by the fixture).
LEDGER_TABLE = "novapod-test-PurchaseLedger"
ENVIRONMENT = "test"


def offering_request(**overrides: Any) -> OfferingRequest:
    """4 x ml.p5.48xlarge for 48 h within 30 days of T0, in our zones; fields overridable."""
    fields: dict[str, Any] = {
        "instance_type": "ml.p5.48xlarge",
        "instance_count": 4,
        "duration_hours": 48,
        "start_time_after": T0,
        "end_time_before": T0 + timedelta(days=30),
        "subnet_ids_by_zone_id": {z: tuple(s) for z, s in OUR_SUBNETS.items()},
    }
    fields.update(overrides)
    return OfferingRequest(**fields)


OTHER_PLAN = "novapod-test-p5-10b11e9f"  # 72 h


class FakeClock:
    """The handler's clock; the driver and the handler's pauses advance it, nothing sleeps."""

    def __init__(self, start: datetime) -> None:
        self.moment = start

    def now(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


@dataclass
class World:
    """The fake AWS with a standard set of zones and offerings, plus the driver."""

    plane: FakeControlPlane
    clock: FakeClock
    driver: ProviderDriver
    # Real sleeps requested while the world ran (time.sleep is recorded): the handler's
    # pauses go to the clock, so only botocore's short backoffs may appear here.
    slept: list[float] = field(default_factory=list)

    def stack(self) -> Stack:
        return Stack(self.driver)

    def ledger(self) -> list[dict[str, Any]]:
        """The purchase ledger's items, plain values, in key order."""
        return self.plane.dynamodb.items(LEDGER_TABLE)

    @staticmethod
    def props(**overrides: Any) -> dict[str, Any]:
        """Purchase-mode properties as CloudFormation passes them (scalars as strings).

        An override of None removes the property.
        """
        props: dict[str, Any] = {
            "Mode": "purchase",
            "PlanName": PLAN,
            "InstanceType": "ml.p5.48xlarge",
            "InstanceCount": "4",
            "DurationHours": "48",
            "StartTimeAfter": "2030-01-01T00:00:00Z",
            "EndTimeBefore": "2030-01-31T00:00:00Z",
            "TargetResources": ["hyperpod-cluster"],
            "ChoicePolicy": "cheapest",
            "ApprovedPlanName": PLAN,
            "MaxUpfrontFee": "100000",
            "Currency": "USD",
            "PendingTimeoutSeconds": "600",
            "SubnetIdsByZoneId": json.dumps(OUR_SUBNETS),
            "Tags": [{"Key": "project", "Value": "novapod"}],
            "LedgerTable": LEDGER_TABLE,
            "Environment": ENVIRONMENT,
        }
        props.update(overrides)
        if "PlanName" in overrides and "ApprovedPlanName" not in overrides:
            # A new plan name comes with its new approval (validation demands one).
            props["ApprovedPlanName"] = overrides["PlanName"]
        return {k: v for k, v in props.items() if v is not None}

    @staticmethod
    def extend_props(hours: int = 48, **overrides: Any) -> dict[str, Any]:
        """Purchase-mode properties plus an approved extension by `hours` in total."""
        name = extension_name(PLAN, hours)
        fields: dict[str, Any] = {
            "ExtendHours": str(hours),
            "ExtensionName": name,
            "ApprovedExtensionName": name,
            "ExtensionMaxUpfrontFee": "40000",
            "ExtensionCurrency": "USD",
            **overrides,
        }
        return World.props(**fields)

    @staticmethod
    def adopt_props(arn: str, **overrides: Any) -> dict[str, Any]:
        props: dict[str, Any] = {
            "Mode": "adopt",
            "PlanName": arn.rsplit("/", 1)[-1],
            "ExistingArn": arn,
            "InstanceType": "ml.p5.48xlarge",
            "InstanceCount": "4",
            "SubnetIdsByZoneId": OUR_SUBNETS,
            "LedgerTable": LEDGER_TABLE,
            "Environment": ENVIRONMENT,
        }
        props.update(overrides)
        if "PlanName" in overrides and "ApprovedPlanName" not in overrides:
            # A new plan name comes with its new approval (validation demands one).
            props["ApprovedPlanName"] = overrides["PlanName"]
        return {k: v for k, v in props.items() if v is not None}


def extension_offerings(plane: FakeControlPlane) -> None:
    """Extensions of PLAN (bought from tpo-cheap, in us-east-1b): tpeo-cheap (48 h,
    30000) fits; tpeo-dear costs more, tpeo-eur and tpeo-elsewhere are listed for any
    search and never fit; tpeo-24h and tpeo-96h sell other lengths."""
    plane.add_extension_offering(PLAN, "tpeo-dear", hours=48, fee="45000.00", zone="us-east-1b")
    plane.add_extension_offering(PLAN, "tpeo-cheap", hours=48, fee="30000.00", zone="us-east-1b")
    plane.add_extension_offering(PLAN, "tpeo-24h", hours=24, fee="16000.00", zone="us-east-1b")
    plane.add_extension_offering(PLAN, "tpeo-96h", hours=96, fee="58000.00", zone="us-east-1b")
    plane.add_extension_offering(
        PLAN, "tpeo-eur", hours=48, fee="1.00", currency="EUR", zone="us-east-1b", near_match=True
    )
    plane.add_extension_offering(
        PLAN, "tpeo-elsewhere", hours=48, fee="2.00", zone="us-east-1a", near_match=True
    )


def standard_offerings(plane: FakeControlPlane) -> None:
    """Four 4 x p5 48 h offerings: only two sit in one zone of ours.

    tpo-cheap (us-east-1b, 90000) is the cheapest that fits; tpo-early (us-east-1a,
    120000) starts first; the cheaper ones are elsewhere or split over two zones.
    """
    plane.set_zones(ZONES)
    plane.add_offering(
        "tpo-elsewhere", zones=["us-east-1c"], start=T0 + timedelta(days=3), fee="50000.00"
    )
    plane.add_offering(
        "tpo-split",
        zones=["us-east-1a", "us-east-1b"],
        start=T0 + timedelta(days=2),
        fee="60000.00",
    )
    plane.add_offering(
        "tpo-cheap", zones=["us-east-1b"], start=T0 + timedelta(days=5), fee="90000.00"
    )
    plane.add_offering(
        "tpo-early", zones=["us-east-1a"], start=T0 + timedelta(days=1), fee="120000.00"
    )
    plane.add_offering(
        "tpo-cheap-72h",
        zones=["us-east-1a"],
        start=T0 + timedelta(days=4),
        fee="95000.00",
        duration_hours=72,
    )
