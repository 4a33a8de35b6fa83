"""The EKS cluster's Kubernetes API, read with the caller's own credentials, as
`novapod status` and `novapod health` see the jobs' runs and their pods.

The client is the handlers' (novapod/constructs/handler_core/kubernetes.py, shared with
the NovaEnvironment check and the environment's scheduled check): EKS DescribeCluster
gives the API server's endpoint and its CA (`certificateAuthority.data`, base64 PEM),
and the bearer token is aws-iam-authenticator's (`aws eks get-token`): an STS
GetCallerIdentity request presigned locally for 60 seconds with the header
`x-k8s-aws-id: <cluster>` signed, so no call is made for it. The API server maps the
caller's principal through the cluster's access entries: a role listed in
`nova.scientists` gets the scientists' Kubernetes group, whose Role in the jobs'
namespace may get and list PyTorchJobs and pods (novapod/nova/kubernetes.py,
scientist_rules).

Only GETs are made: of collections, and of the bootstrap's marker ConfigMap in
kube-system (`get_object`; `status` compares it with the pins). The scientists' Role
is namespaced, so their access entry gets 403 Forbidden for kube-system; a cluster
admin's (eks.admin_principals) reads it. The server answers a collection with a List object whose
`metadata.continue` names the next page when the server chunks it
(kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks);
every page is read. With the default private endpoint the API answers only inside the
VPC (or from `eks.private_access_cidrs`): a request that gets no answer within
`TIMEOUT_SECONDS` raises `Unreachable`, and the callers say so instead of failing.
"""

from __future__ import annotations

from typing import Any

from novapod.constructs.handler_core import kubernetes
from novapod.constructs.handler_core.kubernetes import (
    CONFIGMAP,
    PODS,
    PYTORCHJOBS,
    Cluster,
    Refused,
    Unreachable,
    connect,
)

TIMEOUT_SECONDS = 5.0

__all__ = [
    "CONFIGMAP",
    "PODS",
    "PYTORCHJOBS",
    "Cluster",
    "Refused",
    "Unreachable",
    "connect",
    "get_object",
    "list_items",
]


def list_items(
    cluster: Cluster, path: str, *, timeout: float | None = None
) -> list[dict[str, Any]]:
    """Every item of the collection at `path`, page after page."""
    return kubernetes.list_items(
        cluster, path, timeout=TIMEOUT_SECONDS if timeout is None else timeout
    )


def get_object(
    cluster: Cluster, path: str, *, timeout: float = TIMEOUT_SECONDS
) -> dict[str, Any] | None:
    """The object at `path`, or None when the server answers 404 NotFound."""
    return kubernetes.get_object(cluster, path, timeout=timeout)
