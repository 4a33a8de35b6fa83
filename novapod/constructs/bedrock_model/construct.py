"""The BedrockModel custom resources: a trained job's checkpoint imported into Amazon Bedrock.

CloudFormation has no resource for a custom-model import or deployment (reference §9).
`BedrockImport` (NovaBaseStack) holds, for one environment, the import role Bedrock
assumes to read the checkpoint and the two handler functions (code in `handler/`,
beside this file) behind a CDK `Provider`: all built from names known at synth, so
they do not wait for the clusters. `BedrockModels` (NovaStack) holds one custom
resource per `nova.bedrock_models` entry and the outputs.

IAM, from the service authorization reference for Amazon Bedrock
(docs.aws.amazon.com/service-authorization/latest/reference/list_amazonbedrock.html):
CreateCustomModel and ListCustomModels take no resource type (Resource "*");
GetCustomModel, DeleteCustomModel, TagResource and ListTagsForResource take
`custom-model`; CreateCustomModelDeployment takes `custom-model`; Get/Delete
CustomModelDeployment take `custom-model-deployment`. Both resource types end in an ID
Bedrock generates, so the narrowest ARN is this account and region's `custom-model/*`.
The handler never lists models (it looks its model up by name), so ListCustomModels
is not granted.

The import and the deployment are purchases of the environment's purchase ledger (the
storage stack's table, novapod/constructs/purchase_ledger.py): both functions may read
and claim that environment's items only (`PurchaseLedger.grant_purchases`), and each
model names the table and the environment (`LedgerTable`, `Environment`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from aws_cdk import Aws, CfnOutput, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from novapod.config import NovapodConfig
from novapod.config.nova import BedrockModel
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.bedrock_model.handler.decisions import (
    DEFAULT_WAIT_TIMEOUT_SECONDS,
    SOURCE_DIGEST_TAG,
)
from novapod.constructs.network import PrivatePlacement
from novapod.constructs.provider import (
    HandlerProvider,
    core_handler_module,
    default_policy,
    handler_code,
)
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.nova.render import output_prefix

HANDLER_ROOT = Path(__file__).resolve().parent
RESOURCE_TYPE = "Custom::NovapodBedrockModel"
# The handler's worst cases (handler/index.py: every Bedrock and S3 call bounded by a
# 5 s connect and 20 s read timeout, every ledger call by 2 s and 3 s, 3 attempts):
# on_event lists and reads the manifest, asks the ledger for the request, then runs
# rounds of look-up, claim and import while one fits its budget (ON_EVENT_BUDGET_SECONDS,
# 830 s; the first ends by ~12 min); one is_complete poll reads the model and the
# deployment and claims, creates and records the deployment, ~6.5 min.
ON_EVENT_TIMEOUT = Duration.minutes(14)
IS_COMPLETE_TIMEOUT = Duration.minutes(7)
QUERY_INTERVAL = Duration.minutes(1)
WAIT_TIMEOUT_SECONDS = DEFAULT_WAIT_TIMEOUT_SECONDS
# The poll that finds the wait over starts at most one interval after it and runs at
# most one is_complete timeout: the Provider must outlast both, within the hour
# CloudFormation gives a custom resource (CDK Provider totalTimeout, at most 1 h).
MAX_TOTAL_MINUTES = 60
TOTAL_TIMEOUT = Duration.minutes(
    WAIT_TIMEOUT_SECONDS // 60
    + QUERY_INTERVAL.to_minutes()
    + IS_COMPLETE_TIMEOUT.to_minutes()
    + 1  # margin for the framework's own steps
)
assert TOTAL_TIMEOUT.to_minutes() <= MAX_TOTAL_MINUTES
# Where HyperPod and SageMaker training jobs put Nova checkpoints: service-managed
# "escrow" buckets named customer-escrow-<account>-hp-<id> (HyperPod) or
# customer-escrow-<account>-smtj-<id> (aws/nova-forge-sdk
# src/amzn_nova_forge/util/platform_util.py, detect_platform_from_path). The bucket
# itself is named only at run time (manifest.json's checkpoint_s3_bucket).
ESCROW_BUCKET_PREFIX = "customer-escrow-"


def escrow_bucket_pattern() -> str:
    return f"arn:{Aws.PARTITION}:s3:::{ESCROW_BUCKET_PREFIX}{Aws.ACCOUNT_ID}-*"


class BedrockImport(Construct):
    """The import role and the Provider of the models' custom resources.

    `job_prefixes` are the key prefixes (in the artifacts bucket) of the jobs whose
    checkpoints are imported; `artifacts_bucket`, `import_role`, `handlers`, and the
    purchase ledger's `ledger_table` and `environment` the models name.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        environment: str,
        models: Sequence[BedrockModel],
        outputs_prefix: str,
        artifacts_bucket: s3.IBucket,
        key: kms.IKey,
        ledger: PurchaseLedger,
        log_retention_days: int,
        placement: PrivatePlacement | None = None,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        self.environment = environment
        self.ledger_table = ledger.table_name
        self._bucket = artifacts_bucket
        self.artifacts_bucket = artifacts_bucket
        jobs = list(dict.fromkeys(m.job for m in models))
        self.job_prefixes = [f"{outputs_prefix}{job}/" for job in jobs]
        self._outputs = [artifacts_bucket.arn_for_objects(f"{p}*") for p in self.job_prefixes]
        self.model_arns = stack.format_arn(
            service="bedrock", resource="custom-model", resource_name="*"
        )
        self.deployment_arns = stack.format_arn(
            service="bedrock", resource="custom-model-deployment", resource_name="*"
        )
        self.import_role = self._import_role(environment, key)
        self.handlers = HandlerProvider(
            self,
            "Handlers",
            code=handler_code(HANDLER_ROOT),
            handler_module=core_handler_module(HANDLER_ROOT),
            purpose="BedrockModel",
            on_event_timeout=ON_EVENT_TIMEOUT,
            is_complete_timeout=IS_COMPLETE_TIMEOUT,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            log_retention_days=log_retention_days,
            encryption_key=key,
            # The imports run in NovaStack, after the eks stack built the NAT routes and
            # endpoints through which the handlers reach Bedrock and S3.
            placement=placement,
        )
        if placement is None:
            self.handlers.keep_outside_vpc(
                "No private subnets were given for the handlers (bedrock_import's "
                "placement); they call only the Bedrock and S3 APIs."
            )
        self._grant_on_event(key)
        self._grant_is_complete()
        # on_event claims and records the import, Delete its next generation; is_complete
        # claims and records the deployment.
        for function in (self.handlers.on_event, self.handlers.is_complete):
            ledger.grant_purchases(function, environment)

    # --- the import role --------------------------------------------------------------

    def _import_role(self, environment: str, key: kms.IKey) -> iam.Role:
        """What Bedrock assumes to read the checkpoint.

        Trust and reads as docs.aws.amazon.com/bedrock/latest/userguide/
        model-import-iam-role.html gives them for both CreateModelImportJob and
        CreateCustomModel: bedrock.amazonaws.com with aws:SourceAccount, s3:GetObject
        and s3:ListBucket on the bucket holding the model files, which for a
        SageMaker-trained Nova model is "the Amazon-managed Amazon S3 bucket where
        SageMaker AI stores the trained model artifacts". The page's optional
        aws:SourceArn example names model-import-job/*; it shows none for
        CreateCustomModel, so the trust has no aws:SourceArn. Its aws:ResourceAccount
        example is for buckets of one's own: the docs do not say which account owns the
        escrow bucket, so that condition is left out. The docs name no escrow bucket
        either: the pattern customer-escrow-<account>-* follows AWS's Nova Forge SDK,
        which grants its Bedrock role s3:GetObject/ListBucket on
        customer-escrow-<account>* (aws/nova-forge-sdk src/amzn_nova_forge/iam/
        iam_role_creator.py, create_bedrock_execution_role). GetBucketLocation and
        kms:Decrypt as reference §9 lists them.
        """
        role = iam.Role(
            self,
            "ImportRole",
            assumed_by=iam.ServicePrincipal(
                "bedrock.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
            ),
            description=f"novapod {environment}: Amazon Bedrock reads a Nova job's "
            "checkpoint to import it (CreateCustomModel)",
        )
        escrow = escrow_bucket_pattern()
        policy = iam.Policy(
            self,
            "ImportPolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    sid="ReadCheckpoints",
                    actions=["s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation"],
                    resources=[escrow, f"{escrow}/*"],
                ),
                *self._output_reads("JobOutputs"),
                # Apart: a GetBucketLocation request has no s3:prefix to match.
                iam.PolicyStatement(
                    sid="LocateOutputsBucket",
                    actions=["s3:GetBucketLocation"],
                    resources=[self._bucket.bucket_arn],
                ),
                iam.PolicyStatement(
                    sid="DecryptJobOutputs", actions=["kms:Decrypt"], resources=[key.key_arn]
                ),
            ],
        )
        for resource, reason in (
            (
                escrow,
                "The checkpoint's escrow bucket is named by SageMaker at run time "
                "(customer-escrow-<account>-<platform>-<id>); this account's only.",
            ),
            (
                f"{escrow}/*",
                "Checkpoints sit below run folders SageMaker names in the escrow bucket; "
                "read only, this account's escrow buckets only.",
            ),
            *self._output_reasons(),
        ):
            acknowledge(
                policy, f"AwsSolutions-IAM5[Resource::{nag_resource(self, resource)}]", reason
            )
        return role

    def _output_reads(self, sid: str) -> list[iam.PolicyStatement]:
        """List and read the imported jobs' output prefixes (their runs' manifests)."""
        return [
            iam.PolicyStatement(
                sid=f"List{sid}",
                actions=["s3:ListBucket"],
                resources=[self._bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{p}*" for p in self.job_prefixes]}},
            ),
            iam.PolicyStatement(
                sid=f"Read{sid}", actions=["s3:GetObject"], resources=self._outputs
            ),
        ]

    def _output_reasons(self) -> list[tuple[str, str]]:
        return [
            (
                objects,
                "The Nova launcher names each run's folder below the job's output prefix "
                "(nova/<env>/<job>/<run>-<random>/); read only, imported jobs only.",
            )
            for objects in self._outputs
        ]

    # --- the handlers' permissions ------------------------------------------------------

    def _grant_on_event(self, key: kms.IKey) -> None:
        function = self.handlers.on_event
        statements = [
            *self._output_reads("JobOutputs"),
            iam.PolicyStatement(
                sid="DecryptManifests", actions=["kms:Decrypt"], resources=[key.key_arn]
            ),
            iam.PolicyStatement(
                sid="ImportModels", actions=["bedrock:CreateCustomModel"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="ReadAndTagModels",
                actions=[
                    "bedrock:GetCustomModel",
                    "bedrock:ListTagsForResource",
                    "bedrock:TagResource",
                ],
                resources=[self.model_arns],
            ),
            # Only models novapod imported carry the source tag (handler/decisions.py).
            iam.PolicyStatement(
                sid="DeleteOwnModels",
                actions=["bedrock:DeleteCustomModel"],
                resources=[self.model_arns],
                conditions={"Null": {f"aws:ResourceTag/{SOURCE_DIGEST_TAG}": "false"}},
            ),
            iam.PolicyStatement(
                sid="ReadAndDeleteDeployments",
                actions=[
                    "bedrock:GetCustomModelDeployment",
                    "bedrock:DeleteCustomModelDeployment",
                ],
                resources=[self.deployment_arns],
            ),
            iam.PolicyStatement(
                sid="PassImportRole",
                actions=["iam:PassRole"],
                resources=[self.import_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}},
            ),
        ]
        for statement in statements:
            function.add_to_role_policy(statement)
        policy = default_policy(function.role)
        acknowledge(
            policy,
            "AwsSolutions-IAM5[Resource::*]",
            "bedrock:CreateCustomModel has no resource-level permissions (the IAM service "
            "reference lists no resource type for it), so its statement must use Resource "
            "'*'.",
        )
        self._acknowledge_generated_ids(policy, [self.model_arns, self.deployment_arns])
        for resource, reason in self._output_reasons():
            acknowledge(
                policy, f"AwsSolutions-IAM5[Resource::{nag_resource(self, resource)}]", reason
            )

    def _grant_is_complete(self) -> None:
        function = self.handlers.is_complete
        statements = [
            iam.PolicyStatement(
                sid="ReadModelsAndDeploy",
                actions=["bedrock:GetCustomModel", "bedrock:CreateCustomModelDeployment"],
                resources=[self.model_arns],
            ),
            iam.PolicyStatement(
                sid="ReadAndTagDeployments",
                actions=["bedrock:GetCustomModelDeployment", "bedrock:TagResource"],
                resources=[self.deployment_arns],
            ),
        ]
        for statement in statements:
            function.add_to_role_policy(statement)
        self._acknowledge_generated_ids(
            default_policy(function.role), [self.model_arns, self.deployment_arns]
        )

    def _acknowledge_generated_ids(self, policy: IConstruct, arns: Sequence[str]) -> None:
        for arn in arns:
            acknowledge(
                policy,
                f"AwsSolutions-IAM5[Resource::{nag_resource(self, arn)}]",
                "Bedrock custom models and deployments end in an ID Bedrock generates; the "
                "handler finds them by name, this account and region only.",
            )


class BedrockModels(Construct):
    """One custom resource per model, served by a `BedrockImport`'s Provider.

    `models` maps a model's name to its custom resource.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        importer: BedrockImport,
        models: Sequence[BedrockModel],
        outputs_prefix: str,
        tags: Mapping[str, str],
    ) -> None:
        super().__init__(scope, id_)
        self._importer = importer
        self.models: dict[str, CustomResource] = {}
        for model in models:
            self.models[model.name] = self._model(model, outputs_prefix, tags)
        self._log_outputs()

    def _model(
        self, model: BedrockModel, outputs_prefix: str, tags: Mapping[str, str]
    ) -> CustomResource:
        # The same prefix render.output_uri gives the job's recipe (nova/<env>/<job>/).
        output_prefix = (
            f"s3://{self._importer.artifacts_bucket.bucket_name}/{outputs_prefix}{model.job}/"
        )
        properties = model_properties(
            model,
            output_prefix=output_prefix,
            role_arn=self._importer.import_role.role_arn,
            ledger_table=self._importer.ledger_table,
            environment=self._importer.environment,
            tags=tags,
        )
        # No KmsKeyArn: Bedrock then encrypts the model with an AWS-owned key. Using the
        # storage key would need Bedrock grants in that key's policy
        # (docs.aws.amazon.com/bedrock/latest/userguide/encryption-import-model.html),
        # which the storage stack does not give.
        resource = CustomResource(
            self,
            f"Model-{model.name}",
            service_token=self._importer.handlers.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
            # retain: CloudFormation never sends Delete (stack deletion, removal from the
            # config, or a newer checkpoint replacing the model), and the handler's
            # RetainOnDelete=true keeps the model should a Delete come anyway. Not
            # retained: Delete reaches the handler, which deletes the deployment and the
            # model (a model still Creating is kept, see handler/index.py _delete).
            removal_policy=RemovalPolicy.RETAIN if model.retain else RemovalPolicy.DESTROY,
        )
        CfnOutput(
            self,
            f"Model-{model.name}-Arn",
            value=resource.get_att_string("ModelArn"),
            description=f"ARN of Bedrock custom model {model.name} (bedrock_models), imported "
            f"from job {model.job}'s newest checkpoint; until the job has one, 'none yet: "
            "waiting for a checkpoint' (then change refresh and deploy).",
        )
        if model.deployment == "on-demand":
            CfnOutput(
                self,
                f"Model-{model.name}-DeploymentArn",
                value=resource.get_att_string("DeploymentArn"),
                description=f"On-demand deployment of Bedrock model {model.name}: the modelId "
                "of inference calls ('none yet' while the model waits for a checkpoint).",
            )
        return resource

    def _log_outputs(self) -> None:
        CfnOutput(
            self,
            "ImportLogGroup",
            value=self._importer.handlers.on_event_logs.log_group_name,
            description="Log group of the Bedrock import: the manifest read, the checkpoint "
            "and the CreateCustomModel call (or the model adopted).",
        )
        CfnOutput(
            self,
            "WaitLogGroup",
            value=self._importer.handlers.is_complete_logs.log_group_name,
            description="Log group of the wait for the Bedrock models (and deployments) to "
            "become Active, one line per poll.",
        )


def model_properties(
    model: BedrockModel,
    *,
    output_prefix: str,
    role_arn: str,
    ledger_table: str,
    environment: str,
    tags: Mapping[str, str],
) -> dict[str, object]:
    """The custom resource's properties (handler/decisions.py documents each)."""
    properties: dict[str, object] = {
        "ModelName": model.name,
        "OutputPrefix": output_prefix,
        "RoleArn": role_arn,
        "Deployment": model.deployment or "none",
        "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
        "RetainOnDelete": "true" if model.retain else "false",
        "WaitTimeoutSeconds": str(WAIT_TIMEOUT_SECONDS),
        "LedgerTable": ledger_table,
        "Environment": environment,
    }
    # A deploy with no property changed sends the resource no event (CloudFormation sends
    # Update only for changed properties: docs.aws.amazon.com/AWSCloudFormation/latest/
    # UserGuide/crpg-ref-requesttypes-update.html). A new `refresh` is how the user has the
    # handler read the job's newest run again: the import after a deploy that found none,
    # or a newer run's. Left out at 0, so templates from before it are unchanged.
    if model.refresh:
        properties["Refresh"] = str(model.refresh)
    return properties


def bedrock_import(
    scope: Construct,
    *,
    config: NovapodConfig,
    artifacts_bucket: s3.IBucket,
    key: kms.IKey,
    ledger: PurchaseLedger,
    placement: PrivatePlacement | None = None,
) -> BedrockImport | None:
    """The import role and handlers in NovaBaseStack (None without `nova.bedrock_models`)."""
    models = config.nova_settings.bedrock_models
    if not models:
        return None
    return BedrockImport(
        scope,
        "BedrockModels",
        environment=config.name,
        models=models,
        outputs_prefix=output_prefix(config),
        artifacts_bucket=artifacts_bucket,
        key=key,
        ledger=ledger,
        log_retention_days=config.eks.log_retention_days if config.eks else 365,
        placement=placement,
    )


def bedrock_models(
    scope: Construct, *, config: NovapodConfig, importer: BedrockImport | None
) -> BedrockModels | None:
    """The config's `nova.bedrock_models` in NovaStack (None without any)."""
    models = config.nova_settings.bedrock_models
    if importer is None or not models:
        return None
    return BedrockModels(
        scope,
        "BedrockModels",
        importer=importer,
        models=models,
        outputs_prefix=output_prefix(config),
        tags=config.resource_tags,
    )
