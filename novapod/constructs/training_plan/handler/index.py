"""Lambda entry points of the TrainingPlan custom resource (CDK `Provider` framework).

CreateTrainingPlan is a non-refundable purchase with no idempotency token and no
cancel. So every event that may buy first describes the plan by its deterministic
name and adopts it when it exists; it checks the chosen offering against the request
before buying; it sends CreateTrainingPlan at most once, on a client that never
retries it; and when that call fails it classifies the failure: a refusal bought
nothing, an ambiguous failure (5xx, timeout, lost answer) is followed by describes
that adopt a plan that now exists, and otherwise says the plan may have been bought.
An `extend` on the plan (ExtendTrainingPlan, which has no token at all) is bought the
same way: approved by name before any call, only what the plan's extension history and
end time do not show yet, within its own cap, at most once per event, and only under a
durable marker tagged on the plan before the call (`marker.py`): an event that finds a
purchase marked but not shown waits for it and never buys past it. Delete never touches
the plan nor undoes an extension. Decisions live in `decisions.py`, `extension.py` and
`marker.py`; this module only
performs the calls they ask for and logs every step as one JSON line (the Lambda's
CloudWatch log group is where a `cdk deploy` user follows a purchase).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from . import decisions, extension, marker, offerings
from .decisions import PlanProperties, TrainingPlanError
from .extension import ExtensionProperties

CONNECT_TIMEOUT_SECONDS: float = 5
READ_TIMEOUT_SECONDS: float = 20
# The purchase waits longer for its answer: a lost answer costs a confirming describe.
CREATE_READ_TIMEOUT_SECONDS: float = 60
MAX_ATTEMPTS = 3
# After an ambiguous CreateTrainingPlan failure the plan may exist already: describe
# after each of these pauses before saying it may have been bought.
CONFIRM_DELAYS_SECONDS: tuple[float, ...] = (0, 2, 5)
# Top-level key of on_event's result; the Provider passes it to every is_complete.
WAIT_STARTED_AT = "WaitStartedAt"

T = TypeVar("T")


class DescribeError(TrainingPlanError):
    """DescribeTrainingPlan failed (after botocore's retries); `detail` names the error."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


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


def _log(step: str, message: str, **fields: Any) -> None:
    """One JSON line per step: Lambda sends stdout to the function's log group."""
    record = {"step": step, "message": message, **dict(sorted(fields.items()))}
    print(json.dumps(record, default=str))


def _error_code(exc: BaseException) -> str | None:
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def _http_status(exc: BaseException) -> int | None:
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return int(status) if isinstance(status, int) else None
    return None


def _error_detail(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message") or "no message"
        return f"{_error_code(exc) or 'error'}: {message}"
    return f"{type(exc).__name__}: {exc}"


def create_failure(exc: BaseException) -> decisions.CreateFailure:
    """The decision's view of a failed CreateTrainingPlan: class names, code, status."""
    return decisions.classify_create_failure(
        exception_names=[cls.__name__ for cls in type(exc).__mro__],
        error_code=_error_code(exc),
        http_status=_http_status(exc),
    )


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
        detail = _error_detail(exc)
        raise DescribeError(
            f"DescribeTrainingPlan for training plan {name} failed ({detail})", detail
        ) from exc


def _described(name: str, plan: Mapping[str, Any] | None) -> str:
    if plan is None:
        return f"training plan {name} does not exist"
    message = f" ({plan['StatusMessage']})" if plan.get("StatusMessage") else ""
    return f"training plan {name} exists and is {plan.get('Status')}{message}"


# --- on_event ---------------------------------------------------------------------------


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request_type = event["RequestType"]
    if request_type == "Delete":
        return _retain(event)
    props = decisions.parse_properties(event["ResourceProperties"])
    extend = extension.parse_extension(event["ResourceProperties"], props.lookup_name)
    keeps_name = request_type == "Update" and props.plan_name == event.get("PhysicalResourceId")
    _log(
        "start",
        f"{request_type} of training plan {props.plan_name} ({props.mode})",
        request_type=request_type,
        plan_name=props.plan_name,
        mode=props.mode,
        keeps_name=keeps_name,
    )
    if not keeps_name:
        refusal = decisions.purchase_refusal(props)
        if refusal is not None:
            _log("refuse", refusal, plan_name=props.plan_name)
            raise TrainingPlanError(refusal)
    if extend is not None:
        refusal = extension.extension_refusal(extend)
        if refusal is not None:
            _log("refuse", refusal, plan_name=props.plan_name, extension=extend.name)
            raise TrainingPlanError(refusal)
    sagemaker = _client("sagemaker")
    described = _describe(sagemaker, props.lookup_name)
    _log(
        "describe",
        _described(props.lookup_name, described),
        plan_name=props.lookup_name,
        status=described and described.get("Status"),
    )
    if extend is not None and described is None:
        message = extension.no_plan_message(props.lookup_name, extend)
        _log("refuse", message, plan_name=props.lookup_name, extension=extend.name)
        raise TrainingPlanError(message)
    step = decisions.next_step(described, props, may_purchase=not keeps_name)
    if step == "adopt" and described is not None:
        _log(
            "adopt",
            f"adopting training plan {described['TrainingPlanName']} ({described['Status']}); "
            "nothing is bought",
            plan_name=described["TrainingPlanName"],
            status=described["Status"],
        )
        if extend is not None:
            return _extend(sagemaker, props, extend, described)
        _log_kept_extensions(event, props)
        return _result(props, described["TrainingPlanName"], described["TrainingPlanArn"], None)
    return _purchase(sagemaker, props)


def _retain(event: Mapping[str, Any]) -> dict[str, Any]:
    physical_id = event.get("PhysicalResourceId", "")
    reason = (
        "SageMaker training plans cannot be cancelled or deleted; the plan (if it exists) "
        "stays in the account until it expires"
    )
    if "ExtendHours" in (event.get("ResourceProperties") or {}):
        reason += ", with every extension bought for it (extensions cannot be cancelled either)"
    _log("retain", f"keeping training plan {physical_id}: {reason}", plan_name=physical_id)
    return {"PhysicalResourceId": physical_id}


def _result(
    props: PlanProperties,
    plan_name: str,
    plan_arn: str,
    purchased_at: datetime | None,
    *,
    extended_at: datetime | None = None,
) -> dict[str, Any]:
    data = {"PlanName": plan_name, "PlanArn": plan_arn}
    if purchased_at is not None:
        data["PurchasedAt"] = decisions.iso(purchased_at)
    if extended_at is not None:
        data["ExtendedAt"] = decisions.iso(extended_at)
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
    _log(
        "search",
        f"SearchTrainingPlanOfferings found {len(found.offerings)} offerings for "
        f"{request.describe()}; {len(found.candidates)} fit the request",
        plan_name=props.plan_name,
        offered=[o.get("TrainingPlanOfferingId") for o in found.offerings],
        fitting=[o.get("TrainingPlanOfferingId") for o in found.candidates],
    )
    for offering_id, reasons in found.skipped:
        _log(
            "skip",
            f"offering {offering_id} skipped: {', '.join(reasons)}",
            plan_name=props.plan_name,
            offering_id=offering_id,
            reasons=list(reasons),
        )
    chosen = found.chosen
    if chosen is None:
        message = decisions.no_offering_message(
            request, found.offerings, found.zone_name_to_id, found.skipped
        )
        _log("refuse", message, plan_name=props.plan_name)
        raise TrainingPlanError(message)
    refusal = decisions.check_fee_cap(
        chosen,
        props.max_upfront_fee,
        props.currency,
        candidates=found.candidates,
        plan_name=props.plan_name,
    )
    if refusal is not None:
        _log("refuse", refusal, plan_name=props.plan_name)
        raise TrainingPlanError(refusal)
    offering_id = chosen["TrainingPlanOfferingId"]
    start = decisions.iso(decisions.offering_start(chosen))
    _log(
        "choose",
        f"chose offering {offering_id} ({request.choice_policy}): {chosen.get('UpfrontFee')} "
        f"{chosen.get('CurrencyCode')} within MaxUpfrontFee {props.max_upfront_fee} "
        f"{props.currency}, {request.instance_count} x {request.instance_type} in "
        f"{chosen['AvailabilityZone']} ({chosen['AvailabilityZoneId']}) from {start}",
        plan_name=props.plan_name,
        offering_id=offering_id,
        upfront_fee=chosen.get("UpfrontFee"),
        currency=chosen.get("CurrencyCode"),
        zone=chosen["AvailabilityZone"],
        zone_id=chosen["AvailabilityZoneId"],
        start=start,
        policy=request.choice_policy,
    )
    kwargs: dict[str, Any] = {
        "TrainingPlanName": props.plan_name,
        "TrainingPlanOfferingId": offering_id,
    }
    if props.tags:
        kwargs["Tags"] = props.tag_list()
    # One attempt only: botocore must never resend a purchase on its own.
    buyer = _client("sagemaker", max_attempts=1, read_timeout=CREATE_READ_TIMEOUT_SECONDS)
    _log(
        "create",
        f"calling CreateTrainingPlan for training plan {props.plan_name} with offering "
        f"{offering_id} (one attempt, never resent)",
        plan_name=props.plan_name,
        offering_id=offering_id,
    )
    purchased_at = _now()
    try:
        arn = buyer.create_training_plan(**kwargs)["TrainingPlanArn"]
    except Exception as exc:
        return _after_failed_create(sagemaker, props, exc, purchased_at)
    _log(
        "bought",
        f"bought training plan {props.plan_name} ({arn}); waiting until it is Scheduled",
        plan_name=props.plan_name,
        plan_arn=arn,
    )
    return _result(props, props.plan_name, arn, purchased_at)


def _after_failed_create(
    sagemaker: Any, props: PlanProperties, exc: Exception, purchased_at: datetime
) -> dict[str, Any]:
    """Say nothing was bought only when the service refused; else adopt or warn."""
    name = props.plan_name
    detail = _error_detail(exc)
    kind = create_failure(exc)
    _log(
        "create-failed",
        f"CreateTrainingPlan for training plan {name} failed ({detail}); classified as {kind}",
        plan_name=name,
        error=detail,
        kind=kind,
    )
    if kind == "refused":
        raise TrainingPlanError(
            decisions.refused_create_message(name, detail, _error_code(exc))
        ) from exc
    if kind == "not_sent":
        raise TrainingPlanError(decisions.not_sent_create_message(name, detail)) from exc
    plan, describe_error = _confirm(sagemaker, name)
    if plan is None:
        raise TrainingPlanError(
            decisions.ambiguous_create_message(name, detail, describe_error=describe_error)
        ) from exc
    decisions.validate_plan(plan, props)
    # ResourceInUse: the plan existed before our call, so this event did not buy it.
    ours = kind != "name_taken"
    _log(
        "adopt-after-failed-create",
        f"training plan {name} exists after the failed call ({plan.get('Status')}); adopting "
        "it without buying again",
        plan_name=name,
        bought_by_this_event=ours,
    )
    return _result(props, name, plan["TrainingPlanArn"], purchased_at if ours else None)


def _confirm(sagemaker: Any, name: str) -> tuple[dict[str, Any] | None, str | None]:
    """Describe after each pause; (the plan, None) once seen, else (None, the error of
    the describes when none of them answered)."""
    answered = False
    error: str | None = None
    for delay in CONFIRM_DELAYS_SECONDS:
        _sleep(delay)
        try:
            plan = _describe(sagemaker, name)
        except DescribeError as failed:
            error = failed.detail
            _log("confirm", f"describing training plan {name} failed ({error})", plan_name=name)
            continue
        answered = True
        _log("confirm", _described(name, plan), plan_name=name, after_seconds=delay)
        if plan is not None:
            return plan, None
    return None, (None if answered else error)


# --- extending the plan -----------------------------------------------------------------


def _log_kept_extensions(event: Mapping[str, Any], props: PlanProperties) -> None:
    """An update (or rollback) that drops or shrinks `extend` undoes nothing: say so."""
    old = event.get("OldResourceProperties") or {}
    try:
        was = extension.parse_extension(old, props.lookup_name) if old else None
    except TrainingPlanError:
        was = None
    if was is not None:
        _log(
            "keep-extension",
            extension.never_undone_message(props.lookup_name, was.hours, 0),
            plan_name=props.lookup_name,
            extension=was.name,
        )


def _history(sagemaker: Any, plan_arn: str) -> list[dict[str, Any]]:
    """Every extension DescribeTrainingPlanExtensionHistory lists (botocore's paginator)."""
    paginator = sagemaker.get_paginator("describe_training_plan_extension_history")
    entries: list[dict[str, Any]] = []
    for page in paginator.paginate(TrainingPlanArn=plan_arn):
        entries += page.get("TrainingPlanExtensions", [])
    return entries


def _markers(sagemaker: Any, plan_arn: str) -> list[marker.Marker]:
    """The purchase markers among the plan's tags (ListTags, botocore's paginator)."""
    paginator = sagemaker.get_paginator("list_tags")
    tags: list[dict[str, Any]] = []
    for page in paginator.paginate(ResourceArn=plan_arn):
        tags += page.get("Tags", [])
    return marker.parse_markers(tags)


def _marker_token() -> str:
    """New for every on_event invocation: a duplicated invocation writes its own key."""
    return uuid.uuid4().hex[:12]


def _refused_at_once(exc: BaseException) -> bool:
    """A 4xx refusal of the first attempt: a retried call may have been applied by an
    earlier attempt whose answer was lost (botocore counts RetryAttempts)."""
    if not isinstance(exc, ClientError) or create_failure(exc) != "refused":
        return False
    attempts = exc.response.get("ResponseMetadata", {}).get("RetryAttempts")
    return isinstance(attempts, int) and attempts == 0


def _delete_marker(sagemaker: Any, plan_arn: str, own: marker.Marker) -> str | None:
    """Delete this event's marker of a purchase that did not happen; the error, if any."""
    try:
        sagemaker.delete_tags(ResourceArn=plan_arn, TagKeys=[own.key])
    except (ClientError, BotoCoreError) as exc:
        detail = _error_detail(exc)
        _log("unmark-failed", f"deleting {own.key} failed ({detail})", marker=own.key)
        return detail
    _log("unmark", f"deleted {own.key}: this event bought nothing", marker=own.key)
    return None


def _extend(
    sagemaker: Any, props: PlanProperties, extend: ExtensionProperties, plan: dict[str, Any]
) -> dict[str, Any]:
    name, arn = plan["TrainingPlanName"], plan["TrainingPlanArn"]
    history = _aws(
        f"DescribeTrainingPlanExtensionHistory for training plan {name}",
        lambda: _history(sagemaker, arn),
    )
    seen = extension.extended_hours(plan, history, extend.bought_hours)
    markers = _aws(f"ListTags for training plan {name}", lambda: _markers(sagemaker, arn))
    before = marker.gate(markers, history, seen)
    missing = extension.missing_hours(before.counted, extend.hours)
    _log(
        "extension-history",
        f"training plan {name} is extended by {before.counted} h ({len(history)} extensions "
        f"listed, {len(markers)} purchase markers); {extend.name} asks for {extend.hours} h "
        f"in total, so {missing} h are missing",
        plan_name=name,
        extension=extend.name,
        extended_hours=before.counted,
        missing_hours=missing,
        markers=[m.key for m in markers],
    )
    if before.blocking:
        for waiting in before.blocking:
            _log(
                "await-marker", marker.waiting_message(waiting), plan_name=name, marker=waiting.key
            )
        return _result(props, name, arn, None)
    if missing == 0:
        message = f"extension {extend.name} is in place; nothing is bought"
        if before.counted > extend.hours:
            message = extension.never_undone_message(name, before.counted, extend.hours)
        _log("adopt-extension", message, plan_name=name, extension=extend.name)
        return _result(props, name, arn, None)
    if plan.get("Status") not in extension.EXTENDABLE_STATUSES:
        raise TrainingPlanError(extension.not_extendable_message(plan, extend))
    problem = extension.sellable_problem(name, extend, before.counted)
    if problem is not None:
        _log("refuse", problem, plan_name=name, extension=extend.name)
        raise TrainingPlanError(problem)
    offered = _aws(
        f"searching extension offerings for training plan {name}",
        lambda: sagemaker.search_training_plan_offerings(
            TrainingPlanArn=arn, DurationHours=missing
        ).get("TrainingPlanExtensionOfferings", []),
    )
    screening = extension.screen_extension_offerings(
        offered, hours=missing, currency=extend.currency, zones=extension.plan_zones(plan)
    )
    _log(
        "search-extension",
        f"SearchTrainingPlanOfferings found {len(offered)} extension offerings of {missing} h "
        f"for training plan {name}; {len(screening.candidates)} fit",
        plan_name=name,
        offered=[o.get("TrainingPlanExtensionOfferingId") for o in offered],
        skipped=[list(s) for s in screening.skipped],
    )
    chosen = extension.choose_extension(screening.candidates)
    if chosen is None:
        message = extension.no_extension_message(name, missing, offered, screening.skipped)
        _log("refuse", message, plan_name=name, extension=extend.name)
        raise TrainingPlanError(message)
    refusal = extension.extension_fee_refusal(chosen, extend, name)
    if refusal is not None:
        _log("refuse", refusal, plan_name=name, extension=extend.name)
        raise TrainingPlanError(refusal)
    offering_id = chosen["TrainingPlanExtensionOfferingId"]
    own = marker.new_marker(extend.name, extend.hours, offering_id, _marker_token())
    if not _mark_pending(sagemaker, own, plan=plan, before=before, history=history, seen=seen):
        return _result(props, name, arn, None)
    # One attempt only: botocore must never resend a purchase on its own.
    buyer = _client("sagemaker", max_attempts=1, read_timeout=CREATE_READ_TIMEOUT_SECONDS)
    _log(
        "extend",
        f"calling ExtendTrainingPlan for {extend.name} with offering {offering_id} "
        f"({chosen.get('UpfrontFee')} {chosen.get('CurrencyCode')} within "
        f"ExtensionMaxUpfrontFee {extend.max_upfront_fee} {extend.currency}; one attempt, "
        "never resent)",
        plan_name=name,
        extension=extend.name,
        offering_id=offering_id,
    )
    extended_at = _now()
    try:
        buyer.extend_training_plan(TrainingPlanExtensionOfferingId=offering_id)
    except Exception as exc:
        return _after_failed_extend(
            sagemaker, props, extend, own, plan=plan, exc=exc, extended_at=extended_at
        )
    _log(
        "extended",
        f"bought extension {extend.name} of training plan {name}; waiting until it shows",
        plan_name=name,
        extension=extend.name,
    )
    bought = own.as_bought()
    try:
        sagemaker.add_tags(ResourceArn=arn, Tags=[bought.tag()])
    except (ClientError, BotoCoreError) as exc:
        # Still `pending`: it resolves once the history lists the offering, and until
        # then no event buys past it. Nothing to undo, so the deploy goes on.
        _log(
            "mark-failed",
            f"marking {own.key} bought failed ({_error_detail(exc)}); it stays pending "
            f"until the history lists {offering_id}",
            marker=own.key,
        )
    else:
        _log("mark", f"marked {own.key} bought ({offering_id})", marker=own.key)
    return _result(props, name, arn, None, extended_at=extended_at)


def _mark_pending(
    sagemaker: Any,
    own: marker.Marker,
    *,
    plan: Mapping[str, Any],
    before: marker.Gate,
    history: list[dict[str, Any]],
    seen: int,
) -> bool:
    """Write this event's marker, then read the markers again (marker.py, steps 2-3):
    True to buy; False when another event got there first (its purchase is awaited)."""
    name, arn = plan["TrainingPlanName"], plan["TrainingPlanArn"]
    try:
        sagemaker.add_tags(ResourceArn=arn, Tags=[own.tag()])
    except (ClientError, BotoCoreError) as exc:
        message = marker.not_marked_message(own.extension_name, _error_detail(exc))
        # Unless refused at the first attempt, some attempt may have written it: delete it,
        # or say how to.
        if not _refused_at_once(exc):
            left = _delete_marker(sagemaker, arn, own)
            if left is not None:
                message += marker.stale_marker_note(arn, own.key, left)
        _log("refuse", message, plan_name=name, extension=own.extension_name)
        raise TrainingPlanError(message) from exc
    _log(
        "mark",
        f"marked extension {own.extension_name} pending with {own.key} ({own.offering_id}) "
        "before calling ExtendTrainingPlan",
        plan_name=name,
        marker=own.key,
    )
    try:
        # One attempt: a failure only means not buying now (the time budget's margin).
        reread = _markers(_client("sagemaker", max_attempts=1), arn)
    except (ClientError, BotoCoreError) as exc:
        message = marker.not_reread_message(own.extension_name, _error_detail(exc))
        left = _delete_marker(sagemaker, arn, own)
        if left is not None:
            message += marker.stale_marker_note(arn, own.key, left)
        raise TrainingPlanError(message) from exc
    reason = marker.back_off_reason(own, reread, before, history, seen)
    if reason is None:
        return True
    _log(
        "back-off",
        f"not calling ExtendTrainingPlan for {own.extension_name}: {reason}; this event buys "
        "nothing and waits for the other purchase to show",
        plan_name=name,
        marker=own.key,
    )
    left = _delete_marker(sagemaker, arn, own)
    if left is not None:
        raise TrainingPlanError(
            f"extension {own.extension_name} was not bought ({reason})"
            + marker.stale_marker_note(arn, own.key, left)
        )
    return False


def _after_failed_extend(
    sagemaker: Any,
    props: PlanProperties,
    extend: ExtensionProperties,
    own: marker.Marker,
    *,
    plan: dict[str, Any],
    exc: Exception,
    extended_at: datetime,
) -> dict[str, Any]:
    """A refusal bought nothing: delete the marker. Anything else may have bought it:
    the marker stays pending and is_complete waits until a read shows it."""
    name, arn = plan["TrainingPlanName"], plan["TrainingPlanArn"]
    detail = _error_detail(exc)
    kind = create_failure(exc)
    _log(
        "extend-failed",
        f"ExtendTrainingPlan for {extend.name} failed ({detail}); classified as {kind}",
        plan_name=name,
        extension=extend.name,
        error=detail,
        kind=kind,
    )
    if kind in ("refused", "not_sent"):
        message = (
            extension.refused_extend_message(extend.name, detail)
            if kind == "refused"
            else extension.not_sent_extend_message(extend.name, detail)
        )
        left = _delete_marker(sagemaker, arn, own)
        if left is not None:
            message += marker.stale_marker_note(arn, own.key, left)
        raise TrainingPlanError(message) from exc
    _log(
        "await-extension",
        f"ExtendTrainingPlan for {extend.name} may have bought it: {own.key} stays pending, "
        "so no event extends the plan again, and the deploy waits until the extension "
        "history or the end time shows it",
        plan_name=name,
        marker=own.key,
    )
    return _result(props, name, arn, None, extended_at=extended_at)


# --- is_complete ------------------------------------------------------------------------


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = decisions.parse_properties(event["ResourceProperties"])
    extend = extension.parse_extension(event["ResourceProperties"], props.lookup_name)
    name = props.lookup_name
    bought_at = (event.get("Data") or {}).get("PurchasedAt")
    since = decisions.as_utc(bought_at or event.get(WAIT_STARTED_AT)) or _now()
    timed_out = decisions.pending_timed_out(since, _now(), props.pending_timeout_seconds)
    try:
        plan = _describe(_client("sagemaker"), name)
    except DescribeError as failed:
        # A throttled or failing describe says nothing about the plan, which exists:
        # keep waiting; the Provider polls again.
        return _keep_waiting(name, since, timed_out, last_error=failed.detail)
    if plan is None and not bought_at:
        raise TrainingPlanError(f"training plan {name} no longer exists")
    # A plan bought moments ago may not be visible yet: wait for it like for Pending.
    verdict = decisions.status_verdict(plan, mode=props.mode) if plan is not None else "pending"
    _log(
        "poll",
        _described(name, plan) if plan is not None else f"training plan {name} is not visible yet",
        plan_name=name,
        status=plan and plan.get("Status"),
        since=decisions.iso(since),
    )
    if plan is not None and verdict == "ready":
        decisions.validate_plan(plan, props)
        ec2 = _client("ec2")
        try:
            zones = _aws("DescribeAvailabilityZones", lambda: offerings.zone_name_to_id(ec2))
        except TrainingPlanError as failed:
            return _keep_waiting(
                name,
                since,
                timed_out,
                last_error=str(failed),
                failing_call="DescribeAvailabilityZones",
            )
        data = decisions.plan_data(plan, zones, props.subnet_ids_by_zone_id)
        if extend is not None:
            extended = _extension_ready(event, plan, extend, since, timed_out)
            if extended is None:
                return {"IsComplete": False}
            data |= extended
        _log("ready", f"training plan {name} is {data['Status']}", **data)
        return {"IsComplete": True, "Data": data}
    return _keep_waiting(name, since, timed_out)


def _extension_ready(
    event: Mapping[str, Any],
    plan: Mapping[str, Any],
    extend: ExtensionProperties,
    since: datetime,
    timed_out: bool,
) -> dict[str, str] | None:
    """The extension's attributes once the plan shows it paid, else None (keep waiting)."""
    name, arn = str(plan["TrainingPlanName"]), str(plan["TrainingPlanArn"])
    extended_at = decisions.as_utc((event.get("Data") or {}).get("ExtendedAt"))
    try:
        history = _aws(
            f"DescribeTrainingPlanExtensionHistory for training plan {name}",
            lambda: _history(_client("sagemaker"), arn),
        )
    except TrainingPlanError as failed:
        _keep_waiting(
            name,
            since,
            timed_out,
            last_error=str(failed),
            failing_call="DescribeTrainingPlanExtensionHistory",
        )
        return None
    seen = extension.extended_hours(plan, history, extend.bought_hours)
    if seen < extend.hours:
        # A purchase marked on the plan but not shown yet: wait for it, never past it.
        try:
            # One attempt: the next poll is the retry (is_complete's time budget).
            markers = _markers(_client("sagemaker", max_attempts=1), arn)
        except (ClientError, BotoCoreError) as exc:
            _keep_waiting(
                name,
                since,
                timed_out,
                last_error=f"ListTags for training plan {name} failed ({_error_detail(exc)})",
                failing_call="ListTags",
            )
            return None
        waiting = marker.unresolved(markers, history, seen)
        if waiting:
            _log(
                "poll-extension",
                marker.waiting_message(waiting[0]),
                plan_name=name,
                marker=waiting[0].key,
                since=decisions.iso(since),
            )
            if timed_out:
                waited = int((_now() - since).total_seconds())
                raise TrainingPlanError(marker.marker_timeout_message(arn, waiting[0], waited))
            return None
    verdict = extension.extension_verdict(name, extend, history, seen, extended_at)
    _log(
        "poll-extension",
        f"training plan {name} is extended by {seen} h of {extend.hours} h ({verdict})",
        plan_name=name,
        extension=extend.name,
        since=decisions.iso(since),
    )
    if verdict == "ready":
        return extension.extension_data(extend, seen)
    if timed_out:
        raise TrainingPlanError(extension.extension_timeout_message(name, extend))
    return None


def _keep_waiting(
    name: str,
    since: datetime,
    timed_out: bool,
    *,
    last_error: str | None = None,
    failing_call: str = "DescribeTrainingPlan",
) -> dict[str, Any]:
    if timed_out:
        raise TrainingPlanError(
            decisions.pending_timeout_message(
                name, last_error=last_error, failing_call=failing_call
            )
        )
    if last_error is not None:
        _log(
            "poll",
            f"could not read training plan {name} ({last_error}); waiting and asking again",
            plan_name=name,
            error=last_error,
            since=decisions.iso(since),
        )
    return {"IsComplete": False}
