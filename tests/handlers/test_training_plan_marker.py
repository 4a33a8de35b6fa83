"""The purchase markers earlier versions wrote (handler/marker.py): how they are read and
resolved for the migration to the ledger, and the fake's tag APIs."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from novapod.capacity.naming import extension_name
from novapod.constructs.training_plan.handler import claims, marker
from tests.handlers.world import PLAN, World, extension_offerings

ARN = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}"
EXT48 = extension_name(PLAN, 48)
KEY_A = f"novapod-extension:{EXT48}:00000000000a"
KEY_B = f"novapod-extension:{EXT48}:00000000000b"


def tag(key: str, value: str) -> dict[str, str]:
    return {"Key": key, "Value": value}


def entry(offering: str, status: str = "Active", hours: int = 48) -> dict[str, Any]:
    return {"TrainingPlanExtensionOfferingId": offering, "Status": status, "DurationHours": hours}


def parsed(*tags: dict[str, str]) -> list[marker.Marker]:
    return marker.parse_markers(list(tags))


# --- reading the markers earlier versions wrote ------------------------------------------


def test_markers_are_read_back_from_the_plans_tags_and_others_left_alone() -> None:
    found = parsed(
        tag("project", "novapod"),
        tag("novapod:environment", "dev"),
        tag(KEY_B, "bought tpeo-2"),
        tag(KEY_A, "pending tpeo-1"),
        tag("novapod-extension:not-an-extension:1", "pending x"),
    )
    assert found == [
        marker.Marker(KEY_A, EXT48, 48, "pending", "tpeo-1"),
        marker.Marker(KEY_B, EXT48, 48, "bought", "tpeo-2"),
    ]


# --- resolution (claims.unresolved_markers) ----------------------------------------------


@pytest.mark.parametrize(
    ("history", "seen", "unresolved"),
    [
        ([], 0, True),
        ([entry("tpeo-1", "Pending")], 0, False),  # listed (payment pending): bought
        # Listed only as Failed proves nothing: the slot a Failed payment frees can come
        # back with the same offering ID (issue 18's first double purchase).
        ([entry("tpeo-1", "Failed")], 0, True),
        ([entry("tpeo-1", "Failed"), entry("tpeo-1")], 48, False),
        ([entry("tpeo-other")], 24, True),  # another extension, short of the total
        ([], 48, False),  # the end time shows the total (history lagging)
    ],
)
def test_a_marker_is_resolved_only_by_a_non_failed_entry_or_the_total(
    history: list[dict[str, Any]], seen: int, unresolved: bool
) -> None:
    (pending,) = parsed(tag(KEY_A, "pending tpeo-1"))
    assert (claims.unresolved_markers([pending], history, seen) == [pending]) is unresolved


def _bought(world: World) -> Any:
    extension_offerings(world.plane)
    assert world.stack().create(world.props()).ok
    return boto3.client("sagemaker")


def test_the_fake_adds_lists_and_deletes_tags_of_a_plan(world: World) -> None:
    sagemaker = _bought(world)
    sagemaker.add_tags(ResourceArn=ARN, Tags=[tag(KEY_A, "pending tpeo-1")])
    sagemaker.add_tags(ResourceArn=ARN, Tags=[tag(KEY_A, "bought tpeo-1")])  # overwrites
    assert sagemaker.list_tags(ResourceArn=ARN)["Tags"] == [
        tag("project", "novapod"),  # given at purchase
        tag(KEY_A, "bought tpeo-1"),
    ]
    sagemaker.delete_tags(ResourceArn=ARN, TagKeys=[KEY_A, "never-there"])
    assert sagemaker.list_tags(ResourceArn=ARN)["Tags"] == [tag("project", "novapod")]


def test_the_fake_pages_tags_like_the_paginator_expects(world: World) -> None:
    sagemaker = _bought(world)
    world.plane.tag_page_size = 1  # the service's page is 50 or more; 1 shows the paging
    sagemaker.add_tags(ResourceArn=ARN, Tags=[tag(KEY_A, "pending a"), tag(KEY_B, "pending b")])
    pages = list(sagemaker.get_paginator("list_tags").paginate(ResourceArn=ARN))
    assert [p["Tags"] for p in pages] == [
        [tag("project", "novapod")],
        [tag(KEY_A, "pending a")],
        [tag(KEY_B, "pending b")],
    ]


@pytest.mark.parametrize(
    ("operation", "params", "fragment"),
    [
        ("list_tags", {"ResourceArn": ARN, "MaxResults": 10}, "greater than or equal to 50"),
        ("add_tags", {"ResourceArn": ARN, "Tags": [tag("k" * 129, "v")]}, "length less than"),
        ("add_tags", {"ResourceArn": ARN, "Tags": [tag("k", "a\nb")]}, "regular expression"),
        ("delete_tags", {"ResourceArn": ARN, "TagKeys": []}, "length greater than"),
        ("add_tags", {"ResourceArn": "training-plan/x", "Tags": []}, "regular expression"),
    ],
)
def test_the_fake_refuses_tag_requests_botocores_model_forbids(
    world: World, operation: str, params: dict[str, Any], fragment: str
) -> None:
    _bought(world)
    # Without botocore's own checks, the request reaches the fake as written.
    client = boto3.client("sagemaker", config=Config(parameter_validation=False))
    with pytest.raises(ClientError) as raised:
        getattr(client, operation)(**params)
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert fragment in raised.value.response["Error"]["Message"]


def test_the_fake_refuses_tags_of_a_plan_that_does_not_exist(world: World) -> None:
    sagemaker = _bought(world)
    with pytest.raises(ClientError) as raised:
        sagemaker.list_tags(ResourceArn=ARN.replace(PLAN, "no-such-plan"))
    assert raised.value.response["Error"]["Code"] == "ResourceNotFound"
