"""The EKS cluster's Kubernetes API, read with the standard library (urllib + ssl).

Authentication is the scheme EKS documents for IAM principals (aws-iam-authenticator's
token, the one `aws eks get-token` prints, see aws/aws-cli
awscli/customizations/eks/get_token.py and kubernetes-sigs/aws-iam-authenticator
README "API Authorization from Outside a Cluster"): an STS GetCallerIdentity request
presigned for 60 seconds with the header `x-k8s-aws-id: <cluster name>` among the signed
headers, its URL base64url-encoded without padding, prefixed with `k8s-aws-v1.`. The API
server (its authenticator) sends the presigned request to STS and maps the answering
principal through the cluster's access entries.

The server certificate is checked against the cluster's CA, which EKS DescribeCluster
returns base64-encoded (`certificateAuthority.data`).
"""

from __future__ import annotations

import base64
import binascii
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from .decisions import bearer_token

K8S_AWS_ID_HEADER = "x-k8s-aws-id"
# aws eks get-token presigns for 60 s (URL_TIMEOUT in get_token.py).
PRESIGN_SECONDS = 60


class KubernetesUnreachable(Exception):  # noqa: N818  (a state, not a programming error)
    """No HTTP answer: connection refused, timed out, TLS failure."""


@dataclass(frozen=True)
class Answer:
    status: int
    message: str  # the Status object's message on errors, "" on success


def token(sts: Any, cluster_name: str) -> str:
    """The bearer token for `cluster_name`, signed with the handler's credentials.

    botocore has no parameter for the extra header, so it is added just before signing,
    as the AWS CLI does (a `before-sign` handler on GetCallerIdentity).
    """

    def add_cluster_header(request: Any, **_: Any) -> None:
        request.headers[K8S_AWS_ID_HEADER] = cluster_name

    event = "before-sign.sts.GetCallerIdentity"
    sts.meta.events.register(event, add_cluster_header)
    try:
        url = sts.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=PRESIGN_SECONDS, HttpMethod="GET"
        )
    finally:
        sts.meta.events.unregister(event, add_cluster_header)
    return bearer_token(str(url))


def tls_context(certificate_authority_data: str) -> ssl.SSLContext:
    """Verify the API server against the cluster's own CA only."""
    try:
        pem = base64.b64decode(certificate_authority_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise KubernetesUnreachable(
            f"the cluster's certificateAuthority.data is not base64 PEM ({exc})"
        ) from exc
    context = ssl.create_default_context(cafile=None, capath=None, cadata=pem)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def get(
    endpoint: str, path: str, *, bearer: str, context: ssl.SSLContext, timeout: float
) -> Answer:
    """GET `path` of the API server; an HTTP error is an Answer, no answer raises."""
    if not endpoint.startswith("https://"):
        raise KubernetesUnreachable(f"the cluster endpoint {endpoint!r} is not an https URL")
    request = urllib.request.Request(  # noqa: S310  (https only, checked above)
        endpoint.rstrip("/") + path,
        headers={"Authorization": f"Bearer {bearer}", "Accept": "application/json"},
        method="GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:  # noqa: S310
            response.read()
            return Answer(int(response.status), "")
    except urllib.error.HTTPError as error:
        return Answer(int(error.code), _status_message(error.read()))
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise KubernetesUnreachable(f"{type(reason).__name__}: {reason}") from error


def _status_message(body: bytes) -> str:
    """The `message` of the Kubernetes Status object an error answer carries."""
    try:
        status = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    message = status.get("message") if isinstance(status, dict) else None
    return str(message) if message else ""
