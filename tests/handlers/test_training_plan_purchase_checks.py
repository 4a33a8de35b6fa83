"""Pure decisions around the purchase itself: which offerings may be bought (checked
against the request before buying, ranked only in the fee cap's currency) and what a
failed CreateTrainingPlan means for the money (classified per botocore error kind)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore import exceptions as boto
from botocore.exceptions import ClientError

from novapod.constructs.training_plan.handler import decisions, index
from novapod.constructs.training_plan.handler.decisions import OfferingRequest
from tests.handlers.world import offering_request

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ZONES = {"us-east-1a": "use1-az4", "us-east-1b": "use1-az6", "us-east-1c": "use1-az1"}
SUBNETS = {"use1-az4": ("subnet-0a",), "use1-az6": ("subnet-0b",)}
URL = "https://api.sagemaker.us-east-1.amazonaws.com/"


def request(**overrides: Any) -> OfferingRequest:
    return offering_request(**{"subnet_ids_by_zone_id": SUBNETS, "currency": "USD", **overrides})


def segment(
    zone: str = "us-east-1a",
    *,
    count: int = 4,
    start_days: float = 1,
    hours: int = 48,
    instance_type: str = "ml.p5.48xlarge",
) -> dict[str, Any]:
    start = T0 + timedelta(days=start_days)
    return {
        "InstanceType": instance_type,
        "InstanceCount": count,
        "AvailabilityZone": zone,
        "DurationHours": hours,
        "StartTime": start,
        "EndTime": start + timedelta(hours=hours),
    }


def offering(
    offering_id: str = "tpo-a",
    *segments: dict[str, Any],
    fee: str = "100.00",
    currency: str | None = "USD",
    hours: int = 48,
    targets: tuple[str, ...] = ("hyperpod-cluster",),
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "TrainingPlanOfferingId": offering_id,
        "TargetResources": list(targets),
        "UpfrontFee": fee,
        "DurationHours": hours,
        "DurationMinutes": 0,
        "ReservedCapacityOfferings": list(segments) or [segment()],
    }
    if currency is not None:
        out["CurrencyCode"] = currency
    return out


# --- each offering is checked against the request before anything is bought ------------


def test_an_exact_offering_has_no_problems() -> None:
    assert decisions.offering_problems(offering(), request()) == []


@pytest.mark.parametrize(
    ("candidate", "problem"),
    [
        (offering("t", segment(count=2)), "it offers 2 instances in total, not 4"),
        (offering("t", segment(count=8)), "it offers 8 instances in total, not 4"),
        (
            offering("t", segment(instance_type="ml.p4d.24xlarge")),
            "its instance type is ml.p4d.24xlarge, not ml.p5.48xlarge",
        ),
        (
            offering("t", segment(hours=24), segment(start_days=3, hours=24)),
            "its capacity is split into 2 segments at different times (2030-01-02T00:00:00Z.."
            "2030-01-03T00:00:00Z, 2030-01-04T00:00:00Z..2030-01-05T00:00:00Z), not one "
            "continuous reservation",
        ),
        (offering("t", segment(hours=72), hours=72), "it lasts 72 h, not 48 h"),
        (
            offering("t", segment(hours=24)),
            "its capacity runs 24 h (2030-01-02T00:00:00Z to 2030-01-03T00:00:00Z), not 48 h",
        ),
        (
            offering("t", segment(start_days=-1)),
            "it starts 2029-12-31T00:00:00Z, before StartTimeAfter 2030-01-01T00:00:00Z",
        ),
        (
            offering("t", segment(start_days=30)),
            "it ends 2030-02-02T00:00:00Z, after EndTimeBefore 2030-01-31T00:00:00Z",
        ),
        (
            offering("t", targets=("training-job",)),
            "its target resources ['training-job'] lack hyperpod-cluster",
        ),
        (
            offering("t", currency="EUR"),
            "it is priced in EUR, not in USD (the currency of MaxUpfrontFee)",
        ),
        (
            offering("t", currency=None),
            "it is priced in no currency, not in USD (the currency of MaxUpfrontFee)",
        ),
        (offering("t", fee="ask us"), "its UpfrontFee 'ask us' is not a number"),
        ({**offering("t"), "ReservedCapacityOfferings": []}, "it lists no reserved capacity"),
        (
            offering("t", {**segment(), "StartTime": None}),
            "it lists no start or end time for its capacity",
        ),
    ],
)
def test_each_mismatch_is_named(candidate: dict[str, Any], problem: str) -> None:
    assert decisions.offering_problems(candidate, request()) == [problem]


def test_split_zones_count_across_segments_and_are_skipped_for_their_zones() -> None:
    split = offering("tpo-split", segment("us-east-1a", count=2), segment("us-east-1b", count=2))
    assert decisions.offering_problems(split, request()) == []  # 2 + 2 = 4 at one time
    screened = decisions.screen_offerings([split], request(), ZONES)
    assert screened.candidates == []
    assert screened.skipped == [
        ("tpo-split", ("its capacity spans 2 zones (us-east-1a, us-east-1b)",))
    ]


def test_an_offering_larger_than_the_request_is_skipped_however_it_is_split() -> None:
    # More instances is a larger purchase than the approved one, never bought: in one
    # segment, or in two at the same time (4 + 4, also in two zones).
    offered = [
        offering("tpo-eight", segment("us-east-1b", count=8), fee="1.00"),
        offering("tpo-twice", segment("us-east-1b"), segment("us-east-1b"), fee="2.00"),
        offering("tpo-wide", segment("us-east-1a"), segment("us-east-1b"), fee="3.00"),
        offering("tpo-ok", segment("us-east-1b"), fee="900.00"),
    ]
    screened = decisions.screen_offerings(offered, request(), ZONES)
    assert [c["TrainingPlanOfferingId"] for c in screened.candidates] == ["tpo-ok"]
    assert screened.skipped == [
        ("tpo-eight", ("it offers 8 instances in total, not 4",)),
        ("tpo-twice", ("it offers 8 instances in total, not 4",)),
        (
            "tpo-wide",
            (
                "it offers 8 instances in total, not 4",
                "its capacity spans 2 zones (us-east-1a, us-east-1b)",
            ),
        ),
    ]
    chosen = decisions.choose_offering(screened.candidates, "cheapest")
    assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-ok"


def test_screening_keeps_fitting_offerings_and_reports_every_skipped_one() -> None:
    offered = [
        offering("tpo-few", segment(count=2), fee="1.00"),
        offering("tpo-ok", segment("us-east-1b")),
        offering("tpo-far", segment("us-east-1c")),
        offering("tpo-eur", currency="EUR", fee="2.00"),
    ]
    screened = decisions.screen_offerings(offered, request(), ZONES)
    assert [
        (c["TrainingPlanOfferingId"], c["AvailabilityZoneId"]) for c in screened.candidates
    ] == [("tpo-ok", "use1-az6")]
    assert screened.skipped == [
        ("tpo-few", ("it offers 2 instances in total, not 4",)),
        ("tpo-far", ("its zone us-east-1c (use1-az1) has no private subnet of ours",)),
        ("tpo-eur", ("it is priced in EUR, not in USD (the currency of MaxUpfrontFee)",)),
    ]


def test_ranking_never_crosses_currencies() -> None:
    # Numerically the EUR and unpriced offerings are cheapest; neither can be chosen.
    offered = [
        offering("tpo-eur", fee="1.00", currency="EUR"),
        offering("tpo-none", fee="0.50", currency=None),
        offering("tpo-usd", fee="900.00"),
    ]
    screened = decisions.screen_offerings(offered, request(), ZONES)
    chosen = decisions.choose_offering(screened.candidates, "cheapest")
    assert chosen is not None and chosen["TrainingPlanOfferingId"] == "tpo-usd"
    assert [oid for oid, _ in screened.skipped] == ["tpo-eur", "tpo-none"]


def test_a_request_without_a_currency_keeps_any_currency() -> None:
    # `novapod offerings` before a fee cap exists lists every offering in our zones.
    offered = [offering("tpo-eur", currency="EUR")]
    assert decisions.screen_offerings(offered, request(currency=None), ZONES).skipped == []


def test_the_fee_cap_refusal_names_the_plan() -> None:
    refusal = decisions.check_fee_cap(
        offering("tpo-a", fee="150.00"),
        decisions.Decimal(100),
        "USD",
        plan_name="novapod-dev-main-0123456789",
    )
    assert refusal == (
        "the chosen offering tpo-a costs 150.00 USD, above MaxUpfrontFee 100 USD (the cheapest "
        "offering in our zones costs 150.00 USD), so training plan novapod-dev-main-0123456789 "
        "was not bought; raise the cap or change the request"
    )


# --- a failed CreateTrainingPlan --------------------------------------------------------


def client_error(code: str, status: int | None) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": f"{code} message"}}
    if status is not None:
        response["ResponseMetadata"] = {"HTTPStatusCode": status}
    return ClientError(response, "CreateTrainingPlan")


FAILURES: list[tuple[str, BaseException, decisions.CreateFailure]] = [
    # The service answered 4xx: it refused the work.
    ("ValidationException", client_error("ValidationException", 400), "refused"),
    ("ResourceLimitExceeded", client_error("ResourceLimitExceeded", 400), "refused"),
    ("ResourceNotFound", client_error("ResourceNotFound", 400), "refused"),
    ("AccessDeniedException", client_error("AccessDeniedException", 400), "refused"),
    ("AccessDenied 403", client_error("AccessDenied", 403), "refused"),
    ("ThrottlingException", client_error("ThrottlingException", 400), "refused"),
    ("TooManyRequests 429", client_error("TooManyRequestsException", 429), "refused"),
    # A plan of that name exists.
    ("ResourceInUse", client_error("ResourceInUse", 400), "name_taken"),
    # The service failed or may not have answered what it did.
    ("InternalFailure 500", client_error("InternalFailure", 500), "ambiguous"),
    ("502", client_error("BadGateway", 502), "ambiguous"),
    ("ServiceUnavailable 503", client_error("ServiceUnavailable", 503), "ambiguous"),
    ("504", client_error("GatewayTimeout", 504), "ambiguous"),
    ("RequestTimeout 400", client_error("RequestTimeout", 400), "ambiguous"),
    ("RequestTimeoutException", client_error("RequestTimeoutException", 408), "ambiguous"),
    ("PriorRequestNotComplete", client_error("PriorRequestNotComplete", 400), "ambiguous"),
    ("no HTTP status", client_error("InternalFailure", None), "ambiguous"),
    ("ReadTimeoutError", boto.ReadTimeoutError(endpoint_url=URL), "ambiguous"),
    ("ConnectionClosedError", boto.ConnectionClosedError(endpoint_url=URL), "ambiguous"),
    ("ResponseStreamingError", boto.ResponseStreamingError(error="reset"), "ambiguous"),
    (
        "IncompleteReadError",
        boto.IncompleteReadError(actual_bytes=1, expected_bytes=9),
        "ambiguous",
    ),
    ("HTTPClientError", boto.HTTPClientError(error="connection reset by peer"), "ambiguous"),
    ("SSLError", boto.SSLError(endpoint_url=URL, error="bad record mac"), "ambiguous"),
    (
        "ChecksumError",
        boto.ChecksumError(checksum_type="crc32", expected_checksum="1", actual_checksum="2"),
        "ambiguous",
    ),
    ("an answer that does not parse", ValueError("Expecting value"), "ambiguous"),
    # The request never left the client.
    ("EndpointConnectionError", boto.EndpointConnectionError(endpoint_url=URL), "not_sent"),
    ("ConnectTimeoutError", boto.ConnectTimeoutError(endpoint_url=URL), "not_sent"),
    ("ProxyConnectionError", boto.ProxyConnectionError(proxy_url="http://p"), "not_sent"),
    ("ParamValidationError", boto.ParamValidationError(report="bad"), "not_sent"),
    ("NoCredentialsError", boto.NoCredentialsError(), "not_sent"),
    (
        "PartialCredentialsError",
        boto.PartialCredentialsError(provider="env", cred_var="secret"),
        "not_sent",
    ),
    (
        "CredentialRetrievalError",
        boto.CredentialRetrievalError(provider="sso", error_msg="expired"),
        "not_sent",
    ),
    ("NoRegionError", boto.NoRegionError(), "not_sent"),
    (
        "UnknownEndpointError",
        boto.UnknownEndpointError(service_name="sagemaker", region_name="xx"),
        "not_sent",
    ),
    ("EndpointResolutionError", boto.EndpointResolutionError(msg="no"), "not_sent"),
]


@pytest.mark.parametrize(
    ("exc", "kind"), [(exc, kind) for _, exc, kind in FAILURES], ids=[n for n, _, _ in FAILURES]
)
def test_each_botocore_error_kind_is_classified(
    exc: BaseException, kind: decisions.CreateFailure
) -> None:
    assert index.create_failure(exc) == kind


def test_every_http_layer_error_after_connecting_is_ambiguous() -> None:
    # botocore raises these once the request may have reached the service.
    for cls in (boto.HTTPClientError, *boto.HTTPClientError.__subclasses__()):
        names = [c.__name__ for c in cls.__mro__]
        assert (
            decisions.classify_create_failure(
                exception_names=names, error_code=None, http_status=None
            )
            == "ambiguous"
        ), cls


def test_refusals_say_nothing_was_bought_and_how_to_go_on() -> None:
    plan = "novapod-dev-main-0123456789"
    assert decisions.refused_create_message(
        plan, "ResourceLimitExceeded: limit", "ResourceLimitExceeded"
    ) == (
        f"CreateTrainingPlan for training plan {plan} was refused (ResourceLimitExceeded: "
        "limit), so nothing was bought; the account is at a SageMaker training-plan quota: "
        "request a quota increase in Service Quotas (service Amazon SageMaker, search "
        "'training plan') and deploy again once it is granted"
    )
    assert decisions.refused_create_message(
        plan, "ValidationException: bad", "ValidationException"
    ).endswith(
        "so nothing was bought; fix the cause, then re-run the deploy, which describes the "
        "plan first and never buys it twice"
    )
    assert "fix its permissions" in decisions.refused_create_message(
        plan, "AccessDeniedException: no", "AccessDeniedException"
    )
    assert "no longer for sale" in decisions.refused_create_message(
        plan, "ResourceNotFound: gone", "ResourceNotFound"
    )
    assert decisions.not_sent_create_message(plan, "EndpointConnectionError: x") == (
        f"CreateTrainingPlan for training plan {plan} never reached SageMaker "
        "(EndpointConnectionError: x), so nothing was bought; re-run the deploy, which "
        "describes the plan first and never buys it twice"
    )


def test_an_ambiguous_failure_never_says_nothing_was_bought() -> None:
    plan = "novapod-dev-main-0123456789"
    message = decisions.ambiguous_create_message(plan, "InternalFailure: oops")
    assert message == (
        f"CreateTrainingPlan for training plan {plan} failed (InternalFailure: oops) and "
        "DescribeTrainingPlan does not show the plan yet, so it may have been bought: the next "
        "deploy adopts it if it exists; do not change the request until then"
    )
    assert "nothing was bought" not in message
    failed_describe = decisions.ambiguous_create_message(
        plan, "ReadTimeoutError: x", describe_error="ThrottlingException: Rate exceeded"
    )
    assert "describing it failed too (ThrottlingException: Rate exceeded), so it may have" in (
        failed_describe
    )


def test_a_failed_adopted_plan_says_to_adopt_another() -> None:
    failed = {"TrainingPlanName": "team-plan", "Status": "Failed", "StatusMessage": "declined"}
    with pytest.raises(decisions.TrainingPlanError) as caught:
        decisions.status_verdict(failed, mode="adopt")
    assert str(caught.value) == (
        "training plan team-plan is Failed (declined) and reserves no capacity; adopt another "
        "plan (existing_arn) or buy one"
    )


def test_pending_timeout_after_failing_describes_says_bought_and_adopted_next_time() -> None:
    assert decisions.pending_timeout_message("p", last_error="ThrottlingException: slow") == (
        "training plan p is bought, but DescribeTrainingPlan kept failing until the pending "
        "timeout (ThrottlingException: slow); pay the invoice if one is due: the next deploy "
        "adopts the plan and does not buy again"
    )


def test_the_timeout_names_the_call_that_kept_failing() -> None:
    message = decisions.pending_timeout_message(
        "p", last_error="UnauthorizedOperation", failing_call="DescribeAvailabilityZones"
    )
    assert message.startswith(
        "training plan p is bought, but DescribeAvailabilityZones kept failing until the "
        "pending timeout (UnauthorizedOperation)"
    )
