"""The upstream facts file (novapod/data/nova_upstream.yaml) and what is tied to it.

The file is read here as plain YAML, independently of novapod/nova/upstream.py, so these
tests check the code that uses the facts (IAM, RBAC, rendering, the catalog) against
the file, not the loader against itself. They run from the checked-in file alone; the
regeneration test needs the upstream mirrors and skips without them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from novapod.config import parse_config
from novapod.nova import kubernetes
from novapod.nova.catalog import CatalogError, catalog
from novapod.nova.render import launch_spec
from novapod.nova.upstream import upstream_facts
from tests.conftest import ROOT

FACTS_FILE = ROOT / "novapod" / "data" / "nova_upstream.yaml"
FACTS: dict[str, Any] = yaml.safe_load(FACTS_FILE.read_text())
MAKEFILE = (ROOT / "Makefile").read_text()
COMMIT = re.compile(r"^[0-9a-f]{40}$")
MIRRORS = Path("/work/.mirror")


def make_variable(name: str) -> str:
    found = re.search(rf"^{name}\s*:?=\s*(\S+)\s*$", MAKEFILE, re.MULTILINE)
    assert found, f"Makefile sets no {name}"
    return found.group(1)


def sources_in(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every `source` mapping of the file, with where it sits."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("source", "chart_source"):
                yield f"{where}.{key}", value
            else:
                yield from sources_in(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from sources_in(value, f"{where}[{i}]")


# ------------------------------------------------------------------ shape, provenance


def test_every_fact_names_its_repo_commit_and_path() -> None:
    pinned = {s["repo"]: s for s in FACTS["sources"].values()}
    commits = {(s["repo"], s["commit"]) for s in FACTS["sources"].values()}
    found = list(sources_in({k: v for k, v in FACTS.items() if k != "sources"}))
    assert len(found) > 100
    for where, source in found:
        assert set(source) == {"repo", "commit", "path"}, where
        assert source["repo"] in pinned, where
        assert COMMIT.match(source["commit"]), where
        assert (source["repo"], source["commit"]) in commits, where
        assert source["path"] and not source["path"].startswith("/"), where
    # Every recipe, chart object, image, Helm and CLI fact carries one.
    for name, recipe in FACTS["recipes"].items():
        assert recipe["source"]["path"] == f"recipes_collection/recipes/{name}.yaml"
        assert all("source" in image for image in recipe["images"].values()), name
    for chart in FACTS["charts"].values():
        assert all("source" in o for o in chart["objects"])
    assert all("source" in f for f in FACTS["helm"] + FACTS["cli"])


def test_the_facts_come_from_the_pinned_commits() -> None:
    sources = FACTS["sources"]
    assert sources["recipes"] == {
        "repo": "aws/sagemaker-hyperpod-recipes",
        "commit": make_variable("HYPERPOD_RECIPES_COMMIT"),
    }
    assert sources["cli"] == {
        "repo": "aws/sagemaker-hyperpod-cli",
        "commit": make_variable("HYPERPOD_CLI_COMMIT"),
    }
    assert sources["training_operator"] == {
        "repo": "kubeflow/training-operator",
        "commit": make_variable("TRAINING_OPERATOR_COMMIT"),
    }
    assert sources["helm3"]["tag"] == make_variable("HELM3_TAG")
    assert sources["helm4"]["tag"] == make_variable("HELM4_TAG")
    assert sources["apiserver"]["tag"] == make_variable("APISERVER_TAG")
    # The catalog was written from the same recipes commit.
    assert sources["recipes"]["commit"].startswith(catalog().source.split("@")[1])


MIRRORED = (
    "aws+sagemaker-hyperpod-recipes",
    "aws+sagemaker-hyperpod-cli",
    "kubeflow+training-operator",
    "helm+helm",
    "kubernetes+apiserver",
)


@pytest.mark.skipif(
    not all((MIRRORS / name / "repo").is_dir() for name in MIRRORED),
    reason="the upstream mirrors are not on this machine",
)
def test_regenerating_the_facts_gives_the_same_bytes(tmp_path: Path) -> None:
    out = tmp_path / "facts.yaml"
    done = subprocess.run(
        [
            sys.executable, str(ROOT / "tools" / "upstream_facts.py"),
            "--recipes-commit", make_variable("HYPERPOD_RECIPES_COMMIT"),
            "--cli-commit", make_variable("HYPERPOD_CLI_COMMIT"),
            "--training-operator-commit", make_variable("TRAINING_OPERATOR_COMMIT"),
            "--helm3-tag", make_variable("HELM3_TAG"),
            "--helm4-tag", make_variable("HELM4_TAG"),
            "--apiserver-tag", make_variable("APISERVER_TAG"),
            "--recipes-git", str(MIRRORS / "aws+sagemaker-hyperpod-recipes" / "repo"),
            "--cli-git", str(MIRRORS / "aws+sagemaker-hyperpod-cli" / "repo"),
            "--training-operator-git", str(MIRRORS / "kubeflow+training-operator" / "repo"),
            "--helm-git", str(MIRRORS / "helm+helm" / "repo"),
            "--apiserver-git", str(MIRRORS / "kubernetes+apiserver" / "repo"),
            "--out", str(out),
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_text() == FACTS_FILE.read_text()


# ------------------------------------------------------------------- the catalog


def catalog_jobs() -> Iterator[tuple[str, str, str, str | None]]:
    """(model, technique, recipe, task) of every launchable catalog entry."""
    nova = catalog()
    for (model, technique), variants in nova.variants.items():
        if nova.techniques[technique].not_launchable:
            continue
        tasks = [
            t for t, spec in nova.evaluation_tasks.items() if model in spec.models
        ] if technique == "evaluation" else [None]  # fmt: skip
        for variant in variants:
            for task in tasks:
                suffix = nova.evaluation_tasks[task].recipe_suffix if task else ""
                yield model, technique, variant.recipe.replace("{suffix}", suffix), task


CATALOG_JOBS = sorted(set(catalog_jobs()), key=str)


@pytest.mark.parametrize(("model", "technique", "recipe", "task"), CATALOG_JOBS, ids=str)
def test_every_catalog_image_is_one_upstream_publishes(model, technique, recipe, task) -> None:
    facts = FACTS["recipes"][recipe]
    for region in catalog().registries:
        try:
            image = catalog().image(model, technique, region, task)
        except CatalogError:
            continue
        assert region in facts["regions"], (recipe, region)
        main = facts["images"].get("main")
        if main is not None:
            assert image == main["regions"][region]
            continue
        # No regional entry for this recipe (llm_judge, rubric_llm_judge, rft_eval): the
        # image is one upstream names for another recipe of its chart in that region.
        named = {
            r["images"]["main"]["regions"].get(region)
            for r in FACTS["recipes"].values()
            if "main" in r["images"] and r["chart"] == facts["chart"]
        }
        assert image in named, (recipe, region, image)


def test_the_catalog_launches_a_technique_only_where_the_launcher_can() -> None:
    # PPO's actor-generation and RFT's side images have no us-west-2 account upstream.
    for model, technique, recipe, task in CATALOG_JOBS:
        for region in catalog().registries:
            try:
                catalog().image(model, technique, region, task)
            except CatalogError:
                continue
            assert region in FACTS["recipes"][recipe]["regions"], (recipe, region)


def test_the_catalog_registries_are_the_launchers() -> None:
    init = next(iter(FACTS["recipes"].values()))["images"]["init"]["regions"]
    for region, account in catalog().registries.items():
        assert init[region].startswith(f"{account}.dkr.ecr.{region}.amazonaws.com/")


# ------------------------------------------------------------------------- IAM


def images_in(region: str) -> set[str]:
    return {
        uri
        for recipe in FACTS["recipes"].values()
        if region in recipe["regions"]
        for image in recipe["images"].values()
        for r, uri in image["regions"].items()
        if r == region
    }


def repository_arn(uri: str) -> str:
    registry, _, rest = uri.partition("/")
    account, _, _, region, *_ = registry.split(".")
    return f"arn:aws:ecr:{region}:{account}:repository/{rest.rsplit(':', 1)[0]}"


@pytest.mark.parametrize("region", sorted(catalog().registries))
def test_the_restricted_role_pulls_every_image_of_the_nova_charts(region: str) -> None:
    from aws_cdk import App, Environment, Stack
    from aws_cdk.assertions import Template

    from novapod.constructs.execution_role import ExecutionRole
    from tests.fakes.iam import Request, authorize, parse_statement, resolve

    stack = Stack(App(), "Unit", env=Environment(account="111122223333", region=region))
    ExecutionRole(
        stack, "Exec", kind="restricted", region=region,
        cluster_arn=f"arn:aws:eks:{region}:111122223333:cluster/c",
        subnet_ids=["subnet-a"], security_group_id="sg-1", storage_policies=[],
    )  # fmt: skip
    (policy,) = Template.from_stack(stack).find_resources("AWS::IAM::Policy").values()
    document = resolve(
        policy["Properties"]["PolicyDocument"], account="111122223333", region=region
    )
    statements = [parse_statement(s) for s in document["Statement"]]
    wanted = images_in(region)
    # The init container every chart adds, and the main images.
    assert any("/init-container-repo:" in uri for uri in wanted)
    # And the main image of every catalog job (the evaluations' judge and RFT images are
    # the catalog's, not a recipe's regional parameters).
    nova = catalog()
    for model, technique, _, task in catalog_jobs():
        try:
            uri = nova.image(model, technique, region, task)
        except CatalogError:
            continue
        wanted.add(uri if ":" in uri.rsplit("/", 1)[1] else f"{uri}:latest")
    for uri in sorted(wanted):
        for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"):
            request = Request(action=action, resource=repository_arn(uri))
            assert authorize(statements, request) == "allowed", (uri, action)
    # Least privilege: another repository of the Nova account stays out of reach.
    other = Request(
        action="ecr:BatchGetImage",
        resource=repository_arn(next(iter(wanted))).rsplit("/", 1)[0] + "/other-repo",
    )
    assert authorize(statements, other) == "implicit_deny"


def test_the_operator_facts_come_from_the_chart_the_cluster_installs() -> None:
    """The facts read the training operator from the CLI commit of the Makefile; the
    cluster gets the chart and RIG script of novapod/data/hyperpod_dependencies.yaml.
    They must be the same commit, or the facts describe an operator nobody installs."""
    from novapod.pins import default_pins

    pins = default_pins()
    assert pins.chart.commit == make_variable("HYPERPOD_CLI_COMMIT")
    assert pins.rig.commit == make_variable("HYPERPOD_CLI_COMMIT")
    assert FACTS["training_operator"]["image"]["source"]["commit"] == pins.chart.commit


def test_the_operator_adds_init_pytorch_to_every_chart_with_workers() -> None:
    """The training operator appends init-pytorch to Worker pods beside a Master; every
    Nova chart has both, so multi-node jobs run an image from outside the Nova registry."""
    operator = upstream_facts().training_operator
    assert operator.init_container == "init-pytorch"
    assert operator.init_image == FACTS["training_operator"]["init_container"]["image"]
    assert {c for c in FACTS["charts"] if operator.adds_init_container(c)} == {"SFT", "PPO", "RFT"}
    assert FACTS["training_operator"]["charts"]["SFT"]["replicas"] == {
        "Master": "always",
        "Worker": "conditional",
    }
    # Not set by the chart, so the operator's default (Docker Hub): no ECR grant reaches it.
    assert FACTS["training_operator"]["sets_init_image"]["value"] is False
    assert FACTS["training_operator"]["init_container"]["registry"] == "docker.io"
    assert ".dkr.ecr." not in operator.init_image


def test_the_docs_name_the_images_restricted_nodes_get_from_outside_ecr() -> None:
    """What a restricted node pulls from Docker Hub is documented from the facts; a new
    pin that changes either image fails here until docs/security.md says so."""
    page = (ROOT / "docs" / "security.md").read_text()
    section = page.split("## Networks without internet", 1)[1].split("\n## ", 1)[0]
    operator = upstream_facts().training_operator
    assert f"`{operator.init_image}`" in section
    assert f"`{operator.init_container}`" in section
    assert f"`{operator.image}`" in section
    assert f"`{operator.mpi_operator_image}`" in section
    assert "Three images" in section
    assert operator.tolerates_restricted_nodes
    readme = "\n".join(
        p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    )
    assert "never need internet access" not in readme


# ------------------------------------------------------------------------ RBAC


def requests(major: int) -> set[tuple[str, str, str]]:
    """(group, resource, verb) a scientist sends with Helm `major`, from the facts."""
    kinds = {(o["group"], o["resource"]) for c in FACTS["charts"].values() for o in c["objects"]}
    chart = {f["verb"] for f in FACTS["helm"] if f["helm"] == major and f["objects"] == "chart"}
    release = {f["verb"] for f in FACTS["helm"] if f["helm"] == major and f["objects"] == "release"}
    cli = {(f["group"], f["resource"], f["verb"]) for f in FACTS["cli"] if "verb" in f}
    return (
        {(g, r, v) for g, r in kinds for v in chart} | {("", "secrets", v) for v in release} | cli
    )


def granted() -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for groups, resources, verbs in kubernetes.scientist_rules()
        for group in groups
        for resource in resources
        for verb in verbs
    }


@pytest.mark.parametrize("major", [3, 4])
def test_the_scientists_role_grants_every_kind_and_verb_of_helm(major: int) -> None:
    missing = requests(major) - granted()
    assert not missing


def test_helm_4_installs_by_patch_and_the_role_allows_it() -> None:
    helm4 = {f["verb"] for f in FACTS["helm"] if f["helm"] == 4 and f["action"] == "install"}
    assert "patch" in helm4
    assert ("kubeflow.org", "pytorchjobs", "patch") in granted()


def test_the_scientists_role_grants_nothing_helm_and_the_cli_do_not_use() -> None:
    assert granted() == requests(3) | requests(4)


# ------------------------------------------------------------------ override keys

ZONES = {"us-east-1": ["use1-az4", "use1-az6"]}
LAMBDA = "arn:aws:lambda:us-east-1:111122223333:function:f"


def some_value(spec: Any) -> float:
    if spec.allowed is not None:
        return spec.allowed[0]
    return spec.minimum if spec.minimum is not None else 1


@pytest.mark.parametrize(("model", "technique", "recipe", "task"), CATALOG_JOBS, ids=str)
def test_every_override_key_exists_in_its_recipe_or_is_sent_as_new(
    model, technique, recipe, task
) -> None:
    nova = catalog()
    variant = next(
        v for v in nova.variants[(model, technique)]
        if v.recipe.replace("{suffix}", nova.evaluation_tasks[task].recipe_suffix if task else "") == recipe
    )  # fmt: skip
    job: dict[str, Any] = {"name": "j", "model": model, "technique": technique, "hours_per_run": 1}
    hyperparameters = {
        name: some_value(spec)
        for name, spec in nova.hyperparameters(model, technique).items()
        if name not in ("max_length", "global_batch_size")
    }
    if technique == "evaluation":
        spec = nova.evaluation_tasks[task]
        job["evaluation"] = {
            "task": task,
            "inference": {n: some_value(s) for n, s in nova.shapes["evaluation"].items()},
            **({"dataset": "eval/d.jsonl"} if "dataset" in spec.needs else {}),
            **({"reward_lambda_arn": LAMBDA} if "reward_lambda_arn" in spec.needs else {}),
            **({"metrics_lambda_arn": LAMBDA} if spec.processor else {}),
        }
    else:
        job["hyperparameters"] = hyperparameters
        job["data"] = {"train": "t.jsonl"}
        if variant.validation_data:  # refused for the others (tests/unit/test_jobs_config.py)
            job["data"]["validation"] = "v.jsonl"
        job["mlflow"] = True
        if technique.startswith("rft-"):
            job["reward_lambda_arn"] = LAMBDA
    config = parse_config(
        {
            "name": "dev",
            "region": "us-east-1",
            "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ZONES["us-east-1"]}},
            "jobs": [job],
        }
    )
    spec = launch_spec(config, config.jobs[0], variant.instance_type)
    assert spec["recipe"] == recipe
    keys = set(FACTS["recipes"][recipe]["keys"])
    launcher = set(FACTS["launcher_keys"]["root"]["keys"])
    for key in spec["override_parameters"]:
        if key.startswith("+recipes."):
            assert key.removeprefix("+recipes.") not in keys, key  # Hydra: already there
        elif key.startswith("recipes."):
            assert key.removeprefix("recipes.") in keys, key  # Hydra: could not override
        else:
            assert key in launcher, key


def test_the_loader_reads_the_same_file() -> None:
    # The typed view the code uses covers every recipe of the file.
    assert set(upstream_facts().recipes) == set(FACTS["recipes"])
    assert set(upstream_facts().training_jobs) == set(FACTS["training_jobs"])
    for name, spec in FACTS["training_jobs"].items():
        assert upstream_facts().training_jobs[name].images == spec["image"]["regions"]


# ------------------------------------------------------------------ training jobs


def test_training_job_images_are_the_sm_tj_tags_of_the_nova_registries() -> None:
    """Every training-job image is an SM-TJ tag in the registry of its region, the same
    accounts the HyperPod images come from (research i23 1.1)."""
    registries = catalog().registries
    assert FACTS["training_jobs"]
    for name, spec in FACTS["training_jobs"].items():
        assert spec["regions"] == sorted(spec["image"]["regions"]), name
        assert spec["image"]["source"]["path"].endswith("nova_regional_parameters.json")
        assert spec["source"]["path"] == f"recipes_collection/recipes/{name}.yaml"
        for region, uri in spec["image"]["regions"].items():
            assert uri.startswith(f"{registries[region]}.dkr.ecr.{region}.amazonaws.com/"), uri
            assert ":SM-TJ-" in uri, uri


def test_what_has_no_training_job_image_upstream() -> None:
    """CPT, PPO, the HyperPod RFT recipes and the judge/rft_eval evaluations have no
    training-job image at the pinned commit; distillation and the smtj RFT recipes do."""
    names = set(FACTS["training_jobs"])
    assert not [n for n in names if "/CPT/" in n or "/PPO/" in n]
    assert not [n for n in names if n.endswith(("llm_judge_eval", "rft_eval"))]
    assert not [n for n in names if "/RFT/" in n and "_smtj_" not in n]
    assert {
        "fine-tuning/nova/nova_1_0/nova_pro/distill/nova_pro_1_0_r5_cpu_distill",
        "fine-tuning/nova/nova_2_0/nova_lite/RFT/nova_lite_v2_smtj_p5_p5en_gpu_lora_rft",
        "fine-tuning/nova/nova_1_0/nova_micro/DPO/nova_micro_1_0_g5_g6_12x_gpu_lora_dpo",
    } <= names
    # No training-job image in eu-west-2 (nor anywhere but these three regions).
    assert {r for spec in FACTS["training_jobs"].values() for r in spec["regions"]} == {
        "us-east-1",
        "us-west-2",
        "ap-northeast-1",
    }


def test_the_generator_reads_registries_as_docker_does() -> None:
    """A first path component that is not a host (no dot, no port) means Docker Hub."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "upstream_facts_tool", ROOT / "tools" / "upstream_facts.py"
    )
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = tool  # its dataclasses look their module up
    spec.loader.exec_module(tool)
    assert tool.registry_of("alpine:3.10") == "docker.io"
    assert tool.registry_of("kubeflow/training-operator:v1-855e096") == "docker.io"
    assert tool.registry_of("public.ecr.aws/docker/library/alpine:3.10") == "public.ecr.aws"
    assert tool.registry_of("localhost:5000/alpine") == "localhost:5000"
    assert tool.registry_of("localhost/alpine") == "localhost"
    assert (
        tool.registry_of("123456789012.dkr.ecr.us-east-1.amazonaws.com/init-container-repo:1")
        == "123456789012.dkr.ecr.us-east-1.amazonaws.com"
    )
