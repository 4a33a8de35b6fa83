"""Shared fixtures: each config is synthesized once per source digest (tests/synth_cache.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests import synth_cache

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = ROOT / "config" / "default.yaml"
EXAMPLES = sorted((ROOT / "config" / "examples").glob("*.yaml"))
ALL_CONFIGS = [DEFAULT_CONFIG, *EXAMPLES]
# Every config is synthesized with both opt-in cdk-nag packs (its templates are the same
# without them: tests/compliance/test_packs.py), so each test session proves that every
# example passes them, at no extra synthesis.
COMPLIANCE_PACKS = ["nist-800-53-r5", "hipaa"]
# "Now" for validating the shipped configs, in this process and every subprocess (CLI,
# CDK CLI): their plan windows are in early 2027 and must not expire under the tests.
VALIDATION_TIME = datetime(2026, 11, 30, tzinfo=UTC)
os.environ["NOVAPOD_VALIDATE_AS_OF"] = VALIDATION_TIME.isoformat()


@dataclass(frozen=True)
class Synthesized:
    """Templates (as dicts) of one synthesized config, keyed by stack kind."""

    config_path: Path
    templates: dict[str, dict]  # "network" -> template
    stack_names: dict[str, str]
    termination_protection: dict[str, bool]
    dependencies: dict[str, set[str]]  # stack kind -> kinds it depends on
    outdir: Path

    def template(self, kind: str):  # -> aws_cdk.assertions.Template
        from aws_cdk.assertions import Template

        return Template.from_json(self.templates[kind])


def resources(template: dict, type_: str) -> dict[str, dict]:
    """Logical ID -> resource of one CloudFormation type."""
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def _synthesize_into(path: str, outdir: str) -> dict[str, Any]:
    """Synthesize one config into outdir; the JSON-able parts of its Synthesized."""
    from novapod.config import load_config
    from novapod.environment import create_app

    config = load_config(path).model_copy(update={"compliance": COMPLIANCE_PACKS})
    assembly = create_app(config, outdir=outdir).synth()
    templates: dict[str, dict] = {}
    names: dict[str, str] = {}
    protection: dict[str, bool] = {}
    dependencies: dict[str, list[str]] = {}

    def kind_of(artifact_id: str) -> str:
        return artifact_id.removeprefix(f"{config.prefix}-")

    for stack in assembly.stacks:
        kind = kind_of(stack.stack_name)
        templates[kind] = stack.template
        names[kind] = stack.stack_name
        protection[kind] = bool(stack.termination_protection)
        dependencies[kind] = sorted(
            kind_of(d.id)
            for d in stack.dependencies
            if d.id.startswith(config.prefix) and not d.id.endswith(".assets")
        )
    return {
        "templates": templates,
        "stack_names": names,
        "termination_protection": protection,
        "dependencies": dependencies,
    }


# What besides the sources and the config changes a synthesized template (the cache key).
SYNTH_SETTINGS = f"packs={','.join(COMPLIANCE_PACKS)};as_of={VALIDATION_TIME.isoformat()}"


@cache
def _synthesize(path: str, outdir: str) -> Synthesized:
    if synth_cache.enabled():
        result, assembly = synth_cache.cached(
            Path(path), SYNTH_SETTINGS, lambda out: _synthesize_into(path, str(out))
        )
    else:
        result, assembly = _synthesize_into(path, outdir), Path(outdir)
    return Synthesized(
        Path(path),
        result["templates"],
        result["stack_names"],
        result["termination_protection"],
        {kind: set(kinds) for kind, kinds in result["dependencies"].items()},
        assembly,
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    if synth_cache.enabled():
        synth_cache.prune(synth_cache.cache_root(), synth_cache.source_digest())


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Synthesized]:
    """synth(path) -> Synthesized, made once per source digest and config and shared by
    every worker and rerun (tests/synth_cache.py); cdk-nag runs during synthesis. The
    assembly folder (`outdir`) is shared: copy it before changing anything in it."""
    base = tmp_path_factory.mktemp("cdk")

    def run(path: Path) -> Synthesized:
        return _synthesize(str(path), str(base / Path(path).stem))

    return run


def producer_value(result: Synthesized, value: dict) -> object:
    """What a cross-stack reference points at: the producing stack's output value."""
    reference = value["Fn::GetStackOutput"]
    kind = next(k for k, n in result.stack_names.items() if n == reference["StackName"])
    return result.templates[kind]["Outputs"][reference["OutputName"]]["Value"]


def joined(value: object, result: Synthesized | None = None) -> str:
    """A string or Fn::Join rendered as text, intrinsics as ${Ref} / ${Id.Attr}.

    With `result`, cross-stack references render as what they point at.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::GetStackOutput" in value and result is not None:
        return joined(producer_value(result, value), result)
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(joined(p, result) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + value["Ref"] + "}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    raise AssertionError(f"cannot render {value!r}")
