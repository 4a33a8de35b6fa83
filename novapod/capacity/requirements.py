"""The documented compute requirements: the sizing view of the Nova catalog
(novapod/nova/catalog.yaml, one source), what one (model, technique) runs on, and which
instance families training plans sell."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from novapod.capacity.models import INSTANCE_TYPE, PlanningError, Requirement
from novapod.nova.catalog import PPO_ROLE_NAMES, Variant
from novapod.nova.catalog import catalog as nova_catalog

TECHNIQUES: tuple[str, ...] = tuple(nova_catalog().techniques)


@dataclass(frozen=True)
class SizingView:
    """The catalog as the planner reads it: display names, requirements, plan families."""

    display_names: Mapping[str, str]
    requirements: Mapping[tuple[str, str], Requirement]
    plan_families: tuple[str, ...]
    # What runs on SageMaker training jobs (its default recipe's type and count).
    training_job_requirements: Mapping[tuple[str, str], Requirement]


@cache
def sizing_view() -> SizingView:
    """The sizing view of the Nova catalog (novapod/nova/catalog.yaml): one source."""
    nova = nova_catalog()
    display_names = {key: model.display_name for key, model in nova.models.items()}
    requirements = {key: _requirement(variants[0]) for key, variants in nova.variants.items()}
    training_jobs = {
        key: _requirement(variants[0], fixed=False)
        for key, variants in nova.training_jobs.variants.items()
    }
    return SizingView(
        MappingProxyType(display_names),
        MappingProxyType(requirements),
        nova.plan_families,
        MappingProxyType(training_jobs),
    )


def _requirement(variant: Variant, *, fixed: bool = True) -> Requirement:
    roles = None
    if variant.roles is not None:
        roles = MappingProxyType(
            {PPO_ROLE_NAMES[role]: count for role, count in variant.roles.items()}
        )
    return Requirement(
        instance_type=variant.instance_type,
        instance_count=variant.instance_count(),
        roles=roles,
        documented_hours_per_run=variant.hours_per_run,
        note=variant.note,
        max_sequence_length=variant.max_length,
        printed_instance_hours=variant.printed_instance_hours,
        fixed_instance_count=fixed
        and variant.allowed_replicas == (1,)
        and variant.technique == "evaluation",
    )


def documented_combinations() -> list[tuple[str, str]]:
    """Every (model, technique) the compute requirements document, in data order."""
    return list(sizing_view().requirements)


def plan_instance_families() -> tuple[str, ...]:
    """Instance families training plans sell (p5, trn2, ...)."""
    return sizing_view().plan_families


def plan_eligible(instance_type: str) -> bool:
    """Whether training plans sell this instance type (ml.p5.48xlarge yes, ml.r5 no)."""
    match = INSTANCE_TYPE.match(instance_type)
    return match is not None and match.group(1) in sizing_view().plan_families


def requirement(
    model: str,
    technique: str,
    sequence_length: int | None = None,
    target: str = "hyperpod-cluster",
) -> Requirement:
    """The documented requirement of one job, or PlanningError if it is not documented.
    `target` training-job: as a SageMaker training job (the catalog's training_jobs)."""
    catalog = sizing_view()
    if target == "training-job":
        return _training_job_requirement(catalog, model, technique)
    if model not in catalog.display_names:
        raise PlanningError(
            f"unknown model {model!r}; use one of {', '.join(catalog.display_names)}"
        )
    if technique not in TECHNIQUES:
        raise PlanningError(f"unknown technique {technique!r}; use one of {', '.join(TECHNIQUES)}")
    display = catalog.display_names[model]
    found = catalog.requirements.get((model, technique))
    if found is None:
        documented = [t for m, t in catalog.requirements if m == model]
        raise PlanningError(
            f"{technique} is not documented for {display} on HyperPod; use one of "
            f"{', '.join(documented)}, or another model"
        )
    if sequence_length is not None:
        if sequence_length < 1:
            raise PlanningError(f"sequence_length {sequence_length} must be a positive integer")
        limit = found.max_sequence_length
        if limit is not None and sequence_length > limit:
            raise PlanningError(
                f"{display} {technique} is documented up to {limit} tokens, not "
                f"{sequence_length}; set sequence_length to {limit} or less"
            )
    return found


def _training_job_requirement(catalog: SizingView, model: str, technique: str) -> Requirement:
    if model not in catalog.display_names:
        raise PlanningError(
            f"unknown model {model!r}; use one of {', '.join(catalog.display_names)}"
        )
    found = catalog.training_job_requirements.get((model, technique))
    if found is None:
        offered = [t for m, t in catalog.training_job_requirements if m == model]
        raise PlanningError(
            f"{technique} does not run on training jobs for {catalog.display_names[model]}; "
            f"use one of {', '.join(offered)}, or run it on HyperPod"
        )
    return found
