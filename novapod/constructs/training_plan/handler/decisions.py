"""Pure decisions of the TrainingPlan custom resource: no AWS calls, no boto3.

The handler (`index.py`) and the read-only `novapod offerings` command parse, filter,
choose and check here; they only perform the one call a decision asks for.
Everything a user may see as an error is one sentence in a `TrainingPlanError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any, Literal

from ...handler_core import names, values
from ...handler_core.values import as_utc, iso

ChoicePolicy = Literal["cheapest", "earliest"]
Mode = Literal["purchase", "adopt"]
Step = Literal["adopt", "purchase"]
Verdict = Literal["ready", "pending"]
# What a failed CreateTrainingPlan means for the money (see `classify_create_failure`).
CreateFailure = Literal["refused", "not_sent", "name_taken", "ambiguous"]
Window = tuple[datetime | None, datetime | None]

HYPERPOD_CLUSTER = "hyperpod-cluster"
TARGET_RESOURCES: tuple[str, ...] = (HYPERPOD_CLUSTER, "training-job")
CHOICE_POLICIES: tuple[str, ...] = ("cheapest", "earliest")
READY_STATUSES = frozenset({"Scheduled", "Active"})
DEFAULT_PENDING_TIMEOUT_SECONDS = 3000

# Bounds from the SageMaker service model (TrainingPlanName, ReservedCapacityInstanceCount,
# TrainingPlanDurationHoursInput, TagList).
_PLAN_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")
_PLAN_ARN = re.compile(
    r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/"
    r"(?P<name>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63})"
)
_CURRENCY = re.compile(r"[A-Z]{3}")
_MAX_INSTANCE_COUNT = 256
_MAX_DURATION_HOURS = 87600
_MAX_TAGS = 50
_NEVER = datetime.max.replace(tzinfo=UTC)
_NO_FEE = Decimal("Infinity")


class TrainingPlanError(Exception):
    """A failure reported to CloudFormation; its message is one clear sentence."""


class PropertyError(TrainingPlanError, ValueError):
    """A resource property that is missing or invalid; the message names it."""


# CloudFormation's properties (scalars as strings), each refused with a PropertyError.
_present = values.present
_required_str = partial(values.required_str, error=PropertyError)
_optional_str = partial(values.optional_str, error=PropertyError)
_json = partial(values.json_value, error=PropertyError)
_int = partial(values.whole_number, error=PropertyError)


@dataclass(frozen=True)
class OfferingRequest:
    """What to search for and how to pick; shared by the handler and the CLI.

    `subnet_ids_by_zone_id=None` keeps offerings in any single zone (the CLI before a
    VPC exists); a mapping keeps only zones where it lists at least one subnet.
    `currency` (the fee cap's) keeps only offerings priced in it; None keeps any.
    """

    instance_type: str
    instance_count: int
    duration_hours: int
    start_time_after: datetime | None = None
    end_time_before: datetime | None = None
    target_resources: tuple[str, ...] = (HYPERPOD_CLUSTER,)
    choice_policy: ChoicePolicy = "cheapest"
    subnet_ids_by_zone_id: Mapping[str, tuple[str, ...]] | None = None
    currency: str | None = None

    def search_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of SearchTrainingPlanOfferings."""
        kwargs: dict[str, Any] = {
            "InstanceType": self.instance_type,
            "InstanceCount": self.instance_count,
            "DurationHours": self.duration_hours,
            "TargetResources": list(self.target_resources),
        }
        if self.start_time_after is not None:
            kwargs["StartTimeAfter"] = self.start_time_after
        if self.end_time_before is not None:
            kwargs["EndTimeBefore"] = self.end_time_before
        return kwargs

    def describe(self) -> str:
        window = ""
        if self.start_time_after is not None:
            window += f" starting after {iso(self.start_time_after)}"
        if self.end_time_before is not None:
            window += f" ending before {iso(self.end_time_before)}"
        return f"{self.instance_count} x {self.instance_type} for {self.duration_hours} h{window}"


@dataclass(frozen=True)
class PlanProperties:
    """The resource properties of one TrainingPlan, parsed and validated."""

    mode: Mode
    plan_name: str
    existing_arn: str | None
    instance_type: str | None
    instance_count: int | None
    duration_hours: int | None
    start_time_after: datetime | None
    end_time_before: datetime | None
    target_resources: tuple[str, ...]
    choice_policy: ChoicePolicy
    approved_plan_name: str | None
    max_upfront_fee: Decimal | None
    currency: str | None
    pending_timeout_seconds: int
    subnet_ids_by_zone_id: Mapping[str, tuple[str, ...]]
    tags: tuple[tuple[str, str], ...]
    # The purchase ledger (handler_core/ledger.py): its table and this environment's
    # partition. Required wherever the resource may buy (a plan or an extension).
    ledger_table: str | None = None
    environment: str | None = None
    retry: int = 0
    # StartTimeAfter and EndTimeBefore as given: the name's digest covers these strings.
    raw_start: str | None = None
    raw_end: str | None = None

    @property
    def purchase_approved(self) -> bool:
        return self.approved_plan_name == self.plan_name

    @property
    def lookup_name(self) -> str:
        """The name to describe: the adopted ARN's plan, else PlanName."""
        if self.existing_arn is not None:
            return plan_name_from_arn(self.existing_arn)
        return self.plan_name

    def offering_request(self) -> OfferingRequest:
        if (
            self.mode != "purchase"
            or self.instance_type is None
            or self.instance_count is None
            or self.duration_hours is None
        ):
            raise TrainingPlanError(f"training plan {self.plan_name} is not in purchase mode")
        return OfferingRequest(
            instance_type=self.instance_type,
            instance_count=self.instance_count,
            duration_hours=self.duration_hours,
            start_time_after=self.start_time_after,
            end_time_before=self.end_time_before,
            target_resources=self.target_resources,
            choice_policy=self.choice_policy,
            subnet_ids_by_zone_id=self.subnet_ids_by_zone_id,
            currency=self.currency,
        )

    def tag_list(self) -> list[dict[str, str]]:
        return [{"Key": k, "Value": v} for k, v in self.tags]


# --- properties -------------------------------------------------------------------------


def parse_properties(raw: Mapping[str, Any]) -> PlanProperties:
    """Parse CloudFormation resource properties (scalars arrive as strings)."""
    mode = _one_of(raw, "Mode", ("purchase", "adopt"), default=None)
    plan_name = _required_str(raw, "PlanName")
    if len(plan_name) > 64 or not _PLAN_NAME.fullmatch(plan_name):
        raise PropertyError(
            f"PlanName {plan_name!r} must be 1-64 letters, digits and inner hyphens"
        )
    subnets = _subnet_ids_by_zone_id(raw)
    targets = _target_resources(raw)
    tags = _tags(raw)
    existing_arn = _required_str(raw, "ExistingArn") if mode == "adopt" else None
    if existing_arn is not None:
        plan_name_from_arn(existing_arn)  # raises unless it is a training-plan ARN
    purchase = mode == "purchase"
    instance_type = (_required_str if purchase else _optional_str)(raw, "InstanceType")
    if instance_type is not None and not instance_type.startswith("ml."):
        raise PropertyError(f"InstanceType {instance_type!r} must be an ml.* instance type")
    start, end = _timestamp(raw, "StartTimeAfter"), _timestamp(raw, "EndTimeBefore")
    if start is not None and end is not None and start >= end:
        raise PropertyError("StartTimeAfter must be earlier than EndTimeBefore")
    fee = _decimal(raw, "MaxUpfrontFee") if purchase else None
    currency = _required_str(raw, "Currency") if purchase else None
    if currency is not None and not _CURRENCY.fullmatch(currency):
        raise PropertyError(f"Currency {currency!r} must be a three-letter code such as USD")
    # The config approves one exact purchase by naming it; the handler checks the same
    # equality, so a template edited by hand (or by a bug) cannot buy another plan.
    approved = raw.get("ApprovedPlanName")
    return PlanProperties(
        mode="purchase" if purchase else "adopt",
        plan_name=plan_name,
        existing_arn=existing_arn,
        instance_type=instance_type,
        instance_count=_int(raw, "InstanceCount", 1, _MAX_INSTANCE_COUNT, required=purchase),
        duration_hours=_int(raw, "DurationHours", 1, _MAX_DURATION_HOURS, required=purchase),
        start_time_after=start,
        end_time_before=end,
        target_resources=targets,
        choice_policy=_choice_policy(raw),
        approved_plan_name=approved if isinstance(approved, str) else None,
        max_upfront_fee=fee,
        currency=currency,
        pending_timeout_seconds=_int(raw, "PendingTimeoutSeconds", 1, 86400, required=False)
        or DEFAULT_PENDING_TIMEOUT_SECONDS,
        subnet_ids_by_zone_id=subnets,
        tags=tags,
        ledger_table=_optional_str(raw, "LedgerTable"),
        environment=_optional_str(raw, "Environment"),
        retry=_int(raw, "Retry", 1, 1000, required=False) or 0,
        raw_start=_optional_str(raw, "StartTimeAfter"),
        raw_end=_optional_str(raw, "EndTimeBefore"),
    )


def plan_name_from_arn(arn: str) -> str:
    match = _PLAN_ARN.fullmatch(arn)
    if match is None:
        raise PropertyError(f"ExistingArn {arn!r} is not a training-plan ARN")
    return match.group("name")


def _one_of(
    raw: Mapping[str, Any], key: str, allowed: Sequence[str], *, default: str | None
) -> str:
    if not _present(raw, key) and default is not None:
        return default
    value = raw.get(key)
    if value not in allowed:
        raise PropertyError(f"{key} must be one of {', '.join(allowed)}, not {value!r}")
    return str(value)


def _choice_policy(raw: Mapping[str, Any]) -> ChoicePolicy:
    policy = _one_of(raw, "ChoicePolicy", CHOICE_POLICIES, default="cheapest")
    return "earliest" if policy == "earliest" else "cheapest"


def _decimal(raw: Mapping[str, Any], key: str) -> Decimal:
    value = raw.get(key)
    if not _present(raw, key) or isinstance(value, bool):
        raise PropertyError(f"{key} is required and must be a decimal number")
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise PropertyError(f"{key} must be a decimal number, not {value!r}") from None
    if not number.is_finite() or number < 0:
        raise PropertyError(f"{key} must be a finite number of at least 0, not {value!r}")
    return number


def _timestamp(raw: Mapping[str, Any], key: str) -> datetime | None:
    if not _present(raw, key):
        return None
    value = raw[key]
    try:
        return as_utc(datetime.fromisoformat(str(value)))
    except ValueError:
        raise PropertyError(f"{key} must be an ISO-8601 timestamp, not {value!r}") from None


def _subnet_ids_by_zone_id(raw: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    key = "SubnetIdsByZoneId"
    value = _json(raw, key)
    if not isinstance(value, dict):
        raise PropertyError(f"{key} must be an object of zone ID to a list of subnet IDs")
    out: dict[str, tuple[str, ...]] = {}
    for zone_id, subnet_ids in value.items():
        if not isinstance(subnet_ids, list) or not all(
            isinstance(s, str) and s.startswith("subnet-") for s in subnet_ids
        ):
            raise PropertyError(f"{key}[{zone_id!r}] must be a list of subnet IDs")
        if subnet_ids:
            out[str(zone_id)] = tuple(subnet_ids)
    if not out:
        raise PropertyError(f"{key} must list at least one private subnet")
    return out


def _target_resources(raw: Mapping[str, Any]) -> tuple[str, ...]:
    key = "TargetResources"
    if not _present(raw, key):
        return (HYPERPOD_CLUSTER,)
    value = _json(raw, key)
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v in TARGET_RESOURCES for v in value)
    ):
        raise PropertyError(
            f"{key} must be a non-empty list of {', '.join(TARGET_RESOURCES)}, not {value!r}"
        )
    return tuple(dict.fromkeys(value))


def _tags(raw: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    key = "Tags"
    if not _present(raw, key):
        return ()
    value = _json(raw, key)
    if not isinstance(value, list) or len(value) > _MAX_TAGS:
        raise PropertyError(f"{key} must be a list of at most {_MAX_TAGS} Key/Value objects")
    tags: list[tuple[str, str]] = []
    for tag in value:
        if (
            not isinstance(tag, dict)
            or not isinstance(tag.get("Key"), str)
            or not tag["Key"]
            or not isinstance(tag.get("Value"), str)
        ):
            raise PropertyError(f"{key} entries must be objects with a Key and a string Value")
        tags.append((tag["Key"], tag["Value"]))
    return tuple(tags)


# --- times and fees ---------------------------------------------------------------------


def upfront_fee(offering: Mapping[str, Any]) -> Decimal | None:
    try:
        fee = Decimal(str(offering.get("UpfrontFee", "")).strip())
    except InvalidOperation:
        return None
    return fee if fee.is_finite() else None


def offering_start(offering: Mapping[str, Any]) -> datetime | None:
    starts = [as_utc(r.get("StartTime")) for r in offering.get("ReservedCapacityOfferings", [])]
    known = [s for s in starts if s is not None]
    return min(known) if known else None


# --- offerings --------------------------------------------------------------------------
#
# SearchTrainingPlanOfferings returns "a ranked list of training plan offerings that best
# match" the request (see https://docs.aws.amazon.com/sagemaker/latest/dg/
# training-plan-creation-using-api-cli-sdk.html), not only exact ones: an offering may
# have fewer instances, capacity split into segments (up to five ReservedCapacityOfferings,
# each with its own zone, count and times; see the ReservedCapacityOffering shape in the
# botocore SageMaker model) or another currency. So every offering is checked against the
# request here, before anything is bought.


@dataclass(frozen=True)
class Screening:
    """Offerings that fit (annotated with their zone and our subnets there) and, for
    each one skipped, its ID and the reasons (reported, never bought)."""

    candidates: list[dict[str, Any]]
    skipped: list[tuple[str, tuple[str, ...]]]


def _zone_names(offering: Mapping[str, Any]) -> list[str | None]:
    return [r.get("AvailabilityZone") for r in offering.get("ReservedCapacityOfferings", [])]


def _hours(start: datetime, end: datetime) -> Decimal:
    return Decimal((end - start).total_seconds()) / 3600


def offering_problems(offering: Mapping[str, Any], request: OfferingRequest) -> list[str]:
    """Why the offering does not sell what the request asks for (empty when it does).

    Instance type, the total instance count of its capacity, its duration, its start and
    end inside the requested window, its target resources and (when the request has
    one) the fee cap's currency. Zones are checked by `zone_problem`.
    """
    capacity = list(offering.get("ReservedCapacityOfferings") or [])
    if not capacity:
        return ["it lists no reserved capacity"]
    windows = sorted(
        {(as_utc(r.get("StartTime")), as_utc(r.get("EndTime"))) for r in capacity},
        key=lambda w: (w[0] or _NEVER, w[1] or _NEVER),
    )
    return [
        *_capacity_problems(capacity, windows, request),
        *_time_problems(offering, windows, request),
        *_target_and_price_problems(offering, request),
    ]


def _capacity_problems(
    capacity: Sequence[Mapping[str, Any]], windows: Sequence[Window], request: OfferingRequest
) -> list[str]:
    problems: list[str] = []
    types = sorted({str(r.get("InstanceType")) for r in capacity})
    if types != [request.instance_type]:
        problems.append(f"its instance type is {', '.join(types)}, not {request.instance_type}")
    if len(windows) > 1:
        # Segments at different times leave gaps (or overlaps) in the reservation; a
        # restricted instance group's nodes are reclaimed at each segment's end.
        listed = ", ".join(f"{iso(s) or '?'}..{iso(e) or '?'}" for s, e in windows)
        problems.append(
            f"its capacity is split into {len(windows)} segments at different times "
            f"({listed}), not one continuous reservation"
        )
        return problems
    total = sum(int(r.get("InstanceCount") or 0) for r in capacity)
    # Either way: fewer cannot run the jobs, more is a larger purchase than the one
    # approved (the plan name's digest covers the count), so neither is bought.
    if total != request.instance_count:
        problems.append(f"it offers {total} instances in total, not {request.instance_count}")
    return problems


def _time_problems(
    offering: Mapping[str, Any], windows: Sequence[Window], request: OfferingRequest
) -> list[str]:
    problems: list[str] = []
    hours, minutes = offering.get("DurationHours"), offering.get("DurationMinutes") or 0
    if hours != request.duration_hours or minutes:
        lasts = f"{hours} h" + (f" {minutes} min" if minutes else "")
        problems.append(f"it lasts {lasts}, not {request.duration_hours} h")
    starts = [s for s, _ in windows if s is not None]
    ends = [e for _, e in windows if e is not None]
    if len(starts) < len(windows) or len(ends) < len(windows):
        return [*problems, "it lists no start or end time for its capacity"]
    start, end = min(starts), max(ends)
    if len(windows) == 1 and not problems and _hours(start, end) != request.duration_hours:
        problems.append(
            f"its capacity runs {_hours(start, end):f} h ({iso(start)} to {iso(end)}), "
            f"not {request.duration_hours} h"
        )
    if request.start_time_after is not None and start < request.start_time_after:
        problems.append(
            f"it starts {iso(start)}, before StartTimeAfter {iso(request.start_time_after)}"
        )
    if request.end_time_before is not None and end > request.end_time_before:
        problems.append(f"it ends {iso(end)}, after EndTimeBefore {iso(request.end_time_before)}")
    return problems


def _target_and_price_problems(offering: Mapping[str, Any], request: OfferingRequest) -> list[str]:
    problems: list[str] = []
    offered_targets = offering.get("TargetResources")
    if offered_targets is not None:
        missing = [t for t in request.target_resources if t not in offered_targets]
        if missing:
            problems.append(
                f"its target resources {list(offered_targets)} lack {', '.join(missing)}"
            )
    if request.currency is not None:
        offered_currency = offering.get("CurrencyCode")
        if offered_currency != request.currency:
            problems.append(
                f"it is priced in {offered_currency or 'no currency'}, not in "
                f"{request.currency} (the currency of MaxUpfrontFee)"
            )
        elif upfront_fee(offering) is None:
            problems.append(f"its UpfrontFee {offering.get('UpfrontFee')!r} is not a number")
    return problems


def zone_problem(
    offering: Mapping[str, Any],
    zone_name_to_id: Mapping[str, str],
    subnet_ids_by_zone_id: Mapping[str, Sequence[str]] | None,
) -> tuple[dict[str, Any] | None, str | None]:
    """(the offering annotated with its zone and our subnets there, None), or
    (None, why its capacity is not in one zone where we have subnets).

    With `subnet_ids_by_zone_id=None` any single zone is kept (the CLI before a VPC).
    """
    names = sorted({str(n) for n in _zone_names(offering)})
    if not names:
        return None, "it lists no zone"
    if len(names) > 1:
        return None, f"its capacity spans {len(names)} zones ({', '.join(names)})"
    (name,) = names
    zone_id = zone_name_to_id.get(name)
    if zone_id is None:
        return None, f"its zone {name} is not one this account's DescribeAvailabilityZones lists"
    subnet_ids: Sequence[str] = ()
    if subnet_ids_by_zone_id is not None:
        subnet_ids = subnet_ids_by_zone_id.get(zone_id, ())
        if not subnet_ids:
            return None, f"its zone {name} ({zone_id}) has no private subnet of ours"
    annotated = {
        **offering,
        "AvailabilityZone": name,
        "AvailabilityZoneId": zone_id,
        "SubnetIds": list(subnet_ids),
    }
    return annotated, None


def screen_offerings(
    offerings: Sequence[Mapping[str, Any]],
    request: OfferingRequest,
    zone_name_to_id: Mapping[str, str],
) -> Screening:
    """Split the service's offerings into candidates and skipped ones with reasons."""
    candidates: list[dict[str, Any]] = []
    skipped: list[tuple[str, tuple[str, ...]]] = []
    for offering in offerings:
        problems = offering_problems(offering, request)
        annotated, zone = zone_problem(offering, zone_name_to_id, request.subnet_ids_by_zone_id)
        if zone is not None:
            problems.append(zone)
        if problems or annotated is None:
            skipped.append((str(offering.get("TrainingPlanOfferingId", "?")), tuple(problems)))
        else:
            candidates.append(annotated)
    return Screening(candidates=candidates, skipped=skipped)


def choose_offering(
    candidates: Sequence[Mapping[str, Any]], policy: ChoicePolicy
) -> dict[str, Any] | None:
    """`cheapest`: lowest UpfrontFee, ties to the earliest start; `earliest`: the reverse.

    Fees compare only within one currency: callers pass candidates screened for the fee
    cap's currency. Remaining ties keep the service's order (its first offering is its
    best match).
    """

    def key(indexed: tuple[int, Mapping[str, Any]]) -> tuple[Decimal | datetime | int, ...]:
        index, offering = indexed
        fee = upfront_fee(offering)
        start = offering_start(offering)
        by_fee = fee if fee is not None else _NO_FEE
        by_start = start if start is not None else _NEVER
        if policy == "earliest":
            return (by_start, by_fee, index)
        return (by_fee, by_start, index)

    if not candidates:
        return None
    _, chosen = min(enumerate(candidates), key=key)
    return dict(chosen)


def check_fee_cap(
    offering: Mapping[str, Any],
    max_fee: Decimal | None,
    currency: str | None,
    *,
    candidates: Sequence[Mapping[str, Any]] = (),
    plan_name: str | None = None,
) -> str | None:
    """Why the offering must not be bought under the cap, or None when it may be.

    `candidates` (the offerings in our zones) name the cheapest fee in the refusal;
    `plan_name` names the plan that is not bought.
    """
    offering_id = offering.get("TrainingPlanOfferingId", "?")
    not_bought = f"training plan {plan_name} was not bought" if plan_name else "no plan was bought"
    if max_fee is None or currency is None:
        return (
            f"offering {offering_id} cannot be checked without MaxUpfrontFee and Currency, "
            f"so {not_bought}"
        )
    offered_currency = offering.get("CurrencyCode")
    if offered_currency != currency:
        return (
            f"offering {offering_id} is priced in {offered_currency or 'an unknown currency'} "
            f"but MaxUpfrontFee is in {currency}, so {not_bought}"
        )
    fee = upfront_fee(offering)
    if fee is None:
        return (
            f"offering {offering_id} has no readable UpfrontFee "
            f"({offering.get('UpfrontFee')!r}), so {not_bought}"
        )
    if fee <= max_fee:
        return None
    fees = [upfront_fee(c) for c in candidates if c.get("CurrencyCode") == currency]
    cheapest = min([f for f in fees if f is not None] + [fee])
    return (
        f"the chosen offering {offering_id} costs {fee} {currency}, above MaxUpfrontFee "
        f"{max_fee} {currency} (the cheapest offering in our zones costs {cheapest} {currency}), "
        f"so {not_bought}; raise the cap or change the request"
    )


def no_offering_message(
    request: OfferingRequest,
    offerings: Sequence[Mapping[str, Any]],
    zone_name_to_id: Mapping[str, str],
    skipped: Sequence[tuple[str, Sequence[str]]] | None = None,
) -> str:
    """Why nothing can be bought: no offering at all, or each one's reasons to skip it."""
    if not offerings:
        return (
            f"SearchTrainingPlanOfferings found no offering for {request.describe()}, so no "
            "plan was bought; widen the window or change the instance count"
        )
    if skipped is None:
        skipped = screen_offerings(offerings, request, zone_name_to_id).skipped
    reasons = "; ".join(f"{oid}: {', '.join(why)}" for oid, why in skipped)
    ours = sorted((request.subnet_ids_by_zone_id or {}).keys())
    return (
        f"none of the {len(offerings)} offerings for {request.describe()} fits, so no plan "
        f"was bought ({reasons}; our private subnets are in {', '.join(ours) or 'no zone'})"
    )


# --- buying, adopting, waiting ----------------------------------------------------------


def purchase_refusal(props: PlanProperties) -> str | None:
    """Why this event must not buy, checked before any AWS call."""
    if props.mode == "purchase" and not props.purchase_approved:
        return (
            f"buying training plan {props.plan_name} is not approved: ApprovedPlanName is "
            f"{props.approved_plan_name!r}, and the custom resource spends money only when it "
            "equals PlanName (purchase.approve in the config names this exact plan)"
        )
    return None


def next_step(
    described: Mapping[str, Any] | None, props: PlanProperties, *, may_purchase: bool = True
) -> Step:
    """Adopt the plan that exists (after validating it), else buy when allowed."""
    if described is None:
        if props.mode == "adopt":
            raise TrainingPlanError(
                f"training plan {props.existing_arn} does not exist, so it cannot be adopted"
            )
        if not may_purchase:
            raise TrainingPlanError(
                f"training plan {props.plan_name} does not exist and this update keeps the "
                "plan name, so it buys nothing; change the plan request to buy a new plan"
            )
        return "purchase"
    validate_plan(described, props)
    return "adopt"


def validate_plan(plan: Mapping[str, Any], props: PlanProperties) -> None:
    """Raise when an existing plan cannot serve the request.

    A Failed plan of the name we would buy raises `failed_plan_message`: it is never
    adopted as a success, and the message says how to buy under a new name.
    """
    if props.mode == "purchase" and plan.get("Status") == "Failed":
        raise TrainingPlanError(failed_plan_message(plan))
    problems = adoption_problems(plan, props)
    if problems:
        raise TrainingPlanError(
            f"training plan {plan.get('TrainingPlanName', props.lookup_name)} exists but "
            f"does not fit this request: {'; '.join(problems)}"
        )


def adoption_problems(plan: Mapping[str, Any], props: PlanProperties) -> list[str]:
    """What makes an existing plan unusable for the request (empty when it fits).

    A Pending plan may not list its reserved capacity yet: its instance type is checked
    once listed (again when it becomes ready).
    """
    problems: list[str] = []
    arn = plan.get("TrainingPlanArn")
    if props.existing_arn is not None and arn != props.existing_arn:
        problems.append(f"its ARN is {arn}, not {props.existing_arn}")
    status = plan.get("Status")
    if status in ("Expired", "Failed"):
        detail = f" ({plan['StatusMessage']})" if plan.get("StatusMessage") else ""
        problems.append(f"it is {status}{detail}")
    types = {s.get("InstanceType") for s in plan.get("ReservedCapacitySummaries", [])}
    if props.instance_type is not None and types and types != {props.instance_type}:
        problems.append(
            f"its instance type is {', '.join(sorted(map(str, types)))}, not {props.instance_type}"
        )
    total = plan.get("TotalInstanceCount")
    # Like its capacity, a Pending plan's count may not be filled in yet: check it once
    # it is, and again when the plan is ready.
    counted = bool(total) or status != "Pending"
    if props.instance_count is not None and counted and (total or 0) < props.instance_count:
        problems.append(f"it has {total or 0} instances, fewer than {props.instance_count}")
    missing = [t for t in props.target_resources if t not in plan.get("TargetResources", [])]
    if missing:
        problems.append(
            f"its target resources {list(plan.get('TargetResources', []))} lack "
            f"{', '.join(missing)}"
        )
    return problems


def failed_plan_message(plan: Mapping[str, Any]) -> str:
    """A Failed plan (its purchase failed) and how to buy under a new name.

    "If the plan purchase fails, the status is set to Failed"
    (https://docs.aws.amazon.com/sagemaker/latest/dg/training-plan-details-using-api-cli-sdk.html).
    The name stays taken by that plan and the handler adopts by name, so only a new
    name buys again: `retry` in the config is part of the name's digest.
    """
    name = plan.get("TrainingPlanName", "?")
    return (
        f"training plan {name} is Failed ({plan.get('StatusMessage') or 'no status message'}) "
        "and reserves no capacity; a plan of this name exists, so no deploy buys under it "
        "again: to buy a new plan, set `retry: N` on this plan's entry in "
        "capacity.training_plans (1, or one more than its current value), which gives a new "
        "plan name that must be approved like any purchase"
    )


def status_verdict(plan: Mapping[str, Any], *, mode: Mode = "purchase") -> Verdict:
    """`ready` from Scheduled on, `pending` while Pending; Failed and Expired raise.

    Statuses: Pending until paid and fulfilled, then Scheduled, Active from the start
    date, Expired after the end, Failed when the purchase fails
    (https://docs.aws.amazon.com/sagemaker/latest/dg/training-plan-details-using-api-cli-sdk.html).
    """
    name = plan.get("TrainingPlanName", "?")
    status = plan.get("Status")
    if status in READY_STATUSES:
        return "ready"
    if status == "Pending":
        return "pending"
    if status == "Failed" and mode == "adopt":
        raise TrainingPlanError(
            f"training plan {name} is Failed ({plan.get('StatusMessage') or 'no status message'})"
            " and reserves no capacity; adopt another plan (existing_arn) or buy one"
        )
    if status == "Failed":
        raise TrainingPlanError(failed_plan_message(plan))
    if status == "Expired":
        raise TrainingPlanError(
            f"training plan {name} is Expired (it ended {iso(plan.get('EndTime')) or 'earlier'})"
            " and reserves no capacity; change the plan request to buy a new plan"
        )
    raise TrainingPlanError(f"training plan {name} has an unknown status {status!r}")


def pending_timeout_message(
    plan_name: str, *, last_error: str | None = None, failing_call: str = "DescribeTrainingPlan"
) -> str:
    """The plan is bought (or adopted) but not ready in time.

    `last_error`: `failing_call` kept failing, so whether the plan is ready is unknown.
    """
    if last_error is not None:
        return (
            f"training plan {plan_name} is bought, but {failing_call} kept failing until "
            f"the pending timeout ({last_error}); pay the invoice if one is due: the next "
            "deploy adopts the plan and does not buy again"
        )
    return (
        f"training plan {plan_name} is bought and Pending (awaiting payment or fulfilment); "
        "pay the invoice / wait, then re-run the deploy: it adopts the plan and does not buy "
        "again"
    )


# --- a failed purchase call -------------------------------------------------------------

# Errors that name no refusal although their HTTP status is 4xx: botocore's standard
# retry mode treats them as transient (https://docs.aws.amazon.com/boto3/latest/guide/
# retries.html), so the request may have been worked.
_TRANSIENT_CODES = frozenset(
    {"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"}
)
# Throttling answers are refusals: "The request was denied due to request throttling"
# (Common Errors, linked from every SageMaker action's page:
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html).
_THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
    }
)
# botocore exceptions raised before the request left the client: no connection was
# made (EndpointConnectionError, ConnectTimeoutError, ProxyConnectionError) or the call
# was never built (parameters, credentials, region, endpoint).
_NOT_SENT_EXCEPTIONS = frozenset(
    {
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ProxyConnectionError",
        "ParamValidationError",
        "NoCredentialsError",
        "PartialCredentialsError",
        "CredentialRetrievalError",
        "NoAuthTokenError",
        "NoRegionError",
        "UnknownEndpointError",
        "EndpointResolutionError",
        "InvalidProxiesConfigError",
    }
)


def classify_create_failure(
    *, exception_names: Sequence[str], error_code: str | None, http_status: int | None
) -> CreateFailure:
    """What a failed CreateTrainingPlan means for the money.

    `exception_names`: the class names of the exception and its bases (botocore's
    hierarchy, e.g. an SSLError is also a ConnectionError, raised mid-request too).

    - `name_taken`: ResourceInUse, a plan of that name exists: describe and adopt it.
    - `refused`: the service answered with a 4xx error (validation, quota, access,
      throttling, unknown offering): it says it did not do the work, nothing was bought.
    - `not_sent`: the request never left the client: nothing was bought.
    - `ambiguous`: anything else (5xx, read timeout, connection closed or reset, a
      transient 4xx, an answer that could not be read): the plan may have been bought.

    CreateTrainingPlan's own errors are ResourceInUse, ResourceLimitExceeded and
    ResourceNotFound, all HTTP 400 (https://docs.aws.amazon.com/sagemaker/latest/
    APIReference/API_CreateTrainingPlan.html); 5xx InternalFailure and
    ServiceUnavailable report a failure "of an unknown error" or of the server, not a
    refusal (Common Errors, above).
    """
    names = set(exception_names)
    if "ClientError" in names:
        if error_code == "ResourceInUse":
            return "name_taken"
        if error_code in _TRANSIENT_CODES or http_status is None:
            return "ambiguous"
        if 400 <= http_status < 500:
            return "refused"
        return "ambiguous"
    if names & _NOT_SENT_EXCEPTIONS:
        return "not_sent"
    return "ambiguous"


def _refusal_advice(error_code: str | None) -> str:
    rerun = "re-run the deploy, which describes the plan first and never buys it twice"
    if error_code == "ResourceLimitExceeded":
        # Training-plan limits are SageMaker quotas, raised through Service Quotas
        # (https://docs.aws.amazon.com/servicequotas/latest/userguide/request-quota-increase.html).
        return (
            "the account is at a SageMaker training-plan quota: request a quota increase in "
            "Service Quotas (service Amazon SageMaker, search 'training plan') and deploy "
            "again once it is granted"
        )
    if error_code in _THROTTLING_CODES:
        return f"SageMaker throttled the purchase; {rerun}"
    if error_code == "ResourceNotFound":
        return f"the offering is no longer for sale; {rerun} to search again"
    if error_code is not None and error_code.startswith("AccessDenied"):
        return f"the handler's role may not buy this plan; fix its permissions, then {rerun}"
    return f"fix the cause, then {rerun}"


def refused_create_message(plan_name: str, detail: str, error_code: str | None) -> str:
    """CreateTrainingPlan was refused by the service (4xx): nothing was bought."""
    return (
        f"CreateTrainingPlan for training plan {plan_name} was refused ({detail}), so nothing "
        f"was bought; {_refusal_advice(error_code)}"
    )


def not_sent_create_message(plan_name: str, detail: str) -> str:
    return (
        f"CreateTrainingPlan for training plan {plan_name} never reached SageMaker ({detail}), "
        "so nothing was bought; re-run the deploy, which describes the plan first and never "
        "buys it twice"
    )


def ambiguous_create_message(
    plan_name: str, detail: str, *, describe_error: str | None = None
) -> str:
    """The purchase may have gone through although no describe shows the plan yet.

    A plan bought moments ago may become visible later: the next deploy describes the
    name first and adopts it. Changing the request changes the name and would buy a
    second plan.
    """
    seen = (
        f"describing it failed too ({describe_error})"
        if describe_error is not None
        else "DescribeTrainingPlan does not show the plan yet"
    )
    return (
        f"CreateTrainingPlan for training plan {plan_name} failed ({detail}) and {seen}, so it "
        "may have been bought: the next deploy adopts it if it exists; do not change the "
        "request until then"
    )


def plan_zone(
    plan: Mapping[str, Any],
    zone_name_to_id: Mapping[str, str],
    subnet_ids_by_zone_id: Mapping[str, Sequence[str]],
) -> tuple[str, str, tuple[str, ...]]:
    """(zone name, zone ID, our subnet IDs there) of a plan's reserved capacity."""
    name = plan.get("TrainingPlanName", "?")
    zones = {
        (s.get("AvailabilityZone"), s.get("AvailabilityZoneId"))
        for s in plan.get("ReservedCapacitySummaries", [])
    }
    resolved = {(z, zid or zone_name_to_id.get(z or "")) for z, zid in zones}
    if not resolved:
        raise TrainingPlanError(f"training plan {name} lists no reserved capacity and no zone")
    if len(resolved) > 1:
        listed = ", ".join(sorted(f"{z} ({zid})" for z, zid in resolved))
        raise TrainingPlanError(
            f"training plan {name} reserves capacity in several zones ({listed}), and a "
            "restricted instance group needs one"
        )
    ((zone_name, zone_id),) = resolved
    if not zone_name or not zone_id:
        raise TrainingPlanError(
            f"training plan {name} reserves capacity in zone {zone_name or '?'}, which this "
            "account's DescribeAvailabilityZones does not map to a zone ID"
        )
    subnet_ids = tuple(subnet_ids_by_zone_id.get(zone_id, ()))
    if not subnet_ids:
        raise TrainingPlanError(
            f"training plan {name} reserves capacity in {zone_name} ({zone_id}) but the VPC has "
            f"no private subnet there (our zones: {', '.join(sorted(subnet_ids_by_zone_id))})"
        )
    return zone_name, zone_id, subnet_ids


def plan_data(
    plan: Mapping[str, Any],
    zone_name_to_id: Mapping[str, str],
    subnet_ids_by_zone_id: Mapping[str, Sequence[str]],
) -> dict[str, str]:
    """The custom resource's attributes for a ready plan (all strings)."""
    zone_name, zone_id, subnet_ids = plan_zone(plan, zone_name_to_id, subnet_ids_by_zone_id)
    return {
        "PlanArn": str(plan["TrainingPlanArn"]),
        "PlanName": str(plan["TrainingPlanName"]),
        "Status": str(plan["Status"]),
        "AvailabilityZone": zone_name,
        "AvailabilityZoneId": zone_id,
        "SubnetIds": ",".join(subnet_ids),
        # The first of them on its own, for OverrideVpcConfig without Fn::Split.
        "SubnetId": subnet_ids[0],
        "StartTime": iso(plan.get("StartTime")),
        "EndTime": iso(plan.get("EndTime")),
        "UpfrontFee": str(plan.get("UpfrontFee", "")),
        "CurrencyCode": str(plan.get("CurrencyCode", "")),
    }


# --- what the name says is bought -------------------------------------------------------


def name_problem(props: PlanProperties) -> str | None:
    """Why PlanName does not name what these properties buy (None when it does).

    The name is the approval and ends with the digest of what is bought
    (handler_core/names.py, the same function novapod.capacity.naming uses at synth), so the
    handler recomputes it from the very properties it buys with: a template edited by
    hand, or a construct bug, cannot buy 64 instances under the approval of 4.
    """
    if props.mode != "purchase":
        return None
    digest = names.purchase_digest(
        names.purchase_inputs(
            instance_type=str(props.instance_type),
            instance_count=int(props.instance_count or 0),
            duration_hours=int(props.duration_hours or 0),
            start_after=props.raw_start,
            end_before=props.raw_end,
            target_resources=props.target_resources,
            retry=props.retry,
        )
    )
    if props.plan_name.endswith(f"-{digest}"):
        return None
    return (
        f"PlanName {props.plan_name} does not name what this resource would buy "
        f"({props.instance_count} x {props.instance_type} for {props.duration_hours} h, "
        f"whose name ends in -{digest}), so nothing was bought: the name is the approval, and "
        "the template must come from `cdk synth` of the approved config, not from a hand edit"
    )
