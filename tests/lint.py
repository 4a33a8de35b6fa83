"""cfn-lint over a synthesized template, with the project's settings (.cfnlintrc.yaml).

cfn-lint costs about a second per template, and a template changes far less often than
the sources that synthesize it (an edit of the CLI, a handler or a test leaves every
template byte-identical). Its findings are therefore cached on disk by what decides
them: the template's JSON, the region, the project's settings and cfn-lint's version
(its rules and resource schemas ship with it). A changed template, setting or version is
a miss; nothing stale is served. NOVAPOD_LINT_CACHE=0 turns the cache off;
NOVAPOD_LINT_CACHE_DIR moves it (default: .cache/cfnlint in the checkout).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = yaml.safe_load((ROOT / ".cfnlintrc.yaml").read_text())


def cache_dir() -> Path | None:
    if os.environ.get("NOVAPOD_LINT_CACHE", "1") == "0":
        return None
    return Path(os.environ.get("NOVAPOD_LINT_CACHE_DIR", ROOT / ".cache" / "cfnlint"))


def lint_key(template: dict[str, Any], region: str) -> str:
    digest = hashlib.sha256()
    digest.update(f"cfn-lint=={metadata.version('cfn-lint')}\0{region}\0".encode())
    digest.update(json.dumps(SETTINGS, sort_keys=True).encode() + b"\0")
    digest.update(json.dumps(template, sort_keys=True).encode())
    return digest.hexdigest()[:32]


def _lint(template: dict[str, Any], region: str) -> list[list[str]]:
    """[rule id, readable line] of every match, informational ones included."""
    from cfnlint.api import ManualArgs, lint

    matches = lint(
        json.dumps(template),
        config=ManualArgs(regions=[region], ignore_checks=SETTINGS["ignore_checks"]),
    )
    return [[m.rule.id, f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})"] for m in matches]


def _cached_lint(template: dict[str, Any], region: str) -> list[list[str]]:
    root = cache_dir()
    if root is None:
        return _lint(template, region)
    entry = root / f"{lint_key(template, region)}.json"
    if entry.is_file():
        return json.loads(entry.read_text())
    matches = _lint(template, region)
    root.mkdir(parents=True, exist_ok=True)
    # Published by rename: a reader sees a whole entry or none (workers race harmlessly,
    # both write the same findings).
    handle, staging = tempfile.mkstemp(prefix=".", suffix=".json", dir=root)
    with os.fdopen(handle, "w") as out:
        json.dump(matches, out)
    os.replace(staging, entry)
    return matches


def lint_findings(
    template: dict[str, Any], region: str, *, also_ignore: tuple[str, ...] = ()
) -> list[str]:
    """Errors and warnings (informational hints do not gate) as readable lines."""
    return [
        line
        for rule, line in _cached_lint(template, region)
        if rule[0] in "EW" and rule not in also_ignore
    ]
