"""Pure decisions of the NovaEnvironment custom resource: no AWS calls, no network.

The handler (`index.py`) asks here what a DescribeCluster, a Kubernetes answer or a
training plan means, and performs only the next call. Everything a user may see as an
error is one sentence in a `NovaEnvironmentError`.

Resource properties (CloudFormation passes scalars as strings):

- `ClusterName` (required): the HyperPod cluster (SageMaker DescribeCluster).
- `EksClusterName` (required): its EKS cluster (EKS DescribeCluster, Kubernetes API).
- `Namespace` (required): the namespace Nova jobs run in, e.g. `nova-jobs` (nova.namespace).
- `RestrictedGroups` (optional, default none): `[{Name, TrainingPlanArn?}]`, the
  restricted instance groups to report; without `TrainingPlanArn` the plan the cluster
  reports for the group is used. At most `MAX_GROUPS`.
- `RequiredCrds` (optional, default `["pytorchjobs.kubeflow.org"]`): CustomResourceDefinition
  names that must exist. At most `MAX_CRDS`.
- `TimeoutSeconds` (optional, default 3000, 60..3600): how long is_complete may wait for
  the cluster (the Provider's total timeout must be at least this, and at most 1 h).
- `RoleArn` (optional): the handler's role, named when the Kubernetes API refuses it.

Data on success (all strings): `ClusterName`, `ClusterStatus`, `EksClusterName`,
`Namespace`, `RequiredCrds` (comma-separated), `Summary` (one line per group, "; "
joined) and per restricted group `<Name>.CurrentCount`, `<Name>.TargetCount`,
`<Name>.PlanStatus` and `<Name>.PlanStartTime` ("" without a plan).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ...handler_core import values
from ...handler_core.values import as_utc, iso

ClusterVerdict = Literal["ready", "waiting"]
# What a Kubernetes GET answer means for a check.
KubernetesVerdict = Literal["present", "missing", "unauthenticated", "forbidden", "retry"]

DEFAULT_CRDS: tuple[str, ...] = ("pytorchjobs.kubeflow.org",)
DEFAULT_TIMEOUT_SECONDS = 3000
MAX_GROUPS = 8
MAX_CRDS = 8
# CloudFormation refuses a custom resource response over 4096 bytes; Data stays well under.
MAX_DATA_BYTES = 3000
PHYSICAL_ID_SUFFIX = "-nova-environment"
# The Kubernetes group of the check's access entry (novapod/nova/kubernetes.py,
# ENVIRONMENT_CHECK_GROUP: the Lambda asset holds this folder only, so it is repeated,
# and a test keeps the two equal).
CHECK_GROUP = "novapod-nova-environment-check"

# Statuses from botocore's SageMaker model (ClusterStatus): these pass with time.
WAITING_STATUSES = frozenset({"Creating", "Updating", "SystemUpdating"})
FAILED_STATUSES = frozenset({"Failed", "RollingBack"})

# The HyperPod dependencies chart (aws/sagemaker-hyperpod-cli, helm_chart/HyperPodHelmChart,
# subchart training-operators) installs the Kubeflow training operator that defines
# PyTorchJob, the kind the Nova recipes submit.
KNOWN_CRDS: Mapping[str, tuple[str, str]] = {
    "pytorchjobs.kubeflow.org": (
        "PyTorchJob",
        "the HyperPod dependencies chart installs the training operator that defines it "
        "(helm_chart/HyperPodHelmChart of aws/sagemaker-hyperpod-cli); install the chart "
        "and deploy again",
    ),
}

# Names as the services constrain them: SageMaker ClusterName (botocore model), EKS
# cluster names (CreateCluster), Kubernetes namespaces (DNS labels) and CRD names
# (`<plural>.<group>`, DNS subdomains).
_CLUSTER_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_EKS_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9\-_]{0,99}")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_CRD_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+")
_GROUP_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
_PLAN_ARN = re.compile(
    r"arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/"
    r"(?P<name>[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63})"
)


class NovaEnvironmentError(Exception):
    """A failure reported to CloudFormation; its message is one clear sentence."""


class PropertyError(NovaEnvironmentError, ValueError):
    """A resource property that is missing or invalid; the message names it."""


@dataclass(frozen=True)
class RestrictedGroup:
    name: str
    training_plan_arn: str | None


@dataclass(frozen=True)
class EnvironmentProperties:
    cluster_name: str
    eks_cluster_name: str
    namespace: str
    restricted_groups: tuple[RestrictedGroup, ...]
    required_crds: tuple[str, ...]
    timeout_seconds: int
    role_arn: str | None

    @property
    def physical_id(self) -> str:
        """Stable per cluster: a repeated Create or an Update keeps the resource."""
        return f"{self.cluster_name}{PHYSICAL_ID_SUFFIX}"


@dataclass(frozen=True)
class GroupReport:
    """One restricted instance group: its nodes and the state of its training plan."""

    name: str
    current_count: int
    target_count: int
    plan_name: str | None
    plan_status: str | None
    plan_start: datetime | None
    waits_for_plan: bool

    @property
    def summary(self) -> str:
        if self.waits_for_plan:
            start = iso(self.plan_start)
            return f"group {self.name}: plan {self.plan_name} starts at {start} (Scheduled)"
        nodes = f"group {self.name}: {self.current_count} of {self.target_count} nodes"
        if self.plan_name is None:
            return nodes
        return f"{nodes}, plan {self.plan_name} is {self.plan_status}"


# --- properties -------------------------------------------------------------------------


def parse_properties(raw: Mapping[str, Any]) -> EnvironmentProperties:
    cluster = _matching(raw, "ClusterName", _CLUSTER_NAME, "1-63 letters, digits and hyphens")
    eks = _matching(
        raw, "EksClusterName", _EKS_NAME, "1-100 letters, digits, hyphens and underscores"
    )
    namespace = _matching(
        raw, "Namespace", _DNS_LABEL, "a DNS label (lowercase letters, digits, hyphens)"
    )
    role = raw.get("RoleArn")
    return EnvironmentProperties(
        cluster_name=cluster,
        eks_cluster_name=eks,
        namespace=namespace,
        restricted_groups=_groups(raw),
        required_crds=_crds(raw),
        timeout_seconds=_timeout(raw),
        role_arn=role if isinstance(role, str) and role else None,
    )


def _matching(raw: Mapping[str, Any], key: str, pattern: re.Pattern[str], what: str) -> str:
    value = values.required_str(raw, key, PropertyError)
    if not pattern.fullmatch(value):
        raise PropertyError(f"{key} {value!r} must be {what}")
    return value


def _groups(raw: Mapping[str, Any]) -> tuple[RestrictedGroup, ...]:
    key = "RestrictedGroups"
    value = values.json_value(raw, key, PropertyError)
    if value in (None, ""):
        return ()
    if not isinstance(value, list) or len(value) > MAX_GROUPS:
        raise PropertyError(
            f"{key} must be a list of at most {MAX_GROUPS} {{Name, TrainingPlanArn}}"
        )
    groups: list[RestrictedGroup] = []
    for index, item in enumerate(value):
        name = item.get("Name") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not _GROUP_NAME.fullmatch(name):
            raise PropertyError(f"{key}[{index}].Name must be an instance group name")
        arn = item.get("TrainingPlanArn") or None
        if arn is not None and (not isinstance(arn, str) or not _PLAN_ARN.fullmatch(arn)):
            raise PropertyError(
                f"{key}[{index}].TrainingPlanArn {arn!r} is not a training-plan ARN"
            )
        groups.append(RestrictedGroup(name, arn))
    names = [g.name for g in groups]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PropertyError(f"{key} names group {', '.join(repeated)} more than once")
    return tuple(groups)


def _crds(raw: Mapping[str, Any]) -> tuple[str, ...]:
    key = "RequiredCrds"
    value = values.json_value(raw, key, PropertyError)
    if value in (None, ""):
        return DEFAULT_CRDS
    if (
        not isinstance(value, list)
        or len(value) > MAX_CRDS
        or not all(isinstance(v, str) and len(v) <= 253 and _CRD_NAME.fullmatch(v) for v in value)
    ):
        raise PropertyError(
            f"{key} must be a list of at most {MAX_CRDS} CRD names such as "
            f"pytorchjobs.kubeflow.org, not {value!r}"
        )
    return tuple(dict.fromkeys(value))


def _timeout(raw: Mapping[str, Any]) -> int:
    # The Provider framework's total timeout is at most one hour.
    seconds = values.whole_number(raw, "TimeoutSeconds", 60, 3600, PropertyError, required=False)
    return DEFAULT_TIMEOUT_SECONDS if seconds is None else seconds


def plan_name_from_arn(arn: str) -> str:
    match = _PLAN_ARN.fullmatch(arn)
    if match is None:
        raise NovaEnvironmentError(f"{arn!r} is not a training-plan ARN")
    return match.group("name")


# --- the HyperPod cluster ---------------------------------------------------------------


def cluster_verdict(name: str, described: Mapping[str, Any]) -> ClusterVerdict:
    """InService is ready; statuses that pass with time wait; the others fail."""
    status = str(described.get("ClusterStatus", ""))
    if status == "InService":
        return "ready"
    if status in FAILED_STATUSES:
        raise NovaEnvironmentError(cluster_failed_message(name, status, described))
    if status == "Deleting":
        raise NovaEnvironmentError(f"HyperPod cluster {name} is being deleted")
    # Creating, Updating, SystemUpdating, and any status a newer API adds.
    return "waiting"


def cluster_failed_message(name: str, status: str, described: Mapping[str, Any]) -> str:
    reason = one_line(str(described.get("FailureMessage") or ""))
    if not reason:
        return (
            f"HyperPod cluster {name} is {status} and gives no FailureMessage; see its "
            "events in the SageMaker console"
        )
    return f"HyperPod cluster {name} is {status}: {reason}"


def cluster_missing_message(name: str) -> str:
    return (
        f"HyperPod cluster {name} does not exist in this account and Region; deploy the "
        "HyperPod stack before this one"
    )


def eks_missing_message(name: str) -> str:
    return (
        f"EKS cluster {name} does not exist in this account and Region; deploy the EKS stack first"
    )


def one_line(text: str) -> str:
    """A service's message inside our sentence: one line, no closing period."""
    return " ".join(text.split()).rstrip(".")


# --- restricted groups ------------------------------------------------------------------


def cluster_group(
    group: RestrictedGroup, cluster_name: str, described: Mapping[str, Any]
) -> Mapping[str, Any]:
    """The group as DescribeCluster reports it (RestrictedInstanceGroups)."""
    groups = described.get("RestrictedInstanceGroups") or []
    for candidate in groups:
        if candidate.get("InstanceGroupName") == group.name:
            return dict(candidate)
    names = ", ".join(str(g.get("InstanceGroupName")) for g in groups) or "none"
    raise NovaEnvironmentError(
        f"restricted instance group {group.name} is not in HyperPod cluster {cluster_name} "
        f"(its restricted groups: {names}); deploy the HyperPod stack with this config first"
    )


def plan_arn(group: RestrictedGroup, reported: Mapping[str, Any]) -> str | None:
    """The group's plan: the one configured, else the one the cluster reports."""
    arn = group.training_plan_arn or reported.get("TrainingPlanArn")
    return str(arn) if arn else None


def group_report(
    name: str,
    reported: Mapping[str, Any],
    plan: Mapping[str, Any] | None,
    now: datetime,
) -> GroupReport:
    """Nodes and plan of a group; never a failure.

    A group with no node yet whose plan is Scheduled to start later is reported with
    the start time: the capacity does not exist before then. With an Active plan and no
    node, HyperPod is still bringing the nodes up (it does so on its own once the
    reservation starts); jobs wait in the queue meanwhile, so waiting for nodes here
    would only hold the deploy hostage to capacity arrival (and fail it at the
    Provider's one-hour limit). Both are reported, neither fails.
    """
    current = int(reported.get("CurrentCount") or 0)
    target = int(reported.get("TargetCount") or 0)
    status = str(plan.get("Status")) if plan is not None else None
    start = as_utc(plan.get("StartTime")) if plan is not None else None
    waits = current == 0 and status == "Scheduled" and start is not None and start > now
    return GroupReport(
        name=name,
        current_count=current,
        target_count=target,
        plan_name=str(plan["TrainingPlanName"]) if plan is not None else None,
        plan_status=status,
        plan_start=start,
        waits_for_plan=waits,
    )


# --- Kubernetes -------------------------------------------------------------------------


def namespace_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}"


def crd_path(name: str) -> str:
    return f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"


def kubernetes_verdict(status: int) -> KubernetesVerdict:
    if 200 <= status < 300:
        return "present"
    if status == 404:
        return "missing"
    if status == 401:
        return "unauthenticated"
    if status == 403:
        return "forbidden"
    return "retry"  # 429, 5xx: the API server is busy or starting


def namespace_missing_message(namespace: str, eks_cluster: str) -> str:
    return (
        f"namespace {namespace} does not exist in EKS cluster {eks_cluster}; the eks "
        f"stack's bootstrap build creates it (cdk deploy {eks_cluster}-eks, build log in "
        "its BootstrapBuildLogGroup output), then deploy again"
    )


def crd_missing_message(name: str, eks_cluster: str) -> str:
    known = KNOWN_CRDS.get(name)
    if known is not None:
        kind, remedy = known
        return f"the {kind} CRD ({name}) is missing from EKS cluster {eks_cluster}: {remedy}"
    return (
        f"the CRD {name} is missing from EKS cluster {eks_cluster}: install the operator "
        "that defines it and deploy again"
    )


def access_message(
    verdict: KubernetesVerdict,
    *,
    eks_cluster: str,
    role_arn: str | None,
    what: str,
    detail: str,
) -> str:
    """401: EKS knows no access entry for the role; 403: the entry's permissions lack
    `get` on what we read. See docs.aws.amazon.com/eks/latest/userguide/access-entries.html
    and access-policy-permissions.html."""
    who = f"role {role_arn}" if role_arn else "the NovaEnvironment handler's role"
    said = f": {one_line(detail)}" if detail else ""
    if verdict == "unauthenticated":
        return (
            f"the Kubernetes API of EKS cluster {eks_cluster} does not accept {who} (HTTP 401"
            f"{said}); the role needs an EKS access entry on that cluster, whose "
            "authentication mode must include API"
        )
    return (
        f"the Kubernetes API of EKS cluster {eks_cluster} forbids {who} to read {what} "
        f"(HTTP 403{said}); the role's EKS access entry puts it in group "
        f"{CHECK_GROUP}, which the eks stack's bootstrap build binds to a ClusterRole "
        "allowing get on namespaces and customresourcedefinitions"
    )


# --- time and results -------------------------------------------------------------------


def timeout_message(props: EnvironmentProperties, waiting_for: str) -> str:
    return (
        f"the Nova environment on HyperPod cluster {props.cluster_name} is not ready after "
        f"{props.timeout_seconds} s: {waiting_for}"
    )


def result_data(
    props: EnvironmentProperties, cluster_status: str, reports: Sequence[GroupReport]
) -> dict[str, str]:
    data = {
        "ClusterName": props.cluster_name,
        "ClusterStatus": cluster_status,
        "EksClusterName": props.eks_cluster_name,
        "Namespace": props.namespace,
        "RequiredCrds": ",".join(props.required_crds),
        "Summary": "; ".join(r.summary for r in reports) or "no restricted instance groups",
    }
    for report in reports:
        data[f"{report.name}.CurrentCount"] = str(report.current_count)
        data[f"{report.name}.TargetCount"] = str(report.target_count)
        data[f"{report.name}.PlanStatus"] = report.plan_status or ""
        data[f"{report.name}.PlanStartTime"] = iso(report.plan_start)
    if len(json.dumps(data)) > MAX_DATA_BYTES:
        # Long group names: the per-group attributes matter more than the prose.
        data["Summary"] = f"{len(reports)} restricted groups; see the handler's log"
    return data
