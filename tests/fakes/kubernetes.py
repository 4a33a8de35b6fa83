"""A fake Kubernetes API server of an EKS cluster, over HTTPS on 127.0.0.1.

Its CA and server certificate are made at start with `trustme`, so a client that does
not verify against the cluster's CA (what EKS DescribeCluster returns) fails the TLS
handshake. It authenticates like EKS: the bearer token must be aws-iam-authenticator's
(`k8s-aws-v1.` + unpadded base64url of a presigned STS GetCallerIdentity URL whose
signed headers include `x-k8s-aws-id`, see aws/aws-cli
awscli/customizations/eks/get_token.py), and its SigV4 signature is recomputed here
with the cluster's name in `x-k8s-aws-id` and the test's secret key, as STS would when
the authenticator forwards it. A bad token gets 401 and a Status object, like the API
server.

It serves GET of a namespace (`/api/v1/namespaces/<name>`) and of a
CustomResourceDefinition (`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/<name>`)
from scripted sets, 404 with a NotFound Status otherwise; `refuse` answers every
request with 401 or 403 (no access entry, or RBAC denies), `fail_next` injects
statuses (429, 5xx) for the next requests. Every request is recorded.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import ssl
import threading
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import trustme

TOKEN_PREFIX = "k8s-aws-v1."
_NAMESPACE = re.compile(r"/api/v1/namespaces/([^/]+)")
_CRD = re.compile(r"/apis/apiextensions\.k8s\.io/v1/customresourcedefinitions/([^/]+)")
_SCOPE = re.compile(r"[^/]+/(\d{8})/([^/]+)/([^/]+)/aws4_request")
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    token_errors: tuple[str, ...]  # empty when the token is a valid EKS token


def token_errors(
    authorization: str, *, cluster_name: str, secret_key: str, now: datetime | None = None
) -> list[str]:
    """Why `authorization` is not a valid EKS bearer token for `cluster_name` (none: valid)."""
    scheme, _, token = authorization.partition(" ")
    if scheme != "Bearer" or not token.startswith(TOKEN_PREFIX):
        return [f"not a Bearer {TOKEN_PREFIX} token: {authorization[:30]!r}"]
    encoded = token[len(TOKEN_PREFIX) :]
    if "=" in encoded:
        return ["the token keeps base64 padding"]
    try:
        url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ["the token is not base64url"]
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    errors = [
        f"{key} is {query.get(key)!r}, not {want!r}"
        for key, want in (
            ("Action", "GetCallerIdentity"),
            ("Version", "2011-06-15"),
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Expires", "60"),
        )
        if query.get(key) != want
    ]
    signed = query.get("X-Amz-SignedHeaders", "").split(";")
    if "x-k8s-aws-id" not in signed or "host" not in signed:
        errors.append(f"signed headers {signed} lack host or x-k8s-aws-id")
    scope = _SCOPE.fullmatch(query.get("X-Amz-Credential", ""))
    if scope is None or scope.group(3) != "sts":
        errors.append(f"credential {query.get('X-Amz-Credential')!r} is not for sts")
    if "X-Amz-Signature" not in query or errors or scope is None:
        return errors or ["the URL has no X-Amz-Signature"]
    signed_at = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    moment = now or datetime.now(UTC)
    if not signed_at - timedelta(minutes=5) <= moment <= signed_at + timedelta(seconds=60):
        errors.append(f"the presigned URL of {query['X-Amz-Date']} has expired")
    headers = {"host": parts.netloc, "x-k8s-aws-id": cluster_name}
    expected = _signature(
        parts.path or "/", query, signed=signed, headers=headers, secret_key=secret_key, scope=scope
    )
    if not hmac.compare_digest(expected, query["X-Amz-Signature"]):
        errors.append(f"the signature does not match x-k8s-aws-id {cluster_name!r}")
    return errors


def _signature(
    path: str,
    query: dict[str, str],
    *,
    signed: list[str],
    headers: dict[str, str],
    secret_key: str,
    scope: re.Match[str],
) -> str:
    """SigV4 of a presigned GET (docs.aws.amazon.com/IAM/latest/UserGuide/
    reference_sigv-create-signed-request.html), as STS checks it."""
    canonical_query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(query.items())
        if k != "X-Amz-Signature"
    )
    canonical_headers = "".join(f"{name}:{headers.get(name, '')}\n" for name in signed)
    canonical = "\n".join(
        ["GET", path, canonical_query, canonical_headers, ";".join(signed), EMPTY_SHA256]
    )
    date, region, service = scope.group(1), scope.group(2), scope.group(3)
    credential_scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            query["X-Amz-Date"],
            credential_scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = f"AWS4{secret_key}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def status_object(code: int, reason: str, message: str, **details: str) -> dict[str, Any]:
    """The API server's Status object for an error answer."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = details
    return status


class FakeKubernetes:
    """Use as a context manager (starts and stops the HTTPS server)."""

    def __init__(self, *, cluster_name: str, secret_key: str) -> None:
        self.cluster_name = cluster_name
        self.secret_key = secret_key
        self.ca = trustme.CA()
        self._cert = self.ca.issue_cert("127.0.0.1")
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.namespaces: set[str] = {"default", "kube-system"}
            self.crds: set[str] = set()
            self.refusal: tuple[int, str] | None = None
            self.requests: list[Request] = []
            self._failures: deque[int] = deque()

    # --- scripting ----------------------------------------------------------------------

    def refuse(self, status: int, message: str = "") -> None:
        """Answer every request with 401 (no access entry) or 403 (RBAC denies)."""
        with self._lock:
            self.refusal = (status, message)

    def fail_next(self, status: int, *, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    # --- lifecycle ----------------------------------------------------------------------

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert_pem.bytes()

    @property
    def endpoint(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake Kubernetes API is not running")
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeKubernetes:
        fake = self

        class Handler(_Handler):
            kubernetes = fake

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._cert.configure_cert(context)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeKubernetes:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- inspection ---------------------------------------------------------------------

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    def bad_tokens(self) -> list[tuple[str, ...]]:
        with self._lock:
            return [r.token_errors for r in self.requests if r.token_errors]

    # --- serving (server threads) -------------------------------------------------------

    def answer(self, method: str, path: str, authorization: str) -> tuple[int, dict[str, Any]]:
        errors = tuple(
            token_errors(authorization, cluster_name=self.cluster_name, secret_key=self.secret_key)
        )
        with self._lock:
            self.requests.append(Request(method, path, errors))
            failure = self._failures.popleft() if self._failures else None
            refusal = self.refusal
            namespaces, crds = set(self.namespaces), set(self.crds)
        if errors:
            return 401, status_object(401, "Unauthorized", "Unauthorized")
        if failure is not None:
            return failure, status_object(failure, "InternalError", f"injected HTTP {failure}")
        if refusal is not None:
            code, message = refusal
            reason = "Unauthorized" if code == 401 else "Forbidden"
            return code, status_object(code, reason, message or reason)
        if method != "GET":
            return 405, status_object(405, "MethodNotAllowed", f"{method} is not served")
        if match := _NAMESPACE.fullmatch(path):
            name = match.group(1)
            if name in namespaces:
                return 200, {
                    "kind": "Namespace",
                    "apiVersion": "v1",
                    "metadata": {"name": name},
                    "status": {"phase": "Active"},
                }
            return 404, status_object(
                404, "NotFound", f'namespaces "{name}" not found', name=name, kind="namespaces"
            )
        if match := _CRD.fullmatch(path):
            name = match.group(1)
            if name in crds:
                return 200, {
                    "kind": "CustomResourceDefinition",
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "metadata": {"name": name},
                }
            message = f'customresourcedefinitions.apiextensions.k8s.io "{name}" not found'
            return 404, status_object(
                404,
                "NotFound",
                message,
                name=name,
                group="apiextensions.k8s.io",
                kind="customresourcedefinitions",
            )
        return 404, status_object(
            404, "NotFound", "the server could not find the requested resource"
        )


class _Handler(BaseHTTPRequestHandler):
    kubernetes: FakeKubernetes
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        status, payload = self.kubernetes.answer(
            "GET", urlsplit(self.path).path, self.headers.get("Authorization") or ""
        )
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
