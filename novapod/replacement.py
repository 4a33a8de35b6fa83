"""Which template changes replace a resource, from CloudFormation's own schemas.

CloudFormation replaces a resource when one of its *create-only* properties changes.
The resource provider schemas that ship with cfn-lint list those properties
(`createOnlyProperties`, JSON pointers such as `/properties/VpcConfig`). This module
reads them from there, never from a hand-kept list, and compares two synthesized
templates: what an edit to the config would replace, before anyone deploys it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from cfnlint.schema import PROVIDER_SCHEMA_MANAGER  # type: ignore[import-untyped]
from cfnlint.schema._exceptions import ResourceNotFoundError  # type: ignore[import-untyped]

_MISSING = object()


@dataclass(frozen=True)
class Replacement:
    logical_id: str
    resource_type: str
    reason: str  # the create-only property that changed, or why else
    # CloudFormation refuses to replace a resource whose custom name stays the same.
    blocked_by_name: str | None = None

    def __str__(self) -> str:
        text = f"{self.logical_id} ({self.resource_type}): {self.reason}"
        if self.blocked_by_name:
            text += (
                f" - blocked: its custom {self.blocked_by_name} stays the same, and "
                "CloudFormation cannot replace a custom-named resource; change the name too "
                "or delete the resource first"
            )
        return text


@cache
def create_only_properties(resource_type: str, region: str = "us-east-1") -> tuple[str, ...]:
    """JSON pointers of the create-only properties of a resource type (empty if unknown)."""
    try:
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, resource_type).schema
    except ResourceNotFoundError:  # a type the schemas do not know
        return ()
    return tuple(schema.get("createOnlyProperties", ()))


def replacements(
    old: Mapping[str, Any], new: Mapping[str, Any], region: str = "us-east-1"
) -> list[Replacement]:
    """Resources of `old` that deploying `new` would replace (or delete)."""
    out: list[Replacement] = []
    new_resources = new.get("Resources", {})
    for logical_id, before in old.get("Resources", {}).items():
        after = new_resources.get(logical_id)
        type_ = before["Type"]
        if after is None:
            out.append(Replacement(logical_id, type_, "removed (deleted unless retained)"))
            continue
        if after["Type"] != type_:
            out.append(Replacement(logical_id, type_, f"type changes to {after['Type']}"))
            continue
        pointers = create_only_properties(type_, region)
        changed = [
            path
            for pointer in pointers
            for path, old_value, new_value in _values(pointer, before, after)
            if old_value != new_value
        ]
        if not changed:
            continue
        name = _unchanged_custom_name(pointers, before, after)
        out += [Replacement(logical_id, type_, f"{p} changes", name) for p in changed]
    return out


def _unchanged_custom_name(
    pointers: tuple[str, ...], before: Mapping[str, Any], after: Mapping[str, Any]
) -> str | None:
    for pointer in pointers:
        if not pointer.endswith("Name"):
            continue
        for path, old_value, new_value in _values(pointer, before, after):
            if old_value is not _MISSING and old_value == new_value:
                return path
    return None


def _values(
    pointer: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> Iterator[tuple[str, Any, Any]]:
    """(path, old, new) for a pointer like /properties/A/*/B (`*` walks list items)."""
    parts = [p for p in pointer.split("/") if p][1:]  # drop "properties"
    yield from _walk(parts, before.get("Properties", {}), after.get("Properties", {}), "")


def _walk(parts: list[str], old: Any, new: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if not parts:
        yield path or "Properties", old, new
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        old_items = old if isinstance(old, list) else []
        new_items = new if isinstance(new, list) else []
        for i in range(max(len(old_items), len(new_items))):
            yield from _walk(
                rest,
                old_items[i] if i < len(old_items) else _MISSING,
                new_items[i] if i < len(new_items) else _MISSING,
                f"{path}[{i}]",
            )
        return
    yield from _walk(
        rest,
        old.get(head, _MISSING) if isinstance(old, dict) else _MISSING,
        new.get(head, _MISSING) if isinstance(new, dict) else _MISSING,
        f"{path}.{head}" if path else head,
    )
