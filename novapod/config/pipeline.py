"""The pipeline config: a file of its own (`pipeline:` at the top) naming the pipeline's
account and region, its source (a CodeStar connection, a repository and a branch) and
the environment files it deploys, in order, each as one CDK Pipelines Stage.

`loading.load_pipeline(path)` validates it with these models and loads every
environment file it lists into a `PipelineConfig`, or raises `ConfigError` with
`pipeline.<field>: message` lines (an invalid environment file reports its own lines,
prefixed with its own name). `placement_problem` says why an environment cannot be a
stage of the pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field, StringConstraints, model_validator

from novapod.config.base import _at, _Model
from novapod.config.root import NovapodConfig

# AWS CodeConnections (formerly CodeStar Connections) connection ARNs: both service
# prefixes name the same connections, see docs.aws.amazon.com/dtconsole/latest/userguide/
# rename.html ("connections ... ARN ... codestar-connections and codeconnections").
CONNECTION_ARN = (
    r"^arn:aws[a-z-]*:(codestar-connections|codeconnections):[a-z]{2}(-gov)?-[a-z]+-\d{1,2}"
    r":\d{12}:connection/[0-9a-f-]{36}$"
)
# GitHub's owner/name (what CodePipelineSource.connection takes as repoString).
REPOSITORY = r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"
BRANCH = r"^[A-Za-z0-9._/-]+$"
PIPELINE_NAME = r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$"

_CONNECTION_REQUIRED = (
    "required: the ARN of the AWS CodeConnections connection to your repository "
    "(aws codeconnections list-connections shows it); add it"
)


class PipelineSource(_Model):
    """Where the pipeline reads the code: a repository through a CodeStar connection."""

    # Optional in the model only so that a missing ARN gets a sentence of its own.
    connection_arn: str | None = Field(
        None,
        pattern=CONNECTION_ARN,
        description="ARN of the AWS CodeConnections (CodeStar) connection to the repository.",
    )
    repository: str = Field(
        pattern=REPOSITORY, description="The repository as owner/name, e.g. my-org/novapod-envs."
    )
    branch: str = Field(
        "main",
        min_length=1,
        max_length=255,
        pattern=BRANCH,
        description="The branch whose pushes start the pipeline.",
    )

    @model_validator(mode="after")
    def _connection_given(self) -> PipelineSource:
        if self.connection_arn is None:
            raise _at("connection_arn", _CONNECTION_REQUIRED)
        return self


class PipelineEnvironment(_Model):
    """One environment file the pipeline deploys as a Stage."""

    config: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="Path of the environment's YAML file, relative to the pipeline file.",
    )
    production: bool = Field(
        False,
        description="A manual approval gates the whole stage (besides the change-set "
        "approval every capacity stack has).",
    )


class Pipeline(_Model):
    """The pipeline: its account and region, its source and its environments in order."""

    name: str = Field(
        "novapod",
        pattern=PIPELINE_NAME,
        description="Pipeline name (also the stack's: <name>-pipeline).",
    )
    account: str = Field(pattern=r"^\d{12}$", description="AWS account ID of the pipeline.")
    region: str = Field(
        pattern=r"^[a-z]{2}(-gov)?-[a-z]+-\d{1,2}$", description="AWS region of the pipeline."
    )
    source: PipelineSource
    environments: list[PipelineEnvironment] = Field(
        description="Environment files, deployed in this order (at least one)."
    )

    @model_validator(mode="after")
    def _some_environment(self) -> Pipeline:
        if not self.environments:
            raise _at(
                "environments",
                "list at least one environment file to deploy, e.g. "
                "environments: [{config: dev.yaml}]",
            )
        return self


class PipelineFile(_Model):
    pipeline: Pipeline


@dataclass(frozen=True)
class Deployment:
    """An environment of the pipeline: its entry, its file and its validated config."""

    index: int
    entry: PipelineEnvironment
    path: Path
    config: NovapodConfig

    @property
    def production(self) -> bool:
        return self.entry.production


@dataclass(frozen=True)
class PipelineConfig:
    """A validated pipeline file with its environments loaded."""

    spec: Pipeline
    path: Path
    deployments: tuple[Deployment, ...]

    @property
    def source(self) -> PipelineSource:
        return self.spec.source

    @property
    def connection_arn(self) -> str:
        assert self.spec.source.connection_arn is not None  # the model requires it
        return self.spec.source.connection_arn


def placement_problem(
    spec: Pipeline, config: NovapodConfig, earlier: Sequence[Deployment]
) -> str | None:
    """Why an environment cannot be the next stage of this pipeline, or None."""
    twin = next((d for d in earlier if d.config.name == config.name), None)
    if twin is not None:
        return (
            f"environment {config.name} is already deployed by environments[{twin.index}] "
            f"({twin.entry.config}); list each environment once (its name names its stacks "
            "and resources)"
        )
    # The post-deploy check and the artifact bucket's key live in the pipeline's account
    # and region; anything else needs CDK Pipelines' cross-account keys and roles and a
    # support stack per region, which novapod does not build.
    if config.account is not None and config.account != spec.account:
        return (
            f"environment {config.name} is in account {config.account}, the pipeline in "
            f"{spec.account}; deploy it from a pipeline in its own account"
        )
    if config.region != spec.region:
        return (
            f"environment {config.name} is in region {config.region}, the pipeline in "
            f"{spec.region}; deploy it from a pipeline in its own region"
        )
    return None
