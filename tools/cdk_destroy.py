"""`make destroy`: `cdk destroy --exclusively` of the named stacks of one config, after
checking that each name selects one of its stacks.

The CDK CLI alone synthesizes the config app.py picks (-c config=FILE, else
$NOVAPOD_CONFIG, else config/default.yaml) and, for a name that config does not define,
prints "No stacks match the name(s)" and exits 0, as if it had destroyed something.
This synthesizes CONFIG once into --output, asks the CLI which of its stacks each name
selects (`cdk ls`: the same matching as `cdk destroy`, names or wildcards), stops with
exit 2 and one sentence when one selects none, and else runs `cdk destroy` of that
assembly, which asks before it deletes anything. Run from the checkout (cdk.json).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

CDK = ("npx", "--no-install", "cdk")
EXIT_INVALID = 2
# Not cdk.out: that is make synth's and the review's, for whichever config they built.
ASSEMBLY = "cdk.out.destroy"


def synth_environment(config: str, now: datetime | None = None) -> dict[str, str]:
    """The environment of the synthesis: this one, and where the config's plan windows
    have ended (as they usually have when an environment is destroyed, and validation
    refuses a window that has ended), NOVAPOD_VALIDATE_AS_OF at the time
    `novapod destroy-plan` gives its cdk commands. A config that does not load is left
    to the synthesis to report."""
    from novapod.config import ConfigError  # noqa: PLC0415 - only make destroy needs it
    from novapod.config.loading import VALIDATE_AS_OF_ENV  # noqa: PLC0415
    from novapod.operate import destroy  # noqa: PLC0415

    env = dict(os.environ)
    if env.get(VALIDATE_AS_OF_ENV):
        return env
    try:
        as_of = destroy.validate_as_of(destroy.load(config), now or datetime.now(UTC))
    except ConfigError:
        return env
    if as_of:
        env[VALIDATE_AS_OF_ENV] = as_of
        print(
            f"make destroy: the plan windows of {config} have ended; it is synthesized as "
            f"of {as_of} ({VALIDATE_AS_OF_ENV})",
            file=sys.stderr,
        )
    return env


def stacks_selected(assembly: Path, *names: str) -> list[str]:
    """The stacks of `assembly` that `names` select (all of them without names)."""
    done = subprocess.run(
        [*CDK, "ls", "--app", str(assembly), *names],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(done.returncode)
    return done.stdout.split()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make destroy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="the environment file (CONFIG=)")
    parser.add_argument("--output", default=ASSEMBLY, help="where to synthesize it")
    parser.add_argument("stacks", nargs="*", help="the stacks to destroy (STACK=)")
    args = parser.parse_args(argv)
    assembly = Path(args.output).resolve()
    shutil.rmtree(assembly, ignore_errors=True)  # only this config's stacks
    # app.py names the config it read and its stacks on stderr; a bad config stops here.
    synth = [*CDK, "synth", "--quiet", "-c", f"config={args.config}", "--output", str(assembly)]
    done = subprocess.run(synth, check=False, env=synth_environment(args.config))
    if done.returncode != 0:
        return done.returncode
    defined = ", ".join(stacks_selected(assembly))
    if not args.stacks:
        print(
            f'make destroy: name the stacks to destroy with STACK="NAME ..."; '
            f"{args.config} defines {defined}",
            file=sys.stderr,
        )
        return EXIT_INVALID
    for name in args.stacks:
        if not stacks_selected(assembly, name):
            print(
                f"make destroy: STACK {name} matches none of the stacks of {args.config} "
                f"({defined}); name one of those, or give CONFIG= the file that defines it",
                file=sys.stderr,
            )
            return EXIT_INVALID
    destroy = [*CDK, "destroy", "--exclusively", "--app", str(assembly), *args.stacks]
    return subprocess.run(destroy, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
