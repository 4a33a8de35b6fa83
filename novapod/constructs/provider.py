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
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.log_retention import log_group

RUNTIME = lambda_.Runtime.PYTHON_3_14
MEMORY_MB = 256


def handler_code(root: Path) -> lambda_.Code:
    """A handler's Lambda asset: only the `handler/` package under `root` (the construct
    beside it, caches and READMEs stay out), as every custom resource here ships it."""
    return lambda_.Code.from_asset(
        str(root), exclude=["*.py", "**/__pycache__", "**/*.pyc", "!handler/*.py"]
    )


class HandlerProvider(Construct):
    """`on_event` and `is_complete` functions (handler strings `handler.index.*`).

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
    ) -> None:
        super().__init__(scope, id_)
        self._purpose = purpose
        self._days = log_retention_days
        self._key = encryption_key
        self.on_event_logs = self.log_group("OnEventLogs")
        self.is_complete_logs = self.log_group("IsCompleteLogs")
        self.on_event = self._function(
            "OnEvent",
            code=code,
            handler="handler.index.on_event",
            timeout=on_event_timeout,
            log_group=self.on_event_logs,
        )
        self.is_complete = self._function(
            "IsComplete",
            code=code,
            handler="handler.index.is_complete",
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
        self._acknowledge()

    @property
    def service_token(self) -> str:
        return str(self.provider.service_token)

    def log_group(self, id_: str) -> logs.LogGroup:
        return log_group(self, id_, days=self._days, key=self._key)

    def _role(self, id_: str, log_group: logs.ILogGroup, what: str) -> iam.Role:
        role = iam.Role(
            self,
            id_,
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"novapod {self._purpose}: {what}",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            )
        )
        return role

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
        )

    def _acknowledge(self) -> None:
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


def default_policy(role: IConstruct | None) -> IConstruct:
    """The DefaultPolicy CDK attaches to a role (where add_to_policy statements go)."""
    assert role is not None
    return role.node.find_child("DefaultPolicy")
