"""The one way novapod reads YAML: `yaml.safe_load`, except that a duplicate key is an error.

PyYAML keeps the last of two equal keys in a mapping, so a second `max_upfront_fee`
line silently replaces the first. `StrictLoader` checks every mapping of a document
before building it and raises `DuplicateKeyError`, whose `issues` are
`(field.path, message)` pairs such as

    capacity.training_plans[0].purchase.max_upfront_fee: duplicate key (lines 12 and 14); keep one

The config loader turns them into a ConfigError (exit status 2); the files shipped in
the package go through `load_packaged`, where a duplicate is a packaging bug
(`PackagedDataError`).

Keys are compared as the values they construct, as the mapping would: `a` and `"a"`,
or `1` and `0x1`, are one key. YAML 1.1 merge keys work as that spec defines them: a
key written in the mapping overrides the same key from `<<: *anchor`, and keys that
several merged mappings share are no duplicates either; only keys written twice in
one mapping (two `<<` keys included) are.

Nothing else differs from yaml.safe_load. Only this module may call PyYAML's loaders
(tests/unit/test_yaml_duplicates.py checks the sources).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"  # the `=` key, a str to PyYAML's SafeLoader


@dataclass(frozen=True)
class DuplicateKey:
    """One key written more than once in one mapping."""

    path: str  # the key's field path, e.g. capacity.training_plans[0].purchase.max_upfront_fee
    positions: tuple[tuple[int, int], ...]  # 1-based (line, column) of each occurrence
    merge: bool = False  # the key is `<<`

    @property
    def lines(self) -> tuple[int, ...]:
        return tuple(line for line, _ in self.positions)

    @property
    def message(self) -> str:
        lines = self.lines
        if len(set(lines)) == len(lines):  # the usual case: one key per line
            where = f"lines {_and([str(n) for n in lines])}"
        elif len(set(lines)) == 1:  # a flow mapping, {a: 1, a: 2}
            where = f"line {lines[0]}, columns {_and([str(c) for _, c in self.positions])}"
        else:
            where = f"lines {_and([f'{line}:{column}' for line, column in self.positions])}"
        if self.merge:
            return (
                f"duplicate merge key ({where}); merge several mappings with one "
                "key: <<: [*first, *second]"
            )
        return f"duplicate key ({where}); keep one"

    def render(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def _and(items: list[str]) -> str:
    return f"{', '.join(items[:-1])} and {items[-1]}"


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A document with duplicate keys; `duplicates` lists every one, in the order of
    their repeated occurrences."""

    def __init__(self, duplicates: tuple[DuplicateKey, ...], mark: yaml.Mark | None) -> None:
        self.duplicates = duplicates
        # problem and problem_mark as for any YAMLError, for code that only knows those.
        super().__init__(problem=duplicates[0].render(), problem_mark=mark)

    @property
    def issues(self) -> list[tuple[str, str]]:
        """(field path, message) pairs, as ConfigError takes them."""
        return [(d.path, d.message) for d in self.duplicates]

    def __str__(self) -> str:
        return "; ".join(d.render() for d in self.duplicates)


class PackagedDataError(RuntimeError):
    """A YAML file shipped inside the novapod package does not load: a packaging bug.

    Not a ValueError, so that a validator which reads packaged data cannot turn it
    into a finding about the user's configuration.
    """


class _RefusesDuplicates(yaml.constructor.SafeConstructor):
    """What makes a SafeLoader strict (see the module docstring); mixed into a loader."""

    def construct_document(self, node: Node) -> Any:
        # In the order of the repeated occurrences, where a reader meets each mistake.
        found = sorted(self._duplicates(node, ""), key=lambda each: each[0].positions[1])
        if found:
            raise DuplicateKeyError(tuple(d for d, _ in found), found[0][1])
        return super().construct_document(node)

    def _duplicates(self, root: Node, root_path: str) -> Iterator[tuple[DuplicateKey, yaml.Mark]]:
        """Every duplicate key under `root` with the mark of its second occurrence; each
        node is checked once (an alias is its anchor's node, met first at the anchor)."""
        seen: set[int] = set()
        stack: list[tuple[Node, str]] = [(root, root_path)]
        while stack:
            node, path = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            children: list[tuple[Node, str]] = []
            if isinstance(node, SequenceNode):
                children = [(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
            elif isinstance(node, MappingNode):
                occurrences: dict[Hashable, list[Node]] = {}
                names: dict[Hashable, str] = {}
                for key_node, value_node in node.value:
                    key, name = self._key(key_node)
                    child = f"{path}.{name}" if path else name
                    children.append((value_node, child))
                    if key is None:
                        continue
                    occurrences.setdefault(key, []).append(key_node)
                    names.setdefault(key, child)
                for key, nodes in occurrences.items():
                    if len(nodes) > 1:
                        where = tuple(
                            (n.start_mark.line + 1, n.start_mark.column + 1) for n in nodes
                        )
                        merge = nodes[0].tag == _MERGE_TAG
                        yield DuplicateKey(names[key], where, merge), nodes[1].start_mark
            stack.extend(reversed(children))  # depth first, in document order

    def flatten_mapping(self, node: MappingNode) -> None:
        """Resolve `<<` as YAML 1.1 defines it: keys written in the mapping override
        merged ones, and a mapping earlier in `<<: [*a, *b]` overrides a later one.

        PyYAML 6.0.3+ drops a merged pair whose key is the same str object (`id()`) as
        an earlier one's, which one-letter keys are in CPython: merging
        `b: &b {<<: *a, x: 2}` gives a's x instead of b's. Here every merged mapping
        contributes its own flattened pairs and the last pair per key wins (at the
        key's first position), which also keeps merged lists from growing.
        """
        merged: list[tuple[Node, Node]] = []
        written: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                if key_node.tag == _VALUE_TAG:
                    key_node.tag = "tag:yaml.org,2002:str"
                written.append((key_node, value_node))
                continue
            for source in reversed(_merge_sources(node, value_node)):  # the first one wins
                self.flatten_mapping(source)
                merged.extend(source.value)
        node.value = self._last_per_key(merged) + written

    def _last_per_key(self, pairs: list[tuple[Node, Node]]) -> list[tuple[Node, Node]]:
        """One pair per key: the last one's value at the first one's position."""
        index: dict[Hashable, int] = {}
        out: list[tuple[Node, Node]] = []
        for key_node, value_node in pairs:
            key, _ = self._key(key_node)
            if key is not None and key in index:
                out[index[key]] = (out[index[key]][0], value_node)
                continue
            if key is not None:
                index[key] = len(out)
            out.append((key_node, value_node))
        return out

    def _key(self, node: Node) -> tuple[Hashable | None, str]:
        """The key as the mapping would hold it (None: not comparable here) and its name
        in a field path (as written: `true`, not True)."""
        if node.tag == _MERGE_TAG:
            return ("<<", _MERGE_TAG), "<<"
        if node.tag == _VALUE_TAG:
            return "=", "="
        if not isinstance(node, ScalarNode):
            return None, "?"  # a mapping or list as a key; the constructor refuses it
        key = self.construct_object(node, deep=True)
        try:
            hash(key)
        except TypeError:
            return None, str(node.value)
        return key, str(node.value)


class StrictLoader(_RefusesDuplicates, yaml.SafeLoader):
    """yaml.SafeLoader that refuses duplicate keys: what a user's file is read with (its
    syntax errors carry PyYAML's messages, with the line shown)."""


# The files shipped in the package are read by libyaml's parser where PyYAML has it (the
# pure-Python parser is most of what loading the Nova catalog costs at synth). The same
# SafeConstructor builds the values, so the result and the duplicate check are the same.
class _PackagedLoader(_RefusesDuplicates, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _position(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _merge_sources(node: MappingNode, value: Node) -> list[MappingNode]:
    """The mappings `<<: value` merges, or PyYAML's own error for anything else."""
    if isinstance(value, MappingNode):
        return [value]
    if not isinstance(value, SequenceNode):
        raise yaml.constructor.ConstructorError(
            "while constructing a mapping",
            node.start_mark,
            f"expected a mapping or list of mappings for merging, but found {_kind(value)}",
            value.start_mark,
        )
    for item in value.value:
        if not isinstance(item, MappingNode):
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"expected a mapping for merging, but found {_kind(item)}",
                item.start_mark,
            )
    return list(value.value)


def _kind(node: Node) -> str:
    return str(getattr(node, "id", "node"))  # scalar, sequence or mapping, as PyYAML says


def load(stream: str | bytes) -> Any:
    """Parse one YAML document like yaml.safe_load; DuplicateKeyError on a duplicate key."""
    return yaml.load(stream, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass


def load_packaged(package: str, name: str) -> Any:
    """A YAML file shipped in `package` (e.g. "novapod", "data/eks.yaml"), parsed strictly.

    A duplicate key or invalid YAML there is a packaging bug: PackagedDataError, whose
    message names the file, the key and the lines.
    """
    label = f"{package.replace('.', '/')}/{name}"
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    try:
        return yaml.load(text, Loader=_PackagedLoader)  # noqa: S506 - a SafeLoader
    except DuplicateKeyError as exc:
        problem = str(exc)
    except yaml.YAMLError as exc:
        problem = f"not valid YAML: {' '.join(str(exc).split())}"
    raise PackagedDataError(
        f"{label}: {problem} (a file shipped in the novapod package: a packaging bug, "
        "not a problem with your configuration)"
    )
