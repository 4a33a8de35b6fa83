"""The Nova namespace and RBAC in the EKS stack's template: carried by the bootstrap
custom resource (and its build's environment) only when the config has Nova jobs."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import DEFAULT_CONFIG, ROOT, resources

EXAMPLE = ROOT / "config" / "examples" / "nova-jobs.yaml"
BOOTSTRAP = "Custom::NovapodClusterBootstrap"
MANAGED = {"app.kubernetes.io/managed-by": "novapod"}
RBAC = "rbac.authorization.k8s.io"


def bootstrap_props(template: dict[str, Any]) -> dict[str, Any]:
    (resource,) = resources(template, BOOTSTRAP).values()
    return resource["Properties"]


def manifests(synth) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The bootstrap's properties and its access objects by kind."""
    props = bootstrap_props(synth(EXAMPLE).templates["eks"])
    listed = json.loads(props["BuildEnvironment"]["NOVA_ACCESS_MANIFEST"])
    assert listed["apiVersion"] == "v1" and listed["kind"] == "List"
    by_kind = {o["kind"]: o for o in listed["items"]}
    assert len(by_kind) == len(listed["items"]) == 4
    return props, by_kind


def test_the_scientists_role_has_exactly_the_kinds_and_verbs_of_the_nova_charts(synth) -> None:
    _, objects = manifests(synth)
    role = objects["Role"]
    assert role["apiVersion"] == f"{RBAC}/v1"
    assert role["metadata"] == {
        "name": "novapod-nova-scientists",
        "namespace": "nova-jobs",
        "labels": MANAGED,
    }
    assert role["rules"] == [
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["pytorchjobs"],
            "verbs": ["create", "delete", "get", "list"],
        },
        {
            "apiGroups": [""],
            "resources": ["configmaps", "services"],
            "verbs": ["create", "delete", "get"],
        },
        {
            "apiGroups": ["apps"],
            "resources": ["deployments", "statefulsets"],
            "verbs": ["create", "delete", "get"],
        },
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get"]},
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "verbs": ["create", "delete", "get", "list", "update"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    ]


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
    _, objects = manifests(synth)
    for obj in objects.values():
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
    ]
    assert re.fullmatch(r"[0-9a-f]{64}", props["KubernetesSha256"])
    assert variables["NOVA_ACCESS_SHA256"] == props["KubernetesSha256"]
    # Within what StartBuild accepts per variable.
    assert all(len(k) + len(v) <= 4096 for k, v in variables.items())


def test_without_jobs_the_bootstrap_carries_no_kubernetes_objects(synth) -> None:
    props = bootstrap_props(synth(DEFAULT_CONFIG).templates["eks"])
    assert "KubernetesSha256" not in props
    assert not [k for k in props["BuildEnvironment"] if k.startswith("NOVA_")]
