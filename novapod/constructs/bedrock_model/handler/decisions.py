"""Pure decisions of the BedrockModel custom resource: no AWS calls, no boto3.

Resource properties (CloudFormation passes scalars as strings):

- `ModelName`: the base of the Bedrock model's name (at most 54 characters of
  `([0-9a-zA-Z][_-]?)+`, not ending in - or _). The model is named
  `<ModelName>-<8 hex of sha256(checkpoint URI)>`: Bedrock custom models are immutable
  and their names unique, so each checkpoint is its own model (see `model_name`).
- `OutputPrefix`: `s3://<bucket>/nova/<env>/<job>/`, the job's output prefix; the
  newest run's manifest under it names the checkpoint.
- `RoleArn`: the import role Bedrock assumes to read the checkpoint.
- `KmsKeyArn` (optional): the customer managed key that encrypts the model.
- `Deployment`: `on-demand` (a custom model deployment once the model is Active) or
  `none` (default).
- `DeploymentName` (optional, default ModelName): the base of the deployment's name,
  suffixed like the model's.
- `Tags` (optional): a list of {Key, Value}, put on the model and the deployment.
- `RetainOnDelete`: `true` (default) keeps the model and deployment when the resource
  is deleted or replaced; `false` deletes them.
- `WaitTimeoutSeconds` (optional, default 3000): how long is_complete waits for Active
  before failing with a sentence saying a later deploy resumes waiting; the Provider's
  total timeout (at most 1 h) must be longer.
- `LedgerTable`, `Environment`: the purchase ledger (handler_core/ledger.py) and the
  environment whose items the import and the deployment are claimed in; without them
  (a resource from before the ledger) an existing model is only adopted, nothing is
  imported or deployed, and a Delete still deletes.
- `Refresh` (optional, ignored by the handler): the config's `refresh`. CloudFormation
  sends an Update only when a property changed
  (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requesttypes-update.html),
  so a new value is how a deploy with nothing else changed reads the job's newest
  checkpoint again: the first import after waiting, or a newer run's. A lower value on a
  waiting resource (CloudFormation rolling back a failed import) reads nothing.

Attributes (`Data`, all strings): ModelArn, ModelName (the Bedrock name), CheckpointUri,
DeploymentArn ("" without a deployment), Status ("Active").
The physical ID is the model's ARN.

A job with no finished run yet (no manifest under OutputPrefix) is not a failure: the
resource succeeds as `WaitingForCheckpoint` (`waiting_id` as its physical ID, the
placeholder `waiting_value` as ModelArn and, with a deployment, DeploymentArn; nothing
imported, nothing to delete), so the first deploy of a config that names a job not run
yet does not roll its stack back. The Update that finds a checkpoint imports it and the
model's ARN replaces the placeholder ID.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from ...handler_core import values

Deployment = Literal["on-demand", "none"]
Verdict = Literal["ready", "pending"]

# The Status of a model whose job has no finished run yet, and its physical ID's prefix.
WAITING = "WaitingForCheckpoint"
WAITING_ID_PREFIX = "novapod:waiting-for-checkpoint:"

DEFAULT_WAIT_TIMEOUT_SECONDS = 3000
# The Provider's total timeout is at most one hour (CDK custom_resources.Provider,
# totalTimeout), and the handler must give up, with its sentence, before it does.
MAX_WAIT_TIMEOUT_SECONDS = 3300
SUFFIX_LENGTH = 8
# Bounds from the botocore bedrock model (CreateCustomModel, CreateCustomModelDeployment):
# modelName / modelDeploymentName `([0-9a-zA-Z][_-]?){1,63}`, clientRequestToken
# `[a-zA-Z0-9]([-a-zA-Z0-9]{0,254}[a-zA-Z0-9])?`, roleArn, modelKmsKeyArn, Tag key 1-128 and
# value 0-256 of `[a-zA-Z0-9\s._:/=+@-]*`, at most 200 tags.
_NAME = re.compile(r"([0-9a-zA-Z][_-]?){1,63}")
_MAX_NAME = 63
_MAX_BASE_NAME = _MAX_NAME - 1 - SUFFIX_LENGTH
_ROLE_ARN = re.compile(r"arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+")
_KMS_KEY_ARN = re.compile(r"arn:aws(-[^:]+)?:kms:[a-zA-Z0-9-]*:[0-9]{12}:key/[a-zA-Z0-9-]{36}")
_TAG_TEXT = re.compile(r"[a-zA-Z0-9\s._:/=+@-]*")
_MAX_TAGS = 200
_BUCKET = re.compile(r"[a-z0-9][-.a-z0-9]{1,61}[a-z0-9]")
# Our own tags on the model: the checkpoint it was imported from. GetCustomModel does not
# return the model's source, so its tags are how an existing model of our name is known
# to be ours.
SOURCE_DIGEST_TAG = "novapod:checkpoint-sha256"
SOURCE_URI_TAG = "novapod:checkpoint"
_OWN_TAGS = (SOURCE_DIGEST_TAG, SOURCE_URI_TAG)
_MODEL_ARN = re.compile(r"arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:custom-model/.+")


class BedrockModelError(Exception):
    """A failure reported to CloudFormation; its message is one clear sentence."""


class PropertyError(BedrockModelError, ValueError):
    """A resource property that is missing or invalid; the message names it."""


# CloudFormation's properties (scalars as strings), each refused with a PropertyError.
_required_str = partial(values.required_str, error=PropertyError)
_optional_str = partial(values.optional_str, error=PropertyError)


@dataclass(frozen=True)
class ModelProperties:
    """The resource properties of one BedrockModel, parsed and validated."""

    model_name: str
    output_prefix: str
    role_arn: str
    kms_key_arn: str | None
    deployment: Deployment
    deployment_name: str
    tags: tuple[tuple[str, str], ...]
    retain_on_delete: bool
    wait_timeout_seconds: int
    # The purchase ledger (handler_core/ledger.py): its table and this environment.
    ledger_table: str | None = None
    environment: str | None = None


# --- properties -------------------------------------------------------------------------


def parse_properties(raw: Mapping[str, Any]) -> ModelProperties:
    model_name = _base_name(raw, "ModelName", _required_str(raw, "ModelName"))
    output_prefix = _required_str(raw, "OutputPrefix")
    bucket, _, prefix = output_prefix.removeprefix("s3://").partition("/")
    if (
        not output_prefix.startswith("s3://")
        or not _BUCKET.fullmatch(bucket)
        or not prefix.endswith("/")
    ):
        raise PropertyError(
            f"OutputPrefix {output_prefix!r} must be an s3://bucket/prefix/ URI ending in /"
        )
    role_arn = _required_str(raw, "RoleArn")
    if len(role_arn) > 2048 or not _ROLE_ARN.fullmatch(role_arn):
        raise PropertyError(f"RoleArn {role_arn!r} must be an IAM role ARN")
    kms_key_arn = _optional_str(raw, "KmsKeyArn")
    if kms_key_arn is not None and not _KMS_KEY_ARN.fullmatch(kms_key_arn):
        raise PropertyError(f"KmsKeyArn {kms_key_arn!r} must be a KMS key ARN")
    deployment = raw.get("Deployment") or "none"
    if deployment not in ("on-demand", "none"):
        raise PropertyError(f"Deployment must be on-demand or none, not {deployment!r}")
    deployment_name = _optional_str(raw, "DeploymentName")
    return ModelProperties(
        model_name=model_name,
        output_prefix=output_prefix,
        role_arn=role_arn,
        kms_key_arn=kms_key_arn,
        deployment="on-demand" if deployment == "on-demand" else "none",
        deployment_name=(
            _base_name(raw, "DeploymentName", deployment_name) if deployment_name else model_name
        ),
        tags=_tags(raw),
        retain_on_delete=retain_on_delete(raw),
        wait_timeout_seconds=_wait_timeout(raw),
        ledger_table=_optional_str(raw, "LedgerTable"),
        environment=_optional_str(raw, "Environment"),
    )


def ledger_of(raw: Mapping[str, Any]) -> tuple[str, str] | None:
    """LedgerTable and Environment of a Delete's properties, leniently (a Delete must
    not fail on a property)."""
    table, environment = raw.get("LedgerTable"), raw.get("Environment")
    if isinstance(table, str) and table and isinstance(environment, str) and environment:
        return table, environment
    return None


def retain_on_delete(raw: Mapping[str, Any]) -> bool:
    """RetainOnDelete: true unless it says false (a Delete must not fail on a typo, and
    keeping is the safe side)."""
    value = raw.get("RetainOnDelete", "true")
    return not (value is False or str(value).strip().lower() == "false")


def _base_name(raw: Mapping[str, Any], key: str, name: str) -> str:
    # The suffix "-<8 hex>" must keep the full name within the pattern and 63 characters.
    if len(name) > _MAX_BASE_NAME or not _NAME.fullmatch(name) or name.endswith(("-", "_")):
        raise PropertyError(
            f"{key} {name!r} must be 1-{_MAX_BASE_NAME} letters and digits, single - or _ "
            "between them (novapod appends -<8 hex of the checkpoint>)"
        )
    return name


def _tags(raw: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    if not values.present(raw, "Tags"):
        return ()
    value = values.json_value(raw, "Tags", PropertyError)
    limit = _MAX_TAGS - len(_OWN_TAGS)
    if not isinstance(value, list) or len(value) > limit:
        raise PropertyError(f"Tags must be a list of at most {limit} Key/Value objects")
    tags: list[tuple[str, str]] = []
    for tag in value:
        key = tag.get("Key") if isinstance(tag, dict) else None
        text = tag.get("Value") if isinstance(tag, dict) else None
        if (
            not isinstance(key, str)
            or not isinstance(text, str)
            or not 1 <= len(key) <= 128
            or len(text) > 256
            or not _TAG_TEXT.fullmatch(key)
            or not _TAG_TEXT.fullmatch(text)
            or key in _OWN_TAGS
        ):
            raise PropertyError(
                "Tags entries must be {Key, Value} of letters, digits, spaces and ._:/=+@- "
                f"(keys 1-128, values up to 256 characters, not {', '.join(_OWN_TAGS)})"
            )
        tags.append((key, text))
    return tuple(tags)


def _wait_timeout(raw: Mapping[str, Any]) -> int:
    seconds = values.whole_number(
        raw, "WaitTimeoutSeconds", 60, MAX_WAIT_TIMEOUT_SECONDS, PropertyError, required=False
    )
    return DEFAULT_WAIT_TIMEOUT_SECONDS if seconds is None else seconds


# --- names and tokens -------------------------------------------------------------------


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def model_name(props: ModelProperties, checkpoint: str) -> str:
    """`<ModelName>-<8 hex of the checkpoint>`.

    A custom model cannot be changed, and a name is taken while its model exists. When
    the job ran again, an Update finds a newer checkpoint: it imports a new model under
    a new name (a new physical ID), and CloudFormation then deletes the old model
    unless RetainOnDelete keeps it. The same checkpoint gives the same name, so a
    repeated event finds the model it imported.
    """
    return f"{props.model_name}-{digest(checkpoint)[:SUFFIX_LENGTH]}"


def deployment_name(props: ModelProperties, bedrock_model_name: str) -> str:
    """`<DeploymentName>-<the model name's suffix>`: one deployment per model, so the new
    model's deployment does not collide with the old one's before CloudFormation
    deletes it."""
    return f"{props.deployment_name}-{bedrock_model_name.rsplit('-', 1)[-1]}"


def _generation_suffix(generation: int) -> str:
    return f"\ngeneration {generation}" if generation else ""


def model_token(bedrock_model_name: str, checkpoint: str, generation: int = 0) -> str:
    """The clientRequestToken of CreateCustomModel: the same model, checkpoint and
    generation always send the same token, so a resent or repeated request imports once
    ("If this token matches a previous request, Amazon Bedrock ignores the request, but
    does not return an error", https://docs.aws.amazon.com/bedrock/latest/APIReference/
    API_CreateCustomModel.html). Bedrock ignores a seen token even once its model is
    deleted, so an import made again after a delete (or a Failed or refused import) is a
    new generation (its ledger item's `Generation`); generation 0 is the token novapod
    sent before the ledger, so existing imports keep theirs."""
    text = f"model\n{bedrock_model_name}\n{checkpoint}{_generation_suffix(generation)}"
    return "novapod-" + digest(text)


def deployment_token(name: str, model_arn: str, generation: int = 0) -> str:
    """CreateCustomModelDeployment's token, by the same rule (the model's ARN already
    differs for each import)."""
    return "novapod-" + digest(f"deployment\n{name}\n{model_arn}{_generation_suffix(generation)}")


def own_tags(checkpoint: str) -> list[dict[str, str]]:
    """The source tags (the URI only when it fits a tag value)."""
    tags = [{"key": SOURCE_DIGEST_TAG, "value": digest(checkpoint)}]
    if len(checkpoint) <= 256 and _TAG_TEXT.fullmatch(checkpoint):
        tags.append({"key": SOURCE_URI_TAG, "value": checkpoint})
    return tags


def create_model_kwargs(
    props: ModelProperties, bedrock_model_name: str, checkpoint: str, generation: int = 0
) -> dict[str, Any]:
    """CreateCustomModel's arguments (see create-custom-model-sdks.html in the Bedrock
    user guide: modelName, modelSourceConfig.s3DataSource.s3Uri, roleArn, optional
    modelKmsKeyArn, modelTags, clientRequestToken)."""
    kwargs: dict[str, Any] = {
        "modelName": bedrock_model_name,
        "modelSourceConfig": {"s3DataSource": {"s3Uri": checkpoint}},
        "roleArn": props.role_arn,
        "modelTags": [{"key": k, "value": v} for k, v in props.tags] + own_tags(checkpoint),
        "clientRequestToken": model_token(bedrock_model_name, checkpoint, generation),
    }
    if props.kms_key_arn is not None:
        kwargs["modelKmsKeyArn"] = props.kms_key_arn
    return kwargs


def create_deployment_kwargs(
    props: ModelProperties, name: str, model_arn: str, generation: int = 0
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "modelDeploymentName": name,
        "modelArn": model_arn,
        "clientRequestToken": deployment_token(name, model_arn, generation),
    }
    if props.tags:
        kwargs["tags"] = [{"key": k, "value": v} for k, v in props.tags]
    return kwargs


def is_model_arn(value: str) -> bool:
    return bool(_MODEL_ARN.fullmatch(value))


# --- the checkpoint ---------------------------------------------------------------------


def job_of(props: ModelProperties) -> str:
    """The job's name: the last folder of its output prefix."""
    return props.output_prefix.rstrip("/").rsplit("/", 1)[-1]


def waiting_id(props: ModelProperties) -> str:
    """The physical ID while the job has no finished run: the same for every event of the
    resource (its base name and the job's output prefix), so an Update that still finds
    no run is no replacement, and never a model ARN, so a Delete deletes nothing."""
    return f"{WAITING_ID_PREFIX}{props.model_name}:{props.output_prefix}"


def is_waiting_id(value: str) -> bool:
    return value.startswith(WAITING_ID_PREFIX)


def waiting_value(props: ModelProperties) -> str:
    """What ModelArn (and DeploymentArn) say while waiting: the stack's outputs show it."""
    return (
        f"none yet: waiting for a checkpoint of job {job_of(props)}; after a run finishes, "
        "change refresh in its nova.bedrock_models entry and deploy"
    )


def waiting_message(props: ModelProperties) -> str:
    return (
        f"job {job_of(props)} has no finished run yet (no manifest.json under "
        f"{props.output_prefix}), so Bedrock model {props.model_name} is waiting for a "
        "checkpoint and nothing was imported; after a run finishes, set refresh in its "
        "nova.bedrock_models entry to a new number and deploy again to import it"
    )


def waiting_data(props: ModelProperties) -> dict[str, str]:
    placeholder = waiting_value(props)
    return result_data(
        model_arn=placeholder,
        bedrock_model_name="",
        checkpoint="",
        deployment_arn=placeholder if props.deployment == "on-demand" else "",
        status=WAITING,
    )


def refresh_of(raw: Mapping[str, Any] | None) -> int:
    """The `Refresh` property as a number (absent, or not a whole number: 0)."""
    value = (raw or {}).get("Refresh")
    try:
        return int(str(value)) if value not in (None, "") else 0
    except ValueError:
        return 0


def refresh_lowered(event: Mapping[str, Any]) -> bool:
    """An Update whose Refresh went down: what CloudFormation sends when it rolls back a
    failed Update (the old properties, the failed ones as OldResourceProperties), or an
    edit back to a number already used. Neither asks for a new look at the job."""
    return refresh_of(event.get("ResourceProperties")) < refresh_of(
        event.get("OldResourceProperties")
    )


def still_waiting_message(props: ModelProperties, event: Mapping[str, Any]) -> str:
    return (
        f"Refresh went down from {refresh_of(event.get('OldResourceProperties'))} to "
        f"{refresh_of(event.get('ResourceProperties'))} (CloudFormation rolling back a "
        f"failed import, or an edit), so Bedrock model {props.model_name} stays waiting for "
        "a checkpoint and nothing was read or imported; set refresh to a number above "
        "every one used before to import"
    )


def no_manifest_after_import_message(props: ModelProperties, model_arn: str) -> str:
    """An Update of an imported model finds no run: the model is kept, nothing changes."""
    return (
        f"job {job_of(props)} has no finished run (no manifest.json under "
        f"{props.output_prefix}), though Bedrock model {props.model_name} was imported "
        f"from it ({model_arn}, kept as it is); restore the job's outputs or run it again, "
        "then deploy"
    )


def no_manifest_in_archive_message(props: ModelProperties, where: str) -> str:
    return (
        f"job {job_of(props)}'s newest run wrote {where} without a manifest.json at its "
        f"root, so Bedrock model {props.model_name} has no checkpoint to import; run the "
        "job again"
    )


def no_checkpoint_message(props: ModelProperties, where: str) -> str:
    return (
        f"job {job_of(props)}'s manifest {where} names no s3:// checkpoint_s3_bucket, so "
        f"Bedrock model {props.model_name} has no checkpoint to import; run the job again"
    )


# --- adopting, waiting ------------------------------------------------------------------


def tag_map(tags: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {str(t.get("key")): str(t.get("value")) for t in tags}


def adoption_problem(
    model: Mapping[str, Any], tags: Mapping[str, str], checkpoint: str, *, ours: bool = False
) -> str | None:
    """Why an existing model of our name cannot be adopted (None when it can).

    `ours`: the purchase ledger shows this stack's import may have made the model (see
    claims.ours_by_ledger), so missing source tags are tags not visible yet."""
    name = model.get("modelName", "?")
    source = tags.get(SOURCE_DIGEST_TAG)
    waiting_for_tags = source is None and ours
    if source != digest(checkpoint) and not waiting_for_tags:
        origin = (
            f"from another checkpoint ({tags.get(SOURCE_URI_TAG) or 'sha256 ' + source})"
            if source
            else "by someone else (it has no novapod:checkpoint-sha256 tag)"
        )
        return (
            f"Bedrock model {name} exists but was imported {origin}, not from {checkpoint}; "
            "delete that model or choose another ModelName (bedrock_models[].name)"
        )
    if model.get("modelStatus") == "Failed":
        return failed_model_message(model)
    return None


def failed_model_message(model: Mapping[str, Any]) -> str:
    name = model.get("modelName", "?")
    return (
        f"Bedrock import of model {name} Failed ({model.get('failureMessage') or 'no message'}); "
        f"delete it (aws bedrock delete-custom-model --model-identifier {name}) and deploy "
        "again, or run the job again for a new checkpoint"
    )


def model_verdict(model: Mapping[str, Any]) -> Verdict:
    """Creating -> pending, Active -> ready, Failed raises (GetCustomModel's modelStatus,
    API_CreateCustomModel.html: Creating, Active, Failed)."""
    status = model.get("modelStatus")
    if status == "Active":
        return "ready"
    if status == "Creating":
        return "pending"
    if status == "Failed":
        raise BedrockModelError(failed_model_message(model))
    raise BedrockModelError(
        f"Bedrock model {model.get('modelName', '?')} has an unknown status {status!r}"
    )


def deployment_verdict(deployment: Mapping[str, Any], model_arn: str) -> Verdict:
    """A deployment of our name must serve our model; Creating -> pending, Active ->
    ready, Failed raises (GetCustomModelDeployment's status)."""
    name = deployment.get("modelDeploymentName", "?")
    if deployment.get("modelArn") != model_arn:
        raise BedrockModelError(
            f"custom model deployment {name} exists but serves {deployment.get('modelArn')}, "
            f"not {model_arn}; delete it or choose another DeploymentName"
        )
    status = deployment.get("status")
    if status == "Active":
        return "ready"
    if status == "Creating":
        return "pending"
    if status == "Failed":
        raise BedrockModelError(
            f"custom model deployment {name} Failed "
            f"({deployment.get('failureMessage') or 'no message'}); delete it (aws bedrock "
            f"delete-custom-model-deployment --custom-model-deployment-identifier {name}) "
            "and deploy again"
        )
    raise BedrockModelError(f"custom model deployment {name} has an unknown status {status!r}")


def import_timeout_message(name: str, arn: str, *, last_error: str | None = None) -> str:
    state = (
        f"GetCustomModel kept failing ({last_error})"
        if last_error is not None
        else "its import is still Creating"
    )
    return (
        f"Bedrock model {name} ({arn}) is not Active within the deploy's time limit: {state}; "
        "a later deploy resumes waiting: it adopts the model by name and does not import again"
    )


def deployment_timeout_message(name: str, *, last_error: str | None = None) -> str:
    state = (
        f"GetCustomModelDeployment kept failing ({last_error})"
        if last_error is not None
        else "it is still Creating"
    )
    return (
        f"custom model deployment {name} is not Active within the deploy's time limit: "
        f"{state}; a later deploy resumes waiting: it adopts the deployment by name and "
        "does not create another"
    )


def create_refused_message(call: str, what: str, detail: str) -> str:
    """A call Bedrock refused at once (a 4xx, not retried): nothing was made."""
    return (
        f"{call} for {what} was refused ({detail}), so nothing was created; fix the cause "
        "and deploy again, which sends a new client token"
    )


def create_ambiguous_message(call: str, what: str, key: str, detail: str) -> str:
    """A call whose outcome is unknown: never say nothing was made."""
    return (
        f"{call} for {what} failed ({detail}) and it is not visible yet, so it may have "
        f"been created; the purchase ledger holds {key} as ambiguous, and the next deploy "
        "looks it up by name and resends the same client token, so it is never created twice"
    )


def model_missing_message(name: str, arn: str) -> str:
    """The ledger says imported, Bedrock shows the model neither by name nor by ARN: a
    look-up that missed or a deletion by hand, which only a human can tell apart."""
    return (
        f"the purchase ledger records Bedrock model {name} as imported ({arn}), but Bedrock "
        "shows no model by that name or ARN, so this event imported nothing; if it was "
        f"deleted by hand, release the item with `novapod purchases CONFIG --release "
        f"import#{name}` after checking with `aws bedrock get-custom-model "
        f"--model-identifier {arn}` that it is gone, then deploy again"
    )


def deployment_missing_message(name: str, arn: str) -> str:
    """As model_missing_message, for a deployment."""
    return (
        f"the purchase ledger records custom model deployment {name} as created ({arn}), but "
        "Bedrock shows no deployment by that name or ARN, so this poll created nothing; if it "
        f"was deleted by hand, release the item with `novapod purchases CONFIG --release "
        f"deployment#{name}` after checking with `aws bedrock get-custom-model-deployment "
        f"--custom-model-deployment-identifier {arn}` that it is gone, then deploy again"
    )


def unsettled_message(what: str, key: str, detail: str) -> str:
    return (
        f"{what} was not imported by this event: its purchase ledger item {key} kept "
        f"changing under other invocations ({detail}) and this event made no import call; "
        "deploy again"
    )


def result_data(
    *,
    model_arn: str,
    bedrock_model_name: str,
    checkpoint: str,
    deployment_arn: str = "",
    status: str,
) -> dict[str, str]:
    return {
        "ModelArn": model_arn,
        "ModelName": bedrock_model_name,
        "CheckpointUri": checkpoint,
        "DeploymentArn": deployment_arn,
        "Status": status,
    }
