"""Checks of the JSON contracts in docs/reference/ (status, health): closed documents."""

from __future__ import annotations

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
