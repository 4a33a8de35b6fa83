"""The environment's CloudWatch dashboard, `novapod-<env>`: what the scheduled check puts
(handler/decisions.py names the metrics), a row per training plan (reserved instances
against those in use, idle and unhealthy) and per instance group (desired, current and
unhealthy nodes), the check's own runs and errors, and the last alerts it sent (a Logs
Insights query over its log group, where each alert is one JSON line with step "alert");
the alarms that say alerts do not come (the check's, and each EventBridge rule's on its
failed deliveries to the topic, alerts.py) with the rules' FailedInvocations;
with jobs on the cluster, the last job events it saw (runs started, succeeded, failed:
one JSON line each with step "job-event", handler/index.py).

Statistic Maximum over the check's period: one sample per period, and a count that was
briefly lower does not hide a higher one. The HyperPod cluster's own log group (the jobs'
logs) is not on it: its name ends in the cluster's ID, known only once the cluster
exists, which the monitor stack does not wait for; the job events come from the check's
own log group, whose name is known at synth, and a failed run's alert names the jobs'
log group (the check reads the cluster's ID when it runs).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from novapod.constructs.monitor.alerts import (
    DELIVERY_PERIOD_MINUTES,
    EVENTS_NAMESPACE,
    FAILED_INVOCATIONS,
)
from novapod.constructs.monitor.construct import NAMESPACE

WIDTH = 24  # the dashboard's grid is 24 units wide
PLAN_METRICS = (
    ("TotalInstances", "reserved"),
    ("InUseInstances", "in use"),
    ("IdleInstances", "idle (Active, unused)"),
    ("UnhealthyInstances", "unhealthy"),
)
GROUP_METRICS = (
    ("DesiredNodes", "desired"),
    ("CurrentNodes", "current"),
    ("UnhealthyNodes", "unhealthy"),
)
ALERTS_QUERY = (
    'fields @timestamp, message\n| filter step = "alert"\n| sort @timestamp desc\n| limit 20'
)
JOB_EVENTS_QUERY = (
    "fields @timestamp, job, run, event, phase, at\n"
    '| filter step = "job-event"\n| sort @timestamp desc\n| limit 20'
)


class EnvironmentDashboard(Construct):
    """Attribute: `dashboard`."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        environment: str,
        dashboard_name: str,
        plans: Sequence[str],
        groups: Sequence[str],
        every_minutes: int,
        function: lambda_.IFunction,
        log_group: logs.ILogGroup,
        jobs: bool = False,
        alarms: Sequence[cloudwatch.IAlarm] = (),
        rules: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, id_)
        period = Duration.minutes(every_minutes)

        def counts(
            title: str, names: Sequence[tuple[str, str]], dimension: str, value: str, unit: str
        ) -> list[cloudwatch.IWidget]:
            """One row: a graph of the counts the check puts for one plan or group."""
            metrics: list[cloudwatch.IMetric] = [
                cloudwatch.Metric(
                    namespace=NAMESPACE,
                    metric_name=name,
                    dimensions_map={"Environment": environment, dimension: value},
                    statistic="Maximum",
                    period=period,
                    label=label,
                )
                for name, label in names
            ]
            axis = cloudwatch.YAxisProps(min=0, label=unit, show_units=False)
            return [
                cloudwatch.GraphWidget(
                    title=title, left=metrics, left_y_axis=axis, width=WIDTH, height=6
                )
            ]

        rows: list[list[cloudwatch.IWidget]] = [
            [
                cloudwatch.TextWidget(
                    markdown=f"# novapod {environment}\n"
                    "Reserved instances against those in use, per training plan; nodes per "
                    f"instance group; sampled every {every_minutes} min by the environment's "
                    "check. `novapod status CONFIG` shows the same with the plans' windows, "
                    "fees and drift.",
                    width=WIDTH,
                    height=2,
                )
            ]
        ]
        rows += [
            counts(f"plan {plan}: reserved vs in use", PLAN_METRICS, "Plan", plan, "instances")
            for plan in plans
        ]
        rows += [
            counts(f"group {group}: nodes", GROUP_METRICS, "InstanceGroup", group, "nodes")
            for group in groups
        ]
        rows.append(
            [
                cloudwatch.GraphWidget(
                    title="the check: runs and failed runs",
                    left=[
                        function.metric_invocations(period=period, statistic="Sum"),
                        function.metric_errors(period=period, statistic="Sum"),
                    ],
                    left_y_axis=cloudwatch.YAxisProps(min=0, show_units=False),
                    width=WIDTH // 2,
                    height=6,
                ),
                cloudwatch.LogQueryWidget(
                    title="the last alerts the check sent",
                    log_group_names=[log_group.log_group_name],
                    query_string=ALERTS_QUERY,
                    view=cloudwatch.LogQueryVisualizationType.TABLE,
                    width=WIDTH // 2,
                    height=6,
                ),
            ]
        )
        if alarms:
            # The alarms that say the alerts do not come: the check failing, and a rule
            # whose deliveries to the topic fail. Their notices go through the topic, so a
            # topic nothing can deliver to leaves them here only (alerts.py).
            rows.append(
                [
                    cloudwatch.AlarmStatusWidget(
                        title="the alerts' alarms: the check failing, deliveries failing",
                        alarms=list(alarms),
                        width=WIDTH // 2,
                        height=6,
                    ),
                    cloudwatch.GraphWidget(
                        title="alerts EventBridge could not deliver to the topic, per rule",
                        left=[
                            cloudwatch.Metric(
                                namespace=EVENTS_NAMESPACE,
                                metric_name=FAILED_INVOCATIONS,
                                dimensions_map={"RuleName": rule},
                                statistic="Sum",
                                period=Duration.minutes(DELIVERY_PERIOD_MINUTES),
                                label=rule,
                            )
                            for rule in rules
                        ],
                        left_y_axis=cloudwatch.YAxisProps(min=0, show_units=False),
                        width=WIDTH // 2,
                        height=6,
                    ),
                ]
            )
        if jobs:
            rows.append(
                [
                    cloudwatch.LogQueryWidget(
                        title="the last job events (runs started, succeeded, failed)",
                        log_group_names=[log_group.log_group_name],
                        query_string=JOB_EVENTS_QUERY,
                        view=cloudwatch.LogQueryVisualizationType.TABLE,
                        width=WIDTH,
                        height=6,
                    )
                ]
            )
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=dashboard_name,
            default_interval=Duration.days(7),
            widgets=rows,
        )
