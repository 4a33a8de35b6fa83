"""PipelineStack: CDK Pipelines (`aws_cdk.pipelines.CodePipeline`) deploying novapod
environments, one Stage per environment file of a pipeline config, in order.

- Source: a repository through an AWS CodeConnections (CodeStar) connection, cloned by
  CodeBuild (`code_build_clone_output`) so the review step can read git history. The
  source, synth and check roles may use that one connection, with the actions of the
  service its ARN names (`connection_actions`).
- Synth: `make setup`, `make test` without AWS credentials (`without_aws_credentials`),
  the pinned CDK CLI synthesizing pipeline_app.py (from committed context only:
  `--no-lookups`), then `make pipeline-review`, whose `novapod review` reports go to the
  artifact bucket under `novapod-review/<execution ID>/`; on a medium CodeBuild box with
  a time limit of its own.
- Stages: `build_environment`, the composition app.py uses. A ManualApprovalStep before a
  production stage; before every capacity stack (where training plans are bought) a
  change-set approval: CDK Pipelines' `StackSteps(change_set=[...])` runs steps after
  the change set is created and before it is executed (aws-cdk-lib 2.275 pipelines
  README, "Validation"; docs.aws.amazon.com/cdk/api/v2/python/aws_cdk.pipelines/
  StackSteps.html).
- After a stage with a HyperPod cluster: `novapod pipeline-check`
  (novapod/operate/pipeline_check.py) in a CodeBuild step whose role may only describe
  that cluster and the Nova stack.

The artifact bucket is novapod's: KMS (a rotated key), TLS only, access-logged. The
pipeline and every environment share one account and region (config/pipeline.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import (
    App,
    Aws,
    CfnResource,
    Duration,
    Environment,
    RemovalPolicy,
    Stack,
    Stage,
    pipelines,
)
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from novapod.config import ConfigError, NovapodConfig, PipelineConfig
from novapod.constructs.buckets import access_log_bucket, encrypted_bucket
from novapod.constructs.pipeline_policies import acknowledge_pipeline_policies
from novapod.environment import (
    EnvironmentStacks,
    add_policy_checks,
    build_environment,
    feature_flags,
)

ROOT = Path(__file__).resolve().parents[2]
# The CLI the synth step runs is package.json's; CDK Pipelines' own steps (self-mutation,
# asset publishing) install theirs with npm, so they get the same pins here.
CDK_ASSETS_VERSION = "4.7.3"
REVIEW_PREFIX = "novapod-review"
# CodePipeline resolves pipeline variables in action configurations, manual approvals'
# comments and links included (docs.aws.amazon.com/codepipeline/latest/userguide/
# reference-variables.html, actions-variables.html#actions-variables-examples-approvals).
EXECUTION_ID = "#{codepipeline.PipelineExecutionId}"
# aws/codebuild/standard:7.0 has Python 3.11/3.12 and Node.js 20 (docs.aws.amazon.com/
# codebuild/latest/userguide/available-runtimes.html).
BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_7_0
RUNTIMES = {"python": "3.12", "nodejs": "20"}
# The synth step runs `make setup`, the whole of `make test` and two synths of the pipeline
# app (this commit's and, for the review, its parent's). CodeBuild's defaults are a
# BUILD_GENERAL1_SMALL box (2 vCPUs, 4 GiB) and 60 minutes (docs.aws.amazon.com/codebuild/
# latest/APIReference/API_ProjectEnvironment.html, API_CreateProject.html#timeoutInMinutes).
# The repository's GitHub workflow gives `make test` alone 30 minutes on a 4-vCPU runner and
# its synth review 45 (.github/workflows/synth-review.yml): MEDIUM is 4 vCPUs and 8 GiB, room
# for jsii's Node.js processes beside pytest, and 90 minutes covers both and `make setup`.
SYNTH_COMPUTE = codebuild.ComputeType.MEDIUM
SYNTH_TIMEOUT_MINUTES = 90
# What botocore looks at for credentials, in order (botocore 1.44 credentials.py,
# create_credential_resolver): AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
# (and the older AWS_SECURITY_TOKEN); the profile (AWS_PROFILE) of the config and shared
# credentials files (assume-role, web identity also from AWS_WEB_IDENTITY_TOKEN_FILE +
# AWS_ROLE_ARN, SSO, credential_process, static keys); boto2's AWS_CREDENTIAL_FILE and
# BOTO_CONFIG files; the container provider at AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or
# _FULL_URI, which is how CodeBuild hands a build its project role (the ECS convention:
# blog.jwr.io/aws/codebuild/container/iam/role/2019/05/30/iam-role-inside-container-inside-
# aws-codebuild.html); last the EC2 instance metadata service, off with
# AWS_EC2_METADATA_DISABLED=true. tests/unit/test_pipeline_credentials.py runs botocore
# through the result against each kind of source.
CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_CREDENTIAL_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
)
NO_CREDENTIAL_SOURCES = {
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    "AWS_CONFIG_FILE": "/dev/null",
    "BOTO_CONFIG": "/dev/null",
    "AWS_EC2_METADATA_DISABLED": "true",
}
# AWS CodeConnections, formerly CodeStar Connections, names a connection under either
# service prefix (arn:aws:codestar-connections:... or, the console's default since July
# 2024, arn:aws:codeconnections:...), and "the service prefix needs to match that of the
# resource" in a policy (docs.aws.amazon.com/dtconsole/latest/userguide/security-iam.html,
# security_iam_id-based-policy-examples-connections.html). aws-cdk-lib 2.275 grants only
# codestar-connections:UseConnection, on the source action's role and on each CodeBuild
# project reading a clone (aws-codepipeline-actions/lib/codestar-connections/
# source-action.js and codebuild/build-action.js), which does nothing for a codeconnections
# ARN. A CodePipeline "full clone" (CODEBUILD_CLONE_REF) needs UseConnection on the
# CodeBuild role (docs.aws.amazon.com/codepipeline/latest/userguide/troubleshooting.html#
# codebuild-role-connections), and CodeBuild fetches the token the connection vends with
# GetConnectionToken (docs.aws.amazon.com/codebuild/latest/userguide/
# connections-github-app.html, "Grant CodeBuild project IAM role access").
CONNECTION_SERVICES = ("codestar-connections", "codeconnections")


class NotACheckoutError(ValueError):
    """The pipeline is built from somewhere that is not a novapod checkout."""


def pinned_cli_version(package_json: Path = ROOT / "package.json") -> str:
    """The aws-cdk version package.json pins (the synth step's `npx cdk`).

    The pipeline builds from a novapod checkout (its synth step runs `make setup` and
    `make test` there), so an installed wheel, which has no package.json, cannot make one.
    """
    if not package_json.is_file():
        raise NotACheckoutError(
            f"novapod's pipeline builds from a novapod checkout: {package_json} (the pinned "
            "CDK CLI its synth step runs) is missing; run pipeline_app.py from a clone of "
            "the repository, not from an installed package"
        )
    pins: dict[str, str] = json.loads(package_json.read_text(encoding="utf-8"))["devDependencies"]
    return pins["aws-cdk"]


def without_aws_credentials(command: str) -> str:
    """`command` run where no AWS SDK finds credentials (CREDENTIAL_VARIABLES above): an
    AWS call from a test fails instead of acting with the build's project role."""
    unset = " ".join(f"-u {name}" for name in CREDENTIAL_VARIABLES)
    sources = " ".join(f"{name}={value}" for name, value in NO_CREDENTIAL_SOURCES.items())
    return f"env {unset} {sources} {command}"


def connection_actions(connection_arn: str, *, clone: bool) -> list[str]:
    """What a role needs of the connection: the source action uses it, a CodeBuild
    project cloning the repository (`clone`) also takes its token. The actions are of
    the service the ARN names (CONNECTION_SERVICES above)."""
    service = connection_arn.split(":")[2]
    if service not in CONNECTION_SERVICES:
        raise ValueError(f"not a CodeConnections connection ARN: {connection_arn}")
    actions = [f"{service}:UseConnection"]
    if clone:
        actions.append(f"{service}:GetConnectionToken")
    return actions


def synth_commands(pipeline_file: str) -> list[str]:
    """The synth step: set up, test, synthesize the pipeline app, review what changes."""
    return [
        "make setup",
        without_aws_credentials("make test"),
        # --no-lookups: context comes from what is committed (the package's feature flags,
        # and cdk.context.json if there is one); a lookup fails the synth rather than call
        # AWS from the build.
        'PATH="$PWD/.venv/bin:$PATH" npx --no-install cdk synth --quiet --no-lookups '
        f'-a "python3 pipeline_app.py" -c pipeline={pipeline_file}',
        f"make pipeline-review PIPELINE={pipeline_file}",
        f'aws s3 cp --recursive review/ "s3://$REVIEW_BUCKET/{REVIEW_PREFIX}/$EXECUTION_ID/"',
    ]


def check_command(
    *, region: str, cluster_name: str, nova_stack: str | None, check_resource: str | None
) -> str:
    """The post-deploy check of one environment (novapod/operate/pipeline_check.py)."""
    command = f"novapod pipeline-check --region {region} --cluster {cluster_name}"
    if nova_stack is not None and check_resource is not None:
        command += f" --nova-stack {nova_stack} --check-resource {check_resource}"
    return command


def review_location(bucket_name: str, stage: str) -> str:
    """Where the synth step put this execution's review of `stage`."""
    return f"s3://{bucket_name}/{REVIEW_PREFIX}/{EXECUTION_ID}/{stage}.md"


def review_url(bucket_name: str, region: str, stage: str) -> str:
    """The S3 console's page of that review (the approval's link), in the form AWS samples
    link objects: s3.console.aws.amazon.com/s3/object/<bucket>/<key>?region=<region>."""
    key = f"{REVIEW_PREFIX}/{EXECUTION_ID}/{stage}.md"
    return f"https://s3.console.aws.amazon.com/s3/object/{bucket_name}/{key}?region={region}"


class EnvironmentStage(Stage):
    """One environment's stacks, built as app.py builds them.

    cdk-nag checks them with the app's plugin (`create_pipeline_app`): an App's
    validation plugins cover the nested assemblies of its stages too.
    """

    def __init__(
        self, scope: Construct, id_: str, *, config: NovapodConfig, env: Environment
    ) -> None:
        super().__init__(scope, id_, env=env)
        self.config = config
        self.stacks: EnvironmentStacks = build_environment(self, config)


@dataclass(frozen=True)
class Gates:
    """What one stage waits for, decided from its config (no CDK)."""

    stage_approval: bool
    change_set_approval: bool  # before the capacity stack executes its change set
    post_deploy_check: bool


def stage_gates(config: NovapodConfig, *, production: bool) -> Gates:
    return Gates(
        stage_approval=production,
        change_set_approval=bool(config.capacity.training_plans),
        post_deploy_check=config.hyperpod is not None,
    )


class PipelineStack(Stack):
    """The pipeline and, under it, a Stage per environment of `pipeline`.

    `pipeline_file` is the pipeline config's path relative to the repository root, as
    the synth step passes it to pipeline_app.py.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        pipeline: PipelineConfig,
        pipeline_file: str,
        **kwargs: Any,
    ) -> None:
        spec = pipeline.spec
        super().__init__(
            scope,
            id_,
            env=Environment(account=spec.account, region=spec.region),
            description=f"novapod pipeline {spec.name}: deploys "
            + ", ".join(d.config.name for d in pipeline.deployments),
            **kwargs,
        )
        self.key = kms.Key(
            self,
            "ArtifactsKey",
            description=f"novapod pipeline {spec.name}: pipeline artifacts and reviews",
            enable_key_rotation=True,
            # As the bucket it encrypts, which is retained (novapod's bucket default).
            removal_policy=RemovalPolicy.RETAIN,
        )
        access_logs = access_log_bucket(self, "AccessLogs", expire_after_days=90)
        self.artifact_bucket = encrypted_bucket(
            self,
            "Artifacts",
            key=self.key,
            access_logs=access_logs,
            noncurrent_version_days=30,
        )
        source = pipelines.CodePipelineSource.connection(
            spec.source.repository,
            spec.source.branch,
            connection_arn=pipeline.connection_arn,
            # A clone, not a zip: the review synthesizes the parent commit too.
            code_build_clone_output=True,
        )
        self.source = source
        self.connection_arn = pipeline.connection_arn
        self.synth_step = pipelines.CodeBuildStep(
            "Synth",
            input=source,
            partial_build_spec=codebuild.BuildSpec.from_object(
                {"phases": {"install": {"runtime-versions": RUNTIMES}}}
            ),
            commands=synth_commands(pipeline_file),
            env={"REVIEW_BUCKET": self.artifact_bucket.bucket_name, "EXECUTION_ID": EXECUTION_ID},
            primary_output_directory="cdk.out",
            build_environment=codebuild.BuildEnvironment(compute_type=SYNTH_COMPUTE),
            timeout=Duration.minutes(SYNTH_TIMEOUT_MINUTES),
            role_policy_statements=[self._clone_statement()],
        )
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            code_pipeline=codepipeline.Pipeline(
                self,
                "CodePipeline",
                pipeline_name=spec.name,
                artifact_bucket=self.artifact_bucket,
                pipeline_type=codepipeline.PipelineType.V2,
                restart_execution_on_update=True,
            ),
            synth=self.synth_step,
            cli_version=pinned_cli_version(),
            cdk_assets_cli_version=CDK_ASSETS_VERSION,
            publish_assets_in_parallel=False,  # one asset project, not one per asset
            code_build_defaults=pipelines.CodeBuildOptions(
                build_environment=codebuild.BuildEnvironment(build_image=BUILD_IMAGE)
            ),
        )
        self.stages: dict[str, EnvironmentStage] = {}
        for deployment in pipeline.deployments:
            config = deployment.config
            stage = EnvironmentStage(
                self,
                config.name,
                config=config,
                env=Environment(account=spec.account, region=spec.region),
            )
            self.stages[config.name] = stage
            self._add_stage(stage, stage_gates(config, production=deployment.production))
        # Built now, not at synth, so that its generated roles exist to be acknowledged.
        self.pipeline.build_pipeline()
        self._source_role().add_to_principal_policy(
            iam.PolicyStatement(
                sid="UseRepositoryConnection",
                actions=connection_actions(self.connection_arn, clone=False),
                resources=[self.connection_arn],
            )
        )
        acknowledge_pipeline_policies(
            self,
            artifact_arns=[
                self.artifact_bucket.bucket_arn,
                self.artifact_bucket.arn_for_objects("*"),
                self.key.key_arn,
            ],
        )

    def _clone_statement(self) -> iam.PolicyStatement:
        """For a CodeBuild project that clones the repository through the connection."""
        return iam.PolicyStatement(
            sid="CloneThroughConnection",
            actions=connection_actions(self.connection_arn, clone=True),
            resources=[self.connection_arn],
        )

    def _source_role(self) -> iam.Role:
        """The role CodePipeline made for the source action (the pipeline's first stage):
        CodePipelineSource.connection takes no role of ours."""
        stage = self.pipeline.pipeline.node.find_child("Source")
        roles = [c for c in stage.node.find_all() if isinstance(c, iam.Role)]
        assert len(roles) == 1, [r.node.path for r in roles]
        return roles[0]

    def _add_stage(self, stage: EnvironmentStage, gates: Gates) -> None:
        name = stage.config.name
        review = review_location(self.artifact_bucket.bucket_name, name)
        link = review_url(self.artifact_bucket.bucket_name, self.region, name)
        pre: list[pipelines.Step] = []
        if gates.stage_approval:
            pre.append(
                pipelines.ManualApprovalStep(
                    "PromoteToProduction",
                    comment=f"Deploy the production environment {name}? Its novapod review "
                    f"(what changes, what is bought, what is replaced) is {review}, also "
                    "printed in the Synth step's log.",
                    review_url=link,
                )
            )
        stack_steps: list[pipelines.StackSteps] = []
        capacity = stage.stacks.capacity
        if gates.change_set_approval and capacity is not None:
            stack_steps.append(
                pipelines.StackSteps(
                    stack=capacity,
                    change_set=[
                        pipelines.ManualApprovalStep(
                            "ApprovePurchases",
                            comment=f"The change set of {capacity.stack_name} is ready: "
                            "executing it may BUY training plans (non-refundable, paid up "
                            f"front). Read the purchases section of the novapod review, "
                            f"{review} (also in the Synth step's log), and the change set "
                            "in the CloudFormation console before approving.",
                            review_url=link,
                        )
                    ],
                )
            )
        post = [self._check_step(stage)] if gates.post_deploy_check else []
        self.pipeline.add_stage(stage, pre=pre, post=post, stack_steps=stack_steps)

    def _check_step(self, stage: EnvironmentStage) -> pipelines.CodeBuildStep:
        """`novapod pipeline-check` after the stage, allowed to describe only what it reads."""
        config, stacks = stage.config, stage.stacks
        nova = stacks.nova
        check_id = None
        if nova is not None:
            resource = nova.environment_check.resource.node.default_child
            assert isinstance(resource, CfnResource)
            check_id = nova.resolve(resource.logical_id)
        statements = [
            self._clone_statement(),  # its input is the source's clone, as the synth's
            iam.PolicyStatement(
                sid="DescribeHyperPodCluster",
                actions=["sagemaker:DescribeCluster"],
                # The cluster's ARN ends in an ID SageMaker generates (cluster/<id>),
                # unknown before the stage deploys.
                resources=[
                    f"arn:{Aws.PARTITION}:sagemaker:{stage.region}:{stage.account}:cluster/*"
                ],
            ),
        ]
        if nova is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="DescribeNovaStack",
                    actions=[
                        "cloudformation:DescribeStacks",
                        "cloudformation:DescribeStackResource",
                    ],
                    # A stack ARN ends in an ID CloudFormation generates: stack/<name>/<id>.
                    resources=[
                        f"arn:{Aws.PARTITION}:cloudformation:{stage.region}:{stage.account}"
                        f":stack/{nova.stack_name}/*"
                    ],
                )
            )
        return pipelines.CodeBuildStep(
            f"Check{_pascal(config.name)}",
            input=self.source,
            partial_build_spec=codebuild.BuildSpec.from_object(
                {"phases": {"install": {"runtime-versions": {"python": RUNTIMES["python"]}}}}
            ),
            install_commands=["python3 -m pip install --quiet --disable-pip-version-check ."],
            commands=[
                check_command(
                    region=stage.stacks.network.region,
                    cluster_name=config.prefix,
                    nova_stack=nova.stack_name if nova is not None else None,
                    check_resource=check_id,
                )
            ],
            role_policy_statements=statements,
        )


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def repository_path(path: str | os.PathLike[str], root: Path = ROOT) -> str:
    """The pipeline file as the synth step names it: relative to the repository root.

    The step runs in a fresh clone, so a file outside the repository cannot be read there.
    """
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        raise ConfigError(
            [
                (
                    "",
                    f"the pipeline file must be inside the repository ({root}), which the "
                    "pipeline clones; move it there",
                )
            ],
            str(path),
        ) from None


def create_pipeline_app(
    pipeline: PipelineConfig, *, pipeline_file: str, outdir: str | Path | None = None
) -> tuple[App, PipelineStack]:
    """An App with the PipelineStack (and its stages) and the policy checks: cdk-nag's AWS
    Solutions and every `compliance` pack a stage's config asks for. A pack checks the
    whole App (the plugins see every stage), so a stage that asks for HIPAA holds the
    others to it too; every environment novapod builds passes every pack.

    The App carries novapod's feature flags, as `create_app`'s does; pipeline_app.py is
    this function and `app.synth()`.
    """
    app = App(outdir=str(outdir) if outdir else None, context=feature_flags())
    stack = PipelineStack(
        app, f"{pipeline.spec.name}-pipeline", pipeline=pipeline, pipeline_file=pipeline_file
    )
    packs = dict.fromkeys(p for d in pipeline.deployments for p in d.config.compliance)
    add_policy_checks(app, list(packs))
    return app, stack
