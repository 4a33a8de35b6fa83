"""bootstrap.sh against fakes: the Nova jobs' namespace and access objects.

Applied after the charts, server-side and idempotently; objects a later config drops are
deleted; a namespace novapod did not create (kubeflow from the HyperPod chart) is never
created, modified or deleted; a namespace that still holds PyTorchJobs is left in place.
"""

from __future__ import annotations

import pytest

from tests.bootstrap.conftest import Sandbox, nova_env

ROLE = "role.rbac.authorization.k8s.io"
ROLE_BINDING = "rolebinding.rbac.authorization.k8s.io"
CLUSTER_ROLE = "clusterrole.rbac.authorization.k8s.io"
CLUSTER_ROLE_BINDING = "clusterrolebinding.rbac.authorization.k8s.io"
SCIENTISTS = "novapod-nova-scientists"
CHECK = "novapod-nova-environment-check"
MONITOR = "novapod-monitor"


def calls_of(sandbox: Sandbox, *prefix: str) -> list[list[str]]:
    return [c for c in sandbox.calls("kubectl") if c[1 : 1 + len(prefix)] == list(prefix)]


def deletes(sandbox: Sandbox) -> list[list[str]]:
    """`kubectl delete TYPE NAME [--namespace NS]` as [type, name, namespace]."""
    out = []
    for call in calls_of(sandbox, "delete"):
        namespace = call[call.index("--namespace") + 1] if "--namespace" in call else ""
        out.append([call[2], call[3], namespace])
    return out


def test_install_creates_the_namespace_then_applies_the_objects_server_side(
    sandbox: Sandbox,
) -> None:
    env = nova_env("team-a")
    result = sandbox.run("install", rig=False, **env)
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    upgrade = calls.index(next(c for c in calls if c[:3] == ["helm", "upgrade", "--install"]))
    create = calls.index(calls_of(sandbox, "create", "--filename")[0])
    (apply,) = calls_of(sandbox, "apply", "--server-side")
    assert upgrade < create < calls.index(apply)
    assert "--field-manager=novapod-cluster-bootstrap" in apply
    assert "--force-conflicts" in apply
    assert sandbox.namespaces() == {"team-a": "novapod"}

    (applied,) = sandbox.applied()
    assert applied["kind"] == "List"
    assert [(o["kind"], o["metadata"].get("namespace")) for o in applied["items"]] == [
        ("Role", "team-a"),
        ("RoleBinding", "team-a"),
        ("ClusterRole", None),
        ("ClusterRoleBinding", None),
        ("Role", "team-a"),
        ("RoleBinding", "team-a"),
    ]
    marker = sandbox.marker()
    assert marker["nova_access_sha256"] == env["NOVA_ACCESS_SHA256"]
    assert marker["nova_access_objects"].split() == [
        f"team-a/{ROLE}/{SCIENTISTS}",
        f"team-a/{ROLE_BINDING}/{SCIENTISTS}",
        f"/{CLUSTER_ROLE}/{CHECK}",
        f"/{CLUSTER_ROLE_BINDING}/{CHECK}",
        f"team-a/{ROLE}/{MONITOR}",
        f"team-a/{ROLE_BINDING}/{MONITOR}",
    ]
    assert marker["nova_namespace"] == "team-a"
    assert "created namespace team-a" in result.stdout


def test_a_second_run_with_the_same_objects_changes_nothing(sandbox: Sandbox) -> None:
    env = nova_env("team-a")
    assert sandbox.run("install", rig=False, **env).returncode == 0
    result = sandbox.run("install", rig=False, **env)
    assert result.returncode == 0, result.stderr
    assert calls_of(sandbox, "apply") == []
    assert calls_of(sandbox, "create", "--filename") == []
    assert deletes(sandbox) == []
    assert f"Nova access objects already at {env['NOVA_ACCESS_SHA256']}" in result.stdout
    assert len(sandbox.applied()) == 1


@pytest.mark.parametrize("manager", ["Helm", ""])
def test_an_existing_namespace_is_used_and_never_created_or_deleted(
    sandbox: Sandbox, manager: str
) -> None:
    # kubeflow as the HyperPod chart's training operator leaves it (Helm), or by hand.
    sandbox.set_namespace("kubeflow", manager)
    result = sandbox.run("install", rig=False, **nova_env("kubeflow"))
    assert result.returncode == 0, result.stderr
    assert calls_of(sandbox, "create", "--filename") == []
    (applied,) = sandbox.applied()
    assert {o["kind"] for o in applied["items"]} == {
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    }
    assert all(o["kind"] != "Namespace" for o in applied["items"])  # never applied to
    assert sandbox.marker()["nova_namespace"] == ""
    assert f"managed by '{manager}' (not novapod)" in result.stdout

    # The config drops its jobs: the objects go, the namespace stays as it was.
    result = sandbox.run("install", rig=False)
    assert result.returncode == 0, result.stderr
    assert deletes(sandbox) == [
        [ROLE, SCIENTISTS, "kubeflow"],
        [ROLE_BINDING, SCIENTISTS, "kubeflow"],
        [CLUSTER_ROLE, CHECK, ""],
        [CLUSTER_ROLE_BINDING, CHECK, ""],
        [ROLE, MONITOR, "kubeflow"],
        [ROLE_BINDING, MONITOR, "kubeflow"],
    ]
    assert sandbox.namespaces() == {"kubeflow": manager}
    assert sandbox.marker()["nova_access_sha256"] == ""
    assert sandbox.marker()["nova_access_objects"] == ""


def test_a_new_namespace_deletes_the_old_objects_and_the_namespace_novapod_created(
    sandbox: Sandbox,
) -> None:
    assert sandbox.run("install", rig=False, **nova_env("team-a")).returncode == 0
    result = sandbox.run("install", rig=False, **nova_env("team-b"))
    assert result.returncode == 0, result.stderr
    # The cluster-wide objects are still declared: applied again, not deleted.
    assert deletes(sandbox) == [
        [ROLE, SCIENTISTS, "team-a"],
        [ROLE_BINDING, SCIENTISTS, "team-a"],
        [ROLE, MONITOR, "team-a"],
        [ROLE_BINDING, MONITOR, "team-a"],
        ["namespace", "team-a", ""],
    ]
    assert sandbox.namespaces() == {"team-b": "novapod"}
    assert sandbox.applied()[-1]["items"][0]["metadata"]["namespace"] == "team-b"
    assert sandbox.marker()["nova_namespace"] == "team-b"
    assert "deleted namespace team-a: no longer declared" in result.stdout


def test_a_namespace_that_still_holds_jobs_is_left_in_place(sandbox: Sandbox) -> None:
    assert sandbox.run("install", rig=False, **nova_env("team-a")).returncode == 0
    sandbox.set_jobs("team-a", "lite-sft-x7k2p")
    result = sandbox.run("install", rig=False)
    assert result.returncode == 0, result.stderr
    assert ["namespace", "team-a", ""] not in deletes(sandbox)
    assert sandbox.namespaces() == {"team-a": "novapod"}
    assert (
        "left in place: namespace team-a (it still holds PyTorchJobs; delete it once they are done)"
    ) in result.stdout
    assert sandbox.marker()["nova_namespace"] == ""


def test_a_failed_apply_fails_the_build_and_records_nothing(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=False, FAKE_KUBECTL_APPLY_FAIL="1", **nova_env("team-a"))
    assert result.returncode == 1
    assert "could not apply the Nova access objects in namespace team-a" in result.stderr
    assert sandbox.marker()["nova_access_sha256"] == ""  # the next deploy applies again
    assert sandbox.marker()["chart_revision"]  # the chart step before it was recorded


def test_delete_removes_the_objects_and_the_namespace_it_created_before_the_charts(
    sandbox: Sandbox,
) -> None:
    env = nova_env("team-a")
    assert sandbox.run("install", rig=False, **env).returncode == 0
    result = sandbox.run("delete", rig=False, **env)
    assert result.returncode == 0, result.stderr
    assert deletes(sandbox)[:7] == [
        [ROLE, SCIENTISTS, "team-a"],
        [ROLE_BINDING, SCIENTISTS, "team-a"],
        [CLUSTER_ROLE, CHECK, ""],
        [CLUSTER_ROLE_BINDING, CHECK, ""],
        [ROLE, MONITOR, "team-a"],
        [ROLE_BINDING, MONITOR, "team-a"],
        ["namespace", "team-a", ""],
    ]
    calls = sandbox.calls()
    last_nova = max(i for i, c in enumerate(calls) if c[:3] == ["kubectl", "delete", "namespace"])
    first_uninstall = min(i for i, c in enumerate(calls) if c[:2] == ["helm", "uninstall"])
    assert last_nova < first_uninstall
    assert sandbox.namespaces() == {}
    assert f"removed: team-a/{ROLE}/{SCIENTISTS}" in result.stdout
    assert "removed: namespace team-a" in result.stdout


def test_delete_never_removes_a_namespace_novapod_did_not_create(sandbox: Sandbox) -> None:
    sandbox.set_namespace("kubeflow", "Helm")
    env = nova_env("kubeflow")
    assert sandbox.run("install", rig=False, **env).returncode == 0
    result = sandbox.run("delete", rig=False, **env)
    assert result.returncode == 0, result.stderr
    assert ["namespace", "kubeflow", ""] not in deletes(sandbox)
    assert sandbox.namespaces() == {"kubeflow": "Helm"}
    assert "left in place: namespace kubeflow (novapod did not create it)" in result.stdout
