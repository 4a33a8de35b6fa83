"""The environment's scheduled check against the fake control plane: the example
single-rig-purchase.yaml deployed there, the check's settings and role read from its
synthesized monitor stack (the schedule's input, the function role's statements)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.conftest import ROOT, Synthesized, joined, producer_value, resources
from tests.fakes import iam
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.fakes.hyperpod import restricted_group
from tests.handlers.test_fake_iam import EXAMPLE_ACCOUNT

LITE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
PLAN = "novapod-nova-lite-lite-sft-50d13e0b"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{EXAMPLE_ACCOUNT}:training-plan/{PLAN}"
CLUSTER = "novapod-nova-lite"
GROUP = "nova-lite"
NOW = datetime(2027, 7, 12, tzinfo=UTC)


def function_id(template: dict[str, Any]) -> str:
    (found,) = resources(template, "AWS::Lambda::Function")
    return found


def schedule(template: dict[str, Any]) -> dict[str, Any]:
    (found,) = resources(template, "AWS::Scheduler::Schedule").values()
    return found


TOPIC = "novapod-nova-lite-alerts"
STATE_TABLE = "novapod-nova-lite-monitor-state"
# The storage stack's key (its logical ID is pinned: EncryptionKey), as the fake has it.
KEY_ARN = f"arn:aws:kms:us-east-1:{EXAMPLE_ACCOUNT}:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
# The tag the environment puts on every resource, the HyperPod cluster included.
CLUSTER_TAGS = {"novapod:environment": "nova-lite"}


def names(result: Synthesized) -> dict[str, str]:
    """What CloudFormation names the monitor stack's topic and state table, as the fake
    has them: logical ID -> the topic's ARN (its Ref) or the table's name (its Ref)."""
    template = result.templates["monitor"]
    (topic,) = resources(template, "AWS::SNS::Topic")
    (table,) = resources(template, "AWS::DynamoDB::Table")
    arn = f"arn:aws:sns:us-east-1:{EXAMPLE_ACCOUNT}:{TOPIC}"
    return {topic: arn, table: STATE_TABLE}


def settings(result: Synthesized) -> dict[str, Any]:
    """The schedule's input, as the function receives it: each `${Ref}` the template
    leaves to CloudFormation replaced by what it names in the fake."""
    text = joined(schedule(result.templates["monitor"])["Properties"]["Target"]["Input"])
    for logical_id, value in names(result).items():
        text = text.replace("${" + logical_id + "}", value)
    text = text.replace("${AWS::Region}", "us-east-1")
    assert "${" not in text, text
    parsed: dict[str, Any] = json.loads(text)
    return parsed


def principal(result: Synthesized) -> iam.Principal:
    """The check function's role, its statements' references resolved to the fake's
    resources (the topic, the state table; the others to ARNs of their own)."""
    template = result.templates["monitor"]
    role = template["Resources"][function_id(template)]["Properties"]["Role"]["Fn::GetAtt"][0]
    named = names(result)
    table_arn = f"arn:aws:dynamodb:us-east-1:{EXAMPLE_ACCOUNT}:table/{STATE_TABLE}"

    def walk(value: Any) -> Any:
        if isinstance(value, dict) and "Fn::GetStackOutput" in value:
            return walk(producer_value(result, value))
        if isinstance(value, dict) and "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            if named.get(logical_id) == STATE_TABLE and attribute == "Arn":
                return table_arn
            if (logical_id, attribute) == ("EncryptionKey", "Arn"):
                return KEY_ARN
            return f"arn:aws:fake:us-east-1:{EXAMPLE_ACCOUNT}:{logical_id}/{attribute}"
        if isinstance(value, dict) and "Ref" in value and not value["Ref"].startswith("AWS::"):
            return named.get(value["Ref"], f"arn:aws:fake:::{value['Ref']}")
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    statements = [
        statement
        for policy in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    resolved = iam.resolve(walk(statements), account=EXAMPLE_ACCOUNT, region="us-east-1")
    return iam.Principal("MonitorCheck", tuple(iam.parse_statement(s) for s in resolved))


@dataclass
class Deployed:
    """The example in the fake: its plan Active since a day, 4 instances, and its
    cluster (tagged as the environment tags it) with a restricted group of 4 nodes; the
    monitor's topic (encrypted with the storage key) and state table."""

    plane: FakeControlPlane
    cluster_arn: str

    def published(self) -> list[str]:
        return [m.message for m in self.plane.monitoring.published]

    def state(self) -> dict[str, Any] | None:
        return self.plane.dynamodb.item(STATE_TABLE, {"Environment": "nova-lite"})

    def plan_counts(self, *, available: int, in_use: int, unhealthy: int = 0) -> None:
        self.plane.set_plan_counts(PLAN, available=available, in_use=in_use, unhealthy=unhealthy)


def deploy(plane: FakeControlPlane, *, plan_status: str = "Active") -> Deployed:
    plane.reset()
    plane.account = plane.hyperpod.account = EXAMPLE_ACCOUNT
    plane.monitoring.add_topic(TOPIC, key_arn=KEY_ARN)
    plane.dynamodb.create_table(STATE_TABLE, partition_key="Environment")
    offering = plane.add_offering(
        "tpo-lite",
        zones=["us-east-1a"],
        start=NOW - timedelta(days=1),
        fee="55000.00",
        duration_hours=144,
    )
    plane.add_plan(PLAN, offering, statuses=[plan_status])
    plane.set_plan_counts(PLAN, available=0, in_use=4)
    group = restricted_group(GROUP, current=4, target=4, plan_arn=PLAN_ARN, account=EXAMPLE_ACCOUNT)
    arn = plane.hyperpod.add_cluster(CLUSTER, restricted_groups=[group], tags=CLUSTER_TAGS)
    plane.hyperpod.add_nodes(CLUSTER, GROUP, 4)
    return Deployed(plane, arn)
