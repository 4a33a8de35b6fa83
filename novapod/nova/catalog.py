"""The Nova catalog (`catalog.yaml`), loaded and validated once: pure data, no AWS calls.

The planner sizes jobs from it (`variant(...).instance_count`) and the renderer builds
recipes from it (template, recipe path, image, ranges). Lookups that fail raise
`CatalogError` with one sentence naming the rule and the fix.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any, Literal

from novapod import yamlsafe

_DATA_FILE = "catalog.yaml"
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")
# PPO roles as the recipe's run block names their replicas (`run.<role>_replicas`), in
# the order of the user guide's compute table, with the name that table gives them.
PPO_ROLE_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "cm": "critic",
        "rm": "reward",
        "am": "anchor",
        "actor_train": "actor_train",
        "actor_generation": "actor_generation",
    }
)
PPO_ROLES: tuple[str, ...] = tuple(PPO_ROLE_NAMES)
Kind = Literal["int", "float"]


class CatalogError(ValueError):
    """A model, technique, instance type, task or value the catalog does not allow."""


@dataclass(frozen=True)
class Model:
    id: str
    display_name: str
    generation: int
    model_type: str
    base: str
    multimodal: bool


@dataclass(frozen=True)
class Hyperparameter:
    """One tunable value: the recipe field it sets and the values it may take."""

    name: str
    path: str
    kind: Kind
    minimum: float | None = None
    maximum: float | None = None
    allowed: tuple[float, ...] | None = None
    as_string: bool = False  # upstream writes this recipe's values as strings

    def check(self, value: object) -> str | None:
        """Why `value` is refused, or None."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, not {value!r}"
        if self.kind == "int" and not (isinstance(value, int) or float(value).is_integer()):
            return f"must be a whole number, not {value}"
        if self.allowed is not None and value not in self.allowed:
            return f"{_num(value)} is not allowed; use one of {_nums(self.allowed)}"
        if self.minimum is not None and value < self.minimum:
            return f"{_num(value)} is below the minimum {_num(self.minimum)}"
        if self.maximum is not None and value > self.maximum:
            return f"{_num(value)} is above the maximum {_num(self.maximum)}"
        return None


@dataclass(frozen=True)
class Variant:
    """One upstream recipe of a (model, technique) on some instance types."""

    model: str
    technique: str
    recipe: str
    instance_types: tuple[str, ...]
    default_replicas: int
    allowed_replicas: tuple[int, ...]
    max_length: int | None
    global_batch_sizes: tuple[int, ...] | None
    max_length_multiple: int | None = None  # the recipe wants a multiple of this
    validation_data: bool = False  # the run block has validation_data_s3_path
    roles: Mapping[str, int] | None = field(default=None, hash=False, compare=False)
    generation_replicas: int | None = None
    rollout_worker_replicas: int | None = None
    min_instances: int | None = None
    hours_per_run: float | None = None
    printed_instance_hours: float | None = None
    note: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def instance_type(self) -> str:
        """The instance type the planner sizes with (the first one listed)."""
        return self.instance_types[0]

    def instance_count(self, replicas: int | None = None) -> int:
        """Instances one job needs: one per replica (PPO: per role replica)."""
        if self.roles is not None:
            return sum(self.roles.values())
        count = self.default_replicas if replicas is None else replicas
        return max(count, self.min_instances or 0)


@dataclass(frozen=True)
class Technique:
    id: str
    display_name: str
    images: Mapping[int, str]
    shapes: Mapping[int, tuple[str, ...]]
    templates: Mapping[int, str]
    regions: tuple[str, ...] | None
    not_launchable: str | None


@dataclass(frozen=True)
class EvaluationTask:
    id: str
    evaluation: Mapping[str, str]
    recipe_suffix: str
    models: tuple[str, ...]
    needs: tuple[str, ...]
    images: Mapping[int, str]
    processor: bool
    inference_overrides: Mapping[str, Any]


@dataclass(frozen=True)
class TrainingJobs:
    """What runs on SageMaker training jobs: variants (their `allowed_replicas` are the
    allowed InstanceCount values), images, the evaluation tasks, the refusals, and the
    instance types training plans sell."""

    plan_instance_types: tuple[str, ...]
    images: Mapping[str, Mapping[int, str]]
    evaluation_tasks: tuple[str, ...]
    refused: Mapping[str, str]
    variants: Mapping[tuple[str, str], tuple[Variant, ...]]


@dataclass(frozen=True)
class Catalog:
    source: str
    plan_families: tuple[str, ...]
    registries: Mapping[str, str]
    no_training_images: Mapping[str, str]
    models: Mapping[str, Model]
    techniques: Mapping[str, Technique]
    evaluation_tasks: Mapping[str, EvaluationTask]
    shapes: Mapping[str, Mapping[str, Hyperparameter]]
    templates: Mapping[str, Mapping[str, Any]]
    variants: Mapping[tuple[str, str], tuple[Variant, ...]]
    training_jobs: TrainingJobs

    # ------------------------------------------------------------------ lookups

    def model(self, model: str) -> Model:
        found = self.models.get(model)
        if found is None:
            raise CatalogError(f"unknown model {model!r}; use one of {', '.join(self.models)}")
        return found

    def technique(self, technique: str) -> Technique:
        found = self.techniques.get(technique)
        if found is None:
            raise CatalogError(
                f"unknown technique {technique!r}; use one of {', '.join(self.techniques)}"
            )
        return found

    def variants_of(self, model: str, technique: str) -> tuple[Variant, ...]:
        """Every recipe of a (model, technique), the sizing one first."""
        display = self.model(model).display_name
        self.technique(technique)
        found = self.variants.get((model, technique))
        if not found:
            offered = [t for m, t in self.variants if m == model]
            raise CatalogError(
                f"{technique} is not published for {display} on HyperPod; use one of "
                f"{', '.join(offered)}, or another model"
            )
        return found

    def variant(self, model: str, technique: str, instance_type: str | None = None) -> Variant:
        """The recipe of a (model, technique) on `instance_type` (default: the sizing one)."""
        variants = self.variants_of(model, technique)
        if instance_type is None:
            return variants[0]
        for found in variants:
            if instance_type in found.instance_types:
                return found
        types = sorted({t for v in variants for t in v.instance_types})
        raise CatalogError(
            f"{self.models[model].display_name} {technique} has no recipe for {instance_type}; "
            f"use a group of {', '.join(types)}"
        )

    def validation_data_recipes(self) -> list[str]:
        """Every (model, technique) whose recipes take validation data, as display text."""
        return [
            f"{self.models[model].display_name} {technique}"
            for (model, technique), found in self.variants.items()
            if found[0].validation_data
        ]

    def hyperparameters(self, model: str, technique: str) -> Mapping[str, Hyperparameter]:
        """Every hyperparameter a job of (model, technique) may set."""
        generation = self.model(model).generation
        shapes = self.technique(technique).shapes.get(generation, ())
        merged: dict[str, Hyperparameter] = {}
        for shape in shapes:
            merged.update(self.shapes[shape])
        return merged

    def template(self, model: str, technique: str) -> dict[str, Any]:
        """A fresh copy of the recipe body (without `run`) of (model, technique)."""
        generation = self.model(model).generation
        name = self.technique(technique).templates[generation]
        return copy.deepcopy(dict(self.templates[name]))

    def evaluation_task(self, task: str, model: str | None = None) -> EvaluationTask:
        found = self.evaluation_tasks.get(task)
        if found is None:
            raise CatalogError(
                f"unknown evaluation task {task!r}; use one of {', '.join(self.evaluation_tasks)}"
            )
        if model is not None and model not in found.models:
            names = ", ".join(self.models[m].display_name for m in found.models)
            raise CatalogError(
                f"the {task} evaluation is published for {names} only, not "
                f"{self.model(model).display_name}; pick another task or model"
            )
        return found

    # --------------------------------------------------------- training jobs

    def training_job_variants(
        self, model: str, technique: str, task: str | None = None
    ) -> tuple[Variant, ...]:
        """Every training-job recipe of a (model, technique[, evaluation task]), the
        default one first, or CatalogError with the rule that refuses it."""
        display = self.model(model).display_name
        self.technique(technique)
        jobs = self.training_jobs
        if technique in jobs.refused:
            raise CatalogError(jobs.refused[technique])
        if technique == "evaluation" and task is not None:
            self.evaluation_task(task, model)
            if task not in jobs.evaluation_tasks:
                raise CatalogError(jobs.refused[task])
        found = jobs.variants.get((model, technique))
        if not found:
            offered = [t for m, t in jobs.variants if m == model]
            raise CatalogError(
                f"{technique} has no training-job recipe for {display} upstream; run it on a "
                f"HyperPod restricted group, or use one of {', '.join(offered)} on training jobs"
            )
        return found

    def training_job_variant(
        self,
        model: str,
        technique: str,
        instance_type: str | None = None,
        task: str | None = None,
    ) -> Variant:
        """The training-job recipe on `instance_type` (default: the first one listed)."""
        variants = self.training_job_variants(model, technique, task)
        if instance_type is None:
            return variants[0]
        for found in variants:
            if instance_type in found.instance_types:
                return found
        types = sorted({t for v in variants for t in v.instance_types})
        raise CatalogError(
            f"{self.models[model].display_name} {technique} has no training-job recipe for "
            f"{instance_type}; use instance_type {', '.join(types)}"
        )

    def training_job_image(
        self, model: str, technique: str, region: str, task: str | None = None
    ) -> str:
        """The SM-TJ image URI of a training job in `region`, or CatalogError saying why none."""
        self.training_job_variants(model, technique, task)
        if technique == "evaluation" and task is None:
            raise CatalogError("an evaluation needs its task to pick the image")
        account = self.registries.get(region)
        if account is None:
            published = ", ".join(self.registries)
            raise CatalogError(
                f"Nova training-job images are published in {published}, not {region}; "
                "deploy the environment in one of those regions"
            )
        repository = self.training_jobs.images[technique].get(self.model(model).generation)
        if repository is None:
            raise CatalogError(
                f"no training-job image for {self.models[model].display_name} {technique}"
            )
        suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
        return f"{account}.dkr.ecr.{region}.{suffix}/{repository}"

    def image(self, model: str, technique: str, region: str, task: str | None = None) -> str:
        """The container image URI of a job in `region`, or CatalogError saying why none."""
        generation = self.model(model).generation
        spec = self.technique(technique)
        if spec.not_launchable:
            raise CatalogError(f"{spec.display_name} cannot run on HyperPod: {spec.not_launchable}")
        if region in self.no_training_images:
            raise CatalogError(
                f"region {region} has no Nova training images ({self.no_training_images[region]}); "
                f"use one of {', '.join(self.registries)}"
            )
        account = self.registries.get(region)
        if account is None:
            raise CatalogError(
                f"Nova training images are published in {', '.join(self.registries)}, not "
                f"{region}; deploy the environment in one of those regions"
            )
        if spec.regions is not None and region not in spec.regions:
            raise CatalogError(
                f"{spec.display_name} runs only in {', '.join(spec.regions)} (the recipe "
                f"launcher has no side images for {region}); use one of those regions"
            )
        if technique == "evaluation":
            if task is None:
                raise CatalogError("an evaluation needs its task to pick the image")
            images = self.evaluation_task(task, model).images
        else:
            images = spec.images
        repository = images.get(generation)
        if repository is None:
            raise CatalogError(
                f"no image for {self.models[model].display_name} {spec.display_name}"
            )
        suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
        return f"{account}.dkr.ecr.{region}.{suffix}/{repository}"


# ----------------------------------------------------------------------- loading


@cache
def catalog() -> Catalog:
    """The catalog, parsed and checked once per process."""
    return parse_catalog(yamlsafe.load_packaged("novapod.nova", _DATA_FILE))


def parse_catalog(data: Any) -> Catalog:
    """Build and check a Catalog from the YAML document; ValueError names a bad entry."""
    models = {
        str(key): Model(
            id=str(key),
            display_name=str(spec["display_name"]),
            generation=int(spec["generation"]),
            model_type=str(spec["model_type"]),
            base=str(spec["base"]),
            multimodal=bool(spec["multimodal"]),
        )
        for key, spec in data["models"].items()
    }
    shapes = {
        str(shape): MappingProxyType(
            {str(name): _hyperparameter(str(name), spec) for name, spec in entries.items()}
        )
        for shape, entries in data["hyperparameter_shapes"].items()
    }
    templates = {str(k): MappingProxyType(dict(v)) for k, v in data["templates"].items()}
    techniques = {
        str(key): _technique(str(key), spec, shapes, templates)
        for key, spec in data["techniques"].items()
    }
    tasks = {
        str(key): _task(str(key), spec, models) for key, spec in data["evaluation_tasks"].items()
    }
    variants: dict[tuple[str, str], tuple[Variant, ...]] = {}
    for model, rows in data["variants"].items():
        if model not in models:
            raise ValueError(f"{_DATA_FILE}: variants name unknown model {model!r}")
        for technique, entries in rows.items():
            if technique not in techniques:
                raise ValueError(f"{_DATA_FILE}: {model} has unknown technique {technique!r}")
            generation = models[model].generation
            if generation not in techniques[technique].templates:
                raise ValueError(f"{_DATA_FILE}: {technique} has no template for {model}")
            variants[(str(model), str(technique))] = tuple(
                _variant(str(model), str(technique), entry) for entry in entries
            )
    for (model, technique), found in variants.items():
        _check_instance_types(model, technique, found)
        if len({v.validation_data for v in found}) > 1:
            # Job validation refuses data.validation per (model, technique).
            raise ValueError(f"{_DATA_FILE}: {model} {technique}: validation_data differs")
    return Catalog(
        training_jobs=_training_jobs(data["training_jobs"], models, techniques, tasks),
        source=str(data["source"]),
        plan_families=tuple(str(f) for f in data["training_plan_instance_families"]),
        registries=MappingProxyType({str(k): str(v) for k, v in data["registries"].items()}),
        no_training_images=MappingProxyType(
            {str(k): " ".join(str(v).split()) for k, v in data["no_training_images"].items()}
        ),
        models=MappingProxyType(models),
        techniques=MappingProxyType(techniques),
        evaluation_tasks=MappingProxyType(tasks),
        shapes=MappingProxyType(shapes),
        templates=MappingProxyType(templates),
        variants=MappingProxyType(variants),
    )


def _training_jobs(
    data: Mapping[str, Any],
    models: Mapping[str, Model],
    techniques: Mapping[str, Technique],
    tasks: Mapping[str, EvaluationTask],
) -> TrainingJobs:
    images = {
        str(t): MappingProxyType({int(g): str(i) for g, i in by_generation.items()})
        for t, by_generation in data["images"].items()
    }
    refused = {str(k): " ".join(str(v).split()) for k, v in data["refused"].items()}
    offered = tuple(str(t) for t in data["evaluation_tasks"])
    for key in [*images, *refused]:
        if key not in techniques and key not in tasks:
            raise ValueError(f"{_DATA_FILE}: training_jobs names unknown {key!r}")
    if set(tasks) != set(offered) | {t for t in refused if t in tasks}:
        raise ValueError(f"{_DATA_FILE}: training_jobs must offer or refuse every task")
    if set(techniques) != set(images) | {t for t in refused if t in techniques}:
        raise ValueError(f"{_DATA_FILE}: training_jobs must image or refuse every technique")
    variants: dict[tuple[str, str], tuple[Variant, ...]] = {}
    for model, rows in data["variants"].items():
        if model not in models:
            raise ValueError(f"{_DATA_FILE}: training_jobs name unknown model {model!r}")
        for technique, entries in rows.items():
            if models[model].generation not in images.get(technique, {}):
                raise ValueError(f"{_DATA_FILE}: training_jobs: {model} {technique} has no image")
            found = tuple(
                _variant(
                    str(model),
                    str(technique),
                    {"replicas": e["instance_count"], "max_length": None, **e},
                )
                for e in entries
            )
            _check_instance_types(str(model), str(technique), found)
            variants[(str(model), str(technique))] = found
    return TrainingJobs(
        plan_instance_types=tuple(str(t) for t in data["plan_instance_types"]),
        images=MappingProxyType(images),
        evaluation_tasks=offered,
        refused=MappingProxyType(refused),
        variants=MappingProxyType(variants),
    )


def _hyperparameter(name: str, spec: Mapping[str, Any]) -> Hyperparameter:
    kind = spec["type"]
    if kind not in ("int", "float"):
        raise ValueError(f"{_DATA_FILE}: hyperparameter {name} has type {kind!r}")
    allowed = spec.get("allowed")
    return Hyperparameter(
        name=name,
        path=str(spec["path"]),
        kind=kind,
        minimum=_opt_number(spec.get("min")),
        maximum=_opt_number(spec.get("max")),
        allowed=None if allowed is None else tuple(allowed),
        as_string=bool(spec.get("as_string", False)),
    )


def _technique(
    key: str,
    spec: Mapping[str, Any],
    shapes: Mapping[str, Any],
    templates: Mapping[str, Any],
) -> Technique:
    shape_map = {
        int(g): tuple(str(s) for s in names) for g, names in spec["hyperparameters"].items()
    }
    for names in shape_map.values():
        for shape in names:
            if shape not in shapes:
                raise ValueError(f"{_DATA_FILE}: {key} names unknown shape {shape!r}")
    template_map = {int(g): str(t) for g, t in spec["templates"].items()}
    for template in template_map.values():
        if template not in templates:
            raise ValueError(f"{_DATA_FILE}: {key} names unknown template {template!r}")
    regions = spec.get("regions")
    why_not = spec.get("not_launchable")
    return Technique(
        id=key,
        display_name=str(spec["display_name"]),
        images=MappingProxyType({int(g): str(i) for g, i in (spec.get("images") or {}).items()}),
        shapes=MappingProxyType(shape_map),
        templates=MappingProxyType(template_map),
        regions=None if regions is None else tuple(str(r) for r in regions),
        not_launchable=None if why_not is None else " ".join(str(why_not).split()),
    )


def _task(key: str, spec: Mapping[str, Any], models: Mapping[str, Model]) -> EvaluationTask:
    names = tuple(str(m) for m in spec["models"])
    for name in names:
        if name not in models:
            raise ValueError(f"{_DATA_FILE}: evaluation task {key} names unknown model {name!r}")
    return EvaluationTask(
        id=key,
        evaluation=MappingProxyType({str(k): str(v) for k, v in spec["evaluation"].items()}),
        recipe_suffix=str(spec["recipe_suffix"]),
        models=names,
        needs=tuple(str(n) for n in spec.get("needs", ())),
        images=MappingProxyType({int(g): str(i) for g, i in spec["images"].items()}),
        processor=bool(spec.get("processor", False)),
        inference_overrides=MappingProxyType(dict(spec.get("inference_overrides") or {})),
    )


def _variant(model: str, technique: str, entry: Mapping[str, Any]) -> Variant:
    where = f"{_DATA_FILE}: {model} {technique} {entry.get('recipe')}"
    roles = entry.get("roles")
    role_map: Mapping[str, int] | None
    allowed: tuple[int, ...]
    if roles is not None:
        if set(roles) != set(PPO_ROLES):
            raise ValueError(f"{where}: PPO roles must be exactly {', '.join(PPO_ROLES)}")
        role_map = MappingProxyType({r: int(roles[r]) for r in PPO_ROLES})
        # Only the actor-train replicas may vary upstream, and not from the default.
        default = role_map["actor_train"]
        allowed = (default,)
    else:
        role_map = None
        default = int(entry["replicas"]["default"])
        allowed = tuple(int(r) for r in entry["replicas"]["allowed"])
        if default not in allowed:
            raise ValueError(f"{where}: default replicas {default} is not allowed")
    gbs = entry.get("global_batch_size")
    max_length = entry.get("max_length")
    hours = entry.get("hours_per_run")
    printed = entry.get("printed_instance_hours")
    note = entry.get("note")
    return Variant(
        model=model,
        technique=technique,
        recipe=str(entry["recipe"]),
        instance_types=tuple(str(t) for t in entry["instance_types"]),
        default_replicas=default,
        allowed_replicas=allowed,
        max_length=None if max_length is None else int(max_length),
        global_batch_sizes=None if gbs is None else tuple(int(g) for g in gbs),
        max_length_multiple=_opt_int(entry.get("max_length_multiple")),
        validation_data=bool(entry.get("validation_data", False)),
        roles=role_map,
        generation_replicas=_opt_int(entry.get("generation_replicas")),
        rollout_worker_replicas=_opt_int(entry.get("rollout_worker_replicas")),
        min_instances=_opt_int(entry.get("min_instances")),
        hours_per_run=None if hours is None else float(hours),
        printed_instance_hours=None if printed is None else float(printed),
        note=None if note is None else " ".join(str(note).split()),
        defaults=MappingProxyType(dict(entry.get("defaults") or {})),
    )


def _check_instance_types(model: str, technique: str, variants: tuple[Variant, ...]) -> None:
    seen: set[str] = set()
    for found in variants:
        for instance_type in found.instance_types:
            if not _INSTANCE_TYPE.match(instance_type):
                raise ValueError(f"{_DATA_FILE}: {model} {technique}: bad type {instance_type}")
            if instance_type in seen:
                raise ValueError(f"{_DATA_FILE}: {model} {technique}: {instance_type} twice")
            seen.add(instance_type)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_number(value: Any) -> float | None:
    return None if value is None else float(value)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _nums(values: tuple[float, ...]) -> str:
    return ", ".join(_num(v) for v in values)
