"""The Compliance section of docs/security.md, generated from what synthesis records.

Every acknowledgement novapod makes (novapod/constructs/acknowledge.py) ends up in the
cloud assembly: cdk-nag's in each stack's metadata (`aws:cdk:acknowledged-rules`),
checkov's in the templates (`Metadata.checkov.skip`). This module reads them back from
the shipped configs' synthesized assemblies and renders one table row per reason, so the
documentation lists exactly what the code acknowledges and cannot drift from it
(tests/compliance/test_report.py compares the two).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from novapod.config import DEFAULT_CONFIG

PACKS = ("AwsSolutions", "NIST.800.53.R5", "HIPAA.Security")
ALL_PACKS = ["nist-800-53-r5", "hipaa"]
SECTION_TITLE = "## Compliance"


@dataclass(frozen=True, order=True)
class Acknowledged:
    """One acknowledged rule on one resource of one config's assembly: `stack` is the
    stack's kind (eks, ...)."""

    reason: str
    rule: str
    config: str
    stack: str
    where: str


def shipped_configs() -> list[Path]:
    """config/default.yaml and every example, the configs the documentation speaks for."""
    return [DEFAULT_CONFIG, *sorted((DEFAULT_CONFIG.parent / "examples").glob("*.yaml"))]


def synthesize(configs: Sequence[Path], out_dir: Path) -> list[tuple[Path, str]]:
    """Each config with both packs into out_dir/<stem>; (assembly, stack prefix) pairs.

    Synthesis fails, as `cdk synth` does, on any unacknowledged finding.
    """
    from novapod.config import load_config  # noqa: PLC0415 - the CDK loads only here
    from novapod.environment import create_app  # noqa: PLC0415

    out = []
    for path in configs:
        config = load_config(path).model_copy(update={"compliance": ALL_PACKS})
        assembly = out_dir / path.stem
        create_app(config, outdir=assembly).synth()
        out.append((assembly, f"{config.prefix}-"))
    return out


def acknowledgements(assembly: Path, prefix: str) -> list[Acknowledged]:
    """cdk-nag's and checkov's acknowledgements in one synthesized assembly."""
    found: list[Acknowledged] = []
    for metadata_file in sorted(assembly.glob("*.metadata.json")):
        for path, entries in json.loads(metadata_file.read_text(encoding="utf-8")).items():
            stack, _, where = path.strip("/").partition("/")
            for entry in entries:
                if entry["type"] != "aws:cdk:acknowledged-rules":
                    continue
                for rule, reason in entry["data"].items():
                    name = rule.split("::", 1)[-1]
                    if name.startswith(tuple(f"{p}-" for p in PACKS)):
                        kind = stack.removeprefix(prefix)
                        found.append(
                            Acknowledged(reason, _rule_name(name), assembly.name, kind, where)
                        )
    for template_file in sorted(assembly.glob("*.template.json")):
        kind = template_file.name.removesuffix(".template.json").removeprefix(prefix)
        template = json.loads(template_file.read_text(encoding="utf-8"))
        for logical_id, resource in template.get("Resources", {}).items():
            for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
                found.append(
                    Acknowledged(skip["comment"], skip["id"], assembly.name, kind, logical_id)
                )
    return found


def _rule_name(rule: str) -> str:
    """A rule without its finding (IAM5[Resource::...] -> IAM5): one row per reason."""
    return rule.split("[", 1)[0]


def render(found: Iterable[Acknowledged]) -> str:
    """The docs section: one row per reason, the rules it answers, where it applies."""
    by_reason: dict[str, set[Acknowledged]] = {}
    for entry in found:
        by_reason.setdefault(entry.reason, set()).add(entry)
    rows = []
    for reason, entries in by_reason.items():
        rules = sorted({e.rule for e in entries}, key=_rule_order)
        stacks = sorted({e.stack for e in entries})
        # Resources over all shipped configs: checkov's logical IDs where it has a rule
        # here, else cdk-nag's construct paths.
        checkov = {(e.config, e.stack, e.where) for e in entries if e.rule.startswith("CKV")}
        places = len(checkov or {(e.config, e.stack, e.where) for e in entries})
        rows.append((rules, reason, stacks, places))
    rows.sort(key=lambda r: (_rule_order(r[0][0]), r[1]))
    prose = [
        "`compliance: [nist-800-53-r5, hipaa]` in a config adds cdk-nag's NIST 800-53 rev 5 "
        "and HIPAA Security packs to synthesis, beside AWS Solutions: an unacknowledged "
        "finding fails `cdk synth`, and the templates are the same with or without them. "
        "`make compliance` runs checkov (pinned, in `.venv-compliance/`) over every shipped "
        "config's templates and fails on an unsuppressed finding; CI (`.ci/run`) runs it "
        "before `make test`, which it does not slow down. The tests synthesize every "
        "shipped config with both packs.",
        "What the packs and checkov found and novapod fixed: every CloudWatch log group "
        "(VPC flow logs, the EKS control plane, builds, functions, state machines) is "
        "encrypted with the environment's KMS key, whose policy lets CloudWatch Logs of "
        "this account and Region use it; so the capacity stack now deploys after the "
        "storage stack, and the VPC flow logs are built in the eks stack (the storage "
        "stack without eks). The handlers of the HyperPod dependencies bootstrap, the "
        "Bedrock import and the Nova check run in the private subnets with a security "
        "group of their own (HTTPS out, nothing in); `cdk destroy` of their stacks waits "
        "until Lambda has released their network interfaces, minutes more. Every function "
        "reserves one execution per custom resource it serves (at most 10): Lambda keeps "
        "100 of an account's concurrency unreserved, so an account whose Lambda quota is "
        "below 100 plus these reservations must raise it first. The pipeline app "
        "(`pipeline_app.py`) runs AWS Solutions only; check an environment against the "
        "packs with `make synth CONFIG=...` and `compliance` in its file.",
        "Each reason below is written once in the code (`novapod/constructs/acknowledge.py` "
        "maps it to every tool's rule) and sits on the resource it is about. This table is "
        "generated: `novapod compliance-report` prints it from the shipped configs, and a "
        "test fails when it differs from this section.",
    ]
    lines = [SECTION_TITLE, ""]
    for paragraph in prose:
        lines += [*textwrap.wrap(paragraph, width=88, break_on_hyphens=False), ""]
    lines += [
        "| rules | reason | stacks | resources in the shipped configs |",
        "|---|---|---|---|",
    ]
    for rules, reason, stacks, places in rows:
        lines.append(
            f"| {', '.join(f'`{r}`' for r in rules)} | {_cell(reason)} | "
            f"{', '.join(stacks)} | {places} |"
        )
    return "\n".join(lines) + "\n"


def _rule_order(rule: str) -> tuple[int, str]:
    for index, pack in enumerate(PACKS):
        if rule.startswith(pack):
            return (index, rule)
    return (len(PACKS), rule)  # checkov


def _cell(text: str) -> str:
    """A table cell on one line, with `|` escaped and `<` written as `&lt;`: a reason's
    `<name>` would otherwise be read as an HTML tag and vanish from the page."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")


def page_section(page: str) -> str:
    """The Compliance section of a docs page as it is: from its heading up to the next
    `## ` heading, trailing blank lines left out (so it reads as `render` writes it)."""
    start = page.index(f"\n{SECTION_TITLE}\n") + 1
    end = page.find("\n## ", start + len(SECTION_TITLE))
    return page[start : end if end != -1 else len(page)].rstrip("\n") + "\n"
