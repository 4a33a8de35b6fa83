"""The Nova namespace and RBAC objects (pure), and their build variables."""

from __future__ import annotations

import json

import pytest

from novapod.constructs.cluster_bootstrap import buildspec
from novapod.nova import kubernetes
from novapod.nova.kubernetes import ENVIRONMENT_CHECK_GROUP, nova_access, object_ref


def test_the_environment_check_group_is_a_stable_name() -> None:
    # The NovaEnvironment check's access entry maps its role to this group.
    assert ENVIRONMENT_CHECK_GROUP == "novapod-nova-environment-check"


def test_namespaced_objects_follow_the_namespace_and_cluster_ones_do_not() -> None:
    access = nova_access("team-a")
    assert access.namespace_object["metadata"]["name"] == "team-a"
    assert [o["metadata"].get("namespace") for o in access.objects] == [
        "team-a",
        "team-a",
        None,
        None,
        "team-a",
        "team-a",
    ]
    assert access.refs() == (
        "team-a/role.rbac.authorization.k8s.io/novapod-nova-scientists",
        "team-a/rolebinding.rbac.authorization.k8s.io/novapod-nova-scientists",
        "/clusterrole.rbac.authorization.k8s.io/novapod-nova-environment-check",
        "/clusterrolebinding.rbac.authorization.k8s.io/novapod-nova-environment-check",
        "team-a/role.rbac.authorization.k8s.io/novapod-monitor",
        "team-a/rolebinding.rbac.authorization.k8s.io/novapod-monitor",
    )


def test_object_ref_of_a_core_object_has_no_group() -> None:
    assert object_ref({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}) == (
        "/namespace/x"
    )


def test_the_digest_changes_with_the_namespace_only() -> None:
    assert nova_access("team-a").digest() == nova_access("team-a").digest()
    assert nova_access("team-a").digest() != nova_access("team-b").digest()


def test_the_manifest_is_one_kubectl_list() -> None:
    listed = json.loads(nova_access("kubeflow").manifest())
    assert [o["kind"] for o in listed["items"]] == [
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ]


def test_the_longest_namespace_fits_codebuilds_variable_limit() -> None:
    variables = buildspec.access_variables(nova_access("n" * 63))  # a DNS label's maximum
    assert max(len(k) + len(v) for k, v in variables.items()) < 4096
    assert set(variables) == {
        "NOVA_NAMESPACE",
        "NOVA_NAMESPACE_MANIFEST",
        "NOVA_ACCESS_MANIFEST",
        "NOVA_ACCESS_OBJECTS",
        "NOVA_ACCESS_SHA256",
    }


def test_a_variable_over_the_limit_fails_synthesis_in_one_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(buildspec, "MAX_VARIABLE_CHARS", 1000)
    with pytest.raises(ValueError) as error:
        buildspec.access_variables(nova_access("kubeflow"))
    message = str(error.value)
    assert message.startswith("the bootstrap build variable NOVA_ACCESS_MANIFEST would be ")
    assert message.endswith("characters; CodeBuild takes at most 1000 per variable")


def test_rules_name_no_wildcards() -> None:
    for rules in (kubernetes.scientist_rules(), kubernetes.ENVIRONMENT_CHECK_RULES):
        for groups, kinds, verbs in rules:
            assert "*" not in groups + kinds + verbs
