"""The purchase marker's pure decisions (handler/marker.py) and the fake's tag APIs."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from novapod.constructs.training_plan.handler import marker
from novapod.naming import extension_name
from tests.handlers.world import PLAN, World, extension_offerings

ARN = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}"
EXT48 = extension_name(PLAN, 48)
EXT96 = extension_name(PLAN, 96)
KEY_A = f"novapod-extension:{EXT48}:00000000000a"
KEY_B = f"novapod-extension:{EXT48}:00000000000b"


def tag(key: str, value: str) -> dict[str, str]:
    return {"Key": key, "Value": value}


def entry(offering: str, status: str = "Active", hours: int = 48) -> dict[str, Any]:
    return {"TrainingPlanExtensionOfferingId": offering, "Status": status, "DurationHours": hours}


def parsed(*tags: dict[str, str]) -> list[marker.Marker]:
    return marker.parse_markers(list(tags))


# --- keys and values -----------------------------------------------------------------------


def test_a_marker_is_written_as_a_tag_the_api_accepts() -> None:
    own = marker.new_marker(EXT48, 48, "tpeo-" + "a" * 64, "0123456789ab")
    assert own.tag() == {
        "Key": f"novapod-extension:{EXT48}:0123456789ab",
        "Value": "pending tpeo-" + "a" * 64,
    }
    assert own.as_bought().value == "bought tpeo-" + "a" * 64
    # The longest plan name (64) still makes a key within TagKey's 128 characters.
    longest = extension_name("p" * 64, 4368)
    assert len(marker.new_marker(longest, 4368, "x", "0123456789ab").key) <= 128


def test_a_value_keeps_only_what_the_tag_value_pattern_allows() -> None:
    odd = marker.new_marker(EXT48, 48, "tpeo-1!#$%&*?<>\n2", "0123456789ab")
    assert odd.value == "pending tpeo-12"
    assert len(marker.new_marker(EXT48, 48, "x" * 400, "t").value) == 256


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


# --- resolution ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "seen", "expected"),
    [
        ([], 0, "unseen"),
        ([entry("tpeo-1", "Pending")], 0, "shown"),  # listed (payment pending): bought
        ([entry("tpeo-1", "Failed")], 0, "failed"),  # listed only as Failed: nothing added
        ([entry("tpeo-1", "Failed"), entry("tpeo-1")], 48, "shown"),
        ([entry("tpeo-other")], 24, "unseen"),  # another extension, short of the total
        ([], 48, "shown"),  # the end time shows the total (history lagging)
    ],
)
def test_a_marker_resolves_when_either_read_shows_its_purchase(
    history: list[dict[str, Any]], seen: int, expected: str
) -> None:
    (pending,) = parsed(tag(KEY_A, "pending tpeo-1"))
    assert marker.outcome(pending, history, seen) == expected


def test_an_unreadable_marker_value_blocks_until_the_total_shows() -> None:
    (odd,) = parsed(tag(KEY_A, "edited by hand"))
    assert marker.gate([odd], [entry("hand")], 0).blocking == (odd,)
    assert marker.gate([odd], [], 48).blocking == ()


def test_the_gate_blocks_on_pending_and_counts_bought_markers_not_shown() -> None:
    pending, bought = parsed(tag(KEY_A, "pending tpeo-1"), tag(KEY_B, "bought tpeo-2"))
    assert marker.gate([pending, bought], [], 0) == marker.Gate((pending,), 48)
    assert marker.gate([bought], [], 0) == marker.Gate((), 48)
    assert marker.gate([bought], [entry("tpeo-2", "Failed")], 0) == marker.Gate((), 0)
    assert marker.gate([pending], [entry("tpeo-1")], 48) == marker.Gate((), 48)


def test_an_event_goes_on_only_if_its_second_read_finds_nothing_new() -> None:
    own = marker.new_marker(EXT48, 48, "tpeo-1", "00000000000a")
    before = marker.gate([], [], 0)
    assert marker.back_off_reason(own, [own], before, [], 0) is None
    assert marker.back_off_reason(own, [], before, [], 0) == (
        f"its own marker {own.key} is not listed yet"
    )
    # Both wrote before either read: each sees the other's pending marker.
    other = marker.new_marker(EXT48, 48, "tpeo-1", "00000000000b")
    assert marker.back_off_reason(own, [own, other], before, [], 0) == (
        f"{other.key} marks another purchase pending"
    )
    assert marker.back_off_reason(other, [own, other], before, [], 0) == (
        f"{own.key} marks another purchase pending"
    )
    # Another event bought (and marked it) between the two reads.
    done = other.as_bought()
    assert marker.back_off_reason(own, [own, done], before, [], 0) == (
        "another purchase was marked bought meanwhile (extended by 48 h, not 0 h)"
    )
    # A marker resolved before the first read changes nothing.
    old = marker.new_marker(EXT96, 96, "tpeo-old", "00000000000c").as_bought()
    history = [entry("tpeo-old", hours=96)]
    assert (
        marker.back_off_reason(own, [old, own], marker.gate([old], history, 96), history, 96)
        is None
    )


def test_the_timeout_sentence_says_how_to_check_and_how_to_clear() -> None:
    (pending,) = parsed(tag(KEY_A, "pending tpeo-1"))
    assert marker.marker_timeout_message(ARN, pending, 600) == (
        f"extension {EXT48} may have been bought: tag {KEY_A} on the training plan marks it "
        "pending (offering tpeo-1) and neither the plan's extension history nor its end time "
        "has shown it in 600 s, so no deploy extends the plan while that tag is there; check "
        f"with `aws sagemaker describe-training-plan-extension-history --training-plan-arn "
        f"{ARN}` and, only if it lists no extension tpeo-1, clear the marker with `aws "
        f"sagemaker delete-tags --resource-arn {ARN} --tag-keys {KEY_A}`, then deploy again"
    )
    assert marker.marker_timeout_message(ARN, pending.as_bought(), 600).startswith(
        f"extension {EXT48} was bought: tag {KEY_A} on the training plan marks it bought"
    )


# --- the fake's tag APIs ------------------------------------------------------------------


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
