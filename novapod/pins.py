"""Pinned revisions and tools of the HyperPod dependencies install, loaded from data.

`novapod/data/hyperpod_dependencies.yaml` names the chart and RIG script (repository,
commit, the branch that commit belongs to, path, release), the health-monitoring
agent's image per region, and the tools the CodeBuild job downloads (version, URL,
sha256). This module reads and validates it into frozen values; it imports no CDK,
so the config's checks (the agent's registries), the node images and the
ClusterBootstrap construct read the same pins. A checksum or commit may be null when
no verified value is known: the model keeps it as `None`, `missing()` names it, and
the build refuses to run without it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from novapod import yamlsafe

DATA_FILE = "data/hyperpod_dependencies.yaml"
NAMESPACE = "kube-system"
TOOL_NAMES = ("helm", "kubectl", "yq")
# The CodeBuild project's own timeout bounds the whole job; helm must give up first.
MAX_HELM_TIMEOUT_MINUTES = 30

_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_VERSION = re.compile(r"v\d+\.\d+\.\d+")
_RELEASE = re.compile(r"[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?")
_REPO_PATH = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")
_DURATION = re.compile(r"(?P<value>[1-9][0-9]*)(?P<unit>[sm])")
# A plain branch name (refs/heads/<name>), never a pull-request or other ref.
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9._-]+)*")
_NOT_BRANCHES = ("refs/", "pull/", "remotes/")
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")
_ACCOUNT = re.compile(r"\d{12}")
_VALUES_KEY = re.compile(r"[A-Za-z0-9-]+(\.[A-Za-z0-9_-]+)+")
_ECR_REPOSITORY = re.compile(r"[a-z0-9]+([._/-][a-z0-9]+)*")
_IMAGE_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


class PinsError(ValueError):
    """An invalid pins file; the message names the file and the field path."""


@dataclass(frozen=True)
class ToolPin:
    """One downloaded tool: a Linux amd64 binary, or a tarball holding it."""

    name: str
    version: str
    url: str
    sha256: str | None
    archive_member: str | None = None


@dataclass(frozen=True)
class ChartPin:
    """The HyperPod dependencies Helm chart, taken from a pinned commit."""

    commit: str | None
    branch: str
    path: str
    release: str
    namespace: str
    timeout: str
    wait: bool

    @property
    def revision(self) -> str:
        """What the cluster records once this chart is installed (commit:path)."""
        return f"{self.commit}:{self.path}"


@dataclass(frozen=True)
class RigPin:
    """The restricted-instance-group dependencies script, taken from a pinned commit."""

    commit: str | None
    branch: str
    script: str
    release: str

    @property
    def revision(self) -> str:
        return f"{self.commit}:{self.script}"


@dataclass(frozen=True)
class HealthAgentPin:
    """The chart's health-monitoring agent image: one ECR registry per region."""

    values_key: str
    repository: str
    tag: str
    registry_accounts: dict[str, str]

    def image(self, region: str) -> str | None:
        """The image URI in `region`'s registry, or None where none is known."""
        account = self.registry_accounts.get(region)
        if account is None:
            return None
        return f"{account}.dkr.ecr.{region}.amazonaws.com/{self.repository}:{self.tag}"


@dataclass(frozen=True)
class HyperPodDependencies:
    """Everything ClusterBootstrap pins; `digest()` changes when any of it changes."""

    repository: str
    chart: ChartPin
    rig: RigPin
    health_agent: HealthAgentPin
    helm: ToolPin
    kubectl: ToolPin
    yq: ToolPin

    @property
    def tools(self) -> tuple[ToolPin, ...]:
        return (self.helm, self.kubectl, self.yq)

    def missing(self, *, rig: bool) -> tuple[str, ...]:
        """Field paths of null values an install (with or without RIG) would need."""
        needed: list[tuple[str, str | None]] = [
            ("chart.commit", self.chart.commit),
            ("tools.helm.sha256", self.helm.sha256),
            ("tools.kubectl.sha256", self.kubectl.sha256),
        ]
        if rig:
            needed += [("rig.commit", self.rig.commit), ("tools.yq.sha256", self.yq.sha256)]
        return tuple(name for name, value in needed if value is None)

    def digest(self) -> str:
        """sha256 of the canonical JSON of every pin (the resource's change trigger)."""
        canonical = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@cache
def default_pins() -> HyperPodDependencies:
    """The pins shipped in the package (read once)."""
    return parse_pins(yamlsafe.load_packaged("novapod", DATA_FILE), source=f"novapod/{DATA_FILE}")


def load_pins(path: str | Path) -> HyperPodDependencies:
    """Pins from another file (tests, a mirror with its own URLs)."""
    path = Path(path)
    try:
        data = yamlsafe.load(path.read_text(encoding="utf-8"))
    except yamlsafe.DuplicateKeyError as exc:
        raise PinsError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise PinsError(f"{path}: not valid YAML ({exc})") from None
    return parse_pins(data, source=str(path))


def parse_pins(data: Any, *, source: str) -> HyperPodDependencies:
    reader = _Reader(source)
    root = reader.mapping(
        data, "", {"repository", "chart", "rig", "health_monitoring_agent", "tools"}
    )
    repository = reader.https_url(root, "repository")
    chart = reader.mapping(
        root.get("chart"),
        "chart",
        {"commit", "branch", "path", "release", "namespace", "timeout", "wait"},
    )
    rig = reader.mapping(root.get("rig"), "rig", {"commit", "branch", "script", "release"})
    tools = reader.mapping(root.get("tools"), "tools", set(TOOL_NAMES))
    pinned = {name: reader.tool(tools, name) for name in TOOL_NAMES}
    return HyperPodDependencies(
        repository=repository,
        chart=ChartPin(
            commit=reader.commit(chart, "chart.commit"),
            branch=reader.branch(chart, "chart.branch"),
            path=reader.repo_path(chart, "chart.path"),
            release=reader.release(chart, "chart.release"),
            namespace=reader.namespace(chart, "chart.namespace"),
            timeout=reader.timeout(chart, "chart.timeout"),
            wait=reader.boolean(chart, "chart.wait"),
        ),
        rig=RigPin(
            commit=reader.commit(rig, "rig.commit"),
            branch=reader.branch(rig, "rig.branch"),
            script=reader.repo_path(rig, "rig.script"),
            release=reader.release(rig, "rig.release"),
        ),
        health_agent=reader.health_agent(root.get("health_monitoring_agent")),
        helm=pinned["helm"],
        kubectl=pinned["kubectl"],
        yq=pinned["yq"],
    )


class _Reader:
    """Field readers that report `source: field.path: problem`."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, problem: str) -> PinsError:
        where = f"{field}: " if field else ""
        return PinsError(f"{self.source}: {where}{problem}")

    def mapping(self, value: Any, field: str, keys: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"must be a mapping with {', '.join(sorted(keys))}")
        unknown = sorted(str(k) for k in value if k not in keys)
        if unknown:
            raise self.fail(field, f"unknown key(s) {', '.join(unknown)}")
        return value

    def _required(self, data: dict[str, Any], key: str, field: str) -> Any:
        if key not in data:
            raise self.fail(field, "is required")
        return data[key]

    def string(self, data: dict[str, Any], key: str, field: str) -> str:
        value = self._required(data, key, field)
        if not isinstance(value, str) or not value:
            raise self.fail(field, "must be a non-empty string")
        return value

    def https_url(self, data: dict[str, Any], field: str, key: str | None = None) -> str:
        value = self.string(data, key or field, field)
        if not value.startswith("https://") or any(c.isspace() for c in value):
            raise self.fail(field, f"must be an https:// URL, got {value!r}")
        return value

    def commit(self, data: dict[str, Any], field: str) -> str | None:
        value = self._required(data, "commit", field)
        if value is None:
            return None
        if not isinstance(value, str) or not _COMMIT.fullmatch(value):
            raise self.fail(
                field,
                f"must be a full 40-character lowercase hex commit SHA or null, got {value!r}",
            )
        return value

    def branch(self, data: dict[str, Any], field: str) -> str:
        value = self.string(data, "branch", field)
        if value.startswith(_NOT_BRANCHES) or not _BRANCH.fullmatch(value):
            raise self.fail(
                field,
                f"must name the branch the commit belongs to (e.g. release_v2), not a "
                f"pull-request or other ref; got {value!r}",
            )
        return value

    def health_agent(self, value: Any) -> HealthAgentPin:
        field = "health_monitoring_agent"
        data = self.mapping(value, field, {"values_key", "repository", "tag", "registry_accounts"})
        checks = {"values_key": _VALUES_KEY, "repository": _ECR_REPOSITORY, "tag": _IMAGE_TAG}
        text = {}
        for key, pattern in checks.items():
            text[key] = self.string(data, key, f"{field}.{key}")
            if not pattern.fullmatch(text[key]):
                raise self.fail(f"{field}.{key}", f"is not well formed: {text[key]!r}")
        accounts = self._required(data, "registry_accounts", f"{field}.registry_accounts")
        if not isinstance(accounts, dict) or not accounts:
            raise self.fail(f"{field}.registry_accounts", "must map regions to account IDs")
        for region, account in accounts.items():
            where = f"{field}.registry_accounts.{region}"
            if not isinstance(region, str) or not _REGION.fullmatch(region):
                raise self.fail(where, "is not an AWS region name")
            if not isinstance(account, str) or not _ACCOUNT.fullmatch(account):
                raise self.fail(where, f"must be a quoted 12-digit account ID, got {account!r}")
        return HealthAgentPin(
            values_key=text["values_key"],
            repository=text["repository"],
            tag=text["tag"],
            registry_accounts=dict(accounts),
        )

    def sha256(self, data: dict[str, Any], field: str) -> str | None:
        value = self._required(data, "sha256", field)
        if value is None:
            return None
        if not isinstance(value, str) or not _SHA256.fullmatch(value):
            raise self.fail(field, f"must be 64 lowercase hex characters or null, got {value!r}")
        return value

    def repo_path(self, data: dict[str, Any], field: str) -> str:
        key = field.rsplit(".", 1)[1]
        value = self.string(data, key, field)
        if not _REPO_PATH.fullmatch(value) or ".." in value.split("/"):
            raise self.fail(field, f"must be a relative path inside the repository, got {value!r}")
        return value

    def release(self, data: dict[str, Any], field: str) -> str:
        value = self.string(data, "release", field)
        if not _RELEASE.fullmatch(value):
            raise self.fail(
                field, f"must be a Helm release name (lowercase, digits, '-', <= 53), got {value!r}"
            )
        return value

    def namespace(self, data: dict[str, Any], field: str) -> str:
        value = self.string(data, "namespace", field)
        if value != NAMESPACE:
            raise self.fail(
                field,
                f"must be {NAMESPACE} (where HyperPod and its RIG script expect the releases)",
            )
        return value

    def timeout(self, data: dict[str, Any], field: str) -> str:
        value = self.string(data, "timeout", field)
        match = _DURATION.fullmatch(value)
        if match is None:
            raise self.fail(field, f"must be a Helm duration such as 15m or 600s, got {value!r}")
        minutes = int(match["value"]) / (60 if match["unit"] == "s" else 1)
        if minutes > MAX_HELM_TIMEOUT_MINUTES:
            raise self.fail(field, f"must be at most {MAX_HELM_TIMEOUT_MINUTES}m")
        return value

    def boolean(self, data: dict[str, Any], field: str) -> bool:
        value = self._required(data, field.rsplit(".", 1)[1], field)
        if not isinstance(value, bool):
            raise self.fail(field, "must be true or false")
        return value

    def tool(self, tools: dict[str, Any], name: str) -> ToolPin:
        field = f"tools.{name}"
        keys = {"version", "url", "sha256"} | ({"archive_member"} if name == "helm" else set())
        data = self.mapping(tools.get(name), field, keys)
        version = self.string(data, "version", f"{field}.version")
        if not _VERSION.fullmatch(version):
            raise self.fail(f"{field}.version", f"must look like v1.2.3, got {version!r}")
        url = self.https_url(data, f"{field}.url", key="url")
        if version not in url:
            raise self.fail(f"{field}.url", f"does not name version {version}; bump both together")
        member = None
        if name == "helm":
            member = self.string(data, "archive_member", f"{field}.archive_member")
            if not _REPO_PATH.fullmatch(member) or ".." in member.split("/"):
                raise self.fail(f"{field}.archive_member", "must be a relative path in the tarball")
        return ToolPin(
            name=name,
            version=version,
            url=url,
            sha256=self.sha256(data, f"{field}.sha256"),
            archive_member=member,
        )
