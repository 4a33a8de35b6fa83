"""`novapod destroy-plan CONFIG`: the exact sequence that removes an environment.

Pure: computed from the config, offline, from the sources the stacks are built from
(novapod/config/stacks.py: which stacks, their names, termination protection and the
pinned names and logical IDs). tests/stacks/test_destroy_plan_assembly.py checks the plan of
every shipped config against its synthesized assembly: the same stacks, each destroyed
before every stack it depends on, and every resource whose DeletionPolicy is Retain in
the templates listed under what stays.

The plan has three steps:

1. before destroying anything: save the purchase ledger's record and the names of what
   stays (a stack's outputs and resources go with it; the removal commands need them);
2. the stacks, newest first: `npx cdk destroy --exclusively` one at a time (without it
   CDK also destroys the stacks that depend on the one named), termination protection
   turned off before the storage stack, what blocks a stack's deletion removed first;
3. what stays, whether it keeps costing, and the commands that remove it, in an order
   that works (deployments before their models, every bucket before the access-log
   bucket they log into, the key that encrypts them last).

What AWS bills for each is in docs/destroying.md, with the pricing pages it rests on.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from novapod.capacity.naming import training_plan_name
from novapod.config import VALIDATE_AS_OF_ENV, NovapodConfig, load_config
from novapod.config.stacks import (
    STORAGE_PINNED_IDS,
    TERMINATION_PROTECTED,
    control_plane_log_group,
    lifecycle_bucket_name,
    plan_logical_id,
    stack_kinds,
    stack_name,
)
from novapod.nova.access import HYPERPOD_LOG_GROUP_PREFIX

# Empties a versioned bucket (the AWS Knowledge Center's "use a lifecycle configuration
# rule to empty an S3 bucket", repost.aws/knowledge-center/s3-empty-bucket-lifecycle-rule):
# one rule expires current versions and deletes noncurrent ones, a second removes the
# delete markers left behind and incomplete uploads; S3 runs the rules once a day.
EMPTY_BUCKET_RULES = json.dumps(
    {
        "Rules": [
            {
                "ID": "novapod-destroy-versions",
                "Status": "Enabled",
                "Filter": {},
                "Expiration": {"Days": 1},
                "NoncurrentVersionExpiration": {"NoncurrentDays": 1},
            },
            {
                "ID": "novapod-destroy-markers",
                "Status": "Enabled",
                "Filter": {},
                "Expiration": {"ExpiredObjectDeleteMarker": True},
                "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
            },
        ]
    },
    separators=(",", ":"),
)
# A KMS key is deleted only after a waiting period of 7 to 30 days; the longest leaves
# the most time to notice something it still encrypts.
KEY_PENDING_DAYS = 30
ENVIRONMENT_TAG = "novapod:environment"
BUCKET_COSTS = "every object version it holds, per GB-month (nothing once empty)"


@dataclass(frozen=True)
class Recorded:
    """A name step 1 saves before the stacks go: `variable` gets the physical ID of
    `logical_id` in `stack` (DescribeStackResource)."""

    variable: str
    stack: str
    logical_id: str
    resource_type: str


@dataclass(frozen=True)
class Kept:
    """One thing that outlives the stacks."""

    what: str
    stack: str  # the stack it stays behind from; "" when a service made it
    logical_id: str | None  # its resource in that stack's template (None: not in one)
    resource_type: str | None
    name: str  # its name, or the shell variable step 1 records it in ("$DATA_BUCKET")
    costs: str | None  # what is billed until it is removed; None: nothing more
    remove: tuple[str, ...]  # the commands, in order (lines starting with # say why)
    recorded: Recorded | None = None  # where step 1 saves its name
    removed_before: str | None = None  # the stack kind it must be removed before
    made_by: str = ""  # the service that made it, when no stack did

    @property
    def keeps_costing(self) -> bool:
        return self.costs is not None


@dataclass(frozen=True)
class StackStep:
    kind: str
    stack: str
    before: tuple[str, ...]  # what to run first (comments start with #)
    command: str


@dataclass(frozen=True)
class DestroyPlan:
    environment: str
    config: str
    region: str
    account: str | None
    validate_as_of: str | None  # set for every novapod and cdk command, when needed
    names_file: str
    recorded: tuple[Recorded, ...]
    prepare: tuple[str, ...]
    steps: tuple[StackStep, ...]
    kept: tuple[Kept, ...]
    check: str

    @property
    def stacks(self) -> tuple[str, ...]:
        return tuple(step.stack for step in self.steps)


def cdk_logical_id(*path: str) -> str:
    """The logical ID CDK gives the resource at `path` below its stack: aws-cdk-lib's
    makeUniqueId (core/lib/private/uniqueid.js, 2.275.0): "Default" is dropped, a single
    component is the ID itself, else the components without "Resource" and repeats,
    alphanumerics only, then the first 8 hex digits of the MD5 of the path, upper case."""
    components = [c for c in path if c != "Default"]
    if len(components) == 1:
        return _alphanumeric(components[0])
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()
    human: list[str] = []
    for component in components:
        if not human or not human[-1].endswith(component):
            human.append(component)
    readable = "".join(_alphanumeric(c) for c in human if c != "Resource")[:240]
    return readable + digest[:8].upper()


def _alphanumeric(text: str) -> str:
    return "".join(c for c in text if c.isascii() and c.isalnum())


def load(path: str) -> NovapodConfig:
    """The config to destroy, validated as any other, except for what a destroy does
    not need: the approvals (nothing is bought) and whether the plan windows are still
    open (they usually have ended by then; `validate_as_of` says how the cdk commands
    get past that)."""
    return load_config(path, approvals=False, windows=False)


def validate_as_of(config: NovapodConfig, now: datetime) -> str | None:
    """A time that validation accepts the config at, when `now` does not.

    `cdk destroy` synthesizes the app, which validates the config, and validation
    refuses a plan to buy whose window has ended (no plan can be bought for it), which
    is how a config looks once its plans have run. Destroying needs only the stack
    names: judged a second before the first window ends, the config synthesizes as it
    did when it was deployed."""
    ends = [
        spec.end_before
        for spec in config.capacity.training_plans
        if not spec.adopted and spec.end_before is not None
    ]
    if not ends or min(ends) > now:
        return None
    return (min(ends) - timedelta(seconds=1)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def destroy_plan(config: NovapodConfig, config_path: str, *, now: datetime) -> DestroyPlan:
    """The sequence that destroys `config`'s environment, as `novapod destroy-plan` prints it."""
    region = config.region
    names_file = f"{config.prefix}-retained.env"
    as_of = validate_as_of(config, now)
    prefix = f"{VALIDATE_AS_OF_ENV}={as_of} " if as_of else ""
    path = shlex.quote(config_path)
    kept = _kept(config)
    by_stack: dict[str, list[Kept]] = {}
    for item in kept:
        by_stack.setdefault(item.stack, []).append(item)
    purchases_file = f"{config.prefix}-purchases.json"
    scientist_policy = _scientist_policy(config)
    recorded = [item.recorded for item in kept if item.recorded is not None]
    if scientist_policy is not None:
        recorded.append(scientist_policy)
    prepare = []
    if config.hyperpod is not None and config.hyperpod.restricted_instance_groups:
        prepare.append(
            "# Copy what you need out of the restricted groups' FSx for Lustre first: the "
            "HyperPod cluster deletes it (it syncs to S3 about 30 minutes after a job)."
        )
    prepare += [
        "# The purchase ledger's record of every plan, extension and Bedrock import "
        "(novapod purchases reads the table through the storage stack, gone after step 2):",
        f"{prefix}novapod purchases {path} --json > {purchases_file}",
        "# The names of what stays, for steps 2 and 3 (a stack's outputs and resources go "
        "with it):",
        *(_record(record, names_file, region) for record in recorded),
    ]
    steps = []
    for kind in reversed(stack_kinds(config)):
        name = stack_name(config, kind)
        before: list[str] = []
        if kind == "nova" and scientist_policy is not None:
            before += [
                f". ./{names_file}",
                "# If you attached the scientists' policy to these roles, detach it: IAM "
                "deletes no managed policy that is still attached.",
                *(
                    f"aws iam detach-role-policy --role-name {shlex.quote(role)} "
                    f'--policy-arn "${scientist_policy.variable}" --region {region}'
                    for role in _role_names(config)
                ),
            ]
        if kind in TERMINATION_PROTECTED:
            before.append(
                "aws cloudformation update-termination-protection "
                f"--no-enable-termination-protection --stack-name {name} --region {region}"
            )
        blocking = [item for item in kept if item.removed_before == kind]
        if blocking:
            before.append(f". ./{names_file}")
            for item in blocking:
                before += item.remove
        steps.append(
            StackStep(
                kind=kind,
                stack=name,
                before=tuple(before),
                command=f"{prefix}npx cdk destroy --exclusively -c config={path} {name}",
            )
        )
    check = (
        "aws resourcegroupstaggingapi get-resources --tag-filters "
        + shlex.quote(
            json.dumps([{"Key": ENVIRONMENT_TAG, "Values": [config.name]}], separators=(",", ":"))
        )
        + f" --query 'ResourceTagMappingList[].ResourceARN' --output text --region {region}"
    )
    return DestroyPlan(
        environment=config.name,
        config=config_path,
        region=region,
        account=config.account,
        validate_as_of=as_of,
        names_file=names_file,
        recorded=tuple(recorded),
        prepare=tuple(prepare),
        steps=tuple(steps),
        kept=tuple(kept),
        check=check,
    )


def _record(record: Recorded, names_file: str, region: str) -> str:
    """Appends `VARIABLE=<physical ID>` to the names file."""
    lookup = (
        f"aws cloudformation describe-stack-resource --stack-name {record.stack} "
        f"--logical-resource-id {record.logical_id} "
        f"--query StackResourceDetail.PhysicalResourceId --output text --region {region}"
    )
    return f'echo "{record.variable}=$({lookup})" >> {names_file}'


def _role_names(config: NovapodConfig) -> list[str]:
    """The scientists' role names: the last part of each ARN (after any role path)."""
    return [arn.rsplit("/", 1)[-1] for arn in config.nova_settings.scientists]


def _scientist_policy(config: NovapodConfig) -> Recorded | None:
    """The scientists' managed policy (deleted with the nova stack), when there are
    scientists to have attached it to: its ARN is saved to detach it first."""
    if "nova" not in stack_kinds(config) or not config.nova_settings.scientists:
        return None
    return Recorded(
        variable="SCIENTIST_POLICY",
        stack=stack_name(config, "nova"),
        logical_id=cdk_logical_id("ScientistPolicy", "Resource"),
        resource_type="AWS::IAM::ManagedPolicy",
    )


def _kept(config: NovapodConfig) -> list[Kept]:
    """What outlives the stacks, in the order it can be removed."""
    kinds = stack_kinds(config)
    region = config.region
    found: list[Kept] = []
    if "nova" in kinds:
        found += _bedrock_models(config)
    if "nova-base" in kinds and config.nova_settings.mlflow.enabled:
        found.append(
            Kept(
                what="MLflow tracking server",
                stack=stack_name(config, "nova-base"),
                logical_id="MlflowTrackingServer",
                resource_type="AWS::SageMaker::MlflowTrackingServer",
                name=config.prefix,  # the server is named after the cluster
                costs="billed for every hour it exists, by size; its runs' artifacts are in "
                "the artifacts bucket (mlflow/)",
                remove=(
                    "aws sagemaker delete-mlflow-tracking-server --tracking-server-name "
                    f"{config.prefix} --region {region}",
                ),
            )
        )
    if "capacity" in kinds:
        found += _training_plans(config)
    if config.storage.lustre is not None:
        found.append(
            _stored(
                config,
                "FSx for Lustre file system (storage.lustre)",
                "lustre",
                "AWS::FSx::FileSystem",
                "LUSTRE_FILE_SYSTEM",
                costs="its provisioned storage, per GB-month",
                remove=(
                    "# The Lustre file system holds network interfaces in the network's "
                    "subnets and uses its security group: delete it (once its changes are "
                    "exported to the data bucket) or keep the network.",
                    'aws fsx delete-file-system --file-system-id "$LUSTRE_FILE_SYSTEM" '
                    f"--region {region}",
                    "# Wait until this answers FileSystemNotFound:",
                    'aws fsx describe-file-systems --file-system-ids "$LUSTRE_FILE_SYSTEM" '
                    f"--region {region}",
                ),
                removed_before="network",
            )
        )
    found += _log_groups(config)
    found += _buckets(config)
    found.append(
        _stored(
            config,
            "purchase ledger (DynamoDB table, deletion-protected)",
            "purchase_ledger",
            "AWS::DynamoDB::Table",
            "PURCHASE_LEDGER",
            costs="its storage and point-in-time recovery, per GB-month: a few kilobytes",
            remove=(
                "# The audit trail of every purchase (saved in step 1): delete it once "
                "nothing it records is still running.",
                f'aws dynamodb update-table --table-name "$PURCHASE_LEDGER" '
                f"--no-deletion-protection-enabled --region {region}",
                f'aws dynamodb delete-table --table-name "$PURCHASE_LEDGER" --region {region}',
            ),
        )
    )
    found.append(
        _stored(
            config,
            "KMS key of the buckets, log groups, ledger and file system",
            "key",
            "AWS::KMS::Key",
            "STORAGE_KEY",
            costs="a monthly fee per key (none while it is scheduled for deletion)",
            remove=(
                "# Last: what it encrypted (buckets, log groups, ledger, file system) cannot "
                "be read once it is deleted.",
                f'aws kms schedule-key-deletion --key-id "$STORAGE_KEY" '
                f"--pending-window-in-days {KEY_PENDING_DAYS} --region {region}",
            ),
        )
    )
    return found


def _stored(
    config: NovapodConfig,
    what: str,
    key: str,
    resource_type: str,
    variable: str,
    *,
    costs: str,
    remove: tuple[str, ...],
    removed_before: str | None = None,
) -> Kept:
    """A retained resource of the storage stack (logical ID pinned in STORAGE_PINNED_IDS)
    whose name step 1 records in `variable`."""
    storage = stack_name(config, "storage")
    logical_id = STORAGE_PINNED_IDS[key]
    return Kept(
        what=what,
        stack=storage,
        logical_id=logical_id,
        resource_type=resource_type,
        name=f"${variable}",
        costs=costs,
        remove=remove,
        recorded=Recorded(variable, storage, logical_id, resource_type),
        removed_before=removed_before,
    )


def _bedrock_models(config: NovapodConfig) -> list[Kept]:
    """The retained Bedrock models: each checkpoint imported is a model of its own,
    `<name>-<8 hex>`, with its on-demand deployment of the same name."""
    region = config.region
    found = []
    for model in config.nova_settings.bedrock_models:
        if not model.retain:
            continue  # deleted with the stack (one still importing is kept and logged)
        remove: list[str] = []
        if model.deployment == "on-demand":
            remove += [
                f"aws bedrock list-custom-model-deployments --name-contains {model.name}- "
                "--query 'modelDeploymentSummaries[].[customModelDeploymentName,"
                f"customModelDeploymentArn]' --output text --region {region}",
                "# DEPLOYMENT_ARN: each deployment listed that novapod purchases lists "
                "(deployment#...):",
                "aws bedrock delete-custom-model-deployment --custom-model-deployment-identifier "
                f"DEPLOYMENT_ARN --region {region}",
            ]
        remove += [
            f"aws bedrock list-custom-models --name-contains {model.name}- "
            f"--query 'modelSummaries[].[modelName,modelArn]' --output text --region {region}",
            "# MODEL_ARN: each model listed that novapod purchases lists (import#...):",
            f"aws bedrock delete-custom-model --model-identifier MODEL_ARN --region {region}",
        ]
        found.append(
            Kept(
                what=f"Bedrock custom models of {model.name} (bedrock_models, retain: true), "
                "one per checkpoint imported"
                + (", each with its on-demand deployment" if model.deployment else ""),
                stack=stack_name(config, "nova"),
                logical_id=cdk_logical_id("BedrockModels", f"Model-{model.name}"),
                resource_type="Custom::NovapodBedrockModel",
                name=f"{model.name}-<8 hex>",
                costs="a monthly storage fee per model"
                + (
                    "; an on-demand deployment is billed per token only" if model.deployment else ""
                ),
                remove=tuple(remove),
            )
        )
    return found


def _training_plans(config: NovapodConfig) -> list[Kept]:
    found = []
    for spec, request in config.training_plan_requests():
        if spec.existing_arn:
            name = spec.existing_arn.rsplit("/", 1)[-1]
            what = f"training plan {spec.name} (adopted, not bought here)"
        else:
            name = training_plan_name(config.name, request)
            what = f"training plan {spec.name}" + (" and its extension" if spec.extend else "")
        found.append(
            Kept(
                what=what,
                stack=stack_name(config, "capacity"),
                logical_id=plan_logical_id(spec.name),
                resource_type="Custom::NovapodTrainingPlan",
                name=name,
                costs=None,
                remove=(
                    "# Nothing to remove: a training plan cannot be cancelled or deleted; its "
                    "fee was paid up front and it ends on its end date.",
                ),
            )
        )
    return found


def _log_groups(config: NovapodConfig) -> list[Kept]:
    region = config.region
    found = []
    if config.hyperpod is not None:
        group_prefix = f"{HYPERPOD_LOG_GROUP_PREFIX}{config.prefix}/"
        found.append(
            Kept(
                what="HyperPod cluster log group (the jobs' logs)",
                stack="",
                logical_id=None,
                resource_type=None,
                name=f"{group_prefix}<cluster id>",
                costs="its stored log data, per GB-month, until deleted (novapod sets no "
                "retention on it)",
                remove=(
                    f"aws logs describe-log-groups --log-group-name-prefix {group_prefix} "
                    f"--query 'logGroups[].logGroupName' --output text --region {region}",
                    "# LOG_GROUP: the group listed above:",
                    f"aws logs delete-log-group --log-group-name LOG_GROUP --region {region}",
                ),
                made_by="HyperPod",
            )
        )
    if config.eks is not None:
        name = control_plane_log_group(config.prefix)
        days = config.eks.log_retention_days
        found.append(
            Kept(
                what="EKS control-plane log group",
                stack=stack_name(config, "eks"),
                logical_id=cdk_logical_id("ControlPlaneLogs", "Resource"),
                resource_type="AWS::Logs::LogGroup",
                name=name,
                costs=f"its stored log data, per GB-month, until its {days}-day retention "
                "expires it; the name is taken until it is deleted",
                remove=(f"aws logs delete-log-group --log-group-name {name} --region {region}",),
            )
        )
    flow_logs = config.network.flow_logs
    if flow_logs.enabled:
        stack = stack_name(config, "eks" if config.eks is not None else "storage")
        logical_id = cdk_logical_id("VpcFlowLog", "LogGroup", "Resource")
        found.append(
            Kept(
                what="VPC flow-log log group",
                stack=stack,
                logical_id=logical_id,
                resource_type="AWS::Logs::LogGroup",
                name="$FLOW_LOG_GROUP",
                costs=f"its stored log data, per GB-month, until its {flow_logs.retention_days}"
                "-day retention expires it",
                remove=(
                    'aws logs delete-log-group --log-group-name "$FLOW_LOG_GROUP" '
                    f"--region {region}",
                ),
                recorded=Recorded("FLOW_LOG_GROUP", stack, logical_id, "AWS::Logs::LogGroup"),
            )
        )
    return found


def _buckets(config: NovapodConfig) -> list[Kept]:
    lifecycle = bool(config.hyperpod and config.hyperpod.instance_groups)
    buckets = [
        ("data bucket", "data", "DATA_BUCKET"),
        (
            "artifacts bucket (job outputs, recipes, MLflow artifacts)",
            "artifacts",
            "ARTIFACTS_BUCKET",
        ),
    ]
    if lifecycle:
        buckets.append(("lifecycle-scripts bucket", "lifecycle_scripts", "LIFECYCLE_BUCKET"))
    # Last: the other buckets write their access logs into it while they exist.
    buckets.append(
        (
            "access-log bucket (emptied last: the others log into it)",
            "access_logs",
            "ACCESS_LOGS_BUCKET",
        )
    )
    found = []
    for what, key, variable in buckets:
        if key == "lifecycle_scripts" and config.account:
            fixed = lifecycle_bucket_name(config.name, config.account, config.region)
            found.append(
                Kept(
                    what=what + ": its name is taken until it is deleted",
                    stack=stack_name(config, "storage"),
                    logical_id=STORAGE_PINNED_IDS[key],
                    resource_type="AWS::S3::Bucket",
                    name=fixed,
                    costs=BUCKET_COSTS,
                    remove=_empty_and_delete(fixed, config.region),
                )
            )
            continue
        found.append(
            _stored(
                config,
                what,
                key,
                "AWS::S3::Bucket",
                variable,
                costs=BUCKET_COSTS,
                remove=_empty_and_delete(f'"${variable}"', config.region),
            )
        )
    return found


def _empty_and_delete(bucket: str, region: str) -> tuple[str, ...]:
    return (
        f"aws s3api put-bucket-lifecycle-configuration --bucket {bucket} "
        f"--lifecycle-configuration '{EMPTY_BUCKET_RULES}' --region {region}",
        "# S3 runs the rules once a day (and stops billing what they mark); once this "
        "lists no Versions and no DeleteMarkers, a day or more later, delete the bucket:",
        f"aws s3api list-object-versions --bucket {bucket} --max-items 1 --region {region}",
        f"aws s3api delete-bucket --bucket {bucket} --region {region}",
    )


def render_text(plan: DestroyPlan) -> str:
    """The plan as shell lines: commands to run in order, comments (#) to read first."""
    where = f"region {plan.region}" + (f", account {plan.account}" if plan.account else "")
    lines = [
        f"# novapod destroy-plan {plan.config}: environment {plan.environment}, {where}.",
        "# Run each command from this checkout, in order, after reading the comment above it.",
    ]
    if plan.validate_as_of:
        lines.append(
            f"# The config's plan windows have ended, which validation refuses: the novapod "
            f"and cdk commands judge it as of {plan.validate_as_of} ({VALIDATE_AS_OF_ENV})."
        )
    lines += ["", "# 1. Before destroying anything", *plan.prepare, ""]
    lines.append("# 2. The stacks, one at a time, each before the stacks it uses")
    for step in plan.steps:
        stays = [item.what for item in plan.kept if item.stack == step.stack]
        lines.append(f"# {step.stack}" + (f" (stays: {'; '.join(stays)})" if stays else ""))
        lines += [*step.before, step.command]
    lines += ["", "# 3. What stays, whether it keeps costing, and how to remove it, in order"]
    lines.append(f". ./{plan.names_file}")
    for item in plan.kept:
        source = (
            f"{item.stack}, {item.logical_id}"
            if item.stack
            else f"made by {item.made_by}, in no stack"
        )
        cost = f"keeps costing: {item.costs}" if item.costs else "costs nothing more"
        lines.append(f"# {item.what}: {item.name} ({source}); {cost}.")
        if item.removed_before:
            lines.append(f"# Removed in step 2, before the {item.removed_before} stack.")
        else:
            lines += item.remove
    lines += ["", "# Whatever still carries the environment's tag:", plan.check]
    return "\n".join(lines) + "\n"


def plan_json(plan: DestroyPlan) -> dict[str, Any]:
    """The plan as JSON: `stacks` in order, `kept` in removal order."""
    return {
        "environment": plan.environment,
        "config": plan.config,
        "region": plan.region,
        "account": plan.account,
        "validate_as_of": plan.validate_as_of,
        "names_file": plan.names_file,
        "recorded": [asdict(record) for record in plan.recorded],
        "prepare": list(plan.prepare),
        "stacks": [
            {
                "kind": step.kind,
                "name": step.stack,
                "before": list(step.before),
                "command": step.command,
                "termination_protected": step.kind in TERMINATION_PROTECTED,
            }
            for step in plan.steps
        ],
        "kept": [
            {**asdict(item), "remove": list(item.remove), "keeps_costing": item.keeps_costing}
            for item in plan.kept
        ],
        "check": plan.check,
    }
