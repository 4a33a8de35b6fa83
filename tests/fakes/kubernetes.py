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

Namespaced objects of the kinds the Nova charts and Helm's release records use
(`KINDS`) are kept in `objects` and served as the API server serves them: GET of one or
of the collection (with an equality-based `labelSelector`; any other selector syntax is
a 400), PUT (update, the name and namespace must match the path) and DELETE (a Status
of Success, as for objects without finalizers; NotFound with the API server's message
otherwise), under their group's served version only (`kubeflow.org/v1`, `apps/v1`,
`batch/v1`, core `v1`): ConfigMaps too, such as the bootstrap's marker in kube-system.
`bind_role(namespace, rules)` authorizes like RBAC for a user
bound to one namespaced Role: a verb (get, list, update, delete, by method and path) on
a resource outside the rules, or in another namespace (a GET of kube-system's marker by
the scientists' Role), is a 403 with the API server's Forbidden message
(k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go, forbiddenMessage);
`allow_all()` drops the binding, as for a cluster admin's access entry.
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
USER = "novapod-scientist"  # the user a bound Role's denials name
_NAMESPACE = re.compile(r"/api/v1/namespaces/([^/]+)")
# /api/v1/namespaces/<ns>/<resource>[/<name>] and /apis/<group>/<version>/namespaces/...
_CORE_OBJECT = re.compile(r"/api/(v1)/namespaces/([^/]+)/([a-z]+)(?:/([^/]+))?")
_GROUP_OBJECT = re.compile(r"/apis/([^/]+)/([^/]+)/namespaces/([^/]+)/([a-z]+)(?:/([^/]+))?")
# (group, kind) -> (served version, resource): what the Nova charts create
# (novapod/nova/kubernetes.py sources them), Helm's Secrets, and the pods the operators
# run them as (read by `novapod status` and `novapod health`).
KINDS: dict[tuple[str, str], tuple[str, str]] = {
    ("", "ConfigMap"): ("v1", "configmaps"),
    ("", "Pod"): ("v1", "pods"),
    ("", "Secret"): ("v1", "secrets"),
    ("", "Service"): ("v1", "services"),
    ("apps", "Deployment"): ("v1", "deployments"),
    ("apps", "StatefulSet"): ("v1", "statefulsets"),
    ("batch", "Job"): ("v1", "jobs"),
    ("kubeflow.org", "PyTorchJob"): ("v1", "pytorchjobs"),
}
_RESOURCES = {
    (group, resource): (version, kind) for (group, kind), (version, resource) in KINDS.items()
}
_SELECTOR_TERM = re.compile(r"([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)")
Rules = tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]
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
            # (group, resource, namespace, name) -> the object as stored
            self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
            self.role: tuple[str, Rules] | None = None
            self._version = 1
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

    def bind_role(self, namespace: str, rules: Rules) -> None:
        """Authorize every request as a user bound to a Role of `rules` in `namespace`."""
        with self._lock:
            self.role = (namespace, rules)

    def allow_all(self) -> None:
        """Authorize every request, as AmazonEKSClusterAdminPolicy does."""
        with self._lock:
            self.role = None

    def add_object(self, obj: dict[str, Any]) -> None:
        """Store a namespaced object as a create would (resourceVersion set)."""
        group, _, version = str(obj["apiVersion"]).rpartition("/")
        served, resource = KINDS[(group, obj["kind"])]
        assert version == served, f"{obj['apiVersion']} is not served"
        metadata = obj["metadata"]
        with self._lock:
            self.namespaces.add(metadata["namespace"])
            stored = json.loads(json.dumps(obj))
            stored["metadata"]["resourceVersion"] = str(self._version)
            self._version += 1
            self.objects[(group, resource, metadata["namespace"], metadata["name"])] = stored

    def names(self, namespace: str) -> set[tuple[str, str]]:
        """(kind, name) of every object stored in `namespace`."""
        with self._lock:
            return {(_RESOURCES[(g, r)][1], n) for (g, r, ns, n) in self.objects if ns == namespace}

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

    def answer(
        self,
        method: str,
        path: str,
        authorization: str,
        query: str = "",
        body: dict[str, Any] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        errors = tuple(
            token_errors(authorization, cluster_name=self.cluster_name, secret_key=self.secret_key)
        )
        with self._lock:
            self.requests.append(Request(method, path, errors))
            failure = self._failures.popleft() if self._failures else None
            refusal = self.refusal
            role = self.role
            namespaces, crds = set(self.namespaces), set(self.crds)
        if errors:
            return 401, status_object(401, "Unauthorized", "Unauthorized")
        if failure is not None:
            return failure, status_object(failure, "InternalError", f"injected HTTP {failure}")
        if refusal is not None:
            code, message = refusal
            reason = "Unauthorized" if code == 401 else "Forbidden"
            return code, status_object(code, reason, message or reason)
        target = _object_path(path)
        if target is not None:
            return self._object(method, target, dict(parse_qsl(query)), body, role)
        if role is not None and (match := _NAMESPACE.fullmatch(path)):
            denied = _denied(role, "", "namespaces", _verb(method, named=True), match.group(1))
            if denied:
                return 403, _forbidden("", "namespaces", match.group(1), denied)
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

    def _object(
        self,
        method: str,
        target: tuple[str, str, str, str, str | None],
        query: dict[str, str],
        body: dict[str, Any] | None,
        role: tuple[str, Rules] | None,
    ) -> tuple[int, dict[str, Any]]:
        group, version, namespace, resource, name = target
        served = _RESOURCES.get((group, resource))
        if served is None or served[0] != version:
            return 404, status_object(
                404, "NotFound", "the server could not find the requested resource"
            )
        verb = _verb(method, named=name is not None)
        if verb is None:
            return 405, status_object(405, "MethodNotAllowed", f"{method} is not served")
        if role is not None:
            denied = _denied(role, group, resource, verb, namespace)
            if denied:
                return 403, _forbidden(group, resource, name, denied)
        kind = served[1]
        qualified = f"{resource}.{group}" if group else resource
        key = (group, resource, namespace, name or "")
        with self._lock:
            if verb == "list":
                try:
                    selector = _selector(query.get("labelSelector", ""))
                except ValueError as error:
                    return 400, status_object(400, "BadRequest", str(error))
                items = [
                    o
                    for (g, r, ns, _), o in sorted(self.objects.items())
                    if (g, r, ns) == (group, resource, namespace) and selector(o)
                ]
                api_version = f"{group}/{version}" if group else version
                return 200, {
                    "kind": f"{kind}List",
                    "apiVersion": api_version,
                    "metadata": {"resourceVersion": str(self._version)},
                    "items": json.loads(json.dumps(items)),
                }
            found = self.objects.get(key)
            if found is None:
                return 404, status_object(
                    404,
                    "NotFound",
                    f'{qualified} "{name}" not found',
                    name=str(name),
                    group=group,
                    kind=resource,
                )
            if verb == "get":
                return 200, json.loads(json.dumps(found))
            if verb == "delete":
                del self.objects[key]
                details = {"name": str(name), "group": group, "kind": resource, "uid": ""}
                return 200, {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            # update: the body names the object at the path.
            metadata = (body or {}).get("metadata", {})
            if (metadata.get("name"), metadata.get("namespace", namespace)) != (name, namespace):
                return 400, status_object(
                    400, "BadRequest", "the name of the object does not match the name on the URL"
                )
            stored = json.loads(json.dumps(body))
            stored["metadata"]["resourceVersion"] = str(self._version)
            self._version += 1
            self.objects[key] = stored
            return 200, json.loads(json.dumps(stored))


def _object_path(path: str) -> tuple[str, str, str, str, str | None] | None:
    """(group, version, namespace, resource, name or None) of a namespaced object path."""
    if match := _CORE_OBJECT.fullmatch(path):
        version, namespace, resource, name = match.groups()
        return "", version, namespace, resource, name
    if match := _GROUP_OBJECT.fullmatch(path):
        group, version, namespace, resource, name = match.groups()
        if group == "apiextensions.k8s.io":
            return None
        return group, version, namespace, resource, name
    return None


def _verb(method: str, *, named: bool) -> str | None:
    """The RBAC verb of a request (k8s.io/apiserver pkg/endpoints/request/requestinfo.go)."""
    if method == "GET":
        return "get" if named else "list"
    return {"PUT": "update", "DELETE": "delete"}.get(method) if named else None


def _denied(
    role: tuple[str, Rules], group: str, resource: str, verb: str | None, namespace: str
) -> str | None:
    """Why a user bound to `role` may not, or None."""
    bound, rules = role
    allowed = namespace == bound and any(
        group in groups and resource in resources and verb in verbs
        for groups, resources, verbs in rules
    )
    if allowed:
        return None
    return (
        f'User "{USER}" cannot {verb} resource "{resource}" in API group "{group}" in the '
        f'namespace "{namespace}"'
    )


def _forbidden(group: str, resource: str, name: str | None, why: str) -> dict[str, Any]:
    qualified = f"{resource}.{group}" if group else resource
    subject = f'{qualified} "{name}"' if name else qualified
    return status_object(403, "Forbidden", f"{subject} is forbidden: {why}", kind=resource)


def _selector(text: str) -> Any:
    """An equality-based label selector (k=v, k==v, k!=v, comma-separated) as a test."""
    terms = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = _SELECTOR_TERM.fullmatch(part)
        if match is None:
            raise ValueError(f"unable to parse requirement: {part!r}")
        terms.append(match.groups())

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(
            (labels.get(key) == value) == (operator != "!=") for key, operator, value in terms
        )

    return matches


class _Handler(BaseHTTPRequestHandler):
    kubernetes: FakeKubernetes
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        request = json.loads(raw) if raw and method == "PUT" else None
        status, payload = self.kubernetes.answer(
            method, parts.path, self.headers.get("Authorization") or "", parts.query, request
        )
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
