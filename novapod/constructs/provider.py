"""Python custom-resource handlers behind a CDK `Provider`, with novapod's defaults.

Both novapod custom resources (TrainingPlan, ClusterBootstrap) have an `on_event` and
an `is_complete` function. This construct gives each function its own role that may
write only to its own log group (no AWSLambdaBasicExecutionRole), gives the framework
functions roles of the same kind, logs the waiter state machine at level ALL, sets
retention everywhere, and acknowledges the cdk-nag findings the framework itself
causes, each with its reason. Callers add their API permissions to the two roles.

Nothing here refers to a deployed value of the caller's resources: CloudFormation can
create the functions, roles and state machine as soon as the stack starts, in
parallel with whatever the custom resource itself waits for.

Compliance (NIST 800-53 R5, HIPAA, checkov; see novapod/constructs/acknowledge.py):
- log groups use the environment's key when the caller gives one;
- every function reserves the concurrency it can need: one execution per custom
  resource the provider serves (counted at synth, at most MAX_RESERVED), so a busy
  account cannot throttle a deploy, and nothing here can take the account's pool.
  Lambda keeps 100 of the account's concurrency unreserved
  (docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html): an account
  whose quota is below 100 plus novapod's reservations must raise it. CloudFormation
  invokes the framework's entry function asynchronously
  (docs.aws.amazon.com/lambda/latest/dg/services-cloudformation.html), and Lambda
  retries a throttled asynchronous event, so a provider serving more resources than
  MAX_RESERVED queues them; the handlers are only invoked by the framework function,
  which never runs more copies than they reserve;
- with `placement`, the two handler functions run in the private subnets in a
  security group of their own (HTTPS out, nothing in). The framework functions stay
  outside (see `_acknowledge_framework`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import jsii
from aws_cdk import Aws, Duration, IStableNumberProducer, Lazy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.log_retention import log_group
from novapod.constructs.network import PrivatePlacement

RUNTIME = lambda_.Runtime.PYTHON_3_14
MEMORY_MB = 256
MAX_RESERVED = 10
HTTPS = 443
FRAMEWORK_FUNCTIONS = ("framework-onEvent", "framework-isComplete", "framework-onTimeout")

# Why each framework function of a CDK Provider is as it is, for every provider here.
FRAMEWORK_REASONS = {
    "LambdaDLQ": "CDK's custom-resource framework function: it reports every failure to "
    "CloudFormation itself (FAILED), and an event parked in a dead-letter queue cannot be "
    "replayed into the stack operation, which fails and rolls back instead.",
    "LambdaInsideVPC": "CDK's custom-resource framework function only relays events "
    "between CloudFormation, Lambda and Step Functions and touches nothing in the VPC; in "
    "private subnets it would need a NAT route or Lambda, Step Functions and S3 endpoints "
    "before the stack's own resources, and its network interfaces would hold up deletion.",
    "LambdaEnvironmentEncryption": "The framework's variables hold only the ARNs of this "
    "provider's own functions and state machine, no secret; Lambda encrypts them at rest "
    "with its AWS managed key.",
}


def handler_code(root: Path) -> lambda_.Code:
    """A handler's Lambda asset: the `handler/` package under `root` (the construct
    beside it, caches and READMEs stay out) and the handler core, `handler_core/`, as
    every custom resource here ships it.

    The asset mirrors the source layout under a package of its own,
    `novapod_lambda/<construct>/handler/` beside `novapod_lambda/handler_core/`, so the
    handlers' relative imports (`from ...handler_core import aws`) work in both; the
    handler strings are `core_handler_module(root)`.*. Staged at synth into a directory
    named by the digest of its files (the asset's hash is of the content; no Docker,
    deterministic).
    """
    return lambda_.Code.from_asset(str(_stage_with_core(root)))


CORE_PACKAGE = "novapod_lambda"
_CORE_ROOT = Path(__file__).resolve().parent / "handler_core"


def _user_id() -> int:
    getuid = getattr(os, "getuid", None)
    return int(getuid()) if getuid is not None else 0


def _holds(stage: Path, files: dict[str, bytes]) -> bool:
    """The staged directory has exactly these files with these contents."""
    found = {str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file()}
    return found == set(files) and all((stage / n).read_bytes() == c for n, c in files.items())


def core_handler_module(root: Path) -> str:
    """The handlers' module in an asset made with `handler_code`."""
    return f"{CORE_PACKAGE}.{root.name}.handler.index"


def _stage_with_core(root: Path) -> Path:
    files = {
        f"{CORE_PACKAGE}/__init__.py": b"",
        f"{CORE_PACKAGE}/{root.name}/__init__.py": b"",
    }
    for folder, prefix in (
        (root / "handler", f"{root.name}/handler"),
        (_CORE_ROOT, "handler_core"),
    ):
        for source in sorted(folder.glob("*.py")):
            files[f"{CORE_PACKAGE}/{prefix}/{source.name}"] = source.read_bytes()
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    # A directory of this user's only (another user of the machine cannot plant code in
    # a purchasing Lambda), named by the digest of its files.
    root_dir = Path(tempfile.gettempdir()) / f"novapod-assets-{_user_id()}"
    root_dir.mkdir(mode=0o700, exist_ok=True)
    if root_dir.stat().st_uid != _user_id() or root_dir.stat().st_mode & 0o077:
        raise RuntimeError(f"{root_dir} is not a private directory of this user; remove it")
    stage = root_dir / digest.hexdigest()[:32]
    if stage.is_dir() and not _holds(stage, files):
        shutil.rmtree(stage, ignore_errors=True)  # half removed or changed: build it anew
    if not stage.is_dir():
        # Built beside, then renamed: parallel synths (test workers) never see half of it.
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=root_dir))
        for name, content in files.items():
            (partial / name).parent.mkdir(parents=True, exist_ok=True)
            (partial / name).write_bytes(content)
        try:
            partial.rename(stage)
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)  # another process staged it first
    return stage


class HandlerProvider(Construct):
    """`on_event` and `is_complete` functions (handler strings `<handler_module>.*`:
    `core_handler_module(root)` of the asset `handler_code(root)`).

    `on_event_logs` and `is_complete_logs` are their log groups (what the handlers
    print: the decision on each event, the state on each poll).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        code: lambda_.Code,
        purpose: str,
        on_event_timeout: Duration,
        is_complete_timeout: Duration,
        query_interval: Duration,
        total_timeout: Duration,
        log_retention_days: int,
        encryption_key: kms.IKey | None = None,
        handler_module: str,
        placement: PrivatePlacement | None = None,
    ) -> None:
        super().__init__(scope, id_)
        self._purpose = purpose
        self._days = log_retention_days
        self._key = encryption_key
        self._served = _ServedCount()
        # Known once every custom resource has read the service token (at synth).
        self.reserved_concurrency = Lazy.number(self._served)
        self.on_event_logs = self.log_group("OnEventLogs")
        self.is_complete_logs = self.log_group("IsCompleteLogs")
        self.on_event = self._function(
            "OnEvent",
            code=code,
            handler=f"{handler_module}.on_event",
            timeout=on_event_timeout,
            log_group=self.on_event_logs,
        )
        self.is_complete = self._function(
            "IsComplete",
            code=code,
            handler=f"{handler_module}.is_complete",
            timeout=is_complete_timeout,
            log_group=self.is_complete_logs,
        )
        framework_logs = self.log_group("FrameworkLogs")
        self._framework_roles = [
            self._role(f"Framework{name}Role", framework_logs, "custom-resource framework")
            for name in ("OnEvent", "CompleteAndTimeout")
        ]
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.on_event,
            is_complete_handler=self.is_complete,
            query_interval=query_interval,
            total_timeout=total_timeout,
            log_group=framework_logs,
            framework_on_event_role=self._framework_roles[0],
            framework_complete_and_timeout_role=self._framework_roles[1],
            disable_waiter_state_machine_logging=False,
            waiter_state_machine_log_options=cr.LogOptions(
                destination=self.log_group("WaiterLogs"),
                level=sfn.LogLevel.ALL,
                include_execution_data=False,
            ),
        )
        self.security_group: ec2.CfnSecurityGroup | None = None
        if placement is not None:
            self.security_group = self._attach_to_vpc(placement)
        self._reserve_framework_concurrency()
        self._acknowledge()

    @property
    def service_token(self) -> str:
        """The Provider's token; each custom resource reads it once, which counts it
        among the resources the functions reserve concurrency for."""
        self._served.count += 1
        return str(self.provider.service_token)

    def log_group(self, id_: str) -> logs.LogGroup:
        return log_group(self, id_, days=self._days, key=self._key)

    def _role(self, id_: str, log_group: logs.ILogGroup, what: str) -> iam.Role:
        return function_role(
            self, id_, log_group=log_group, description=f"novapod {self._purpose}: {what}"
        )

    def _function(
        self,
        id_: str,
        *,
        code: lambda_.Code,
        handler: str,
        timeout: Duration,
        log_group: logs.ILogGroup,
    ) -> lambda_.Function:
        return lambda_.Function(
            self,
            id_,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            code=code,
            handler=handler,
            timeout=timeout,
            memory_size=MEMORY_MB,
            role=self._role(f"{id_}Role", log_group, handler),
            log_group=log_group,
            description=f"novapod {self._purpose}: {handler}",
            reserved_concurrent_executions=self.reserved_concurrency,
        )

    def _reserve_framework_concurrency(self) -> None:
        for name in FRAMEWORK_FUNCTIONS:
            child = self.provider.node.try_find_child(name)
            if child is None:  # no is_complete: only framework-onEvent
                continue
            cfn = child.node.default_child
            assert isinstance(cfn, lambda_.CfnFunction)
            cfn.reserved_concurrent_executions = self.reserved_concurrency

    def _attach_to_vpc(self, placement: PrivatePlacement) -> ec2.CfnSecurityGroup:
        """Both handler functions in the private subnets, in a group of their own."""
        # HTTPS out only: the AWS APIs they call, through the VPC's NAT route or
        # endpoints; nothing may connect to them.
        group = https_egress_group(
            self,
            "SecurityGroup",
            vpc_id=placement.vpc_id,
            description=f"novapod {self._purpose} handlers: HTTPS to AWS APIs",
            destination="HTTPS to AWS service APIs",
        )
        for function in (self.on_event, self.is_complete):
            attach_to_vpc(function, subnet_ids=placement.subnet_ids, security_group=group)
        return group

    def _acknowledge(self) -> None:
        self._acknowledge_framework()
        for function in (self.on_event, self.is_complete):
            acknowledge(function, "LambdaDLQ", HANDLER_DLQ_REASON)
        for role in self._framework_roles:
            for function in (self.on_event, self.is_complete):
                acknowledge(
                    default_policy(role),
                    f"AwsSolutions-IAM5[Resource::{nag_resource(self, function.function_arn)}:*]",
                    "The Provider framework invokes this one handler function and its "
                    "versions (ARN:*), as CDK grants it.",
                )
        waiter = self.provider.node.find_child("waiter-state-machine")
        waiter_policy = default_policy(waiter.node.find_child("Role"))
        for child in ("framework-isComplete", "framework-onTimeout"):
            framework = self.provider.node.find_child(child)
            assert isinstance(framework, lambda_.Function)
            acknowledge(
                waiter_policy,
                f"AwsSolutions-IAM5[Resource::{nag_resource(self, framework.function_arn)}:*]",
                "The Provider's waiter state machine invokes its own framework function and "
                "that function's versions (ARN:*).",
            )
        acknowledge(
            waiter_policy,
            "AwsSolutions-IAM5[Resource::*]",
            "Step Functions log delivery (logs:CreateLogDelivery, PutResourcePolicy, ...) has "
            "no resource-level permissions; CDK grants these for the waiter's execution logs.",
        )
        acknowledge(
            waiter,
            "AwsSolutions-SF2",
            "The Provider framework's waiter state machine offers no X-Ray tracing option; "
            "its executions are logged at level ALL instead.",
        )

    def keep_outside_vpc(self, reason: str, *functions: lambda_.Function) -> None:
        """Say why these handler functions (default: both) run outside the VPC."""
        for function in functions or (self.on_event, self.is_complete):
            acknowledge(function, "LambdaInsideVPC", reason)

    def _acknowledge_framework(self) -> None:
        for name in FRAMEWORK_FUNCTIONS:
            function = self.provider.node.try_find_child(name)
            if function is None:
                continue
            for rule, reason in FRAMEWORK_REASONS.items():
                acknowledge(function, rule, reason)


@jsii.implements(IStableNumberProducer)
class _ServedCount:
    """How many custom resources a provider serves, as the concurrency they reserve."""

    def __init__(self) -> None:
        self.count = 0

    def produce(self) -> int:
        return min(max(self.count, 1), MAX_RESERVED)


HANDLER_DLQ_REASON = (
    "Invoked synchronously by CDK's custom-resource framework, which reports a failure to "
    "CloudFormation; a dead-letter queue receives only failed asynchronous invocations "
    "(docs.aws.amazon.com/lambda/latest/api/API_DeadLetterConfig.html)."
)


def function_role(
    scope: Construct, id_: str, *, log_group: logs.ILogGroup, description: str
) -> iam.Role:
    """A Lambda function's role that may write only to its own log group (no
    AWSLambdaBasicExecutionRole, which may write to every log group)."""
    role = iam.Role(
        scope,
        id_,
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=description,
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[log_group.log_group_arn],
        )
    )
    return role


def https_egress_group(
    scope: Construct, id_: str, *, vpc_id: str, description: str, destination: str
) -> ec2.CfnSecurityGroup:
    """A function's own security group: HTTPS out to anywhere (`destination` says what it
    reaches), nothing in."""
    return ec2.CfnSecurityGroup(
        scope,
        id_,
        vpc_id=vpc_id,
        group_description=description,
        security_group_egress=[
            ec2.CfnSecurityGroup.EgressProperty(
                ip_protocol="tcp",
                from_port=HTTPS,
                to_port=HTTPS,
                cidr_ip="0.0.0.0/0",
                description=destination,
            )
        ],
    )


def attach_to_vpc(
    function: lambda_.Function, *, subnet_ids: Sequence[str], security_group: ec2.CfnSecurityGroup
) -> None:
    """Run `function` in these subnets and group, with the permissions Lambda needs.

    Set on the L1: the L2's vpc option attaches AWSLambdaVPCAccessExecutionRole, which
    may write to every log group. Lambda documents the execution role's permissions
    (docs.aws.amazon.com/lambda/latest/dg/configuration-vpc.html): DescribeNetworkInterfaces
    only on "*", the others on this account's EC2 resources. A function in a VPC slows
    the deletion of its stack: CloudFormation waits until Lambda has deleted the
    function's network interfaces (the AWS::Lambda::Function VpcConfig reference), which
    Lambda detaches and deletes only some time after the function is gone (see
    hashicorp/terraform-provider-aws commit 922037e, "Updated handling for Lambda
    Hyperplane ENIs"): minutes more for `cdk destroy`.
    """
    cfn = function.node.default_child
    assert isinstance(cfn, lambda_.CfnFunction)
    # On the L1's property, not an override: cdk-nag reads the property.
    cfn.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
        subnet_ids=list(subnet_ids), security_group_ids=[security_group.attr_group_id]
    )
    stack = Stack.of(function)
    account_ec2 = f"arn:{Aws.PARTITION}:ec2:{stack.region}:{stack.account}:*/*"
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="AttachToVpc",
            actions=[
                "ec2:CreateNetworkInterface",
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ],
            resources=[account_ec2],
        )
    )
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="DescribeNetworkInterfaces",
            actions=["ec2:DescribeNetworkInterfaces"],
            resources=["*"],
        )
    )
    assert function.role is not None
    policy = default_policy(function.role)
    acknowledge(
        policy,
        "AwsSolutions-IAM5[Resource::*]",
        "ec2:DescribeNetworkInterfaces has no resource-level permissions; Lambda needs "
        "it in the role of a function attached to a VPC (configuration-vpc.html).",
    )
    acknowledge(
        policy,
        f"AwsSolutions-IAM5[Resource::{nag_resource(function, account_ec2)}]",
        "Lambda creates and deletes the function's network interfaces, whose IDs are "
        "unknown in advance; limited to this account and Region as the Lambda docs show.",
    )


def default_policy(role: IConstruct | None) -> IConstruct:
    """The DefaultPolicy CDK attaches to a role (where add_to_policy statements go)."""
    assert role is not None
    return role.node.find_child("DefaultPolicy")
