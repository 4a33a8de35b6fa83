"""Static estimate of a deployment's critical path from synthesized templates.

Pure functions, no CDK and no AWS: the graph of each stack's resources (DependsOn,
Ref, Fn::GetAtt, Fn::Sub), stacks ordered by their dependencies (a stack starts when
every stack it depends on has completed, as `cdk deploy --all` runs them), one table
of estimated durations per resource type, and the longest path through it all.
Imported by benchmarks/deploy_critical_path.py and by tests; never by the package.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Seconds per resource type: ESTIMATES from typical CloudFormation create times, not
# measurements. They only need to be plausible relative to each other: the figure is
# the ratio of the longest path to the serial floor below.
DURATIONS: dict[str, float] = {
    "AWS::EKS::Cluster": 600,
    "AWS::EKS::Addon": 60,
    "AWS::EKS::AccessEntry": 5,
    "Custom::NovapodClusterBootstrap": 300,  # a CodeBuild build in the VPC: helm installs
    "Custom::NovapodTrainingPlan": 120,  # describe, search, buy or adopt, wait
    "AWS::SageMaker::Cluster": 900,
    # An estimate: creation takes long, its CloudFormation handler allows 95 min (schema
    # of AWS::SageMaker::MlflowTrackingServer, handlers.create.timeoutInMinutes).
    "AWS::SageMaker::MlflowTrackingServer": 1500,
    "AWS::Lambda::Function": 10,
    "AWS::IAM::Role": 15,
    "AWS::IAM::Policy": 15,
    "AWS::IAM::ManagedPolicy": 15,
    "AWS::StepFunctions::StateMachine": 10,
    "AWS::CodeBuild::Project": 10,
    "AWS::Logs::LogGroup": 2,
    "AWS::SSM::Parameter": 5,
    "AWS::KMS::Key": 45,
    "AWS::KMS::Alias": 2,
    "AWS::S3::Bucket": 25,
    "AWS::S3::BucketPolicy": 3,
    "AWS::FSx::FileSystem": 900,
    "AWS::EC2::VPC": 15,
    "AWS::EC2::Subnet": 5,
    "AWS::EC2::RouteTable": 3,
    "AWS::EC2::SubnetRouteTableAssociation": 3,
    "AWS::EC2::Route": 3,
    "AWS::EC2::InternetGateway": 10,
    "AWS::EC2::VPCGatewayAttachment": 15,
    "AWS::EC2::EIP": 5,
    "AWS::EC2::NatGateway": 120,
    "AWS::EC2::SecurityGroup": 5,
    "AWS::EC2::SecurityGroupIngress": 3,
    "AWS::EC2::SecurityGroupEgress": 3,
    "AWS::EC2::VPCEndpoint": 90,  # interface endpoints; gateway endpoints are quicker
    "AWS::EC2::FlowLog": 10,
}
DEFAULT_DURATION = 10.0  # any type not in the table
# The serial floor: what no arrangement of resources can avoid.
FLOOR_TYPES = (
    "AWS::EKS::Cluster",
    "AWS::EKS::Addon",
    "Custom::NovapodClusterBootstrap",
    "AWS::SageMaker::Cluster",
)
_SUB_NAME = re.compile(r"\$\{([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}")


@dataclass(frozen=True)
class StackTemplate:
    name: str
    template: Mapping[str, Any]
    depends_on: frozenset[str]  # names of stacks that must complete first


@dataclass(frozen=True)
class Step:
    stack: str
    logical_id: str
    type: str
    start: float
    finish: float


@dataclass(frozen=True)
class CriticalPath:
    total: float
    steps: tuple[Step, ...]

    def ratio(self, floor: float) -> float:
        return self.total / floor


def duration(type_: str, durations: Mapping[str, float] = DURATIONS) -> float:
    return durations.get(type_, DEFAULT_DURATION)


def floor(durations: Mapping[str, float] = DURATIONS) -> float:
    """EKS cluster -> one add-on -> bootstrap -> HyperPod cluster, back to back."""
    return sum(duration(t, durations) for t in FLOOR_TYPES)


def references(value: Any) -> set[str]:
    """Logical IDs a property value refers to (Ref, Fn::GetAtt, Fn::Sub)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                found.add(inner)
            elif key == "Fn::GetAtt":
                found.add(inner[0] if isinstance(inner, list) else str(inner).split(".")[0])
            elif key == "Fn::Sub":
                text = inner[0] if isinstance(inner, list) else inner
                local = inner[1] if isinstance(inner, list) and len(inner) > 1 else {}
                # ${Name} is a resource unless the Sub's own variable map defines it.
                found |= set(_SUB_NAME.findall(str(text))) - set(local)
                found |= references(local)
            else:
                found |= references(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= references(inner)
    return found


def resource_graph(template: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Logical ID -> the logical IDs of the same template it waits for."""
    resources: Mapping[str, Any] = template.get("Resources", {})
    graph: dict[str, frozenset[str]] = {}
    for logical_id, resource in resources.items():
        depends = resource.get("DependsOn", [])
        direct = set([depends] if isinstance(depends, str) else depends)
        direct |= references(resource.get("Properties", {}))
        graph[logical_id] = frozenset(d for d in direct if d in resources and d != logical_id)
    return graph


def ancestors(graph: Mapping[str, Iterable[str]], node: str) -> set[str]:
    """Everything `node` waits for, directly or transitively."""
    seen: set[str] = set()
    pending = list(graph.get(node, ()))
    while pending:
        current = pending.pop()
        if current not in seen:
            seen.add(current)
            pending.extend(graph.get(current, ()))
    return seen


def _stack_order(stacks: Mapping[str, StackTemplate]) -> list[str]:
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            raise ValueError(f"stack dependency cycle through {name}")
        visiting.add(name)
        for dependency in sorted(stacks[name].depends_on):
            if dependency in stacks:
                visit(dependency)
        visiting.discard(name)
        order.append(name)

    for name in sorted(stacks):
        visit(name)
    return order


def critical_path(
    stacks: Mapping[str, StackTemplate], durations: Mapping[str, float] = DURATIONS
) -> CriticalPath:
    """The longest chain of resources through all stacks, with start/finish times."""
    timing = _Timing(durations)
    for name in _stack_order(stacks):
        timing.add_stack(stacks[name], [d for d in stacks[name].depends_on if d in stacks])
    return timing.path()


class _Timing:
    """Earliest finish of every resource, and which predecessor decided it."""

    def __init__(self, durations: Mapping[str, float]) -> None:
        self.durations = durations
        self.finish: dict[tuple[str, str], float] = {}
        self.came_from: dict[tuple[str, str], tuple[str, str] | None] = {}
        self.types: dict[tuple[str, str], str] = {}
        self.stack_finish: dict[str, float] = {}
        self.stack_last: dict[str, tuple[str, str] | None] = {}

    def add_stack(self, stack: StackTemplate, depends_on: list[str]) -> None:
        start = max((self.stack_finish[d] for d in depends_on), default=0.0)
        entry = max(depends_on, key=lambda d: self.stack_finish[d]) if depends_on else None
        before_stack = self.stack_last[entry] if entry else None
        graph = resource_graph(stack.template)
        resources = stack.template.get("Resources", {})
        for logical_id in _topological(graph):
            key = (stack.name, logical_id)
            begin, before = start, before_stack
            for dependency in graph[logical_id]:
                if self.finish[(stack.name, dependency)] > begin:
                    begin, before = self.finish[(stack.name, dependency)], (stack.name, dependency)
            self.types[key] = resources[logical_id]["Type"]
            self.finish[key] = begin + duration(self.types[key], self.durations)
            self.came_from[key] = before
        ends = [(self.finish[(stack.name, r)], r) for r in graph]
        self.stack_finish[stack.name] = max((f for f, _ in ends), default=start)
        self.stack_last[stack.name] = (stack.name, max(ends)[1]) if ends else before_stack

    def path(self) -> CriticalPath:
        if not self.finish:
            return CriticalPath(0.0, ())
        tail: tuple[str, str] | None = max(self.finish, key=lambda k: self.finish[k])
        total = self.finish[tail]
        steps: list[Step] = []
        while tail is not None:
            end, type_ = self.finish[tail], self.types[tail]
            steps.append(Step(tail[0], tail[1], type_, end - duration(type_, self.durations), end))
            tail = self.came_from[tail]
        return CriticalPath(total=total, steps=tuple(reversed(steps)))


def _topological(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Logical IDs with every dependency before its dependents; refuses a cycle."""
    order: list[str] = []
    state: dict[str, bool] = {}  # False: on the current path, True: placed

    def visit(node: str) -> None:
        if state.get(node) is True:
            return
        if state.get(node) is False:
            raise ValueError(f"resource dependency cycle through {node}")
        state[node] = False
        for dependency in sorted(graph[node]):
            visit(dependency)
        state[node] = True
        order.append(node)

    for node in sorted(graph):
        visit(node)
    return order


def load_assembly(outdir: str | Path) -> dict[str, StackTemplate]:
    """The stacks of a cloud assembly (cdk.out): templates and stack dependencies."""
    outdir = Path(outdir)
    manifest = json.loads((outdir / "manifest.json").read_text(encoding="utf-8"))
    artifacts: Mapping[str, Any] = manifest.get("artifacts", {})
    stacks: dict[str, StackTemplate] = {}
    for artifact_id, artifact in artifacts.items():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        template_file = artifact["properties"]["templateFile"]
        template = json.loads((outdir / template_file).read_text(encoding="utf-8"))
        depends = {
            d
            for d in artifact.get("dependencies", [])
            if artifacts.get(d, {}).get("type") == "aws:cloudformation:stack"
        }
        stacks[artifact_id] = StackTemplate(artifact_id, template, frozenset(depends))
    return stacks
