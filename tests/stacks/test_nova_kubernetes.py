"""The Nova namespace and RBAC in the EKS stack's template: carried by the bootstrap
custom resource (and its build's environment) only when the config has Nova jobs."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from novapod.config import load_config
from novapod.nova.kubernetes import MONITOR_ROLE
from novapod.nova.render import bundle
from tests.conftest import DEFAULT_CONFIG, ROOT, resources

EXAMPLE = ROOT / "config" / "examples" / "nova-jobs.yaml"
BOOTSTRAP = "Custom::NovapodClusterBootstrap"
MANAGED = {"app.kubernetes.io/managed-by": "novapod"}
RBAC = "rbac.authorization.k8s.io"


def bootstrap_props(template: dict[str, Any]) -> dict[str, Any]:
    (resource,) = resources(template, BOOTSTRAP).values()
    return resource["Properties"]


def listed_objects(props: dict[str, Any]) -> list[dict[str, Any]]:
    listed = json.loads(props["BuildEnvironment"]["NOVA_ACCESS_MANIFEST"])
    assert listed["apiVersion"] == "v1" and listed["kind"] == "List"
    items: list[dict[str, Any]] = listed["items"]
    return items


def manifests(synth) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The bootstrap's properties and its access objects by kind, but the scheduled
    check's Role and RoleBinding (tests/stacks/test_monitor.py holds those)."""
    props = bootstrap_props(synth(EXAMPLE).templates["eks"])
    items = listed_objects(props)
    by_kind = {o["kind"]: o for o in items if o["metadata"]["name"] != MONITOR_ROLE}
    assert len(by_kind) == 4 and len(items) == 6
    return props, by_kind


FACTS: dict[str, Any] = yaml.safe_load((ROOT / "novapod/data/nova_upstream.yaml").read_text())


def helm_requests(major: int) -> set[tuple[str, str, str]]:
    """(group, resource, verb) that Helm `major` and the CLI send, from the facts file:
    every kind a Nova chart creates x Helm's verbs on chart objects, its release Secrets,
    and the CLI's own calls."""
    kinds = {(o["group"], o["resource"]) for c in FACTS["charts"].values() for o in c["objects"]}
    verbs = {f["verb"] for f in FACTS["helm"] if f["helm"] == major and f["objects"] == "chart"}
    release = {f["verb"] for f in FACTS["helm"] if f["helm"] == major and f["objects"] == "release"}
    cli = {(f["group"], f["resource"], f["verb"]) for f in FACTS["cli"] if "verb" in f}
    return (
        {(g, r, v) for g, r in kinds for v in verbs} | {("", "secrets", v) for v in release} | cli
    )


def test_the_scientists_role_grants_every_kind_and_verb_helm_3_and_4_need(synth) -> None:
    _, objects = manifests(synth)
    role = objects["Role"]
    assert role["apiVersion"] == f"{RBAC}/v1"
    assert role["metadata"] == {
        "name": "novapod-nova-scientists",
        "namespace": "nova-jobs",
        "labels": MANAGED,
    }
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    for major in (3, 4):
        assert helm_requests(major) <= granted, major
    # Helm 4 installs by server-side apply: PATCH, authorized as patch.
    assert ("kubeflow.org", "pytorchjobs", "patch") in granted
    # And nothing else: no wildcard, no verb neither Helm nor the CLI uses.
    assert granted == helm_requests(3) | helm_requests(4)


def test_the_restricted_groups_pull_every_image_their_jobs_need(synth) -> None:
    from tests.fakes.iam import Request, authorize, parse_statement, resolve

    result = synth(EXAMPLE)
    template = result.templates["eks"]
    role_id = next(k for k in resources(template, "AWS::IAM::Role") if "RestrictedGroupRole" in k)
    statements = [
        parse_statement(s)
        for policy in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"].get("Roles", [])
        for s in resolve(
            policy["Properties"]["PolicyDocument"]["Statement"],
            account="111122223333",
            region="us-east-1",
        )
    ]
    files = bundle(load_config(EXAMPLE))
    index = json.loads(files["index.json"])
    launched = [job for job in index["jobs"] if job["launch"]]
    assert {job["technique"] for job in launched} >= {"sft-lora", "ppo", "rft-lora", "evaluation"}
    images = set()
    for job in launched:
        recipe = json.loads(files[job["launch"]])["recipe"]
        for image in FACTS["recipes"][recipe]["images"].values():
            images.add(image["regions"]["us-east-1"])
    assert any("/init-container-repo:" in uri for uri in images)
    for uri in sorted(images):
        registry, _, path = uri.partition("/")
        account = registry.split(".")[0]
        arn = f"arn:aws:ecr:us-east-1:{account}:repository/{path.rsplit(':', 1)[0]}"
        for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"):
            assert authorize(statements, Request(action=action, resource=arn)) == "allowed", uri


def test_the_role_is_bound_to_the_scientists_group_of_their_access_entries(synth) -> None:
    result = synth(EXAMPLE)
    _, objects = manifests(synth)
    binding = objects["RoleBinding"]
    assert binding["metadata"]["namespace"] == "nova-jobs"
    assert binding["roleRef"] == {
        "apiGroup": RBAC,
        "kind": "Role",
        "name": "novapod-nova-scientists",
    }
    assert binding["subjects"] == [
        {"apiGroup": RBAC, "kind": "Group", "name": "novapod-nova-scientists"}
    ]
    # The same group the scientists' EKS access entries (nova stack) map them to.
    groups = {
        g
        for entry in resources(result.templates["nova"], "AWS::EKS::AccessEntry").values()
        for g in entry["Properties"].get("KubernetesGroups", [])
    }
    assert "novapod-nova-scientists" in groups


def test_the_environment_check_may_only_get_namespaces_and_crds(synth) -> None:
    _, objects = manifests(synth)
    cluster_role = objects["ClusterRole"]
    assert cluster_role["metadata"] == {"name": "novapod-nova-environment-check", "labels": MANAGED}
    assert cluster_role["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "verbs": ["get"],
        },
    ]
    binding = objects["ClusterRoleBinding"]
    assert binding["roleRef"] == {
        "apiGroup": RBAC,
        "kind": "ClusterRole",
        "name": "novapod-nova-environment-check",
    }
    assert binding["subjects"] == [
        {"apiGroup": RBAC, "kind": "Group", "name": "novapod-nova-environment-check"}
    ]


def test_no_wildcards_and_no_cluster_admin(synth) -> None:
    props, _ = manifests(synth)
    for obj in listed_objects(props):
        for rule in obj.get("rules", []):
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], (obj["kind"], rule)
            assert not {"escalate", "bind", "impersonate", "watch"} & set(rule["verbs"])
        assert obj.get("roleRef", {}).get("name") != "cluster-admin"


def test_the_namespace_and_the_change_trigger_are_in_the_template(synth) -> None:
    props, _ = manifests(synth)
    variables = props["BuildEnvironment"]
    assert variables["NOVA_NAMESPACE"] == "nova-jobs"
    assert json.loads(variables["NOVA_NAMESPACE_MANIFEST"]) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "nova-jobs", "labels": MANAGED},
    }
    assert variables["NOVA_ACCESS_OBJECTS"].split() == [
        f"nova-jobs/role.{RBAC}/novapod-nova-scientists",
        f"nova-jobs/rolebinding.{RBAC}/novapod-nova-scientists",
        f"/clusterrole.{RBAC}/novapod-nova-environment-check",
        f"/clusterrolebinding.{RBAC}/novapod-nova-environment-check",
        f"nova-jobs/role.{RBAC}/novapod-monitor",
        f"nova-jobs/rolebinding.{RBAC}/novapod-monitor",
    ]
    assert re.fullmatch(r"[0-9a-f]{64}", props["KubernetesSha256"])
    assert variables["NOVA_ACCESS_SHA256"] == props["KubernetesSha256"]
    # Within what StartBuild accepts per variable.
    assert all(len(k) + len(v) <= 4096 for k, v in variables.items())


def test_without_jobs_the_bootstrap_carries_no_kubernetes_objects(synth) -> None:
    props = bootstrap_props(synth(DEFAULT_CONFIG).templates["eks"])
    assert "KubernetesSha256" not in props
    assert not [k for k in props["BuildEnvironment"] if k.startswith("NOVA_")]
