"""Pure decisions of the ClusterBootstrap custom resource: no AWS calls, no boto3.

Which build (if any) an event needs, what that build is told, and what a finished
build means. `index.py` performs the one CodeBuild call each decision asks for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

Action = Literal["install", "delete", "none"]
Verdict = Literal["running", "succeeded", "failed"]

PHYSICAL_ID_SUFFIX = "-hyperpod-dependencies"
RUNNING = frozenset({"IN_PROGRESS"})
SUCCEEDED = "SUCCEEDED"
FAILED = frozenset({"FAILED", "FAULT", "STOPPED", "TIMED_OUT"})
# The build variable that carries the Nova access objects' digest (buildspec.py).
KUBERNETES_DIGEST_VARIABLE = "NOVA_ACCESS_SHA256"


class BootstrapError(Exception):
    """A failure reported to CloudFormation; its message is one clear sentence."""


class PropertyError(BootstrapError, ValueError):
    """A missing or invalid resource property; the message names it."""


@dataclass(frozen=True)
class BootstrapProperties:
    """The custom resource's properties, as the construct renders them.

    `environment` holds every pin as the build's environment (the buildspec's values):
    each build gets the pins of the event's own properties, so an update, a rollback
    and the delete of an old resource each install or remove exactly what they declare.
    With Nova jobs it also holds the namespace and RBAC manifests, whose digest is
    `kubernetes_sha256` ("" without jobs: nothing to keep in the cluster).
    """

    project_name: str
    cluster_name: str
    pins_sha256: str
    script_sha256: str
    install_rig: bool
    environment: Mapping[str, str]
    kubernetes_sha256: str = ""

    @property
    def physical_id(self) -> str:
        return physical_id(self.cluster_name)

    def revision(self) -> tuple[str, str, str, bool, str]:
        """What an installed cluster depends on; a change of it needs a build."""
        return (
            self.cluster_name,
            self.pins_sha256,
            self.script_sha256,
            self.install_rig,
            self.kubernetes_sha256,
        )


def physical_id(cluster_name: str) -> str:
    """Stable per cluster: one set of HyperPod dependencies per EKS cluster."""
    return f"{cluster_name}{PHYSICAL_ID_SUFFIX}"


def parse_properties(raw: Mapping[str, Any]) -> BootstrapProperties:
    def text(key: str) -> str:
        value = raw.get(key)
        if not isinstance(value, str) or not value:
            raise PropertyError(f"resource property {key} must be a non-empty string")
        return value

    rig = raw.get("InstallRigDependencies")
    if rig not in ("true", "false"):
        raise PropertyError(
            f"resource property InstallRigDependencies must be 'true' or 'false', got {rig!r}"
        )
    environment = raw.get("BuildEnvironment")
    if (
        not isinstance(environment, Mapping)
        or not environment
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in environment.items())
    ):
        raise PropertyError("resource property BuildEnvironment must map names to strings")
    pins_sha256 = text("PinsSha256")
    if environment.get("PINS_SHA256") != pins_sha256:
        raise PropertyError("resource property BuildEnvironment does not carry PinsSha256")
    # Optional: resources rendered before the Nova access objects, or without jobs.
    kubernetes_sha256 = raw.get("KubernetesSha256", "")
    if not isinstance(kubernetes_sha256, str):
        raise PropertyError("resource property KubernetesSha256 must be a string")
    if environment.get(KUBERNETES_DIGEST_VARIABLE, "") != kubernetes_sha256:
        raise PropertyError(
            "resource property BuildEnvironment does not carry KubernetesSha256 "
            f"as {KUBERNETES_DIGEST_VARIABLE}"
        )
    return BootstrapProperties(
        project_name=text("ProjectName"),
        cluster_name=text("ClusterName"),
        pins_sha256=pins_sha256,
        script_sha256=text("ScriptSha256"),
        install_rig=rig == "true",
        environment=dict(environment),
        kubernetes_sha256=kubernetes_sha256,
    )


def decide(
    request_type: str,
    new: BootstrapProperties,
    old: BootstrapProperties | None,
    *,
    physical_resource_id: str | None = None,
) -> Action:
    """install on Create and on an Update that changes what is installed; delete only
    what this resource installed (a Create that failed before any build never got our
    physical ID, so its rollback Delete has nothing to remove)."""
    if request_type == "Create":
        return "install"
    if request_type == "Update":
        if old is None or old.revision() != new.revision():
            return "install"
        return "none"
    if request_type == "Delete":
        return "delete" if physical_resource_id == new.physical_id else "none"
    raise BootstrapError(f"unknown CloudFormation request type {request_type!r}")


def build_environment(action: Action, props: BootstrapProperties) -> list[dict[str, str]]:
    """environmentVariablesOverride of StartBuild: the event's pins, mode and cluster."""
    if action == "none":
        raise ValueError("no build for action 'none'")
    variables = {
        **props.environment,
        "BOOTSTRAP_MODE": action,
        "CLUSTER_NAME": props.cluster_name,
        "INSTALL_RIG": "true" if props.install_rig else "false",
    }
    return [{"name": k, "value": v, "type": "PLAINTEXT"} for k, v in sorted(variables.items())]


def idempotency_token(request_id: str) -> str:
    """One build per CloudFormation request, even if StartBuild is sent twice."""
    return f"novapod-{request_id}"[:64]


def verdict(build: Mapping[str, Any]) -> Verdict:
    status = build.get("buildStatus")
    if status == SUCCEEDED:
        return "succeeded"
    if status in FAILED:
        return "failed"
    return "running"


def log_link(build: Mapping[str, Any]) -> str | None:
    """Where a build's output is: its console link, else its log group and stream."""
    logs = build.get("logs") or {}
    if logs.get("deepLink"):
        return str(logs["deepLink"])
    if logs.get("groupName"):
        return f"log group {logs['groupName']}, stream {logs.get('streamName')}"
    return None


def progress(build: Mapping[str, Any]) -> dict[str, Any]:
    """What a poll reports: status, phase, elapsed seconds and where the log is."""
    report: dict[str, Any] = {
        "build_id": build.get("id"),
        "status": build.get("buildStatus", "UNKNOWN"),
        "phase": build.get("currentPhase", "unknown phase"),
        "log": log_link(build) or "not yet available",
    }
    start, end = build.get("startTime"), build.get("endTime")
    if isinstance(start, datetime):
        finished = end if isinstance(end, datetime) else datetime.now(start.tzinfo)
        report["elapsed_seconds"] = int((finished - start).total_seconds())
    return report


def failure_message(build: Mapping[str, Any], action: str) -> str:
    """One sentence: which build, how it ended, in which phase, and where its log is."""
    build_id = build.get("id", "unknown build")
    status = build.get("buildStatus", "UNKNOWN")
    phase = build.get("currentPhase", "unknown phase")
    reasons = [
        f"{p.get('phaseType')}: {c.get('message')}"
        for p in build.get("phases") or []
        if p.get("phaseStatus") in FAILED
        for c in p.get("contexts") or []
        if c.get("message")
    ]
    link = log_link(build) or "no log link in the build record"
    detail = f" ({'; '.join(reasons)})" if reasons else ""
    return (
        f"HyperPod dependencies {action} build {build_id} ended {status} in phase {phase}"
        f"{detail}; see its log: {link}"
    )
