"""Mutation score per module from mutmut's results (`mutants/**/*.py.meta`).

Run by `make mutation` after `mutmut run`. Prints, for each mutated module, killed /
total and the percentage, then the purchase path combined (naming, the handler's
decisions and index), and lists the survivors by name so each is either killed by a
new test or listed in tests/mutation_equivalents.md with the reason it is equivalent.
Exit 1 when the purchase path is under the threshold.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

MUTANTS = Path("mutants")
EQUIVALENTS = Path("tests/mutation_equivalents.md")
# The acceptance bar of the purchase path (issue 8).
PURCHASE_PATH = (
    "novapod/capacity/naming.py",
    "novapod/constructs/training_plan/handler/decisions.py",
    "novapod/constructs/training_plan/handler/index.py",
)
THRESHOLD = 90.0
# mutmut's exit codes of a mutant's test run (mutmut/stats.py): a failing test (1) or a
# pytest internal error (3) kills it, and so do timeouts and crashes (the mutant broke
# the code); 0 is a survivor; 33/5 means no test covers the mutated function.
KILLED = {1, 3, -9, -11, 24, -24, 36, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}


def load(root: Path) -> dict[str, dict[str, int | None]]:
    """Module path -> {mutant name: exit code} for every file mutmut mutated."""
    modules: dict[str, dict[str, int | None]] = {}
    for meta in sorted(root.rglob("*.py.meta")):
        module = meta.relative_to(root).as_posix().removesuffix(".meta")
        modules[module] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return modules


def listed_equivalents(path: Path) -> set[str]:
    """Mutant names listed, with a reason, in tests/mutation_equivalents.md."""
    if not path.exists():
        return set()
    return set(re.findall(r"novapod\.[\w.\u01c1]+__mutmut_\d+", path.read_text(encoding="utf-8")))


def score(codes: list[int | None]) -> tuple[int, int]:
    """(killed, total) over the mutants that were run."""
    ran = [code for code in codes if code is not None]
    return sum(code in KILLED for code in ran), len(ran)


def percent(killed: int, total: int) -> float:
    return 100.0 * killed / total if total else 100.0


def main() -> int:
    modules = load(MUTANTS)
    if not modules:
        print("no mutmut results under mutants/: run `mutmut run` first", file=sys.stderr)
        return 2
    width = max(len("purchase path (naming, decisions, index)"), *(len(m) for m in modules))
    print(f"{'module':<{width}}  killed / total      %")
    survivors: list[tuple[str, int]] = []
    for module, codes in modules.items():
        killed, total = score(list(codes.values()))
        print(f"{module:<{width}}  {killed:>6} / {total:<5} {percent(killed, total):6.1f}")
        survivors += [(n, c) for n, c in codes.items() if c is not None and c not in KILLED]
    path_codes = [c for m in PURCHASE_PATH for c in modules.get(m, {}).values()]
    killed, total = score(path_codes)
    figure = percent(killed, total)
    label = "purchase path (naming, decisions, index)"
    print(f"{label:<{width}}  {killed:>6} / {total:<5} {figure:6.1f}")
    unchecked = sum(code is None for codes in modules.values() for code in codes.values())
    if unchecked:
        print(f"{unchecked} mutants not checked yet (an interrupted run): not counted above")
    equivalents = listed_equivalents(EQUIVALENTS)
    if survivors:
        print(f"\n{len(survivors)} not killed (`.venv/bin/mutmut show NAME` shows the diff;")
        print(f" 'equivalent' = listed with its reason in {EQUIVALENTS}):")
        for name, code in survivors:
            status = "no tests" if code in NO_TESTS else "survived"
            note = "equivalent" if name in equivalents else "to kill or list"
            print(f"  {name}  {status}, {note}")
    if figure < THRESHOLD:
        print(f"\npurchase path {figure:.1f} % killed, under {THRESHOLD:.0f} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
