"""The package's layers stay one-way (docs/development.md: Layout).

Every module under novapod/ is parsed with `ast` (nothing is imported) and each of its
imports is collected, absolute and relative, wherever it sits: at the top, inside a
function (a deferred import is still a dependency) or under `if TYPE_CHECKING:` (a
type is a dependency too; a Protocol is the way to need less). The rules below are
checked over that graph; a failure names the importing module, the line and the rule.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "novapod"

# What capacity/ may import besides itself: the Nova catalog (data), the YAML loader and
# the name digest the training-plan handler recomputes (one function for both).
CAPACITY_MAY_IMPORT = (
    "novapod.capacity",
    "novapod.nova.catalog",
    "novapod.yamlsafe",
    "novapod.constructs.handler_core.names",
)
# A Lambda handler runs from its own asset with the runtime's boto3: nothing else.
HANDLER_RUNTIME = frozenset(sys.stdlib_module_names) | {"boto3", "botocore"}
HANDLER_CORE = "novapod.constructs.handler_core"
# The top level holds the entry points and what several layers share; anything else
# belongs in a package (docs/development.md: Layout).
TOP_LEVEL = {
    "novapod",
    "novapod.cli",
    "novapod.environment",
    "novapod.yamlsafe",
    "novapod.facts",
    "novapod.pins",
    "novapod.node_images",
    "novapod.addressing",
}
LAYOUT = ROOT / "docs" / "development.md"


@dataclass(frozen=True)
class Import:
    """One import statement's target, as the module that holds it names it."""

    line: int
    target: str  # a novapod module (dotted), or the top-level name of another package
    relative: bool

    @property
    def internal(self) -> bool:
        return self.target == "novapod" or self.target.startswith("novapod.")


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(source: str, name: str, package: bool, modules: frozenset[str]) -> list[Import]:
    """The imports of module `name` (`package`: it is an __init__), each resolved to the
    novapod module it loads: `from a import b` is a.b when that is a module, else a."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                Import(node.lineno, _module(alias.name, modules), False) for alias in node.names
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                here = name.split(".") if package else name.split(".")[:-1]
                base = ".".join(
                    here[: len(here) - node.level + 1] + ([node.module] if node.module else [])
                )
            else:
                base = node.module or ""
            for alias in node.names:
                child = f"{base}.{alias.name}"
                target = child if child in modules else _module(base, modules)
                found.append(Import(node.lineno, target, bool(node.level)))
    return found


def _module(dotted: str, modules: frozenset[str]) -> str:
    """The longest prefix of `dotted` that is a novapod module; else its top-level name."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return parts[0]


@cache
def graph(root: Path = PACKAGE) -> Mapping[str, tuple[Import, ...]]:
    """Every module under `root` -> its imports."""
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    modules = frozenset(paths)
    return {
        name: tuple(imports_of(path.read_text(encoding="utf-8"), name, is_package(path), modules))
        for name, path in paths.items()
    }


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles: each strongly connected component of two or more modules (or a
    module that imports itself), its members sorted (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def violations(rule: str, imports: Mapping[str, tuple[Import, ...]] | None = None) -> list[str]:
    """`module:line imports target` for each import that breaks `rule`."""
    imports = graph() if imports is None else imports
    check = RULES[rule]
    return [
        f"{module}:{item.line} imports {item.target}"
        for module, items in sorted(imports.items())
        for item in items
        if not check(module, item)
    ]


def _config(module: str, item: Import) -> bool:
    if not within(module, "novapod.config"):
        return True
    forbidden = ("novapod.constructs", "novapod.stacks", "novapod.review", "novapod.cli")
    return not any(within(item.target, f) for f in forbidden)


def _capacity(module: str, item: Import) -> bool:
    if not within(module, "novapod.capacity") or not item.internal:
        return True
    return any(within(item.target, allowed) for allowed in CAPACITY_MAY_IMPORT)


def _handler_package(module: str) -> str | None:
    """The handler package a module belongs to (handler_core counts as one), or None."""
    parts = module.split(".")
    if within(module, HANDLER_CORE):
        return HANDLER_CORE
    if "handler" in parts[2:]:
        return ".".join(parts[: parts.index("handler", 2) + 1])
    return None


def _handler(module: str, item: Import) -> bool:
    package = _handler_package(module)
    if package is None:
        return True
    if not item.internal:
        return item.target in HANDLER_RUNTIME
    # In an asset the handler's package and handler_core sit side by side under a top-level
    # package of their own: only relative imports of the two resolve there.
    return item.relative and (within(item.target, package) or within(item.target, HANDLER_CORE))


def _stacks(module: str, item: Import) -> bool:
    return not (within(module, "novapod.constructs") and within(item.target, "novapod.stacks"))


def _cli(module: str, item: Import) -> bool:
    return item.target != "novapod.cli"


# `novapod status` calls AWS in one module; what judges and prints the facts stays pure.
STATUS = "novapod.operate.status"
STATUS_CALLS = f"{STATUS}.collect"


def _status(module: str, item: Import) -> bool:
    if not within(module, STATUS) or module == STATUS_CALLS:
        return True
    return item.target not in ("boto3", "botocore") and not within(
        item.target, "novapod.nova.launch"
    )


RULES = {
    "config never imports constructs/, stacks/, review/ or cli": _config,
    "capacity/ imports only itself, nova.catalog, yamlsafe and handler_core.names": _capacity,
    "handlers and handler_core import only stdlib, boto3/botocore and, relatively, handler_core": _handler,
    "constructs/ never imports stacks/": _stacks,
    "nothing imports cli": _cli,
    "operate/status/ calls AWS only in collect": _status,
}


def edges_of(imports: Mapping[str, tuple[Import, ...]]) -> dict[str, set[str]]:
    return {
        module: {item.target for item in items if item.internal and item.target in imports}
        for module, items in imports.items()
    }


def test_the_graph_sees_every_module_and_both_kinds_of_import() -> None:
    imports = graph()
    assert {"novapod", "novapod.cli", "novapod.capacity", "novapod.config.checks"} <= set(imports)
    index = {i.target for i in imports["novapod.constructs.training_plan.handler.index"]}
    # Relative imports resolve to the core's modules; absolute ones keep their name.
    assert {
        "novapod.constructs.handler_core.aws",
        "novapod.constructs.handler_core.ledger",
    } <= index
    assert "boto3" in {i.target for i in imports["novapod.constructs.handler_core.aws"]}
    # A deferred import (inside a function) counts: novapod/__init__ loads the CDK late.
    assert "novapod.environment" in {i.target for i in imports["novapod"]}


def test_the_top_level_keeps_only_entry_points_and_shared_modules() -> None:
    top = {module for module in graph() if module.count(".") <= 1}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert top - {f"novapod.{name}" for name in packages} == TOP_LEVEL


def test_the_layout_names_every_package_and_top_level_module() -> None:
    text = LAYOUT.read_text(encoding="utf-8")
    layout = text[text.index("## Layout") : text.index("## Why stacks use weak")]
    packages = {f"{p.parent.name}/" for p in PACKAGE.glob("*/__init__.py")}
    modules = {f"{m.removeprefix('novapod.')}.py" for m in TOP_LEVEL - {"novapod"}}
    assert {name for name in packages | modules if name not in layout} == set()


def test_no_import_cycle() -> None:
    assert cycles(edges_of(graph())) == []


@pytest.mark.parametrize("rule", list(RULES))
def test_layer_rule(rule: str) -> None:
    assert violations(rule) == []


# The checks themselves: each rule and the cycle search fail on a deliberately bad tree.


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Mapping[str, tuple[Import, ...]]:
    for relative, text in files.items():
        path = tmp_path / "novapod" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return graph.__wrapped__(tmp_path / "novapod")


def test_a_cycle_through_a_type_checking_import_is_found(tmp_path: Path) -> None:
    imports = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "config/__init__.py": "",
            "config/root.py": "from novapod.config import checks\n",
            "config/checks.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from novapod.config.root import NovapodConfig\n"
            ),
            "config/plain.py": "from . import root\n",
        },
    )
    assert cycles(edges_of(imports)) == [["novapod.config.checks", "novapod.config.root"]]


@pytest.mark.parametrize(
    ("rule", "files", "expected"),
    [
        (
            "config never imports constructs/, stacks/, review/ or cli",
            {"config/checks.py": "def f():\n    from novapod.constructs.x.pins import p\n"},
            ["novapod.config.checks:2 imports novapod.constructs"],
        ),
        (
            "capacity/ imports only itself, nova.catalog, yamlsafe and handler_core.names",
            {
                "capacity/naming.py": (
                    "from novapod.constructs.handler_core import names\n"
                    "from novapod.constructs.handler_core import ledger\n"
                    "from ..config import capacity\n"
                    "from . import models\n"
                )
            },
            [
                "novapod.capacity.naming:2 imports novapod.constructs.handler_core.ledger",
                "novapod.capacity.naming:3 imports novapod.config.capacity",
            ],
        ),
        (
            "handlers and handler_core import only stdlib, boto3/botocore and, relatively, handler_core",
            {
                "constructs/t/handler/index.py": (
                    "import json, boto3, requests\n"
                    "from ...handler_core import ledger\n"
                    "from novapod.constructs.handler_core import names\n"
                    "from . import decisions\n"
                    "from ... import provider\n"
                ),
                "constructs/handler_core/log.py": "import yaml\nfrom novapod import facts\n",
            },
            [
                "novapod.constructs.handler_core.log:1 imports yaml",
                "novapod.constructs.handler_core.log:2 imports novapod.facts",
                "novapod.constructs.t.handler.index:1 imports requests",
                "novapod.constructs.t.handler.index:3 imports novapod.constructs.handler_core.names",
                "novapod.constructs.t.handler.index:5 imports novapod.constructs.provider",
            ],
        ),
        (
            "constructs/ never imports stacks/",
            {"constructs/x.py": "from novapod.stacks.network import NetworkStack\n"},
            ["novapod.constructs.x:1 imports novapod.stacks.network"],
        ),
        (
            "nothing imports cli",
            {"environment.py": "import novapod.cli\n"},
            ["novapod.environment:1 imports novapod.cli"],
        ),
        (
            "operate/status/ calls AWS only in collect",
            {
                "operate/status/collect.py": "import boto3\nfrom botocore import exceptions\n",
                "operate/status/assess.py": (
                    "from botocore.exceptions import ClientError\n"
                    "from . import collect\n"
                    "def f():\n    import boto3\n"
                ),
            },
            [
                "novapod.operate.status.assess:1 imports botocore",
                "novapod.operate.status.assess:4 imports boto3",
            ],
        ),
    ],
)
def test_each_rule_fails_on_a_bad_import(
    tmp_path: Path, rule: str, files: dict[str, str], expected: list[str]
) -> None:
    skeleton = {
        "__init__.py": "",
        "cli.py": "",
        "facts.py": "",
        "config/__init__.py": "",
        "config/checks.py": "",
        "config/capacity.py": "",
        "capacity/__init__.py": "",
        "capacity/models.py": "",
        "constructs/__init__.py": "",
        "constructs/provider.py": "",
        "constructs/handler_core/__init__.py": "",
        "constructs/handler_core/ledger.py": "",
        "constructs/handler_core/names.py": "",
        "constructs/t/__init__.py": "",
        "constructs/t/handler/__init__.py": "",
        "constructs/t/handler/decisions.py": "",
        "stacks/__init__.py": "",
        "stacks/network.py": "",
        "operate/__init__.py": "",
        "operate/status/__init__.py": "",
    }
    imports = _tree(tmp_path, {**skeleton, **files})
    assert violations(rule, imports) == expected
