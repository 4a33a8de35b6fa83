"""A fake Amazon Bedrock control plane (custom models and their deployments), served by
`aws_control_plane.FakeControlPlane` for requests signed for `bedrock`.

Bedrock speaks REST-JSON: each operation has its method and URI template in botocore's
model (CreateCustomModel is POST /custom-models/create-custom-model, GetCustomModel
GET /custom-models/{modelIdentifier}, ...), routed here by `service_model.rest_request`
with the JSON body's members added. Every request is checked against the model
(required and unknown members, lengths, patterns, enums) and refused with a
ValidationException; every answer is checked against the output shape
(`violations`), and its timestamps are written as ISO 8601 as the model declares.

Behaviour, with its source:
- CreateCustomModel imports a model whose ARN is `custom-model/imported/<12>` ("The
  model appears in ListCustomModels with a customizationType of imported") and whose
  status goes Creating -> Active or Failed, one scripted status per GetCustomModel
  (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_CreateCustomModel.html).
- clientRequestToken: "If this token matches a previous request, Amazon Bedrock ignores
  the request, but does not return an error" (same page): the same token with the same
  parameters answers the first request's ARN and creates nothing. The same token with
  other parameters is refused with ConflictException, as EC2's idempotency page (which
  Bedrock links) refuses a mismatch; Bedrock does not document its code for it.
- Names are unique ("A unique name for the custom model", and for a deployment in
  deploying-custom-model.html): a taken model name is a ConflictException, a taken
  deployment name a ValidationException (CreateCustomModelDeployment has no
  ConflictException in its error list).
- Get*/Delete* take a name or an ARN (the identifiers' patterns allow both); an unknown
  one is ResourceNotFoundException (404).
- The fake refuses DeleteCustomModel while a deployment serves the model
  (ConflictException), stricter than anything documented, so that the handler's order
  (deployment first) is tested.
- Tags are eventually consistent (`lag_tags`): the tags CreateCustomModel put on a model
  may stay unseen by ListTagsForResource for a few reads, as tags of other AWS services
  are (Bedrock documents no consistency for them either way).
- Look-ups by name are eventually consistent (`hide_names`): right after a create, a
  GetCustomModel or GetCustomModelDeployment by name may answer not found for a few
  reads while the same call by ARN finds it (Bedrock documents no consistency for
  either; the handler must not take a miss by name for a deletion).
- A token stays remembered after its model is deleted: the same token and parameters
  answer the deleted model's ARN and create nothing ("Amazon Bedrock ignores the
  request"), which is why an import made again needs a new token.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.fakes import service_model

SERVICE = "bedrock"
BASE_MODEL_ARN = "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0:300k"
BASE_MODEL_NAME = "amazon.nova-lite-v1"
Status = str | tuple[str, str]


class BedrockError(Exception):
    """An error answer: its code, message and HTTP status (from the model's error shape)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        shape = service_model.service_model(SERVICE).shape_for(code)
        self.status = int(shape.metadata.get("error", {}).get("httpStatusCode", 400))


@dataclass(frozen=True)
class Answer:
    status: int
    payload: dict[str, Any]


def parse_request(
    method: str,
    path: str,
    query: Sequence[tuple[str, str]],
    headers: Mapping[str, str],
    body: bytes,
) -> tuple[str, dict[str, Any]]:
    """The operation and its members: URI labels and query from the route, the rest
    from the JSON body."""
    rest = service_model.rest_request(SERVICE, method, path, query, headers)
    if rest is None:
        return "", {"Method": method, "Path": path}
    params = dict(rest.params)
    if body:
        params.update(json.loads(body))
    return rest.operation, params


def body(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(_iso(payload)).encode()


def error_body(code: str, message: str) -> tuple[tuple[tuple[str, str], ...], bytes]:
    """REST-JSON errors: the code in x-amzn-ErrorType, the message in the body."""
    return (("x-amzn-ErrorType", code),), json.dumps({"message": message}).encode()


def _iso(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, Mapping):
        return {k: _iso(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_iso(v) for v in value]
    return value


def _fingerprint(params: Mapping[str, Any]) -> str:
    text = json.dumps(
        {k: v for k, v in params.items() if k != "clientRequestToken"}, sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _script(statuses: Iterable[Status]) -> deque[tuple[str, str]]:
    script = deque((s, "") if isinstance(s, str) else s for s in statuses)
    if not script:
        raise ValueError("a status script needs at least one status")
    return script


class FakeBedrock:
    """Bedrock's state; `handle` is called under the control plane's lock."""

    def __init__(self, *, account: str, region: str) -> None:
        self.account = account
        self.region = region
        self.models: dict[str, dict[str, Any]] = {}  # by name
        self.sources: dict[str, str] = {}  # model name -> s3Uri it was imported from
        self.tags: dict[str, list[dict[str, str]]] = {}  # by ARN
        self.deployments: dict[str, dict[str, Any]] = {}  # by name
        self.tokens: dict[tuple[str, str], tuple[str, str]] = {}  # (op, token) -> (params, arn)
        self.default_model_statuses: tuple[Status, ...] = ("Creating", "Active")
        self.default_deployment_statuses: tuple[Status, ...] = ("Creating", "Active")
        self._model_scripts: dict[str, deque[tuple[str, str]]] = {}
        self._deployment_scripts: dict[str, deque[tuple[str, str]]] = {}
        self._tag_lag = 0
        self._hidden_tags: dict[str, int] = {}  # ARN -> ListTagsForResource reads left unseen
        self._hidden_names = {"model": 0, "deployment": 0}  # Get* by name left unseen
        self.violations: list[str] = []

    # --- scripting ----------------------------------------------------------------------

    def add_model(
        self,
        name: str,
        *,
        source: str,
        statuses: Iterable[Status] = ("Active",),
        tags: Sequence[Mapping[str, str]] = (),
    ) -> str:
        """A model that exists before the test (imported elsewhere); returns its ARN."""
        self.script_model(name, statuses)
        return self._import(name, source, {}, [dict(t) for t in tags])

    def add_deployment(
        self, name: str, *, model_arn: str, statuses: Iterable[Status] = ("Active",)
    ) -> str:
        """A deployment that exists before the test (of any model); returns its ARN."""
        self.script_deployment(name, statuses)
        model = self._find_model(model_arn)
        status = model["modelStatus"]
        model["modelStatus"] = "Active"  # deployable whatever its script says
        try:
            answer = self._create_deployment({"modelDeploymentName": name, "modelArn": model_arn})
        finally:
            model["modelStatus"] = status
        return str(answer.payload["customModelDeploymentArn"])

    def script_model(self, name: str, statuses: Iterable[Status]) -> None:
        """Statuses the model shows, one per GetCustomModel; the last one stays."""
        self._model_scripts[name] = _script(statuses)
        if name in self.models:
            self._show(self.models[name], self._model_scripts[name][0], "modelStatus")

    def script_deployment(self, name: str, statuses: Iterable[Status]) -> None:
        self._deployment_scripts[name] = _script(statuses)
        if name in self.deployments:
            self._show(self.deployments[name], self._deployment_scripts[name][0], "status")

    def model(self, name: str) -> dict[str, Any] | None:
        return self.models.get(name)

    def lag_tags(self, reads: int) -> None:
        """The tags of models CreateCustomModel imports from now on stay unseen (an empty
        list) for their first `reads` ListTagsForResource calls."""
        self._tag_lag = reads

    def hide_names(self, *, models: int = 0, deployments: int = 0) -> None:
        """The next `models` GetCustomModel and `deployments` GetCustomModelDeployment
        calls that name a resource by its name (not its ARN) answer not found, whether it
        exists or not; calls by ARN find it."""
        self._hidden_names = {"model": models, "deployment": deployments}

    def _hidden(self, kind: str, identifier: str) -> bool:
        if identifier.startswith("arn:") or self._hidden_names[kind] <= 0:
            return False
        self._hidden_names[kind] -= 1
        return True

    # --- requests -----------------------------------------------------------------------

    def handle(self, operation: str, params: dict[str, Any]) -> Answer:
        handler = _OPERATIONS.get(operation)
        if handler is None:
            raise BedrockError("ValidationException", f"The fake does not serve {operation!r}.")
        errors = service_model.json_input_errors(SERVICE, operation, params)
        if errors:
            raise BedrockError("ValidationException", service_model.validation_message(errors))
        answer = handler(self, params)
        self.violations.extend(
            f"{operation} answer: {error}"
            for error in service_model.output_errors(SERVICE, operation, answer.payload)
        )
        return answer

    def _create_model(self, params: dict[str, Any]) -> Answer:
        source = (params.get("modelSourceConfig") or {}).get("s3DataSource", {}).get("s3Uri")
        if source is None:
            raise BedrockError("ValidationException", "modelSourceConfig is required.")
        replay = self._replay("CreateCustomModel", params)
        if replay is not None:
            return Answer(202, {"modelArn": replay})
        name = params["modelName"]
        if name in self.models:
            raise BedrockError("ConflictException", f"A model named {name} already exists.")
        arn = self._import(name, source, params, list(params.get("modelTags") or []))
        if self._tag_lag:
            self._hidden_tags[arn] = self._tag_lag
        self._remember("CreateCustomModel", params, arn)
        return Answer(202, {"modelArn": arn})

    def _get_model(self, params: dict[str, Any]) -> Answer:
        if self._hidden("model", params["modelIdentifier"]):
            raise BedrockError(
                "ResourceNotFoundException", f"Model {params['modelIdentifier']} not found."
            )
        model = self._find_model(params["modelIdentifier"])
        script = self._model_scripts.get(model["modelName"])
        if script:
            self._show(model, script[0], "modelStatus")
            if len(script) > 1:
                script.popleft()
        return Answer(200, {k: v for k, v in model.items() if v not in (None, "")})

    def _list_models(self, params: dict[str, Any]) -> Answer:
        contains = params.get("nameContains", "")
        status = params.get("modelStatus")
        found = [
            m
            for n, m in sorted(self.models.items())
            if contains in n and (status is None or m["modelStatus"] == status)
        ]
        page, token = _page(found, params)
        summaries = [
            {
                k: m[k]
                for k in (
                    "modelArn",
                    "modelName",
                    "creationTime",
                    "baseModelArn",
                    "customizationType",
                    "modelStatus",
                )
            }
            | {"baseModelName": BASE_MODEL_NAME, "ownerAccountId": self.account}
            for m in page
        ]
        answer: dict[str, Any] = {"modelSummaries": summaries}
        if token:
            answer["nextToken"] = token
        return Answer(200, answer)

    def _delete_model(self, params: dict[str, Any]) -> Answer:
        model = self._find_model(params["modelIdentifier"])
        serving = [d for d in self.deployments.values() if d["modelArn"] == model["modelArn"]]
        if serving:
            raise BedrockError(
                "ConflictException",
                f"Model {model['modelName']} is used by deployment "
                f"{serving[0]['modelDeploymentName']}.",
            )
        del self.models[model["modelName"]]
        self.tags.pop(model["modelArn"], None)
        return Answer(200, {})

    def _create_deployment(self, params: dict[str, Any]) -> Answer:
        replay = self._replay("CreateCustomModelDeployment", params)
        if replay is not None:
            return Answer(202, {"customModelDeploymentArn": replay})
        model = self._find_model(params["modelArn"])
        if model["modelStatus"] != "Active":
            raise BedrockError(
                "ValidationException", f"Model {model['modelName']} is {model['modelStatus']}."
            )
        name = params["modelDeploymentName"]
        if name in self.deployments:
            raise BedrockError("ValidationException", f"Deployment {name} already exists.")
        arn = (
            f"arn:aws:bedrock:{self.region}:{self.account}:custom-model-deployment/{_resource_id()}"
        )
        now = datetime.now(UTC)
        self.deployments[name] = {
            "customModelDeploymentArn": arn,
            "modelDeploymentName": name,
            "modelArn": params["modelArn"],
            "createdAt": now,
            "status": "Creating",
            "description": params.get("description"),
            "failureMessage": "",
            "lastUpdatedAt": now,
        }
        self.tags[arn] = list(params.get("tags") or [])
        script = self._deployment_scripts.setdefault(
            name, _script(self.default_deployment_statuses)
        )
        self._show(self.deployments[name], script[0], "status")
        self._remember("CreateCustomModelDeployment", params, arn)
        return Answer(202, {"customModelDeploymentArn": arn})

    def _get_deployment(self, params: dict[str, Any]) -> Answer:
        identifier = params["customModelDeploymentIdentifier"]
        if self._hidden("deployment", identifier):
            raise BedrockError(
                "ResourceNotFoundException", f"Custom model deployment {identifier} not found."
            )
        deployment = self._find_deployment(identifier)
        script = self._deployment_scripts.get(deployment["modelDeploymentName"])
        if script:
            self._show(deployment, script[0], "status")
            if len(script) > 1:
                script.popleft()
        return Answer(200, {k: v for k, v in deployment.items() if v not in (None, "")})

    def _list_deployments(self, params: dict[str, Any]) -> Answer:
        contains = params.get("nameContains", "")
        found = [
            d
            for n, d in sorted(self.deployments.items())
            if contains in n
            and params.get("statusEquals", d["status"]) == d["status"]
            and params.get("modelArnEquals", d["modelArn"]) == d["modelArn"]
        ]
        page, token = _page(found, params)
        summaries = [
            {
                "customModelDeploymentArn": d["customModelDeploymentArn"],
                "customModelDeploymentName": d["modelDeploymentName"],
                "modelArn": d["modelArn"],
                "createdAt": d["createdAt"],
                "status": d["status"],
                "lastUpdatedAt": d["lastUpdatedAt"],
            }
            for d in page
        ]
        answer: dict[str, Any] = {"modelDeploymentSummaries": summaries}
        if token:
            answer["nextToken"] = token
        return Answer(200, answer)

    def _delete_deployment(self, params: dict[str, Any]) -> Answer:
        deployment = self._find_deployment(params["customModelDeploymentIdentifier"])
        del self.deployments[deployment["modelDeploymentName"]]
        self.tags.pop(deployment["customModelDeploymentArn"], None)
        return Answer(200, {})

    def _list_tags(self, params: dict[str, Any]) -> Answer:
        arn = params["resourceARN"]
        if arn not in self.tags:
            raise BedrockError("ResourceNotFoundException", f"Resource {arn} not found.")
        if self._hidden_tags.get(arn, 0) > 0:
            self._hidden_tags[arn] -= 1
            return Answer(200, {"tags": []})
        return Answer(200, {"tags": list(self.tags[arn])})

    # --- state --------------------------------------------------------------------------

    def _import(
        self, name: str, source: str, params: Mapping[str, Any], tags: list[dict[str, str]]
    ) -> str:
        arn = f"arn:aws:bedrock:{self.region}:{self.account}:custom-model/imported/{_resource_id()}"
        self.models[name] = {
            "modelArn": arn,
            "modelName": name,
            "baseModelArn": BASE_MODEL_ARN,
            "customizationType": "IMPORTED",
            "modelKmsKeyArn": params.get("modelKmsKeyArn"),
            "creationTime": datetime.now(UTC),
            "modelStatus": "Creating",
            "failureMessage": "",
        }
        self.sources[name] = source
        self.tags[arn] = tags
        script = self._model_scripts.setdefault(name, _script(self.default_model_statuses))
        self._show(self.models[name], script[0], "modelStatus")
        return arn

    def _replay(self, operation: str, params: Mapping[str, Any]) -> str | None:
        token = params.get("clientRequestToken")
        if token is None or (operation, token) not in self.tokens:
            return None
        fingerprint, arn = self.tokens[(operation, token)]
        if fingerprint != _fingerprint(params):
            raise BedrockError(
                "ConflictException",
                f"The client token {token} was used with different parameters.",
            )
        return arn

    def _remember(self, operation: str, params: Mapping[str, Any], arn: str) -> None:
        token = params.get("clientRequestToken")
        if token is not None:
            self.tokens[(operation, token)] = (_fingerprint(params), arn)

    def _find_model(self, identifier: str) -> dict[str, Any]:
        for model in self.models.values():
            if identifier in (model["modelName"], model["modelArn"]):
                return model
        raise BedrockError("ResourceNotFoundException", f"Model {identifier} not found.")

    def _find_deployment(self, identifier: str) -> dict[str, Any]:
        for deployment in self.deployments.values():
            if identifier in (
                deployment["modelDeploymentName"],
                deployment["customModelDeploymentArn"],
            ):
                return deployment
        raise BedrockError(
            "ResourceNotFoundException", f"Custom model deployment {identifier} not found."
        )

    @staticmethod
    def _show(record: dict[str, Any], status: tuple[str, str], key: str) -> None:
        record[key], record["failureMessage"] = status


def _resource_id() -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(12))


def _page(
    items: list[dict[str, Any]], params: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], str]:
    start = int(params.get("nextToken") or 0)
    size = int(params.get("maxResults") or 100)
    page = items[start : start + size]
    return page, str(start + size) if start + size < len(items) else ""


_OPERATIONS = {
    "CreateCustomModel": FakeBedrock._create_model,
    "GetCustomModel": FakeBedrock._get_model,
    "ListCustomModels": FakeBedrock._list_models,
    "DeleteCustomModel": FakeBedrock._delete_model,
    "CreateCustomModelDeployment": FakeBedrock._create_deployment,
    "GetCustomModelDeployment": FakeBedrock._get_deployment,
    "ListCustomModelDeployments": FakeBedrock._list_deployments,
    "DeleteCustomModelDeployment": FakeBedrock._delete_deployment,
    "ListTagsForResource": FakeBedrock._list_tags,
}
