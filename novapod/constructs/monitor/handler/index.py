"""Lambda entry point of the environment's scheduled check (EventBridge Scheduler invokes
`check` every few minutes with the settings the construct wrote as the schedule's input).

One run:

1. reads each plan (SageMaker DescribeTrainingPlan; ResourceNotFound: not bought, the
   error the API reference documents), the HyperPod cluster (DescribeCluster;
   ResourceNotFound: not deployed) and its nodes (ListClusterNodes, every page);
2. puts the metrics of what it read (CloudWatch PutMetricData, in the settings'
   namespace, at most 1000 a request);
3. reads the state the last run left (DynamoDB GetItem, strongly consistent: the item
   of this environment in the monitor stack's table), decides the alerts it owes
   (`decisions.decide`), publishes each (SNS Publish, one sentence) and writes the new
   state with a conditional PutItem on the item's `Sequence` (a run that finds the item
   moved by another leaves it be: the next run takes it from there).

An alert is recorded as sent only once its Publish answered: one that failed is owed
again by the next run, one that was sent is never sent again while its condition
holds. Without the state (its read failed) a run sends nothing: it cannot know what was
sent. A read or call that fails leaves its part out and the others are still done; the
run then fails (one JSON line names each failed call), so the function's Errors metric
counts it, and the next run, minutes later, starts again. Nothing here changes the
environment but the metrics, the alerts and the state item.

Every AWS call has connect and read timeouts and botocore's standard retries
(`worst_case_seconds` bounds a run; the construct's timeout is above it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ...handler_core import aws, errors, values
from ...handler_core.values import log as _log
from ...handler_core.values import utc_now as _now
from . import decisions
from .decisions import ClusterSample, PlanSample, Samples, Settings, State

CONNECT_TIMEOUT_SECONDS: float = 3
READ_TIMEOUT_SECONDS: float = 5
MAX_ATTEMPTS = 3
MAX_BACKOFF_SECONDS = 20  # botocore standard mode: pause before retry n <= min(2**n, 20) s
NOT_FOUND = "ResourceNotFound"
CONDITION_FAILED = "ConditionalCheckFailedException"


class CheckError(Exception):
    """A run that could not read or record everything; its sentence names each call."""


def _client(service: str) -> Any:
    return aws.client(
        service, aws.Settings(MAX_ATTEMPTS, CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS)
    )


def worst_case_seconds(calls: int) -> float:
    """The longest a run of `calls` AWS calls can take: each retried to its limit."""
    pauses = sum(min(2.0**n, MAX_BACKOFF_SECONDS) for n in range(1, MAX_ATTEMPTS))
    return calls * (MAX_ATTEMPTS * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + pauses)


def check(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    settings = decisions.parse_settings(event)
    now = _now()
    failures: list[str] = []
    samples = _sample(settings, _client("sagemaker"), failures)
    data = decisions.metric_data(samples, settings, now)
    cloudwatch = _client("cloudwatch")
    for batch in decisions.batches(data):
        try:
            cloudwatch.put_metric_data(Namespace=settings.namespace, MetricData=batch)
        except aws.ERRORS as exc:
            failures.append(errors.failed("CloudWatch PutMetricData", exc))
    sent = _alert(samples, settings, now, failures)
    summary = {
        "plans": {p.settings.name: p.status for p in samples.plans if p.error is None},
        "metrics": len(data),
        "alerts": sent,
        "failures": failures,
    }
    if failures:
        _log("fail", "; ".join(failures), environment=settings.environment, **summary)
        raise CheckError("; ".join(failures))
    _log(
        "sampled",
        f"{len(data)} metrics of {len(samples.plans)} plans"
        + (f" and cluster {settings.cluster}" if settings.cluster else "")
        + f", {len(sent)} alerts",
        environment=settings.environment,
        **summary,
    )
    return summary


def _alert(samples: Samples, settings: Settings, now: datetime, failures: list[str]) -> list[str]:
    """Publish the alerts this run owes and record them; the keys of those sent."""
    dynamodb = _client("dynamodb")
    key = {decisions.STATE_KEY: {"S": settings.environment}}
    try:
        item = dynamodb.get_item(TableName=settings.state_table, Key=key, ConsistentRead=True)
    except aws.ERRORS as exc:
        failures.append(errors.failed("DynamoDB GetItem of the check's state", exc))
        return []
    found = item.get("Item") or {}
    previous = decisions.read_state(
        (found.get("State") or {}).get("S"), int((found.get("Sequence") or {}).get("N") or 0)
    )
    decision = decisions.decide(samples, previous, now, settings)
    sns = _client("sns")
    sent, unsent = [], []
    for alert in decision.alerts:
        try:
            sns.publish(TopicArn=settings.topic_arn, Subject=alert.subject, Message=alert.message)
        except aws.ERRORS as exc:
            failures.append(errors.failed(f"SNS Publish of {alert.key}", exc))
            unsent.append(alert.key)
            continue
        sent.append(alert.key)
        _log("alert", alert.message, key=alert.key, environment=settings.environment)
    state = decisions.without(decision.state, unsent)
    if previous.sequence and state.text() == previous.text():
        return sent  # nothing new to record
    _write_state(dynamodb, settings, state, now, failures)
    return sent


def _write_state(
    dynamodb: Any, settings: Settings, state: State, now: datetime, failures: list[str]
) -> None:
    """The new state, if the item is still the one this run read (its Sequence)."""
    if state.sequence:
        condition: dict[str, Any] = {
            "ConditionExpression": "#sequence = :sequence",
            "ExpressionAttributeNames": {"#sequence": "Sequence"},
            "ExpressionAttributeValues": {":sequence": {"N": str(state.sequence)}},
        }
    else:
        condition = {"ConditionExpression": f"attribute_not_exists({decisions.STATE_KEY})"}
    item = {
        decisions.STATE_KEY: {"S": settings.environment},
        "Sequence": {"N": str(state.sequence + 1)},
        "State": {"S": state.text()},
        "UpdatedAt": {"S": values.iso(now)},
    }
    try:
        dynamodb.put_item(TableName=settings.state_table, Item=item, **condition)
    except aws.ERRORS as exc:
        if errors.error_code(exc) == CONDITION_FAILED:
            _log(
                "state-moved",
                "another run wrote the check's state first; the next run takes it from there",
                environment=settings.environment,
            )
            return
        failures.append(errors.failed("DynamoDB PutItem of the check's state", exc))


def _sample(settings: Settings, sagemaker: Any, failures: list[str]) -> Samples:
    plans = []
    for plan in settings.plans:
        try:
            described = _described(sagemaker.describe_training_plan, plan.plan_name)
            plans.append(PlanSample(plan, described))
        except aws.ERRORS as exc:
            failure = errors.failed(f"SageMaker DescribeTrainingPlan of {plan.plan_name}", exc)
            failures.append(failure)
            plans.append(PlanSample(plan, error=failure))
    cluster = None
    if settings.cluster is not None:
        cluster = _sample_cluster(settings.cluster, sagemaker, failures)
    return Samples(tuple(plans), cluster)


def _sample_cluster(name: str, sagemaker: Any, failures: list[str]) -> ClusterSample:
    action = f"SageMaker DescribeCluster of {name}"
    try:
        described = _described(sagemaker.describe_cluster, name, key="ClusterName")
        nodes: tuple[Mapping[str, Any], ...] = ()
        if described is not None:
            action = f"SageMaker ListClusterNodes of {name}"
            pages = sagemaker.get_paginator("list_cluster_nodes")
            nodes = tuple(
                node
                for page in pages.paginate(ClusterName=name)
                for node in page.get("ClusterNodeSummaries", [])
            )
    except aws.ERRORS as exc:
        failures.append(errors.failed(action, exc))
        return ClusterSample(name, error=failures[-1])
    return ClusterSample(name, described, nodes)


def _described(call: Any, name: str, *, key: str = "TrainingPlanName") -> dict[str, Any] | None:
    """The answer, or None when SageMaker does not know the name."""
    try:
        return dict(call(**{key: name}))
    except aws.ERRORS as exc:
        if errors.error_code(exc) == NOT_FOUND:
            return None
        raise
