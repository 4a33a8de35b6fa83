"""The environment's alerts: an SNS topic, its email subscriptions, and the EventBridge
rules that send it what SageMaker HyperPod publishes about the environment's cluster.

The topic is encrypted with the storage stack's key (SNS server-side encryption) and its
policy refuses every publish that does not use TLS (aws:SecureTransport). Whoever
publishes to an encrypted topic needs `sns:Publish` on it and `kms:GenerateDataKey` and
`kms:Decrypt` on its key (the SNS developer guide, sns-key-management.html). The key
policy lets this account's IAM policies grant its use (the root statement of the storage
stack's key), so the check's role holds those grants, the key's use limited to calls SNS
makes (kms:ViaService).

How EventBridge's rules get the key, the sources disagree:

- the SNS developer guide (sns-key-management.html, "Enable compatibility between event
  sources from AWS services and encrypted topics") and the AWS Knowledge Center article
  "Why aren't my Amazon SNS topics receiving EventBridge notifications?"
  (knowledge-center/sns-not-getting-eventbridge-notification) put a statement for the
  service principal `events.amazonaws.com` in the key policy (kms:GenerateDataKey*,
  kms:Decrypt), and the guide names `cloudwatch.amazonaws.com` likewise for alarms;
- the March 2025 what's-new (aws.amazon.com/about-aws/whats-new/2025/03/
  amazon-eventbridge-iam-execution-role-all-targets/) says every target may take an
  execution role, which would carry the key's use itself; the user guide's page for SNS
  targets with a role (eb-custom-bus-target-sns.html, "Delivery role") describes the
  PublishBatch shape of another target type, not `AWS::Events::Rule` Targets[].RoleArn.

Nothing offline can tell which one holds (the fake models neither EventBridge delivery
nor KMS), and a wrong guess shows only in the rules' FailedInvocations, which an alarm
per rule watches (below). The
samples that run use no role: CDK's own SNS target (aws_events_targets.SnsTopic, which
adds a topic-policy statement for events.amazonaws.com) and AWS's serverless-patterns
eventbridge-sns; and EventBridge's "Using resource-based policies" page
(eb-use-resource-based.html), in one of its versions, says not to give an SNS target a
RoleArn, as delivery may fail, "particularly for Amazon SQS and Amazon SNS targets with
AWS KMS encryption enabled". So the rules have no role: the topic's policy allows
events.amazonaws.com to publish for these rules only (aws:SourceArn, the rule ARNs), and
the storage key's policy lets it use the key through SNS for this account
(`service_publishers`, written by the storage stack, conditioned on kms:ViaService
sns.<region> and aws:SourceAccount, the condition the SNS guide gives; it says
aws:SourceArn is not supported there).

HyperPod sends three detail types to the default event bus (source aws.sagemaker; the
"SageMaker HyperPod cluster events reference" and "Events that Amazon SageMaker AI sends
to Amazon EventBridge" pages of the SageMaker developer guide); one rule each, for this
environment's cluster (by name: its ARN ends in an ID SageMaker generates) in this
account:

- `SageMaker HyperPod Cluster State Change` (detail: ClusterName, ClusterStatus,
  FailureMessage, InstanceGroups), when the cluster is Failed, RollingBack or Deleting;
- `SageMaker HyperPod Cluster Node Health Event` (detail: ClusterName, InstanceId,
  HealthSummary {HealthStatus, HealthStatusReason, RepairAction, Recommendation}), when
  a node is Unhealthy;
- `SageMaker HyperPod Cluster Event` (detail.EventDetails: ClusterName, ResourceType,
  EventLevel, Description), errors only; HyperPod sends these for clusters whose
  NodeProvisioningMode is Continuous.

Each rule turns the event into one sentence (an input transformer) with the environment,
the cluster or node, what happened and the command to look closer. The template is plain
text, not a JSON string: the API reference's InputTransformer page
(docs.aws.amazon.com/eventbridge/latest/APIReference/API_InputTransformer.html) gives
`"InputTemplate": "<instance> is in state <status>"` as the form for text, and the user
guide ("Common issues with transforming input", eb-transform-target-input.html) says
values are not escaped, so a quote in a FailureMessage would break a JSON string
template; in text it is just a quote. A path the event lacks is left out (the same
page). tests/stacks/test_monitor_events.py applies each rule to AWS's sample events.
SageMaker publishes no training-plan event, nor any for a job on a HyperPod EKS cluster:
the scheduled check alerts on plans and failed runs (handler/decisions.py).

A fourth rule sends the check's own alarm (`check-failing`, on the function's Errors,
construct.py): CloudWatch sends an alarm's state changes to the default event bus
(detail type `CloudWatch Alarm State Change`, source aws.cloudwatch, the alarm's ARN in
`resources`, `detail.state.value` and `detail.state.reason`; "Alarm events and
EventBridge", docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
cloudwatch-and-eventbridge.html, which also says CloudWatch guarantees their delivery).
The alarm has no SNS action of its own: an alarm action publishes as the service
principal cloudwatch.amazonaws.com, with no role, so the topic's key would need a key
policy statement allowing that principal kms:Decrypt and kms:GenerateDataKey* ("Enable
compatibility between event sources from AWS services and encrypted topics",
docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services).
Its rule publishes as EventBridge, as HyperPod's rules do: the topic's policy allows
these rules, and the storage key's policy allows EventBridge through SNS
(`service_publishers`).

A delivery that fails is retried when the error is retriable (the topic unavailable,
throttling), by default for 24 hours and up to 185 times; one that cannot succeed (the
topic's or the key's policy refusing EventBridge, the topic gone) is not retried
("Event retry policy and using dead-letter queues", docs.aws.amazon.com/eventbridge/
latest/userguide/eb-rule-dlq.html; eb-rule-retry-policy.html). Each rule's target has
a RetryPolicy of `MAX_EVENT_AGE_SECONDS` (an hour: an alert a day late is no alert, and
an SNS outage or throttling longer than an hour is better seen as a failed delivery, so
the alarm below comes within the hour rather than the next day) and a DeadLetterConfig:
an event that could not be delivered, after its retries or at once, goes to one SQS queue
of the monitor stack (`dead_letters`, a standard queue as the DLQ must be), so its
content is kept for 14 days (SQS's longest retention) to be read and sent again
(docs/operations.md says how). The queue is encrypted with the storage key, as the topic
is (the key's policy lets EventBridge use it through SQS for this account: SQS's
"Configure KMS permissions for AWS services", sqs-key-management.html; the storage
stack's `AlertDeadLettersThroughSqs` statement), refuses requests without TLS
(aws:SecureTransport), and lets events.amazonaws.com SendMessage to it only from these
rules (ArnEquals aws:SourceArn, the rule ARNs: eb-rule-dlq.html, "Granting permissions to
the dead-letter queue", and CDK's own events target, which writes that statement). It is
removed with the stack: it holds copies of alerts that were not delivered, not state
anything reads, and a deleted environment's alerts are moot.

A delivery that failed for good is counted in the rule's AWS/Events FailedInvocations
(eb-monitoring.html), sent to the queue or not. Each rule has an alarm on it
(`<rule name>-undelivered`, `add_delivery_alarms`: any failed delivery in five minutes),
which says which rule failed and also fires when the queue itself refused the event
(the dead-letter path broken too); one more alarm, `<prefix>-alerts-undelivered-queued`,
is in ALARM while the queue holds an event (AWS/SQS ApproximateNumberOfMessagesVisible,
Maximum over five minutes, above 0), so it stays in ALARM until someone reads the queue,
where the FailedInvocations alarm returns to OK five minutes after. A last rule
(`delivery-failing`) sends their state changes to the topic, as the check's alarm's is
sent, naming the alarm and so the rule. It takes the same path: a failure of every
delivery to the topic stops its notice too (the notice itself then waits in the queue),
so the alarms are also on the dashboard, where someone looking sees them in ALARM.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from novapod.constructs.acknowledge import acknowledge
from novapod.constructs.handler_core import health

SOURCE = "aws.sagemaker"
CLUSTER_STATE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
ALARM_SOURCE = "aws.cloudwatch"
ALARM_STATE_CHANGE = "CloudWatch Alarm State Change"
# The suffix of the check's alarm's name and of its rule's.
CHECK_FAILING = "check-failing"
# The suffix of the rule that sends the rules' delivery alarms, and of each such alarm's
# name (`<rule name>-undelivered`).
DELIVERY_FAILING = "delivery-failing"
UNDELIVERED = "undelivered"
# A rule's deliveries that failed for good: AWS/Events FailedInvocations, dimension
# RuleName (a rule of the default event bus), unit Count, Sum the useful statistic; sent
# only when not zero ("Monitoring Amazon EventBridge", docs.aws.amazon.com/eventbridge/
# latest/userguide/eb-monitoring.html), so no data is no failure (notBreaching). A
# missing permission on the target (the topic's or its key's policy) is not retried:
# the event is dropped at once ("Debugging event delivery", eb-rule-event-delivery.html)
# and counts here. Any failed delivery in a period of DELIVERY_PERIOD_MINUTES alarms.
EVENTS_NAMESPACE = "AWS/Events"
FAILED_INVOCATIONS = "FailedInvocations"
DELIVERY_PERIOD_MINUTES = 5
# How long EventBridge retries a delivery that failed with a retriable error before it
# sends the event to the dead-letter queue (RetryPolicy.MaximumEventAgeInSeconds, 60 to
# 86400; the default is 24 hours: eb-rule-dlq.html): an hour, so an SNS outage or
# throttling alarms within the hour, not a day late.
MAX_EVENT_AGE_SECONDS = 3600
# The dead-letter queue's retention: SQS's longest (MessageRetentionPeriod, 14 days).
DEAD_LETTER_RETENTION_DAYS = 14
# The alarm on the queue's waiting events (AWS/SQS, by QueueName).
QUEUED = "alerts-undelivered-queued"
# Why the alarms have no alarm action (cdk-nag's CloudWatchAlarmAction).
ALARM_ACTION_REASON = (
    "The alarm's state change reaches the alert topic through an EventBridge rule "
    "(alerts.py: check-failing, delivery-failing), which publishes as EventBridge, allowed "
    "by the topic's policy; an SNS alarm action would publish as cloudwatch.amazonaws.com, "
    "which the storage key's policy does not allow to use the key that encrypts the topic."
)
PUBLISH_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


@dataclass(frozen=True)
class EventAlert:
    """One rule: its name's suffix, the detail type and the detail it matches, the paths
    it reads from the event and the sentence it sends (`<name>`: the value at that path)."""

    suffix: str
    detail_type: str
    detail: Mapping[str, object]
    paths: Mapping[str, str]
    sentence: str
    source: str = SOURCE
    resources: tuple[str, ...] = ()

    def pattern(self, account: str) -> dict[str, object]:
        return {
            "source": [self.source],
            "detail-type": [self.detail_type],
            "account": [account],
            **({"resources": list(self.resources)} if self.resources else {}),
            "detail": dict(self.detail),
        }


def check_alarm_alert(
    environment: str, alarm_arn: str, runs: int, every_minutes: int, log_group: str
) -> EventAlert:
    """The rule of the check's alarm: into ALARM once the check failed `runs` runs in a
    row; the next command reads its failed runs' lines (step "fail", index.py)."""
    return EventAlert(
        CHECK_FAILING,
        ALARM_STATE_CHANGE,
        {"state": {"value": ["ALARM"]}},
        {"reason": "$.detail.state.reason"},
        f"novapod {environment}: the environment's scheduled check has failed its last "
        f"{runs} runs ({runs * every_minutes} min), so its metrics and alerts are not "
        "current (<reason>); next: aws logs filter-log-events --log-group-name "
        f"{log_group} --filter-pattern '{{ $.step = \"fail\" }}' --region {Aws.REGION}",
        source=ALARM_SOURCE,
        resources=(alarm_arn,),
    )


def delivery_alarm_alert(
    environment: str, prefix: str, alarm_arns: Sequence[str], topic_arn: str
) -> EventAlert:
    """The rule of the rules' delivery alarms (`Alerts.add_delivery_alarms`): into ALARM
    when a rule's delivery to the topic failed; the alarm's name says which rule
    (`detail.alarmName` of the state change event, cloudwatch-and-eventbridge.html). It
    delivers the same way, so a failure of every delivery to the topic (its policy, the
    key's) stops this notice too: the alarm then shows on the dashboard only."""
    return EventAlert(
        DELIVERY_FAILING,
        ALARM_STATE_CHANGE,
        {"state": {"value": ["ALARM"]}},
        {"alarm": "$.detail.alarmName", "reason": "$.detail.state.reason"},
        f"novapod {environment}: an EventBridge rule could not deliver an alert to the "
        "topic (<alarm>: <reason>), so HyperPod's events and the check's alarm may not "
        "reach you; what was not delivered waits in the queue "
        f"{prefix}-undelivered-alerts (docs/operations.md, Alerts, reads and sends it "
        "again); next: compare the topic's policy (aws sns get-topic-attributes "
        f"--topic-arn {topic_arn} --query Attributes.Policy --region {Aws.REGION}) and the "
        "storage key's AlertPublishersThroughSns statement with the stacks, then deploy "
        f"them again (npx cdk deploy -c config=CONFIG {prefix}-storage {prefix}-monitor)",
        source=ALARM_SOURCE,
        resources=tuple(alarm_arns),
    )


def event_alerts(environment: str, cluster: str) -> list[EventAlert]:
    """The rules of one environment's cluster."""
    env = f"novapod {environment}"
    return [
        EventAlert(
            "cluster-state",
            CLUSTER_STATE,
            {"ClusterName": [cluster], "ClusterStatus": sorted(health.CLUSTER_FAILED)},
            {"status": "$.detail.ClusterStatus", "failure": "$.detail.FailureMessage"},
            f"{env}: HyperPod cluster {cluster} is <status> (<failure>); next: aws sagemaker "
            f"describe-cluster --cluster-name {cluster}",
        ),
        EventAlert(
            "node-health",
            NODE_HEALTH,
            {"ClusterName": [cluster], "HealthSummary": {"HealthStatus": ["Unhealthy"]}},
            {
                "node": "$.detail.InstanceId",
                "reason": "$.detail.HealthSummary.HealthStatusReason",
                "repair": "$.detail.HealthSummary.RepairAction",
                "advice": "$.detail.HealthSummary.Recommendation",
            },
            f"{env}: node <node> of HyperPod cluster {cluster} is Unhealthy: <reason> "
            "(repair action <repair>; <advice>); next: aws sagemaker describe-cluster-node "
            f"--cluster-name {cluster} --node-id <node>",
        ),
        EventAlert(
            "cluster-event",
            CLUSTER_EVENT,
            {"EventDetails": {"ClusterName": [cluster], "EventLevel": ["Error"]}},
            {
                "resource": "$.detail.EventDetails.ResourceType",
                "description": "$.detail.EventDetails.Description",
            },
            f"{env}: HyperPod cluster {cluster} reports an error (<resource>): <description>; "
            f"next: aws sagemaker list-cluster-events --cluster-name {cluster}",
        ),
    ]


# The services that publish to the alert topic as themselves: EventBridge for the rules
# on HyperPod's events, and CloudWatch for alarms whose action is the topic (the check's
# alarms: one on its Errors publishes to the topic with every monitor).
EVENTS_PRINCIPAL = "events.amazonaws.com"


def service_publishers() -> tuple[str, ...]:
    """The service principals the storage key's policy lets use the key through SNS for
    this environment's alert topic (see the module docstring): EventBridge, whose rules
    deliver HyperPod's events and the check's own alarm (which has no SNS action, so
    CloudWatch never publishes to the topic itself)."""
    return (EVENTS_PRINCIPAL,)


def grant_publish(principal: iam.IGrantable, topic: sns.ITopic, key: kms.IKey, sid: str) -> None:
    """Publish to the encrypted topic: sns:Publish on it, its key through SNS only."""
    principal.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(sid=sid, actions=["sns:Publish"], resources=[topic.topic_arn])
    )
    principal.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(
            sid=f"{sid}Key",
            actions=list(PUBLISH_KEY_ACTIONS),
            resources=[key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"sns.{Aws.REGION}.amazonaws.com"}},
        )
    )


class Alerts(Construct):
    """Attributes: `topic`, `rules` (suffix -> CfnRule: HyperPod's with a cluster, the
    check's alarm's once `add_alarm_rule` made it, the delivery alarms' once
    `add_delivery_alarms` made them), `delivery_alarms` (rule suffix -> its alarm) and
    `topic_policy`."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        environment: str,
        prefix: str,
        cluster_name: str | None,
        emails: Sequence[str],
        key: kms.IKey,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"novapod {environment}",
            master_key=key,
            enforce_ssl=True,
        )
        for email in emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        self.rules: dict[str, events.CfnRule] = {}
        self.environment = environment
        alerts = event_alerts(environment, cluster_name) if cluster_name is not None else []
        self.names = {a.suffix: f"{prefix}-{a.suffix}" for a in alerts}
        self.names[CHECK_FAILING] = f"{prefix}-{CHECK_FAILING}"
        self.names[DELIVERY_FAILING] = f"{prefix}-{DELIVERY_FAILING}"
        self.prefix = prefix
        self.delivery_alarms: dict[str, cloudwatch.Alarm] = {}
        rule_arns = [
            stack.format_arn(service="events", resource="rule", resource_name=name)
            for name in self.names.values()
        ]
        # What the rules could not deliver (the module docstring says why it is kept, how
        # long, and why it goes with the stack).
        self.dead_letters = sqs.Queue(
            self,
            "DeadLetters",
            queue_name=f"{prefix}-undelivered-alerts",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            retention_period=Duration.days(DEAD_LETTER_RETENTION_DAYS),
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge(
            self.dead_letters,
            "AwsSolutions-SQS3",
            "This queue is the dead-letter queue of the alert rules' targets "
            "(DeadLetterConfig, eb-rule-dlq.html); a DLQ of its own would have no reader, "
            "and its waiting events alarm (alerts-undelivered-queued).",
        )
        self.dead_letters.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EventBridgeRulesDeadLetters",
                principals=[iam.ServicePrincipal(EVENTS_PRINCIPAL)],
                actions=["sqs:SendMessage"],
                resources=[self.dead_letters.queue_arn],
                conditions={"ArnEquals": {"aws:SourceArn": rule_arns}},
            )
        )
        queue_policy = self.dead_letters.node.try_find_child("Policy")
        assert queue_policy is not None  # add_to_resource_policy made it
        self.queue_policy = queue_policy
        # The rules publish as EventBridge itself: the topic's policy allows
        # events.amazonaws.com, for these rules only ("Amazon SNS permissions" in the
        # EventBridge user guide, eb-use-resource-based.html), beside the key-policy
        # statement (`service_publishers`).
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EventBridgeRulesPublish",
                principals=[iam.ServicePrincipal(EVENTS_PRINCIPAL)],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={"ArnEquals": {"aws:SourceArn": rule_arns}},
            )
        )
        policy = self.topic.node.try_find_child("Policy")
        assert policy is not None  # add_to_resource_policy made it
        self.topic_policy = policy
        for alert in alerts:
            self._rule(alert, f"{alert.detail_type} of HyperPod cluster {cluster_name}")

    def add_alarm_rule(self, alert: EventAlert) -> events.CfnRule:
        """The rule that sends the check's alarm (`check_alarm_alert`) to the topic."""
        return self._rule(alert, "the scheduled check's alarm")

    def add_delivery_alarms(self) -> events.CfnRule:
        """An alarm on each rule's failed deliveries (FAILED_INVOCATIONS, by the rule's
        name: every rule of `names`, this one's own included), and the rule that sends
        their state changes to the topic, as the check's alarm's is sent. Its notice takes
        the path whose failure it reports: when every delivery to the topic fails (a
        broken topic or key policy) it is lost too, and the alarm is seen on the
        dashboard (`dashboard.py`, the alarms' widget) and in the CloudWatch console."""
        arns = []
        for suffix, rule_name in self.names.items():
            alarm = cloudwatch.Alarm(
                self,
                "".join(p.capitalize() for p in suffix.split("-")) + "Undelivered",
                alarm_name=f"{rule_name}-{UNDELIVERED}",
                alarm_description=f"novapod {self.environment}: EventBridge rule {rule_name} "
                "could not deliver an alert to the alert topic; the delivery-failing rule "
                "sends this state change to the topic",
                metric=cloudwatch.Metric(
                    namespace=EVENTS_NAMESPACE,
                    metric_name=FAILED_INVOCATIONS,
                    dimensions_map={"RuleName": rule_name},
                    statistic="Sum",
                    period=Duration.minutes(DELIVERY_PERIOD_MINUTES),
                ),
                threshold=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
            acknowledge(alarm, "CloudWatchAlarmAction", ALARM_ACTION_REASON)
            self.delivery_alarms[suffix] = alarm
            arns.append(alarm.alarm_arn)
        # The events waiting in the dead-letter queue: in ALARM until someone reads it.
        queued = cloudwatch.Alarm(
            self,
            "DeadLettersQueued",
            alarm_name=f"{self.prefix}-{QUEUED}",
            alarm_description=f"novapod {self.environment}: alerts an EventBridge rule could "
            f"not deliver to the alert topic wait in the queue {self.prefix}-undelivered-"
            "alerts; the delivery-failing rule sends this state change to the topic",
            metric=self.dead_letters.metric_approximate_number_of_messages_visible(
                statistic="Maximum", period=Duration.minutes(DELIVERY_PERIOD_MINUTES)
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        acknowledge(queued, "CloudWatchAlarmAction", ALARM_ACTION_REASON)
        self.delivery_alarms[QUEUED] = queued
        arns.append(queued.alarm_arn)
        alert = delivery_alarm_alert(self.environment, self.prefix, arns, self.topic.topic_arn)
        return self._rule(alert, "the rules' delivery alarms")

    def _rule(self, alert: EventAlert, what: str) -> events.CfnRule:
        stack = Stack.of(self)
        rule = events.CfnRule(
            self,
            "".join(p.capitalize() for p in alert.suffix.split("-")) + "Rule",
            name=self.names[alert.suffix],
            description=f"novapod {self.environment}: {what} to the alert topic",
            event_pattern=alert.pattern(stack.account),
            state="ENABLED",
            targets=[
                events.CfnRule.TargetProperty(
                    id="AlertTopic",
                    arn=self.topic.topic_arn,
                    input_transformer=events.CfnRule.InputTransformerProperty(
                        input_paths_map=dict(alert.paths), input_template=alert.sentence
                    ),
                    retry_policy=events.CfnRule.RetryPolicyProperty(
                        maximum_event_age_in_seconds=MAX_EVENT_AGE_SECONDS
                    ),
                    dead_letter_config=events.CfnRule.DeadLetterConfigProperty(
                        arn=self.dead_letters.queue_arn
                    ),
                )
            ],
        )
        # Its first event finds the topic's and the queue's policies allowing it.
        rule.node.add_dependency(self.topic_policy)
        rule.node.add_dependency(self.queue_policy)
        self.rules[alert.suffix] = rule
        return rule
