"""CDK's diff engine (@aws-cdk/cloudformation-diff), run by Node.js over template pairs.

The engine is the library behind `cdk diff`: it knows from the AWS service spec which
property changes replace a resource (yes / maybe), follows replacements through Ref and
GetAtt, and extracts IAM statement and security-group rule changes. novapod never keeps a
table of its own: `diff.js` (beside this file) asks the engine and prints JSON. The
package is pinned in package.json beside the CDK CLI and installed by `make setup`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from novapod.review.errors import ReviewError

SCRIPT = Path(__file__).resolve().parent / "diff.js"
PACKAGE = "@aws-cdk/cloudformation-diff"
# Loading the service spec and diffing a handful of stacks takes a second or two.
TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class EngineResult:
    version: str
    diffs: list[dict[str, Any]]  # one per pair, in order


def node_modules_dirs(*starts: Path) -> list[Path]:
    """node_modules folders holding the engine, nearest first, from each start upward."""
    found: list[Path] = []
    for start in starts:
        for folder in (start, *start.parents):
            candidate = folder / "node_modules"
            if (candidate / PACKAGE / "package.json").is_file() and candidate not in found:
                found.append(candidate)
    return found


def diff_templates(pairs: Sequence[tuple[Path | None, Path | None]]) -> EngineResult:
    """The engine's view of each (base template, head template) pair; None: no stack."""
    node = shutil.which("node")
    if node is None:
        raise ReviewError(
            "Node.js (20, 22 or 24) is needed on PATH to run CDK's diff engine; "
            "install it, then run make setup"
        )
    # The checkout's node_modules (make setup), else one above the working directory.
    modules = node_modules_dirs(Path(__file__).resolve().parent, Path.cwd())
    if not modules:
        raise ReviewError(
            f"CDK's diff engine ({PACKAGE}) is not installed: run make setup (npm ci) in "
            "the novapod checkout, or npm ci where its package.json is"
        )
    request = {
        "pairs": [
            {"base": str(base) if base else None, "head": str(head) if head else None}
            for base, head in pairs
        ]
    }
    environment = dict(os.environ, NODE_PATH=os.pathsep.join(str(m) for m in modules))
    try:
        done = subprocess.run(  # noqa: S603 - fixed argv: node and our own script
            [node, str(SCRIPT)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=environment,
            timeout=TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ReviewError(f"CDK's diff engine did not finish within {TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        detail = lines[-1] if lines else f"exit status {done.returncode}"
        raise ReviewError(f"CDK's diff engine failed: {detail}")
    try:
        output = json.loads(done.stdout)
        return EngineResult(version=str(output["engine"]), diffs=list(output["diffs"]))
    except (ValueError, KeyError, TypeError):
        raise ReviewError(
            "CDK's diff engine printed no report (diff.js output is not JSON)"
        ) from None
