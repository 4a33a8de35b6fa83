"""Lambda entry points of the TrainingPlan custom resource (CDK `Provider` framework).

CreateTrainingPlan is a non-refundable purchase with no idempotency token and no
cancel. So every event that may buy first describes the plan by its deterministic
name and adopts it when it exists; it sends CreateTrainingPlan at most once, on a
client that never retries it; and when that call fails in any way (even a lost
response) it describes again and adopts a plan that now exists instead of buying.
Delete never touches the plan. Decisions live in `decisions.py`; this module only
performs the calls they ask for and logs each decision as one JSON line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from . import decisions, offerings
from .decisions import PlanProperties, TrainingPlanError

CONNECT_TIMEOUT_SECONDS: float = 5
READ_TIMEOUT_SECONDS: float = 20
# The purchase waits longer for its answer: a lost answer costs a confirming describe.
CREATE_READ_TIMEOUT_SECONDS: float = 60
MAX_ATTEMPTS = 3
# A failed CreateTrainingPlan may still have bought the plan (lost response, 5xx):
# describe after each of these pauses before concluding that nothing was bought.
CONFIRM_DELAYS_SECONDS: tuple[float, ...] = (0, 2, 5)
# Top-level key of on_event's result; the Provider passes it to every is_complete.
WAIT_STARTED_AT = "WaitStartedAt"

T = TypeVar("T")


def _now() -> datetime:
    """The clock (tests replace it)."""
    return datetime.now(UTC)


def _sleep(seconds: float) -> None:
    """The pause between confirming describes (tests replace it)."""
    time.sleep(seconds)


def _client(
    service: str, *, max_attempts: int = MAX_ATTEMPTS, read_timeout: float | None = None
) -> Any:
    # `total_max_attempts` counts the first call; botocore's `max_attempts` counts only
    # retries, so `max_attempts: 1` would still send a purchase twice.
    config = Config(
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS if read_timeout is None else read_timeout,
    )
    return boto3.client(service, config=config)


def _log(decision: str, **fields: Any) -> None:
    print(json.dumps({"decision": decision, **fields}, default=str, sort_keys=True))


def _error_code(exc: BaseException) -> str | None:
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def _error_detail(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message") or "no message"
        return f"{_error_code(exc) or 'error'}: {message}"
    return f"{type(exc).__name__}: {exc}"


def _aws(action: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except (ClientError, BotoCoreError) as exc:
        raise TrainingPlanError(f"{action} failed ({_error_detail(exc)})") from exc


def _describe(sagemaker: Any, name: str) -> dict[str, Any] | None:
    """DescribeTrainingPlan, or None when no plan has that name."""
    try:
        return dict(sagemaker.describe_training_plan(TrainingPlanName=name))
    except (ClientError, BotoCoreError) as exc:
        if _error_code(exc) == "ResourceNotFound":
            return None
        raise TrainingPlanError(
            f"DescribeTrainingPlan for training plan {name} failed ({_error_detail(exc)})"
        ) from exc


# --- on_event ---------------------------------------------------------------------------


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request_type = event["RequestType"]
    if request_type == "Delete":
        return _retain(event)
    props = decisions.parse_properties(event["ResourceProperties"])
    keeps_name = request_type == "Update" and props.plan_name == event.get("PhysicalResourceId")
    _log(
        "start",
        request_type=request_type,
        plan_name=props.plan_name,
        mode=props.mode,
        keeps_name=keeps_name,
    )
    if not keeps_name:
        refusal = decisions.purchase_refusal(props)
        if refusal is not None:
            raise TrainingPlanError(refusal)
    sagemaker = _client("sagemaker")
    described = _describe(sagemaker, props.lookup_name)
    step = decisions.next_step(described, props, may_purchase=not keeps_name)
    if step == "adopt" and described is not None:
        _log("adopt", plan_name=described["TrainingPlanName"], status=described["Status"])
        return _result(props, described["TrainingPlanName"], described["TrainingPlanArn"], None)
    return _purchase(sagemaker, props)


def _retain(event: Mapping[str, Any]) -> dict[str, Any]:
    physical_id = event.get("PhysicalResourceId", "")
    _log(
        "retain",
        plan_name=physical_id,
        reason="SageMaker training plans cannot be cancelled or deleted; the plan (if it "
        "exists) stays in the account until it expires",
    )
    return {"PhysicalResourceId": physical_id}


def _result(
    props: PlanProperties, plan_name: str, plan_arn: str, purchased_at: datetime | None
) -> dict[str, Any]:
    data = {"PlanName": plan_name, "PlanArn": plan_arn}
    if purchased_at is not None:
        data["PurchasedAt"] = decisions.iso(purchased_at)
    return {
        "PhysicalResourceId": props.plan_name,
        "Data": data,
        WAIT_STARTED_AT: decisions.iso(_now()),
    }


def _purchase(sagemaker: Any, props: PlanProperties) -> dict[str, Any]:
    request = props.offering_request()
    ec2 = _client("ec2")
    found = _aws(
        f"searching offerings for training plan {props.plan_name}",
        lambda: offerings.find(sagemaker, ec2, request),
    )
    chosen = found.chosen
    if chosen is None:
        raise TrainingPlanError(
            decisions.no_offering_message(request, found.offerings, found.zone_name_to_id)
        )
    refusal = decisions.check_fee_cap(
        chosen, props.max_upfront_fee, props.currency, candidates=found.candidates
    )
    if refusal is not None:
        raise TrainingPlanError(refusal)
    _log(
        "purchase",
        plan_name=props.plan_name,
        offering_id=chosen["TrainingPlanOfferingId"],
        upfront_fee=chosen.get("UpfrontFee"),
        currency=chosen.get("CurrencyCode"),
        zone=chosen["AvailabilityZone"],
        zone_id=chosen["AvailabilityZoneId"],
        start=decisions.iso(decisions.offering_start(chosen)),
        policy=request.choice_policy,
        offerings=len(found.offerings),
        candidates=len(found.candidates),
    )
    kwargs: dict[str, Any] = {
        "TrainingPlanName": props.plan_name,
        "TrainingPlanOfferingId": chosen["TrainingPlanOfferingId"],
    }
    if props.tags:
        kwargs["Tags"] = props.tag_list()
    # One attempt only: botocore must never resend a purchase on its own.
    buyer = _client("sagemaker", max_attempts=1, read_timeout=CREATE_READ_TIMEOUT_SECONDS)
    purchased_at = _now()
    try:
        arn = buyer.create_training_plan(**kwargs)["TrainingPlanArn"]
    except Exception as exc:
        return _after_failed_create(sagemaker, props, exc, purchased_at)
    _log("bought", plan_name=props.plan_name, plan_arn=arn)
    return _result(props, props.plan_name, arn, purchased_at)


def _after_failed_create(
    sagemaker: Any, props: PlanProperties, exc: Exception, purchased_at: datetime
) -> dict[str, Any]:
    """Adopt the plan if the failed call (or a rival) made it; never buy again."""
    name = props.plan_name
    detail = _error_detail(exc)
    _log("create-failed", plan_name=name, error=detail)
    plan = None
    try:
        for delay in CONFIRM_DELAYS_SECONDS:
            _sleep(delay)
            plan = _describe(sagemaker, name)
            if plan is not None:
                break
    except TrainingPlanError as describe_error:
        raise TrainingPlanError(
            f"CreateTrainingPlan for training plan {name} failed ({detail}) and so did "
            f"describing it ({describe_error}); re-run the deploy, which describes the plan "
            "first and never buys it twice"
        ) from exc
    if plan is None:
        raise TrainingPlanError(
            f"CreateTrainingPlan for training plan {name} failed ({detail}) and "
            "DescribeTrainingPlan finds no plan of that name, so nothing was bought; re-run "
            "the deploy, which describes the plan first and never buys it twice"
        ) from exc
    decisions.validate_plan(plan, props)
    # ResourceInUse: the plan existed before our call, so this event did not buy it.
    ours = _error_code(exc) != "ResourceInUse"
    _log("adopt-after-failed-create", plan_name=name, bought_by_this_event=ours)
    return _result(props, name, plan["TrainingPlanArn"], purchased_at if ours else None)


# --- is_complete ------------------------------------------------------------------------


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = decisions.parse_properties(event["ResourceProperties"])
    name = props.lookup_name
    bought_at = (event.get("Data") or {}).get("PurchasedAt")
    since = decisions.as_utc(bought_at or event.get(WAIT_STARTED_AT)) or _now()
    plan = _describe(_client("sagemaker"), name)
    if plan is None and not bought_at:
        raise TrainingPlanError(f"training plan {name} no longer exists")
    # A plan bought moments ago may not be visible yet: wait for it like for Pending.
    verdict = decisions.status_verdict(plan) if plan is not None else "pending"
    if plan is not None and verdict == "ready":
        decisions.validate_plan(plan, props)
        ec2 = _client("ec2")
        zones = _aws("DescribeAvailabilityZones", lambda: offerings.zone_name_to_id(ec2))
        data = decisions.plan_data(plan, zones, props.subnet_ids_by_zone_id)
        _log("ready", **data)
        return {"IsComplete": True, "Data": data}
    if decisions.pending_timed_out(since, _now(), props.pending_timeout_seconds):
        raise TrainingPlanError(decisions.pending_timeout_message(name))
    _log("wait", plan_name=name, status=plan and plan.get("Status"), since=decisions.iso(since))
    return {"IsComplete": False}
