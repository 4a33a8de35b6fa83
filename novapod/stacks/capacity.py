"""CapacityStack: training plans bought (guarded) or adopted, as custom resources.

It depends on the network (subnet IDs per zone) and on the storage stack (the key of
its log groups, the purchase ledger), never on the EKS stack, so it deploys side by
side with it.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, CfnResource, Fn, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from novapod.capacity.chart import METADATA_TYPE, chart_json, plan_charts
from novapod.capacity.naming import name_head
from novapod.config import NovapodConfig
from novapod.config.stacks import plan_logical_id
from novapod.constructs.network import VpcHandle
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.constructs.status_policy import status_policy
from novapod.constructs.training_plan.construct import TrainingPlan, TrainingPlanProvider


class CapacityStack(Stack):
    """Exposes `plans`: plan name in config -> TrainingPlan (ARN, zone, subnets...)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: NovapodConfig,
        network: VpcHandle,
        ledger: PurchaseLedger,
        key: kms.IKey | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        requests = config.training_plan_requests()
        provider = TrainingPlanProvider(
            self,
            "TrainingPlanProvider",
            environment=config.name,
            bought_heads=[
                name_head(config.name, r.name) for s, r in requests if not s.existing_arn
            ],
            adopted_arns=[s.existing_arn for s, _ in requests if s.existing_arn],
            pending_timeout_minutes=config.capacity.pending_timeout_minutes,
            extends=any(s.extend and not s.existing_arn for s, _ in requests),
            extended_arns=[s.existing_arn for s, _ in requests if s.existing_arn and s.extend],
            # Its log groups: the storage stack's key, so this stack deploys after storage.
            encryption_key=key,
            ledger=ledger,
        )
        subnets = network.subnet_ids_by_zone()
        # Each HyperPod job's restricted group, so the chart says where its capacity goes.
        groups = {job.name: job.instance_group for job in config.jobs}
        charts = {chart.plan: chart for chart in plan_charts(config.capacity_plan(), groups)}
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
            if spec.name in charts:
                # The plan's schedule, for `novapod review` to draw: cloud-assembly metadata
                # (the manifest's <stack>.metadata.json), never part of the template.
                plan.node.add_metadata(METADATA_TYPE, chart_json(charts[spec.name]))
            self.plans[spec.name] = plan
            self._plan_outputs(plan_logical_id(spec.name), spec.name, plan)
        CfnOutput(
            self,
            "PurchaseLogGroup",
            value=provider.purchase_log_group.log_group_name,
            description="CloudWatch log group of the training-plan purchase handler: the "
            "offering search, the choice, the fee check and the purchase",
        )
        CfnOutput(
            self,
            "PurchaseWaitLogGroup",
            value=provider.wait_log_group.log_group_name,
            description="CloudWatch log group where a bought plan's wait shows (one line a "
            "minute until it is Scheduled or Active; up to capacity.pending_timeout_minutes)",
        )
        if config.hyperpod is None and key is not None:
            # No hyperpod or nova stack holds `novapod status`'s policy: here, the plans,
            # the ledger and (with the monitor) the metrics only.
            status_policy(self, config=config, cluster_arn=None, ledger=ledger, key=key)

    def _plan_outputs(self, prefix: str, name: str, plan: TrainingPlan) -> None:
        outputs = {
            "Arn": (plan.plan_arn, f"training plan {name}: ARN"),
            "ZoneId": (plan.availability_zone_id, f"training plan {name}: Availability Zone ID"),
            "Start": (plan.start_time, f"training plan {name}: capacity start (UTC, ISO 8601)"),
            "End": (
                plan.end_time,
                f"training plan {name}: capacity end (UTC, ISO 8601); instances are reclaimed",
            ),
            "UpfrontFee": (
                Fn.join(" ", [plan.upfront_fee, plan.currency]),
                f"training plan {name}: up-front fee paid, with its currency",
            ),
        }
        for suffix, (value, description) in outputs.items():
            CfnOutput(self, f"{prefix}{suffix}", value=value, description=description)
