"""The `novapod` command: validate a config, print its JSON Schema, plan capacity."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

from novapod import planning
from novapod.config import ConfigError, json_schema, load_config

EXIT_OK = 0
EXIT_INVALID = 2


def _validate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    print(f"{args.config}: valid (environment {config.name}, region {config.region})")
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2, sort_keys=False))
    return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    plan = load_config(args.config).capacity_plan()
    if args.json:
        print(json.dumps(planning.capacity_plan_json(plan), indent=2))
    else:
        print(planning.render_table(plan))
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="novapod",
        description="Amazon Nova customization on SageMaker HyperPod, as AWS CDK.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate = commands.add_parser("validate", help="check a config; exit 2 on errors")
    validate.add_argument("config", help="path to the environment's YAML file")
    validate.set_defaults(run=_validate)
    plan = commands.add_parser(
        "plan", help="size the workloads and the training plans they need (reads only)"
    )
    plan.add_argument("config", help="path to the environment's YAML file")
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    plan.set_defaults(run=_plan)
    schema = commands.add_parser("schema", help="print the config's JSON Schema (for editors)")
    schema.set_defaults(run=_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except ConfigError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
