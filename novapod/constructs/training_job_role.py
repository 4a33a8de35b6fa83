"""The SageMaker training-job execution role of an environment's Nova jobs, and the
managed policy for who may start those jobs.

`TrainingJobPermissions` creates, under its scope:

- **TrainingJobExecutionRole** (with its policy **TrainingJobExecutionPolicy**): the role
  a CreateTrainingJob request passes as `RoleArn`. Trusted by sagemaker.amazonaws.com for
  this environment's training jobs only: `aws:SourceArn` like `training-job/<prefix>*`
  of this account and Region, the condition AWS gives for training jobs ("Cross-service
  confused deputy prevention for SageMaker training jobs",
  docs.aws.amazon.com/sagemaker/latest/dg/security-confused-deputy-prevention.html; "you
  do not need to specify an aws:SourceAccount value" with the account in the ARN).
  What it may do is what "CreateTrainingJob API: Execution Role Permissions"
  (docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-roles.html) lists, scoped as that
  page suggests: inputs and the uploaded recipe (objects by prefix, ListBucket on the
  bucket with `s3:prefix`), outputs under the environment's output prefix, the registry
  repositories of the jobs' images, CloudWatch Logs streams of its own jobs, metrics in
  the training jobs' namespace, and in a VPC the network interfaces (service_grants.py).
  The storage key: Decrypt and GenerateDataKey for objects under SSE-KMS, Encrypt for
  `OutputDataConfig.KmsKeyId` ("the SageMaker execution role must include permissions to
  call kms:Encrypt", API_OutputDataConfig; AWS's Nova SDK grants exactly that:
  aws/nova-forge-sdk src/amzn_nova_customization_sdk/iam/sagemaker_policies.json
  kms_policy), and kms:CreateGrant only with `volume_encryption` ("If you specify a
  volume KMS key in the resource configuration of your training job, add ...
  kms:CreateGrant", sagemaker-roles.html). Instances with local NVMe storage (p4d, p5,
  g5, g6) cannot take a `VolumeKmsKeyId` at all ("You can't request a VolumeKmsKeyId when
  using an instance type with local storage", API_ResourceConfig), so only EBS-backed
  jobs (distillation on ml.r5) need it.
  The key's policy needs no statement for this role: the storage key keeps aws-cdk-lib's
  default key policy, whose account statement lets IAM policies grant its use (what
  "The KMS key policy must grant permission to the IAM role", API_OutputDataConfig,
  asks), and a key imported by ARN could not be given one here anyway.
- **TrainingJobLaunchPolicy**: a customer-managed policy for the scientists' roles:
  `sagemaker:CreateTrainingJob` on `training-job/<prefix>*` only in our subnets and
  security group (`sagemaker:VpcSubnets`, `sagemaker:VpcSecurityGroupIds`, both required
  with `Null`) and with the storage key for the outputs (`sagemaker:OutputKmsKey`,
  required) and, when a volume key is given, for the volume (`sagemaker:VolumeKmsKey`,
  ...IfExists): the condition keys the Service Authorization Reference lists for
  CreateTrainingJob (docs.aws.amazon.com/service-authorization/latest/reference/
  list_amazonsagemaker.html). With training plans, CreateTrainingJob also on the plans
  and `reserved-capacity/*` (and DescribeTrainingPlan on the plans, which the launcher
  reads first), and tag-on-create as `sagemaker:AddTags` with
  `sagemaker:TaggingAction` = CreateTrainingJob: both as AWS's own managed policy for
  submitting training jobs grants them (AWSBatchServiceRolePolicyForSageMaker,
  docs.aws.amazon.com/aws-managed-policy/latest/reference/
  AWSBatchServiceRolePolicyForSageMaker.html), which also grants ListTrainingJobs on "*"
  and PassRole with `iam:PassedToService`. Describe and Stop on the same job ARNs, the
  recipe upload (PutObject under the recipe prefix, and GenerateDataKey through S3 for
  the bucket's SSE-KMS).

The condition values are compared as the request sends them: the launcher must send
the subnet and security-group IDs given here and the key's ARN (not its ID or alias).
SageMaker writes a job's ARN with its name as given; names here are lowercase anyway
(`training_job_prefix`), so `ArnLike` on the prefix matches them.

Which VPC endpoints training jobs in private subnets need is the config's to say
(novapod/config/network.py `training_job_endpoints`): it adds them to the network's
(NovapodConfig.job_endpoints).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.service_grants import (
    ECR_PULL,
    INTERFACE_LIFECYCLE_ACTIONS,
    VPC_DESCRIBE_ACTIONS,
    create_interfaces_statement,
    network_interfaces_arn,
    repository_arn,
)
from novapod.node_images import ImageRepository
from novapod.nova.catalog import catalog
from novapod.nova.mlflow import mlflow_actions
from novapod.nova.training_jobs import name_prefix

# Where training jobs log: one log group per account and Region, one stream per
# instance named <job name>/algo-<n>-<epoch> (AWS's Nova SDK reads that group:
# aws/nova-forge-sdk monitor/log_monitor.py; its role splits group and stream grants:
# iam/sagemaker_policies.json).
TRAINING_JOBS_LOG_GROUP = "/aws/sagemaker/TrainingJobs"
# Training jobs' instance and algorithm metrics (docs.aws.amazon.com/sagemaker/latest/dg/
# monitoring-cloudwatch.html, "SageMaker Jobs and Endpoint Metrics": the
# /aws/sagemaker/TrainingJobs namespace).
TRAINING_JOBS_NAMESPACE = "/aws/sagemaker/TrainingJobs"
# The Nova registry's training-job repositories (the recipes' sm_jobs container images:
# nova-fine-tune-repo:SM-TJ-*, nova-evaluation-repo:SM-TJ-Eval-*, and for distillation
# nova-distillation-repo:SM-TJ-DISTILL-LATEST; nova_regional_parameters.json of the
# pinned recipes).
TRAINING_JOB_REPOSITORIES = ("nova-fine-tune-repo", "nova-evaluation-repo")
DISTILLATION_REPOSITORY = "nova-distillation-repo"
KEY_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")
LAUNCH_ACTIONS = ("sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob")
# Bedrock's geographic and global inference profiles prefix the model ID
# (docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html).
PROFILE_PREFIXES = ("us", "us-gov", "eu", "apac", "jp", "au", "ca", "global")
# A training job name (CreateTrainingJob TrainingJobName: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62})
# as a prefix, lowercase and ending in "-", so env "dev" never covers env "dev2"'s jobs.
_JOB_PREFIX = re.compile(r"^[a-z0-9](-*[a-z0-9])*--$")


def training_job_prefix(config_prefix: str) -> str:
    """The name prefix of an environment's training jobs (`novapod-<env>--`: the
    environment and the job are joined by `--`, which no environment name holds, so no
    other environment's jobs match; novapod/nova/training_jobs.py name_prefix)."""
    return name_prefix(config_prefix)


def nova_training_job_repositories(
    region: str, *, distillation: bool
) -> tuple[ImageRepository, ...]:
    """The Nova registry's training-job repositories in `region`, the registry account
    from the catalog (novapod/nova/catalog.yaml `registries`, as the HyperPod images)."""
    account = catalog().registries.get(region)
    if account is None:
        raise ValueError(
            f"region {region} has no Nova training images (novapod/nova/catalog.yaml "
            f"registries: {', '.join(catalog().registries)}); deploy in one of those"
        )
    names = TRAINING_JOB_REPOSITORIES + ((DISTILLATION_REPOSITORY,) if distillation else ())
    return tuple(ImageRepository(region, account, name) for name in names)


def _prefix(key: str) -> str:
    """A key pattern as the prefix its objects and listings start with."""
    return key.removesuffix("*")


class TrainingJobPermissions(Construct):
    """Exposes `role` (TrainingJobExecutionRole), `policy` (its inline policy),
    `launch_policy` (TrainingJobLaunchPolicy), and for a policy that grants the same
    rights elsewhere (the scientists'), `launch_statements` (copies of the launch
    policy's statements) and `launch_wildcards` (each wildcard resource of theirs with
    the reason cdk-nag's finding on it is acknowledged: `acknowledge_launch_rights`)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        environment: str,
        job_prefix: str,
        data_bucket: s3.IBucket,
        input_keys: Sequence[str],
        recipe_prefix: str,
        output_bucket: s3.IBucket,
        output_prefix: str,
        key: kms.IKey,
        subnet_ids: Sequence[str],
        security_group_id: str,
        repositories: Sequence[ImageRepository],
        mlflow_server_arn: str | None = None,
        lambda_arns: Sequence[str] = (),
        distillation_teachers: Sequence[str] = (),
        volume_encryption: bool = False,
        training_plan_arns: Sequence[str] = (),
        tag_on_create: bool = True,
    ) -> None:
        super().__init__(scope, id_)
        _check(
            job_prefix=job_prefix,
            input_keys=input_keys,
            recipe_prefix=recipe_prefix,
            output_prefix=output_prefix,
            subnet_ids=subnet_ids,
            repositories=repositories,
        )
        stack = Stack.of(self)
        self._job_prefix = job_prefix
        self._jobs = jobs = stack.format_arn(
            service="sagemaker", resource="training-job", resource_name=f"{job_prefix}*"
        )
        self.role = iam.Role(
            self,
            "TrainingJobExecutionRole",
            assumed_by=iam.ServicePrincipal(
                "sagemaker.amazonaws.com", conditions={"ArnLike": {"aws:SourceArn": jobs}}
            ),
            description=f"novapod {environment}: SageMaker training jobs {job_prefix}*",
        )
        recipes = f"{_prefix(recipe_prefix)}*"
        reads = list(dict.fromkeys([*input_keys, recipe_prefix]))
        self._input_objects = [data_bucket.arn_for_objects(f"{_prefix(k)}*") for k in reads]
        self._outputs = output_bucket.arn_for_objects(f"{_prefix(output_prefix)}*")
        self._streams = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{TRAINING_JOBS_LOG_GROUP}:log-stream:{job_prefix}*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        # Log-group actions take the group's ARN with ":*" (all but the tagging ones:
        # docs.aws.amazon.com/AmazonCloudWatch/latest/logs/iam-access-control-overview-cwl.html).
        self._group = stack.format_arn(
            service="logs",
            resource="log-group",
            resource_name=f"{TRAINING_JOBS_LOG_GROUP}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        statements = [
            iam.PolicyStatement(
                sid="ReadInputsAndRecipes", actions=["s3:GetObject"], resources=self._input_objects
            ),
            iam.PolicyStatement(
                sid="ListInputsAndRecipes",
                actions=["s3:ListBucket"],
                resources=[data_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{_prefix(k)}*" for k in reads]}},
            ),
            iam.PolicyStatement(
                sid="WriteOutputs",
                actions=["s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"],
                resources=[self._outputs],
            ),
            iam.PolicyStatement(
                sid="ListOutputs",
                actions=["s3:ListBucket"],
                resources=[output_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": f"{_prefix(output_prefix)}*"}},
            ),
            iam.PolicyStatement(
                sid="UseTheStorageKey", actions=list(KEY_ACTIONS), resources=[key.key_arn]
            ),
            *(
                [
                    iam.PolicyStatement(
                        sid="EncryptTheVolumes",
                        actions=["kms:CreateGrant"],
                        resources=[key.key_arn],
                        # Grants for the job's EBS volumes, made by SageMaker and EC2.
                        conditions={"Bool": {"kms:GrantIsForAWSResource": "true"}},
                    )
                ]
                if volume_encryption
                else []
            ),
            iam.PolicyStatement(
                sid="PullJobImages",
                actions=list(ECR_PULL),
                resources=[repository_arn(self, r) for r in repositories],
            ),
            iam.PolicyStatement(
                sid="WriteJobLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self._streams],
            ),
            iam.PolicyStatement(
                sid="TrainingJobsLogGroup",
                actions=["logs:CreateLogGroup", "logs:DescribeLogStreams"],
                resources=[self._group],
            ),
            iam.PolicyStatement(
                sid="PublishJobMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": TRAINING_JOBS_NAMESPACE}},
            ),
            create_interfaces_statement(
                self, subnet_ids=subnet_ids, security_group_id=security_group_id
            ),
            iam.PolicyStatement(
                sid="ManageInterfaces",
                actions=list(INTERFACE_LIFECYCLE_ACTIONS),
                resources=[network_interfaces_arn(self)],
            ),
            iam.PolicyStatement(
                sid="DescribeWithoutResourceLevel",
                actions=[*VPC_DESCRIBE_ACTIONS, "ecr:GetAuthorizationToken"],
                resources=["*"],
            ),
        ]
        if mlflow_server_arn is not None:
            # What restricted groups' nodes may do on the server (novapod/nova/mlflow.py).
            statements.append(
                iam.PolicyStatement(
                    sid="TrackRuns",
                    actions=list(mlflow_actions().run_actions()),
                    resources=[mlflow_server_arn],
                )
            )
        if lambda_arns:
            statements.append(
                iam.PolicyStatement(
                    sid="InvokeJobFunctions",
                    actions=["lambda:InvokeFunction"],
                    resources=list(dict.fromkeys(lambda_arns)),
                )
            )
        self._teacher_models: list[str] = []
        statements += self._teacher_statements(distillation_teachers)
        self.policy = iam.Policy(
            self, "TrainingJobExecutionPolicy", statements=statements, roles=[self.role]
        )
        self.launch_policy = self._launch_policy(
            environment=environment,
            jobs=jobs,
            data_bucket=data_bucket,
            recipes=recipes,
            key=key,
            subnet_ids=subnet_ids,
            security_group_id=security_group_id,
            training_plan_arns=training_plan_arns,
            tag_on_create=tag_on_create,
        )
        self._acknowledge(mlflow_server_arn)

    def _teacher_statements(self, teachers: Sequence[str]) -> list[iam.PolicyStatement]:
        """bedrock:InvokeModel on distillation's teachers [inferred: the Nova distillation
        container calls Bedrock with the execution role; no AWS page states the calls].
        A teacher named by an inference profile (`us.amazon.nova-pro-v1:0`) needs the
        profile and its foundation model in every Region the profile routes to, and the
        model only through the profile (bedrock:InferenceProfileArn) ("Prerequisites for
        inference profiles", docs.aws.amazon.com/bedrock/latest/userguide/
        inference-profiles-prereq.html: "you must also specify the foundation model in
        each Region associated with it")."""
        stack = Stack.of(self)
        profiles: list[str] = []
        routed: list[str] = []  # foundation models behind the profiles
        models: list[str] = []  # teachers named by their model ID, in this Region
        for teacher in dict.fromkeys(teachers):
            geography, _, model = teacher.partition(".")
            if geography in PROFILE_PREFIXES and model:
                profiles.append(
                    stack.format_arn(
                        service="bedrock", resource="inference-profile", resource_name=teacher
                    )
                )
                routed.append(
                    stack.format_arn(
                        service="bedrock",
                        region="*",
                        account="",
                        resource="foundation-model",
                        resource_name=model,
                    )
                )
            else:
                models.append(
                    stack.format_arn(
                        service="bedrock",
                        account="",
                        resource="foundation-model",
                        resource_name=teacher,
                    )
                )
        self._teacher_models = routed
        statements = []
        if profiles:
            statements += [
                iam.PolicyStatement(
                    sid="InvokeTeacherProfiles", actions=["bedrock:InvokeModel"], resources=profiles
                ),
                # Any Region a profile routes to, only through the profiles.
                iam.PolicyStatement(
                    sid="InvokeTeacherModelsThroughProfiles",
                    actions=["bedrock:InvokeModel"],
                    resources=routed,
                    conditions={"StringEquals": {"bedrock:InferenceProfileArn": profiles}},
                ),
            ]
        if models:
            statements.append(
                iam.PolicyStatement(
                    sid="InvokeTeacherModels", actions=["bedrock:InvokeModel"], resources=models
                )
            )
        return statements

    def _launch_policy(
        self,
        *,
        environment: str,
        jobs: str,
        data_bucket: s3.IBucket,
        recipes: str,
        key: kms.IKey,
        subnet_ids: Sequence[str],
        security_group_id: str,
        training_plan_arns: Sequence[str],
        tag_on_create: bool,
    ) -> iam.ManagedPolicy:
        stack = Stack.of(self)
        self._recipe_objects = data_bucket.arn_for_objects(recipes)
        statements = [
            iam.PolicyStatement(
                sid="CreateTrainingJobsInOurVpc",
                actions=["sagemaker:CreateTrainingJob"],
                resources=[jobs],
                conditions={
                    "ForAllValues:StringEquals": {
                        "sagemaker:VpcSubnets": list(subnet_ids),
                        "sagemaker:VpcSecurityGroupIds": [security_group_id],
                    },
                    # ForAllValues is true for a request without the key: require both.
                    "Null": {
                        "sagemaker:VpcSubnets": "false",
                        "sagemaker:VpcSecurityGroupIds": "false",
                        "sagemaker:OutputKmsKey": "false",
                    },
                    "ArnEquals": {"sagemaker:OutputKmsKey": key.key_arn},
                    "ArnEqualsIfExists": {"sagemaker:VolumeKmsKey": key.key_arn},
                },
            ),
        ]
        self._reserved_capacity: str | None = None
        if training_plan_arns:
            self._reserved_capacity = stack.format_arn(
                service="sagemaker", resource="reserved-capacity", resource_name="*"
            )
            statements.append(
                iam.PolicyStatement(
                    sid="RunOnOurTrainingPlans",
                    actions=["sagemaker:CreateTrainingJob"],
                    resources=[*dict.fromkeys(training_plan_arns), self._reserved_capacity],
                )
            )
            # `novapod launch` reads the plan's ARN, status and zones before it starts a
            # job on it (DescribeTrainingPlan, on resource type training-plan, as the
            # environment's check describes its groups' plans: nova_environment/construct.py).
            statements.append(
                iam.PolicyStatement(
                    sid="DescribeOurTrainingPlans",
                    actions=["sagemaker:DescribeTrainingPlan"],
                    resources=list(dict.fromkeys(training_plan_arns)),
                )
            )
        if tag_on_create:
            statements.append(
                iam.PolicyStatement(
                    sid="TagTrainingJobsOnCreate",
                    actions=["sagemaker:AddTags"],
                    resources=[jobs],
                    conditions={"StringEquals": {"sagemaker:TaggingAction": "CreateTrainingJob"}},
                )
            )
        statements += [
            iam.PolicyStatement(
                sid="PassTheExecutionRole",
                actions=["iam:PassRole"],
                resources=[self.role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
            ),
            iam.PolicyStatement(
                sid="DescribeAndStopOurTrainingJobs", actions=list(LAUNCH_ACTIONS), resources=[jobs]
            ),
            iam.PolicyStatement(
                sid="ListTrainingJobs", actions=["sagemaker:ListTrainingJobs"], resources=["*"]
            ),
            # A plan's zone ID from its zone name, when DescribeTrainingPlan gives only the
            # name (novapod/nova/launch.py, _plan_zone_ids).
            iam.PolicyStatement(
                sid="MapPlanZones", actions=["ec2:DescribeAvailabilityZones"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="UploadRecipes", actions=["s3:PutObject"], resources=[self._recipe_objects]
            ),
            # A job's logs: /aws/sagemaker/TrainingJobs, one stream per instance below
            # <job name>/, found with DescribeLogStreams(logStreamNamePrefix=<job>/) and
            # read with GetLogEvents, as the SageMaker SDK does (aws/sagemaker-python-sdk
            # a24812666, sagemaker-core/src/sagemaker/core/utils/logs.py
            # MultiLogStreamHandler). GetLogEvents takes a log-stream ARN, so it is
            # limited to our jobs' streams; FilterLogEvents (what `aws logs tail` calls)
            # takes only the group's ARN and would read every training job of the
            # account, so it is left out (Service Authorization Reference, CloudWatch
            # Logs: FilterLogEvents log-group*, GetLogEvents log-stream*).
            iam.PolicyStatement(
                sid="ReadOurTrainingJobLogs",
                actions=["logs:GetLogEvents"],
                resources=[self._streams],
            ),
            iam.PolicyStatement(
                sid="FindOurTrainingJobLogStreams",
                actions=["logs:DescribeLogStreams"],
                resources=[self._group],
            ),
            iam.PolicyStatement(
                sid="EncryptRecipeUploads",
                actions=["kms:GenerateDataKey"],
                resources=[key.key_arn],
                conditions={"StringEquals": {"kms:ViaService": f"s3.{stack.region}.amazonaws.com"}},
            ),
        ]
        self._launch_statements = statements
        return iam.ManagedPolicy(
            self,
            "TrainingJobLaunchPolicy",
            description=f"novapod {environment}: start, describe and stop the environment's "
            "SageMaker training jobs; attach to the scientists' roles",
            statements=statements,
        )

    def _acknowledge(self, mlflow_server_arn: str | None) -> None:
        reasons = {
            "Resource::*": "EC2 Describe* and ecr:GetAuthorizationToken (a registry login "
            "token, account-wide) have no resource-level permissions, and "
            "cloudwatch:PutMetricData has none either: it is limited to the "
            f"{TRAINING_JOBS_NAMESPACE} namespace by cloudwatch:namespace.",
            f"Resource::{nag_resource(self, network_interfaces_arn(self))}": "SageMaker "
            "creates the jobs' network interfaces, whose IDs do not exist yet; creation is "
            "limited to our subnets and security group.",
            f"Resource::{nag_resource(self, self._outputs)}": "SageMaker writes each job's "
            "outputs under <output path>/<job name>/, keys chosen at run time; writes are "
            "limited to this environment's output prefix.",
            f"Resource::{nag_resource(self, self._streams)}": "SageMaker names one log stream "
            f"per instance, <job name>/algo-<n>-<time>; only streams of jobs named "
            f"{self._job_prefix}*.",
            f"Resource::{nag_resource(self, self._group)}": "CloudWatch Logs authorizes "
            "CreateLogGroup and DescribeLogStreams on the group's ARN ending in ':*'; the "
            "statement allows only those two on the training jobs' group.",
        }
        for objects in self._input_objects:
            reasons[f"Resource::{nag_resource(self, objects)}"] = (
                "Training jobs read every object below their datasets' prefixes and the "
                "uploaded recipes' prefix (File mode downloads the whole S3 prefix)."
            )
        for model in self._teacher_models:
            reasons[f"Resource::{nag_resource(self, model)}"] = (
                "A cross-Region inference profile routes to the teacher model in any of its "
                "Regions; the model is allowed only through the profile "
                "(bedrock:InferenceProfileArn)."
            )
        for finding, reason in reasons.items():
            acknowledge(self.policy, f"AwsSolutions-IAM5[{finding}]", reason)
        acknowledge_launch_rights(self.launch_policy, self.launch_wildcards)

    @property
    def launch_statements(self) -> list[iam.PolicyStatement]:
        """Copies of the launch policy's statements, for another policy to hold too."""
        return [statement.copy() for statement in self._launch_statements]

    @property
    def launch_wildcards(self) -> dict[str, str]:
        """Each wildcard resource of the launch statements ("*" included, as written, not
        rendered) -> why it is acknowledged."""
        wildcards = {
            self._jobs: "Training job names are chosen per run below the environment's "
            f"prefix {self._job_prefix}; creation is also limited to our subnets, security "
            "group and key.",
            "*": "sagemaker:ListTrainingJobs and ec2:DescribeAvailabilityZones have no "
            "resource-level permissions (the Service Authorization Reference lists no "
            "resource type for them).",
            self._recipe_objects: "The launcher uploads each rendered recipe under a "
            "content-addressed key below the recipe prefix.",
            self._streams: "SageMaker names one log stream per instance, <job name>/algo-<n>-"
            f"<time>; GetLogEvents only on streams of jobs named {self._job_prefix}*.",
            self._group: "CloudWatch Logs authorizes DescribeLogStreams on the group's ARN "
            "ending in ':*'; it lists the training jobs' stream names, to find a job's.",
        }
        if self._reserved_capacity is not None:
            wildcards[self._reserved_capacity] = (
                "A training plan's reserved capacities have IDs SageMaker generates; AWS's "
                "AWSBatchServiceRolePolicyForSageMaker grants CreateTrainingJob on them so."
            )
        return wildcards


def acknowledge_launch_rights(policy: iam.ManagedPolicy, wildcards: dict[str, str]) -> None:
    """cdk-nag's IAM5 findings on the launch statements' wildcards, on `policy` (the
    launch policy, or one that holds the same statements), each named as cdk-nag names
    it in the policy's own stack."""
    for resource, reason in wildcards.items():
        finding = "*" if resource == "*" else nag_resource(policy, resource)
        acknowledge(policy, f"AwsSolutions-IAM5[Resource::{finding}]", reason)


def _check(
    *,
    job_prefix: str,
    input_keys: Sequence[str],
    recipe_prefix: str,
    output_prefix: str,
    subnet_ids: Sequence[str],
    repositories: Sequence[ImageRepository],
) -> None:
    """Refuse, in one sentence, what would make the role or the launch policy wrong."""
    if not _JOB_PREFIX.match(job_prefix):
        raise ValueError(
            f"job_prefix {job_prefix!r} must be lowercase letters, digits and '-', ending in "
            "'--' (e.g. training_job_prefix('novapod-dev'))"
        )
    for name, prefix in (("recipe_prefix", recipe_prefix), ("output_prefix", output_prefix)):
        if not prefix.endswith("/") or prefix.startswith("/"):
            raise ValueError(f"{name} {prefix!r} must be a key prefix ending in '/', e.g. 'nova/'")
    if any(not k or k.startswith("/") or "*" in k.removesuffix("*") for k in input_keys):
        raise ValueError(
            f"input_keys {list(input_keys)!r} must be object keys or prefixes in the data "
            "bucket, with at most a trailing '*'"
        )
    if not subnet_ids:
        raise ValueError("subnet_ids is empty: training jobs run in the VPC's private subnets")
    if not repositories:
        raise ValueError(
            "repositories is empty: pass the jobs' image repositories "
            "(nova_training_job_repositories)"
        )
