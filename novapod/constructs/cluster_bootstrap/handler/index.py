"""Lambda entry points of the ClusterBootstrap custom resource (CDK `Provider` framework).

on_event decides (decisions.decide) and starts at most one CodeBuild build, with the
CloudFormation request ID as StartBuild's idempotency token so a retried event does
not start a second one; is_complete polls that build. A failed install fails the
deployment with the build ID and its log link; a failed uninstall on Delete is logged
and the delete goes on (the cluster is usually on its way out too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...handler_core import aws, errors, values
from . import decisions
from .decisions import BootstrapError

CONNECT_TIMEOUT_SECONDS: float = 10
READ_TIMEOUT_SECONDS: float = 30
MAX_ATTEMPTS = 5
# Top-level keys of on_event's result; the Provider passes them to every is_complete.
BUILD_ID = "BuildId"
ACTION = "Action"


def _client() -> Any:
    return aws.client(
        "codebuild", aws.Settings(MAX_ATTEMPTS, CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS)
    )


def _log(decision: str, **fields: Any) -> None:
    # One JSON line per decision in the function's log group, which the EKS stack
    # outputs (BootstrapStartLogGroup, BootstrapProgressLogGroup): where a cdk deploy
    # user sees what the long wait is doing.
    values.emit({"decision": decision, **fields}, sort_keys=True)


# --- on_event ---------------------------------------------------------------------------


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request_type = event["RequestType"]
    try:
        props = decisions.parse_properties(event["ResourceProperties"])
    except decisions.PropertyError as exc:
        if request_type != "Delete":
            raise
        # Never block a stack's deletion: there is nothing we could uninstall with.
        _log("uninstall-not-started", error=str(exc))
        return {"PhysicalResourceId": event["PhysicalResourceId"], "Data": {BUILD_ID: ""}}
    old = None
    if request_type == "Update":
        old = decisions.parse_properties(event["OldResourceProperties"])
    action = decisions.decide(
        request_type, props, old, physical_resource_id=event.get("PhysicalResourceId")
    )
    # Delete must answer with the ID CloudFormation knows, whatever it is.
    physical_id = event["PhysicalResourceId"] if request_type == "Delete" else props.physical_id
    _log("start", request_type=request_type, action=action, physical_id=physical_id)
    if action == "none":
        _log("no-build", reason="nothing this resource installs has changed")
        return {"PhysicalResourceId": physical_id, "Data": {BUILD_ID: ""}}
    try:
        build_id = _start_build(event, props, action)
    except BootstrapError as exc:
        if action == "delete":
            _log("uninstall-not-started", error=str(exc), cluster=props.cluster_name)
            return {"PhysicalResourceId": physical_id, "Data": {BUILD_ID: ""}}
        raise
    return {
        "PhysicalResourceId": physical_id,
        "Data": {BUILD_ID: build_id},
        BUILD_ID: build_id,
        ACTION: action,
    }


def _start_build(
    event: Mapping[str, Any], props: decisions.BootstrapProperties, action: decisions.Action
) -> str:
    try:
        response = _client().start_build(
            projectName=props.project_name,
            environmentVariablesOverride=decisions.build_environment(action, props),
            idempotencyToken=decisions.idempotency_token(event["RequestId"]),
        )
    except aws.ERRORS as exc:
        raise BootstrapError(
            f"could not start the HyperPod dependencies {action} build in CodeBuild project "
            f"{props.project_name} ({errors.error_detail(exc)})"
        ) from exc
    build = response["build"]
    build_id = str(build["id"])
    _log(
        "build-started",
        action=action,
        build_id=build_id,
        cluster=props.cluster_name,
        project=props.project_name,
        log=decisions.log_link(build) or "in the project's log group once the build starts",
    )
    return build_id


# --- is_complete ------------------------------------------------------------------------


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    build_id = event.get(BUILD_ID)
    if not build_id:
        return {"IsComplete": True}
    action = str(event.get(ACTION, "install"))
    try:
        builds = _client().batch_get_builds(ids=[build_id]).get("builds") or []
    except aws.ERRORS as exc:
        raise BootstrapError(
            f"could not read HyperPod dependencies build {build_id} ({errors.error_detail(exc)})"
        ) from exc
    if not builds:
        message = f"CodeBuild has no record of HyperPod dependencies build {build_id}"
        if action == "delete":
            _log("uninstall-unknown", build_id=build_id, error=message)
            return {"IsComplete": True}
        raise BootstrapError(message)
    build = builds[0]
    verdict = decisions.verdict(build)
    if verdict == "running":
        _log("wait", action=action, **decisions.progress(build))
        return {"IsComplete": False}
    if verdict == "succeeded":
        _log("build-succeeded", action=action, **decisions.progress(build))
        return {"IsComplete": True}
    message = decisions.failure_message(build, action)
    if action == "delete":
        # Best effort: the uninstall report is in the build log; the delete goes on.
        _log("uninstall-failed", build_id=build_id, error=message)
        return {"IsComplete": True}
    raise BootstrapError(message)
