#!/usr/bin/env python3
"""CDK entry point: read the config, build the stacks. Nothing else."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from aws_cdk import App, Stack

from novapod.config import DEFAULT_CONFIG, ConfigError, load_config
from novapod.environment import add_policy_checks, build_environment, feature_flags


def config_path(context: object, environ: Mapping[str, str]) -> tuple[str, str]:
    """The config to synthesize and where its name came from: `-c config=FILE`, else
    $NOVAPOD_CONFIG, else the default."""
    if context:
        return str(context), "-c config"
    if environ.get("NOVAPOD_CONFIG"):
        return environ["NOVAPOD_CONFIG"], "$NOVAPOD_CONFIG"
    return str(DEFAULT_CONFIG), "the default; choose another with -c config=FILE or $NOVAPOD_CONFIG"


def main() -> None:
    # novapod's feature flags (cdk.json holds none); -c on the command line still wins.
    app = App(context=feature_flags())
    path, origin = config_path(app.node.try_get_context("config"), os.environ)
    try:
        config = load_config(path)
    except ConfigError as error:
        print(f"novapod: invalid configuration {path}:", file=sys.stderr)
        print(error.render(), file=sys.stderr)  # each line starts with the file's name
        sys.exit(2)
    for warning in config.warnings():
        print(f"{path}: warning: {warning}", file=sys.stderr)
    build_environment(app, config)
    add_policy_checks(app, config.compliance)
    # Which config every cdk command (synth, diff, deploy, destroy) read, and its stacks:
    # `cdk destroy NAME` of a stack another config defines only says "No stacks match".
    stacks = ", ".join(c.stack_name for c in app.node.children if isinstance(c, Stack))
    print(f"novapod: config {path} ({origin}): stacks {stacks}", file=sys.stderr)
    app.synth()


if __name__ == "__main__":
    main()
