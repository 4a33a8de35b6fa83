"""A key written twice in one YAML mapping is refused, with both line numbers, in every
file novapod reads: config and pipeline files (ConfigError, exit status 2) and the files
shipped in the package (PackagedDataError: a packaging bug). yaml.safe_load kept the
last value silently, so a second `max_upfront_fee` line raised the fee cap unseen."""

from __future__ import annotations

import ast
import importlib.resources
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from novapod import pins, yamlsafe
from novapod.config import ConfigError, load_config, load_pipeline
from novapod.facts import eks_facts
from novapod.node_images import node_image_registries
from novapod.nova import bedrock as bedrock_facts
from novapod.nova import catalog as catalog_module
from novapod.pins import PinsError, load_pins
from tests.conftest import ROOT

EXAMPLES = ROOT / "config" / "examples"
CONNECTION = (
    "arn:aws:codeconnections:us-east-1:111122223333:connection/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
)

# A valid config (the approval matches what it buys), line for line as numbered below.
VALID = """\
name: dev
account: "111122223333"
region: us-east-1
network:
  vpc:
    cidr: 10.50.0.0/16
    zone_ids: [use1-az4, use1-az6]
capacity:
  training_plans:
    - name: rig
      instance_type: ml.p5.48xlarge
      instance_count: 4
      duration_hours: 144
      start_after: 2027-01-04T00:00:00Z
      end_before: 2027-02-28T00:00:00Z
      purchase:
        approve: novapod-dev-rig-31e61478
        max_upfront_fee: 6000
        currency: USD
"""
# Line 20: the cap raised a hundredfold below the reviewed line 18.
TWO_FEES = VALID + "        max_upfront_fee: 600000\n"
FEE_ISSUE = (
    "capacity.training_plans[0].purchase.max_upfront_fee",
    "duplicate key (lines 18 and 20); keep one",
)


def with_line(text: str, after: int, line: str) -> str:
    """`text` with `line` inserted after its line number `after` (1-based)."""
    lines = text.splitlines(keepends=True)
    lines.insert(after, line + "\n")
    return "".join(lines)


def write(tmp_path: Path, text: str, name: str = "dev.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def issues(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value.issues


def run(*command: str, context: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"NOVAPOD_CONFIG", "NOVAPOD_PIPELINE"}}
    if context is not None:
        env["CDK_CONTEXT_JSON"] = json.dumps(context)  # what `cdk -c` passes
    return subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, check=False, env=env, cwd=ROOT
    )


# --------------------------------------------------------------------- config files


def test_two_max_upfront_fee_lines_are_refused_with_both_lines(tmp_path) -> None:
    assert load_config(write(tmp_path, VALID)).capacity.training_plans[0].purchase is not None
    path = write(tmp_path, TWO_FEES, "two-fees.yaml")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.issues == [FEE_ISSUE]
    assert caught.value.render() == (
        f"{path}: capacity.training_plans[0].purchase.max_upfront_fee: "
        "duplicate key (lines 18 and 20); keep one"
    )


def test_validate_exits_2_on_a_duplicate_key_without_a_traceback(tmp_path) -> None:
    path = write(tmp_path, TWO_FEES)
    result = run("-m", "novapod.cli", "validate", str(path))
    assert result.returncode == 2
    assert result.stderr == (
        f"{path}: capacity.training_plans[0].purchase.max_upfront_fee: "
        "duplicate key (lines 18 and 20); keep one\n"
    )
    assert result.stdout == ""


def test_synthesis_exits_2_on_a_duplicate_key(tmp_path) -> None:
    path = write(tmp_path, TWO_FEES)
    result = run(str(ROOT / "app.py"), context={"config": str(path)})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"novapod: invalid configuration {path}:",
        f"{path}: capacity.training_plans[0].purchase.max_upfront_fee: "
        "duplicate key (lines 18 and 20); keep one",
    ]


def test_a_duplicate_in_a_nested_mapping(tmp_path) -> None:
    text = with_line(VALID, 7, "    cidr: 10.60.0.0/16")  # network.vpc, lines 6 and 8
    assert issues(write(tmp_path, text)) == [
        ("network.vpc.cidr", "duplicate key (lines 6 and 8); keep one")
    ]


def test_a_duplicate_in_a_list_item_names_its_index(tmp_path) -> None:
    second = (
        "    - name: spare\n"  # line 20
        "      instance_type: ml.p5.48xlarge\n"
        "      instance_count: 2\n"  # line 22
        "      duration_hours: 48\n"
        "      instance_count: 4\n"  # line 24
    )
    assert issues(write(tmp_path, VALID + second)) == [
        ("capacity.training_plans[1].instance_count", "duplicate key (lines 22 and 24); keep one")
    ]


def test_every_duplicate_is_reported_in_the_order_of_the_repeats(tmp_path) -> None:
    text = with_line(TWO_FEES, 3, "region: eu-west-1")  # line 4
    text = with_line(
        text, 1, "'name': prod"
    )  # line 2 (quoted, the same key): region 4, 5; fees 20, 22
    assert issues(write(tmp_path, text)) == [
        ("name", "duplicate key (lines 1 and 2); keep one"),
        ("region", "duplicate key (lines 4 and 5); keep one"),
        (
            "capacity.training_plans[0].purchase.max_upfront_fee",
            "duplicate key (lines 20 and 22); keep one",
        ),
    ]


def test_a_duplicate_in_a_flow_mapping_names_the_columns(tmp_path) -> None:
    text = VALID.replace(
        "    zone_ids: [use1-az4, use1-az6]\n",
        "    zone_ids: [use1-az4, use1-az6]\n    tags: {team: ml, team: platform}\n",
    )
    assert issues(write(tmp_path, text)) == [
        ("network.vpc.tags.team", "duplicate key (line 8, columns 12 and 22); keep one")
    ]


# --------------------------------------------------------------------- merge keys


def test_merge_keys_work_as_yaml_1_1_defines_them() -> None:
    text = """\
base: &base {a: 1, b: 1}
over: &over
  <<: *base
  a: 2                      # overrides the merged value: not a duplicate
merged: {<<: *over}         # over is {a: 2, b: 1}
listed: {<<: [*over, *base]}  # the first listed wins
"""
    over = {"a": 2, "b": 1}
    # PyYAML 6.0.4's safe_load gives base's a: 1 in merged and listed: it drops a merged
    # pair whose key is the same str object as an earlier one (one-letter keys are).
    assert yamlsafe.load(text) == {
        "base": {"a": 1, "b": 1},
        "over": over,
        "merged": over,
        "listed": over,
    }


def test_two_merge_keys_in_one_mapping_are_refused() -> None:
    text = "a: &a {x: 1}\nb: &b {y: 2}\nc:\n  <<: *a\n  <<: *b\n"
    with pytest.raises(yamlsafe.DuplicateKeyError) as caught:
        yamlsafe.load(text)
    assert caught.value.issues == [
        (
            "c.<<",
            "duplicate merge key (lines 4 and 5); merge several mappings with one key: "
            "<<: [*first, *second]",
        )
    ]


def test_a_duplicate_inside_a_merged_anchor_is_refused_once() -> None:
    text = "base: &base\n  x: 1\n  x: 2\none: {<<: *base}\ntwo: {<<: *base}\n"
    with pytest.raises(yamlsafe.DuplicateKeyError) as caught:
        yamlsafe.load(text)
    assert caught.value.issues == [("base.x", "duplicate key (lines 2 and 3); keep one")]


# --------------------------------------------------------------------- pipeline files


def pipeline_text(environment: Path) -> str:
    return f"""\
pipeline:
  name: novapod
  account: "111122223333"
  region: us-east-1
  source:
    connection_arn: {CONNECTION}
    repository: my-org/novapod-environments
    branch: main
    branch: release
  environments:
    - config: {environment}
"""


PIPELINE_ISSUE = ("pipeline.source.branch", "duplicate key (lines 8 and 9); keep one")


def test_a_pipeline_file_with_a_duplicate_key_is_refused(tmp_path) -> None:
    path = write(tmp_path, pipeline_text(EXAMPLES / "rig-plus-standard.yaml"), "pipeline.yaml")
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path)
    assert caught.value.issues == [PIPELINE_ISSUE]
    assert caught.value.source == str(path)
    result = run("-m", "novapod.cli", "validate", str(path))
    assert result.returncode == 2
    assert result.stderr == f"{path}: pipeline.source.branch: {PIPELINE_ISSUE[1]}\n"


def test_pipeline_app_exits_2_on_a_duplicate_key(tmp_path) -> None:
    path = write(tmp_path, pipeline_text(EXAMPLES / "rig-plus-standard.yaml"), "pipeline.yaml")
    result = run(str(ROOT / "pipeline_app.py"), context={"pipeline": str(path)})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [
        f"novapod-pipeline: invalid pipeline configuration {path}:",
        f"{path}: pipeline.source.branch: {PIPELINE_ISSUE[1]}",
    ]


def test_a_duplicate_in_an_environment_file_of_a_pipeline_names_that_file(tmp_path) -> None:
    environment = write(tmp_path, TWO_FEES)
    text = pipeline_text(environment).replace("    branch: release\n", "")
    with pytest.raises(ConfigError) as caught:
        load_pipeline(write(tmp_path, text, "pipeline.yaml"))
    assert caught.value.source == str(environment)
    assert caught.value.issues == [FEE_ISSUE]


# --------------------------------------------------------------------- other files


def test_a_pins_file_with_a_duplicate_key_is_refused(tmp_path) -> None:
    shipped = (ROOT / "novapod" / pins.DATA_FILE).read_text(encoding="utf-8")
    lines = shipped.count("\n")
    path = write(tmp_path, shipped + "repository: https://example.com/fork.git\n", "pins.yaml")
    first = next(
        n for n, line in enumerate(shipped.splitlines(), 1) if line.startswith("repository:")
    )
    with pytest.raises(PinsError) as caught:
        load_pins(path)
    assert str(caught.value) == (
        f"{path}: repository: duplicate key (lines {first} and {lines + 1}); keep one"
    )


PACKAGED = sorted(
    path for path in (ROOT / "novapod").rglob("*") if path.suffix in {".yaml", ".yml"}
)


def test_the_packaged_yaml_files_are_the_known_ones() -> None:
    assert {str(p.relative_to(ROOT)) for p in PACKAGED} >= {
        "novapod/data/eks.yaml",
        "novapod/data/hyperpod_dependencies.yaml",
        "novapod/data/node_images.yaml",
        "novapod/nova/catalog.yaml",
    }


@pytest.mark.parametrize("path", PACKAGED, ids=lambda p: str(p.relative_to(ROOT / "novapod")))
def test_every_packaged_yaml_file_loads_through_the_strict_loader(path: Path) -> None:
    """A duplicate key added to a shipped file later fails here, by name and lines; and
    libyaml's parser, which load_packaged reads these files with, builds exactly what the
    pure-Python one does."""
    text = path.read_text(encoding="utf-8")
    strict = yamlsafe.load(text)
    assert strict is not None
    assert yaml.CSafeLoader is yamlsafe._PackagedLoader.__mro__[2]  # libyaml is there
    assert yaml.load(text, Loader=yamlsafe._PackagedLoader) == strict


class _WithExtraLine:
    """importlib.resources' Traversable of the package, one file with a line appended."""

    def __init__(self, real: Any, target: str, extra: str) -> None:
        self.real, self.target, self.extra = real, target, extra

    def joinpath(self, *names: str) -> _WithExtraLine:
        return _WithExtraLine(self.real.joinpath(*names), self.target, self.extra)

    __truediv__ = joinpath

    def read_text(self, encoding: str = "utf-8") -> str:
        text: str = self.real.read_text(encoding=encoding)
        if Path(str(self.real)).as_posix().endswith(self.target):
            return text + self.extra
        return text


@pytest.mark.parametrize(
    ("load", "relative"),
    [
        (eks_facts, "novapod/data/eks.yaml"),
        (node_image_registries, "novapod/data/node_images.yaml"),
        (pins.default_pins, "novapod/data/hyperpod_dependencies.yaml"),
        (catalog_module.catalog, "novapod/nova/catalog.yaml"),
        (bedrock_facts.on_demand, "novapod/data/bedrock.yaml"),
    ],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_a_duplicate_in_a_packaged_file_is_a_packaging_error(
    load: Callable[[], Any], relative: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = (ROOT / relative).read_text(encoding="utf-8")
    first, key = next(
        (n, line.split(":")[0])
        for n, line in enumerate(shipped.splitlines(), 1)
        if line[:1].isalpha() and ":" in line
    )
    real = importlib.resources.files
    monkeypatch.setattr(
        importlib.resources,
        "files",
        lambda package: _WithExtraLine(real(package), relative, f"{key}: again\n"),
    )
    load.cache_clear()
    try:
        with pytest.raises(yamlsafe.PackagedDataError) as caught:
            load()
    finally:
        monkeypatch.undo()
        load.cache_clear()
    assert str(caught.value) == (
        f"{relative}: {key}: duplicate key (lines {first} and {shipped.count(chr(10)) + 1}); "
        "keep one (a file shipped in the novapod package: a packaging bug, not a problem "
        "with your configuration)"
    )


# --------------------------------------------------------------------- one loader

SOURCES = sorted(
    [
        *(ROOT / "novapod").rglob("*.py"),
        ROOT / "app.py",
        ROOT / "pipeline_app.py",
        *(ROOT / ".github" / "scripts").glob("*.py"),
    ]
)
THE_LOADER = ROOT / "novapod" / "yamlsafe.py"


def yaml_loads(source: str) -> list[str]:
    """Where `source` reaches one of PyYAML's loaders (load, safe_load, safe_load_all,
    full_load, SafeLoader, CSafeLoader, ...): `line N: yaml.safe_load`."""
    tree = ast.parse(source)
    names = set()  # what `import yaml` (as ...) binds
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name == "yaml"}
            names |= {a.name.split(".")[0] for a in node.names if a.name.startswith("yaml.")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "yaml":
            found += [
                f"line {node.lineno}: from {node.module} import {a.name}"
                for a in node.names
                if "load" in a.name.lower() or a.name == "*"
            ]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in names
            and "load" in node.attr.lower()
        ):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return sorted(found)


def test_the_scanner_sees_pyyaml_loaders() -> None:
    assert yaml_loads("import yaml as y\ny.safe_load(t)\nyaml.safe_load(t)\n") == [
        "line 2: y.safe_load"
    ]
    assert yaml_loads("from yaml import safe_load_all, safe_dump\n") == [
        "line 1: from yaml import safe_load_all"
    ]
    assert yaml_loads("import yaml\nyaml.load(t, Loader=yaml.CSafeLoader)\n") == [
        "line 2: yaml.CSafeLoader",
        "line 2: yaml.load",
    ]
    assert yaml_loads(THE_LOADER.read_text(encoding="utf-8"))  # it is the one that does


def test_no_module_but_the_strict_loader_calls_pyyaml_loaders() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in SOURCES
        if path != THE_LOADER and (hits := yaml_loads(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "read YAML with novapod.yamlsafe.load or load_packaged"
