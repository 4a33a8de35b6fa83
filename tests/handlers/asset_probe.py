"""What a custom-resource handler's Lambda asset holds, and that it imports on its own."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

# What the Lambda Python runtime has besides the standard library (boto3 and its
# dependencies; certifi, which botocore uses when it is installed); a handler may import
# these and nothing else outside its asset.
RUNTIME_PACKAGES = frozenset(
    {"boto3", "botocore", "certifi", "dateutil", "jmespath", "s3transfer", "six", "urllib3"}
)
PACKAGE = "novapod_lambda"


def expected_files(construct_root: Path) -> list[str]:
    """The asset's files: the handler package and the handler core beside it."""
    name = construct_root.name
    core = construct_root.parent / "handler_core"
    return sorted(
        [
            f"{PACKAGE}/__init__.py",
            f"{PACKAGE}/{name}/__init__.py",
            *(f"{PACKAGE}/{name}/handler/{p.name}" for p in construct_root.glob("handler/*.py")),
            *(f"{PACKAGE}/handler_core/{p.name}" for p in core.glob("*.py")),
        ]
    )


def imports_outside(stage: Path) -> list[str]:
    """Every import written in the asset's files (at the top or inside a function) that
    is neither the standard library, nor the runtime's packages, nor a module of the
    asset itself: `file: module`."""
    outside: list[str] = []
    for source in sorted(stage.rglob("*.py")):
        package = source.relative_to(stage).parent.parts
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [str(node.module)]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1]
                target = stage.joinpath(*base, *(node.module or "").split("."))
                names = [] if node.module else [alias.name for alias in node.names]
                found = [target] if node.module else [target / n for n in names]
                for path in found:
                    if not (path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()):
                        outside.append(
                            f"{source.relative_to(stage)}: {'.' * node.level}{path.name}"
                        )
                continue
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top != "__future__" and top not in sys.stdlib_module_names | RUNTIME_PACKAGES:
                    outside.append(f"{source.relative_to(stage)}: {module}")
    return outside


def assert_asset_imports_alone(construct_root: Path, entry_points: tuple[str, ...]) -> Path:
    """Lambda loads the handler from the asset root: no novapod, no aws_cdk there, only
    the handler package and the handler core beside it (provider.handler_code). Every
    import is the asset's own, the standard library's or the runtime's; importing the
    handler loads no module from anywhere else. Returns the staged directory."""
    from novapod.constructs.provider import _stage_with_core, core_handler_module

    stage = _stage_with_core(construct_root)
    shipped = sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())
    assert shipped == expected_files(construct_root)
    assert any(name.startswith(f"{PACKAGE}/handler_core/") for name in shipped)
    assert imports_outside(stage) == []
    module = core_handler_module(construct_root)
    assert module == f"{PACKAGE}.{construct_root.name}.handler.index"
    # Which file each module the import loaded came from, beyond the standard library's.
    probe = (
        "import importlib, json, sys, sysconfig\n"
        "before = set(sys.modules)\n"
        f"h = importlib.import_module({module!r})\n"
        f"assert all(callable(getattr(h, n)) for n in {list(entry_points)!r})\n"
        "stdlib = sysconfig.get_paths()['stdlib']\n"
        "print(json.dumps({n: m.__file__ for n, m in sys.modules.items() if n not in before"
        " and getattr(m, '__file__', None) and not m.__file__.startswith(stdlib)}))\n"
    )
    # No bytecode written into the stage: the asset is exactly its sources.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=stage, check=True, env=env, capture_output=True
    )
    loaded: dict[str, str] = json.loads(done.stdout)
    strays = {
        name: path
        for name, path in loaded.items()
        if not Path(path).resolve().is_relative_to(stage.resolve())
        and name.split(".")[0] not in RUNTIME_PACKAGES
        and name.split(".")[0] not in sys.stdlib_module_names
    }
    assert strays == {}, strays
    assert [n for n in loaded if n.split(".")[0] == PACKAGE and n != PACKAGE]
    assert not list(stage.rglob("__pycache__"))
    return stage
