"""CapacityStack: training plans bought (guarded) or adopted, as custom resources.

It depends on the network (subnet IDs per zone) and on nothing else, so it deploys
side by side with the EKS stack.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, CfnResource, Stack
from constructs import Construct

from novapod.config import NovapodConfig
from novapod.constructs.network import VpcHandle
from novapod.constructs.training_plan.construct import TrainingPlan, TrainingPlanProvider


def plan_logical_id(plan: str) -> str:
    """Pinned logical ID of a plan's custom resource: TrainingPlan<PlanName>."""
    return "TrainingPlan" + "".join(p.capitalize() for p in plan.split("-"))


class CapacityStack(Stack):
    """Exposes `plans`: plan name in config -> TrainingPlan (ARN, zone, subnets...)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: NovapodConfig,
        network: VpcHandle,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        requests = config.training_plan_requests()
        provider = TrainingPlanProvider(
            self,
            "TrainingPlanProvider",
            environment=config.name,
            adopted_arns=[s.existing_arn for s, _ in requests if s.existing_arn],
            pending_timeout_minutes=config.capacity.pending_timeout_minutes,
        )
        subnets = network.subnet_ids_by_zone()
        self.plans: dict[str, TrainingPlan] = {}
        for spec, request in requests:
            plan = TrainingPlan(
                self,
                plan_logical_id(spec.name),
                provider=provider,
                spec=spec,
                request=request,
                environment=config.name,
                subnet_ids_by_zone=subnets,
                tags={**config.resource_tags, "novapod:plan": spec.name},
            )
            resource = plan.resource.node.default_child
            assert isinstance(resource, CfnResource)
            resource.override_logical_id(plan_logical_id(spec.name))
            self.plans[spec.name] = plan
            CfnOutput(self, f"{plan_logical_id(spec.name)}Arn", value=plan.plan_arn)
            CfnOutput(self, f"{plan_logical_id(spec.name)}ZoneId", value=plan.availability_zone_id)
