"""How long `make test` takes here: the wall time of each step and the slowest tests.

    python benchmarks/suite_time.py [--cold] [--slowest N]

Runs what `make test` runs (ruff check, ruff format --check, mypy, pytest -n auto) one
after another and prints each step's wall time and the total, then pytest's N slowest
tests (default 20). --cold first empties .cache/ (synthesized configs and cfn-lint
findings), as on a fresh clone; without it the caches are used as a rerun finds them.
The goal is at most 180 s for the whole from a warm environment (issue 20). Not a test:
nothing here fails because it is slow.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
GOAL_SECONDS = 180


def step(name: str, argv: list[str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
    print(f"{name:<22} {seconds:7.1f} s  {status}", flush=True)
    return seconds, done.stdout + done.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cold",
        action="store_true",
        help="empty .cache/ (synthesized configs, lint findings) first",
    )
    parser.add_argument("--slowest", type=int, default=20)
    args = parser.parse_args(argv)
    if args.cold:  # as on a fresh clone: no synthesized configs, no lint findings
        shutil.rmtree(ROOT / ".cache", ignore_errors=True)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    total = 0.0
    for name, command in (
        ("ruff check", [str(BIN / "ruff"), "check", "."]),
        ("ruff format --check", [str(BIN / "ruff"), "format", "--check", "."]),
        ("mypy", [str(BIN / "mypy")]),
    ):
        seconds, _ = step(name, command)
        total += seconds
    seconds, output = step(
        "pytest -n auto",
        [str(BIN / "pytest"), "-q", "-n", "auto", f"--durations={args.slowest}"],
    )
    total += seconds
    print(f"{'total':<22} {total:7.1f} s  (goal {GOAL_SECONDS} s)")
    slowest = re.findall(r"^\s*[0-9.]+s (?:call|setup|teardown)\s+\S+$", output, re.MULTILINE)
    summary = re.findall(r"^=+ .*(?:passed|failed).* =+$|^\d+ (?:passed|failed).*$", output, re.M)
    print(f"\nslowest {args.slowest}:")
    for line in slowest[: args.slowest]:
        print(line)
    for failed in re.findall(r"^(?:FAILED|ERROR) .*$", output, re.MULTILINE):
        print(failed)
    print(summary[-1] if summary else "(no pytest summary)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
