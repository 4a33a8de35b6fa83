"""tests/json_schemas.validate refuses what jsonschema.validate refuses, with the same error."""

from __future__ import annotations

import jsonschema
import pytest

from tests import json_schemas

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"exit_status": {"type": "integer", "enum": [0, 4]}},
    "required": ["exit_status"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "document", [{}, {"exit_status": 1}, {"exit_status": "0"}, {"exit_status": 0, "x": 1}]
)
def test_a_document_the_schema_refuses_fails_with_jsonschemas_best_match(document) -> None:
    with pytest.raises(jsonschema.ValidationError) as expected:
        jsonschema.validate(document, SCHEMA)
    with pytest.raises(jsonschema.ValidationError) as got:
        json_schemas.validate(document, SCHEMA)
    assert got.value.message == expected.value.message
    assert list(got.value.absolute_path) == list(expected.value.absolute_path)


def test_a_document_the_schema_accepts_passes() -> None:
    json_schemas.validate({"exit_status": 4}, SCHEMA)


def test_an_invalid_schema_is_refused_as_jsonschema_refuses_it() -> None:
    with pytest.raises(jsonschema.SchemaError):
        json_schemas.validate({}, {**SCHEMA, "type": "no-such-type"})
