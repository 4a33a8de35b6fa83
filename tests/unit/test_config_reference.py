"""docs/reference/configuration.md is what tools/config_reference.py renders from the
config's JSON Schema, and the renderer leaves no property out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from novapod.config import json_schema
from tests.conftest import ROOT
from tools import config_reference


def test_the_checked_in_reference_is_the_generated_one() -> None:
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert page == config_reference.render(json_schema()), (
        "docs/reference/configuration.md is stale: regenerate it with "
        "`.venv/bin/python tools/config_reference.py`"
    )


def _properties(schema: dict[str, Any]) -> set[str]:
    """Every property name the schema declares, at any depth."""
    names = set(schema.get("properties", {}))
    for definition in schema["definitions"].values():
        names |= set(definition.get("properties", {}))
    return names


def test_every_property_of_the_schema_has_a_row_with_a_description() -> None:
    schema = json_schema()
    rows = list(config_reference.rows(schema, config_reference._models()))
    leaves = {row.path.rsplit(".", 1)[-1].removesuffix("[]") for row in rows}
    assert _properties(schema) <= leaves
    assert len({row.path for row in rows}) == len(rows)
    assert all(row.description and row.type and row.default for row in rows)
    by_path = {row.path: row for row in rows}
    # nested objects and lists of objects get dotted paths
    assert "capacity.training_plans[].purchase.approve" in by_path
    assert "network.existing_vpc.private_subnets[].zone_id" in by_path
    # defaults pydantic computes (default_factory) come from the models
    assert by_path["capacity.training_plans[].target_resources"].default == '`["hyperpod-cluster"]`'
    assert by_path["jobs"].default == "`[]`"
    assert by_path["name"].default == "required"


class _Inner(pydantic.BaseModel):
    size: int = 1200


class _Toy(pydantic.BaseModel):
    """A config of three kinds of field."""

    name: str = pydantic.Field(description="The name.", min_length=2, max_length=20)
    inner: _Inner | None = pydantic.Field(default=None, description="Optional <thing> | more.")
    items: list[_Inner] = pydantic.Field(default_factory=list, description="A list.")


def _toy_schema() -> dict[str, Any]:
    schema = _Toy.model_json_schema(ref_template="#/definitions/{model}")
    schema["definitions"] = schema.pop("$defs")
    schema["definitions"]["_Inner"]["properties"]["size"]["description"] = "GiB."
    return schema


def test_render_of_a_small_schema() -> None:
    models: dict[str, type[pydantic.BaseModel]] = {"_Toy": _Toy, "_Inner": _Inner}
    schema = _toy_schema()
    schema["title"] = "_Toy"
    text = config_reference.render(schema, models)
    assert "| `name` | string (2\N{EN DASH}20 characters) | required | The name. |" in text
    # `<` escaped outside code, `|` escaped in cells
    assert "| `inner` | object or null | `null` | Optional &lt;thing> \\| more. |" in text
    assert "| `inner.size` | integer | `1200` | GiB. |" in text
    assert "| `items` | list of objects | `[]` | A list. |" in text
    assert "| `items[].size` | integer | `1200` | GiB. |" in text


def test_a_property_without_a_description_stops_the_renderer() -> None:
    schema = _toy_schema()
    schema["title"] = "_Toy"
    del schema["properties"]["items"]["description"]
    with pytest.raises(SystemExit, match=r"^items: no description"):
        config_reference.render(schema, {"_Toy": _Toy, "_Inner": _Inner})


def test_an_unknown_keyword_stops_the_renderer() -> None:
    schema = _toy_schema()
    schema["title"] = "_Toy"
    schema["properties"]["name"]["contains"] = {"const": "x"}
    with pytest.raises(SystemExit, match=r"^name: schema keyword\(s\) contains unknown"):
        config_reference.render(schema, {"_Toy": _Toy, "_Inner": _Inner})


def test_check_names_the_command_when_the_page_is_stale(tmp_path: Path, capsys) -> None:
    page = tmp_path / "configuration.md"
    page.write_text("# Configuration reference\n\nedited by hand\n")
    assert config_reference.main(["--check", "--out", str(page)]) == 1
    assert "regenerate it with `.venv/bin/python tools/config_reference.py`" in (
        capsys.readouterr().err
    )
    assert config_reference.main(["--out", str(page)]) == 0
    assert config_reference.main(["--check", "--out", str(page)]) == 0
