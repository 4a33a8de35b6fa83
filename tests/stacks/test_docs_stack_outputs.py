"""Every stack output the docs read (`--stack-name novapod-nova-jobs-KIND ... OutputKey=='X'`)
is an output of that stack in the synthesized config/examples/nova-jobs.yaml."""

from __future__ import annotations

import re

from tests.conftest import ROOT

NOVA_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"
READ = re.compile(
    r"--stack-name novapod-nova-jobs-(?P<kind>[a-z-]+?) .*?OutputKey=='(?P<output>\w+)'",
    re.S,
)


def test_every_stack_output_the_docs_read_exists(synth) -> None:
    templates = synth(NOVA_JOBS).templates
    found = [
        (page.name, m["kind"], m["output"])
        for page in sorted((ROOT / "docs").glob("*.md"))
        for m in READ.finditer(page.read_text(encoding="utf-8"))
    ]
    assert len(found) >= 4
    missing = [f for f in found if f[2] not in templates[f[1]].get("Outputs", {})]
    assert missing == []
