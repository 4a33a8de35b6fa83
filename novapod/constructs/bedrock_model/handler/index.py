"""Lambda entry points of the BedrockModel custom resource (CDK `Provider` framework).

Imports a finished Nova job's checkpoint into Amazon Bedrock (CreateCustomModel) and
optionally deploys it for on-demand inference (CreateCustomModelDeployment);
CloudFormation has no resource for either. An import takes long and must happen once:
on_event reads the job's newest manifest for the checkpoint, derives the model's name
and client token from it, looks the name up first and adopts a model it imported
before (by its source tag), and only then calls CreateCustomModel, whose token makes
botocore's own retries and repeated events harmless. is_complete waits for Active, then
creates or adopts the deployment and waits for it; past WaitTimeoutSeconds it fails
with a sentence, and the next deploy adopts the model and resumes waiting. Decisions
live in `decisions.py`; every step is logged as one JSON line.

See https://docs.aws.amazon.com/bedrock/latest/userguide/create-custom-model-sdks.html
(create, then poll GetCustomModel until Active) and
https://docs.aws.amazon.com/bedrock/latest/userguide/deploy-custom-model-on-demand.html
(a deployment's ARN is the modelId of on-demand inference).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import boto3  # type: ignore[import-untyped]
from botocore.config import Config  # type: ignore[import-untyped]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

from . import decisions, manifest
from .decisions import BedrockModelError, ModelProperties

CONNECT_TIMEOUT_SECONDS: float = 5
READ_TIMEOUT_SECONDS: float = 20
MAX_ATTEMPTS = 3
# Top-level key of on_event's result; the Provider passes it to every is_complete.
WAIT_STARTED_AT = "WaitStartedAt"
NOT_FOUND = "ResourceNotFoundException"

T = TypeVar("T")


class ReadError(BedrockModelError):
    """A Get* call failed after botocore's retries; `detail` names the error."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def _now() -> datetime:
    """The clock (tests replace it)."""
    return datetime.now(UTC)


def _client(service: str) -> Any:
    # Every Bedrock write here carries a client token, so botocore may resend it.
    config = Config(
        retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
    )
    return boto3.client(service, config=config)


def _log(step: str, message: str, **fields: Any) -> None:
    """One JSON line per step: Lambda sends stdout to the function's log group."""
    record = {"step": step, "message": message, **dict(sorted(fields.items()))}
    print(json.dumps(record, default=str))


def _error_code(exc: BaseException) -> str | None:
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def _error_detail(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        message = exc.response.get("Error", {}).get("Message") or "no message"
        return f"{_error_code(exc) or 'error'}: {message}"
    return f"{type(exc).__name__}: {exc}"


def _aws(action: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except (ClientError, BotoCoreError) as exc:
        raise BedrockModelError(f"{action} failed ({_error_detail(exc)})") from exc


def _get(action: str, call: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """A Get* answer, or None when the resource does not exist."""
    try:
        return dict(call())
    except (ClientError, BotoCoreError) as exc:
        if _error_code(exc) == NOT_FOUND:
            return None
        detail = _error_detail(exc)
        raise ReadError(f"{action} failed ({detail})", detail) from exc


def _get_model(bedrock: Any, identifier: str) -> dict[str, Any] | None:
    """GetCustomModel by name or ARN (its modelIdentifier takes either)."""
    return _get(
        f"GetCustomModel {identifier}",
        lambda: bedrock.get_custom_model(modelIdentifier=identifier),
    )


def _get_deployment(bedrock: Any, identifier: str) -> dict[str, Any] | None:
    return _get(
        f"GetCustomModelDeployment {identifier}",
        lambda: bedrock.get_custom_model_deployment(customModelDeploymentIdentifier=identifier),
    )


def _model_tags(bedrock: Any, arn: str) -> dict[str, str]:
    answer = _aws(
        f"ListTagsForResource {arn}", lambda: bedrock.list_tags_for_resource(resourceARN=arn)
    )
    return decisions.tag_map(answer.get("tags", []))


# --- on_event ---------------------------------------------------------------------------


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request_type = event["RequestType"]
    if request_type == "Delete":
        return _delete(event)
    props = decisions.parse_properties(event["ResourceProperties"])
    checkpoint = _checkpoint(props)
    name = decisions.model_name(props, checkpoint)
    _log(
        "start",
        f"{request_type} of Bedrock model {name} from {checkpoint}",
        request_type=request_type,
        model_name=name,
        checkpoint=checkpoint,
        deployment=props.deployment,
    )
    bedrock = _client("bedrock")
    model = _get_model(bedrock, name)
    if model is not None:
        arn = _adopt(bedrock, model, checkpoint)
    else:
        arn = _create(bedrock, props, name, checkpoint)
    if request_type == "Update" and arn != event.get("PhysicalResourceId"):
        _log(
            "replace",
            f"Bedrock model {name} replaces {event.get('PhysicalResourceId')}; CloudFormation "
            "deletes the old one unless RetainOnDelete keeps it",
            model_arn=arn,
        )
    return {
        "PhysicalResourceId": arn,
        "Data": {"ModelArn": arn, "ModelName": name, "CheckpointUri": checkpoint},
        WAIT_STARTED_AT: decisions.iso(_now()),
    }


def _checkpoint(props: ModelProperties) -> str:
    s3 = _client("s3")
    found = _aws(
        f"listing {props.output_prefix}", lambda: manifest.newest_manifest(s3, props.output_prefix)
    )
    if found is None:
        raise BedrockModelError(decisions.no_manifest_message(props))
    reading = _aws(f"reading {found.uri}", lambda: manifest.read_manifest(s3, found))
    if not reading.has_manifest:
        raise BedrockModelError(decisions.no_manifest_in_archive_message(props, reading.where))
    if reading.checkpoint is None:
        raise BedrockModelError(decisions.no_checkpoint_message(props, reading.where))
    _log(
        "manifest",
        f"run {found.run}'s manifest {reading.where} names checkpoint {reading.checkpoint}",
        run=found.run,
        manifest=reading.where,
        checkpoint=reading.checkpoint,
    )
    return reading.checkpoint


def _adopt(bedrock: Any, model: Mapping[str, Any], checkpoint: str) -> str:
    arn = str(model["modelArn"])
    problem = decisions.adoption_problem(model, _model_tags(bedrock, arn), checkpoint)
    if problem is not None:
        _log("refuse", problem, model_arn=arn)
        raise BedrockModelError(problem)
    _log(
        "adopt",
        f"Bedrock model {model['modelName']} exists ({model.get('modelStatus')}) and was "
        f"imported from {checkpoint}; adopting it, nothing is imported again",
        model_arn=arn,
        status=model.get("modelStatus"),
    )
    return arn


def _create(bedrock: Any, props: ModelProperties, name: str, checkpoint: str) -> str:
    kwargs = decisions.create_model_kwargs(props, name, checkpoint)
    _log(
        "create",
        f"calling CreateCustomModel for Bedrock model {name} from {checkpoint}",
        model_name=name,
        client_request_token=kwargs["clientRequestToken"],
    )
    try:
        arn = str(bedrock.create_custom_model(**kwargs)["modelArn"])
    except (ClientError, BotoCoreError) as exc:
        detail = _error_detail(exc)
        _log("create-failed", f"CreateCustomModel for {name} failed ({detail})", model_name=name)
        # The request may have been worked (a lost answer), or a rival took the name:
        # the model of this name decides.
        model = _get_model(bedrock, name)
        if model is None:
            raise BedrockModelError(decisions.create_failed_message(name, detail)) from exc
        return _adopt(bedrock, model, checkpoint)
    _log("created", f"Bedrock is importing model {name} ({arn})", model_arn=arn)
    return arn


def _delete(event: Mapping[str, Any]) -> dict[str, Any]:
    arn = str(event.get("PhysicalResourceId", ""))
    raw = event.get("ResourceProperties", {})
    if not decisions.is_model_arn(arn):
        _log("delete", f"{arn} is not a Bedrock model ARN; nothing to delete", model_arn=arn)
        return {"PhysicalResourceId": arn}
    if decisions.retain_on_delete(raw):
        _log(
            "retain",
            f"keeping Bedrock model {arn} and its deployment (RetainOnDelete is true)",
            model_arn=arn,
        )
        return {"PhysicalResourceId": arn}
    bedrock = _client("bedrock")
    model = _get_model(bedrock, arn)
    if model is None:
        _log("delete", f"Bedrock model {arn} does not exist; nothing to delete", model_arn=arn)
        return {"PhysicalResourceId": arn}
    if model.get("modelStatus") == "Creating":
        # The rollback of a Create that timed out sends this Delete: the import goes on,
        # and the next deploy adopts it instead of importing again.
        _log(
            "retain",
            f"keeping Bedrock model {model['modelName']} ({arn}): its import is still "
            "Creating, and the next deploy adopts it; delete it by hand "
            f"(aws bedrock delete-custom-model --model-identifier {arn}) if none will",
            model_arn=arn,
        )
        return {"PhysicalResourceId": arn}
    base = raw.get("DeploymentName") or raw.get("ModelName") or ""
    if base:
        _delete_deployment(bedrock, f"{base}-{str(model['modelName']).rsplit('-', 1)[-1]}", arn)
    _tolerate_not_found(
        f"DeleteCustomModel {arn}", lambda: bedrock.delete_custom_model(modelIdentifier=arn)
    )
    _log("deleted", f"deleted Bedrock model {model['modelName']} ({arn})", model_arn=arn)
    return {"PhysicalResourceId": arn}


def _delete_deployment(bedrock: Any, name: str, model_arn: str) -> None:
    deployment = _get_deployment(bedrock, name)
    if deployment is None or deployment.get("modelArn") != model_arn:
        return
    _tolerate_not_found(
        f"DeleteCustomModelDeployment {name}",
        lambda: bedrock.delete_custom_model_deployment(customModelDeploymentIdentifier=name),
    )
    _log("deleted", f"deleted custom model deployment {name}", deployment_name=name)


def _tolerate_not_found(action: str, call: Callable[[], Any]) -> None:
    try:
        call()
    except (ClientError, BotoCoreError) as exc:
        if _error_code(exc) != NOT_FOUND:
            raise BedrockModelError(f"{action} failed ({_error_detail(exc)})") from exc


# --- is_complete ------------------------------------------------------------------------


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = decisions.parse_properties(event["ResourceProperties"])
    arn = str(event["PhysicalResourceId"])
    data = dict(event.get("Data") or {})
    name, checkpoint = str(data.get("ModelName", "")), str(data.get("CheckpointUri", ""))
    since = decisions.as_utc(event.get(WAIT_STARTED_AT)) or _now()
    late = decisions.timed_out(since, _now(), props.wait_timeout_seconds)
    bedrock = _client("bedrock")
    try:
        model = _get_model(bedrock, arn)
    except ReadError as failed:
        if late:
            raise BedrockModelError(
                decisions.import_timeout_message(name, arn, last_error=failed.detail)
            ) from failed
        _log("poll", f"could not read Bedrock model {name} ({failed.detail})", model_arn=arn)
        return {"IsComplete": False}
    if model is None:
        raise BedrockModelError(f"Bedrock model {name} ({arn}) no longer exists")
    verdict = decisions.model_verdict(model)
    _log(
        "poll",
        f"Bedrock model {name} is {model.get('modelStatus')}",
        model_arn=arn,
        status=model.get("modelStatus"),
        since=decisions.iso(since),
    )
    if verdict == "pending":
        if late:
            raise BedrockModelError(decisions.import_timeout_message(name, arn))
        return {"IsComplete": False}
    result = decisions.result_data(
        model_arn=arn, bedrock_model_name=name, checkpoint=checkpoint, status="Active"
    )
    if props.deployment == "none":
        _log("ready", f"Bedrock model {name} is Active", **result)
        return {"IsComplete": True, "Data": result}
    deployment_arn = _deploy(bedrock, props, name, arn, late)
    if deployment_arn is None:
        return {"IsComplete": False}
    result["DeploymentArn"] = deployment_arn
    _log("ready", f"Bedrock model {name} and its deployment are Active", **result)
    return {"IsComplete": True, "Data": result}


def _deploy(
    bedrock: Any, props: ModelProperties, model_name: str, model_arn: str, late: bool
) -> str | None:
    """The deployment's ARN once Active; None while it is being created."""
    name = decisions.deployment_name(props, model_name)
    try:
        deployment = _get_deployment(bedrock, name)
    except ReadError as failed:
        if late:
            raise BedrockModelError(
                decisions.deployment_timeout_message(name, last_error=failed.detail)
            ) from failed
        return None
    if deployment is None:
        kwargs = decisions.create_deployment_kwargs(props, name, model_arn)
        _log(
            "deploy",
            f"calling CreateCustomModelDeployment {name} for {model_arn}",
            deployment_name=name,
            client_request_token=kwargs["clientRequestToken"],
        )
        created = _aws(
            f"CreateCustomModelDeployment {name}",
            lambda: bedrock.create_custom_model_deployment(**kwargs),
        )
        _log(
            "deploying",
            f"creating custom model deployment {name}",
            deployment_arn=created["customModelDeploymentArn"],
        )
        if late:
            raise BedrockModelError(decisions.deployment_timeout_message(name))
        return None
    verdict = decisions.deployment_verdict(deployment, model_arn)
    _log(
        "poll",
        f"custom model deployment {name} is {deployment.get('status')}",
        deployment_arn=deployment.get("customModelDeploymentArn"),
        status=deployment.get("status"),
    )
    if verdict == "ready":
        return str(deployment["customModelDeploymentArn"])
    if late:
        raise BedrockModelError(decisions.deployment_timeout_message(name))
    return None
