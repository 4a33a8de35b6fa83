"""HyperPod and EKS clusters of the fake control plane (`aws_control_plane.py` routes here).

SageMaker DescribeCluster speaks JSON 1.1 like the plane's other SageMaker operations
(requests and answers checked against botocore's model there). EKS DescribeCluster
speaks REST-JSON (`GET /clusters/{name}`, routed by `service_model.rest_request`): its
members are checked against botocore's eks model here and its answer by the plane.
Errors come back as the plane's API errors (EKS puts the code in `x-amzn-ErrorType`,
which botocore's REST-JSON parser reads).

Tests script a cluster's status sequence (one status per DescribeCluster, the last one
stays; a status may carry a FailureMessage) and its restricted instance groups.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
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
) -> dict[str, Any]:
    """One member of DescribeCluster's RestrictedInstanceGroups."""
    group: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "CurrentCount": current,
        "TargetCount": target,
        "ExecutionRole": f"arn:aws:iam::{account}:role/{name}-execution",
        "Status": "InService",
    }
    if plan_arn is not None:
        group["TrainingPlanArn"] = plan_arn
        group["TrainingPlanStatus"] = plan_status or "Active"
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

    # --- scripting ----------------------------------------------------------------------

    def add_cluster(
        self,
        name: str,
        *,
        statuses: Iterable[str | tuple[str, str]] = ("InService",),
        restricted_groups: Sequence[dict[str, Any]] = (),
        eks_cluster: str | None = None,
    ) -> str:
        """A HyperPod cluster on EKS; returns its ARN (the ID is 12 lowercase hex digits)."""
        cluster_id = hashlib.sha256(name.encode()).hexdigest()[:12]
        arn = f"arn:aws:sagemaker:{REGION}:{self.account}:cluster/{cluster_id}"
        self.clusters[name] = {
            "ClusterArn": arn,
            "ClusterName": name,
            "ClusterStatus": "Creating",
            "CreationTime": datetime(2030, 1, 1, tzinfo=UTC),
            "InstanceGroups": [],
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

    def add_eks_cluster(
        self, name: str, *, endpoint: str, ca_pem: bytes, status: str = "ACTIVE"
    ) -> None:
        """An EKS cluster whose API server is `endpoint`, signed by the CA `ca_pem`."""
        self.eks_clusters[name] = {
            "name": name,
            "arn": f"arn:aws:eks:{REGION}:{self.account}:cluster/{name}",
            "createdAt": datetime(2030, 1, 1, tzinfo=UTC),
            "version": "1.32",
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

    # --- SageMaker ----------------------------------------------------------------------

    def describe_cluster(self, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("ClusterName", ""))
        cluster = next(
            (c for c in self.clusters.values() if name in (c["ClusterName"], c["ClusterArn"])),
            None,
        )
        if cluster is None:
            # SageMaker's error for an unknown cluster (DescribeCluster API reference).
            raise self._error("ResourceNotFound", f"Cluster {name} not found.", 400)
        script = self._statuses[cluster["ClusterName"]]
        status, message = script[0]
        if len(script) > 1:
            script.popleft()
        shown = {**cluster, "ClusterStatus": status}
        if message:
            shown["FailureMessage"] = message
        return shown

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


def rest_json_error_body(message: str) -> bytes:
    """The body of a REST-JSON error; the code travels in the x-amzn-ErrorType header."""
    return json.dumps({"message": message}).encode()
