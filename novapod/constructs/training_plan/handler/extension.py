"""Pure decisions of a plan's extension (ExtendTrainingPlan): no AWS calls, no boto3.

ExtendTrainingPlan takes an extension offering's ID and nothing else: no name, no
client token (botocore's SageMaker model; https://docs.aws.amazon.com/sagemaker/latest/
APIReference/API_ExtendTrainingPlan.html). So what the custom resource buys is stated as a
total, "this plan extended by `hours` beyond the hours it was bought for", approved by
its exact name (`ExtensionName`, derived by novapod.capacity.naming.extension_name). Before
buying, and again after an ambiguous failure, the handler reads what the plan already
has: the extensions DescribeTrainingPlanExtensionHistory lists (all but Failed ones)
and how far the plan's end has moved past its bought hours; it buys only the
difference. A total already reached buys nothing, so a duplicated or retried event, a
rollback or a re-run never extends twice. Extensions "cannot be cancelled or modified"
(https://docs.aws.amazon.com/sagemaker/latest/dg/training-plan-extension.html): a
rollback or a delete leaves them, and says so.

Reads alone leave one window: an extension bought but not yet shown by either read
when a second event for the same approval reads them. The service offers no token to
close it, so the purchase ledger does (handler_core/ledger.py, claims.py): the purchase
is claimed with a conditional write before the call, and any event that finds it
calling, ambiguous or bought never buys past it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ...handler_core.values import as_utc
from .decisions import (
    PropertyError,
    _decimal,
    _int,
    _present,
    _required_str,
    upfront_fee,
)

# One extension: "1-day increments up to 14 days, or 7-day increments up to 182 days"
# (training-plan-extension.html above); TrainingPlanExtensionDurationHours is 0-4368.
DAY = 24
WEEK = 7 * DAY
DAILY_UP_TO = 14 * DAY
MAX_EXTENSION_HOURS = 182 * DAY
_NOT_COUNTED = frozenset({"Failed"})
_NEVER = datetime.max.replace(tzinfo=UTC)
_CURRENCY = re.compile(r"[A-Z]{3}")
# SearchTrainingPlanOfferings for extensions needs a plan that is "Active or Scheduled"
# (https://docs.aws.amazon.com/sagemaker/latest/dg/search-extension-offerings-api-cli-sdk.html).
EXTENDABLE_STATUSES = frozenset({"Scheduled", "Active"})


@dataclass(frozen=True)
class ExtensionProperties:
    """The extension asked of one TrainingPlan resource, parsed and validated."""

    name: str
    hours: int  # added in total beyond bought_hours
    bought_hours: int
    approved_name: str | None
    max_upfront_fee: Decimal
    currency: str

    @property
    def approved(self) -> bool:
        return self.approved_name == self.name


def parse_extension(raw: Mapping[str, Any], plan_name: str) -> ExtensionProperties | None:
    """The extension properties, or None when the resource asks for none."""
    if not _present(raw, "ExtendHours"):
        if _present(raw, "ExtensionName"):
            raise PropertyError("ExtensionName needs ExtendHours, the hours it adds in total")
        return None
    hours = _int(raw, "ExtendHours", DAY, MAX_EXTENSION_HOURS, required=True)
    assert hours is not None
    name = _required_str(raw, "ExtensionName")
    # The name says what it buys; a template edited by hand cannot pair one plan's or
    # one total's approval with another.
    if not re.fullmatch(rf"{re.escape(plan_name)}-ext{hours}h-[0-9a-f]{{8}}", name):
        raise PropertyError(
            f"ExtensionName {name!r} does not name an extension of training plan {plan_name} "
            f"by {hours} h"
        )
    bought = _int(raw, "DurationHours", 1, 87600, required=True)
    assert bought is not None
    currency = _required_str(raw, "ExtensionCurrency")
    if not _CURRENCY.fullmatch(currency):
        raise PropertyError(f"ExtensionCurrency {currency!r} must be a three-letter code")
    approved = raw.get("ApprovedExtensionName")
    return ExtensionProperties(
        name=name,
        hours=hours,
        bought_hours=bought,
        approved_name=approved if isinstance(approved, str) else None,
        max_upfront_fee=_decimal(raw, "ExtensionMaxUpfrontFee"),
        currency=currency,
    )


def extension_refusal(extension: ExtensionProperties) -> str | None:
    """Why this event must not extend, checked before any AWS call."""
    if extension.approved:
        return None
    return (
        f"extension {extension.name} is not approved: ApprovedExtensionName is "
        f"{extension.approved_name!r}, and the custom resource extends a plan only when it "
        "equals ExtensionName (extend.approve in the config names this exact extension)"
    )


def no_plan_message(plan_name: str, extension: ExtensionProperties) -> str:
    return (
        f"training plan {plan_name} does not exist, so extension {extension.name} cannot be "
        "bought and nothing was bought: extend lengthens a plan already bought; buy the plan "
        "first (without extend), or buy it for the longer duration_hours"
    )


def not_extendable_message(plan: Mapping[str, Any], extension: ExtensionProperties) -> str:
    name = plan.get("TrainingPlanName", "?")
    return (
        f"training plan {name} is {plan.get('Status')}, and SageMaker sells extensions only of "
        f"Scheduled or Active plans, so extension {extension.name} was not bought; pay the "
        "invoice or wait until the plan is Scheduled, then deploy again"
    )


# --- what the plan already has -----------------------------------------------------------


def counted(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The extensions that add time: every one but those whose purchase Failed."""
    return [e for e in history if e.get("Status") not in _NOT_COUNTED]


def extended_hours(
    plan: Mapping[str, Any], history: Sequence[Mapping[str, Any]], bought_hours: int
) -> int:
    """Hours the plan has beyond what it was bought for, by the larger of two reads:
    the extension history, and how far its end lies past start + bought hours (an
    extension "updates your training plan's end date", training-plan-extension-using-
    api-cli-sdk.html). Either showing the extension is enough never to buy it again."""
    by_history = sum(int(e.get("DurationHours") or 0) for e in counted(history))
    start, end = as_utc(plan.get("StartTime")), as_utc(plan.get("EndTime"))
    by_end = 0
    if start is not None and end is not None:
        by_end = max(0, int((end - start).total_seconds() // 3600) - bought_hours)
    return max(by_history, by_end)


def missing_hours(seen: int, target: int) -> int:
    """Hours still to buy: none once the plan has the total (or more; never undone)."""
    return max(0, target - seen)


def sellable_problem(plan_name: str, extension: ExtensionProperties, seen: int) -> str | None:
    """Why the hours still missing are not one extension SageMaker sells; None if they are."""
    hours = missing_hours(seen, extension.hours)
    if hours % DAY == 0 and (hours <= DAILY_UP_TO or hours % WEEK == 0):
        return None
    return (
        f"training plan {plan_name} is extended by {seen} h, so reaching {extension.hours} h "
        f"needs {hours} h more, which SageMaker does not sell as one extension (whole days up "
        f"to {DAILY_UP_TO} h, whole weeks up to {MAX_EXTENSION_HOURS} h); nothing was bought: "
        "choose an extend.duration_hours that leaves such a difference"
    )


# --- offerings ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtensionScreening:
    candidates: list[dict[str, Any]]
    skipped: list[tuple[str, tuple[str, ...]]]


def plan_zones(plan: Mapping[str, Any]) -> set[str]:
    return {
        str(s["AvailabilityZone"])
        for s in plan.get("ReservedCapacitySummaries", [])
        if s.get("AvailabilityZone")
    }


def extension_offering_problems(
    offering: Mapping[str, Any], *, hours: int, currency: str, zones: set[str]
) -> list[str]:
    """Why an extension offering is not the one to buy (empty when it is)."""
    problems: list[str] = []
    if offering.get("DurationHours") != hours:
        problems.append(f"it adds {offering.get('DurationHours')} h, not {hours} h")
    zone = offering.get("AvailabilityZone")
    if zone and zones and zone not in zones:
        problems.append(f"its zone {zone} is not the plan's ({', '.join(sorted(zones))})")
    if offering.get("CurrencyCode") != currency:
        problems.append(
            f"it is priced in {offering.get('CurrencyCode') or 'no currency'}, not in "
            f"{currency} (the currency of ExtensionMaxUpfrontFee)"
        )
    elif upfront_fee(offering) is None:
        problems.append(f"its UpfrontFee {offering.get('UpfrontFee')!r} is not a number")
    return problems


def screen_extension_offerings(
    offerings: Sequence[Mapping[str, Any]], *, hours: int, currency: str, zones: set[str]
) -> ExtensionScreening:
    candidates: list[dict[str, Any]] = []
    skipped: list[tuple[str, tuple[str, ...]]] = []
    for offering in offerings:
        problems = extension_offering_problems(
            offering, hours=hours, currency=currency, zones=zones
        )
        if problems:
            skipped.append(
                (str(offering.get("TrainingPlanExtensionOfferingId", "?")), tuple(problems))
            )
        else:
            candidates.append(dict(offering))
    return ExtensionScreening(candidates, skipped)


def choose_extension(candidates: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The cheapest; ties to the earliest start, then the service's order."""
    if not candidates:
        return None

    def key(indexed: tuple[int, Mapping[str, Any]]) -> tuple[Decimal, datetime, int]:
        index, offering = indexed
        fee = upfront_fee(offering)
        start = as_utc(offering.get("StartDate"))
        return (
            fee if fee is not None else Decimal("Infinity"),
            start if start is not None else _NEVER,
            index,
        )

    _, chosen = min(enumerate(candidates), key=key)
    return dict(chosen)


def extension_fee_refusal(
    offering: Mapping[str, Any], extension: ExtensionProperties, plan_name: str
) -> str | None:
    """Why the chosen offering must not be bought under the extension's cap."""
    fee = upfront_fee(offering)
    if fee is not None and fee <= extension.max_upfront_fee:
        return None
    return (
        f"the cheapest extension offering {offering.get('TrainingPlanExtensionOfferingId', '?')} "
        f"costs {offering.get('UpfrontFee')} {offering.get('CurrencyCode')}, above "
        f"ExtensionMaxUpfrontFee {extension.max_upfront_fee} {extension.currency}, so training "
        f"plan {plan_name} was not extended; raise extend.max_upfront_fee or extend by less"
    )


def no_extension_message(
    plan_name: str,
    hours: int,
    offerings: Sequence[Mapping[str, Any]],
    skipped: Sequence[tuple[str, Sequence[str]]],
) -> str:
    if not offerings:
        return (
            f"SearchTrainingPlanOfferings found no extension offering of {hours} h for training "
            f"plan {plan_name}, so it was not extended and nothing was bought; extensions depend "
            "on spare capacity after the plan's end: try fewer hours, or later"
        )
    reasons = "; ".join(f"{oid}: {', '.join(why)}" for oid, why in skipped)
    return (
        f"none of the {len(offerings)} extension offerings for training plan {plan_name} fits "
        f"{hours} h, so it was not extended and nothing was bought ({reasons})"
    )


# --- a failed ExtendTrainingPlan ---------------------------------------------------------


def refused_extend_message(extension_name: str, detail: str) -> str:
    return (
        f"ExtendTrainingPlan for {extension_name} was refused ({detail}), so nothing was "
        "bought; fix the cause, then re-run the deploy, which reads the plan's extensions "
        "first and never extends twice"
    )


def not_sent_extend_message(extension_name: str, detail: str) -> str:
    return (
        f"ExtendTrainingPlan for {extension_name} never reached SageMaker ({detail}), so "
        "nothing was bought; re-run the deploy, which reads the plan's extensions first and "
        "never extends twice"
    )


# --- after the purchase ------------------------------------------------------------------


def extension_timeout_message(plan_name: str, extension: ExtensionProperties) -> str:
    return (
        f"extension {extension.name} of training plan {plan_name} is bought but not yet shown "
        "as paid and active before the pending timeout; pay the invoice if one is due, then "
        "re-run the deploy: it reads the plan's extensions and does not extend again"
    )


def extension_data(extension: ExtensionProperties, seen: int) -> dict[str, str]:
    return {"ExtensionName": extension.name, "ExtendedHours": str(seen)}


def never_undone_message(plan_name: str, seen: int, asked: int) -> str:
    """An update or rollback asks for less than the plan has: nothing is undone."""
    return (
        f"training plan {plan_name} stays extended by {seen} h (this request asks for {asked} h):"
        " SageMaker extensions cannot be cancelled or undone, so nothing is bought or refunded"
    )
