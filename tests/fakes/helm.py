"""A fake `helm` (list, uninstall) that works on the fake Kubernetes API over HTTPS.

It keeps releases where Helm 3 keeps them, as Secrets in the release's namespace
(helm/helm pkg/storage/driver/secrets.go and util.go): named
`sh.helm.release.v1.<name>.v<version>`, type `helm.sh/release.v1`, labelled `name`,
`owner=helm`, `status`, `version`, the release JSON gzipped and base64-encoded in
`data.release` (which the Secret's JSON base64-encodes once more). `install` writes a
release and its objects straight into the fake, as `helm install` leaves them.

The command reads the cluster from the file $KUBECONFIG names (JSON: server, ca, token),
which the fake `hyperpod connect-cluster` of the tests writes, so helm fails as the real
one does ("Kubernetes cluster unreachable") when nothing connected first:
- `list [--all] --namespace N [--filter REGEX] --output json`: lists the Secrets
  labelled owner=helm, keeps each release's newest version when deployed or failed
  (helm list's default) or in any status with --all, filters names with REGEX (helm's --filter is a Go regexp) and prints
  name, namespace, revision, status, chart as JSON.
- `uninstall NAME --namespace N`: reads the release (Secrets labelled name=NAME,
  owner=helm), marks it uninstalling (an update), deletes every object of its manifest
  (NotFound is skipped, as helm's kube client does) and then its records (pkg/action/
  uninstall.go); prints `release "NAME" uninstalled`.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from tests.fakes.kubernetes import KINDS, FakeKubernetes

RELEASE_TYPE = "helm.sh/release.v1"


def _encode(release: dict[str, Any]) -> str:
    inner = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    return base64.b64encode(inner.encode()).decode()  # the Secret's own base64


def _decode(secret: dict[str, Any]) -> dict[str, Any]:
    inner = base64.b64decode(secret["data"]["release"])
    return dict(json.loads(gzip.decompress(base64.b64decode(inner))))


def release_secret(
    name: str, namespace: str, manifest: str, *, version: int = 1, status: str = "deployed"
) -> dict[str, Any]:
    release = {
        "name": name,
        "namespace": namespace,
        "version": version,
        "info": {"status": status},
        "chart": {"metadata": {"name": "nova", "version": "0.1.0"}},
        "manifest": manifest,
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": RELEASE_TYPE,
        "metadata": {
            "name": f"sh.helm.release.v1.{name}.v{version}",
            "namespace": namespace,
            "labels": {"name": name, "owner": "helm", "status": status, "version": str(version)},
        },
        "data": {"release": _encode(release)},
    }


def install(
    kube: FakeKubernetes,
    release: str,
    namespace: str,
    objects: Iterable[dict[str, Any]],
    *,
    status: str = "deployed",
) -> None:
    """What `helm install <release>` leaves: the objects (in the release's namespace,
    labelled as the charts label them) and the release record."""
    documents = []
    for obj in objects:
        stored = {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}
        stored["metadata"].setdefault("labels", {"app": obj["metadata"]["name"]})
        kube.add_object(stored)
        documents.append(yaml.safe_dump(obj, sort_keys=True))
    manifest = "".join(f"---\n# Source: nova/templates/x.yaml\n{doc}" for doc in documents)
    kube.add_object(release_secret(release, namespace, manifest, status=status))


# --- the command ------------------------------------------------------------------------


class _Cluster:
    def __init__(self, config: dict[str, str]) -> None:
        self.server = config["server"]
        self.token = config["token"]
        self.context = ssl.create_default_context(cadata=config["ca"])

    def call(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def ok(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        status, answer = self.call(method, path, body)
        if status >= 300:
            raise _HelmError(f"{answer.get('message', status)}")
        return answer


class _HelmError(Exception):
    pass


def _path(api_version: str, kind: str, namespace: str, name: str | None = None) -> str:
    group, _, version = api_version.rpartition("/")
    resource = KINDS[(group, kind)][1]
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    tail = f"/{name}" if name else ""
    return f"{base}/namespaces/{namespace}/{resource}{tail}"


def _records(cluster: _Cluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"labelSelector": selector})
    return list(cluster.ok("GET", _path("v1", "Secret", namespace) + "?" + query)["items"])


def _list(cluster: _Cluster, namespace: str, pattern: str | None, every: bool) -> int:
    newest: dict[str, dict[str, Any]] = {}
    for secret in _records(cluster, namespace, "owner=helm"):
        release = _decode(secret)
        if release["version"] >= newest.get(release["name"], {}).get("version", 0):
            newest[release["name"]] = release
    rows = [
        {
            "name": r["name"],
            "namespace": r["namespace"],
            "revision": str(r["version"]),
            "status": r["info"]["status"],
            "chart": f"{r['chart']['metadata']['name']}-{r['chart']['metadata']['version']}",
        }
        for name, r in sorted(newest.items())
        if (every or r["info"]["status"] in ("deployed", "failed"))
        and (pattern is None or re.search(pattern, name))
    ]
    print(json.dumps(rows))
    return 0


def _uninstall(cluster: _Cluster, namespace: str, name: str) -> int:
    secrets = _records(cluster, namespace, f"name={name},owner=helm")
    if not secrets:
        print(f"Error: uninstall: Release not loaded: {name}: release: not found", file=sys.stderr)
        return 1
    latest = max(secrets, key=lambda s: int(s["metadata"]["labels"]["version"]))
    release = _decode(latest)
    release["info"]["status"] = "uninstalling"
    latest["metadata"]["labels"]["status"] = "uninstalling"
    latest["data"]["release"] = _encode(release)
    cluster.ok("PUT", _path("v1", "Secret", namespace, latest["metadata"]["name"]), latest)
    for obj in yaml.safe_load_all(release["manifest"]):
        if not obj:
            continue
        where = _path(obj["apiVersion"], obj["kind"], namespace, obj["metadata"]["name"])
        status, answer = cluster.call("DELETE", where)
        if status == 404:
            continue
        if status >= 300:
            print(f"Error: uninstallation completed with 1 error(s): {answer.get('message')}")
            return 1
    for secret in secrets:
        cluster.ok("DELETE", _path("v1", "Secret", namespace, secret["metadata"]["name"]))
    print(f'release "{name}" uninstalled')
    return 0


def _option(argv: Sequence[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def main(argv: Sequence[str]) -> int:
    try:
        with open(os.environ["KUBECONFIG"]) as handle:
            cluster = _Cluster(json.load(handle))
    except (KeyError, OSError):
        print("Error: Kubernetes cluster unreachable: no configuration", file=sys.stderr)
        return 1
    namespace = _option(argv, "--namespace") or "default"
    try:
        if argv[0] == "list":
            assert _option(argv, "--output") == "json", "the fake prints JSON only"
            return _list(cluster, namespace, _option(argv, "--filter"), "--all" in argv)
        if argv[0] == "uninstall":
            return _uninstall(cluster, namespace, argv[1])
    except _HelmError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    print(f"fake helm: unexpected {argv[0]}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
