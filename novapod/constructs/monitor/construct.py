"""The environment's scheduled check: an EventBridge Scheduler schedule that invokes a small
Lambda function (code in `handler/`) every few minutes, which samples the training plans
and the HyperPod cluster's instance groups into CloudWatch metrics and alerts through the
environment's topic (`alerts.py`) on what SageMaker does not publish. What it has sent is
one item of a small DynamoDB table of its own (strongly consistent reads, a conditional
write after each alert sent), so each occurrence is alerted at least once and a second
copy is rare (handler/index.py says when one happens).

Least privilege, statement by statement (the Service Authorization Reference,
docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html and
list_amazoncloudwatch.html):

- `sagemaker:DescribeTrainingPlan` on each plan's ARN (resource type training-plan);
- `sagemaker:DescribeCluster` and `sagemaker:ListClusterNodes` on this account's and
  Region's clusters (resource type cluster), when the config has one: a cluster's ARN
  ends in an ID SageMaker generates when it creates the cluster, and naming it would make
  the check wait for the HyperPod cluster (a stack dependency), after which its function,
  roles and schedule would lengthen every first deploy; both calls only read. They are
  limited by the environment tag every novapod resource carries
  (`novapod:environment`, NovapodConfig.resource_tags; the cluster resource type takes
  the `aws:ResourceTag/${TagKey}` condition key for both actions in the Service
  Authorization Reference) with `StringEqualsIfExists`: a cluster tagged for another
  environment is refused, while a cluster not created yet (no tags to read) still
  answers ResourceNotFound, which the check reports as "not deployed" while the monitor
  deploys beside the cluster. The strict `StringEquals` would turn every run before the
  cluster exists (and after it is destroyed) into AccessDenied. An untagged cluster of
  this account and Region stays readable;
- `cloudwatch:PutMetricData`, which has no resource type: Resource "*" with the
  `cloudwatch:namespace` condition key, so the function writes only novapod's metrics;
- `sns:Publish` on the alert topic, and its key through SNS (`alerts.grant_publish`);
- `dynamodb:GetItem` and `PutItem` on the state table, this environment's item only
  (dynamodb:LeadingKeys), and its key through DynamoDB (`purchase_ledger.
  grant_environment_items`, as the purchase handlers are granted the ledger);
- with jobs on the cluster, `eks:DescribeCluster` on the EKS cluster (named at synth:
  its ARN is exact) for its private endpoint and CA; the Kubernetes API is authorized by
  the cluster, not IAM (the token is an STS GetCallerIdentity presigned locally, which
  needs no permission: docs.aws.amazon.com/STS/latest/APIReference/
  API_GetCallerIdentity.html, "No permissions are required");
- its own log group, and what Lambda needs in the VPC (`provider.attach_to_vpc`).

With jobs, the function's role has an EKS access entry of its own (`access_entry`, type
STANDARD, Kubernetes group `MONITOR_GROUP`, no access policy): the cluster bootstrap's
build binds that group to a Role in the jobs' namespace that lists PyTorchJobs and pods
there and does nothing else (novapod/nova/kubernetes.py, MONITOR_RULES); AmazonEKSViewPolicy, the
narrowest access policy, names no kubeflow.org resource and could not read them
(docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html). The entry
needs the EKS cluster, which the monitor stack already deploys after (the eks stack
builds the NAT routes its calls take), and nothing waits for it. The private endpoint
answers on the control plane's network interfaces, which carry the HyperPod security
group (the eks stack gives it at CreateCluster, API_VpcConfigRequest.html): `ingress`
admits the check's group there on HTTPS, as the NovaEnvironment check is admitted.

The schedule's role may invoke this one function (`lambda:InvokeFunction` on its ARN) and
is assumed by EventBridge Scheduler only on behalf of this account's default schedule
group (aws:SourceAccount, aws:SourceArn: the confused-deputy conditions of the Scheduler
user guide's execution-role page, docs.aws.amazon.com/scheduler/latest/UserGuide/
setting-up.html). Scheduler invokes the function asynchronously; neither Scheduler nor
Lambda retries a run (a retried sample is an old one; the next run comes minutes later),
and one run at a time (reserved concurrency 1).

The function runs in the private subnets in a security group of its own (HTTPS out),
through the VPC's NAT route; in a closed network, whose endpoints reach neither
SageMaker's API nor SNS (network.endpoints offers no such endpoint), it stays outside
the VPC (`placement` None) and says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sns as sns
from constructs import Construct

from novapod.constructs.acknowledge import acknowledge, nag_resource
from novapod.constructs.log_retention import log_group
from novapod.constructs.monitor.alerts import ALARM_ACTION_REASON, grant_publish
from novapod.constructs.monitor.handler import decisions
from novapod.constructs.network import PrivatePlacement
from novapod.constructs.provider import (
    MEMORY_MB,
    RUNTIME,
    attach_to_vpc,
    core_handler_module,
    default_policy,
    function_role,
    handler_code,
    https_egress_group,
)
from novapod.constructs.purchase_ledger import grant_environment_items
from novapod.constructs.security_group import admit_to_eks_api
from novapod.nova.kubernetes import MONITOR_GROUP

HANDLER_ROOT = Path(__file__).resolve().parent
NAMESPACE = decisions.NAMESPACE
# Above the worst case of a run's reads, each retried to its limit (handler/index.py
# worst_case_seconds: the plans, the cluster and a page of nodes, the EKS cluster, two
# pages of PyTorchJobs and two of pods, the metrics, the state's read) plus the margin
# at which it stops publishing (stop_margin_seconds), for every shipped config (tested). Alerts are
# published only while that margin is left, so a run is never stopped between claiming
# an alert and publishing it. One run at a time.
TIMEOUT = Duration.minutes(6)
# How long an alert a run claimed stays its own (handler/decisions.py decide): past the
# function's timeout that run is over, so a claim it left without an outcome (its record
# failed, or it was stopped) is owed again: sent a second time rather than lost.
CLAIM_LEASE_SECONDS = int(TIMEOUT.to_seconds()) + 60
RESERVED_CONCURRENCY = 1
# What the function does with its state item (handler/index.py).
STATE_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem")
# The tag novapod puts on every resource of an environment (NovapodConfig.resource_tags,
# applied by environment.py), the HyperPod cluster included.
ENVIRONMENT_TAG = "novapod:environment"
# The check's alarm: in ALARM once this many runs in a row failed (one run that failed is
# a throttled call or a blip the next run, minutes later, gets past).
ALARM_RUNS = 3


@dataclass(frozen=True)
class WatchedPlan:
    """A training plan the check samples: the config's name, SageMaker's, its ARN and the
    jobs that run on it (the first one is the alert's next command)."""

    name: str
    plan_name: str
    arn: str
    jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class WatchedJobs:
    """The config's jobs that run on the HyperPod cluster, whose runs the check reads from
    the EKS cluster's Kubernetes API: the EKS cluster, the jobs' namespace, the jobs."""

    eks_cluster: str
    namespace: str
    names: tuple[str, ...]
    # jobs[].runs of each: a job with fewer succeeded runs is not finished.
    runs: tuple[int, ...] = ()
    # Job.predecessors of each (`after:` and `from: job:`): the jobs `novapod launch`
    # waits for, so the check's alerts name a job it would launch.
    predecessors: tuple[tuple[str, ...], ...] = ()


def rate(minutes: int) -> str:
    """An EventBridge Scheduler rate expression (docs.aws.amazon.com/scheduler/latest/
    UserGuide/schedule-types.html: the unit is singular for a value of 1)."""
    return f"rate({minutes} minute{'s' if minutes != 1 else ''})"


class ScheduledCheck(Construct):
    """Attributes: `function`, `role`, `log_group`, `schedule`, `schedule_role`,
    `state_table`, `alarm` (on the function's errors), `security_group` (None outside
    the VPC), and with jobs `access_entry` and `ingress` (else None)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        environment: str,
        plans: Sequence[WatchedPlan],
        cluster_name: str | None,
        every_minutes: int,
        idle_alert_minutes: int,
        ending_alert_days: int,
        topic: sns.ITopic,
        placement: PrivatePlacement | None,
        log_retention_days: int,
        key: kms.IKey,
        alarm_name: str,
        outside_vpc_reason: str = "",
        jobs: WatchedJobs | None = None,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        self.log_group = log_group(self, "Logs", days=log_retention_days, key=key)
        self.role = function_role(
            self,
            "Role",
            log_group=self.log_group,
            description=f"novapod {environment}: the scheduled check of plans and groups",
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            code=handler_code(HANDLER_ROOT),
            handler=f"{core_handler_module(HANDLER_ROOT)}.check",
            timeout=TIMEOUT,
            memory_size=MEMORY_MB,
            role=self.role,
            log_group=self.log_group,
            description=f"novapod {environment}: sample the plans and groups into metrics",
            reserved_concurrent_executions=RESERVED_CONCURRENCY,
            retry_attempts=0,
            max_event_age=Duration.minutes(every_minutes),
        )
        if plans:
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="DescribeTrainingPlans",
                    actions=["sagemaker:DescribeTrainingPlan"],
                    resources=sorted({p.arn for p in plans}),
                )
            )
        if cluster_name is not None:
            clusters = stack.format_arn(service="sagemaker", resource="cluster", resource_name="*")
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="DescribeHyperPodCluster",
                    actions=["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
                    resources=[clusters],
                    conditions={
                        "StringEqualsIfExists": {f"aws:ResourceTag/{ENVIRONMENT_TAG}": environment}
                    },
                )
            )
            acknowledge(
                default_policy(self.role),
                f"AwsSolutions-IAM5[Resource::{nag_resource(self, clusters)}]",
                "A HyperPod cluster's ARN ends in an ID SageMaker generates (cluster/<id>); "
                "naming it would make the check wait for the cluster and lengthen the "
                "deploy. Read only (DescribeCluster, ListClusterNodes), this account and "
                "Region, and no cluster tagged for another novapod environment "
                "(aws:ResourceTag condition).",
            )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="PutNovapodMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": NAMESPACE}},
            )
        )
        acknowledge(
            default_policy(self.role),
            "AwsSolutions-IAM5[Resource::*]",
            "cloudwatch:PutMetricData has no resource-level permissions (the Service "
            "Authorization Reference lists no resource type for it); the statement is "
            "limited to the novapod namespace by the cloudwatch:namespace condition key.",
        )
        grant_publish(self.role, topic, key, "PublishAlerts")
        self.state_table = self._state_table(key)
        grant_environment_items(
            self.role,
            table=self.state_table,
            key=key,
            environment=environment,
            actions=STATE_ACTIONS,
            sid="CheckState",
        )
        acknowledge(
            self.function,
            "LambdaDLQ",
            "A failed run leaves nothing to replay: the next run, minutes later, samples "
            "again; the failure is one line in the function's log and counts in its Errors "
            "metric.",
        )
        self.security_group = None
        if placement is not None:
            self.security_group = https_egress_group(
                self,
                "SecurityGroup",
                vpc_id=placement.vpc_id,
                description=f"novapod {environment} scheduled check: HTTPS to AWS APIs",
                destination="HTTPS to the SageMaker, CloudWatch, SNS and DynamoDB APIs"
                + (" and the EKS cluster's API" if jobs is not None else ""),
            )
            attach_to_vpc(
                self.function,
                subnet_ids=placement.subnet_ids,
                security_group=self.security_group,
            )
        else:
            acknowledge(self.function, "LambdaInsideVPC", outside_vpc_reason)
        self.access_entry: eks.CfnAccessEntry | None = None
        self.ingress: ec2.CfnSecurityGroupIngress | None = None
        if jobs is not None:
            # The config refuses eks in a closed network: with jobs the check is in the VPC.
            assert placement is not None and self.security_group is not None
            self._read_jobs(jobs, placement)
        settings = {
            "environment": environment,
            "namespace": NAMESPACE,
            "plans": [
                {"name": p.name, "plan_name": p.plan_name, "jobs": list(p.jobs)} for p in plans
            ],
            "cluster": cluster_name,
            "idle_alert_minutes": idle_alert_minutes,
            # What one run's sample stands for (decisions.IN_USE_SECONDS_METRIC): a change
            # of the interval redeploys the schedule with it, so each sample keeps its own.
            "every_minutes": every_minutes,
            "ending_alert_days": ending_alert_days,
            "topic_arn": topic.topic_arn,
            "state_table": self.state_table.table_name,
            "claim_lease_seconds": CLAIM_LEASE_SECONDS,
            "jobs": {
                "eks_cluster": jobs.eks_cluster,
                "namespace": jobs.namespace,
                "names": list(jobs.names),
                "runs": dict(zip(jobs.names, jobs.runs, strict=True)),
                "predecessors": {
                    name: list(waits)
                    for name, waits in zip(jobs.names, jobs.predecessors, strict=True)
                },
                "region": Aws.REGION,
            }
            if jobs is not None
            else None,
        }
        self.schedule_role = iam.Role(
            self,
            "ScheduleRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={
                    "StringEquals": {
                        "aws:SourceAccount": stack.account,
                        "aws:SourceArn": stack.format_arn(
                            service="scheduler",
                            resource="schedule-group",
                            resource_name="default",
                        ),
                    }
                },
            ),
            description=f"novapod {environment}: EventBridge Scheduler runs the check",
        )
        self.schedule_role.add_to_policy(
            iam.PolicyStatement(
                sid="InvokeTheCheck",
                actions=["lambda:InvokeFunction"],
                resources=[self.function.function_arn],
            )
        )
        self.schedule = scheduler.CfnSchedule(
            self,
            "Schedule",
            description=f"novapod {environment}: the check of plans and groups",
            schedule_expression=rate(every_minutes),
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            state="ENABLED",
            target=scheduler.CfnSchedule.TargetProperty(
                arn=self.function.function_arn,
                role_arn=self.schedule_role.role_arn,
                input=stack.to_json_string(settings),
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                    maximum_retry_attempts=0,
                    maximum_event_age_in_seconds=60 * every_minutes,
                ),
            ),
        )
        self.schedule.node.add_dependency(default_policy(self.schedule_role))
        self.alarm = self._alarm(alarm_name, every_minutes, environment)

    def _alarm(self, name: str, every_minutes: int, environment: str) -> cloudwatch.Alarm:
        """The check's own failures: Lambda's Errors metric of the function (its exceptions,
        the runtime's timeouts and crashes: "Types of metrics for Lambda functions",
        docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html), at least one
        in each of the last ALARM_RUNS periods of one run. No runs (the schedule off) are
        no data, not failures. Named at synth: its rule (alerts.py) matches its ARN."""
        alarm = cloudwatch.Alarm(
            self,
            "Alarm",
            alarm_name=name,
            alarm_description=f"novapod {environment}: the scheduled check failed its last "
            f"{ALARM_RUNS} runs; an EventBridge rule sends the state change to the alert topic",
            metric=self.function.metric_errors(
                period=Duration.minutes(every_minutes), statistic="Sum"
            ),
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=ALARM_RUNS,
            datapoints_to_alarm=ALARM_RUNS,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        acknowledge(alarm, "CloudWatchAlarmAction", ALARM_ACTION_REASON)
        return alarm

    def _read_jobs(self, jobs: WatchedJobs, placement: PrivatePlacement) -> None:
        """What reading the jobs' PyTorchJobs and pods takes: DescribeCluster of the EKS cluster,
        the access entry, and HTTPS to its private endpoint."""
        assert self.security_group is not None
        stack = Stack.of(self)
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeEksCluster",
                actions=["eks:DescribeCluster"],
                resources=[
                    stack.format_arn(
                        service="eks", resource="cluster", resource_name=jobs.eks_cluster
                    )
                ],
            )
        )
        self.access_entry = eks.CfnAccessEntry(
            self,
            "AccessEntry",
            cluster_name=jobs.eks_cluster,
            principal_arn=self.role.role_arn,
            type="STANDARD",
            kubernetes_groups=[MONITOR_GROUP],
        )
        self.ingress = admit_to_eks_api(
            self,
            cluster_group_id=placement.security_group_id,
            source_group_id=self.security_group.attr_group_id,
            who="scheduled check",
        )

    def _state_table(self, key: kms.IKey) -> dynamodb.Table:
        """One item per environment: the alerts sent, the plans seen, when each began to
        idle. Disposable: removed with the stack (a new table re-sends the alerts whose
        condition still holds)."""
        table = dynamodb.Table(
            self,
            "State",
            partition_key=dynamodb.Attribute(
                name=decisions.STATE_KEY, type=dynamodb.AttributeType.STRING
            ),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge(
            table,
            "DynamoDBInBackupPlan",
            "The table holds only which alerts the check has sent and when plans began to "
            "idle; point-in-time recovery is on, and a lost table only re-sends the alerts "
            "whose condition still holds.",
        )
        return table
