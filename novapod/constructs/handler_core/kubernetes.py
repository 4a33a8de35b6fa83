"""The EKS cluster's Kubernetes API, read with the standard library (urllib + ssl): what the
NovaEnvironment check, the environment's scheduled check and `novapod status` (through
novapod/operate/cluster_api.py) share.

Authentication is the scheme EKS documents for IAM principals (aws-iam-authenticator's
token, the one `aws eks get-token` prints, see aws/aws-cli
awscli/customizations/eks/get_token.py and kubernetes-sigs/aws-iam-authenticator
README "API Authorization from Outside a Cluster"): an STS GetCallerIdentity request
presigned for 60 seconds with the header `x-k8s-aws-id: <cluster name>` among the signed
headers, its URL base64url-encoded without padding, prefixed with `k8s-aws-v1.`. It is
signed locally: no call is made for it. The API server (its authenticator) sends the
presigned request to STS and maps the answering principal through the cluster's access
entries (docs.aws.amazon.com/eks/latest/userguide/access-entries.html).

The server certificate is checked against the cluster's CA, which EKS DescribeCluster
returns base64-encoded (`certificateAuthority.data`).

Collections are read page after page: the server answers a GET of a collection with a
List object whose `metadata.continue` names the next page when it chunks it
(kubernetes.io/docs/reference/using-api/api-concepts/#retrieving-large-results-sets-in-chunks).
An answer with an error status raises `Refused` (the Status object's message); no answer
within the timeout (refused, timed out, TLS failure) raises `Unreachable`.
"""

from __future__ import annotations

import base64
import binascii
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

K8S_AWS_ID_HEADER = "x-k8s-aws-id"
TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105  (a scheme name, not a secret)
# aws eks get-token presigns for 60 s (URL_TIMEOUT in get_token.py).
PRESIGN_SECONDS = 60
# The Kubeflow training operator's PyTorchJobs (kubeflow.org/v1), what the Nova charts
# create, and the core pods their replicas run as.
PYTORCHJOBS = "/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs"
PODS = "/api/v1/namespaces/{namespace}/pods"
CONFIGMAP = "/api/v1/namespaces/{namespace}/configmaps/{name}"
MAX_PAGES = 100


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


def bearer_token(presigned_url: str) -> str:
    """`k8s-aws-v1.` + the unpadded base64url of a presigned STS GetCallerIdentity URL."""
    encoded = base64.urlsafe_b64encode(presigned_url.encode()).decode()
    return TOKEN_PREFIX + encoded.rstrip("=")


def token(sts: Any, cluster_name: str) -> str:
    """The bearer token for `cluster_name`, signed with the caller's credentials.

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
        raise Unreachable(
            f"the cluster's certificateAuthority.data is not base64 PEM ({exc})"
        ) from exc
    context = ssl.create_default_context(cafile=None, capath=None, cadata=pem)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def connect(eks_cluster: Mapping[str, Any], sts: Any) -> Cluster:
    """A connection from EKS DescribeCluster's `cluster` and an STS client (whose
    credentials sign the token); `Unreachable` when the answer has no usable endpoint."""
    name = str(eks_cluster.get("name") or "")
    endpoint = str(eks_cluster.get("endpoint") or "")
    authority = str((eks_cluster.get("certificateAuthority") or {}).get("data") or "")
    if not endpoint.startswith("https://") or not authority:
        raise Unreachable(
            f"EKS cluster {name} has no API endpoint yet ({eks_cluster.get('status')})"
        )
    return Cluster(
        name=name,
        endpoint=endpoint.rstrip("/"),
        context=tls_context(authority),
        bearer=token(sts, name),
    )


def open_request(
    endpoint: str, path: str, *, bearer: str, context: ssl.SSLContext, timeout: float
) -> tuple[int, bytes]:
    """GET `path` of the API server: (status, body), an HTTP error status included; no
    answer raises `Unreachable`."""
    if not endpoint.startswith("https://"):
        raise Unreachable(f"the cluster endpoint {endpoint!r} is not an https URL")
    request = urllib.request.Request(  # noqa: S310  (https only, checked above)
        endpoint.rstrip("/") + path,
        headers={"Authorization": f"Bearer {bearer}", "Accept": "application/json"},
        method="GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:  # noqa: S310
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise Unreachable(f"{type(reason).__name__}: {reason}") from error


def list_items(cluster: Cluster, path: str, *, timeout: float) -> list[dict[str, Any]]:
    """Every item of the collection at `path`, page after page."""
    items: list[dict[str, Any]] = []
    next_page = ""
    for _ in range(MAX_PAGES):
        query = f"?continue={urllib.parse.quote(next_page)}" if next_page else ""
        document = _get(cluster, path + query, timeout)
        items += [item for item in document.get("items") or [] if isinstance(item, dict)]
        next_page = str((document.get("metadata") or {}).get("continue") or "")
        if not next_page:
            return items
    raise Refused(0, f"more than {MAX_PAGES} pages of {path}")


def get_object(cluster: Cluster, path: str, *, timeout: float) -> dict[str, Any] | None:
    """The object at `path`, or None when the server answers 404 NotFound."""
    try:
        return _get(cluster, path, timeout)
    except Refused as error:
        if error.status == 404:
            return None
        raise


def _get(cluster: Cluster, path: str, timeout: float) -> dict[str, Any]:
    status, body = open_request(
        cluster.endpoint, path, bearer=cluster.bearer, context=cluster.context, timeout=timeout
    )
    if not 200 <= status < 300:
        raise Refused(status, status_message(body))
    try:
        document = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise Refused(status, "the answer is not JSON") from None
    if not isinstance(document, dict):
        raise Refused(status, "the answer is not a List object")
    return document


def status_message(body: bytes) -> str:
    """The `message` of the Kubernetes Status object an error answer carries."""
    try:
        status = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    message = status.get("message") if isinstance(status, dict) else None
    return str(message) if message else ""
