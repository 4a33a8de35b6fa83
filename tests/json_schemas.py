"""Checks of the JSON contracts in docs/reference/ (status, health): closed documents."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema


def assert_closed(schema: dict[str, Any], *, every_key_required: bool) -> None:
    """Every object of `schema` names its keys and takes no other
    (additionalProperties false), its required keys are among them (all of them with
    `every_key_required`), and the schema itself is valid Draft 2020-12."""

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" or "properties" in node:
                assert node.get("additionalProperties") is False, where
                required, named = set(node["required"]), set(node["properties"])
                assert (required == named) if every_key_required else (required <= named), where
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}[{index}]")

    walk(schema, "$")
    jsonschema.Draft202012Validator.check_schema(schema)


@cache
def _validator(schema_json: str) -> Any:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(document: Any, schema: dict[str, Any]) -> None:
    """jsonschema.validate(document, schema), the schema itself checked once per process.

    jsonschema.validate checks the schema against its metaschema on every call
    (validator_for, check_schema, then best_match of iter_errors), which for the status
    document's schema is most of the call (about 0.16 s); the document's own check and
    the error raised (the best match) are the same."""
    validator = _validator(json.dumps(schema))  # its keys in order: best_match breaks ties by it
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        raise error
