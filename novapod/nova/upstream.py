"""The upstream facts (novapod/data/nova_upstream.yaml), loaded once: pure data, no AWS calls.

Written by tools/upstream_facts.py from the pinned commits of the Nova recipes, the
HyperPod CLI, Helm 3 and 4 and the Kubernetes API server, every fact with its repo,
commit and path. This module answers what IAM, RBAC and rendering need from them:
the images a job's chart pulls in a region (and so the ECR repositories), the objects
the charts create, the verbs Helm and the CLI use on them, and the key paths of each
recipe (a Hydra override of a key the recipe lacks needs `+`), and what the Kubeflow
training operator adds to a job's pods (`init-pytorch` on Workers, an image from
outside the Nova registry), and the SageMaker training-job image of each recipe that has
one, per region.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from novapod import yamlsafe

SOURCE = "novapod/data/nova_upstream.yaml"
HELM_MAJORS = (3, 4)
# Kinds of objects Helm keeps release records in (its default storage driver).
RELEASE_RECORDS = ("", "secrets")


@dataclass(frozen=True, order=True)
class Image:
    """One container image a chart runs: `account.dkr.ecr.region.suffix/repository:tag`."""

    region: str
    uri: str

    @property
    def account(self) -> str:
        return self.uri.split(".", 1)[0]

    @property
    def repository(self) -> str:
        return self.uri.split("/", 1)[1].rsplit(":", 1)[0]


@dataclass(frozen=True)
class Recipe:
    name: str
    chart: str
    regions: tuple[str, ...]
    # container role (main, init, actor_generation, rft_*) -> region -> image URI
    images: Mapping[str, Mapping[str, str]]
    keys: frozenset[str]

    def images_in(self, region: str) -> tuple[Image, ...]:
        """Every image the recipe's chart pulls in `region` (main included when published)."""
        return tuple(
            Image(region, by_region[region])
            for _, by_region in sorted(self.images.items())
            if region in by_region
        )


@dataclass(frozen=True)
class TrainingJobRecipe:
    """A Nova recipe upstream publishes a SageMaker training-job image for (the regional
    parameters' `<stem>.sm_jobs.container_image.prod.<region>`)."""

    name: str
    regions: tuple[str, ...]
    images: Mapping[str, str]  # region -> image URI


@dataclass(frozen=True)
class TrainingOperator:
    """The Kubeflow training operator the HyperPod chart installs (it runs the PyTorchJobs)."""

    image: str
    tolerates_restricted_nodes: bool
    # The init container it appends to Worker pods when the job has a Master replica.
    init_container: str
    init_image: str
    # chart -> replica types of its PyTorchJob ("always" | "conditional")
    replicas: Mapping[str, Mapping[str, str]]
    # The chart's MPI operator, which the RIG script lets run on restricted nodes too.
    mpi_operator_image: str

    def adds_init_container(self, chart: str) -> bool:
        """Whether jobs of `chart` can have Worker pods beside a Master, so get init-pytorch."""
        types = self.replicas[chart]
        return "Master" in types and "Worker" in types


@dataclass(frozen=True)
class UpstreamFacts:
    sources: Mapping[str, Mapping[str, Any]]
    recipes: Mapping[str, Recipe]
    # chart -> (group, resource) of every object it creates
    chart_objects: Mapping[str, frozenset[tuple[str, str]]]
    launcher_keys: frozenset[str]
    # (helm major, action, "chart" | "release") -> verbs
    helm_verbs: Mapping[tuple[int, str, str], frozenset[str]]
    # (group, resource, verb) the CLI's commands use, and the Helm actions they run
    cli_requests: frozenset[tuple[str, str, str]]
    cli_helm_actions: frozenset[str]
    training_operator: TrainingOperator
    # recipe name -> its training-job image per region (only recipes that have one)
    training_jobs: Mapping[str, TrainingJobRecipe]

    def recipe(self, name: str) -> Recipe:
        found = self.recipes.get(name)
        if found is None:
            raise KeyError(f"{SOURCE} has no recipe {name}; regenerate it (make upstream-facts)")
        return found

    def repositories(self, region: str) -> tuple[tuple[str, str], ...]:
        """(account, repository) of every image any Nova chart pulls in `region`."""
        return tuple(
            sorted(
                {
                    (image.account, image.repository)
                    for recipe in self.recipes.values()
                    if region in recipe.regions
                    for image in recipe.images_in(region)
                }
            )
        )

    def helm_chart_verbs(self) -> frozenset[str]:
        """What Helm 3 and Helm 4 do to a chart's objects in install, upgrade, uninstall."""
        return frozenset(
            verb
            for (_, _, objects), verbs in self.helm_verbs.items()
            if objects == "chart"
            for verb in verbs
        )

    def helm_release_verbs(self) -> frozenset[str]:
        """What Helm 3 and Helm 4 do to their release records (Secrets)."""
        return frozenset(
            verb
            for (_, _, objects), verbs in self.helm_verbs.items()
            if objects == "release"
            for verb in verbs
        )

    def required_requests(self) -> frozenset[tuple[str, str, str]]:
        """Every (group, resource, verb) a scientist's Helm 3 or Helm 4 and CLI send."""
        kinds = {kind for objects in self.chart_objects.values() for kind in objects}
        chart = {(g, r, v) for g, r in kinds for v in self.helm_chart_verbs()}
        release = {(*RELEASE_RECORDS, v) for v in self.helm_release_verbs()}
        return frozenset(chart | release | self.cli_requests)


@cache
def upstream_facts() -> UpstreamFacts:
    return parse_upstream_facts(yamlsafe.load_packaged("novapod", "data/nova_upstream.yaml"))


def parse_upstream_facts(data: Mapping[str, Any]) -> UpstreamFacts:
    """Type novapod/data/nova_upstream.yaml (its shape is checked by the tests)."""
    recipes = {
        str(name): Recipe(
            name=str(name),
            chart=str(spec["chart"]),
            regions=tuple(str(r) for r in spec["regions"]),
            images={
                str(role): {str(r): str(uri) for r, uri in image["regions"].items()}
                for role, image in spec["images"].items()
            },
            keys=frozenset(str(k) for k in spec["keys"]),
        )
        for name, spec in data["recipes"].items()
    }
    charts = {
        str(name): frozenset((str(o["group"]), str(o["resource"])) for o in spec["objects"])
        for name, spec in data["charts"].items()
    }
    helm: dict[tuple[int, str, str], set[str]] = {}
    for fact in data["helm"]:
        key = (int(fact["helm"]), str(fact["action"]), str(fact["objects"]))
        helm.setdefault(key, set()).add(str(fact["verb"]))
    launcher = data["launcher_keys"]
    operator = data["training_operator"]
    return UpstreamFacts(
        sources=data["sources"],
        recipes=recipes,
        chart_objects=charts,
        launcher_keys=frozenset(
            str(k) for part in ("root", "cluster") for k in launcher[part]["keys"]
        ),
        helm_verbs={k: frozenset(v) for k, v in helm.items()},
        cli_requests=frozenset(
            (str(f["group"]), str(f["resource"]), str(f["verb"]))
            for f in data["cli"]
            if "verb" in f
        ),
        cli_helm_actions=frozenset(str(f["helm"]) for f in data["cli"] if "helm" in f),
        training_operator=TrainingOperator(
            image=str(operator["image"]["value"]),
            tolerates_restricted_nodes=bool(operator["tolerates_restricted_nodes"]["value"]),
            init_container=str(operator["init_container"]["name"]),
            init_image=str(operator["init_container"]["image"]),
            replicas={
                str(chart): {str(k): str(v) for k, v in spec["replicas"].items()}
                for chart, spec in operator["charts"].items()
            },
            mpi_operator_image=str(operator["mpi_operator"]["image"]),
        ),
        training_jobs={
            str(name): TrainingJobRecipe(
                name=str(name),
                regions=tuple(str(r) for r in spec["regions"]),
                images={str(r): str(uri) for r, uri in spec["image"]["regions"].items()},
            )
            for name, spec in data["training_jobs"].items()
        },
    )
