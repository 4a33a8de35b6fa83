"""The EKS cluster's Kubernetes API, read with the caller's own credentials, as
`novapod status` and `novapod health` see the jobs' runs and their pods.

It reaches the cluster as the NovaEnvironment check does
(novapod/constructs/nova_environment/handler/kubernetes.py, reused here): EKS
DescribeCluster gives the API server's endpoint and its CA (`certificateAuthority.data`,
base64 PEM), and the bearer token is aws-iam-authenticator's (`aws eks get-token`): an
STS GetCallerIdentity request presigned locally for 60 seconds with the header
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

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from novapod.constructs.nova_environment.handler.kubernetes import (
    KubernetesUnreachable,
    tls_context,
    token,
)

TIMEOUT_SECONDS = 5.0
# The Kubeflow training operator's PyTorchJob (kubeflow.org/v1), what the Nova charts
# create, and the core pods its replicas run as.
PYTORCHJOBS = "/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs"
PODS = "/api/v1/namespaces/{namespace}/pods"
CONFIGMAP = "/api/v1/namespaces/{namespace}/configmaps/{name}"
MAX_PAGES = 100

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


class Unreachable(Exception):  # noqa: N818  (a state, not a programming error)
    """No HTTP answer from the API server: refused, timed out, TLS failure."""


class Refused(Exception):  # noqa: N818
    """The API server answered with an error status (its Status object's message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return f"HTTP {self.status}" + (f": {self.message}" if self.message else "")


@dataclass(frozen=True)
class Cluster:
    """Where the API server is and how to talk to it."""

    name: str  # the EKS cluster
    endpoint: str
    context: ssl.SSLContext
    bearer: str


def connect(eks_cluster: dict[str, Any], sts: Any) -> Cluster:
    """A connection from EKS DescribeCluster's `cluster` and an STS client (whose
    credentials sign the token); `Unreachable` when the answer has no usable endpoint."""
    name = str(eks_cluster.get("name") or "")
    endpoint = str(eks_cluster.get("endpoint") or "")
    authority = str((eks_cluster.get("certificateAuthority") or {}).get("data") or "")
    if not endpoint.startswith("https://") or not authority:
        raise Unreachable(
            f"EKS cluster {name} has no API endpoint yet ({eks_cluster.get('status')})"
        )
    try:
        context = tls_context(authority)
    except KubernetesUnreachable as error:
        raise Unreachable(str(error)) from error
    return Cluster(
        name=name, endpoint=endpoint.rstrip("/"), context=context, bearer=token(sts, name)
    )


def list_items(
    cluster: Cluster, path: str, *, timeout: float = TIMEOUT_SECONDS
) -> list[dict[str, Any]]:
    """Every item of the collection at `path`, page after page."""
    items: list[dict[str, Any]] = []
    token_ = ""
    for _ in range(MAX_PAGES):
        query = f"?continue={urllib.parse.quote(token_)}" if token_ else ""
        document = _get(cluster, path + query, timeout)
        items += [item for item in document.get("items") or [] if isinstance(item, dict)]
        token_ = str((document.get("metadata") or {}).get("continue") or "")
        if not token_:
            return items
    raise Refused(0, f"more than {MAX_PAGES} pages of {path}")


def get_object(
    cluster: Cluster, path: str, *, timeout: float = TIMEOUT_SECONDS
) -> dict[str, Any] | None:
    """The object at `path`, or None when the server answers 404 NotFound."""
    try:
        return _get(cluster, path, timeout)
    except Refused as error:
        if error.status == 404:
            return None
        raise


def _get(cluster: Cluster, path: str, timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310  (https only, checked in connect)
        cluster.endpoint + path,
        headers={"Authorization": f"Bearer {cluster.bearer}", "Accept": "application/json"},
        method="GET",
    )
    try:
        with urllib.request.urlopen(  # noqa: S310
            request, timeout=timeout, context=cluster.context
        ) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        raise Refused(int(error.code), _message(error.read())) from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise Unreachable(f"{type(reason).__name__}: {reason}") from error
    try:
        document = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise Refused(200, "the answer is not JSON") from None
    if not isinstance(document, dict):
        raise Refused(200, "the answer is not a List object")
    return document


def _message(body: bytes) -> str:
    """The `message` of the Status object an error answer carries."""
    try:
        status = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    message = status.get("message") if isinstance(status, dict) else None
    return str(message) if message else ""
