"""The capacity section: the training plans to buy or
adopt, and how a plan entry becomes the planner's settings or request."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Literal

from pydantic import (
    AwareDatetime,
    Field,
    JsonValue,
    field_validator,
    model_validator,
)

from novapod.capacity import PlanRequest, PlanSettings
from novapod.capacity.naming import EXTENSION_NAME, TRAINING_PLAN_NAME
from novapod.config.base import _at, _Model, _raise_all
from novapod.config.fields import INSTANCE_TYPE_PATTERN, PlanName

# Active ISO 4217 currency codes (2026), for the fee cap's currency.
ISO_4217_CODES = frozenset(
    """AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN
    BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP
    GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS
    KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR
    MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF
    SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD
    TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG""".split()  # noqa: SIM905 (a table reads better)
)

TRAINING_PLAN_ARN = (
    r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$"
)


class Purchase(_Model):
    """Guardrails for buying a training plan: a non-refundable, up-front purchase."""

    approve: str | bool | None = Field(
        None,
        description=(
            "The exact plan name to buy (novapod-<env>-<plan>-<digest>, as `novapod plan` "
            "prints it). Any edit that changes what is bought changes the name and needs a "
            "new approval. Review `novapod offerings` first."
        ),
        # Editors should flag `true` as validation does: only the name approves.
        json_schema_extra={
            "anyOf": [{"type": "string", "pattern": TRAINING_PLAN_NAME.pattern}, {"type": "null"}]
        },
    )
    max_upfront_fee: Decimal | None = Field(
        None,
        gt=0,
        max_digits=15,
        decimal_places=2,
        description="Refuse any offering whose up-front fee is higher (a plain number).",
    )
    currency: str = Field(
        "USD",
        description="ISO 4217 code of the fee cap; offerings in other currencies are skipped.",
        json_schema_extra={"enum": list[JsonValue](sorted(ISO_4217_CODES))},
    )

    @field_validator("approve")
    @classmethod
    def _approve(cls, value: str | bool | None) -> str | bool | None:
        if isinstance(value, str) and not TRAINING_PLAN_NAME.match(value):
            raise ValueError(
                f"{value!r} is not a training plan name; paste the name `novapod plan` prints"
            )
        return value

    @field_validator("max_upfront_fee", mode="before")
    @classmethod
    def _fee(cls, value: object) -> object:
        return _fee_cap(value, "purchase")

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        return _currency_code(value)


def _fee_cap(value: object, section: str) -> object:
    """A fee cap as written: a plain number, never true, a symbol or a currency code."""
    if isinstance(value, bool):
        raise ValueError("must be an amount, e.g. 40000, not true or false")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite amount, e.g. 40000")
    if isinstance(value, str):
        plain = re.sub(r"[\s$€£,_]|USD|EUR|GBP", "", value)
        try:
            amount = Decimal(plain)
        except ArithmeticError:
            amount = None
        if amount is None or not amount.is_finite():
            raise ValueError(f"{value!r} is not an amount; write a plain number, e.g. 40000")
        if plain != value.strip():
            raise ValueError(
                f"{value!r} is not a plain number; write {plain} (the currency goes in "
                f"{section}.currency)"
            )
    return value


def _currency_code(value: str) -> str:
    if value.upper() in ISO_4217_CODES and value != value.upper():
        raise ValueError(f"currency codes are upper case; write {value.upper()}")
    if value not in ISO_4217_CODES:
        raise ValueError(f"{value!r} is not an ISO 4217 currency code such as USD or EUR")
    return value


# What SageMaker sells as one extension: "1-day increments up to 14 days, or 7-day
# increments up to 182 days" (https://docs.aws.amazon.com/sagemaker/latest/dg/
# training-plan-extension.html); the API's TrainingPlanExtensionDurationHours is 0-4368.
EXTENSION_MAX_HOURS = 182 * 24
# The name's pattern for editors: JSON Schema regexes (ECMA-262) have no (?P<name>) groups.
_EXTENSION_NAME_SCHEMA = re.sub(r"\?P<\w+>", "", EXTENSION_NAME.pattern)


class Extension(_Model):
    """Lengthen a bought (or adopted) plan with ExtendTrainingPlan instead of buying a
    second plan: its own approval and fee cap, since an extension is paid up front too."""

    duration_hours: int = Field(
        ge=24,
        le=EXTENSION_MAX_HOURS,
        description=(
            "Hours added to the plan by extensions, in total, beyond its duration_hours "
            "(whole days). Raising it buys one more extension of the difference."
        ),
    )
    approve: str | bool | None = Field(
        None,
        description=(
            "The exact extension to buy (<plan name>-ext<hours>h-<digest>, as validation "
            "prints it). Any change to the plan or the hours needs a new approval."
        ),
        json_schema_extra={
            "anyOf": [{"type": "string", "pattern": _EXTENSION_NAME_SCHEMA}, {"type": "null"}]
        },
    )
    max_upfront_fee: Decimal | None = Field(
        None,
        gt=0,
        max_digits=15,
        decimal_places=2,
        description="Refuse any extension offering whose up-front fee is higher (a plain number).",
    )
    currency: str = Field(
        "USD",
        description="ISO 4217 code of the fee cap; offerings in other currencies are skipped.",
        json_schema_extra={"enum": list[JsonValue](sorted(ISO_4217_CODES))},
    )

    @field_validator("duration_hours")
    @classmethod
    def _whole_days(cls, value: int) -> int:
        if value % 24:
            raise ValueError(
                f"{value} is not whole days; extensions are sold by the day: use a multiple "
                f"of 24 such as {max(24, value // 24 * 24)}"
            )
        return value

    @field_validator("approve")
    @classmethod
    def _approve(cls, value: str | bool | None) -> str | bool | None:
        if isinstance(value, str) and not EXTENSION_NAME.match(value):
            raise ValueError(
                f"{value!r} is not an extension name (<plan name>-ext<hours>h-<digest>); "
                "paste the name validation prints"
            )
        return value

    @field_validator("max_upfront_fee", mode="before")
    @classmethod
    def _fee(cls, value: object) -> object:
        return _fee_cap(value, "extend")

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        return _currency_code(value)


TargetResource = Literal["hyperpod-cluster", "training-job"]


def _hyperpod_target() -> list[TargetResource]:
    return ["hyperpod-cluster"]


class TrainingPlanSpec(_Model):
    """A training plan novapod buys (with approval and a fee cap) or adopts by ARN."""

    name: PlanName = Field(description="Short DNS-label name, at most 24 characters.")
    instance_type: str | None = Field(
        None,
        pattern=INSTANCE_TYPE_PATTERN,
        description="Instance type to reserve; derived from the jobs unless set.",
    )
    instance_count: int | None = Field(
        None, ge=1, le=64, description="Instances to reserve (1, 2, 4 ... 64); derived unless set."
    )
    duration_hours: int | None = Field(
        None, ge=24, le=4368, description="Reserved hours, whole days of 24 h; derived unless set."
    )
    start_after: AwareDatetime | None = Field(
        None, description="Earliest start, ISO 8601 with a UTC offset (2027-03-01T00:00:00Z)."
    )
    end_before: AwareDatetime | None = Field(
        None, description="Latest end, ISO 8601 with a UTC offset; after start_after, not past."
    )
    target_resources: list[TargetResource] = Field(
        default_factory=_hyperpod_target,
        min_length=1,
        description="What may use the plan: hyperpod-cluster and/or training-job.",
    )
    choice: Literal["cheapest", "earliest"] = Field(
        "cheapest", description="Which matching offering to buy."
    )
    purchase: Purchase | None = Field(
        None, description="Approval and fee cap for buying the plan (exclusive with existing_arn)."
    )
    existing_arn: str | None = Field(
        None, pattern=TRAINING_PLAN_ARN, description="Adopt a plan you already own."
    )
    extend: Extension | None = Field(
        None,
        description=(
            "Lengthen this plan, once bought or adopted, by buying an extension (keep "
            "duration_hours as the plan was bought, so its name stays approved)."
        ),
    )
    retry: int = Field(
        0,
        ge=0,
        le=99,
        description=(
            "Set to 1, 2, ... after a bought plan went Failed: it changes the plan's name, so "
            "the next deploy buys anew (approved like any purchase)."
        ),
    )

    @model_validator(mode="after")
    def _buy_or_adopt(self) -> TrainingPlanSpec:
        if self.extend is not None and self.duration_hours is None:
            raise _at(
                "duration_hours",
                "a plan with extend needs the hours it was bought for: set duration_hours "
                "to them, so its name (and its approval) stay those of the bought plan",
            )
        if self.existing_arn is not None:
            if self.purchase is not None:
                raise _at("purchase", "a plan adopted by existing_arn is never bought; remove it")
            for key in ("instance_type", "instance_count"):
                if getattr(self, key) is None:
                    raise _at(key, "an adopted plan needs it, to check the plan you own matches")
            return self
        # Whether the purchase is approved depends on the plan's derived name: checked
        # with the whole config (checks.purchase_problems).
        return self

    @property
    def adopted(self) -> bool:
        return self.existing_arn is not None


class Capacity(_Model):
    training_plans: list[TrainingPlanSpec] = Field(
        default_factory=list,
        description="Only plans listed here are bought or adopted; `novapod plan` shows more.",
    )
    pending_timeout_minutes: int = Field(
        50,
        ge=5,
        le=55,
        description="How long a deploy waits for a bought plan to leave Pending (< 1 h).",
    )

    @model_validator(mode="after")
    def _unique(self) -> Capacity:
        problems = []
        for label, names in (("training_plans", [p.name for p in self.training_plans]),):
            repeated = sorted({n for n in names if names.count(n) > 1})
            if repeated:
                problems.append(
                    _at(label, f"names must be unique; repeated: {', '.join(repeated)}")
                )
        # Two entries on one plan would be two custom resources that CloudFormation runs
        # side by side, each reading the plan's extensions before the other claims: one
        # plan, one entry (its `extend` says the one total to reach).
        adopted: set[str] = set()
        for index, plan in enumerate(self.training_plans):
            if plan.existing_arn is None:
                continue
            if plan.existing_arn in adopted:
                problems.append(
                    _at(
                        f"training_plans[{index}].existing_arn",
                        f"{plan.existing_arn} is adopted by an earlier entry too; adopt a plan "
                        "once (one entry, with the one extend total it should reach)",
                    )
                )
            adopted.add(plan.existing_arn)
        _raise_all(problems)
        return self


def _plan_settings(spec: TrainingPlanSpec) -> PlanSettings:
    """The planner's settings. An extended plan is sized as long as it will be (bought
    hours plus the extension, its window end moved by as much, so the window check
    still judges the bought plan); `bought_request` restores what was bought."""
    duration, end_before = spec.duration_hours, spec.end_before
    if spec.extend is not None and duration is not None:
        duration += spec.extend.duration_hours
        if end_before is not None:
            end_before += timedelta(hours=spec.extend.duration_hours)
    return PlanSettings(
        name=spec.name,
        instance_type=spec.instance_type,
        instance_count=spec.instance_count,
        duration_hours=duration,
        start_after=spec.start_after.isoformat() if spec.start_after else None,
        end_before=end_before.isoformat() if end_before else None,
        target_resources=tuple(spec.target_resources),
        retry=spec.retry,
    )


def bought_request(spec: TrainingPlanSpec, request: PlanRequest) -> PlanRequest:
    """The request as bought: an extended plan's duration and window end as the config
    states them (its name, and so its approval, derive from these), while the reserved
    hours the planner counted include the extension."""
    if spec.extend is None or spec.duration_hours is None:
        return request
    return replace(
        request,
        duration_hours=spec.duration_hours,
        end_before=spec.end_before.isoformat() if spec.end_before else None,
    )


def _adopted_request(spec: TrainingPlanSpec) -> PlanRequest:
    assert spec.instance_type is not None and spec.instance_count is not None
    return PlanRequest(
        name=spec.name,
        instance_type=spec.instance_type,
        instance_count=spec.instance_count,
        duration_hours=spec.duration_hours or 0,
        start_after=None,
        end_before=None,
        target_resources=tuple(spec.target_resources),
        jobs=(),
        required_instance_hours=0.0,
        reserved_instance_hours=0.0,
        waste_instance_hours=0.0,
    )
