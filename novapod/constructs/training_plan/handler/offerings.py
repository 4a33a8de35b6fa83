"""Read-only offering search, shared by the handler and the `novapod offerings` command.

Thin over `decisions`: two AWS reads (SearchTrainingPlanOfferings and
DescribeAvailabilityZones), then the pure screening (each offering checked against the
request, skipped ones kept with their reasons) and choice. The clients are passed
in, so the CLI can use the user's credentials and the handler its own role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import decisions


@dataclass(frozen=True)
class OfferingSearch:
    """One search: what the service offered, the zone map, what fits, what to pick, and
    the offerings skipped with their reasons."""

    offerings: list[dict[str, Any]]
    zone_name_to_id: dict[str, str]
    candidates: list[dict[str, Any]]
    chosen: dict[str, Any] | None
    skipped: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


def zone_name_to_id(ec2_client: Any) -> dict[str, str]:
    """This account's zone names mapped to zone IDs (names differ between accounts)."""
    zones = ec2_client.describe_availability_zones()["AvailabilityZones"]
    return {z["ZoneName"]: z["ZoneId"] for z in zones if "ZoneName" in z and "ZoneId" in z}


def search(sagemaker_client: Any, request: decisions.OfferingRequest) -> list[dict[str, Any]]:
    """All offerings SageMaker has for the request, in the service's order."""
    response = sagemaker_client.search_training_plan_offerings(**request.search_kwargs())
    return list(response.get("TrainingPlanOfferings", []))


def find(
    sagemaker_client: Any, ec2_client: Any, request: decisions.OfferingRequest
) -> OfferingSearch:
    offered = search(sagemaker_client, request)
    zones = zone_name_to_id(ec2_client)
    screening = decisions.screen_offerings(offered, request, zones)
    return OfferingSearch(
        offerings=offered,
        zone_name_to_id=zones,
        candidates=screening.candidates,
        chosen=decisions.choose_offering(screening.candidates, request.choice_policy),
        skipped=screening.skipped,
    )


def candidates(
    sagemaker_client: Any, ec2_client: Any, request: decisions.OfferingRequest
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Offerings that fit, in one of our zones (annotated with zone and subnets), and the
    pick."""
    found = find(sagemaker_client, ec2_client, request)
    return found.candidates, found.chosen
