"""Lambda entry points of the TrainingPlan custom resource (CDK `Provider` framework).

CreateTrainingPlan is a non-refundable purchase with no idempotency token and no
cancel, ExtendTrainingPlan has no token at all. So every purchase is first claimed in
the purchase ledger (handler_core/ledger.py: a conditional write, before any search
result is acted on) and marked `calling` right before its one call, on a client that
never retries it; an event that finds the item claimed by a call, bought or ambiguous
never buys past it, and settles it from DescribeTrainingPlan or the extension history
(claims.py). A plan that exists under the deterministic name is adopted; the chosen
offering is checked against the request; a failed call is classified: a refusal bought
nothing, an ambiguous failure (5xx, timeout, lost answer) is awaited in is_complete
and otherwise reported as "may have been bought". An `extend` is approved by name
before any call and buys only what the plan's history, end time and ledger do not
show yet, within its own cap. Delete never touches the plan nor undoes an extension.
Decisions live in `decisions.py`, `extension.py` and `claims.py` (`marker.py` reads the
tags earlier versions wrote, for the migration); this module only performs the calls
they ask for and logs every step as one JSON line (the Lambda's CloudWatch log group
is where a `cdk deploy` user follows a purchase).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from ...handler_core import aws, errors, ledger, values

# The JSON log line, the clock and the pause between confirming describes (tests
# replace the last two).
from ...handler_core.values import log as _log
from ...handler_core.values import pause as _sleep
from ...handler_core.values import utc_now as _now
from . import claims, decisions, extension, marker, offerings
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
# The purchase ledger (DynamoDB) answers in milliseconds: short timeouts keep its reads
# and conditional writes (each settled by a read when its answer is lost) in budget.
LEDGER_CONNECT_TIMEOUT_SECONDS: float = 2
LEDGER_READ_TIMEOUT_SECONDS: float = 5
# Top-level key of on_event's result; the Provider passes it to every is_complete.
WAIT_STARTED_AT = "WaitStartedAt"
# Every plan novapod buys is tagged with its environment (NovapodConfig.resource_tags).
ENVIRONMENT_TAG = "novapod:environment"

T = TypeVar("T")


class DescribeError(aws.ReadError, TrainingPlanError):
    """DescribeTrainingPlan failed (after botocore's retries); `detail` names the error."""


def _client(
    service: str,
    *,
    max_attempts: int = MAX_ATTEMPTS,
    read_timeout: float | None = None,
    connect_timeout: float | None = None,
) -> Any:
    return aws.client(
        service,
        aws.Settings(
            max_attempts=max_attempts,
            connect_timeout=CONNECT_TIMEOUT_SECONDS if connect_timeout is None else connect_timeout,
            read_timeout=READ_TIMEOUT_SECONDS if read_timeout is None else read_timeout,
        ),
    )


def create_failure(exc: BaseException) -> decisions.CreateFailure:
    """The decision's view of a failed CreateTrainingPlan: class names, code, status."""
    return decisions.classify_create_failure(
        exception_names=[cls.__name__ for cls in type(exc).__mro__],
        error_code=errors.error_code(exc),
        http_status=errors.http_status(exc),
    )


def _aws(action: str, call: Callable[[], T]) -> T:
    return aws.call(action, call, TrainingPlanError)


def _describe(sagemaker: Any, name: str) -> dict[str, Any] | None:
    """DescribeTrainingPlan, or None when no plan has that name."""
    return aws.read(
        f"DescribeTrainingPlan for training plan {name}",
        lambda: sagemaker.describe_training_plan(TrainingPlanName=name),
        not_found="ResourceNotFound",
        error=DescribeError,
    )


def _described(name: str, plan: Mapping[str, Any] | None) -> str:
    if plan is None:
        return f"training plan {name} does not exist"
    message = f" ({plan['StatusMessage']})" if plan.get("StatusMessage") else ""
    return f"training plan {name} exists and is {plan.get('Status')}{message}"


# --- the purchase ledger ----------------------------------------------------------------


def _claimant() -> str:
    """New for every invocation (tests replace it)."""
    return ledger.new_claimant()


def _ledger(props: PlanProperties) -> ledger.Ledger:
    if not props.ledger_table or not props.environment:
        raise TrainingPlanError(
            ledger.missing_message(f"training plan {props.plan_name}", done="bought", acts="buys")
        )
    client = _client(
        "dynamodb",
        connect_timeout=LEDGER_CONNECT_TIMEOUT_SECONDS,
        read_timeout=LEDGER_READ_TIMEOUT_SECONDS,
    )
    return ledger.Ledger(client, props.ledger_table, props.environment, clock=_now)


def _read_entry(book: ledger.Ledger, kind: str, name: str, what: str) -> ledger.Entry | None:
    """The item, strongly read; fail closed (nothing bought) when it cannot be read."""
    try:
        return book.read(kind, name)
    except ledger.LedgerError as failed:
        message = ledger.unavailable_message(what, failed)
        _log("ledger-failed", message, purchase=ledger.purchase_key(kind, name))
        raise TrainingPlanError(message) from failed


def _settle(
    book: ledger.Ledger, entry: ledger.Entry, state: ledger.State, **fields: Any
) -> ledger.Entry:
    return ledger.settle(book, entry, state, log=_log, settled_by="the service", **fields)


def _claim(
    book: ledger.Ledger,
    kind: str,
    name: str,
    current: ledger.Entry | None,
    *,
    request_id: str,
    what: str,
    **fields: Any,
) -> ledger.Entry | None:
    """This invocation's claim, or None when another invocation claimed first."""
    try:
        claimed = book.claim(
            kind,
            name,
            current=current,
            request_id=request_id,
            claimant=_claimant(),
            fields=fields,
        )
    except ledger.ClaimConflictError as lost:
        _log(
            "claim-lost",
            f"another invocation claimed {ledger.purchase_key(kind, name)} first "
            f"({ledger.describe(lost.current) if lost.current else 'item gone'}); this event "
            "buys nothing and waits for that purchase",
            purchase=ledger.purchase_key(kind, name),
        )
        return None
    except ledger.LedgerError as failed:
        message = ledger.unavailable_message(what, failed)
        _log("ledger-failed", message, purchase=ledger.purchase_key(kind, name))
        raise TrainingPlanError(message) from failed
    _log(
        "claim",
        f"claimed {claimed.key} (attempt {claimed.attempt}) before searching",
        purchase=claimed.key,
        attempt=claimed.attempt,
        took_over=current is not None and current.state == ledger.CLAIMED,
    )
    return claimed


def _calling(
    book: ledger.Ledger, claimed: ledger.Entry, what: str, **fields: Any
) -> ledger.Entry | None:
    """`calling`, written right before the one purchase call; None when another
    invocation took the claim over meanwhile (then this one must not call)."""
    try:
        calling = book.advance(claimed, ledger.CALLING, **fields)
    except ledger.ClaimConflictError as lost:
        _log(
            "back-off",
            f"{claimed.key} moved before the purchase call "
            f"({ledger.describe(lost.current) if lost.current else 'item gone'}); this event "
            "does not call and buys nothing",
            purchase=claimed.key,
        )
        return None
    except ledger.LedgerError as failed:
        message = ledger.unavailable_message(what, failed)
        _log("ledger-failed", message, purchase=claimed.key)
        raise TrainingPlanError(message) from failed
    _log("ledger", f"recorded {calling.key} as calling", purchase=calling.key, **fields)
    return calling


def _release(book: ledger.Ledger, claimed: ledger.Entry, reason: str) -> None:
    """Nothing was called: give the claim up, so the next deploy need not take it over."""
    _settle(book, claimed, ledger.RELEASED, Detail=reason)


def _tags(sagemaker: Any, plan_arn: str) -> list[dict[str, Any]]:
    """The plan's tags (ListTags, botocore's paginator)."""
    paginator = sagemaker.get_paginator("list_tags")
    tags: list[dict[str, Any]] = []
    for page in paginator.paginate(ResourceArn=plan_arn):
        tags += page.get("Tags", [])
    return tags


def _plan_owner(sagemaker: Any, plan: Mapping[str, Any]) -> str | None:
    """The plan's novapod:environment tag (every plan novapod buys carries it)."""
    tags = _tags(sagemaker, plan["TrainingPlanArn"])
    return next((str(t.get("Value")) for t in tags if t.get("Key") == ENVIRONMENT_TAG), None)


def _refuse_foreign(sagemaker: Any, props: PlanProperties, plan: Mapping[str, Any]) -> None:
    """Never adopt another environment's plan into this ledger (names can collide)."""
    name = str(plan["TrainingPlanName"])
    owner = _aws(f"ListTags for training plan {name}", lambda: _plan_owner(sagemaker, plan))
    if owner is not None and owner != props.environment:
        message = claims.foreign_plan_message(name, owner, str(props.environment))
        _log("refuse", message, plan_name=name, owner=owner)
        raise TrainingPlanError(message)


def _record_existing(
    sagemaker: Any,
    book: ledger.Ledger,
    props: PlanProperties,
    plan: Mapping[str, Any],
    *,
    entry: ledger.Entry | None,
    request_id: str,
) -> None:
    """The plan exists: make the ledger say it is bought. A plan the ledger does not know
    (bought before the ledger, by a novapod that tagged markers) is adopted once its
    environment tag is ours; an unsettled item of ours is settled by the plan's presence."""
    name = str(plan["TrainingPlanName"])
    fields = {
        "Arn": plan["TrainingPlanArn"],
        "UpfrontFee": str(plan.get("UpfrontFee", "")),
        "Currency": str(plan.get("CurrencyCode", "")),
    }
    if entry is None:
        _refuse_foreign(sagemaker, props, plan)
        try:
            book.record(
                claims.PLAN,
                name,
                ledger.BOUGHT,
                request_id=request_id,
                claimant=_claimant(),
                fields={**fields, "Source": "adopted", "Approval": props.approved_plan_name},
            )
        except ledger.ClaimConflictError:
            return  # recorded meanwhile by another invocation
        except ledger.LedgerError as failed:
            message = ledger.unavailable_message(f"training plan {name}", failed)
            raise TrainingPlanError(message) from failed
        _log("ledger", f"adopted plan#{name} into the purchase ledger as bought", plan_name=name)
    elif entry.state != ledger.BOUGHT:
        _settle(book, entry, ledger.BOUGHT, Source="reconciled", **fields)


# --- on_event ---------------------------------------------------------------------------


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request_type = event["RequestType"]
    if request_type == "Delete":
        return _retain(event)
    props = decisions.parse_properties(event["ResourceProperties"])
    extend = extension.parse_extension(event["ResourceProperties"], props.lookup_name)
    keeps_name = request_type == "Update" and props.plan_name == event.get("PhysicalResourceId")
    request_id = str(event.get("RequestId") or "")
    _log(
        "start",
        f"{request_type} of training plan {props.plan_name} ({props.mode})",
        request_type=request_type,
        plan_name=props.plan_name,
        mode=props.mode,
        keeps_name=keeps_name,
    )
    if not keeps_name:
        refusal = decisions.purchase_refusal(props) or decisions.name_problem(props)
        if refusal is not None:
            _log("refuse", refusal, plan_name=props.plan_name)
            raise TrainingPlanError(refusal)
    if extend is not None:
        refusal = extension.extension_refusal(extend)
        if refusal is not None:
            _log("refuse", refusal, plan_name=props.plan_name, extension=extend.name)
            raise TrainingPlanError(refusal)
    book = _ledger(props) if props.mode == "purchase" or extend is not None else None
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
    entry = None
    if props.mode == "purchase" and book is not None:
        entry = _read_entry(book, claims.PLAN, props.plan_name, f"training plan {props.plan_name}")
        _log(
            "ledger-read",
            ledger.describe(entry) if entry else f"plan#{props.plan_name} is not in the ledger",
            plan_name=props.plan_name,
        )
    if (
        described is None
        and entry is not None
        and entry.state in ledger.UNSETTLED | {ledger.BOUGHT}
    ):
        # A purchase may be (or is) under way: never buy past it; is_complete looks.
        _log(
            "await-purchase",
            f"{ledger.describe(entry)} and the plan is not visible yet: this event buys "
            "nothing and waits for it to show",
            plan_name=props.plan_name,
        )
        return _result(props, props.plan_name, "", None, awaiting=claims.PLAN)
    step = decisions.next_step(described, props, may_purchase=not keeps_name)
    if step == "adopt" and described is not None:
        _log(
            "adopt",
            f"adopting training plan {described['TrainingPlanName']} ({described['Status']}); "
            "nothing is bought",
            plan_name=described["TrainingPlanName"],
            status=described["Status"],
        )
        if book is not None and props.mode == "purchase":
            _record_existing(sagemaker, book, props, described, entry=entry, request_id=request_id)
        if extend is not None:
            assert book is not None
            if props.mode == "adopt":
                _refuse_foreign(sagemaker, props, described)
            return _extend(sagemaker, book, props, extend, described, request_id=request_id)
        _log_kept_extensions(event, props)
        return _result(props, described["TrainingPlanName"], described["TrainingPlanArn"], None)
    assert book is not None
    return _purchase(sagemaker, book, props, entry, request_id)


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
    awaiting: str | None = None,
) -> dict[str, Any]:
    """on_event's answer. `awaiting`: a purchase this event did not see through (another
    invocation's, or an ambiguous one) that is_complete must settle before anything."""
    data = {"PlanName": plan_name, "PlanArn": plan_arn}
    if purchased_at is not None:
        data["PurchasedAt"] = values.iso(purchased_at)
    if extended_at is not None:
        data["ExtendedAt"] = values.iso(extended_at)
    result: dict[str, Any] = {
        "PhysicalResourceId": props.plan_name,
        "Data": data,
        WAIT_STARTED_AT: values.iso(_now()),
    }
    if awaiting is not None:
        result[claims.AWAITING] = awaiting
    return result


def _purchase(
    sagemaker: Any,
    book: ledger.Ledger,
    props: PlanProperties,
    entry: ledger.Entry | None,
    request_id: str,
) -> dict[str, Any]:
    what = f"training plan {props.plan_name}"
    claimed = _claim(
        book,
        claims.PLAN,
        props.plan_name,
        entry,
        request_id=request_id,
        what=what,
        Approval=props.approved_plan_name,
    )
    if claimed is None:
        return _result(props, props.plan_name, "", None, awaiting=claims.PLAN)
    try:
        chosen = _choose_offering(sagemaker, props)
    except TrainingPlanError as refused:
        _release(book, claimed, str(refused))
        raise
    offering_id = chosen["TrainingPlanOfferingId"]
    kwargs: dict[str, Any] = {
        "TrainingPlanName": props.plan_name,
        "TrainingPlanOfferingId": offering_id,
    }
    if props.tags:
        kwargs["Tags"] = props.tag_list()
    # One attempt only: botocore must never resend a purchase on its own.
    buyer = _client("sagemaker", max_attempts=1, read_timeout=CREATE_READ_TIMEOUT_SECONDS)
    calling = _calling(
        book,
        claimed,
        what,
        OfferingId=offering_id,
        UpfrontFee=str(chosen.get("UpfrontFee", "")),
        Currency=str(chosen.get("CurrencyCode", "")),
        CallingAt=values.iso(_now()),
    )
    if calling is None:
        return _result(props, props.plan_name, "", None, awaiting=claims.PLAN)
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
        return _after_failed_create(
            sagemaker, book, calling, props, exc=exc, purchased_at=purchased_at
        )
    _settle(book, calling, ledger.BOUGHT, Arn=arn, BoughtAt=values.iso(purchased_at))
    _log(
        "bought",
        f"bought training plan {props.plan_name} ({arn}); waiting until it is Scheduled",
        plan_name=props.plan_name,
        plan_arn=arn,
    )
    return _result(props, props.plan_name, arn, purchased_at)


def _choose_offering(sagemaker: Any, props: PlanProperties) -> dict[str, Any]:
    """The offering to buy: searched, screened, chosen and within the cap, else raise."""
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
    start = values.iso(decisions.offering_start(chosen))
    _log(
        "choose",
        f"chose offering {chosen['TrainingPlanOfferingId']} ({request.choice_policy}): "
        f"{chosen.get('UpfrontFee')} {chosen.get('CurrencyCode')} within MaxUpfrontFee "
        f"{props.max_upfront_fee} {props.currency}, {request.instance_count} x "
        f"{request.instance_type} in {chosen['AvailabilityZone']} "
        f"({chosen['AvailabilityZoneId']}) from {start}",
        plan_name=props.plan_name,
        offering_id=chosen["TrainingPlanOfferingId"],
        upfront_fee=chosen.get("UpfrontFee"),
        currency=chosen.get("CurrencyCode"),
        zone=chosen["AvailabilityZone"],
        zone_id=chosen["AvailabilityZoneId"],
        start=start,
        policy=request.choice_policy,
    )
    return chosen


def _after_failed_create(
    sagemaker: Any,
    book: ledger.Ledger,
    calling: ledger.Entry,
    props: PlanProperties,
    *,
    exc: Exception,
    purchased_at: datetime,
) -> dict[str, Any]:
    """Say nothing was bought only when the service refused; else adopt or wait."""
    name = props.plan_name
    detail = errors.error_detail(exc)
    kind = create_failure(exc)
    _log(
        "create-failed",
        f"CreateTrainingPlan for training plan {name} failed ({detail}); classified as {kind}",
        plan_name=name,
        error=detail,
        kind=kind,
    )
    if kind == "refused":
        _settle(book, calling, ledger.REFUSED, Error=detail)
        raise TrainingPlanError(
            decisions.refused_create_message(name, detail, errors.error_code(exc))
        ) from exc
    if kind == "not_sent":
        _settle(book, calling, ledger.RELEASED, Detail=f"never sent: {detail}")
        raise TrainingPlanError(decisions.not_sent_create_message(name, detail)) from exc
    ambiguous = calling
    if kind == "ambiguous":
        ambiguous = _settle(book, calling, ledger.AMBIGUOUS, Error=detail)
    plan, describe_error = _confirm(sagemaker, name)
    if plan is None:
        # AWS may show the plan a minute or two later: is_complete keeps looking for
        # claims.RECONCILE_SECONDS before failing with "may have been bought".
        _log(
            "await-purchase",
            decisions.ambiguous_create_message(name, detail, describe_error=describe_error)
            + "; waiting for the plan to show",
            plan_name=name,
        )
        return _result(props, name, "", purchased_at, awaiting=claims.PLAN)
    # ResourceInUse: the plan existed before our call, so this event did not buy it.
    ours = kind != "name_taken"
    if not ours:
        _refuse_foreign(sagemaker, props, plan)
    _settle(
        book,
        ambiguous,
        ledger.BOUGHT,
        Arn=plan["TrainingPlanArn"],
        Source="confirmed" if ours else "existed",
        BoughtAt=values.iso(purchased_at),
    )
    _check_bought_plan(plan, props, bought=ours)
    _log(
        "adopt-after-failed-create",
        f"training plan {name} exists after the failed call ({plan.get('Status')}); adopting "
        "it without buying again",
        plan_name=name,
        bought_by_this_event=ours,
    )
    return _result(props, name, plan["TrainingPlanArn"], purchased_at if ours else None)


def _check_bought_plan(plan: Mapping[str, Any], props: PlanProperties, *, bought: bool) -> None:
    """validate_plan, saying so when the plan that does not fit was bought by us."""
    try:
        decisions.validate_plan(plan, props)
    except TrainingPlanError as unusable:
        # A Failed plan's purchase failed (its own message says how to buy anew).
        if not bought or plan.get("Status") == "Failed":
            raise
        raise TrainingPlanError(
            claims.unusable_bought_plan_message(str(plan.get("TrainingPlanName")), str(unusable))
        ) from unusable


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
    """The purchase markers earlier versions tagged on the plan."""
    return marker.parse_markers(_tags(sagemaker, plan_arn))


def _bought_hours(
    props: PlanProperties, extend: ExtensionProperties, plan: Mapping[str, Any]
) -> int:
    """The hours the plan was bought for: ours when we bought it, else the plan's own
    DurationHours (an adopted plan's config may say less than the plan has)."""
    if props.mode == "adopt" and isinstance(plan.get("DurationHours"), int):
        return int(plan["DurationHours"])
    return extend.bought_hours


def _extend(
    sagemaker: Any,
    book: ledger.Ledger,
    props: PlanProperties,
    extend: ExtensionProperties,
    plan: dict[str, Any],
    *,
    request_id: str,
) -> dict[str, Any]:
    name, arn = plan["TrainingPlanName"], plan["TrainingPlanArn"]
    what = f"extension {extend.name}"
    history = _aws(
        f"DescribeTrainingPlanExtensionHistory for training plan {name}",
        lambda: _history(sagemaker, arn),
    )
    entry = _read_entry(book, claims.EXTENSION, extend.name, what)
    _log(
        "ledger-read",
        ledger.describe(entry) if entry else f"extension#{extend.name} is not in the ledger",
        plan_name=name,
        extension=extend.name,
    )
    if entry is not None and entry.state in ledger.UNSETTLED:
        entry = _reconcile_extension(book, entry, history)
    if entry is not None and entry.state == ledger.BOUGHT:
        _log(
            "adopt-extension", f"{ledger.describe(entry)}; nothing is bought", extension=extend.name
        )
        return _result(props, name, arn, None, awaiting=claims.EXTENSION)
    if entry is not None and entry.state in ledger.UNSETTLED:
        _log(
            "await-extension",
            f"{ledger.describe(entry)} and the extension history does not show its outcome "
            "yet: this event buys nothing and waits for it",
            plan_name=name,
            extension=extend.name,
        )
        return _result(props, name, arn, None, awaiting=claims.EXTENSION)
    seen = extension.extended_hours(plan, history, _bought_hours(props, extend, plan))
    if entry is None:
        adopted = _adopt_legacy_extension(
            sagemaker, book, extend, plan, history=history, seen=seen, request_id=request_id
        )
        if adopted is not None:
            return _result(props, name, arn, None, awaiting=claims.EXTENSION)
    seen, others = _with_other_extensions(book, extend, plan, history, seen)
    claimed = _claim(
        book,
        claims.EXTENSION,
        extend.name,
        entry,
        request_id=request_id,
        what=what,
        Approval=extend.approved_name,
        Plan=name,
        Total=extend.hours,
    )
    if claimed is None:
        return _result(props, name, arn, None, awaiting=claims.EXTENSION)
    try:
        chosen, missing = _choose_extension(sagemaker, extend, plan, history, seen)
    except TrainingPlanError as refused:
        _release(book, claimed, str(refused))
        raise
    if chosen is None:  # the plan has the total already: nothing to buy
        _settle(book, claimed, ledger.BOUGHT, Source="adopted", Hours=seen)
        return _result(props, name, arn, None, awaiting=claims.EXTENSION)
    offering_id = chosen["TrainingPlanExtensionOfferingId"]
    # One attempt only: botocore must never resend a purchase on its own.
    buyer = _client("sagemaker", max_attempts=1, read_timeout=CREATE_READ_TIMEOUT_SECONDS)
    calling = _calling(
        book,
        claimed,
        what,
        OfferingId=offering_id,
        **claims.baseline_fields(
            history, offering_id, [*claimed.attempts, *claims.attempts_of(others)]
        ),
        Hours=missing,
        UpfrontFee=str(chosen.get("UpfrontFee", "")),
        Currency=str(chosen.get("CurrencyCode", "")),
        CallingAt=values.iso(_now()),
    )
    if calling is None:
        return _result(props, name, arn, None, awaiting=claims.EXTENSION)
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
            book, calling, props, extend, plan=plan, exc=exc, extended_at=extended_at
        )
    _settle(book, calling, ledger.BOUGHT, BoughtAt=values.iso(extended_at))
    _log(
        "extended",
        f"bought extension {extend.name} of training plan {name}; waiting until it shows",
        plan_name=name,
        extension=extend.name,
    )
    return _result(props, name, arn, None, extended_at=extended_at, awaiting=claims.EXTENSION)


def _with_other_extensions(
    book: ledger.Ledger,
    extend: ExtensionProperties,
    plan: Mapping[str, Any],
    history: list[dict[str, Any]],
    seen: int,
) -> tuple[int, list[ledger.Entry]]:
    """The hours the plan has (and its other extension items), counting what the
    ledger's other extensions of this plan bought (a total approved before, e.g. 48 h
    under a 96 h approval now): a bought one the history does not show yet counts by its
    total, as does one released by hand from calling or ambiguous; one whose outcome is
    unknown (or a claim that may still call) blocks the purchase: the hours are unknown."""
    name = str(plan["TrainingPlanName"])
    try:
        listed = book.entries(claims.EXTENSION)
    except ledger.LedgerError as failed:
        message = ledger.unavailable_message(f"extension {extend.name}", failed)
        _log("ledger-failed", message, extension=extend.name)
        raise TrainingPlanError(message) from failed
    others = [e for e in listed if e.get("Plan") == name and e.name != extend.name]
    for listed_other in others:
        other = listed_other
        if other.state in ledger.UNSETTLED:
            other = _reconcile_extension(book, other, history)
        if other.state in ledger.UNSETTLED | {ledger.CLAIMED}:
            message = claims.other_extension_blocks_message(extend.name, other)
            _log("refuse", message, plan_name=name, extension=extend.name, other=other.key)
            raise TrainingPlanError(message)
        counts = other.state == ledger.BOUGHT or (
            claims.released_unsettled(other)
            and claims.extension_outcome(other, history) != "failed"
        )
        if counts and claims.total_of(other) > seen:
            _log(
                "extension-ledger",
                f"{other.key} is {other.state} ({claims.total_of(other)} h in total) and the plan "
                f"shows {seen} h: counting {claims.total_of(other)} h",
                plan_name=name,
                extension=extend.name,
            )
            seen = claims.total_of(other)
    return seen, others


def _choose_extension(
    sagemaker: Any,
    extend: ExtensionProperties,
    plan: Mapping[str, Any],
    history: list[dict[str, Any]],
    seen: int,
) -> tuple[dict[str, Any] | None, int]:
    """(the extension offering to buy, the hours it adds), or (None, 0) when the plan
    already has the total; raise when nothing may be bought."""
    name, arn = plan["TrainingPlanName"], plan["TrainingPlanArn"]
    unknown = claims.unknown_hours(history)
    if unknown:
        raise TrainingPlanError(claims.unknown_hours_message(extend.name, unknown))
    missing = extension.missing_hours(seen, extend.hours)
    _log(
        "extension-history",
        f"training plan {name} is extended by {seen} h ({len(history)} extensions listed); "
        f"{extend.name} asks for {extend.hours} h in total, so {missing} h are missing",
        plan_name=name,
        extension=extend.name,
        extended_hours=seen,
        missing_hours=missing,
    )
    if missing == 0:
        message = f"extension {extend.name} is in place; nothing is bought"
        if seen > extend.hours:
            message = extension.never_undone_message(name, seen, extend.hours)
        _log("adopt-extension", message, plan_name=name, extension=extend.name)
        return None, 0
    if plan.get("Status") not in extension.EXTENDABLE_STATUSES:
        raise TrainingPlanError(extension.not_extendable_message(plan, extend))
    problem = extension.sellable_problem(name, extend, seen)
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
    return chosen, missing


def _reconcile_extension(
    book: ledger.Ledger, entry: ledger.Entry, history: list[dict[str, Any]]
) -> ledger.Entry:
    """Settle a `calling` or `ambiguous` extension item from the history, if it shows."""
    outcome = claims.extension_outcome(entry, history)
    _log(
        "reconcile",
        f"{ledger.describe(entry)}: the extension history shows its offering "
        f"{entry.get('OfferingId') or '?'} beyond the {entry.get('BaselineShown') or 0} earlier "
        f"entries as {outcome}",
        purchase=entry.key,
        outcome=outcome,
    )
    if outcome == "shown":
        return _settle(book, entry, ledger.BOUGHT, Source="reconciled")
    if outcome == "failed":
        return _settle(book, entry, ledger.FAILED, Error="the history lists it Failed")
    return entry


def _adopt_legacy_extension(
    sagemaker: Any,
    book: ledger.Ledger,
    extend: ExtensionProperties,
    plan: Mapping[str, Any],
    *,
    history: list[dict[str, Any]],
    seen: int,
    request_id: str,
) -> ledger.Entry | None:
    """An extension the ledger does not know: one bought before the ledger (shown by the
    plan, or pending under a tag marker of that version) is adopted into it without
    buying, and resolved markers are deleted; None when there is nothing to adopt."""
    arn = plan["TrainingPlanArn"]
    markers = _aws(
        f"ListTags for training plan {plan['TrainingPlanName']}", lambda: _markers(sagemaker, arn)
    )
    unresolved = claims.unresolved_markers(markers, history, seen)
    waiting = [m for m in unresolved if m.extension_name == extend.name]
    for other in (m for m in unresolved if m.extension_name != extend.name):
        # Another extension name's purchase may have happened: in the ledger it blocks
        # every extension of this plan until it is settled (_with_other_extensions).
        _record_marker(book, other, plan, history, request_id)
    adopted: ledger.Entry | None = None
    if seen >= extend.hours or waiting:
        state = ledger.BOUGHT if seen >= extend.hours else ledger.AMBIGUOUS
        fields: dict[str, Any] = {
            "Source": "adopted",
            "Plan": plan["TrainingPlanName"],
            "Hours": seen,
            "Total": extend.hours,
        }
        if state == ledger.AMBIGUOUS:
            fields |= _marker_fields(waiting[0], history)
        try:
            adopted = book.record(
                claims.EXTENSION,
                extend.name,
                state,
                request_id=request_id,
                claimant=_claimant(),
                fields=fields,
            )
        except ledger.ClaimConflictError as lost:
            adopted = lost.current
        except ledger.LedgerError as failed:
            raise TrainingPlanError(
                ledger.unavailable_message(f"extension {extend.name}", failed)
            ) from failed
        _log(
            "ledger",
            f"adopted extension#{extend.name} into the purchase ledger as {state}",
            extension=extend.name,
        )
        if state == ledger.BOUGHT:
            message = f"extension {extend.name} is in place; nothing is bought"
            if seen > extend.hours:
                message = extension.never_undone_message(
                    plan["TrainingPlanName"], seen, extend.hours
                )
            _log(
                "adopt-extension",
                message,
                plan_name=plan["TrainingPlanName"],
                extension=extend.name,
            )
    _delete_markers(sagemaker, arn, [m.key for m in markers if m not in unresolved])
    return adopted


def _marker_fields(old: marker.Marker, history: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "Source": "marker",
        "OfferingId": old.offering_id,
        **claims.baseline_fields(history, old.offering_id, ()),
        "Error": f"tag {old.key} of an earlier novapod marks it {old.state}",
    }


def _record_marker(
    book: ledger.Ledger,
    old: marker.Marker,
    plan: Mapping[str, Any],
    history: list[dict[str, Any]],
    request_id: str,
) -> None:
    """An unresolved marker of another extension name, recorded ambiguous (once)."""
    fields = {"Plan": plan["TrainingPlanName"], "Total": old.hours, **_marker_fields(old, history)}
    try:
        book.record(
            claims.EXTENSION,
            old.extension_name,
            ledger.AMBIGUOUS,
            request_id=request_id,
            claimant=_claimant(),
            fields=fields,
        )
    except ledger.ClaimConflictError:
        return  # recorded before
    except ledger.LedgerError as failed:
        raise TrainingPlanError(
            ledger.unavailable_message(f"extension {old.extension_name}", failed)
        ) from failed
    _log("ledger", f"recorded extension#{old.extension_name} as ambiguous ({old.key})")


def _delete_markers(sagemaker: Any, plan_arn: str, keys: list[str]) -> None:
    """Delete resolved markers of an earlier version in one call (each takes one of the
    plan's 50 tag slots); a failure only leaves them for the next deploy."""
    if not keys:
        return
    try:
        # One attempt (best effort, the time budget): the next deploy deletes the rest.
        _client("sagemaker", max_attempts=1).delete_tags(ResourceArn=plan_arn, TagKeys=keys)
    except aws.ERRORS as exc:
        _log("unmark-failed", errors.failed(f"deleting {', '.join(keys)}", exc))
        return
    _log("unmark", f"deleted the resolved purchase markers {', '.join(keys)}", markers=keys)


def _after_failed_extend(
    book: ledger.Ledger,
    calling: ledger.Entry,
    props: PlanProperties,
    extend: ExtensionProperties,
    *,
    plan: dict[str, Any],
    exc: Exception,
    extended_at: datetime,
) -> dict[str, Any]:
    """A refusal bought nothing: the item says refused. Anything else may have bought
    it: the item says ambiguous and is_complete waits until the history shows it."""
    name, arn = plan["TrainingPlanName"], plan["TrainingPlanArn"]
    detail = errors.error_detail(exc)
    kind = create_failure(exc)
    _log(
        "extend-failed",
        f"ExtendTrainingPlan for {extend.name} failed ({detail}); classified as {kind}",
        plan_name=name,
        extension=extend.name,
        error=detail,
        kind=kind,
    )
    if kind == "refused":
        _settle(book, calling, ledger.REFUSED, Error=detail)
        raise TrainingPlanError(extension.refused_extend_message(extend.name, detail)) from exc
    if kind == "not_sent":
        _settle(book, calling, ledger.RELEASED, Detail=f"never sent: {detail}")
        raise TrainingPlanError(extension.not_sent_extend_message(extend.name, detail)) from exc
    _settle(book, calling, ledger.AMBIGUOUS, Error=detail)
    _log(
        "await-extension",
        f"ExtendTrainingPlan for {extend.name} may have bought it: the ledger holds it "
        "ambiguous, so no event extends the plan again, and the deploy waits until the "
        "extension history shows it",
        plan_name=name,
        purchase=calling.key,
    )
    return _result(props, name, arn, None, extended_at=extended_at, awaiting=claims.EXTENSION)


# --- is_complete ------------------------------------------------------------------------


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = decisions.parse_properties(event["ResourceProperties"])
    extend = extension.parse_extension(event["ResourceProperties"], props.lookup_name)
    name = props.lookup_name
    bought_at = (event.get("Data") or {}).get("PurchasedAt")
    awaiting = event.get(claims.AWAITING)
    since = values.as_utc(bought_at or event.get(WAIT_STARTED_AT)) or _now()
    timed_out = values.timed_out(since, _now(), props.pending_timeout_seconds)
    try:
        plan = _describe(_client("sagemaker"), name)
    except DescribeError as failed:
        # A throttled or failing describe says nothing about the plan, which exists:
        # keep waiting; the Provider polls again.
        return _keep_waiting(name, since, timed_out, last_error=failed.detail)
    if plan is None and awaiting == claims.PLAN:
        return _await_plan(props, since)
    if plan is None and not bought_at:
        raise TrainingPlanError(f"training plan {name} no longer exists")
    if plan is not None and awaiting == claims.PLAN:
        _settle_seen_plan(props, plan, event)
    # A plan bought moments ago may not be visible yet: wait for it like for Pending.
    verdict = decisions.status_verdict(plan, mode=props.mode) if plan is not None else "pending"
    _log(
        "poll",
        _described(name, plan) if plan is not None else f"training plan {name} is not visible yet",
        plan_name=name,
        status=plan and plan.get("Status"),
        since=values.iso(since),
    )
    if plan is not None and verdict == "ready":
        _check_bought_plan(plan, props, bought=bool(bought_at))
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
            extended = _extension_ready(props, plan, extend, since=since, timed_out=timed_out)
            if extended is None:
                return {"IsComplete": False}
            data |= extended
        _log("ready", f"training plan {name} is {data['Status']}", **data)
        return {"IsComplete": True, "Data": data}
    return _keep_waiting(name, since, timed_out)


def _waited(since: datetime) -> int:
    return int((_now() - since).total_seconds())


def _await_plan(props: PlanProperties, since: datetime) -> dict[str, Any]:
    """The plan is not visible and a purchase may be under way: wait, never buy."""
    name = props.plan_name
    book = _ledger(props)
    try:
        entry = book.read(claims.PLAN, name)
    except ledger.LedgerError as failed:
        _log("poll", f"reading plan#{name} from the ledger failed ({failed})", plan_name=name)
        return {"IsComplete": False}
    waited = _waited(since)
    what = f"training plan {name}"
    # Within the Provider's total timeout (pending timeout + margin): our sentence, not
    # the framework's "Operation timed out".
    reconcile = min(claims.RECONCILE_SECONDS, props.pending_timeout_seconds)
    claim_wait = min(claims.CLAIM_WAIT_SECONDS, props.pending_timeout_seconds)
    _log("poll", ledger.describe(entry) if entry else f"plan#{name} is gone", plan_name=name)
    if entry is None or entry.state in ledger.RECLAIMABLE:
        raise TrainingPlanError(
            claims.other_attempt_ended_message(what, entry)
            if entry
            else f"{what} was not bought by this event: its ledger item is gone; deploy again"
        )
    if entry.state == ledger.CLAIMED and waited >= claim_wait:
        _release_stale_claim(book, entry, what, waited)
    if entry.state in ledger.UNSETTLED and waited >= reconcile:
        raise TrainingPlanError(claims.ambiguous_plan_message(name, entry, waited))
    if entry.state == ledger.BOUGHT and waited >= props.pending_timeout_seconds:
        raise TrainingPlanError(decisions.pending_timeout_message(name))
    return {"IsComplete": False}


def _release_stale_claim(book: ledger.Ledger, entry: ledger.Entry, what: str, waited: int) -> None:
    """Another invocation's claim has not moved for the wait: release it with a
    conditional write, then (only then) say nothing was bought, because its claimant's
    next write fails. If the item moved meanwhile, keep waiting (return)."""
    try:
        book.advance(
            entry,
            ledger.RELEASED,
            claimant=_claimant(),
            Detail=f"claim not called in {waited} s; released by the event waiting for it",
        )
    except (ledger.ClaimConflictError, ledger.LedgerError) as exc:
        _log("poll", f"releasing {entry.key} did not happen ({exc}); waiting", purchase=entry.key)
        return
    raise TrainingPlanError(claims.claim_released_message(what, entry, waited))


def _settle_seen_plan(
    props: PlanProperties, plan: Mapping[str, Any], event: Mapping[str, Any]
) -> None:
    """The plan a pending purchase awaited is visible: the ledger says bought."""
    try:
        book = _ledger(props)
        entry = book.read(claims.PLAN, props.plan_name)
    except (ledger.LedgerError, TrainingPlanError) as failed:
        _log("poll", f"reading plan#{props.plan_name} failed ({failed})", plan_name=props.plan_name)
        return
    if entry is not None and entry.state != ledger.BOUGHT:
        _settle(book, entry, ledger.BOUGHT, Arn=plan["TrainingPlanArn"], Source="reconciled")


def _extension_ready(
    props: PlanProperties,
    plan: Mapping[str, Any],
    extend: ExtensionProperties,
    *,
    since: datetime,
    timed_out: bool,
) -> dict[str, str] | None:
    """The extension's attributes once the plan shows it paid, else None (keep waiting)."""
    name, arn = str(plan["TrainingPlanName"]), str(plan["TrainingPlanArn"])
    try:
        history = _aws(
            f"DescribeTrainingPlanExtensionHistory for training plan {name}",
            lambda: _history(_client("sagemaker"), arn),
        )
        book = _ledger(props)
        entry = book.read(claims.EXTENSION, extend.name)
    except (TrainingPlanError, ledger.LedgerError) as failed:
        _keep_waiting(
            name,
            since,
            timed_out,
            last_error=str(failed),
            failing_call="DescribeTrainingPlanExtensionHistory or the purchase ledger",
        )
        return None
    seen = extension.extended_hours(plan, history, _bought_hours(props, extend, plan))
    waited = _waited(since)
    what = f"extension {extend.name}"
    reconcile = min(claims.RECONCILE_SECONDS, props.pending_timeout_seconds)
    if entry is not None and entry.state in ledger.UNSETTLED:
        entry = _reconcile_extension(book, entry, history)
        if entry.state in ledger.UNSETTLED:
            if waited >= reconcile:
                raise TrainingPlanError(
                    claims.ambiguous_extension_message(extend.name, arn, entry, waited)
                )
            return None
    if entry is None or entry.state in ledger.RECLAIMABLE:
        if entry is not None and entry.state == ledger.FAILED:
            raise TrainingPlanError(claims.failed_extension_message(extend.name, entry))
        raise TrainingPlanError(
            claims.other_attempt_ended_message(what, entry)
            if entry
            else f"{what} was not bought by this event: its ledger item is gone; deploy again"
        )
    if entry.state == ledger.CLAIMED:
        if waited >= min(claims.CLAIM_WAIT_SECONDS, props.pending_timeout_seconds):
            _release_stale_claim(book, entry, what, waited)
        return None
    ready = _bought_extension_shown(book, entry, history, extend, seen=seen, plan_name=name)
    _log(
        "poll-extension",
        f"training plan {name} is extended by {seen} h of {extend.hours} h "
        f"({ledger.describe(entry)}; {'ready' if ready else 'pending'})",
        plan_name=name,
        extension=extend.name,
        since=values.iso(since),
    )
    if ready:
        return extension.extension_data(extend, max(seen, extend.hours))
    if timed_out:
        raise TrainingPlanError(extension.extension_timeout_message(name, extend))
    return None


def _bought_extension_shown(
    book: ledger.Ledger,
    entry: ledger.Entry,
    history: list[dict[str, Any]],
    extend: ExtensionProperties,
    *,
    seen: int,
    plan_name: str,
) -> bool:
    """A bought extension is ready once the history shows its attempt paid (by offering
    and baseline); one adopted without them, once the plan has the total."""
    if not entry.get("OfferingId"):
        return claims.in_place(history, seen, extend.hours)
    outcome = claims.extension_outcome(entry, history)
    if outcome == "failed":
        _settle(book, entry, ledger.FAILED, Error="the history lists it Failed")
        raise TrainingPlanError(claims.failed_extension_message(extend.name, entry))
    if outcome == "shown":
        return claims.attempt_paid(entry, history)
    # Not listed yet, but the plan's end has moved by the total: the history lags.
    return seen >= extend.hours


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
            since=values.iso(since),
        )
    return {"IsComplete": False}
