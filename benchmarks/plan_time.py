"""Measure the capacity planner (not a test): 50 jobs across 5 training plans.

The job sets are drawn with fixed seeds (so every machine times the same work): ten
jobs per plan from the documented p5 rows, 2 to 48 hours, one to three runs, and about a
third waiting for an earlier job of their plan. Each set is planned in a fresh Python
process, as `cdk synth` and `novapod plan` do, so the figure includes loading the solver
when a plan needs it. Usage: `make bench` or `python benchmarks/plan_time.py [-n 5]`.
Target: planning under 2 s on 2 cores; the split advice (`novapod plan` only) is timed
beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_RUN = """
import json, random, sys, time
from novapod.capacity import Workload, plan_capacity, split_advice

ROWS = [
    ("micro", "cpt"), ("lite", "cpt"), ("pro", "cpt"),
    ("micro", "sft-lora"), ("lite", "sft-full"), ("pro", "sft-lora"),
    ("micro", "dpo-full"), ("lite", "dpo-lora"), ("pro", "dpo-full"),
    ("micro", "evaluation"), ("lite", "evaluation"), ("pro", "evaluation"),
    ("micro", "ppo"), ("lite", "ppo"), ("pro", "ppo"),
]
rng = random.Random(int(sys.argv[1]))
workloads = []
for p in range(5):
    names = []
    for j in range(10):
        model, technique = rng.choice(ROWS)
        name = f"p{p}-j{j}"
        after = (rng.choice(names),) if names and rng.random() < 0.35 else ()
        workloads.append(
            Workload(
                name, model, technique,
                runs=rng.randint(1, 3),
                hours_per_run=None if technique == "ppo" else rng.randint(2, 48),
                plan=f"plan-{p}",
                after=after,
            )
        )
        names.append(name)
start = time.perf_counter()
plan = plan_capacity(workloads)
planned = time.perf_counter() - start
advice = split_advice(plan)
advised = time.perf_counter() - start - planned
required = sum(r.required_instance_hours for r in plan.training_plans)
reserved = sum(r.reserved_instance_hours for r in plan.training_plans)
proven = sum(r.lower_bound_instance_hours == r.reserved_instance_hours for r in plan.training_plans)
print(json.dumps({
    "plan": planned, "advice": advised, "ratio": reserved / required, "proven": proven,
    "solver": "ortools" in sys.modules, "splits": len(advice),
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", "--sets", type=int, default=5, help="job sets (seeds 1..n)")
    args = parser.parse_args()
    rows = []
    for seed in range(1, args.sets + 1):
        result = subprocess.run(
            [sys.executable, "-c", _RUN, str(seed)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(result.stdout))
    print("set  plan s  advice s  reserved/required  proven plans  solver loaded  splits")
    for seed, row in enumerate(rows, start=1):
        print(
            f"{seed:3}  {row['plan']:6.3f}  {row['advice']:8.3f}  {row['ratio']:17.2f}  "
            f"{row['proven']:8}/5  {'yes' if row['solver'] else 'no':>13}  {row['splits']:6}"
        )
    times = [row["plan"] for row in rows]
    print(
        f"50 jobs across 5 plans: median {statistics.median(times):.3f} s, "
        f"max {max(times):.3f} s to plan (target < 2 s, 2 cores)"
    )


if __name__ == "__main__":
    main()
