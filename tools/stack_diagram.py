"""Write the architecture page's diagram from a synthesized cloud assembly, so that it
cannot drift from the code: the stacks, the order CloudFormation deploys them in, and
every value one stack reads from another.

`make docs` runs it before `mkdocs build` (the page includes the file it writes):

    .venv/bin/python tools/stack_diagram.py --out docs/generated/stacks.md
    .venv/bin/python tools/stack_diagram.py --assembly cdk.out --out FILE   # an existing synth

Without --assembly it synthesizes --config (default config/examples/nova-jobs.yaml, the
example with every stack) with `novapod.environment.create_app`, as `cdk synth` does.
What it reads from the assembly (manifest.json and the templates):

- a stack's dependencies (the manifest's `dependencies`, asset manifests left out);
- each `Fn::GetStackOutput` in a stack's template (the weak cross-stack references,
  docs/development.md): the producing stack and its output, whose value names the
  resource (`Ref`) or attribute (`Fn::GetAtt`) that crosses;
- each stack's template Description and termination protection.

A dependency without a value is an ordering only (e.g. wait for NAT routes), drawn dashed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = ROOT / "config" / "examples" / "nova-jobs.yaml"
# CDK's logical IDs end in 8 hex digits of the construct path's hash.
_HASH = re.compile(r"(?<=[A-Za-z0-9])[0-9A-F]{8}$")


@dataclass(frozen=True, order=True)
class Value:
    """One value a consumer stack reads from a producer stack."""

    consumer: str
    producer: str
    resource: str  # the producer's logical ID, hash suffix removed
    attribute: str  # "" for a Ref
    resource_type: str
    origin: str = ""  # the stack the producer itself read the value from, if it did


@dataclass
class Stack:
    name: str
    kind: str
    description: str
    termination_protection: bool
    dependencies: list[str] = field(default_factory=list)


@dataclass
class Assembly:
    stacks: dict[str, Stack]
    values: list[Value]

    def edges(self) -> Iterator[tuple[str, str, list[Value]]]:
        """(producer, consumer, values) for every dependency, in deploy order."""
        for stack in self.stacks.values():
            for producer in stack.dependencies:
                crossing = [
                    v for v in self.values if v.consumer == stack.name and v.producer == producer
                ]
                yield producer, stack.name, crossing


def _stack_outputs_read(node: Any) -> Iterator[dict[str, str]]:
    if isinstance(node, dict):
        if "Fn::GetStackOutput" in node:
            yield node["Fn::GetStackOutput"]
        for value in node.values():
            yield from _stack_outputs_read(value)
    elif isinstance(node, list):
        for value in node:
            yield from _stack_outputs_read(value)


def read_assembly(outdir: Path) -> Assembly:
    """Stacks, dependencies and cross-stack values of one synthesized assembly."""
    manifest = json.loads((outdir / "manifest.json").read_text(encoding="utf-8"))
    artifacts = manifest["artifacts"]
    names = [n for n, a in artifacts.items() if a["type"] == "aws:cloudformation:stack"]
    if not names:
        raise SystemExit(f"{outdir}: no CloudFormation stack in this cloud assembly.")
    prefix = _common_prefix(names)
    templates = {
        n: json.loads((outdir / artifacts[n]["properties"]["templateFile"]).read_text("utf-8"))
        for n in names
    }
    stacks = {}
    for name in names:
        artifact = artifacts[name]
        description = str(templates[name].get("Description", ""))
        stacks[name] = Stack(
            name=name,
            kind=name.removeprefix(prefix) or name,
            description=description.split(": ", 1)[-1],
            termination_protection=bool(artifact["properties"].get("terminationProtection")),
            dependencies=[d for d in artifact.get("dependencies", []) if d in artifacts and
                          artifacts[d]["type"] == "aws:cloudformation:stack"],
        )  # fmt: skip
    values = set()
    for consumer, template in templates.items():
        for ref in _stack_outputs_read(template):
            producer = ref["StackName"]
            if producer not in templates:
                raise SystemExit(f"{consumer} reads {producer}, which is not in {outdir}.")
            output = templates[producer].get("Outputs", {}).get(ref["OutputName"])
            if output is None:
                raise SystemExit(f"{consumer} reads output {ref['OutputName']} of {producer}, "
                                 "which that stack does not have.")  # fmt: skip
            values.add(_value(consumer, producer, output["Value"], templates))
    return Assembly(stacks, sorted(values))


def _value(
    consumer: str, producer: str, expression: Any, templates: dict[str, dict[str, Any]]
) -> Value:
    """What crosses: the resource or attribute an output's value names, followed back
    through a producer that passes on a value it read from a third stack."""
    origin = producer
    while isinstance(expression, dict) and "Fn::GetStackOutput" in expression:
        ref = expression["Fn::GetStackOutput"]
        origin = ref["StackName"]
        expression = templates[origin]["Outputs"][ref["OutputName"]]["Value"]
    if isinstance(expression, dict) and "Ref" in expression:
        logical_id, attribute = expression["Ref"], ""
    elif isinstance(expression, dict) and "Fn::GetAtt" in expression:
        logical_id, attribute = expression["Fn::GetAtt"][0], expression["Fn::GetAtt"][1]
    else:
        raise SystemExit(f"{producer} exports {expression!r} to {consumer}: not a Ref or GetAtt.")
    resources = templates[origin].get("Resources", {})
    kind = resources.get(logical_id, {}).get("Type", "parameter")
    return Value(
        consumer,
        producer,
        _HASH.sub("", logical_id),
        attribute,
        kind,
        origin if origin != producer else "",
    )


def _common_prefix(names: list[str]) -> str:
    """novapod-<env>- for novapod's stacks: the shared prefix, up to its last '-'."""
    if len(names) == 1:
        return names[0].rsplit("-", 1)[0] + "-" if "-" in names[0] else ""
    common = os.path.commonprefix(names)  # noqa: RUF071 - stack names, character by character
    return common[: common.rfind("-") + 1]


def _label(text: str) -> str:
    return text.replace('"', "#quot;")


def mermaid(assembly: Assembly) -> str:
    """A Mermaid flowchart: a node per stack, an edge per dependency (producer -> consumer)
    labelled with how many values cross it, dashed when none does."""
    ids = {name: f"s{index}" for index, name in enumerate(assembly.stacks)}
    lines = ["flowchart LR"]
    for name, stack in assembly.stacks.items():
        extra = "<br/>termination protection" if stack.termination_protection else ""
        text = f"{stack.kind}<br/><small>{stack.description}</small>{extra}"
        lines.append(f'  {ids[name]}["{_label(text)}"]')
    for producer, consumer, values in assembly.edges():
        if values:
            count = f"{len(values)} value{'s' if len(values) != 1 else ''}"
            lines.append(f'  {ids[producer]} -->|"{count}"| {ids[consumer]}')
        else:
            lines.append(f'  {ids[producer]} -.->|"order only"| {ids[consumer]}')
    return "\n".join(lines) + "\n"


def _describe(value: Value, kinds: dict[str, str]) -> str:
    short = value.resource_type.removeprefix("AWS::")
    name = f"{value.resource}.{value.attribute}" if value.attribute else value.resource
    passed_on = f", passed on from `{kinds[value.origin]}`" if value.origin else ""
    return f"`{name}` ({short}{passed_on})"


def render(assembly: Assembly, source: str) -> str:
    """The Markdown the architecture page includes: the diagram and a table of what
    crosses each edge."""
    kinds = {name: stack.kind for name, stack in assembly.stacks.items()}
    lines = [
        f"<!-- Generated by tools/stack_diagram.py from {source}; do not edit. -->",
        "",
        "```mermaid",
        mermaid(assembly).rstrip("\n"),
        "```",
        "",
        "| stack | deploys after | what it reads from there |",
        "|---|---|---|",
    ]
    for producer, consumer, values in assembly.edges():
        read = ", ".join(_describe(v, kinds) for v in values) or "nothing: an ordering only"
        lines.append(f"| `{kinds[consumer]}` | `{kinds[producer]}` | {read} |")
    return "\n".join(lines) + "\n"


def synthesize(config_path: Path, outdir: Path) -> None:
    from novapod.config import load_config  # noqa: PLC0415 - the CDK loads only here
    from novapod.environment import create_app  # noqa: PLC0415

    create_app(load_config(config_path), outdir=outdir).synth()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--assembly", type=Path, help="read this cloud assembly, no synth")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.assembly:
        text = render(read_assembly(args.assembly), f"the assembly in {args.assembly}")
    else:
        with tempfile.TemporaryDirectory(prefix="novapod-diagram-") as scratch:
            synthesize(args.config, Path(scratch))
            config = args.config.resolve()
            source = config.relative_to(ROOT) if config.is_relative_to(ROOT) else config
            text = render(read_assembly(Path(scratch)), f"a synth of {source}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
