"""The monitor stack (novapod/stacks/monitor.py) of the shipped configs: built with plans
or a cluster, nothing depends on it; the schedule, the check's function and its role,
statement by statement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from novapod.config import load_config, parse_config
from novapod.config.stacks import stack_kinds
from novapod.constructs.monitor.construct import ENVIRONMENT_TAG, rate
from novapod.nova.kubernetes import MONITOR_GROUP, MONITOR_ROLE, MONITOR_RULES
from novapod.stacks.monitor import watched_jobs
from novapod.yamlsafe import load as load_yaml
from tests.conftest import (
    ALL_CONFIGS,
    ROOT,
    VALIDATION_TIME,
    Synthesized,
    joined,
    producer_value,
    resources,
)

LITE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
MONITORED = [p for p in ALL_CONFIGS if load_config(p).has_monitor]


def only(template: dict[str, Any], type_: str) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = resources(template, type_).items()
    return logical_id, resource


def schedule_of(template: dict[str, Any]) -> dict[str, Any]:
    return only(template, "AWS::Scheduler::Schedule")[1]


def role_statements(result: Synthesized, role_id: str) -> dict[str, dict[str, Any]]:
    """Sid -> actions, resources (rendered) and condition of every statement of a role's
    policies in the monitor stack."""
    template = result.templates["monitor"]
    out = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for s in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
            found = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
            out[s.get("Sid", "-")] = {
                "actions": sorted(actions),
                "resources": sorted(joined(r, result) for r in found),
                "condition": rendered(s.get("Condition"), result),
            }
    return out


def publish_statements(topic_id: str) -> dict[str, dict[str, Any]]:
    """What publishing to the alert topic takes (alerts.grant_publish): the topic, its key
    through SNS only."""
    return {
        "PublishAlerts": {
            "actions": ["sns:Publish"],
            "resources": [f"${{{topic_id}}}"],
            "condition": None,
        },
        "PublishAlertsKey": {
            "actions": ["kms:Decrypt", "kms:GenerateDataKey"],
            "resources": ["${EncryptionKey.Arn}"],
            "condition": {"StringEquals": {"kms:ViaService": "sns.${AWS::Region}.amazonaws.com"}},
        },
    }


def rendered(value: Any, result: Synthesized) -> Any:
    """A condition with its intrinsics rendered as text (`${AWS::Region}`)."""
    if isinstance(value, dict) and {"Fn::Join", "Ref", "Fn::GetAtt"} & set(value):
        return joined(value, result)
    if isinstance(value, dict):
        return {k: rendered(v, result) for k, v in value.items()}
    if isinstance(value, list):
        return [rendered(v, result) for v in value]
    return value


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: Path(p).stem)
def test_the_monitor_is_built_with_plans_or_a_cluster(synth, path) -> None:
    config = load_config(path)
    watched = bool(config.capacity.training_plans) or config.hyperpod is not None
    assert config.has_monitor == watched
    assert ("monitor" in synth(path).templates) == watched


def test_monitoring_enabled_false_removes_the_monitor_only() -> None:
    data = load_yaml(LITE.read_text(encoding="utf-8")) | {"monitoring": {"enabled": False}}
    data.pop("notifications")  # nothing would send them: an error (tests/unit)
    off = parse_config(data, source=str(LITE), now=VALIDATION_TIME)
    assert stack_kinds(off) == tuple(k for k in stack_kinds(load_config(LITE)) if k != "monitor")


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_nothing_depends_on_the_monitor(synth, path) -> None:
    result = synth(path)
    config = load_config(path)
    # The private subnets of a VPC it creates, the key, the NAT routes (eks builds them).
    assert result.dependencies["monitor"] == {"storage"} | (
        {"network"} if config.network.vpc else set()
    ) | ({"eks"} if config.eks else set())
    for kind, kinds in result.dependencies.items():
        assert "monitor" not in kinds, kind
    monitor = result.stack_names["monitor"]
    for kind, template in result.templates.items():
        if kind != "monitor":
            assert monitor not in str(template), kind  # no value read from it
    # For people only: the topic to subscribe more endpoints to, the dashboard's address.
    assert set(result.templates["monitor"]["Outputs"]) == {"AlertTopicArn", "DashboardUrl"}


def test_the_schedule_runs_the_check_every_few_minutes(synth) -> None:
    result = synth(LITE)
    template = result.templates["monitor"]
    function_id, _ = only(template, "AWS::Lambda::Function")
    props = schedule_of(template)["Properties"]
    assert props["ScheduleExpression"] == "rate(5 minutes)"  # monitoring.every_minutes
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert props["State"] == "ENABLED"
    target = props["Target"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    # A retried sample is an old one: the next run comes at the next rate.
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 300}
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    trust = template["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]
    assert trust["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Condition": {
                "StringEquals": {
                    "aws:SourceAccount": "111122223333",
                    "aws:SourceArn": "arn:aws:scheduler:us-east-1:111122223333:"
                    "schedule-group/default",
                }
            },
            "Effect": "Allow",
            "Principal": {"Service": "scheduler.amazonaws.com"},
        }
    ]
    assert role_statements(result, role_id) == {
        "InvokeTheCheck": {
            "actions": ["lambda:InvokeFunction"],
            "resources": [f"${{{function_id}.Arn}}"],
            "condition": None,
        }
    }


def test_the_rate_is_singular_for_one_minute() -> None:
    assert (rate(1), rate(2), rate(60)) == (
        "rate(1 minute)",
        "rate(2 minutes)",
        "rate(60 minutes)",
    )


def test_the_function_runs_once_at_a_time_in_the_private_subnets(synth) -> None:
    result = synth(LITE)
    template = result.templates["monitor"]
    function_id, function = only(template, "AWS::Lambda::Function")
    props = function["Properties"]
    assert props["Handler"] == "novapod_lambda.monitor.handler.index.check"
    assert (props["Runtime"], props["Architectures"]) == ("python3.14", ["arm64"])
    assert props["ReservedConcurrentExecutions"] == 1
    assert props["Timeout"] == 360  # construct.TIMEOUT, above handler/index.py's worst case
    assert "Environment" not in props  # its settings are the schedule's input
    network = result.templates["network"]
    subnets = [producer_value(result, s) for s in props["VpcConfig"]["SubnetIds"]]
    private = [k for k in resources(network, "AWS::EC2::Subnet") if "Private" in k]
    assert sorted(s["Ref"] for s in subnets) == sorted(private)
    group_id, group = only(template, "AWS::EC2::SecurityGroup")
    assert props["VpcConfig"]["SecurityGroupIds"] == [{"Fn::GetAtt": [group_id, "GroupId"]}]
    assert [(e["IpProtocol"], e["FromPort"], e["ToPort"]) for e in group["Properties"][
        "SecurityGroupEgress"
    ]] == [("tcp", 443, 443)]  # fmt: skip
    assert "SecurityGroupIngress" not in group["Properties"]
    _, invoke = only(template, "AWS::Lambda::EventInvokeConfig")
    assert invoke["Properties"]["MaximumRetryAttempts"] == 0
    log_id, logs = only(template, "AWS::Logs::LogGroup")
    assert props["LoggingConfig"] == {"LogGroup": {"Ref": log_id}}
    key = producer_value(result, logs["Properties"]["KmsKeyId"])
    assert key == {"Fn::GetAtt": ["EncryptionKey", "Arn"]}  # the storage stack's key
    assert logs["Properties"]["RetentionInDays"] == 365  # eks.log_retention_days
    assert function_id


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_the_check_s_role_reads_plans_and_cluster_puts_metrics_publishes_and_keeps_state(
    synth, path
) -> None:
    result = synth(path)
    config = load_config(path)
    template = result.templates["monitor"]
    _, function = only(template, "AWS::Lambda::Function")
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    log_id, _ = only(template, "AWS::Logs::LogGroup")
    topic_id, _ = only(template, "AWS::SNS::Topic")
    table_id, _ = only(template, "AWS::DynamoDB::Table")
    found = role_statements(result, role_id)
    region, account = config.region, config.account
    expected: dict[str, dict[str, Any]] = {
        "-": {
            "actions": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "resources": [f"${{{log_id}.Arn}}"],
            "condition": None,
        },
        "PutNovapodMetrics": {
            "actions": ["cloudwatch:PutMetricData"],
            "resources": ["*"],
            "condition": {"StringEquals": {"cloudwatch:namespace": "novapod"}},
        },
        "AttachToVpc": found["AttachToVpc"],  # provider.attach_to_vpc, tested there
        "DescribeNetworkInterfaces": found["DescribeNetworkInterfaces"],
        **publish_statements(topic_id),
        "CheckState": {
            "actions": ["dynamodb:GetItem", "dynamodb:PutItem"],
            "resources": [f"${{{table_id}.Arn}}"],
            "condition": {
                "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [config.name]},
                "Null": {"dynamodb:LeadingKeys": "false"},
            },
        },
        "CheckStateKey": {
            "actions": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"],
            "resources": ["${EncryptionKey.Arn}"],
            "condition": {
                "StringEquals": {"kms:ViaService": "dynamodb.${AWS::Region}.amazonaws.com"}
            },
        },
    }
    if config.capacity.training_plans:
        arns = sorted(
            spec.existing_arn
            or f"arn:aws:sagemaker:{region}:{account}:training-plan/"
            + config.purchase_names()[spec.name]
            for spec in config.capacity.training_plans
        )
        expected["DescribeTrainingPlans"] = {
            "actions": ["sagemaker:DescribeTrainingPlan"],
            "resources": arns,
            "condition": None,
        }
    if config.hyperpod is not None:
        expected["DescribeHyperPodCluster"] = {
            "actions": ["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
            "resources": [f"arn:aws:sagemaker:{region}:{account}:cluster/*"],
            "condition": {
                "StringEqualsIfExists": {"aws:ResourceTag/novapod:environment": config.name}
            },
        }
        # The cluster carries that tag (the environment tags every resource).
        (cluster,) = resources(result.templates["hyperpod"], "AWS::SageMaker::Cluster").values()
        tags = {t["Key"]: t["Value"] for t in cluster["Properties"]["Tags"]}
        assert tags[ENVIRONMENT_TAG] == config.name == config.resource_tags[ENVIRONMENT_TAG]
    if watched_jobs(config) is not None:
        # The EKS cluster named at synth: its exact ARN (the Kubernetes API is authorized
        # by the cluster's access entry, not IAM).
        expected["DescribeEksCluster"] = {
            "actions": ["eks:DescribeCluster"],
            "resources": [f"arn:aws:eks:{region}:{account}:cluster/{config.prefix}"],
            "condition": None,
        }
    assert found == expected


# --- the jobs' runs -------------------------------------------------------------------------


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_with_jobs_the_check_reads_their_runs_with_an_access_entry_of_its_own(synth, path) -> None:
    result = synth(path)
    config = load_config(path)
    template = result.templates["monitor"]
    _, function = only(template, "AWS::Lambda::Function")
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    entries = resources(template, "AWS::EKS::AccessEntry")
    ingress = resources(template, "AWS::EC2::SecurityGroupIngress")
    settings = json.loads(joined(schedule_of(template)["Properties"]["Target"]["Input"]))
    jobs = watched_jobs(config)
    if jobs is None:
        assert (entries, ingress, settings.get("jobs")) == ({}, {}, None)
        return
    # Jobs on SageMaker training jobs (and distillation, which runs only there) are not
    # on the cluster.
    launchable = [
        j.name for j in config.jobs if j.technique != "distillation" and j.runs_on == "hyperpod"
    ]
    assert jobs.names == tuple(launchable)
    assert settings["jobs"] == {
        "eks_cluster": config.prefix,
        "namespace": config.nova_settings.namespace,
        "names": launchable,
        "region": "${AWS::Region}",
        "runs": {j.name: j.runs for j in config.jobs if j.name in launchable},
        # after: and from: job: (Job.predecessors), the jobs novapod launch waits for.
        "predecessors": {j.name: list(j.predecessors) for j in config.jobs if j.name in launchable},
    }
    assert settings["claim_lease_seconds"] == 420  # the function's 6 minutes and one more
    ((_, entry),) = entries.items()
    # A Kubernetes group and no access policy (AmazonEKSViewPolicy cannot list
    # PyTorchJobs; the group's Role lists them in the jobs' namespace only).
    assert {k: v for k, v in entry["Properties"].items() if k != "Tags"} == {
        "ClusterName": config.prefix,
        "PrincipalArn": {"Fn::GetAtt": [role_id, "Arn"]},
        "Type": "STANDARD",
        "KubernetesGroups": [MONITOR_GROUP],
    }
    # HTTPS from the check's group to the private endpoint's (the HyperPod group).
    group_id, _ = only(template, "AWS::EC2::SecurityGroup")
    ((_, rule),) = ingress.items()
    props = rule["Properties"]
    assert (props["IpProtocol"], props["FromPort"], props["ToPort"]) == ("tcp", 443, 443)
    assert props["SourceSecurityGroupId"] == {"Fn::GetAtt": [group_id, "GroupId"]}
    hyperpod_group = producer_value(result, props["GroupId"])
    assert hyperpod_group == {"Fn::GetAtt": ["HyperPodSecurityGroup1B7ACBFE", "GroupId"]}


def test_the_check_s_kubernetes_group_may_only_list_pytorchjobs_and_pods_in_the_jobs_namespace(
    synth,
) -> None:
    """The runs (PyTorchJobs) and the nodes they hold (pods: handler_core/runs.py
    busy_nodes), listed in the jobs' namespace only: no get, watch, log or exec."""
    assert MONITOR_RULES == (
        (("",), ("pods",), ("list",)),
        (("kubeflow.org",), ("pytorchjobs",), ("list",)),
    )
    result = synth(LITE)
    config = load_config(LITE)
    namespace = config.nova_settings.namespace
    (build,) = resources(result.templates["eks"], "Custom::NovapodClusterBootstrap").values()
    env = build["Properties"]["BuildEnvironment"]
    applied = json.loads(env["NOVA_ACCESS_MANIFEST"])["items"]
    mine = [o for o in applied if o["metadata"]["name"] == MONITOR_ROLE]
    assert mine == [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {
                "name": MONITOR_ROLE,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "novapod"},
            },
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"], "verbs": ["list"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {
                "name": MONITOR_ROLE,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "novapod"},
            },
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": MONITOR_ROLE,
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": MONITOR_GROUP}
            ],
        },
    ]


# --- the alerts -----------------------------------------------------------------------------

EMAILS = ["platform-team@example.com"]  # single-rig-purchase.yaml's notifications.emails
STORAGE_KEY = {"Fn::GetAtt": ["EncryptionKey", "Arn"]}


def test_the_topic_is_encrypted_with_the_storage_key_and_refuses_plain_http(synth) -> None:
    result = synth(LITE)
    template = result.templates["monitor"]
    topic_id, topic = only(template, "AWS::SNS::Topic")
    assert producer_value(result, topic["Properties"]["KmsMasterKeyId"]) == STORAGE_KEY
    assert topic["Properties"]["DisplayName"] == "novapod nova-lite"
    _, policy = only(template, "AWS::SNS::TopicPolicy")
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Action": "sns:Publish",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            "Effect": "Deny",
            "Principal": "*",
            "Resource": {"Ref": topic_id},
            "Sid": "AllowPublishThroughSSLOnly",
        },
        {
            "Action": "sns:Publish",
            "Condition": {"ArnEquals": {"aws:SourceArn": RULE_ARNS}},
            "Effect": "Allow",
            "Principal": {"Service": "events.amazonaws.com"},
            "Resource": {"Ref": topic_id},
            "Sid": "EventBridgeRulesPublish",
        },
    ]


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_the_config_s_addresses_are_subscribed(synth, path) -> None:
    result = synth(path)
    template = result.templates["monitor"]
    topic_id, _ = only(template, "AWS::SNS::Topic")
    subscribed = [
        (s["Properties"]["Protocol"], s["Properties"]["Endpoint"], s["Properties"]["TopicArn"])
        for s in resources(template, "AWS::SNS::Subscription").values()
    ]
    emails = load_config(path).notifications.emails
    assert subscribed == [("email", e, {"Ref": topic_id}) for e in emails]
    if path == LITE:
        assert emails == EMAILS


def test_the_rules_send_hyperpod_s_events_of_the_cluster_to_the_topic(synth) -> None:
    result = synth(LITE)
    template = result.templates["monitor"]
    topic_id, _ = only(template, "AWS::SNS::Topic")
    rules = {
        r["Properties"]["Name"]: r
        for r in resources(template, "AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"]["source"] == ["aws.sagemaker"]
    }
    base = {"source": ["aws.sagemaker"], "account": ["111122223333"]}
    cluster = "novapod-nova-lite"
    assert {name: r["Properties"]["EventPattern"] for name, r in rules.items()} == {
        "novapod-nova-lite-cluster-state": base
        | {
            "detail-type": ["SageMaker HyperPod Cluster State Change"],
            "detail": {
                "ClusterName": [cluster],
                "ClusterStatus": ["Deleting", "Failed", "RollingBack"],
            },
        },
        "novapod-nova-lite-node-health": base
        | {
            "detail-type": ["SageMaker HyperPod Cluster Node Health Event"],
            "detail": {"ClusterName": [cluster], "HealthSummary": {"HealthStatus": ["Unhealthy"]}},
        },
        "novapod-nova-lite-cluster-event": base
        | {
            "detail-type": ["SageMaker HyperPod Cluster Event"],
            "detail": {"EventDetails": {"ClusterName": [cluster], "EventLevel": ["Error"]}},
        },
    }
    sentences = {}
    for name, rule in rules.items():
        assert rule["Properties"]["State"] == "ENABLED"
        (target,) = rule["Properties"]["Targets"]
        assert target["Arn"] == {"Ref": topic_id}
        transformer = target["InputTransformer"]
        text = transformer["InputTemplate"]  # plain text (test_monitor_events.py)
        for key in transformer["InputPathsMap"]:
            assert f"<{key}>" in text
        sentences[name] = (text, transformer["InputPathsMap"])
    assert sentences["novapod-nova-lite-node-health"] == (
        "novapod nova-lite: node <node> of HyperPod cluster novapod-nova-lite is Unhealthy: "
        "<reason> (repair action <repair>; <advice>); next: aws sagemaker "
        "describe-cluster-node --cluster-name novapod-nova-lite --node-id <node>",
        {
            "node": "$.detail.InstanceId",
            "reason": "$.detail.HealthSummary.HealthStatusReason",
            "repair": "$.detail.HealthSummary.RepairAction",
            "advice": "$.detail.HealthSummary.Recommendation",
        },
    )
    assert sentences["novapod-nova-lite-cluster-state"][0] == (
        "novapod nova-lite: HyperPod cluster novapod-nova-lite is <status> (<failure>); next: "
        "aws sagemaker describe-cluster --cluster-name novapod-nova-lite"
    )
    assert sentences["novapod-nova-lite-cluster-event"][0].endswith(
        "next: aws sagemaker list-cluster-events --cluster-name novapod-nova-lite"
    )


RULE_ARNS = [
    f"arn:aws:events:us-east-1:111122223333:rule/novapod-nova-lite-{suffix}"
    for suffix in (
        "cluster-state",
        "node-health",
        "cluster-event",
        "check-failing",
        "delivery-failing",
    )
]


def test_the_rules_publish_as_eventbridge_through_the_topic_policy(synth) -> None:
    """No RoleArn on an SNS target (eb-use-resource-based.html: delivery may fail with one,
    particularly to an encrypted topic); the topic's policy allows these rules only, and
    each rule waits for it."""
    result = synth(LITE)
    template = result.templates["monitor"]
    policy_id, _ = only(template, "AWS::SNS::TopicPolicy")
    rules = resources(template, "AWS::Events::Rule")
    assert len(rules) == len(RULE_ARNS)
    for rule in rules.values():
        assert all("RoleArn" not in t for t in rule["Properties"]["Targets"])
        assert policy_id in rule["DependsOn"]
    assert not [
        r
        for r in resources(template, "AWS::IAM::Role").values()
        if "events.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
    ]


def test_the_state_table_is_encrypted_and_disposable_and_the_check_is_told_of_it(synth) -> None:
    result = synth(LITE)
    template = result.templates["monitor"]
    topic_id, _ = only(template, "AWS::SNS::Topic")
    table_id, table = only(template, "AWS::DynamoDB::Table")
    props = table["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "Environment", "KeyType": "HASH"}]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert producer_value(result, props["SSESpecification"]["KMSMasterKeyId"]) == STORAGE_KEY
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["DeletionPolicy"] == "Delete"  # disposable: goes with the stack
    text = joined(schedule_of(template)["Properties"]["Target"]["Input"])
    parsed = json.loads(text)
    assert (parsed["topic_arn"], parsed["state_table"]) == (f"${{{topic_id}}}", f"${{{table_id}}}")
    assert (parsed["idle_alert_minutes"], parsed["ending_alert_days"]) == (60, 3)


def test_without_a_cluster_there_are_no_hyperpod_rules() -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_kms as kms

    from novapod.constructs.monitor.alerts import Alerts

    stack = Stack(App(), "S", env={"account": "111122223333", "region": "us-east-1"})
    key = kms.Key.from_key_arn(stack, "K", "arn:aws:kms:us-east-1:111122223333:key/k")
    alerts = Alerts(
        stack, "A", environment="e", prefix="novapod-e", cluster_name=None, emails=[], key=key
    )
    assert alerts.rules == {}
    # The role stays, for the check's alarm's rule (the stack adds it), and only that.
    assert alerts.names == {
        "check-failing": "novapod-e-check-failing",
        "delivery-failing": "novapod-e-delivery-failing",
    }


# --- the check's alarm ----------------------------------------------------------------------


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_the_check_s_alarm_watches_its_errors_and_reaches_the_topic_through_a_rule(
    synth, path
) -> None:
    result = synth(path)
    config = load_config(path)
    template = result.templates["monitor"]
    function_id, _ = only(template, "AWS::Lambda::Function")
    topic_id, _ = only(template, "AWS::SNS::Topic")
    log_id, _ = only(template, "AWS::Logs::LogGroup")
    ((alarm_id, alarm),) = [
        (i, a)
        for i, a in resources(template, "AWS::CloudWatch::Alarm").items()
        if a["Properties"]["AlarmName"] == f"{config.prefix}-check-failing"
    ]
    props = alarm["Properties"]
    minutes = config.monitoring.every_minutes
    assert {k: v for k, v in props.items() if k not in ("AlarmDescription", "Tags")} == {
        "AlarmName": f"{config.prefix}-check-failing",
        "Namespace": "AWS/Lambda",
        "MetricName": "Errors",
        "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": function_id}}],
        "Statistic": "Sum",
        "Period": 60 * minutes,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "EvaluationPeriods": 3,
        "DatapointsToAlarm": 3,
        "TreatMissingData": "notBreaching",
    }  # no AlarmActions: CloudWatch would publish without a role, the rule does with one
    (rule,) = [
        r
        for r in resources(template, "AWS::Events::Rule").values()
        if r["Properties"]["Name"] == f"{config.prefix}-check-failing"
    ]
    assert rule["Properties"]["EventPattern"] == {
        "source": ["aws.cloudwatch"],
        "detail-type": ["CloudWatch Alarm State Change"],
        "account": [config.account],
        "resources": [{"Fn::GetAtt": [alarm_id, "Arn"]}],
        "detail": {"state": {"value": ["ALARM"]}},
    }
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Ref": topic_id} and "RoleArn" not in target
    transformer = target["InputTransformer"]
    assert transformer["InputPathsMap"] == {"reason": "$.detail.state.reason"}
    sentence = joined(transformer["InputTemplate"])  # plain text, not a JSON string
    assert sentence == (
        f"novapod {config.name}: the environment's scheduled check has failed its last 3 "
        f"runs ({3 * minutes} min), so its metrics and alerts are not current (<reason>); "
        f"next: aws logs filter-log-events --log-group-name ${{{log_id}}} --filter-pattern "
        "'{ $.step = \"fail\" }' --region ${AWS::Region}"
    )


# --- the rules' delivery alarms ---------------------------------------------------------------


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_each_rule_s_failed_deliveries_alarm_and_reach_the_topic_through_a_rule(
    synth, path
) -> None:
    """AWS/Events FailedInvocations by RuleName (eb-monitoring.html: the default bus's
    rules, sent only when not zero, so missing data is no failure), one alarm per rule,
    its own rule's included; their ALARM goes to the topic as the check's alarm's does."""
    result = synth(path)
    config = load_config(path)
    template = result.templates["monitor"]
    topic_id, _ = only(template, "AWS::SNS::Topic")
    rule_names = [
        r["Properties"]["Name"] for r in resources(template, "AWS::Events::Rule").values()
    ]
    suffixes = ["check-failing", "delivery-failing"]
    if config.hyperpod is not None:
        suffixes = ["cluster-state", "node-health", "cluster-event", *suffixes]
    assert sorted(rule_names) == sorted(f"{config.prefix}-{s}" for s in suffixes)
    alarms = {
        a["Properties"]["AlarmName"]: (i, a)
        for i, a in resources(template, "AWS::CloudWatch::Alarm").items()
        if a["Properties"]["AlarmName"].endswith("-undelivered")
    }
    assert sorted(alarms) == sorted(f"{name}-undelivered" for name in rule_names)
    for name in rule_names:
        _, alarm = alarms[f"{name}-undelivered"]
        props = {
            k: v for k, v in alarm["Properties"].items() if k not in ("AlarmDescription", "Tags")
        }
        assert props == {
            "AlarmName": f"{name}-undelivered",
            "Namespace": "AWS/Events",
            "MetricName": "FailedInvocations",
            "Dimensions": [{"Name": "RuleName", "Value": name}],
            "Statistic": "Sum",
            "Period": 300,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "EvaluationPeriods": 1,
            "DatapointsToAlarm": 1,
            "TreatMissingData": "notBreaching",
        }  # no AlarmActions: the rule below sends the state change
    (rule,) = [
        r
        for r in resources(template, "AWS::Events::Rule").values()
        if r["Properties"]["Name"] == f"{config.prefix}-delivery-failing"
    ]
    pattern = rule["Properties"]["EventPattern"]
    assert pattern == {
        "source": ["aws.cloudwatch"],
        "detail-type": ["CloudWatch Alarm State Change"],
        "account": [config.account],
        "resources": [
            *(
                {"Fn::GetAtt": [alarms[f"{config.prefix}-{s}-undelivered"][0], "Arn"]}
                for s in suffixes
            ),
            {"Fn::GetAtt": [queued_alarm(template)[0], "Arn"]},
        ],
        "detail": {"state": {"value": ["ALARM"]}},
    }
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Ref": topic_id} and "RoleArn" not in target
    assert sorted(rule["DependsOn"]) == sorted(
        [only(template, "AWS::SNS::TopicPolicy")[0], only(template, "AWS::SQS::QueuePolicy")[0]]
    )
    transformer = target["InputTransformer"]
    assert transformer["InputPathsMap"] == {
        "alarm": "$.detail.alarmName",
        "reason": "$.detail.state.reason",
    }
    assert joined(transformer["InputTemplate"]) == (
        f"novapod {config.name}: an EventBridge rule could not deliver an alert to the topic "
        "(<alarm>: <reason>), so HyperPod's events and the check's alarm may not reach you; "
        f"what was not delivered waits in the queue {config.prefix}-undelivered-alerts "
        "(docs/operations.md, Alerts, reads and sends it again); "
        f"next: compare the topic's policy (aws sns get-topic-attributes --topic-arn "
        f"${{{topic_id}}} --query Attributes.Policy --region ${{AWS::Region}}) and the "
        "storage key's AlertPublishersThroughSns statement with the stacks, then deploy them "
        f"again (npx cdk deploy -c config=CONFIG {config.prefix}-storage {config.prefix}-monitor)"
    )
    # The topic's policy lets this rule publish as well.
    _, policy = only(template, "AWS::SNS::TopicPolicy")
    (allow,) = [
        s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"
    ]
    assert (
        f"arn:aws:events:{config.region}:{config.account}:rule/{config.prefix}-delivery-failing"
        in allow["Condition"]["ArnEquals"]["aws:SourceArn"]
    )


def queued_alarm(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (i, a)
        for i, a in resources(template, "AWS::CloudWatch::Alarm").items()
        if a["Properties"]["AlarmName"].endswith("-alerts-undelivered-queued")
    ]
    return found


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_every_rule_retries_for_an_hour_then_keeps_the_event_in_a_dead_letter_queue(
    synth, path
) -> None:
    """Each rule's target: RetryPolicy MaximumEventAgeInSeconds 3600 (the default is 24 h,
    eb-rule-dlq.html) and a DeadLetterConfig to one SQS queue, encrypted with the storage
    key, TLS only, that only these rules may SendMessage to (ArnEquals aws:SourceArn),
    kept 14 days and removed with the stack; an alarm is in ALARM while it holds an
    event, and reaches the topic as the delivery alarms do."""
    result = synth(path)
    config = load_config(path)
    template = result.templates["monitor"]
    queue_id, queue = only(template, "AWS::SQS::Queue")
    assert queue["DeletionPolicy"] == "Delete"
    props = queue["Properties"]
    assert props["QueueName"] == f"{config.prefix}-undelivered-alerts"
    assert props["MessageRetentionPeriod"] == 14 * 24 * 3600
    # The storage key, as the topic's.
    assert (
        props["KmsMasterKeyId"]
        == only(template, "AWS::SNS::Topic")[1]["Properties"]["KmsMasterKeyId"]
    )
    assert "KeyArn" in json.dumps(props["KmsMasterKeyId"])
    assert "FifoQueue" not in props  # a DLQ of EventBridge is a standard queue
    rules = resources(template, "AWS::Events::Rule")
    assert rules
    for rule in rules.values():
        (target,) = rule["Properties"]["Targets"]
        assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 3600}
        assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [queue_id, "Arn"]}}
    policy_id, policy = only(template, "AWS::SQS::QueuePolicy")
    assert policy["Properties"]["Queues"] == [{"Ref": queue_id}]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    deny, allow = (
        [s for s in statements if s["Effect"] == "Deny"],
        [s for s in statements if s["Effect"] == "Allow"],
    )
    assert [d["Condition"] for d in deny] == [{"Bool": {"aws:SecureTransport": "false"}}]
    (allow,) = allow
    rule_arns = sorted(
        f"arn:aws:events:{config.region}:{config.account}:rule/{r['Properties']['Name']}"
        for r in rules.values()
    )
    assert rendered(allow, result) | {"Condition": None} == {
        "Sid": "EventBridgeRulesDeadLetters",
        "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": rendered({"Fn::GetAtt": [queue_id, "Arn"]}, result),
        "Condition": None,
    }
    assert sorted(rendered(allow["Condition"], result)["ArnEquals"]["aws:SourceArn"]) == rule_arns
    for rule in rules.values():
        assert policy_id in rule["DependsOn"]
    _, alarm = queued_alarm(template)
    assert {
        k: v for k, v in alarm["Properties"].items() if k not in ("AlarmDescription", "Tags")
    } == {
        "AlarmName": f"{config.prefix}-alerts-undelivered-queued",
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}],
        "Statistic": "Maximum",
        "Period": 300,
        "Threshold": 0,
        "ComparisonOperator": "GreaterThanThreshold",
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "TreatMissingData": "notBreaching",
    }  # no AlarmActions: the delivery-failing rule sends the state change


def test_the_delivery_alarm_sentence_from_aws_s_sample_alarm_event(synth) -> None:
    """The state-change event of CloudWatch's user guide (cloudwatch-and-eventbridge.html,
    Single Metric Alarm), renamed to one of ours: the rule matches it in ALARM only, and
    its sentence names the alarm, hence the rule that failed."""
    from tests.stacks.test_monitor_events import matches, transform

    result = synth(LITE)
    template = result.templates["monitor"]
    (rule,) = [
        r
        for r in resources(template, "AWS::Events::Rule").values()
        if r["Properties"]["Name"] == "novapod-nova-lite-delivery-failing"
    ]
    arn = (
        "arn:aws:cloudwatch:us-east-1:111122223333:alarm:novapod-nova-lite-node-health-undelivered"
    )
    reason = (
        "Threshold Crossed: 1 datapoint [2.0 (02/12/26 10:00:00)] was greater than or equal "
        "to the threshold (1.0)."
    )
    event = {
        "version": "0",
        "id": "c4c1c1c9-6542-e61b-6ef0-8c4d36933a92",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "111122223333",
        "time": "2026-12-02T10:05:00Z",
        "region": "us-east-1",
        "resources": [arn],
        "detail": {
            "alarmName": "novapod-nova-lite-node-health-undelivered",
            "state": {
                "value": "ALARM",
                "reason": reason,
                "timestamp": "2026-12-02T10:05:00.000+0000",
            },
            "previousState": {
                "value": "OK",
                "reason": "",
                "timestamp": "2026-12-02T09:00:00.000+0000",
            },
        },
    }
    by_id = {
        i: f"arn:aws:cloudwatch:us-east-1:111122223333:alarm:{a['Properties']['AlarmName']}"
        for i, a in resources(template, "AWS::CloudWatch::Alarm").items()
    }
    pattern = {
        **rule["Properties"]["EventPattern"],
        "resources": [
            by_id[r["Fn::GetAtt"][0]] for r in rule["Properties"]["EventPattern"]["resources"]
        ],
    }
    assert matches(pattern, event)
    for value in ("OK", "INSUFFICIENT_DATA"):  # the states an alarm can leave ALARM for
        other = {
            **event,
            "detail": {**event["detail"], "state": {**event["detail"]["state"], "value": value}},
        }
        assert not matches(pattern, other), value
    # Another alarm of the account in ALARM (the check's own has a rule of its own).
    check_arn = "arn:aws:cloudwatch:us-east-1:111122223333:alarm:novapod-nova-lite-check-failing"
    assert check_arn not in pattern["resources"]
    other_alarm = {**event, "resources": [check_arn]}
    assert not matches(pattern, other_alarm)
    queued_arn = "arn:aws:cloudwatch:us-east-1:111122223333:alarm:novapod-nova-lite-alerts-undelivered-queued"
    assert matches(pattern, {**event, "resources": [queued_arn]})  # the dead letters' alarm
    (target,) = rule["Properties"]["Targets"]
    transformer = dict(target["InputTransformer"])
    transformer["InputTemplate"] = joined(transformer["InputTemplate"])
    sentence = transform(transformer, event)
    assert sentence.startswith(
        "novapod nova-lite: an EventBridge rule could not deliver an alert to the topic "
        f"(novapod-nova-lite-node-health-undelivered: {reason}), so "
    )


# --- the dashboard --------------------------------------------------------------------------


def dashboard_body(result: Synthesized) -> tuple[str, dict[str, Any]]:
    _, dashboard = only(result.templates["monitor"], "AWS::CloudWatch::Dashboard")
    props = dashboard["Properties"]
    return props["DashboardName"], json.loads(joined(props["DashboardBody"]))


@pytest.mark.parametrize("path", MONITORED, ids=lambda p: Path(p).stem)
def test_the_dashboard_shows_each_plan_and_group_and_the_check(synth, path) -> None:
    result = synth(path)
    config = load_config(path)
    name, body = dashboard_body(result)
    assert name == config.prefix
    assert body["start"] == "-P7D"
    widgets = body["widgets"]
    with_jobs = watched_jobs(config) is not None
    if with_jobs:
        *widgets, job_events = widgets
        assert job_events["type"] == "log"
        assert job_events["properties"]["title"] == (
            "the last job events (runs started, succeeded, failed)"
        )
        log_id, _ = only(result.templates["monitor"], "AWS::Logs::LogGroup")
        assert job_events["properties"]["query"] == (
            f"SOURCE '${{{log_id}}}' | fields @timestamp, job, run, event, phase, at\n"
            '| filter step = "job-event"\n| sort @timestamp desc\n| limit 20'
        )
    *widgets, alarm_status, undelivered = widgets
    template = result.templates["monitor"]
    alarm_ids = {
        a["Properties"]["AlarmName"]: i
        for i, a in resources(template, "AWS::CloudWatch::Alarm").items()
    }
    rule_names = [
        r["Properties"]["Name"] for r in resources(template, "AWS::Events::Rule").values()
    ]
    assert alarm_status["type"] == "alarm"
    assert alarm_status["properties"]["alarms"] == [
        f"${{{alarm_ids[f'{config.prefix}-check-failing']}.Arn}}",
        *(f"${{{alarm_ids[f'{name}-undelivered']}.Arn}}" for name in rule_names),
        f"${{{alarm_ids[f'{config.prefix}-alerts-undelivered-queued']}.Arn}}",
    ]
    assert [m[:4] for m in undelivered["properties"]["metrics"]] == [
        ["AWS/Events", "FailedInvocations", "RuleName", name] for name in rule_names
    ]
    assert {m[4]["stat"] for m in undelivered["properties"]["metrics"]} == {"Sum"}
    text, *graphs, runs, alerts = widgets
    assert not [w for w in graphs if w["type"] != "metric"]
    assert text["type"] == "text" and f"# novapod {config.name}" in text["properties"]["markdown"]
    plans = [spec.name for spec in config.capacity.training_plans]
    groups = [g.name for g in config.hyperpod.restricted_instance_groups] + [
        g.name for g in config.hyperpod.instance_groups
    ]
    assert [g["properties"]["title"] for g in graphs] == [
        f"plan {p}: reserved vs in use" for p in plans
    ] + [f"group {g}: nodes" for g in groups]
    env = config.name
    for graph, plan in zip(graphs, plans, strict=False):
        assert [m[:6] for m in graph["properties"]["metrics"]] == [
            ["novapod", metric, "Environment", env, "Plan", plan]
            for metric in (
                "TotalInstances",
                "InUseInstances",
                "IdleInstances",
                "UnhealthyInstances",
            )
        ]
        assert {m[6]["stat"] for m in graph["properties"]["metrics"]} == {"Maximum"}
    for graph, group in zip(graphs[len(plans) :], groups, strict=True):
        assert [m[:6] for m in graph["properties"]["metrics"]] == [
            ["novapod", metric, "Environment", env, "InstanceGroup", group]
            for metric in ("DesiredNodes", "CurrentNodes", "UnhealthyNodes")
        ]
    function_id, _ = only(result.templates["monitor"], "AWS::Lambda::Function")
    assert [m[:4] for m in runs["properties"]["metrics"]] == [
        ["AWS/Lambda", "Invocations", "FunctionName", f"${{{function_id}}}"],
        ["AWS/Lambda", "Errors", "FunctionName", f"${{{function_id}}}"],
    ]
    log_id, _ = only(result.templates["monitor"], "AWS::Logs::LogGroup")
    assert alerts["type"] == "log"
    query = alerts["properties"]["query"]
    assert query.startswith(f"SOURCE '${{{log_id}}}' | fields @timestamp, message")
    assert '| filter step = "alert"' in query


def test_the_dashboard_draws_the_metrics_the_check_puts() -> None:
    from novapod.constructs.monitor import dashboard
    from novapod.constructs.monitor.handler import decisions

    drawn = {m for m, _ in dashboard.PLAN_METRICS} | {m for m, _ in dashboard.GROUP_METRICS}
    put = {m for m, _ in decisions.PLAN_METRICS} | {"IdleInstances"} | set(decisions.GROUP_METRICS)
    # All but AvailableInstances, which IdleInstances draws while it costs (Active).
    assert drawn == put - {"AvailableInstances"}


def test_in_a_closed_network_the_check_runs_outside_the_vpc_and_says_why() -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_sns as sns

    from novapod.constructs.monitor.construct import ScheduledCheck
    from novapod.stacks.monitor import CLOSED_NETWORK_REASON

    app = App()
    stack = Stack(app, "S", env={"account": "111122223333", "region": "us-east-1"})
    key = kms.Key.from_key_arn(stack, "K", "arn:aws:kms:us-east-1:111122223333:key/k")
    topic = sns.Topic.from_topic_arn(stack, "T", "arn:aws:sns:us-east-1:111122223333:t")
    ScheduledCheck(
        stack,
        "Check",
        environment="e",
        plans=[],
        cluster_name=None,
        every_minutes=5,
        idle_alert_minutes=60,
        ending_alert_days=3,
        topic=topic,
        placement=None,
        log_retention_days=365,
        key=key,
        alarm_name="novapod-e-check-failing",
        outside_vpc_reason=CLOSED_NETWORK_REASON,
    )
    template = app.synth().get_stack_by_name("S").template
    _, function = only(template, "AWS::Lambda::Function")
    assert "VpcConfig" not in function["Properties"]
    assert not resources(template, "AWS::EC2::SecurityGroup")
    skipped = {s["id"]: s["comment"] for s in function["Metadata"]["checkov"]["skip"]}
    assert skipped["CKV_AWS_117"] == CLOSED_NETWORK_REASON  # and cdk-nag's LambdaInsideVPC
    statements = [
        s
        for policy in resources(template, "AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert not [
        s for s in statements if s.get("Sid") in ("AttachToVpc", "DescribeNetworkInterfaces")
    ]
    assert not [
        s
        for s in statements
        if s.get("Sid") in ("DescribeTrainingPlans", "DescribeHyperPodCluster")
    ]


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: Path(p).stem)
def test_the_storage_key_lets_the_alert_publishers_use_it_through_sns(synth, path) -> None:
    """The SNS developer guide's key-policy statement for services publishing to an
    encrypted topic (alerts.py says why the rules publish as EventBridge): EventBridge,
    whose rules deliver HyperPod's events and the check's alarm; CloudWatch never
    publishes to the topic (the alarm has no SNS action)."""
    config = load_config(path)
    result = synth(path)
    key = result.templates["storage"]["Resources"]["EncryptionKey"]
    statements = {s.get("Sid"): s for s in key["Properties"]["KeyPolicy"]["Statement"]}
    found = statements.get("AlertPublishersThroughSns")
    if not config.has_monitor:
        assert found is None
        return
    services = ["events.amazonaws.com"]
    assert found is not None
    principal = found["Principal"]["Service"]
    assert sorted(principal if isinstance(principal, list) else [principal]) == services
    assert found["Effect"] == "Allow"
    assert sorted(found["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert found["Resource"] == "*"  # in a key policy: this key
    assert rendered(found["Condition"], result) == {
        "StringEquals": {
            "kms:ViaService": f"sns.{config.region}.amazonaws.com",
            "aws:SourceAccount": config.account,
        }
    }
    # The same, through SQS, for the dead-letter queue of the rules (encrypted with it).
    queue = statements.get("AlertDeadLettersThroughSqs")
    assert queue is not None
    assert {k: v for k, v in queue.items() if k not in ("Sid", "Condition")} == {
        k: v for k, v in found.items() if k not in ("Sid", "Condition")
    }
    assert rendered(queue["Condition"], result) == {
        "StringEquals": {
            "kms:ViaService": f"sqs.{config.region}.amazonaws.com",
            "aws:SourceAccount": config.account,
        }
    }
