"""Deploy critical path: a static estimate from the synthesized templates.

For each config with a HyperPod cluster (or the ones named), synthesize the app,
build the resource graph of every stack (benchmarks/critical_path.py), and report
the longest path through the stacks against the serial floor
EKS cluster -> add-on -> HyperPod dependencies bootstrap -> HyperPod cluster.
Durations are the estimates in critical_path.DURATIONS, not measurements.

    python benchmarks/deploy_critical_path.py [CONFIG ...] [--cdk-out DIR] [--steps]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from benchmarks.critical_path import (  # noqa: E402
    DURATIONS,
    FLOOR_TYPES,
    CriticalPath,
    critical_path,
    floor,
    load_assembly,
)
from novapod.config import load_config  # noqa: E402
from novapod.environment import create_app  # noqa: E402

TARGET = 1.08


def synthesize(config: Path, outdir: Path) -> Path:
    create_app(load_config(config), outdir=outdir).synth()
    return outdir


def with_hyperpod(configs: list[Path]) -> list[Path]:
    return [c for c in configs if "\nhyperpod:" in c.read_text(encoding="utf-8")]


def report(label: str, path: CriticalPath, steps: bool) -> float:
    ratio = path.ratio(floor())
    print(f"{label}: {path.total:.0f} s = {ratio:.3f} x the floor of {floor():.0f} s")
    if steps:
        for step in path.steps:
            print(
                f"    {step.start:6.0f} -> {step.finish:6.0f} s  {step.type:38} "
                f"{step.stack}/{step.logical_id}"
            )
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="*", type=Path)
    parser.add_argument("--cdk-out", type=Path, help="an existing cloud assembly instead")
    parser.add_argument("--steps", action="store_true", help="print each path's resources")
    args = parser.parse_args()
    print("floor: " + " -> ".join(f"{t} ({DURATIONS[t]:.0f} s)" for t in FLOOR_TYPES))
    ratios = []
    if args.cdk_out:
        ratios.append(report(str(args.cdk_out), critical_path(load_assembly(args.cdk_out)), True))
    else:
        configs = args.configs or with_hyperpod(
            sorted((ROOT / "config" / "examples").glob("*.yaml"))
        )
        with tempfile.TemporaryDirectory() as tmp:
            for config in configs:
                outdir = synthesize(config, Path(tmp) / config.stem)
                path = critical_path(load_assembly(outdir))
                ratios.append(report(config.name, path, args.steps))
    worst = max(ratios)
    verdict = "within" if worst <= TARGET else "above"
    print(f"worst: {worst:.3f} x the floor ({verdict} the target of {TARGET})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
