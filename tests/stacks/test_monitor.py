"""The monitor stack (novapod/stacks/monitor.py) of the shipped configs: built with plans
or a cluster, nothing depends on it; the schedule, the check's function and its role,
statement by statement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from novapod.config import load_config, parse_config
from novapod.config.stacks import stack_kinds
from novapod.constructs.monitor.construct import rate
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
                "condition": s.get("Condition"),
            }
    return out


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: Path(p).stem)
def test_the_monitor_is_built_with_plans_or_a_cluster(synth, path) -> None:
    config = load_config(path)
    watched = bool(config.capacity.training_plans) or config.hyperpod is not None
    assert config.has_monitor == watched
    assert ("monitor" in synth(path).templates) == watched


def test_monitoring_enabled_false_removes_the_monitor_only() -> None:
    data = load_yaml(LITE.read_text(encoding="utf-8")) | {"monitoring": {"enabled": False}}
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
    assert not result.templates["monitor"].get("Outputs")


def test_the_schedule_runs_the_check_every_few_minutes(synth) -> None:
    result = synth(LITE)
    template = result.templates["monitor"]
    function_id, _ = only(template, "AWS::Lambda::Function")
    _, schedule = only(template, "AWS::Scheduler::Schedule")
    props = schedule["Properties"]
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
    assert props["Timeout"] == 300
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
def test_the_check_s_role_reads_the_plans_and_the_cluster_and_puts_novapod_metrics(
    synth, path
) -> None:
    result = synth(path)
    config = load_config(path)
    template = result.templates["monitor"]
    _, function = only(template, "AWS::Lambda::Function")
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    log_id, _ = only(template, "AWS::Logs::LogGroup")
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
            "condition": None,
        }
    assert found == expected
