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

Only GETs of collections are made, every page read. With the default private endpoint
the API answers only inside the VPC (or from `eks.private_access_cidrs`): a request
that gets no answer within `TIMEOUT_SECONDS` raises `Unreachable`, and the callers say
so instead of failing.
"""

from __future__ import annotations

from typing import Any

from novapod.constructs.handler_core import kubernetes
from novapod.constructs.handler_core.kubernetes import (
    PODS,
    PYTORCHJOBS,
    Cluster,
    Refused,
    Unreachable,
    connect,
)

TIMEOUT_SECONDS = 5.0

__all__ = [
    "PODS",
    "PYTORCHJOBS",
    "Cluster",
    "Refused",
    "Unreachable",
    "connect",
    "list_items",
]


def list_items(
    cluster: Cluster, path: str, *, timeout: float | None = None
) -> list[dict[str, Any]]:
    """Every item of the collection at `path`, page after page."""
    return kubernetes.list_items(
        cluster, path, timeout=TIMEOUT_SECONDS if timeout is None else timeout
    )
