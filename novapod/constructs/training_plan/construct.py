"""The TrainingPlan custom resource: buy (guarded) or adopt a SageMaker training plan.

CloudFormation has no training-plan resource. `TrainingPlanProvider` holds the two
Lambda functions (code in `handler/`, beside this file) behind a CDK `Provider`;
each `TrainingPlan` is one custom resource whose physical ID is the plan's
deterministic name. The handler describes that name before it buys, so a retried,
duplicated or rolled-back event adopts the plan instead of buying it again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from novapod.config import TrainingPlanSpec
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.log_retention import retention
from novapod.naming import training_plan_name, training_plan_name_prefix
from novapod.planning import PlanRequest

HANDLER_ROOT = Path(__file__).resolve().parent
RESOURCE_TYPE = "Custom::NovapodTrainingPlan"
# One poll a minute; the handler gives up with a clear "bought and Pending" message
# before the Provider's own total timeout (CloudFormation allows a custom resource 1 h).
QUERY_INTERVAL = Duration.minutes(1)
PROVIDER_MARGIN_MINUTES = 5
MAX_TOTAL_MINUTES = 60
ON_EVENT_TIMEOUT = Duration.minutes(5)
IS_COMPLETE_TIMEOUT = Duration.minutes(2)
RUNTIME = lambda_.Runtime.PYTHON_3_14

NO_RESOURCE_LEVEL = (
    "{action} has no resource-level permissions (the IAM service reference lists no "
    "resource type for it), so its statement must use Resource '*'."
)


class TrainingPlanProvider(Construct):
    """Lambda functions and the Provider framework shared by a stack's training plans."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        environment: str,
        adopted_arns: Sequence[str],
        pending_timeout_minutes: int,
        log_retention_days: int = 365,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        self.pending_timeout_seconds = pending_timeout_minutes * 60
        code = lambda_.Code.from_asset(
            str(HANDLER_ROOT),
            exclude=["*.py", "**/__pycache__", "**/*.pyc", "!handler/*.py"],
        )
        plan_arns = [
            stack.format_arn(
                service="sagemaker",
                resource="training-plan",
                resource_name=f"{training_plan_name_prefix(environment)}*",
            ),
            *adopted_arns,
        ]

        self.on_event = self._function(
            "OnEvent",
            code=code,
            handler="handler.index.on_event",
            timeout=ON_EVENT_TIMEOUT,
            description="novapod TrainingPlan: adopt, or buy once within the approved fee cap",
            log_retention_days=log_retention_days,
        )
        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="BuyAndDescribeOwnPlans",
                actions=[
                    "sagemaker:CreateTrainingPlan",
                    "sagemaker:DescribeTrainingPlan",
                    "sagemaker:AddTags",
                ],
                resources=plan_arns[:1],
            )
        )
        self._describe(self.on_event, plan_arns)
        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="SearchOfferingsAndZones",
                actions=["sagemaker:SearchTrainingPlanOfferings", "ec2:DescribeAvailabilityZones"],
                resources=["*"],
            )
        )

        self.is_complete = self._function(
            "IsComplete",
            code=code,
            handler="handler.index.is_complete",
            timeout=IS_COMPLETE_TIMEOUT,
            description="novapod TrainingPlan: wait until the plan is Scheduled or Active",
            log_retention_days=log_retention_days,
        )
        self._describe(self.is_complete, plan_arns)
        # Once the plan is ready, is_complete maps its zone name to a zone ID.
        self.is_complete.add_to_role_policy(
            iam.PolicyStatement(
                sid="MapZoneNamesToIds",
                actions=["ec2:DescribeAvailabilityZones"],
                resources=["*"],
            )
        )

        total = min(pending_timeout_minutes + PROVIDER_MARGIN_MINUTES, MAX_TOTAL_MINUTES)
        framework_logs = logs.LogGroup(
            self,
            "FrameworkLogs",
            retention=retention(log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        # Our own roles for the framework functions: log writes to their one log group
        # instead of the AWSLambdaBasicExecutionRole managed policy.
        framework_roles = [
            self._framework_role(f"Framework{name}Role", framework_logs)
            for name in ("OnEvent", "CompleteAndTimeout")
        ]
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.on_event,
            is_complete_handler=self.is_complete,
            query_interval=QUERY_INTERVAL,
            total_timeout=Duration.minutes(total),
            log_group=framework_logs,
            framework_on_event_role=framework_roles[0],
            framework_complete_and_timeout_role=framework_roles[1],
            disable_waiter_state_machine_logging=False,
            waiter_state_machine_log_options=cr.LogOptions(
                destination=logs.LogGroup(
                    self,
                    "WaiterLogs",
                    retention=retention(log_retention_days),
                    removal_policy=RemovalPolicy.DESTROY,
                ),
                level=sfn.LogLevel.ALL,
                include_execution_data=False,
            ),
        )
        self._acknowledge(framework_roles, plan_arns[0])

    @property
    def service_token(self) -> str:
        return str(self.provider.service_token)

    def _function(
        self,
        id_: str,
        *,
        code: lambda_.Code,
        handler: str,
        timeout: Duration,
        description: str,
        log_retention_days: int,
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{id_}Logs",
            retention=retention(log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            self,
            f"{id_}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=description,
        )
        function = lambda_.Function(
            self,
            id_,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            code=code,
            handler=handler,
            timeout=timeout,
            memory_size=256,
            role=role,
            log_group=log_group,
            description=description,
            reserved_concurrent_executions=None,
        )
        return function

    @staticmethod
    def _describe(function: lambda_.Function, plan_arns: list[str]) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeOwnAndAdoptedPlans",
                actions=["sagemaker:DescribeTrainingPlan"],
                resources=plan_arns,
            )
        )

    def _framework_role(self, id_: str, log_group: logs.ILogGroup) -> iam.Role:
        role = iam.Role(
            self,
            id_,
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="novapod TrainingPlan: custom-resource Provider framework",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            )
        )
        return role

    def _acknowledge(self, framework_roles: list[iam.Role], own_plans_arn: str) -> None:
        acknowledge(
            _default_policy(self.on_event.role),
            "AwsSolutions-IAM5[Resource::*]",
            NO_RESOURCE_LEVEL.format(
                action="sagemaker:SearchTrainingPlanOfferings and ec2:DescribeAvailabilityZones"
            ),
        )
        acknowledge(
            _default_policy(self.is_complete.role),
            "AwsSolutions-IAM5[Resource::*]",
            NO_RESOURCE_LEVEL.format(action="ec2:DescribeAvailabilityZones"),
        )
        for function in (self.on_event, self.is_complete):
            acknowledge(
                _default_policy(function.role),
                f"AwsSolutions-IAM5[Resource::{nag_resource(self, own_plans_arn)}]",
                "Plan names are derived at synth from a digest of the purchase inputs; the "
                "wildcard is limited to this environment's novapod-<env>- name prefix.",
            )
        handlers = [self.on_event, self.is_complete]
        for role in framework_roles:
            policy = _default_policy(role)
            for function in handlers:
                acknowledge(
                    policy,
                    f"AwsSolutions-IAM5[Resource::{nag_resource(self, function.function_arn)}:*]",
                    "The Provider framework invokes this one handler function and its "
                    "versions (ARN:*), as CDK grants it.",
                )
        waiter = self.provider.node.find_child("waiter-state-machine")
        waiter_policy = waiter.node.find_child("Role").node.find_child("DefaultPolicy")
        for child in ("framework-isComplete", "framework-onTimeout"):
            framework = cast(lambda_.Function, self.provider.node.find_child(child))
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


def _default_policy(role: iam.IRole | None) -> IConstruct:
    assert role is not None
    return role.node.find_child("DefaultPolicy")


class TrainingPlan(Construct):
    """One training plan: bought within its approved cap, or adopted by ARN."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        provider: TrainingPlanProvider,
        spec: TrainingPlanSpec,
        request: PlanRequest,
        environment: str,
        subnet_ids_by_zone: Mapping[str, Sequence[str]],
        tags: Mapping[str, str],
    ) -> None:
        super().__init__(scope, id_)
        self.spec = spec
        self.request = request
        properties: dict[str, object] = {
            "SubnetIdsByZoneId": {zone: list(ids) for zone, ids in subnet_ids_by_zone.items()},
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
            "PendingTimeoutSeconds": str(provider.pending_timeout_seconds),
        }
        if spec.existing_arn is not None:
            self.plan_name = spec.existing_arn.rsplit("/", 1)[1]
            properties |= {
                "Mode": "adopt",
                "PlanName": self.plan_name,
                "ExistingArn": spec.existing_arn,
                "InstanceType": request.instance_type,
                "InstanceCount": str(request.instance_count),
                "TargetResources": list(request.target_resources),
            }
        else:
            assert spec.purchase is not None and spec.purchase.max_upfront_fee is not None
            self.plan_name = training_plan_name(environment, request)
            properties |= {
                "Mode": "purchase",
                "PlanName": self.plan_name,
                "InstanceType": request.instance_type,
                "InstanceCount": str(request.instance_count),
                "DurationHours": str(request.duration_hours),
                "TargetResources": list(request.target_resources),
                "ChoicePolicy": spec.choice,
                "PurchaseApproved": "true" if spec.purchase.approve else "false",
                "MaxUpfrontFee": str(spec.purchase.max_upfront_fee),
                "Currency": spec.purchase.currency,
            }
            if request.start_after:
                properties["StartTimeAfter"] = request.start_after
            if request.end_before:
                properties["EndTimeBefore"] = request.end_before
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
            # Delete reaches the handler, which never touches the plan (plans cannot be
            # cancelled) and logs that it is retained.
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.properties = json.loads(json.dumps(properties, default=str))

    def _att(self, name: str) -> str:
        return str(self.resource.get_att_string(name))

    @property
    def plan_arn(self) -> str:
        return self._att("PlanArn")

    @property
    def status(self) -> str:
        return self._att("Status")

    @property
    def availability_zone(self) -> str:
        return self._att("AvailabilityZone")

    @property
    def availability_zone_id(self) -> str:
        return self._att("AvailabilityZoneId")

    @property
    def subnet_ids(self) -> list[str]:
        """A private subnet of ours in the plan's zone (for OverrideVpcConfig).

        One subnet, as an attribute of its own: a comma-joined list would need
        Fn::Split over a cross-stack reference, which cfn-lint rejects. All subnets of
        the zone are in the `SubnetIds` attribute (comma-joined) for reference.
        """
        return [self._att("SubnetId")]

    @property
    def start_time(self) -> str:
        return self._att("StartTime")

    @property
    def end_time(self) -> str:
        return self._att("EndTime")

    @property
    def upfront_fee(self) -> str:
        return self._att("UpfrontFee")

    @property
    def currency(self) -> str:
        return self._att("CurrencyCode")
