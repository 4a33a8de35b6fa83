"""The config's JSON Schema for editors (`novapod schema`)."""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from novapod.config.root import NovapodConfig

# Draft 7: the JSON Schema version editors' YAML support validates with (the Red Hat
# YAML extension and yaml-language-server ship draft 7; newer drafts are only partly
# understood there: see redhat-developer/vscode-yaml#704, yaml-language-server#856).
JSON_SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"


def json_schema() -> dict[str, Any]:
    """The config's JSON Schema (draft 7) for editors.

    The same rules as the validator where JSON Schema can say them (patterns,
    lengths, enums, sizes, exactly one VPC choice, hyperpod needing eks), a
    description on every property, and numbers typed as numbers.
    """
    schema = NovapodConfig.model_json_schema(
        ref_template="#/definitions/{model}", schema_generator=_SchemaGenerator
    )
    definitions = schema.pop("$defs", {})
    schema = {"$schema": JSON_SCHEMA_DIALECT, **_draft7(schema)}
    schema["title"] = "novapod environment configuration"
    schema["definitions"] = _draft7(definitions)
    return schema


def _draft7(node: Any) -> Any:
    """Draft 7 ignores keywords beside a $ref, so a described $ref moves into allOf."""
    if isinstance(node, list):
        return [_draft7(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _draft7(value) for key, value in node.items()}
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}, *out.get("allOf", [])]
    return out


class _SchemaGenerator(GenerateJsonSchema):
    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        # pydantic also admits a string for a Decimal; YAML configs write a number, and
        # editors should say so, so the schema keeps only the number branch.
        number: JsonSchemaValue = {"type": "number"}
        bounds = {
            "exclusiveMinimum": schema.get("gt"),
            "minimum": schema.get("ge"),
            "exclusiveMaximum": schema.get("lt"),
            "maximum": schema.get("le"),
        }
        for key, bound in bounds.items():
            if bound is not None:
                number[key] = float(bound)
        return number
