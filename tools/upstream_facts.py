"""Write novapod/data/nova_upstream.yaml: the upstream facts novapod's IAM, RBAC and
recipe rendering are tested against, each with its provenance (repo, commit, path).

Read from pinned commits, never from a branch tip:
  - aws/sagemaker-hyperpod-recipes (the recipes and the Nova launcher the HyperPod CLI
    runs): every Nova recipe the Kubernetes launcher runs, the chart it gets
    (main.py get_nova_launcher), every key path of the recipe (Hydra overrides a key
    the recipe has; a new key needs `+`), the launcher's own keys, the objects each
    chart creates and every image each chart references, resolved per region as the
    launcher resolves them (launcher/nova/utils.py and constants/; the main image is the
    regional parameters' `container`, which the CLI passes as the `container` key);
    and every Nova recipe with a SageMaker training-job image, per region (the regional
    parameters' `sm_jobs.container_image.prod`);
  - aws/sagemaker-hyperpod-cli (the CLI): the Kubernetes calls of the commands novapod
    documents (start-job, list-jobs, get-job, list-pods, get-log, cancel-job);
  - kubeflow/training-operator at the commit of the image tag the CLI's chart pins
    (charts/training-operators/values.yaml, `v1-<commit>`): the init container the
    operator adds to the Worker pods of a PyTorchJob that has a Master, and its image
    when the chart passes no --pytorch-init-container-image (it passes none);
  - helm/helm at a Helm 3 and a Helm 4 tag: the verbs install, upgrade and uninstall
    use on chart objects and on the release records (Secrets); Helm 4 installs by
    server-side apply, a PATCH, which kubernetes/apiserver authorizes as `patch`, and as
    `create` as well when the apply creates the object.

Run where GitHub is reachable (it fetches each pinned commit; `make upstream-facts`), or
against local git directories (bare or not) that hold the commits:

    python tools/upstream_facts.py --recipes-commit C --cli-commit C \\
        --training-operator-commit C --recipes-git DIR --cli-git DIR \\
        --training-operator-git DIR --helm-git DIR --apiserver-git DIR

The output is deterministic (sorted, no dates): the same commits give the same bytes.
Where upstream no longer matches what this script reads (a marker not found, an image
of unknown role), it stops with a sentence naming the file to re-read.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # novapod from this checkout, also when run as a script
from novapod import yamlsafe  # noqa: E402

RECIPES = "aws/sagemaker-hyperpod-recipes"
CLI = "aws/sagemaker-hyperpod-cli"
HELM = "helm/helm"
APISERVER = "kubernetes/apiserver"
TRAINING_OPERATOR = "kubeflow/training-operator"
OPERATOR_CHART = "helm_chart/HyperPodHelmChart/charts/training-operators"
OPERATOR_DEPLOYMENT = (
    f"{OPERATOR_CHART}/templates/Deployment/training-operator-kubeflow-Deployment.yaml"
)
RIG_SCRIPT = "helm_chart/install_rig_dependencies.sh"
MPI_CHART = "helm_chart/HyperPodHelmChart/charts/mpi-operator"
DEFAULT_OUT = ROOT / "novapod" / "data" / "nova_upstream.yaml"
RECIPE_ROOT = "recipes_collection/recipes"
RECIPE_FAMILIES = ("training/nova/", "fine-tuning/nova/", "evaluation/nova/")
REGIONAL = "launcher/recipe_templatization/nova/nova_regional_parameters.json"
CONSTANTS = "launcher/nova/constants"
CHARTS = {
    "SFT": "launcher/nova/k8s_templates/SFT",
    "PPO": "launcher/nova/k8s_templates/PPO",
    "RFT": "launcher/nova/k8s_templates/RFT",
}

# What each image reference in a chart's templates is, and where the launcher gets it
# (launcher/nova/launchers.py _process_values_yaml / _map_image_config, utils.py):
# role -> (constants file, image template, region -> account map). `main` is the
# `container` key the CLI passes, published per recipe in the regional parameters.
IMAGE_VALUES = {
    ".Values.image.trainingImage": "main",
    "$root.image.trainingImage": "main",
    "$config.initContainer.image": "init",
    "$root.image.actor_generation_image": "actor_generation",
    ".Values.image.generationImage": "rft_generation",
    "$root.image.generationImage": "rft_generation",
    ".Values.image.stormImage": "rft_storm",
    ".Values.image.natsServerImage": "rft_nats_server",
    ".Values.image.natsReloaderImage": "rft_nats_reloader",
    ".Values.image.redis": "rft_redis",
}
SIDE_IMAGES = {
    "init": ("init_container_constants.py", "INIT_CONTAINER_IMAGE_URI", "INIT_CONTAINER_REGION_ACCOUNT_MAP"),
    "actor_generation": ("ppo_container_constants.py", "ACTOR_GENERATION_CONTAINER_IMAGE", "ACTOR_GENERATION_REGION_ACCOUNT_MAP"),
    "rft_generation": ("rft_container_constants.py", "RFT_GENERATION_CONTAINER_IMAGE", "RFT_REGION_ACCOUNT_MAP"),
    "rft_storm": ("rft_container_constants.py", "RFT_STORM_CONTAINER_IMAGE", "RFT_REGION_ACCOUNT_MAP"),
    "rft_nats_server": ("rft_container_constants.py", "RFT_NATS_SERVER_CONTAINER_IMAGE", "RFT_REGION_ACCOUNT_MAP"),
    "rft_nats_reloader": ("rft_container_constants.py", "RFT_NATS_RELOADER_CONTAINER_IMAGE", "RFT_REGION_ACCOUNT_MAP"),
    "rft_redis": ("rft_container_constants.py", "RFT_REDIS_CONTAINER_IMAGE", "RFT_REGION_ACCOUNT_MAP"),
}  # fmt: skip
# main.py get_nova_launcher: the lines this script's chart choice mirrors.
LAUNCHER_CHOICE = (
    r'run_config\.get\("generation_replicas"\) is not None or run_config\.get\("rollout_worker_replicas"\) is not None',
    r'training_config\.get\("rollout"\) is not None',
    r'data_type in \["single-turn", "multi-turn"\]',
    r'ppo_keys = \["ppo_reward", "ppo_critic", "ppo_anchor", "ppo_actor_generation", "ppo_actor_train"\]',
    r'if all\(\[i in recipe_file_path for i in \["nova", "rft", "smtj"\]\]\)',
)  # fmt: skip
PPO_KEYS = ("ppo_reward", "ppo_critic", "ppo_anchor", "ppo_actor_generation", "ppo_actor_train")

# The CLI commands novapod documents, the service file each runs, and the
# KubernetesClient methods it calls with --namespace given (the all-namespaces and
# namespace-discovery branches are not taken: novapod always passes --namespace).
CLI_COMMANDS: Mapping[str, Sequence[tuple[str, str]]] = {
    "list-jobs": (
        ("service/list_training_jobs.py", "check_if_namespace_exists"),
        ("service/list_training_jobs.py", "list_training_jobs"),
    ),
    "get-job": (("service/get_training_job.py", "get_job"),),
    "list-pods": (("service/list_pods.py", "list_pods_with_labels"),),
    "get-log": (
        ("service/list_pods.py", "list_pods_with_labels"),
        ("service/get_logs.py", "get_logs_for_pod"),
        ("service/get_logs.py", "get_pod_details"),
    ),
    "cancel-job": (("service/cancel_training_job.py", "delete_training_job"),),
}
CLI_ROOT = "src/hyperpod_cli"
# The Helm runs of the CLI: the recipes launcher's `helm install` (start-job) and
# cancel-job's `helm uninstall` (repo, path, marker).
HELM_RUNS = (
    (
        "start-job",
        "install",
        RECIPES,
        "launcher/nova/launchers.py",
        r'f"helm install --timeout=15m',
    ),
    ("cancel-job", "uninstall", CLI, f"{CLI_ROOT}/service/cancel_training_job.py", r'"uninstall"'),
)
VERB_OF = {"read": "get", "get": "get", "list": "list", "create": "create", "delete": "delete", "patch": "patch", "replace": "update"}  # fmt: skip

# The verbs Helm needs, each with the code that makes the request (path, regex that must
# match there). "chart": the chart's objects; "release": the release records, Secrets
# in the release's namespace (the default storage driver).
HELM_FACTS: Sequence[tuple[int, str, str, str, str, Sequence[tuple[str, str]]]] = (
    # (major, action, objects, verb, repo, ((path, marker), ...))
    (3, "install", "chart", "get", HELM, (("pkg/action/validate.go", r"func existingResourceConflict[\s\S]*?helper\.Get\(info\.Namespace, info\.Name\)"),)),
    (3, "install", "chart", "create", HELM, (("pkg/action/install.go", r"i\.cfg\.KubeClient\.Create\("), ("pkg/kube/client.go", r"func createResource[\s\S]*?\.Create\(info\.Namespace, true, info\.Object\)"))),
    (4, "install", "chart", "get", HELM, (("pkg/action/validate.go", r"func existingResourceConflict[\s\S]*?helper\.Get\(info\.Namespace, info\.Name\)"),)),
    (4, "install", "chart", "patch", HELM, (("pkg/action/install.go", r"ServerSideApply:\s+true, // Must always match the CLI default"), ("pkg/cmd/install.go", r'"server-side", true'), ("pkg/kube/client.go", r"func patchResourceServerSide[\s\S]*?types\.ApplyPatchType"))),
    (4, "install", "chart", "patch", APISERVER, (("pkg/endpoints/request/requestinfo.go", r'case MethodPatch:\s*requestInfo\.Verb = "patch"'),)),
    (4, "install", "chart", "create", APISERVER, (("pkg/endpoints/handlers/patch.go", r'createAuthorizerAttributes := authorizer\.AttributesRecord\{[\s\S]*?Verb:\s+"create"[\s\S]*?createValidation:\s+withAuthorization\('),)),
    (3, "upgrade", "chart", "get", HELM, (("pkg/kube/client.go", r"helper\.Get\(target\.Namespace, target\.Name\)"),)),
    (3, "upgrade", "chart", "create", HELM, (("pkg/kube/client.go", r"func createResource"),)),
    (3, "upgrade", "chart", "patch", HELM, (("pkg/kube/client.go", r"helper\.Patch\(target\.Namespace, target\.Name, patchType, patch, nil\)"),)),
    (3, "upgrade", "chart", "delete", HELM, (("pkg/kube/client.go", r"deleteResource\(info, metav1\.DeletePropagationBackground\)"),)),
    (4, "upgrade", "chart", "get", HELM, (("pkg/kube/client.go", r"helper\.Get\(target\.Namespace, target\.Name\)"),)),
    (4, "upgrade", "chart", "patch", HELM, (("pkg/cmd/upgrade.go", r'"server-side", "auto"'), ("pkg/kube/client.go", r"func patchResourceServerSide[\s\S]*?types\.ApplyPatchType"))),
    (4, "upgrade", "chart", "create", APISERVER, (("pkg/endpoints/handlers/patch.go", r'Verb:\s+"create"'),)),
    (4, "upgrade", "chart", "delete", HELM, (("pkg/kube/client.go", r"deleteResource\(info, metav1\.DeletePropagationBackground\)"),)),
    (3, "uninstall", "chart", "delete", HELM, (("pkg/action/uninstall.go", r"u\.cfg\.KubeClient\.Delete\("), ("pkg/kube/client.go", r"func deleteResource[\s\S]*?DeleteWithOptions\("))),
    (4, "uninstall", "chart", "delete", HELM, (("pkg/action/uninstall.go", r"u\.cfg\.KubeClient\.Delete\("), ("pkg/kube/client.go", r"func deleteResource[\s\S]*?DeleteWithOptions\("))),
    *(
        (major, action, "release", verb, HELM, ((path, marker), ("pkg/storage/driver/secrets.go", driver)))
        for major in (3, 4)
        for action, verb, path, marker, driver in (
            ("install", "list", "pkg/action/install.go", r"i\.cfg\.Releases\.History\(", r"secrets\.impl\.List\("),
            ("install", "create", "pkg/action/install.go", r"i\.cfg\.Releases\.Create\(", r"secrets\.impl\.Create\("),
            ("install", "update", "pkg/action/install.go", r"i\.cfg\.Releases\.Update\(", r"secrets\.impl\.Update\("),
            ("upgrade", "list", "pkg/action/upgrade.go", r"u\.cfg\.Releases\.Last\(", r"secrets\.impl\.List\("),
            ("upgrade", "create", "pkg/action/upgrade.go", r"u\.cfg\.Releases\.Create\(", r"secrets\.impl\.Create\("),
            ("upgrade", "update", "pkg/action/upgrade.go", r"u\.cfg\.Releases\.Update\(", r"secrets\.impl\.Update\("),
            ("uninstall", "list", "pkg/action/uninstall.go", r"u\.cfg\.Releases\.History\(", r"secrets\.impl\.List\("),
            ("uninstall", "update", "pkg/action/uninstall.go", r"u\.cfg\.Releases\.Update\(", r"secrets\.impl\.Update\("),
            ("uninstall", "get", "pkg/action/uninstall.go", r"u\.cfg\.Releases\.Delete\(", r"secrets\.impl\.Get\([\s\S]*?func \(secrets \*Secrets\) Delete[\s\S]*?secrets\.Get\(key\)"),
            ("uninstall", "delete", "pkg/action/uninstall.go", r"u\.cfg\.Releases\.Delete\(", r"secrets\.impl\.Delete\("),
        )
    ),
)  # fmt: skip


class UpstreamChangedError(Exception):
    """Upstream no longer reads as this script expects; the message names the file."""


@dataclass
class Tree:
    """One repository at one commit, read with git (no work tree needed)."""

    repo: str
    git_dir: Path
    commit: str
    tag: str | None = None

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.git_dir), *args], check=True, capture_output=True, text=True
        )
        return done.stdout

    def read(self, path: str) -> str:
        return self.git("show", f"{self.commit}:{path}")

    def files(self, under: str) -> list[str]:
        return sorted(self.git("ls-tree", "-r", "--name-only", self.commit, under).split())

    def source(self, path: str) -> dict[str, str]:
        return {"repo": self.repo, "commit": self.commit, "path": path}

    def expect(self, path: str, marker: str) -> None:
        if not re.search(marker, self.read(path)):
            raise UpstreamChangedError(
                f"{self.repo}@{self.commit}:{path} no longer matches /{marker}/; re-read it "
                "and update tools/upstream_facts.py"
            )


def open_tree(repo: str, ref: str, local: Path | None, scratch: Path) -> Tree:
    """`repo` at `ref` (a commit, or a tag), from `local` or fetched from GitHub."""
    if local is None:
        local = scratch / repo.replace("/", "+")
        subprocess.run(["git", "init", "--quiet", "--bare", str(local)], check=True)
        wanted = f"refs/tags/{ref}" if not re.fullmatch(r"[0-9a-f]{40}", ref) else ref
        subprocess.run(
            ["git", "-C", str(local), "fetch", "--quiet", "--depth", "1",
             f"https://github.com/{repo}.git", wanted],
            check=True,
        )  # fmt: skip
        found = "FETCH_HEAD"
    else:
        found = ref
    commit = subprocess.run(
        ["git", "-C", str(local), "rev-parse", "--verify", f"{found}^{{commit}}"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    if re.fullmatch(r"[0-9a-f]{40}", ref) and commit != ref:
        raise UpstreamChangedError(f"{repo}: fetched {commit}, not the pinned {ref}")
    tag = None if re.fullmatch(r"[0-9a-f]{40}", ref) else ref
    return Tree(repo=repo, git_dir=local, commit=commit, tag=tag)


# ----------------------------------------------------------------------------- recipes


def constants(tree: Tree, path: str) -> dict[str, Any]:
    """Module-level NAME = <literal> assignments of a Python file."""
    found: dict[str, Any] = {}
    for node in ast.parse(tree.read(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    found[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    continue
    return found


def key_paths(node: Any, prefix: str = "") -> Iterator[str]:
    """Every dotted key path of a mapping (intermediate mappings included)."""
    if not isinstance(node, Mapping):
        return
    for key, value in node.items():
        path = f"{prefix}{key}"
        yield path
        yield from key_paths(value, f"{path}.")


def chart_of(recipe: str, body: Mapping[str, Any]) -> str | None:
    """The chart main.py get_nova_launcher gives the recipe (None: not the k8s launcher)."""
    if all(word in recipe.lower() for word in ("nova", "rft", "smtj")):
        return None
    run = body.get("run") or {}
    training = body.get("training_config") or {}
    if run.get("generation_replicas") is not None or run.get("rollout_worker_replicas") is not None:
        return "RFT"
    if training.get("rollout") is not None:
        return "RFT"
    data = training.get("data")
    if isinstance(data, Mapping) and data.get("type") in ("single-turn", "multi-turn"):
        return "RFT"
    if all(body.get(k) is not None for k in PPO_KEYS) or all(
        training.get(k) is not None for k in PPO_KEYS
    ):
        return "PPO"
    return "SFT"


def chart_facts(tree: Tree) -> dict[str, Any]:
    """Each chart's objects (apiVersion, kind) and image references, per template."""
    charts: dict[str, Any] = {}
    for name, root in CHARTS.items():
        templates = [
            p for p in tree.files(root)
            if p.endswith(".yaml") and Path(p).name not in ("Chart.yaml", "values.yaml")
        ]  # fmt: skip
        objects: dict[tuple[str, str], dict[str, Any]] = {}
        images: dict[str, dict[str, Any]] = {}
        for path in templates:
            text = tree.read(path)
            api_version = None
            for line in text.splitlines():
                if match := re.match(r"^apiVersion:\s*(\S+)\s*$", line):
                    api_version = match.group(1)
                elif (match := re.match(r"^kind:\s*(\w+)\s*$", line)) and api_version:
                    kind = match.group(1)
                    group = api_version.rpartition("/")[0]
                    key = (group, kind)
                    objects.setdefault(key, {
                        "api_version": api_version, "kind": kind, "group": group,
                        "resource": kind.lower() + "s", "source": tree.source(path),
                    })  # fmt: skip
                    api_version = None
            for value in re.findall(r"image:\s*\{\{\s*([^}]+?)\s*\}\}", text):
                role = IMAGE_VALUES.get(value)
                if role is None:
                    raise UpstreamChangedError(
                        f"{tree.repo}@{tree.commit}:{path} references image {value}, which "
                        "tools/upstream_facts.py does not know; find where the launcher sets it"
                    )
                images.setdefault(role, {"value": value, "source": tree.source(path)})
        charts[name] = {
            "source": tree.source(root),
            "objects": [objects[k] for k in sorted(objects)],
            "images": {role: images[role] for role in sorted(images)},
        }
    return charts


def side_images(tree: Tree) -> dict[str, dict[str, Any]]:
    """role -> {regions: region -> URI, source}, as launcher/nova/utils.py builds them."""
    out: dict[str, dict[str, Any]] = {}
    for role, (module, image_name, map_name) in SIDE_IMAGES.items():
        path = f"{CONSTANTS}/{module}"
        found = constants(tree, path)
        if image_name not in found or map_name not in found:
            raise UpstreamChangedError(
                f"{tree.repo}@{tree.commit}:{path} lacks {image_name} or {map_name}"
            )
        template, accounts = found[image_name], found[map_name]
        regions = {
            region: template.format(account_id=account, region=region)
            for region, account in sorted(accounts.items())
        }
        out[role] = {"regions": regions, "source": tree.source(path)}
    tree.expect(
        "launcher/nova/utils.py",
        r"INIT_CONTAINER_IMAGE_URI\.format\(account_id=account_id, region=region\)",
    )
    return out


def recipe_facts(tree: Tree, charts: Mapping[str, Any]) -> dict[str, Any]:
    regional = json.loads(tree.read(REGIONAL))
    sides = side_images(tree)
    for marker in LAUNCHER_CHOICE:
        tree.expect("main.py", marker)
    recipes: dict[str, Any] = {}
    for path in tree.files(RECIPE_ROOT):
        name = path[len(RECIPE_ROOT) + 1 :].removesuffix(".yaml")
        if not name.startswith(RECIPE_FAMILIES) or not path.endswith(".yaml"):
            continue
        body = yamlsafe.load(tree.read(path))
        model_type = str((body.get("run") or {}).get("model_type", ""))
        chart = chart_of(name, body)
        if chart is None or not model_type.startswith("amazon.nova"):
            continue  # run by another launcher (SageMaker training jobs, MTRL)
        roles = sorted(charts[chart]["images"])
        images: dict[str, Any] = {}
        stem = Path(name).name
        main = ((regional.get(stem) or {}).get("k8s") or {}).get("container_image") or {}
        if main.get("prod"):
            images["main"] = {
                "regions": dict(sorted(main["prod"].items())),
                "source": tree.source(REGIONAL),
            }
        for role in roles:
            if role != "main":
                images[role] = sides[role]
        # The launcher raises for a region any of the chart's side images lacks; the
        # main image must be published there too.
        regions = set.intersection(*(set(images[r]["regions"]) for r in images))
        recipes[name] = {
            "source": tree.source(path),
            "chart": chart,
            "chart_source": tree.source("main.py"),
            "regions": sorted(regions),
            "images": {role: images[role] for role in sorted(images)},
            "keys": sorted(set(key_paths(body))),
        }
    return recipes


def training_job_facts(tree: Tree) -> dict[str, Any]:
    """Every Nova recipe upstream publishes a SageMaker training-job (SMTJ) image for: the
    regional parameters' `<recipe stem>.sm_jobs.container_image.prod.<region>`, the image
    the SageMaker Python SDK must be given for Nova (it has no image table of its own).
    Keys of the regional parameters without a recipe file are left out (there is one:
    nova_micro_1_0_g5_12x_gpu_lora_sft, whose recipe is ..._g5_g6_12x_...)."""
    regional = json.loads(tree.read(REGIONAL))
    recipes: dict[str, Any] = {}
    for path in tree.files(RECIPE_ROOT):
        name = path[len(RECIPE_ROOT) + 1 :].removesuffix(".yaml")
        if not name.startswith(RECIPE_FAMILIES) or not path.endswith(".yaml"):
            continue
        entry = regional.get(Path(name).name)
        sm_jobs = (entry.get("sm_jobs") or {}) if isinstance(entry, Mapping) else {}
        prod = (sm_jobs.get("container_image") or {}).get("prod") or {}
        if not prod:
            continue  # HyperPod only (CPT, PPO, HyperPod RFT) or no regional entry
        body = yamlsafe.load(tree.read(path))
        model_type = str((body.get("run") or {}).get("model_type", ""))
        if not model_type.startswith("amazon.nova"):
            raise UpstreamChangedError(
                f"{tree.repo}@{tree.commit}:{path} has a training-job image but its run."
                f"model_type is {model_type!r}, not an amazon.nova model; re-read {REGIONAL}"
            )
        recipes[name] = {
            "source": tree.source(path),
            "regions": sorted(prod),
            "image": {"regions": dict(sorted(prod.items())), "source": tree.source(REGIONAL)},
        }
    return recipes


def launcher_keys(tree: Tree) -> dict[str, Any]:
    """The keys of the launcher's root config (and cluster=k8s), overridable without `+`."""
    root = yamlsafe.load(tree.read("recipes_collection/config.yaml"))
    cluster = yamlsafe.load(tree.read("recipes_collection/cluster/k8s.yaml"))
    return {
        "root": {"keys": sorted(k for k in root if k != "defaults"), "source": tree.source("recipes_collection/config.yaml")},
        "cluster": {"keys": sorted(f"cluster.{k}" for k in cluster), "source": tree.source("recipes_collection/cluster/k8s.yaml")},
    }  # fmt: skip


# --------------------------------------------------------------------------------- CLI


def client_calls(tree: Tree) -> dict[str, tuple[str, str, str]]:
    """KubernetesClient method -> (group, resource, verb) of the API call it makes."""
    path = f"{CLI_ROOT}/clients/kubernetes_client.py"
    names: dict[str, Any] = {}
    for module in tree.files(f"{CLI_ROOT}/constants"):
        names.update(constants(tree, module))
    calls: dict[str, tuple[str, str, str]] = {}
    for node in ast.walk(ast.parse(tree.read(path))):
        if not isinstance(node, ast.FunctionDef):
            continue
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                continue
            match = re.fullmatch(
                r"(read|get|list|create|delete|patch|replace)_(namespaced_)?(\w+?)(_for_all_namespaces)?",
                call.func.attr,
            )
            if match is None or call.func.attr.startswith("list_kube"):
                continue
            verb, what = VERB_OF[match.group(1)], match.group(3)
            if what == "custom_object":
                args = {k.arg: k.value for k in call.keywords}
                group, plural = (
                    names[a.id] if isinstance(a, ast.Name) else ast.literal_eval(a)
                    for a in (args["group"], args["plural"])
                )
                calls[node.name] = (group, plural, verb)
            else:
                resource = {"pod_log": "pods/log"}.get(what, f"{what}s")
                calls[node.name] = ("", resource, verb)
    return calls


def cli_facts(tree: Tree, recipes: Tree) -> list[dict[str, Any]]:
    calls = client_calls(tree)
    facts: list[dict[str, Any]] = []
    for command, uses in CLI_COMMANDS.items():
        for service, method in uses:
            path = f"{CLI_ROOT}/{service}"
            tree.expect(path, rf"k8s_client\.{method}\(")
            if method not in calls:
                raise UpstreamChangedError(
                    f"{tree.repo}@{tree.commit}: KubernetesClient.{method} makes no API call"
                )
            group, resource, verb = calls[method]
            facts.append({
                "command": command, "group": group, "resource": resource, "verb": verb,
                "call": f"KubernetesClient.{method}", "source": tree.source(path),
            })  # fmt: skip
    for command, action, repo, path, marker in HELM_RUNS:
        holder = recipes if repo == RECIPES else tree
        holder.expect(path, marker)
        facts.append({"command": command, "helm": action, "source": holder.source(path)})
    return sorted(
        facts,
        key=lambda f: (f["command"], f.get("resource", ""), f.get("verb", ""), f.get("helm", "")),
    )


# ---------------------------------------------------------------- the training operator


def registry_of(reference: str) -> str:
    """The registry host of an image reference; Docker Hub when its first path component
    is not a host (no dot, no port, not localhost), as docker/distribution's reference
    normalization reads it (reference/normalize.go splitDockerDomain)."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def replica_types(tree: Tree, root: str) -> tuple[str, dict[str, str]]:
    """(template path, {replica type: "always" | "conditional"}) of a chart's PyTorchJob."""
    for path in tree.files(root):
        text = tree.read(path)
        if re.search(r"^kind:\s*PyTorchJob\s*$", text, re.MULTILINE):
            found: dict[str, str] = {}
            lines = text.splitlines()
            for number, line in enumerate(lines):
                if match := re.match(r"^    (Master|Worker):\s*$", line):
                    guarded = number > 0 and re.match(r"^\s*\{\{-?\s*if\b", lines[number - 1])
                    found[match.group(1)] = "conditional" if guarded else "always"
            if not found:
                raise UpstreamChangedError(
                    f"{tree.repo}@{tree.commit}:{path} has a PyTorchJob without Master or Worker"
                )
            return path, found
    raise UpstreamChangedError(f"{tree.repo}@{tree.commit}:{root} has no PyTorchJob template")


def operator_facts(cli: Tree, operator: Tree, recipes: Tree) -> dict[str, Any]:
    """The Kubeflow training operator the HyperPod chart installs: its image, whether it
    runs on restricted nodes, and the init container it adds to Nova jobs' pods."""
    values_path = f"{OPERATOR_CHART}/values.yaml"
    image = yaml.safe_load(cli.read(values_path))["image"]
    reference = f"{image['repository']}:{image['tag']}"
    match = re.fullmatch(r"v1-([0-9a-f]{7,40})", str(image["tag"]))
    if match is None or not operator.commit.startswith(match.group(1)):
        raise UpstreamChangedError(
            f"{cli.repo}@{cli.commit}:{values_path} pins training-operator {image['tag']}, "
            f"not {operator.commit[:7]}; pin TRAINING_OPERATOR_COMMIT to the commit of that tag"
        )
    deployment = cli.read(OPERATOR_DEPLOYMENT)
    # The operator takes its init container from a flag or, when mounted, from the
    # template file /etc/config/initContainer.yaml (pkg/config/config.go): neither may be
    # set, by the chart or by the RIG script's patch of the Deployment.
    rig_patch = re.search(
        r"^override_training_operators\(\) \{\n([\s\S]*?)^\}", cli.read(RIG_SCRIPT), re.M
    )
    if rig_patch is None:
        raise UpstreamChangedError(
            f"{cli.repo}@{cli.commit}:{RIG_SCRIPT} has no override_training_operators"
        )
    for where, text in ((OPERATOR_DEPLOYMENT, deployment), (RIG_SCRIPT, rig_patch.group(1))):
        if re.search(r"pytorch-init-container|volumeMounts|/etc/config|/command|/args", text):
            raise UpstreamChangedError(
                f"{cli.repo}@{cli.commit}:{where} now sets the operator's command, mounts or "
                "PyTorch init container; read the init image it gives"
            )
    cli.expect(OPERATOR_DEPLOYMENT, r"- /manager")
    if '"key": "sagemaker.amazonaws.com/RestrictedNode"' not in rig_patch.group(1):
        raise UpstreamChangedError(
            f"{cli.repo}@{cli.commit}:{RIG_SCRIPT}: override_training_operators no longer "
            "adds the restricted-node toleration"
        )
    config_path = "pkg/config/config.go"
    default = re.search(r'PyTorchInitContainerImageDefault = "([^"]+)"', operator.read(config_path))
    if default is None:
        raise UpstreamChangedError(
            f"{operator.repo}@{operator.commit}:{config_path} has no default image"
        )
    operator.expect(
        "cmd/training-operator.v1/main.go",
        r'"pytorch-init-container-image",\s*config\.PyTorchInitContainerImageDefault',
    )
    init_path = "pkg/controller.v1/pytorch/initcontainer.go"
    for marker in (
        r"- name: init-pytorch\s+image: \{\{\.InitContainerImage\}\}",
        r"PyTorchReplicaSpecs\[kubeflowv1\.PyTorchJobReplicaTypeMaster\] == nil",
        r"rtype == strings\.ToLower\(string\(kubeflowv1\.PyTorchJobReplicaTypeWorker\)\)",
    ):
        operator.expect(init_path, marker)
    mpi_values = f"{MPI_CHART}/values.yaml"
    mpi = yaml.safe_load(cli.read(mpi_values))["mpiOperator"]["image"]
    mpi_reference = f"{mpi['repository']}:{mpi['tag']}"
    cli.expect(
        RIG_SCRIPT,
        r"\noverride_mpi_operator\(\) \{[\s\S]*?\"key\": \"sagemaker\.amazonaws\.com/RestrictedNode\"",
    )
    cli.expect("helm_chart/HyperPodHelmChart/values.yaml", r"\nmpi-operator:\n  enabled: true\n")
    jobs = {}
    for name, root in CHARTS.items():
        path, types = replica_types(recipes, root)
        jobs[name] = {"replicas": types, "source": recipes.source(path)}
    return {
        "image": {
            "value": reference,
            "registry": registry_of(reference),
            "source": cli.source(values_path),
        },
        # The chart starts the operator without --pytorch-init-container-image.
        "sets_init_image": {"value": False, "source": cli.source(OPERATOR_DEPLOYMENT)},
        "tolerates_restricted_nodes": {"value": True, "source": cli.source(RIG_SCRIPT)},
        "init_container": {
            "name": "init-pytorch",
            "image": default.group(1),
            "registry": registry_of(default.group(1)),
            "source": operator.source(config_path),
            "added_to": {
                "value": "Worker pods of a PyTorchJob that has a Master replica",
                "source": operator.source(init_path),
            },
        },
        "charts": jobs,
        # The MPI operator of the same chart: patched by the RIG script like this one.
        "mpi_operator": {
            "image": mpi_reference,
            "registry": registry_of(mpi_reference),
            "tolerates_restricted_nodes": True,
            "source": cli.source(mpi_values),
        },
    }


# -------------------------------------------------------------------------------- Helm


def helm_facts(helm: Mapping[int, Tree], apiserver: Tree) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    for major, action, objects, verb, repo, markers in HELM_FACTS:
        tree = helm[major] if repo == HELM else apiserver
        for path, marker in markers:
            tree.expect(path, marker)
        facts.append({
            "helm": major, "action": action, "objects": objects, "verb": verb,
            "source": tree.source(markers[-1][0]),
        })  # fmt: skip
    return facts


# ------------------------------------------------------------------------------ output


HEADER = """\
# Upstream facts novapod is tested against: images, chart objects, recipe keys, Helm and
# CLI verbs, each with its provenance (repo, commit, path). GENERATED by
# tools/upstream_facts.py (`make upstream-facts`) from the pinned commits below; do not
# edit by hand: change the pins in the Makefile and regenerate. Loaded by
# novapod/nova/upstream.py.
"""


def facts(
    recipes: Tree, cli: Tree, operator: Tree, helm: Mapping[int, Tree], apiserver: Tree
) -> dict[str, Any]:
    charts = chart_facts(recipes)
    return {
        "sources": {
            "recipes": {"repo": recipes.repo, "commit": recipes.commit},
            "cli": {"repo": cli.repo, "commit": cli.commit},
            "training_operator": {"repo": operator.repo, "commit": operator.commit},
            **{
                f"helm{major}": {"repo": tree.repo, "commit": tree.commit, "tag": tree.tag}
                for major, tree in sorted(helm.items())
            },
            "apiserver": {"repo": apiserver.repo, "commit": apiserver.commit, "tag": apiserver.tag},
        },
        "charts": charts,
        "recipes": recipe_facts(recipes, charts),
        "launcher_keys": launcher_keys(recipes),
        "helm": helm_facts(helm, apiserver),
        "cli": cli_facts(cli, recipes),
        "training_operator": operator_facts(cli, operator, recipes),
        # Appended last, so the facts above keep their bytes.
        "training_jobs": training_job_facts(recipes),
    }


class _Dumper(yaml.SafeDumper):
    """Every value written out in full: no YAML anchors for repeated values."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(document: Mapping[str, Any]) -> str:
    body = yaml.dump(
        dict(document), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100
    )
    return HEADER + body


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes-commit", required=True)
    parser.add_argument("--cli-commit", required=True)
    parser.add_argument("--training-operator-commit", required=True)
    parser.add_argument("--helm3-tag", required=True)
    parser.add_argument("--helm4-tag", required=True)
    parser.add_argument("--apiserver-tag", required=True)
    for name in ("recipes", "cli", "training-operator", "helm", "apiserver"):
        parser.add_argument(
            f"--{name}-git", type=Path, help=f"local git dir of {name} (default: fetch from GitHub)"
        )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--check", action="store_true", help="fail if --out differs instead of writing it"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="upstream-facts-") as scratch:
        where = Path(scratch)
        try:
            recipes = open_tree(RECIPES, args.recipes_commit, args.recipes_git, where)
            cli = open_tree(CLI, args.cli_commit, args.cli_git, where)
            operator = open_tree(
                TRAINING_OPERATOR, args.training_operator_commit, args.training_operator_git, where
            )
            helm = {
                3: open_tree(HELM, args.helm3_tag, args.helm_git, where / "3"),
                4: open_tree(HELM, args.helm4_tag, args.helm_git, where / "4"),
            }
            apiserver = open_tree(APISERVER, args.apiserver_tag, args.apiserver_git, where)
            text = render(facts(recipes, cli, operator, helm, apiserver))
        except UpstreamChangedError as error:
            print(f"upstream-facts: {error}", file=sys.stderr)
            return 1
    if args.check:
        if not args.out.is_file() or args.out.read_text() != text:
            print(
                f"upstream-facts: {args.out} is not what the pinned commits give; run make upstream-facts",
                file=sys.stderr,
            )
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
