"""The capacity plan as JSON (`novapod plan --json`, the contract) and the JSON Schema
the document validates against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from novapod.capacity.models import (
    DNS_LABEL_PATTERN,
    INSTANCE_TYPE_PATTERN,
    CapacityPlan,
    SplitAdvice,
    totals,
)
from novapod.capacity.requirements import TECHNIQUES
from novapod.capacity.units import (
    HOURS_PER_DAY,
    PLAN_INSTANCE_COUNTS,
    PLAN_MAX_HOURS,
    PLAN_MIN_HOURS,
    TARGET_RESOURCES,
)


def capacity_plan_json(
    plan: CapacityPlan,
    plan_names: Mapping[str, str] | None = None,
    advice: Sequence[SplitAdvice] | None = None,
) -> dict[str, Any]:
    """The plan as JSON-ready data; it validates against CAPACITY_PLAN_JSON_SCHEMA.

    `plan_names` maps a plan to its deterministic name (what `purchase.approve` says);
    `advice` (split_advice) adds `split_advice`.
    """
    names = plan_names or {}
    required, reserved, waste = totals(plan)
    return {
        "jobs": [
            {
                "name": job.name,
                "model": job.model,
                "technique": job.technique,
                "instance_type": job.instance_type,
                "instance_count": job.instance_count,
                "hours_per_run": job.hours_per_run,
                "runs": job.runs,
                "instance_hours": job.instance_hours,
            }
            for job in plan.jobs
        ],
        "training_plans": [
            {
                "name": request.name,
                "instance_type": request.instance_type,
                "instance_count": request.instance_count,
                "duration_hours": request.duration_hours,
                "start_after": request.start_after,
                "end_before": request.end_before,
                "target_resources": list(request.target_resources),
                "jobs": list(request.jobs),
                "required_instance_hours": request.required_instance_hours,
                "reserved_instance_hours": request.reserved_instance_hours,
                "waste_instance_hours": request.waste_instance_hours,
                "lower_bound_instance_hours": request.lower_bound_instance_hours,
                "schedule": [
                    {
                        "job": slot.job,
                        "start_hour": slot.start_hour,
                        "end_hour": slot.end_hour,
                        "instance_count": slot.instance_count,
                    }
                    for slot in request.schedule
                ],
                **({"plan_name": names[request.name]} if request.name in names else {}),
            }
            for request in plan.training_plans
        ],
        "on_demand": [job.name for job in plan.on_demand],
        "notes": list(plan.notes),
        "totals": {
            "required_instance_hours": required,
            "reserved_instance_hours": reserved,
            "waste_instance_hours": waste,
        },
        **({"split_advice": [_advice_json(a) for a in advice]} if advice is not None else {}),
    }


def _advice_json(advice: SplitAdvice) -> dict[str, Any]:
    return {
        "plan": advice.plan,
        "required_instance_hours": advice.required_instance_hours,
        "reserved_instance_hours": advice.reserved_instance_hours,
        "split_reserved_instance_hours": advice.split_reserved_instance_hours,
        "saved_instance_hours": advice.saved_instance_hours,
        "plans": [
            {
                "instance_count": part.instance_count,
                "duration_hours": part.duration_hours,
                "jobs": list(part.jobs),
                "required_instance_hours": part.required_instance_hours,
                "reserved_instance_hours": part.reserved_instance_hours,
            }
            for part in advice.parts
        ],
    }


_NAME: dict[str, Any] = {"type": "string", "pattern": DNS_LABEL_PATTERN}
_INSTANCE_TYPE_SCHEMA: dict[str, Any] = {"type": "string", "pattern": INSTANCE_TYPE_PATTERN}


_TIME: dict[str, Any] = {
    "type": ["string", "null"],
    "description": "ISO 8601 time with a UTC offset, or null for no bound.",
}


CAPACITY_PLAN_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "novapod capacity plan",
    "type": "object",
    "additionalProperties": False,
    "required": ["jobs", "training_plans"],
    "properties": {
        "jobs": {"type": "array", "items": {"$ref": "#/$defs/job"}},
        "training_plans": {"type": "array", "items": {"$ref": "#/$defs/training_plan"}},
        "on_demand": {
            "description": "Names of jobs on instance types training plans do not sell.",
            "type": "array",
            "items": _NAME,
        },
        "notes": {"type": "array", "items": {"type": "string"}},
        "totals": {
            "description": (
                "Instance-hours over every training plan (they stand in for cost); waste "
                "sums the plans' waste."
            ),
            "type": "object",
            "additionalProperties": False,
            "required": [
                "required_instance_hours",
                "reserved_instance_hours",
                "waste_instance_hours",
            ],
            "properties": {
                "required_instance_hours": {"type": "number", "minimum": 0},
                "reserved_instance_hours": {"type": "number", "minimum": 0},
                "waste_instance_hours": {"type": "number", "minimum": 0},
            },
        },
        "split_advice": {
            "description": (
                "Plans whose jobs would reserve fewer instance-hours split into several "
                "plans; advice only, the config is not changed."
            ),
            "type": "array",
            "items": {"$ref": "#/$defs/split_advice"},
        },
    },
    "$defs": {
        "job": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "name",
                "model",
                "technique",
                "instance_type",
                "instance_count",
                "hours_per_run",
                "runs",
                "instance_hours",
            ],
            "properties": {
                "name": _NAME,
                "model": _NAME,
                "technique": {"enum": list(TECHNIQUES)},
                "instance_type": _INSTANCE_TYPE_SCHEMA,
                "instance_count": {"type": "integer", "minimum": 1},
                "hours_per_run": {"type": "number", "exclusiveMinimum": 0},
                "runs": {"type": "integer", "minimum": 1},
                "instance_hours": {
                    "description": "instance_count x hours_per_run x runs.",
                    "type": "number",
                    "exclusiveMinimum": 0,
                },
            },
        },
        "training_plan": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "name",
                "instance_type",
                "instance_count",
                "duration_hours",
                "start_after",
                "end_before",
                "target_resources",
            ],
            "properties": {
                "name": _NAME,
                "instance_type": _INSTANCE_TYPE_SCHEMA,
                "instance_count": {"enum": list(PLAN_INSTANCE_COUNTS)},
                "duration_hours": {
                    "type": "integer",
                    "multipleOf": HOURS_PER_DAY,
                    "minimum": PLAN_MIN_HOURS,
                    "maximum": PLAN_MAX_HOURS,
                },
                "start_after": _TIME,
                "end_before": _TIME,
                "target_resources": {
                    "type": "array",
                    "items": {"enum": list(TARGET_RESOURCES)},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                # Empty for a plan reserved for work the planner does not model.
                "jobs": {"type": "array", "items": _NAME},
                "required_instance_hours": {"type": "number", "minimum": 0},
                "reserved_instance_hours": {"type": "number", "minimum": 0},
                "waste_instance_hours": {
                    "description": "reserved_instance_hours - required_instance_hours.",
                    "type": "number",
                    "minimum": 0,
                },
                "plan_name": {
                    "description": (
                        "The deterministic name the plan is bought under; a listed plan's "
                        "purchase.approve must equal it."
                    ),
                    "type": "string",
                    "pattern": r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}$",
                },
                "lower_bound_instance_hours": {
                    "description": (
                        "Proven: no shape the settings allow reserves fewer instance-hours "
                        "(equal to reserved_instance_hours when the shape is optimal); null "
                        "when the settings fix the shape."
                    ),
                    "type": ["number", "null"],
                    "minimum": 0,
                },
                "schedule": {
                    "description": (
                        "Where each job runs, in whole hours from the plan's start: jobs run "
                        "side by side up to instance_count and after the jobs they wait for."
                    ),
                    "type": "array",
                    "items": {"$ref": "#/$defs/slot"},
                },
            },
        },
        "slot": {
            "type": "object",
            "additionalProperties": False,
            "required": ["job", "start_hour", "end_hour", "instance_count"],
            "properties": {
                "job": _NAME,
                "start_hour": {"type": "integer", "minimum": 0},
                "end_hour": {
                    "description": "start_hour + the job's hours x runs, rounded up.",
                    "type": "integer",
                    "minimum": 1,
                    "maximum": PLAN_MAX_HOURS,
                },
                "instance_count": {"type": "integer", "minimum": 1},
            },
        },
        "split_advice": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "plan",
                "required_instance_hours",
                "reserved_instance_hours",
                "split_reserved_instance_hours",
                "saved_instance_hours",
                "plans",
            ],
            "properties": {
                "plan": _NAME,
                "required_instance_hours": {"type": "number", "minimum": 0},
                "reserved_instance_hours": {"type": "number", "minimum": 0},
                "split_reserved_instance_hours": {"type": "number", "minimum": 0},
                "saved_instance_hours": {"type": "number", "exclusiveMinimum": 0},
                "plans": {
                    "type": "array",
                    "minItems": 2,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": [
                            "instance_count",
                            "duration_hours",
                            "jobs",
                            "required_instance_hours",
                            "reserved_instance_hours",
                        ],
                        "properties": {
                            "instance_count": {"enum": list(PLAN_INSTANCE_COUNTS)},
                            "duration_hours": {
                                "type": "integer",
                                "multipleOf": HOURS_PER_DAY,
                                "minimum": PLAN_MIN_HOURS,
                                "maximum": PLAN_MAX_HOURS,
                            },
                            "jobs": {"type": "array", "items": _NAME, "minItems": 1},
                            "required_instance_hours": {"type": "number", "minimum": 0},
                            "reserved_instance_hours": {"type": "number", "minimum": 0},
                        },
                    },
                },
            },
        },
    },
}
