"""Write docs/reference/configuration.md, the configuration reference, from the config's
JSON Schema (`novapod.config.json_schema()`, what `novapod schema` prints): every
property with its path, type, default and description, nested objects included.

The page is never edited by hand: run

    .venv/bin/python tools/config_reference.py            # rewrite the page
    .venv/bin/python tools/config_reference.py --check    # exit 1 when it is stale

tests/unit/test_config_reference.py fails when the checked-in page differs from what this
script renders. The schema carries no default for a field whose default pydantic computes
(`default_factory`: empty lists, the newest Kubernetes version, ...); those come from the
config's models themselves, so no default on the page is written by hand either. A
keyword the renderer does not know stops it with the property's path, so a new kind of
rule cannot silently go missing from the page.
"""

from __future__ import annotations

import argparse
import json
import sys
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "configuration.md"
COMMAND = ".venv/bin/python tools/config_reference.py"

Schema = dict[str, Any]

# Enums longer than this (instance types, currencies) are summarized; the schema lists them.
LONG_ENUM = 25
DASH = "\N{EN DASH}"  # ranges: 1-55 printed with an en dash

# Keywords that describe a value; any other keyword in a property stops the renderer.
_VALUE_KEYS = {
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "items", "minItems",
    "maxItems", "uniqueItems", "additionalProperties", "patternProperties", "propertyNames",
    "anyOf", "allOf", "$ref", "properties", "required", "title", "description", "default",
    "oneOf", "if", "then", "else",
}  # fmt: skip


@dataclass(frozen=True)
class Row:
    path: str
    type: str
    default: str
    description: str


def _resolve(schema: Schema, node: Schema) -> Schema:
    """A property's schema with its $ref (bare or in allOf) merged in, keeping the
    property's own description and default."""
    refs = [node["$ref"]] if "$ref" in node else []
    refs += [part["$ref"] for part in node.get("allOf", []) if "$ref" in part]
    if not refs:
        return node
    merged: Schema = {}
    for ref in refs:
        merged.update(schema["definitions"][ref.rsplit("/", 1)[-1]])
    merged.update({k: v for k, v in node.items() if k not in ("$ref", "allOf")})
    return merged


def _nullable(node: Schema) -> tuple[Schema, bool]:
    """anyOf [X, null] -> (X with the outer keywords, True)."""
    options = node.get("anyOf")
    if not options or not any(o == {"type": "null"} for o in options):
        return node, False
    rest = [o for o in options if o != {"type": "null"}]
    outer = {k: v for k, v in node.items() if k != "anyOf"}
    if len(rest) == 1:
        return {**rest[0], **outer}, True
    return {**outer, "anyOf": rest}, True


def _number(value: float | int) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _bounds(node: Schema) -> list[str]:
    """A value's limits in words; patterns stay in the schema (`novapod schema`)."""
    return _number_bounds(node) + _size_bounds(node)


def _number_bounds(node: Schema) -> list[str]:
    out = []
    if "exclusiveMinimum" in node:
        out.append(f"> {_number(node['exclusiveMinimum'])}")
    if "minimum" in node and "maximum" in node:
        out.append(f"{_number(node['minimum'])}{DASH}{_number(node['maximum'])}")
    elif "minimum" in node:
        out.append(f"≥ {_number(node['minimum'])}")
    elif "maximum" in node:
        out.append(f"≤ {_number(node['maximum'])}")
    if "exclusiveMaximum" in node:
        out.append(f"< {_number(node['exclusiveMaximum'])}")
    if "multipleOf" in node:
        out.append(f"a multiple of {_number(node['multipleOf'])}")
    return out


def _size_bounds(node: Schema) -> list[str]:
    out = []
    if "minLength" in node and "maxLength" in node:
        out.append(f"{node['minLength']}{DASH}{node['maxLength']} characters")
    elif "maxLength" in node:
        out.append(f"at most {node['maxLength']} characters")
    elif "minLength" in node:
        out.append(f"at least {node['minLength']} characters")
    if "minItems" in node:
        out.append(f"at least {node['minItems']} item{'s' if node['minItems'] != 1 else ''}")
    if "maxItems" in node:
        out.append(f"at most {node['maxItems']} items")
    if node.get("uniqueItems"):
        out.append("no repeats")
    if node.get("format") == "date-time":
        out.append("ISO 8601 date and time")
    elif "format" in node:
        out.append(f"format {node['format']}")
    return out


def _code(value: Any) -> str:
    return f"`{json.dumps(value) if not isinstance(value, str) else value}`"


def _type(schema: Schema, node: Schema, path: str) -> str:
    """A value's type in words: string, integer (1 to 55), one of `a`, `b`, list of ..."""
    unknown = set(node) - _VALUE_KEYS
    if unknown:
        raise SystemExit(
            f"{path}: schema keyword(s) {', '.join(sorted(unknown))} unknown to "
            f"tools/config_reference.py; teach it to render them."
        )
    node = _resolve(schema, node)
    if "const" in node:
        return f"{_code(node['const'])}"
    if "enum" in node and len(node["enum"]) > LONG_ENUM:
        values = node["enum"]
        return f"one of {len(values)} values, {_code(values[0])} … {_code(values[-1])}"
    if "enum" in node:
        return "one of " + ", ".join(_code(v) for v in node["enum"])
    if "anyOf" in node and "type" not in node:
        return " or ".join(_type(schema, option, path) for option in node["anyOf"])
    kind = node.get("type")
    if kind == "array":
        items = _type(schema, node.get("items", {}), path + "[]") if "items" in node else "any"
        words = f"list of {_plural(items)}"
    elif kind == "object" and "properties" not in node:
        words = _map(schema, node, path)
    elif kind == "object":
        words = "object"
    elif "anyOf" in node:  # a typed value with alternative ranges: 1200 or n x 2400
        alternatives = [_alternative(option) for option in node["anyOf"]]
        words = f"{kind}: " + " or ".join(alternatives)
        return words
    elif kind is None:
        raise SystemExit(f"{path}: no type in the schema; teach tools/config_reference.py it.")
    else:
        words = str(kind)
    bounds = _bounds(node)
    return f"{words} ({', '.join(bounds)})" if bounds else words


def _alternative(option: Schema) -> str:
    if "const" in option:
        return _code(option["const"])
    return ", ".join(_bounds(option)) or str(option.get("type", "any"))


def _plural(words: str) -> str:
    for single, many in (("object", "objects"), ("string", "strings"), ("integer", "integers")):
        if words == single or words.startswith(single + " "):
            return many + words[len(single) :]
    return words


def _map(schema: Schema, node: Schema, path: str) -> str:
    values = node.get("additionalProperties")
    patterns = node.get("patternProperties", {})
    if isinstance(values, dict):
        value = _type(schema, values, path + ".*")
    elif patterns:
        value = " or ".join(_type(schema, v, path + ".*") for v in patterns.values())
    else:
        value = "any"
    keys = node.get("propertyNames", {})
    key = "key"
    if keys:
        key = f"key ({', '.join(_bounds(keys))})"
    return f"map of {key} to {value}"


def _default(value: Any) -> str:
    if value is None:
        return "`null`"
    if isinstance(value, dict) and value:
        return "see below"
    return _code(value)


def _rules(schema: Schema, node: Schema) -> list[str]:
    """The object-level rules: exactly one of, at least one of, if/then/else."""
    out: list[str] = []
    if node.get("type") != "object" or "properties" not in node:
        return out
    if "oneOf" in node:
        names = [", ".join(f"`{r}`" for r in option["required"]) for option in node["oneOf"]]
        out.append(f"Exactly one of {', '.join(names)}.")
    if "anyOf" in node:
        names = [", ".join(f"`{r}`" for r in option["required"]) for option in node["anyOf"]]
        out.append(f"At least one of {', '.join(names)}, not empty.")
    if "if" in node:
        (key, cond), *_ = node["if"]["properties"].items()
        out.append(
            f"When `{key}` is {_type(schema, cond, key)}: "
            f"{_then(schema, node['then'])}; otherwise: {_then(schema, node.get('else', {}))}."
        )
    for key, needs in node.get("dependencies", {}).items():
        out.append(f"`{key}` needs {', '.join(f'`{n}`' for n in needs)}.")
    return out


def _then(schema: Schema, branch: Schema) -> str:
    required = branch.get("required", [])
    rules = branch.get("properties", {})
    parts = []
    for key in [*required, *(k for k in rules if k not in required)]:
        words = (["required"] if key in required else []) + _bounds(rules.get(key, {}))
        parts.append(f"`{key}` {', '.join(words)}")
    return "; ".join(parts) or "no further rule"


def _models() -> dict[str, type[pydantic.BaseModel]]:
    """The config's pydantic models by name (the schema's definition names)."""
    from novapod.config.root import NovapodConfig  # noqa: PLC0415

    found: dict[str, type[pydantic.BaseModel]] = {}

    def walk(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
            if annotation.__name__ in found:
                return
            found[annotation.__name__] = annotation
            for field in annotation.model_fields.values():
                walk(field.annotation)
        for argument in typing.get_args(annotation):
            walk(argument)

    walk(NovapodConfig)
    found["novapod environment configuration"] = NovapodConfig  # the root's title
    return found


def _computed_default(models: dict[str, type[pydantic.BaseModel]], owner: str, key: str) -> Any:
    model = models.get(owner)
    if model is None or key not in model.model_fields:
        raise SystemExit(f"{owner}.{key}: no default in the schema and no model field.")
    return model.model_fields[key].get_default(call_default_factory=True)


def rows(schema: Schema, models: dict[str, type[pydantic.BaseModel]]) -> Iterator[Row]:
    """One row per property, depth first, in the schema's order."""
    yield from _object_rows(schema, schema, "", models)


def _object_rows(
    schema: Schema, node: Schema, prefix: str, models: dict[str, type[pydantic.BaseModel]]
) -> Iterator[Row]:
    required = set(node.get("required", []))
    owner = node.get("title", "")
    for key, prop in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        inner, _ = _nullable(prop)
        inner = _resolve(schema, inner)
        if key in required and "default" not in prop:
            default = "required"
        elif "default" in prop:
            default = _default(prop["default"])
        else:
            default = _default(_computed_default(models, owner, key))
        description = " ".join(str(prop.get("description", inner.get("description", ""))).split())
        if not description:
            raise SystemExit(f"{path}: no description in the schema; write one in the model.")
        rules = _rules(schema, inner)
        if rules:
            description = f"{description} {' '.join(rules)}"
        yield Row(path, _type(schema, prop, path), default, description)
        if inner.get("type") == "object" and "properties" in inner:
            yield from _object_rows(schema, inner, f"{path}.", models)
        items = inner.get("items")
        if inner.get("type") == "array" and isinstance(items, dict):
            element = _resolve(schema, items)
            if "properties" in element:
                yield from _object_rows(schema, element, f"{path}[].", models)


def _cell(text: str) -> str:
    """A table cell: pipes escaped; `<` escaped outside code spans, where Markdown would
    read `<name>` as an HTML tag."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):  # outside backticks
        parts[index] = parts[index].replace("<", "&lt;")
    return "`".join(parts).replace("|", "\\|")


def render(schema: Schema, models: dict[str, type[pydantic.BaseModel]] | None = None) -> str:
    """The reference page: one section per top-level key, one table row per property."""
    models = _models() if models is None else models
    all_rows = list(rows(schema, models))
    top_level = [k for k in schema["properties"]]
    scalars = [r for r in all_rows if "." not in r.path and "[" not in r.path]
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by tools/config_reference.py from `novapod schema`; do not edit. -->",
        "",
        "Every key of an environment file, generated from the config's JSON Schema "
        f"(`novapod schema`) by `{COMMAND}`; a test fails when this page is stale. "
        "How to write and check a file, and the rules that span sections, are in "
        "[Writing a configuration](../configuration.md). "
        "A path `a[].b` is key `b` of each entry of list `a`; a default `null` means unset; "
        "patterns, and the values of the long lists, are in `novapod schema`. "
        + " ".join(_rules(schema, schema)),
        "",
    ]
    sections: list[tuple[str, list[Row]]] = [("Top level", scalars)]
    for key in top_level:
        nested = [
            r for r in all_rows if r.path == key or r.path.startswith((f"{key}.", f"{key}[]"))
        ]
        if len(nested) > 1:
            sections.append((f"`{key}`", nested))
    for title, section_rows in sections:
        lines += [f"## {title}", "", "| key | type | default | description |", "|---|---|---|---|"]
        for row in section_rows:
            lines.append(
                f"| `{row.path}` | {_cell(row.type)} | {_cell(row.default)} | "
                f"{_cell(row.description)} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    parser.add_argument("--out", type=Path, default=PAGE, help=f"default: {PAGE}")
    args = parser.parse_args(argv)
    from novapod.config import json_schema  # noqa: PLC0415

    text = render(json_schema())
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out} is stale: regenerate it with `{COMMAND}`.", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
