"""MonitorStack: the environment's scheduled check of its training plans and HyperPod
instance groups and its alerts (novapod/constructs/monitor/: the SNS topic, its email
subscriptions, the EventBridge rules for HyperPod's events), built when the config has
plans or a cluster and `monitoring.enabled`.

A stack of its own, `<prefix>-monitor`, that nothing depends on: a failed deploy of it
rolls back only itself, and `monitoring.enabled: false` (or destroying it) removes it
without touching any other stack. The architecture puts the check in the nova stack,
which exists only with jobs and waits for the HyperPod cluster; the check watches plans
and clusters without jobs too, and needs no deployed value of the clusters (it finds
the plans and the cluster by their names), so it deploys while they are built, off the
deploy's critical path: after the network and storage stacks (the private subnets, the
key of its log group) and, with an eks section, after the eks stack, which builds the NAT
routes its function's calls take and the EKS cluster its access entry is made in (with
jobs: the check reads their runs there). A plan not bought yet or a cluster not created
yet is what it reports until they exist.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_kms as kms
from constructs import Construct

from novapod.capacity.extension import plan_name
from novapod.config import NovapodConfig
from novapod.constructs.monitor.alerts import CHECK_FAILING, Alerts, check_alarm_alert
from novapod.constructs.monitor.construct import (
    ALARM_RUNS,
    ScheduledCheck,
    WatchedJobs,
    WatchedPlan,
)
from novapod.constructs.monitor.dashboard import EnvironmentDashboard
from novapod.constructs.network import PrivatePlacement
from novapod.nova.catalog import catalog

CLOSED_NETWORK_REASON = (
    "The environment's network is closed: its VPC endpoints (network.endpoints) reach "
    "neither the SageMaker API nor SNS, so the check calls them from outside the VPC; it "
    "reaches nothing in the VPC."
)


def watched_plans(stack: Stack, config: NovapodConfig) -> list[WatchedPlan]:
    """Each plan of the config under its SageMaker name and ARN (an adopted plan's own, a
    bought one's from its deterministic name), with the jobs that run on it."""
    plans = []
    for spec, request in config.training_plan_requests():
        name = plan_name(spec, config.name, request)
        arn = spec.existing_arn or stack.format_arn(
            service="sagemaker", resource="training-plan", resource_name=name
        )
        jobs = tuple(job.name for job in config.jobs if config.job_plan(job) == spec.name)
        plans.append(WatchedPlan(spec.name, name, arn, jobs))
    return plans


def watched_jobs(config: NovapodConfig) -> WatchedJobs | None:
    """The config's jobs that run on its HyperPod cluster (distillation and runs_on:
    training-job jobs run as SageMaker training jobs: not there), or None without any."""
    if not config.has_nova_stack:
        return None
    techniques = catalog().techniques
    watched = [
        job
        for job in config.jobs
        if techniques[job.technique].not_launchable is None and not job.on_training_job
    ]
    if not watched:
        return None
    # The HyperPod cluster and its EKS cluster share the name novapod-<env> (environment.py).
    return WatchedJobs(
        config.prefix,
        config.nova_settings.namespace,
        tuple(job.name for job in watched),
        tuple(job.runs for job in watched),
        # The rule `novapod launch` refuses by (novapod/nova/launch.py prepare).
        tuple(job.predecessors for job in watched),
    )


class MonitorStack(Stack):
    """Exposes `alerts` (Alerts: the topic, its subscriptions, HyperPod's event rules),
    `check` (ScheduledCheck) and `dashboard` (EnvironmentDashboard). Its outputs are for
    people (the topic to subscribe more endpoints to, the dashboard's address); no stack
    reads them."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: NovapodConfig,
        placement: PrivatePlacement,
        key_arn: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        key = kms.Key.from_key_arn(self, "Key", key_arn)
        closed = config.network.closed
        cluster_name = config.prefix if config.hyperpod is not None else None
        self.alerts = Alerts(
            self,
            "Alerts",
            environment=config.name,
            prefix=config.prefix,
            cluster_name=cluster_name,
            emails=config.notifications.emails,
            key=key,
        )
        monitoring = config.monitoring
        self.check = ScheduledCheck(
            self,
            "Check",
            environment=config.name,
            plans=watched_plans(self, config),
            cluster_name=cluster_name,
            every_minutes=monitoring.every_minutes,
            idle_alert_minutes=monitoring.idle_alert_minutes,
            ending_alert_days=monitoring.ending_alert_days,
            topic=self.alerts.topic,
            placement=None if closed else placement,
            log_retention_days=config.eks.log_retention_days if config.eks else 365,
            key=key,
            alarm_name=f"{config.prefix}-{CHECK_FAILING}",
            outside_vpc_reason=CLOSED_NETWORK_REASON if closed else "",
            jobs=watched_jobs(config),
        )
        self.alerts.add_alarm_rule(
            check_alarm_alert(
                config.name,
                self.check.alarm.alarm_arn,
                ALARM_RUNS,
                monitoring.every_minutes,
                self.check.log_group.log_group_name,
            )
        )
        # After every other rule: an alarm on each rule's failed deliveries, its own
        # rule's included (alerts.py).
        self.alerts.add_delivery_alarms()
        hyperpod = config.hyperpod
        groups = (
            [g.name for g in hyperpod.restricted_instance_groups]
            + [g.name for g in hyperpod.instance_groups]
            if hyperpod is not None
            else []
        )
        self.dashboard = EnvironmentDashboard(
            self,
            "Dashboard",
            environment=config.name,
            dashboard_name=config.prefix,
            plans=[spec.name for spec in config.capacity.training_plans],
            groups=groups,
            every_minutes=monitoring.every_minutes,
            function=self.check.function,
            log_group=self.check.log_group,
            jobs=self.check.access_entry is not None,
            alarms=[self.check.alarm, *self.alerts.delivery_alarms.values()],
            rules=list(self.alerts.names.values()),
        )
        CfnOutput(
            self,
            "AlertTopicArn",
            value=self.alerts.topic.topic_arn,
            description="The environment's alert topic (notifications.emails are subscribed; "
            "subscribe other endpoints here)",
        )
        CfnOutput(
            self,
            "DashboardUrl",
            value=f"https://{self.region}.console.aws.amazon.com/cloudwatch/home?region="
            f"{self.region}#dashboards/dashboard/{config.prefix}",
            description="The environment's CloudWatch dashboard: plans, groups, the check",
        )
