"""`novapod status` drift beyond the groups and plans: the EKS cluster's Kubernetes version
against `eks.kubernetes_version`, the bootstrap's marker ConfigMap against what the pins
and the config install (read through the Kubernetes API with the caller's credentials: a
note for the scientists' namespaced Role), and the nodes launched since CloudFormation
last updated the cluster. Against the fake control plane (EKS DescribeCluster and
CloudFormation DescribeStackResource checked against botocore's model) and the fake
Kubernetes API; text, JSON and exit status.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from novapod.constructs.cluster_bootstrap import buildspec
from novapod.pins import default_pins
from tests.handlers.status_world import (
    CLUSTER,
    MARKER_PATH,
    NOW,
    PLAN_START,
    STACK_UPDATED,
    StatusWorld,
    status_kube,
    status_world,
)

__all__ = ["status_kube", "status_world"]  # fixtures

MARKER = "kube-system/novapod-hyperpod-dependencies"
SUBJECT = f"eks cluster {CLUSTER}"


@pytest.fixture(autouse=True)
def _answers_fit_the_model(status_world: StatusWorld) -> Any:
    yield
    assert status_world.plane.violations == []


def eks_deploy(world: StatusWorld) -> str:
    return f"npx cdk deploy -c config={world.path} novapod-dev-eks"


def drift_of(document: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    return [(d["subject"], d["field"], d["config"], d["deployed"]) for d in document["drift"]]


def text_section(out: str, title: str) -> list[str]:
    lines = out[out.index(title) :].splitlines()
    return lines[: lines.index("") if "" in lines else len(lines)]


# --- the Kubernetes version -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("deployed", "message"),
    [
        (
            "1.33",
            "Kubernetes 1.33 in the cluster, 1.34 in the config; a deploy of the eks stack "
            "upgrades it in place",
        ),
        (
            "1.32",
            "Kubernetes 1.32 in the cluster, 1.34 in the config; EKS upgrades one minor version "
            'at a time: set eks.kubernetes_version to "1.33", deploy the eks stack, and repeat '
            "(docs/operations.md, Upgrading Kubernetes)",
        ),
        (
            "1.35",
            "Kubernetes 1.35 in the cluster, 1.34 in the config: it was upgraded outside "
            "CloudFormation (by hand, or by EKS at the end of extended support) and EKS cannot "
            'downgrade; set eks.kubernetes_version: "1.35" in the config, then deploy the eks '
            "stack",
        ),
    ],
)
def test_a_kubernetes_version_other_than_the_config_s_is_drift(
    status_world, deployed, message
) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.eks_clusters[CLUSTER]["version"] = deployed
    code, document, out = world.json_and_text()  # and the same round as text
    assert code == 4
    assert document["drift"] == [
        {
            "subject": SUBJECT,
            "field": "kubernetes_version",
            "config": "1.34",
            "deployed": deployed,
            "message": message,
            "command": eks_deploy(world),
        }
    ]
    assert [(a["kind"], a["subject"]) for a in document["attention"]] == [("drift", SUBJECT)]
    eks = document["eks"]
    assert (eks["status"], eks["kubernetes_version"], eks["config_kubernetes_version"]) == (
        "ACTIVE",
        deployed,
        "1.34",
    )
    status = code
    assert status == 4
    assert f"EKS cluster {CLUSTER}: ACTIVE, Kubernetes {deployed} (the config has 1.34)" in out
    drift = text_section(out, "Drift from the config")
    assert drift[2].split() == [
        "eks",
        "cluster",
        CLUSTER,
        "kubernetes_version",
        "1.34",
        deployed,
        *eks_deploy(world).split(),
    ]


def test_an_eks_cluster_being_upgraded_is_not_drift_yet(status_world) -> None:
    world = status_world.healthy()
    cluster = world.plane.hyperpod.eks_clusters[CLUSTER]
    cluster["version"], cluster["status"] = "1.33", "UPDATING"
    code, document = world.json()
    assert (code, document["drift"]) == (0, [])
    assert document["eks"]["status"] == "UPDATING"


def test_an_eks_cluster_not_deployed_is_drift(status_world) -> None:
    world = status_world.healthy()
    del world.plane.hyperpod.eks_clusters[CLUSTER]
    code, document = world.json()
    assert code == 4
    assert drift_of(document) == [(SUBJECT, "cluster", CLUSTER, None)]
    assert document["drift"][0]["command"] == eks_deploy(world)
    assert document["eks"] == {
        "name": CLUSTER,
        "deployed": False,
        "status": None,
        "kubernetes_version": None,
        "config_kubernetes_version": "1.34",
        "marker": None,
    }
    assert world.kube.requests == []  # no cluster, no API to ask


# --- the bootstrap's marker ---------------------------------------------------------------------


def test_a_marker_as_the_pins_say_is_no_drift(status_world) -> None:
    world = status_world.healthy()
    world.as_admin()
    recorded = world.marker()
    code, document, out = world.json_and_text()  # and the same round as text
    assert (code, document["drift"]) == (0, [])
    marker = document["eks"]["marker"]
    pins = default_pins()
    # What the bootstrap records: the pins' revisions (RIG: the config has restricted
    # groups) and the digest of the jobs' namespace and access objects.
    assert marker["expected"] == {
        "chart_revision": f"{pins.chart.commit}:{pins.chart.path}",
        "rig_revision": f"{pins.rig.commit}:{pins.rig.script}",
        "nova_access_sha256": recorded["nova_access_sha256"],
    }
    assert len(marker["expected"]["nova_access_sha256"]) == 64
    assert marker == {
        "namespace": "kube-system",
        "name": buildspec.MARKER_CONFIGMAP,
        "read": True,
        "found": True,
        "note": None,
        "recorded": marker["expected"],
        "expected": marker["expected"],
    }
    assert ("GET", MARKER_PATH) in [(r.method, r.path) for r in world.kube.requests]
    assert f"  bootstrap marker {MARKER}: as the pins and the config say" in out


@pytest.mark.parametrize(
    ("key", "recorded", "field", "message"),
    [
        (
            "chart_revision",
            "0123456789abcdef0123456789abcdef01234567:helm_chart/HyperPodHelmChart",
            "chart_revision",
            "the HyperPod dependencies chart is at 0123456789abcdef0123456789abcdef01234567:"
            "helm_chart/HyperPodHelmChart, the pins say {wanted}; a deploy of the eks stack "
            "installs the pinned revision",
        ),
        (
            "rig_revision",
            "",
            "rig_revision",
            "the RIG dependencies are at no recorded revision, the pins say {wanted}; a deploy "
            "of the eks stack installs them where none are, and refuses over another revision "
            "(uninstall it first: docs/operations.md, Upgrading Kubernetes)",
        ),
        (
            "nova_access_sha256",
            "f" * 64,
            "nova_access",
            "the Nova jobs' namespace and access objects in the cluster are not the config's "
            "(digest ffffffffffff, the config's {short}); a deploy of the eks stack applies them",
        ),
    ],
)
def test_a_marker_that_records_something_else_is_drift(
    status_world, key, recorded, field, message
) -> None:
    world = status_world.healthy()
    world.as_admin()
    world.marker(**{key: recorded})
    code, document, out = world.json_and_text()  # and the same round as text
    assert code == 4
    wanted = document["eks"]["marker"]["expected"][key]
    assert drift_of(document) == [(SUBJECT, field, wanted, recorded or None)]
    (drift,) = document["drift"]
    assert drift["message"] == message.format(wanted=wanted, short=wanted[:12])
    assert drift["command"] == eks_deploy(world)
    assert document["eks"]["marker"]["recorded"][key] == (recorded or None)
    assert f"  bootstrap marker {MARKER}: {key} differ (see the drift)" in out


def test_a_missing_marker_is_drift(status_world) -> None:
    world = status_world.healthy()
    world.as_admin()
    code, document, out = world.json_and_text()  # and the same round as text
    assert code == 4
    assert drift_of(document) == [(SUBJECT, "marker", MARKER, None)]
    assert document["drift"][0]["message"].startswith(
        f"ConfigMap {MARKER} is missing: the HyperPod dependencies bootstrap never finished"
    )
    assert (document["eks"]["marker"]["found"], document["eks"]["marker"]["recorded"]) == (
        False,
        None,
    )
    assert f"  bootstrap marker {MARKER}: missing" in out


def test_the_scientists_role_may_not_read_the_marker_a_note_not_drift(status_world) -> None:
    """The healthy world reads with the scientists' Role: kube-system is a 403."""
    world = status_world.healthy()
    world.marker(chart_revision="stale:helm_chart/HyperPodHelmChart")  # not seen
    code, document = world.json()
    assert (code, document["drift"], document["attention"]) == (0, [], [])
    marker = document["eks"]["marker"]
    assert (marker["read"], marker["found"], marker["recorded"]) == (False, None, None)
    assert marker["note"].startswith(
        "HTTP 403, RBAC does not let your role get ConfigMaps in namespace kube-system "
        '(configmaps "novapod-hyperpod-dependencies" is forbidden: User "novapod-scientist"'
    )
    # The jobs' namespace is theirs: its runs are read all the same.
    assert document["jobs"]["kubernetes_read"] is True


def test_a_role_without_access_entry_gets_a_note(status_world) -> None:
    world = status_world.healthy()
    world.kube.refuse(401)
    code, document = world.json()
    assert document["drift"] == [] and code == 0
    assert document["eks"]["marker"]["note"] == (
        "HTTP 401, your role has no access entry in the cluster (the roles in "
        "eks.admin_principals have one)"
    )


def test_an_api_that_does_not_answer_is_asked_once(status_world) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.eks_clusters[CLUSTER]["endpoint"] = "https://127.0.0.1:9"
    code, document = world.json()
    assert (code, document["drift"]) == (0, [])
    note = document["eks"]["marker"]["note"]
    assert note.startswith(f"the Kubernetes API of EKS cluster {CLUSTER} does not answer (")
    assert document["jobs"]["note"] == note  # the jobs' reads were not tried again


# --- nodes replaced outside CloudFormation ---------------------------------------------------


def replace_node(world: StatusWorld, index: int, launched) -> tuple[str, str]:
    """The node at `index` of the cluster's list terminated and another launched for it."""
    nodes = world.plane.hyperpod.nodes[CLUSTER]
    old = nodes.pop(index)
    new = world.plane.hyperpod.add_node(CLUSTER, old["InstanceGroupName"], launched=launched)
    return old["InstanceId"], new


def test_the_healthy_world_has_no_replaced_nodes(status_world) -> None:
    """Its standard group's node came with the deploy, the restricted groups' with their
    plans (which started after it): none was replaced."""
    _, document = status_world.healthy().json()
    assert document["cluster"]["stack_updated_at"] == "2027-07-07T12:00:00Z"
    assert [g["replaced_nodes"] for g in document["groups"]] == [[], [], []]


def test_nodes_launched_since_cloudformation_updated_the_cluster_are_information(
    status_world,
) -> None:
    world = status_world.healthy()
    # spare-rig's first node (the list: nova-lite's four, spare-rig's two, system's one),
    # replaced by HyperPod's node recovery; system's, by hand.
    _, spare = replace_node(world, 4, NOW - timedelta(hours=3))
    _, system = replace_node(world, 5, STACK_UPDATED + timedelta(hours=1))
    code, document, out = world.json_and_text()  # and the same round as text
    assert (code, document["attention"], document["drift"]) == (0, [], [])
    groups = {g["name"]: g["replaced_nodes"] for g in document["groups"]}
    assert groups == {
        "nova-lite": [],
        "spare-rig": [
            {"instance_id": spare, "launch_time": "2027-07-10T09:00:00Z", "status": "Running"}
        ],
        "system": [
            {"instance_id": system, "launch_time": "2027-07-07T13:00:00Z", "status": "Running"}
        ],
    }
    status = code
    assert status == 0
    assert text_section(out, "Nodes launched since") == [
        "Nodes launched since CloudFormation last updated the cluster (2027-07-07 12:00 UTC): "
        "replaced (by HyperPod or by hand), added outside CloudFormation, or provisioned when "
        "their group's capacity came",
        "  node                 group      launched (UTC)    status",
        f"  {spare}  spare-rig  2027-07-10 09:00  Running",
        f"  {system}  system     2027-07-07 13:00  Running",
    ]
    groups_table = text_section(out, "Instance groups of")
    assert groups_table[3].endswith("InService  spare  Active       1 launched since the deploy")


def test_a_restricted_group_s_nodes_count_from_its_plan_s_start(status_world) -> None:
    """Its plan started after the deploy: nodes launched in its first hour came with it."""
    world = status_world.healthy()
    replace_node(world, 0, PLAN_START + timedelta(minutes=59))
    _, later = replace_node(world, 0, PLAN_START + timedelta(minutes=61))
    _, document = world.json()
    assert [n["instance_id"] for n in document["groups"][0]["replaced_nodes"]] == [later]


def test_replaced_nodes_and_a_count_changed_outside_cloudformation(status_world) -> None:
    """Only the count is attention (drift); the replacements stay information."""
    world = status_world.healthy()
    hyperpod = world.plane.hyperpod
    (system,) = hyperpod.clusters[CLUSTER]["InstanceGroups"]
    hyperpod.set_instance_groups(CLUSTER, [{**system, "TargetCount": 2, "CurrentCount": 2}])
    added = hyperpod.add_node(CLUSTER, "system", launched=NOW - timedelta(hours=1))
    code, document = world.json()
    assert code == 4
    assert drift_of(document) == [("group system", "instance_count", 1, 2)]
    assert [a["kind"] for a in document["attention"]] == ["drift"]
    assert [n["instance_id"] for n in document["groups"][2]["replaced_nodes"]] == [added]


def test_without_the_hyperpod_stack_no_node_counts_as_replaced(status_world) -> None:
    """A cluster CloudFormation does not know (its stack deleted, the cluster retained):
    nothing to compare the launches with."""
    world = status_world.healthy()
    for stack in world.plane.stacks:
        if stack["StackName"] == "novapod-dev-hyperpod":
            stack["StackStatus"] = "DELETE_COMPLETE"
    replace_node(world, 4, NOW - timedelta(hours=3))
    code, document = world.json()
    assert code == 0
    assert document["cluster"]["stack_updated_at"] is None
    assert all(g["replaced_nodes"] == [] for g in document["groups"])
