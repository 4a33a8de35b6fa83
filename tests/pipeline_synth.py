"""The example pipeline (config/pipeline.example.yaml) synthesized once per test session,
shared by the stack tests and the post-deploy check's tests."""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests import synth_cache
from tests.conftest import ROOT, SYNTH_SETTINGS

PIPELINE_EXAMPLE = ROOT / "config" / "pipeline.example.yaml"
PIPELINE_FILE = "config/pipeline.example.yaml"


@dataclass(frozen=True)
class SynthesizedPipeline:
    template: dict[str, Any]  # the pipeline stack's
    stages: dict[str, dict[str, dict[str, Any]]]  # stage -> stack name -> template
    outdir: Path

    @property
    def pipeline(self) -> dict[str, Any]:
        (resource,) = [
            r for r in self.template["Resources"].values()
            if r["Type"] == "AWS::CodePipeline::Pipeline"
        ]  # fmt: skip
        return resource["Properties"]

    def actions(self, stage: str) -> list[dict[str, Any]]:
        (found,) = [s for s in self.pipeline["Stages"] if s["Name"] == stage]
        return list(found["Actions"])

    def project(self, action: dict[str, Any]) -> dict[str, Any]:
        """The CodeBuild project a CodeBuild action runs."""
        return self.template["Resources"][action["Configuration"]["ProjectName"]["Ref"]]

    def buildspec(self, action: dict[str, Any]) -> dict[str, Any]:
        spec = self.project(action)["Properties"]["Source"]["BuildSpec"]
        assert isinstance(spec, str), spec  # no tokens in these build specs
        if spec.endswith(".yaml"):  # large ones are files beside the template (an asset)
            loaded: dict[str, Any] = yaml.safe_load((self.outdir / spec).read_text())
            return loaded
        loaded = json.loads(spec)
        return loaded

    def role_of(self, action: dict[str, Any]) -> str:
        """Logical ID of the project's service role."""
        role: str = self.project(action)["Properties"]["ServiceRole"]["Fn::GetAtt"][0]
        return role

    def statements_on(self, resource: str) -> dict[str, list[dict[str, Any]]]:
        """Role logical ID -> the statements of its policies whose Resource is `resource`."""
        found: dict[str, list[dict[str, Any]]] = {}
        for policy in self.template["Resources"].values():
            if policy["Type"] != "AWS::IAM::Policy":
                continue
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if statement["Resource"] in (resource, [resource]):
                    for role in policy["Properties"]["Roles"]:
                        found.setdefault(role["Ref"], []).append(statement)
        return found


@cache
def synthesize_pipeline() -> SynthesizedPipeline:
    """The example pipeline, from the disk cache of tests/synth_cache.py. The pipeline file
    names environment files, so every file under config/ is part of the entry's key."""
    if not synth_cache.enabled():
        return synthesize_pipeline_file(PIPELINE_EXAMPLE, PIPELINE_FILE)
    digest = hashlib.sha256()
    for path in sorted((ROOT / "config").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    settings = f"pipeline={PIPELINE_FILE};config={digest.hexdigest()};{SYNTH_SETTINGS}"

    def synthesize(outdir: Path) -> dict[str, Any]:
        made = _synthesize_pipeline_into(PIPELINE_EXAMPLE, PIPELINE_FILE, outdir)
        return {"template": made.template, "stages": made.stages}

    result, assembly = synth_cache.cached(PIPELINE_EXAMPLE, settings, synthesize)
    return SynthesizedPipeline(result["template"], result["stages"], assembly)


def synthesize_pipeline_file(path: Path, pipeline_file: str) -> SynthesizedPipeline:
    """Another pipeline file, synthesized on each call."""
    return _synthesize_pipeline_into(
        path, pipeline_file, Path(tempfile.mkdtemp(prefix="novapod-pipeline-"))
    )


def _synthesize_pipeline_into(path: Path, pipeline_file: str, outdir: Path) -> SynthesizedPipeline:
    from novapod.config import load_pipeline
    from novapod.stacks.pipeline import create_pipeline_app

    app, stack = create_pipeline_app(
        load_pipeline(path), pipeline_file=pipeline_file, outdir=outdir
    )
    assembly = app.synth()
    stages: dict[str, dict[str, dict[str, Any]]] = {}
    for name, stage in stack.stages.items():
        nested = assembly.get_nested_assembly(stage.artifact_id)
        stages[name] = {s.stack_name: s.template for s in nested.stacks}
    template = assembly.get_stack_by_name(stack.stack_name).template
    return SynthesizedPipeline(template, stages, outdir)
