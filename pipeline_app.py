#!/usr/bin/env python3
"""CDK entry point of novapod-pipeline: read the pipeline config, build the PipelineStack.

npx cdk synth -a "python3 pipeline_app.py" -c pipeline=config/pipeline.example.yaml
"""

from __future__ import annotations

import os
import sys

from aws_cdk import App

from novapod.config import ConfigError, load_pipeline
from novapod.stacks.pipeline import NotACheckoutError, create_pipeline_app, repository_path


def main() -> None:
    # -c pipeline=... reaches the app as the CDK_CONTEXT_JSON the CLI sets; an App reads it.
    path = App().node.try_get_context("pipeline") or os.environ.get("NOVAPOD_PIPELINE")
    if not path:
        print(
            "novapod-pipeline: no pipeline file; pass -c pipeline=config/pipeline.yaml "
            "(or set NOVAPOD_PIPELINE)",
            file=sys.stderr,
        )
        sys.exit(2)
    try:
        pipeline = load_pipeline(path)
        pipeline_file = repository_path(path)
    except ConfigError as error:
        print(f"novapod-pipeline: invalid pipeline configuration {path}:", file=sys.stderr)
        print(error.render(), file=sys.stderr)  # each line starts with its file's name
        sys.exit(2)
    for deployment in pipeline.deployments:
        for warning in deployment.config.warnings():
            print(f"{deployment.path}: warning: {warning}", file=sys.stderr)
    # The stages' compliance packs as well as AWS Solutions (create_pipeline_app).
    try:
        app, _ = create_pipeline_app(pipeline, pipeline_file=pipeline_file)
    except NotACheckoutError as error:
        print(f"novapod-pipeline: {error}", file=sys.stderr)
        sys.exit(2)
    app.synth()


if __name__ == "__main__":
    main()
