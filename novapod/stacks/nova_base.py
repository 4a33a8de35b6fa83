"""NovaBaseStack: the parts of the Nova environment that need no cluster.

The Nova environment is two stacks so that a deploy does not wait for what does not
have to wait (architecture.md: resources that need no deployed value must not wait
for one; issue 7's critical path). This one, `<prefix>-nova-base`, depends on the
network and storage stacks only, so CloudFormation builds it while the EKS cluster
and the HyperPod cluster are being created:

- the optional SageMaker managed MLflow tracking server and its role. Creating one
  takes a long time (its CloudFormation handler allows 95 minutes: the
  AWS::SageMaker::MlflowTrackingServer resource schema, handlers.create
  .timeoutInMinutes), which after the HyperPod cluster would add that much to every
  first deploy;
- the recipe bundle, whose deploy-time names are all known without the clusters
  (bucket names, the cluster name, the tracking server's ARN formatted from its name);
- the functions, roles and waiter state machines of the NovaEnvironment check and the
  Bedrock import (the custom resources themselves are in NovaStack, after the cluster);
- the Bedrock import role (and the import handlers' grant on the storage stack's
  purchase ledger, read as its outputs like the buckets and the key);
- with jobs that run as SageMaker training jobs, their execution role and the managed
  policy for who starts them (constructs/training_job_role.py), with the outputs
  `novapod launch` reads to start one (`TrainingJobOutputs`).

NovaStack (`<prefix>-nova`) holds what needs the deployed clusters: the access
entries, the grants on the HyperPod cluster's ARN and the restricted execution role,
the NovaEnvironment check and the Bedrock models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput, CfnResource, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from novapod.capacity.placements import ON_DEMAND_METADATA_TYPE, on_demand_json
from novapod.config import Job, NovapodConfig
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.bedrock_model.construct import BedrockImport, bedrock_import
from novapod.constructs.network import PrivatePlacement
from novapod.constructs.nova_environment.construct import (
    NovaEnvironmentHandlers,
    nova_environment_handlers,
)
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.constructs.recipe_bundle.construct import RecipeBundle
from novapod.constructs.training_job_role import TrainingJobPermissions, training_job_prefix
from novapod.node_images import ImageRepository
from novapod.nova import render
from novapod.nova.access import data_grants
from novapod.nova.catalog import catalog
from novapod.nova.training_jobs import RECIPE_UPLOAD_PREFIX, takes_volume_key

MLFLOW_PREFIX = "mlflow/"
# Pinned logical IDs of the training jobs' identity resources: a new ID would replace the
# role (and with it every ARN a scientist's launch names) and the policies attached to
# roles outside the stack.
TRAINING_JOB_PINNED_IDS = {
    "role": "TrainingJobExecutionRole",
    "policy": "TrainingJobExecutionPolicy",
    "launch_policy": "TrainingJobLaunchPolicy",
}


@dataclass(frozen=True)
class TrainingJobOutputs:
    """The nova-base stack's outputs a training job's launch reads (`novapod launch`:
    novapod/nova/launch.py STACK_OUTPUTS)."""

    role_arn: str = "TrainingJobRoleArn"
    launch_policy_arn: str = "TrainingJobLaunchPolicyArn"
    subnets: str = "TrainingJobSubnets"  # zone-id=subnet-id,... (parse_subnets)
    security_group: str = "TrainingJobSecurityGroupId"


TRAINING_JOB_OUTPUTS = TrainingJobOutputs()


def mlflow_server_arn(stack: Stack, name: str) -> str:
    """The tracking server's ARN, known at synth: it ends in the server's name."""
    return stack.format_arn(
        service="sagemaker", resource="mlflow-tracking-server", resource_name=name
    )


class NovaBaseStack(Stack):
    """Exposes `mlflow_server` (or None), `mlflow_arn` (or None), `bundle`,
    `check_handlers` (NovaEnvironmentHandlers), `bedrock` (BedrockImport or None) and
    the storage names it was given (`data_bucket_name`, `artifacts_bucket_name`,
    `key_arn`), and `training_jobs` (TrainingJobPermissions, or None without jobs that
    run as training jobs). `ledger` is the storage stack's PurchaseLedger (the Bedrock
    imports are claimed in it)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: NovapodConfig,
        cluster_name: str,
        placement: PrivatePlacement,
        data_bucket_name: str,
        artifacts_bucket_name: str,
        key_arn: str,
        ledger: PurchaseLedger,
        training_job_security_group: ec2.ISecurityGroup | None = None,
        subnets_by_zone: Mapping[str, Sequence[str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.config = config
        self.cluster_name = cluster_name
        # As given (storage's outputs, read with Fn::GetStackOutput): NovaStack reads the
        # same outputs through these.
        self.data_bucket_name = data_bucket_name
        self.artifacts_bucket_name = artifacts_bucket_name
        self.key_arn = key_arn
        self.artifacts_bucket = s3.Bucket.from_bucket_name(
            self, "ArtifactsBucket", artifacts_bucket_name
        )
        data_bucket = s3.Bucket.from_bucket_name(self, "DataBucket", data_bucket_name)
        self.key = kms.Key.from_key_arn(self, "Key", key_arn)
        nova = config.nova_settings
        days = config.eks.log_retention_days if config.eks else 365

        self.mlflow_server: sagemaker.CfnMlflowTrackingServer | None = None
        self.mlflow_arn: str | None = None
        if nova.mlflow.enabled:
            self.mlflow_server = self._mlflow(size=nova.mlflow.size)
            self.mlflow_arn = mlflow_server_arn(self, cluster_name)

        variables = {
            "DataBucket": data_bucket.bucket_name,
            "ArtifactsBucket": self.artifacts_bucket.bucket_name,
            "ClusterName": cluster_name,
        }
        if self.mlflow_arn is not None:
            # Formatted, not the server's attribute: the bundle need not wait for the
            # server (the recipes only name it; jobs run after the deploy).
            variables["MlflowTrackingServerArn"] = self.mlflow_arn
        self.bundle = RecipeBundle(
            self,
            "RecipeBundle",
            files=render.bundle(config),
            bucket=self.artifacts_bucket,
            key=self.key,
            variables=variables,
            log_retention_days=days,
        )
        self.check_handlers: NovaEnvironmentHandlers = nova_environment_handlers(
            self, config=config, cluster_name=cluster_name, placement=placement, key=self.key
        )
        self.bedrock: BedrockImport | None = bedrock_import(
            self,
            config=config,
            artifacts_bucket=self.artifacts_bucket,
            key=self.key,
            ledger=ledger,
            placement=placement,
        )
        self.training_jobs: TrainingJobPermissions | None = None
        if config.training_jobs:
            if training_job_security_group is None or subnets_by_zone is None:
                raise ValueError(
                    "the config has training-job jobs: pass the network's "
                    "training_job_security_group and subnets_by_zone"
                )
            self.training_jobs = self._training_jobs(
                data_bucket=data_bucket,
                placement=placement,
                security_group_id=training_job_security_group.security_group_id,
                subnets_by_zone=subnets_by_zone,
            )
            # Where each on-demand job runs, for `novapod review` (capacity/placements.py:
            # a job on a plan is a bar of its chart in the capacity stack; this one has no
            # plan): cloud-assembly metadata, never part of the template.
            on_demand = {job.name for job in config.training_jobs if job.on_demand}
            for planned in config.capacity_plan().on_demand:
                if planned.name in on_demand:
                    self.node.add_metadata(ON_DEMAND_METADATA_TYPE, on_demand_json(planned))

    def _training_jobs(
        self,
        *,
        data_bucket: s3.IBucket,
        placement: PrivatePlacement,
        security_group_id: str,
        subnets_by_zone: Mapping[str, Sequence[str]],
    ) -> TrainingJobPermissions:
        """The training jobs' role and launch policy, from the jobs that run as training
        jobs: their datasets (the keys the restricted groups' grants derive, nova/
        access.py), the outputs under the prefix every job writes below (so `results` and
        `from: job:` find them as HyperPod jobs'), their images' repositories, MLflow and
        functions when they use them, distillation's teachers, and the plans they run on."""
        config = self.config
        jobs = config.training_jobs
        grants = data_grants(config, jobs)
        types = render.instance_types(config)
        tracked = self.mlflow_arn is not None and any(job.mlflow for job in jobs)
        permissions = TrainingJobPermissions(
            self,
            "TrainingJobs",
            environment=config.name,
            job_prefix=training_job_prefix(config.prefix),
            data_bucket=data_bucket,
            input_keys=grants.data_keys,
            recipe_prefix=RECIPE_UPLOAD_PREFIX,
            output_bucket=self.artifacts_bucket,
            output_prefix=render.output_prefix(config),
            key=self.key,
            subnet_ids=placement.subnet_ids,
            security_group_id=security_group_id,
            repositories=training_job_repositories(config.region, jobs),
            mlflow_server_arn=self.mlflow_arn if tracked else None,
            lambda_arns=grants.lambdas,
            distillation_teachers=[
                render.render_recipe(config, job)["training_config"]["teacherModelId"]
                for job in jobs
                if job.technique == "distillation"
            ],
            # Only instances without local storage take a volume key (takes_volume_key).
            volume_encryption=any(takes_volume_key(types[job.name]) for job in jobs),
            training_plan_arns=self._plan_arns(jobs),
            tag_on_create=bool(config.resource_tags),
        )
        for name, construct in (
            ("role", permissions.role),
            ("policy", permissions.policy),
            ("launch_policy", permissions.launch_policy),
        ):
            cfn = construct.node.default_child
            assert isinstance(cfn, CfnResource)
            cfn.override_logical_id(TRAINING_JOB_PINNED_IDS[name])
        self._training_job_outputs(permissions, security_group_id, subnets_by_zone)
        return permissions

    def _plan_arns(self, jobs: Sequence[Job]) -> list[str]:
        """The ARNs of the plans the jobs run on, written out as the HyperPod stack writes
        a restricted group's (the adopted plan's, or the deterministic name's): no
        reference to the capacity stack, and a new purchase changes this template."""
        specs = {spec.name: spec for spec in self.config.capacity.training_plans}
        names = self.config.purchase_names()
        arns: list[str] = []
        for plan in dict.fromkeys(job.plan for job in jobs if job.plan is not None):
            spec = specs[plan]
            arns.append(
                spec.existing_arn
                or self.format_arn(
                    service="sagemaker", resource="training-plan", resource_name=names[plan]
                )
            )
        return arns

    def _training_job_outputs(
        self,
        permissions: TrainingJobPermissions,
        security_group_id: str,
        subnets_by_zone: Mapping[str, Sequence[str]],
    ) -> None:
        names = TRAINING_JOB_OUTPUTS
        # Zone IDs are known at synth; the subnet IDs are the network stack's (tokens that
        # CDK writes as Fn::Join of the references).
        subnets = ",".join(
            f"{zone}={subnet}" for zone, ids in subnets_by_zone.items() for subnet in ids
        )
        for key, value, description in (
            (
                names.role_arn,
                permissions.role.role_arn,
                "The execution role a training job's CreateTrainingJob passes (RoleArn).",
            ),
            (
                names.launch_policy_arn,
                permissions.launch_policy.managed_policy_arn,
                "Attach to whoever starts the environment's training jobs (the scientists' "
                "policy already holds the same rights).",
            ),
            (
                names.subnets,
                subnets,
                "The private subnets a training job may run in, zone-id=subnet-id pairs "
                "(VpcConfig Subnets: those of the zones of the job's plan).",
            ),
            (
                names.security_group,
                security_group_id,
                "The security group a training job runs in (VpcConfig SecurityGroupIds).",
            ),
        ):
            CfnOutput(self, key, value=value, description=description)

    def _mlflow(self, *, size: str) -> sagemaker.CfnMlflowTrackingServer:
        """The tracking server, its artifacts under mlflow/ in the artifacts bucket.

        The role is the server's own (docs.aws.amazon.com/sagemaker/latest/dg/
        mlflow-create-tracking-server-iam.html asks for S3 access to the artifact store;
        here objects under that prefix only, and the key that encrypts them). The server
        lists and locates the bucket itself, without a prefix: CreateMlflowTrackingServer's
        RoleArn "should have AmazonS3FullAccess permissions" (docs.aws.amazon.com/sagemaker/
        latest/APIReference/API_CreateMlflowTrackingServer.html), whose s3:List* and
        s3:Get* grant ListBucket and GetBucketLocation unconditioned; GetBucketLocation has
        no s3:prefix key at all, so a prefix condition would refuse it.
        """
        role = iam.Role(
            self,
            "MlflowRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="novapod: the MLflow tracking server's access to its artifact store",
        )
        objects = self.artifacts_bucket.arn_for_objects(f"{MLFLOW_PREFIX}*")
        policy = iam.Policy(
            self,
            "MlflowPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    sid="ListArtifactStore",
                    actions=["s3:ListBucket", "s3:GetBucketLocation"],
                    resources=[self.artifacts_bucket.bucket_arn],
                ),
                iam.PolicyStatement(
                    sid="ReadWriteArtifacts",
                    actions=["s3:GetObject", "s3:PutObject"],
                    resources=[objects],
                ),
                iam.PolicyStatement(
                    sid="UseTheKey",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[self.key.key_arn],
                ),
            ],
        )
        acknowledge(
            policy,
            f"AwsSolutions-IAM5[Resource::{nag_resource(self, objects)}]",
            "MLflow writes each run's artifacts under keys of its own choosing below the "
            "artifact store prefix mlflow/; the role may touch that prefix only.",
        )
        server = sagemaker.CfnMlflowTrackingServer(
            self,
            "MlflowTrackingServer",
            tracking_server_name=self.cluster_name,
            artifact_store_uri=f"s3://{self.artifacts_bucket.bucket_name}/{MLFLOW_PREFIX}",
            role_arn=role.role_arn,
            tracking_server_size=size,
            automatic_model_registration=False,
        )
        # Experiments outlive the stack; the server's name is its ID (and in its ARN).
        server.apply_removal_policy(RemovalPolicy.RETAIN)
        server.node.add_dependency(policy)
        return server


def training_job_repositories(region: str, jobs: Sequence[Job]) -> tuple[ImageRepository, ...]:
    """The registry repositories of the jobs' training-job images (the catalog's SM-TJ
    image of each, `<account>.dkr.ecr.<region>.<domain>/<repository>:<tag>`), once each."""
    found: dict[ImageRepository, None] = {}
    for job in jobs:
        image = catalog().training_job_image(job.model, job.technique, region, job.task)
        registry, _, path = image.partition("/")
        found[ImageRepository(region, registry.split(".", 1)[0], path.split(":", 1)[0])] = None
    return tuple(found)
