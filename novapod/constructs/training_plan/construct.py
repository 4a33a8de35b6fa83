"""The TrainingPlan custom resource: buy (guarded) or adopt a SageMaker training plan.

CloudFormation has no training-plan resource. `TrainingPlanProvider` holds the two
Lambda functions (code in `handler/`, beside this file) behind a CDK `Provider`;
each `TrainingPlan` is one custom resource whose physical ID is the plan's
deterministic name. The handler describes that name before it buys, so a retried,
duplicated or rolled-back event adopts the plan instead of buying it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from novapod.capacity import PlanRequest
from novapod.capacity.naming import extension_name, training_plan_name
from novapod.config import TrainingPlanSpec
from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.provider import (
    HandlerProvider,
    core_handler_module,
    default_policy,
    handler_code,
)
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.constructs.training_plan.handler.marker import KEY_PATTERN as MARKER_KEYS

HANDLER_ROOT = Path(__file__).resolve().parent
RESOURCE_TYPE = "Custom::NovapodTrainingPlan"
# One poll a minute; the handler gives up with a clear "bought and Pending" message
# before the Provider's own total timeout (CloudFormation allows a custom resource 1 h).
QUERY_INTERVAL = Duration.minutes(1)
PROVIDER_MARGIN_MINUTES = 5
MAX_TOTAL_MINUTES = 60
# Worst case of on_event: its SageMaker reads with retries, one purchase call, confirming
# describes, and the purchase ledger's read and conditional writes (each settled by a
# read); every call is bounded by botocore timeouts and attempts (handler/index.py,
# tests/handlers/test_handler_time_budget.py). Lambda allows 15 minutes.
ON_EVENT_TIMEOUT = Duration.minutes(14)
IS_COMPLETE_TIMEOUT = Duration.minutes(8)

# The tagging a purchase does: the plan and its reserved capacities, tagged on create.
TAGGING_ACTIONS = ("CreateTrainingPlan", "CreateReservedCapacity")

NO_RESOURCE_LEVEL = (
    "{action} has no resource-level permissions (the IAM service reference lists no "
    "resource type for it), so its statement must use Resource '*'."
)


class TrainingPlanProvider(Construct):
    """The handler functions and Provider shared by a stack's training plans."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        environment: str,
        bought_heads: Sequence[str],
        adopted_arns: Sequence[str],
        pending_timeout_minutes: int,
        extended_arns: Sequence[str] = (),
        extends: bool = False,
        ledger: PurchaseLedger,
        log_retention_days: int = 365,
        encryption_key: kms.IKey | None = None,
    ) -> None:
        """`extends`: some plan of this environment has `extend` (its handler may buy and
        read extensions of the plans it buys); `extended_arns`: adopted plans it extends."""
        super().__init__(scope, id_)
        stack = Stack.of(self)
        self.pending_timeout_seconds = pending_timeout_minutes * 60
        self.environment = environment
        self.ledger_table = ledger.table_name
        total = min(pending_timeout_minutes + PROVIDER_MARGIN_MINUTES, MAX_TOTAL_MINUTES)
        self.handlers = HandlerProvider(
            self,
            "Handlers",
            code=handler_code(HANDLER_ROOT),
            handler_module=core_handler_module(HANDLER_ROOT),
            purpose="TrainingPlan",
            on_event_timeout=ON_EVENT_TIMEOUT,
            is_complete_timeout=IS_COMPLETE_TIMEOUT,
            query_interval=QUERY_INTERVAL,
            total_timeout=Duration.minutes(total),
            log_retention_days=log_retention_days,
            encryption_key=encryption_key,
        )
        self.handlers.keep_outside_vpc(
            "The purchase handlers call only the SageMaker and EC2 APIs. The capacity stack "
            "deploys beside the eks stack, which builds the NAT routes and endpoints they "
            "would need in the private subnets: there, a purchase would wait on the network."
        )
        self.on_event = self.handlers.on_event
        self.is_complete = self.handlers.is_complete
        # Both claim and settle purchases (on_event buys, is_complete reconciles).
        for function in (self.on_event, self.is_complete):
            ledger.grant_purchases(function, environment)
        # Each bought plan's own name head (`novapod-<env>-<plan>-`, its digest left open:
        # an edit renames the plan, and a rollback runs the old name under the new policy).
        # A prefix per plan, not one per environment: `novapod-cfg-*` would also match every
        # plan of environment `cfg-a`; an exact collision of heads is refused by the handler
        # (the plan's novapod:environment tag).
        own = [
            # `?` x 8: the digest's eight hex digits and nothing longer, so `novapod-cfg-a-`
            # never covers `novapod-cfg-a-b-<digest>` (plan a-b, or environment cfg-a).
            stack.format_arn(
                service="sagemaker", resource="training-plan", resource_name=f"{h}-{'?' * 8}"
            )
            for h in dict.fromkeys(bought_heads)
        ]
        # A purchase creates the plan and its reserved capacities, and tags both on
        # create: SageMaker documents CreateTrainingPlan with CreateReservedCapacity and
        # AddTags on both resource types (docs.aws.amazon.com/sagemaker/latest/dg/
        # training-plan-iam-permissions.html); AWS's AmazonSageMakerTrainingPlanCreateAccess
        # (docs.aws.amazon.com/aws-managed-policy/latest/reference/
        # AmazonSageMakerTrainingPlanCreateAccess.html) limits AddTags with
        # sagemaker:TaggingAction to those two creations. We narrow plans to our names.
        reserved_capacity = stack.format_arn(
            service="sagemaker", resource="reserved-capacity", resource_name="*"
        )
        if own:
            self._allow_purchases(own, reserved_capacity)
        # ListTags: a plan found under our name that the ledger does not know is adopted
        # only when its novapod:environment tag is ours (names can collide across
        # environments); the Service Authorization Reference lists ListTags on the
        # training-plan resource type (list_amazonsagemaker.html).

        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="SearchOfferingsAndZones",
                actions=["sagemaker:SearchTrainingPlanOfferings", "ec2:DescribeAvailabilityZones"],
                resources=["*"],
            )
        )
        if adopted_arns:
            self.on_event.add_to_role_policy(
                iam.PolicyStatement(
                    sid="DescribeAdoptedPlans",
                    actions=["sagemaker:DescribeTrainingPlan"],
                    resources=list(adopted_arns),
                )
            )
        if extends or extended_arns:
            self._allow_extensions(own if extends else [], extended_arns)
        # is_complete only reads: the plan's status, then its zone name -> zone ID.
        self.is_complete.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeOwnAndAdoptedPlans",
                actions=["sagemaker:DescribeTrainingPlan"],
                resources=[*own, *adopted_arns],
            )
        )
        self.is_complete.add_to_role_policy(
            iam.PolicyStatement(
                sid="MapZoneNamesToIds",
                actions=["ec2:DescribeAvailabilityZones"],
                resources=["*"],
            )
        )
        self._acknowledge(own)
        if own:
            acknowledge(
                default_policy(self.on_event.role),
                f"AwsSolutions-IAM5[Resource::{nag_resource(self, reserved_capacity)}]",
                "A purchase creates and tags the plan's reserved capacities, whose IDs "
                "SageMaker generates; AddTags on them is limited to tagging at creation "
                "(TaggingAction).",
            )

    def _allow_purchases(self, own: list[str], reserved_capacity: str) -> None:
        """CreateTrainingPlan and tagging at creation, Describe and ListTags, on the plan
        names this environment buys."""
        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="BuyOwnPlans",
                actions=["sagemaker:CreateTrainingPlan", "sagemaker:CreateReservedCapacity"],
                resources=[*own, reserved_capacity],
            )
        )
        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="TagOnPurchaseOnly",
                actions=["sagemaker:AddTags"],
                resources=[*own, reserved_capacity],
                conditions={"StringEquals": {"sagemaker:TaggingAction": list(TAGGING_ACTIONS)}},
            )
        )
        # ListTags: a plan found under our name that the ledger does not know is adopted
        # only when its novapod:environment tag is ours (names can collide across
        # environments); the Service Authorization Reference lists ListTags on the
        # training-plan resource type (list_amazonsagemaker.html).
        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeOwnPlans",
                actions=["sagemaker:DescribeTrainingPlan", "sagemaker:ListTags"],
                resources=own,
            )
        )

    def _allow_extensions(self, own_plans: Sequence[str], extended_arns: Sequence[str]) -> None:
        """ExtendTrainingPlan, DescribeTrainingPlanExtensionHistory, ListTags and the
        clean-up of old purchase markers on the plans extended (nowhere else).

        Extending and the history act on a training plan (the history is asked for by
        the plan's ARN, an extension offering belongs to one plan); the IAM reference
        available offline predates the two actions, so they are scoped to the plan like
        CreateTrainingPlan and DescribeTrainingPlan. Should the service authorize them on
        '*' instead, the call is refused (AccessDenied, HTTP 400) and the handler says
        nothing was bought.
        """
        plans = [*own_plans, *extended_arns]
        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="ExtendOwnPlans",
                actions=[
                    "sagemaker:ExtendTrainingPlan",
                    "sagemaker:DescribeTrainingPlanExtensionHistory",
                    "sagemaker:ListTags",
                ],
                resources=plans,
            )
        )
        # Earlier versions marked purchases with tags on the plan (handler/marker.py); the
        # ledger replaced them, and the handler deletes the resolved ones (each takes one
        # of a plan's 50 tag slots). The Service Authorization Reference lists DeleteTags
        # on the training-plan resource type with aws:TagKeys (list_amazonsagemaker.html),
        # so only those keys may be deleted.
        self.on_event.add_to_role_policy(
            iam.PolicyStatement(
                sid="ClearOldPurchaseMarkers",
                actions=["sagemaker:DeleteTags"],
                resources=plans,
                conditions={"ForAllValues:StringLike": {"aws:TagKeys": [MARKER_KEYS]}},
            )
        )
        self.is_complete.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadExtensions",
                actions=["sagemaker:DescribeTrainingPlanExtensionHistory"],
                resources=plans,
            )
        )

    @property
    def service_token(self) -> str:
        return self.handlers.service_token

    @property
    def purchase_log_group(self) -> logs.ILogGroup:
        """Where on_event logs the search, the choice and the purchase."""
        return self.on_event.log_group

    @property
    def wait_log_group(self) -> logs.ILogGroup:
        """Where is_complete logs each poll while a plan is Pending (the long wait)."""
        return self.is_complete.log_group

    def _acknowledge(self, own_plans: Sequence[str]) -> None:
        reasons = {
            self.on_event: "sagemaker:SearchTrainingPlanOfferings and "
            "ec2:DescribeAvailabilityZones",
            self.is_complete: "ec2:DescribeAvailabilityZones",
        }
        for function, actions in reasons.items():
            policy = default_policy(function.role)
            acknowledge(
                policy, "AwsSolutions-IAM5[Resource::*]", NO_RESOURCE_LEVEL.format(action=actions)
            )
            for plans in own_plans:
                acknowledge(
                    policy,
                    f"AwsSolutions-IAM5[Resource::{nag_resource(self, plans)}]",
                    "Plan names end with a digest of the purchase inputs, derived at synth; "
                    "the wildcards are the eight digest characters after one plan's "
                    "novapod-<env>-<plan>- head.",
                )


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
            # Every purchase is claimed in the ledger, under the environment's partition.
            "LedgerTable": provider.ledger_table,
            "Environment": provider.environment,
        }
        if spec.existing_arn is not None:
            self.plan_name = spec.existing_arn.rsplit("/", 1)[1]
            if spec.extend is not None:  # the hours it was bought for, to see extensions
                properties["DurationHours"] = str(request.duration_hours)
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
                # Validation made approve equal to the plan's name; the handler checks again.
                "ApprovedPlanName": str(spec.purchase.approve),
                "MaxUpfrontFee": str(spec.purchase.max_upfront_fee),
                "Currency": spec.purchase.currency,
            }
            if request.start_after:
                properties["StartTimeAfter"] = request.start_after
            if request.end_before:
                properties["EndTimeBefore"] = request.end_before
            if request.retry:  # part of the name's digest, which the handler recomputes
                properties["Retry"] = str(request.retry)
        if spec.extend is not None:
            # Validation made approve equal to this name; the handler checks again.
            extension = extension_name(self.plan_name, spec.extend.duration_hours)
            properties |= {
                "ExtendHours": str(spec.extend.duration_hours),
                "ExtensionName": extension,
                "ApprovedExtensionName": str(spec.extend.approve),
                "ExtensionMaxUpfrontFee": str(spec.extend.max_upfront_fee),
                "ExtensionCurrency": spec.extend.currency,
            }
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
            # Plans cannot be cancelled or deleted: the template says so, and neither a
            # stack deletion nor a replacement (a new plan name) sends Delete at all.
            removal_policy=RemovalPolicy.RETAIN,
        )

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
