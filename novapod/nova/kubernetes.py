"""The Nova environment's Kubernetes objects, as plain data: pure functions, no CDK.

`nova_access(namespace)` renders what the jobs' namespace needs in the EKS cluster:
the Namespace, a Role with exactly the kinds the Nova job charts create and the verbs
the HyperPod CLI uses, its RoleBinding to the scientists' group (`SCIENTISTS_GROUP`, the
group of their EKS access entries), a ClusterRole/ClusterRoleBinding that lets the
NovaEnvironment check read namespaces and CRDs (`ENVIRONMENT_CHECK_GROUP`), and a Role and
RoleBinding that let the environment's scheduled check list the namespace's PyTorchJobs
and pods (`MONITOR_GROUP`, the group of its access entry in the monitor stack). The
ClusterBootstrap build applies them (novapod/constructs/cluster_bootstrap/README.md).

Where the kinds and verbs come from: the upstream facts (novapod/data/nova_upstream.yaml,
written by tools/upstream_facts.py from pinned commits, each fact with its source):
- `hyperpod start-job --recipe` runs the recipes launcher, which renders the recipe's
  chart and runs `helm install` (launcher/nova/launchers.py); the objects each chart
  creates are the facts' `charts` (PyTorchJobs and ConfigMaps; PPO adds a Service and a
  StatefulSet; RFT Services, Deployments, StatefulSets, batch Jobs and a Secret).
- Helm 3 and Helm 4 (`helm`): install gets each object and creates it; Helm 4 installs
  by server-side apply, a PATCH the API server authorizes as `patch` (and as `create`
  when it creates the object); upgrade also patches and deletes; uninstall deletes. Both
  keep each release as Secrets in the release's namespace (list, get, create, update,
  delete). A scientist may have either Helm: the Role grants both.
- aws/sagemaker-hyperpod-cli release_v2: `list-jobs -n` reads the namespace then lists
  PyTorchJobs, `get-job` gets one, `list-pods` and `get-log` list the job's pods and read
  one pod and its log, `cancel-job` deletes the PyTorchJob, then `helm uninstall`s.
Pods are created by the operators, never by the scientist; no watch, exec or escalation
verb is used by those commands, so none is granted. Creating a Deployment, StatefulSet,
Job or PyTorchJob is still as strong as creating a pod in the namespace (any image, and
PPO's chart itself runs privileged, so Pod Security "baseline" cannot be enforced): the
scientists' group must be trusted with that; no admission policy narrows it yet.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from novapod.nova.access import SCIENTISTS_GROUP
from novapod.nova.upstream import upstream_facts

# The Kubernetes group the NovaEnvironment check's EKS access entry maps its role to
# (kubernetes_groups of AWS::EKS::AccessEntry): bound to ENVIRONMENT_CHECK_ROLE below,
# so the check needs no AWS-managed access policy.
ENVIRONMENT_CHECK_GROUP = "novapod-nova-environment-check"
SCIENTIST_ROLE = "novapod-nova-scientists"
ENVIRONMENT_CHECK_ROLE = "novapod-nova-environment-check"
# The group the environment's scheduled check's EKS access entry maps its role to (the
# monitor stack): bound to MONITOR_ROLE in the jobs' namespace, which lists PyTorchJobs
# and pods there and nothing else. No EKS access policy is that narrow, and none reads them:
# AmazonEKSViewPolicy names no kubeflow.org resource, AmazonEKSAdminViewPolicy reads every
# resource, Secrets included (docs.aws.amazon.com/eks/latest/userguide/
# access-policy-permissions.html).
MONITOR_GROUP = "novapod-monitor"
MONITOR_ROLE = "novapod-monitor"
# The recommended label for the tool that manages an object
# (kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/); the
# bootstrap build deletes only namespaces that carry it (it created them).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "novapod"
RBAC_API = "rbac.authorization.k8s.io"

Rule = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def scientist_rules() -> tuple[Rule, ...]:
    """(apiGroups, resources, verbs) of the scientists' Role, from the upstream facts:
    every kind a Nova chart creates x what Helm 3 and Helm 4 do to it, Helm's release
    Secrets, and the CLI's own requests. Resources of one group with the same verbs share
    a rule.

    `namespaces: get` (list-jobs -n reads the namespace) is bound in the namespace, so it
    allows reading that namespace only: the API server gives GET /api/v1/namespaces/<ns>
    the namespace <ns> (k8s.io/apiserver pkg/endpoints/request/requestinfo.go), as the
    HyperPod chart's own team Role relies on (helm_chart/HyperPodHelmChart/charts/
    team-role-and-bindings/templates/team-level-namespaced-role.yaml)."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for group, resource, verb in upstream_facts().required_requests():
        verbs.setdefault((group, resource), set()).add(verb)
    shared: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), granted in verbs.items():
        shared.setdefault((group, tuple(sorted(granted))), []).append(resource)
    return tuple(
        sorted(
            ((group,), tuple(sorted(resources)), granted)
            for (group, granted), resources in shared.items()
        )
    )


# What the NovaEnvironment check reads: GET the namespace and each required CRD
# (novapod/constructs/nova_environment/handler/decisions.py namespace_path, crd_path).
# Both are cluster-scoped, so a ClusterRole; get only, no list or watch.
ENVIRONMENT_CHECK_RULES: tuple[Rule, ...] = (
    (("",), ("namespaces",), ("get",)),
    (("apiextensions.k8s.io",), ("customresourcedefinitions",), ("get",)),
)


# What the scheduled check reads (novapod/constructs/monitor/handler/index.py): the
# collections of PyTorchJobs (the runs) and of pods (the nodes they hold,
# handler_core/runs.py busy_nodes) of the jobs' namespace, paged; list only, no get,
# watch, log or exec.
MONITOR_RULES: tuple[Rule, ...] = (
    (("",), ("pods",), ("list",)),
    (("kubeflow.org",), ("pytorchjobs",), ("list",)),
)


def _labels() -> dict[str, str]:
    return {MANAGED_BY_LABEL: MANAGED_BY}


def _rules(rules: Sequence[Rule]) -> list[dict[str, list[str]]]:
    return [
        {"apiGroups": list(groups), "resources": list(kinds), "verbs": list(verbs)}
        for groups, kinds, verbs in rules
    ]


def _binding(kind: str, name: str, role_kind: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": _labels()},
        "roleRef": {"apiGroup": RBAC_API, "kind": role_kind, "name": name},
        "subjects": [{"apiGroup": RBAC_API, "kind": "Group", "name": group}],
    }


def namespace_object(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": _labels()},
    }


def access_objects(namespace: str) -> list[dict[str, Any]]:
    """The scientists' Role and RoleBinding in the namespace, the NovaEnvironment check's
    ClusterRole and binding, then the scheduled check's Role and RoleBinding in the
    namespace."""
    role = {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "Role",
        "metadata": {"name": SCIENTIST_ROLE, "namespace": namespace, "labels": _labels()},
        "rules": _rules(scientist_rules()),
    }
    role_binding = _binding("RoleBinding", SCIENTIST_ROLE, "Role", SCIENTISTS_GROUP)
    role_binding["metadata"]["namespace"] = namespace
    cluster_role = {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ENVIRONMENT_CHECK_ROLE, "labels": _labels()},
        "rules": _rules(ENVIRONMENT_CHECK_RULES),
    }
    cluster_binding = _binding(
        "ClusterRoleBinding", ENVIRONMENT_CHECK_ROLE, "ClusterRole", ENVIRONMENT_CHECK_GROUP
    )
    monitor_role = {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "Role",
        "metadata": {"name": MONITOR_ROLE, "namespace": namespace, "labels": _labels()},
        "rules": _rules(MONITOR_RULES),
    }
    monitor_binding = _binding("RoleBinding", MONITOR_ROLE, "Role", MONITOR_GROUP)
    monitor_binding["metadata"]["namespace"] = namespace
    return [role, role_binding, cluster_role, cluster_binding, monitor_role, monitor_binding]


def object_ref(obj: Mapping[str, Any]) -> str:
    """`<namespace>/<type>/<name>` as kubectl names it (`role.rbac.authorization.k8s.io`);
    the namespace is empty for cluster-scoped objects."""
    group = str(obj["apiVersion"]).rpartition("/")[0]
    kind = str(obj["kind"]).lower()
    type_ = f"{kind}.{group}" if group else kind
    metadata = obj["metadata"]
    return f"{metadata.get('namespace', '')}/{type_}/{metadata['name']}"


def compact_json(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces): stable bytes, and valid YAML for kubectl."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class NovaAccess:
    """The namespace and the access objects novapod keeps in the EKS cluster."""

    namespace: str
    namespace_object: dict[str, Any]
    objects: tuple[dict[str, Any], ...]

    def refs(self) -> tuple[str, ...]:
        return tuple(object_ref(o) for o in self.objects)

    def manifest(self) -> str:
        """The access objects as one kubectl `List` (JSON)."""
        return compact_json({"apiVersion": "v1", "kind": "List", "items": list(self.objects)})

    def digest(self) -> str:
        """sha256 of every object, the namespace included: the bootstrap's change trigger."""
        canonical = compact_json([self.namespace_object, *self.objects])
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def nova_access(namespace: str) -> NovaAccess:
    """What the jobs' namespace needs in the cluster (nova.namespace of the config)."""
    return NovaAccess(
        namespace=namespace,
        namespace_object=namespace_object(namespace),
        objects=tuple(access_objects(namespace)),
    )
