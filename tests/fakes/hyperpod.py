"""HyperPod and EKS clusters of the fake control plane (`aws_control_plane.py` routes here).

SageMaker DescribeCluster speaks JSON 1.1 like the plane's other SageMaker operations
(requests and answers checked against botocore's model there). EKS DescribeCluster
speaks REST-JSON (`GET /clusters/{name}`, routed by `service_model.rest_request`): its
members are checked against botocore's eks model here and its answer by the plane.
Errors come back as the plane's API errors (EKS puts the code in `x-amzn-ErrorType`,
which botocore's REST-JSON parser reads).

Tests script a cluster's status sequence (one status per DescribeCluster, the last one
stays; a status may carry a FailureMessage), its restricted and standard instance groups
and its nodes. ListClusterNodes serves the nodes a page at a time (`node_page_size`,
or MaxResults when smaller; NextToken an offset), filtered by InstanceGroupNameContains
and CreationTimeAfter/Before (on LaunchTime) and sorted by SortBy/SortOrder (CREATION_TIME
by LaunchTime, NAME by instance ID; the order otherwise is the order they were added),
per the ListClusterNodes API reference (docs.aws.amazon.com/sagemaker/latest/APIReference/
API_ListClusterNodes.html). Node statuses are the model's ClusterInstanceStatus values
(Running | Failure | Pending | ShuttingDown | SystemUpdating | DeepHealthCheckInProgress |
NotFound | DetachInProgress | AttachInProgress in botocore 1.44); the plane checks every
answer against the output shape.

StartClusterHealthCheck (its request checked against botocore's model by the plane:
ClusterName, 1 to 99 DeepHealthCheckConfigurations of an InstanceGroupName, 1 to 500
InstanceIds or none for the whole group, 1 to 3 DeepHealthChecks of the model's
DeepHealthCheckType) answers the cluster's ARN, or ResourceNotFound for an unknown cluster
(the only error the API reference lists: API_StartClusterHealthCheck.html); a group the
cluster does not have, or an instance ID not in its group, is a ValidationException (the
fake's wording). So is a start naming a node that is DeepHealthCheckInProgress: how the
service answers a check started while one runs is not documented, and the fake assumes it
refuses with the common ValidationException (novapod handles it, or a ConflictException,
as one sentence). The nodes it names turn DeepHealthCheckInProgress, as
DescribeClusterNode and ListClusterNodes report a check in progress, and after
`health_check_polls` listings take their scripted outcome (`health_outcome`): Running
(passed), Failure with a message, or replaced (the node leaves the list and a new one
comes up Pending), as HyperPod reboots or replaces the nodes that fail
(sagemaker-hyperpod-eks-resiliency-deep-health-checks.html). With `health_check_polls`
1 the outcome shows at the first listing after the start: the node was never seen in
progress (a check that finished between two polls). `health_check_skips` names nodes the
check leaves as they are (never in progress: one it did not run on). Nodes answer with
ClusterNodeSummary's members only, none of which carries a check's result or time.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.fakes import service_model

REGION = "us-east-1"
ErrorFactory = Callable[..., Exception]


def restricted_group(
    name: str,
    *,
    current: int,
    target: int,
    plan_arn: str | None = None,
    plan_status: str | None = None,
    instance_type: str = "ml.p5.48xlarge",
    account: str = "123456789012",
    status: str = "InService",
) -> dict[str, Any]:
    """One member of DescribeCluster's RestrictedInstanceGroups (its Status one of the
    model's InstanceGroupStatus values: InService | Creating | Updating | Failed | Degraded
    | SystemUpdating | Deleting; TrainingPlanStatus is a free string in the model)."""
    group: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "CurrentCount": current,
        "TargetCount": target,
        "ExecutionRole": f"arn:aws:iam::{account}:role/{name}-execution",
        "Status": status,
    }
    if plan_arn is not None:
        group["TrainingPlanArn"] = plan_arn
        group["TrainingPlanStatus"] = plan_status or "Active"
    return group


def standard_group(
    name: str,
    *,
    current: int,
    target: int,
    instance_type: str = "ml.m5.2xlarge",
    plan_arn: str | None = None,
    plan_status: str | None = None,
    account: str = "123456789012",
    status: str = "InService",
) -> dict[str, Any]:
    """One member of DescribeCluster's InstanceGroups (a standard group)."""
    group = restricted_group(
        name,
        current=current,
        target=target,
        plan_arn=plan_arn,
        plan_status=plan_status,
        instance_type=instance_type,
        account=account,
        status=status,
    )
    group["LifeCycleConfig"] = {
        "SourceS3Uri": f"s3://sagemaker-lifecycle-{account}/scripts/",
        "OnCreate": "on_create.sh",
    }
    return group


class HyperPodFake:
    """Scripted HyperPod (SageMaker) and EKS clusters; `error(code, message, status)`
    makes the plane's API error."""

    def __init__(self, error: ErrorFactory, *, account: str = "123456789012") -> None:
        self._error = error
        self.account = account
        self.clusters: dict[str, dict[str, Any]] = {}
        self.eks_clusters: dict[str, dict[str, Any]] = {}
        self._statuses: dict[str, deque[tuple[str, str]]] = {}
        self.nodes: dict[str, list[dict[str, Any]]] = {}  # cluster name -> node summaries
        self.tags: dict[str, dict[str, str]] = {}  # cluster name -> its tags
        self.node_page_size = 100  # ListClusterNodes' MaxResults is at most 100
        self.health_checks: list[dict[str, Any]] = []  # StartClusterHealthCheck requests
        self.health_check_polls = 2  # listings a node stays DeepHealthCheckInProgress
        self.health_check_skips: set[str] = set()  # instance IDs a started check leaves be
        # instance ID -> (outcome, message, listings left) of a check in progress
        self._checking: dict[str, list[Any]] = {}
        self._outcomes: dict[str, tuple[str, str]] = {}
        self._added: dict[str, int] = {}  # nodes ever added per cluster

    # --- scripting ----------------------------------------------------------------------

    def add_cluster(
        self,
        name: str,
        *,
        statuses: Iterable[str | tuple[str, str]] = ("InService",),
        restricted_groups: Sequence[dict[str, Any]] = (),
        instance_groups: Sequence[dict[str, Any]] = (),
        eks_cluster: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """A HyperPod cluster on EKS; returns its ARN (the ID is 12 lowercase hex digits).
        `tags` are the cluster's (CreateCluster's Tags), which IAM reads as
        aws:ResourceTag/<key> (`resource_tags`)."""
        cluster_id = hashlib.sha256(name.encode()).hexdigest()[:12]
        arn = f"arn:aws:sagemaker:{REGION}:{self.account}:cluster/{cluster_id}"
        self.clusters[name] = {
            "ClusterArn": arn,
            "ClusterName": name,
            "ClusterStatus": "Creating",
            "CreationTime": datetime(2030, 1, 1, tzinfo=UTC),
            "InstanceGroups": list(instance_groups),
            "RestrictedInstanceGroups": list(restricted_groups),
            "Orchestrator": {
                "Eks": {
                    "ClusterArn": f"arn:aws:eks:{REGION}:{self.account}:cluster/"
                    f"{eks_cluster or name}"
                }
            },
            "NodeRecovery": "Automatic",
        }
        self.script_statuses(name, statuses)
        self.tags[name] = dict(tags or {})
        self.nodes[name] = []
        self._added[name] = 0
        return arn

    def script_statuses(self, name: str, statuses: Iterable[str | tuple[str, str]]) -> None:
        """Statuses shown, one per DescribeCluster; the last one stays. A (status,
        message) pair also sets FailureMessage."""
        script = deque((s, "") if isinstance(s, str) else s for s in statuses)
        if not script:
            raise ValueError("a status script needs at least one status")
        self._statuses[name] = script

    def set_restricted_groups(self, name: str, groups: Sequence[dict[str, Any]]) -> None:
        self.clusters[name]["RestrictedInstanceGroups"] = list(groups)

    def set_instance_groups(self, name: str, groups: Sequence[dict[str, Any]]) -> None:
        self.clusters[name]["InstanceGroups"] = list(groups)

    def add_node(
        self,
        cluster: str,
        group: str,
        *,
        status: str = "Running",
        message: str = "",
        instance_type: str | None = None,
        launched: datetime | None = None,
    ) -> str:
        """A node of `group` (its type the group's unless given); returns its instance ID
        (i- and 17 hex digits, DescribeClusterNode's NodeId pattern)."""
        nodes = self.nodes[cluster]
        if instance_type is None:
            groups = [
                *self.clusters[cluster]["RestrictedInstanceGroups"],
                *self.clusters[cluster]["InstanceGroups"],
            ]
            known = next((g for g in groups if g["InstanceGroupName"] == group), None)
            instance_type = known["InstanceType"] if known else "ml.p5.48xlarge"
        # Counted, not len(nodes): a node replaced leaves the list, its ID is not reused.
        index = self._added.get(cluster, 0)
        self._added[cluster] = index + 1
        digest = hashlib.sha256(f"{cluster}/{group}/{index}".encode()).hexdigest()
        instance_id = f"i-{digest[:17]}"
        node: dict[str, Any] = {
            "InstanceGroupName": group,
            "InstanceId": instance_id,
            "InstanceType": instance_type,
            "LaunchTime": launched or datetime(2030, 1, 1, tzinfo=UTC) + timedelta(minutes=index),
            "InstanceStatus": {"Status": status, **({"Message": message} if message else {})},
            "PrivateDnsHostname": f"ip-10-1-{index // 250}-{index % 250 + 1}.ec2.internal",
        }
        nodes.append(node)
        return instance_id

    def add_nodes(self, cluster: str, group: str, count: int, **kwargs: Any) -> list[str]:
        return [self.add_node(cluster, group, **kwargs) for _ in range(count)]

    def health_outcome(self, instance_id: str, outcome: str, message: str = "") -> None:
        """What a deep health check finds on a node: "Running" (it passes, the default),
        "Failure" (with `message`) or "replaced"."""
        assert outcome in ("Running", "Failure", "replaced"), outcome
        self._outcomes[instance_id] = (outcome, message)

    def add_eks_cluster(
        self,
        name: str,
        *,
        endpoint: str,
        ca_pem: bytes,
        status: str = "ACTIVE",
        version: str = "1.32",
    ) -> None:
        """An EKS cluster whose API server is `endpoint`, signed by the CA `ca_pem`, running
        Kubernetes `version` (DescribeCluster's Cluster.version, "major.minor")."""
        self.eks_clusters[name] = {
            "name": name,
            "arn": f"arn:aws:eks:{REGION}:{self.account}:cluster/{name}",
            "createdAt": datetime(2030, 1, 1, tzinfo=UTC),
            "version": version,
            "endpoint": endpoint,
            "status": status,
            # DescribeCluster returns the PEM base64-encoded, as kubeconfig's
            # certificate-authority-data (API_Certificate.html).
            "certificateAuthority": {"data": base64.b64encode(ca_pem).decode()},
            "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
            "platformVersion": "eks.1",
        }

    def cluster_arn(self, name_or_arn: str) -> str:
        """The ARN of a cluster named or ARN'd so; for an unknown name, the ARN it would
        have (IAM decides before the service looks the cluster up)."""
        cluster = self.clusters.get(name_or_arn)
        if cluster is not None or name_or_arn.startswith("arn:"):
            return str(cluster["ClusterArn"]) if cluster else name_or_arn
        cluster_id = hashlib.sha256(name_or_arn.encode()).hexdigest()[:12]
        return f"arn:aws:sagemaker:{REGION}:{self.account}:cluster/{cluster_id}"

    def resource_tags(self, name_or_arn: str) -> dict[str, str]:
        """The IAM context of a cluster's tags (aws:ResourceTag/<key>: value); none for a
        cluster that does not exist (no tags to read)."""
        cluster = next(
            (
                c
                for c in self.clusters.values()
                if name_or_arn in (c["ClusterName"], c["ClusterArn"])
            ),
            None,
        )
        if cluster is None:
            return {}
        tags = self.tags.get(cluster["ClusterName"], {})
        return {f"aws:ResourceTag/{k}": v for k, v in tags.items()}

    # --- SageMaker ----------------------------------------------------------------------

    def describe_cluster(self, params: dict[str, Any]) -> dict[str, Any]:
        cluster = self._cluster(str(params.get("ClusterName", "")))
        script = self._statuses[cluster["ClusterName"]]
        status, message = script[0]
        if len(script) > 1:
            script.popleft()
        shown = {**cluster, "ClusterStatus": status}
        if message:
            shown["FailureMessage"] = message
        return shown

    def start_cluster_health_check(self, params: dict[str, Any]) -> dict[str, Any]:
        cluster = self._cluster(str(params.get("ClusterName", "")))
        name = cluster["ClusterName"]
        groups = {
            g["InstanceGroupName"]
            for g in [*cluster["RestrictedInstanceGroups"], *cluster["InstanceGroups"]]
        }
        targets: list[dict[str, Any]] = []
        for configuration in params["DeepHealthCheckConfigurations"]:
            group = configuration["InstanceGroupName"]
            if group not in groups:
                raise self._error(
                    "ValidationException",
                    f"Instance group {group} does not exist in cluster {name}.",
                    400,
                )
            members = [n for n in self.nodes[name] if n["InstanceGroupName"] == group]
            wanted = configuration.get("InstanceIds")
            if wanted:
                known = {n["InstanceId"] for n in members}
                unknown = [i for i in wanted if i not in known]
                if unknown:
                    raise self._error(
                        "ValidationException",
                        f"Instances {', '.join(unknown)} are not in instance group {group}.",
                        400,
                    )
                members = [n for n in members if n["InstanceId"] in wanted]
            targets += members
        running = [
            n["InstanceId"]
            for n in targets
            if n["InstanceStatus"].get("Status") == "DeepHealthCheckInProgress"
        ]
        if running:
            raise self._error(
                "ValidationException",
                f"A deep health check is already in progress on instances {', '.join(running)} "
                f"of cluster {name}.",
                400,
            )
        self.health_checks.append(params)
        for node in targets:
            if node["InstanceId"] in self.health_check_skips:
                continue
            node["InstanceStatus"] = {"Status": "DeepHealthCheckInProgress"}
            outcome, message = self._outcomes.get(node["InstanceId"], ("Running", ""))
            self._checking[node["InstanceId"]] = [outcome, message, self.health_check_polls]
        return {"ClusterArn": cluster["ClusterArn"]}

    def _advance_checks(self, cluster: str) -> None:
        """One listing of the cluster's nodes: checks in progress move on."""
        nodes = self.nodes[cluster]
        for node in list(nodes):
            checking = self._checking.get(node["InstanceId"])
            if checking is None:
                continue
            checking[2] -= 1
            if checking[2] > 0:
                continue
            del self._checking[node["InstanceId"]]
            outcome, message = checking[0], checking[1]
            if outcome == "replaced":
                nodes.remove(node)
                self.add_node(cluster, node["InstanceGroupName"], status="Pending")
            else:
                node["InstanceStatus"] = {
                    "Status": outcome,
                    **({"Message": message} if message else {}),
                }

    def list_cluster_nodes(self, params: dict[str, Any]) -> dict[str, Any]:
        cluster = self._cluster(str(params.get("ClusterName", "")))
        if not params.get("NextToken"):
            self._advance_checks(cluster["ClusterName"])
        nodes = list(self.nodes.get(cluster["ClusterName"], []))
        contains = params.get("InstanceGroupNameContains")
        if contains:
            nodes = [n for n in nodes if str(contains) in n["InstanceGroupName"]]
        after, before = (
            _time(params.get("CreationTimeAfter")),
            _time(params.get("CreationTimeBefore")),
        )
        if after is not None:
            nodes = [n for n in nodes if n["LaunchTime"] > after]
        if before is not None:
            nodes = [n for n in nodes if n["LaunchTime"] < before]
        sort_by = params.get("SortBy")
        if sort_by is not None:
            key = "LaunchTime" if sort_by == "CREATION_TIME" else "InstanceId"
            nodes.sort(key=lambda n: n[key], reverse=params.get("SortOrder") == "Descending")
        start = int(params.get("NextToken") or 0)
        size = min(int(params.get("MaxResults") or self.node_page_size), self.node_page_size)
        answer: dict[str, Any] = {"ClusterNodeSummaries": nodes[start : start + size]}
        if start + size < len(nodes):
            answer["NextToken"] = str(start + size)
        return answer

    def _cluster(self, name: str) -> dict[str, Any]:
        cluster = next(
            (c for c in self.clusters.values() if name in (c["ClusterName"], c["ClusterArn"])),
            None,
        )
        if cluster is None:
            # SageMaker's error for an unknown cluster (DescribeCluster API reference).
            raise self._error("ResourceNotFound", f"Cluster {name} not found.", 400)
        return cluster

    # --- EKS ----------------------------------------------------------------------------

    def work_eks(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation != "DescribeCluster":
            raise self._error("NotImplemented", f"The fake does not serve EKS {operation}.", 501)
        errors = service_model.json_input_errors("eks", operation, params)
        if errors:
            raise self._error("InvalidParameterException", "; ".join(errors), 400)
        cluster = self.eks_clusters.get(str(params["name"]))
        if cluster is None:
            raise self._error(
                "ResourceNotFoundException", f"No cluster found for name: {params['name']}.", 404
            )
        return {"cluster": dict(cluster)}


def _time(value: Any) -> datetime | None:
    """A JSON timestamp as botocore sends it (epoch seconds)."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return datetime.fromisoformat(str(value))


def rest_json_error_body(message: str) -> bytes:
    """The body of a REST-JSON error; the code travels in the x-amzn-ErrorType header."""
    return json.dumps({"message": message}).encode()
