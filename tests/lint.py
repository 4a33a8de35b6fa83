"""cfn-lint over a synthesized template, with the project's settings (.cfnlintrc.yaml)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from cfnlint.api import ManualArgs, lint

SETTINGS = yaml.safe_load((Path(__file__).resolve().parent.parent / ".cfnlintrc.yaml").read_text())


def lint_findings(
    template: dict[str, Any], region: str, *, also_ignore: tuple[str, ...] = ()
) -> list[str]:
    """Errors and warnings (informational hints do not gate) as readable lines."""
    matches = lint(
        json.dumps(template),
        config=ManualArgs(regions=[region], ignore_checks=SETTINGS["ignore_checks"]),
    )
    return [
        f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})"
        for m in matches
        if m.rule.id[0] in "EW" and m.rule.id not in also_ignore
    ]
