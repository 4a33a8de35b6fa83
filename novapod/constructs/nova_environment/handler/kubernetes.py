"""The EKS cluster's Kubernetes API as the NovaEnvironment check reads it: one GET, its
status only. The token, the CA and the request are the handler core's
(`handler_core/kubernetes.py`, shared with the scheduled check and `novapod status`).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from ...handler_core.kubernetes import (
    K8S_AWS_ID_HEADER,
    PRESIGN_SECONDS,
    open_request,
    status_message,
    tls_context,
    token,
)
from ...handler_core.kubernetes import Unreachable as KubernetesUnreachable

__all__ = [
    "K8S_AWS_ID_HEADER",
    "PRESIGN_SECONDS",
    "Answer",
    "KubernetesUnreachable",
    "get",
    "tls_context",
    "token",
]


@dataclass(frozen=True)
class Answer:
    status: int
    message: str  # the Status object's message on errors, "" on success


def get(
    endpoint: str, path: str, *, bearer: str, context: ssl.SSLContext, timeout: float
) -> Answer:
    """GET `path` of the API server; an HTTP error is an Answer, no answer raises."""
    status, body = open_request(endpoint, path, bearer=bearer, context=context, timeout=timeout)
    return Answer(status, "" if 200 <= status < 300 else status_message(body))
