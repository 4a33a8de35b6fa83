"""The example pipeline (config/pipeline.example.yaml) synthesized once per test session,
shared by the stack tests and the post-deploy check's tests."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT

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
    return synthesize_pipeline_file(PIPELINE_EXAMPLE, PIPELINE_FILE)


def synthesize_pipeline_file(path: Path, pipeline_file: str) -> SynthesizedPipeline:
    """Another pipeline file, synthesized on each call."""
    from novapod.config import load_pipeline
    from novapod.stacks.pipeline import create_pipeline_app

    outdir = Path(tempfile.mkdtemp(prefix="novapod-pipeline-"))
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
