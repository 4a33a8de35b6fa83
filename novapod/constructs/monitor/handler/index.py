"""Lambda entry point of the environment's scheduled check (EventBridge Scheduler invokes
`check` every few minutes with the settings the construct wrote as the schedule's input).

One run:

1. reads each plan (SageMaker DescribeTrainingPlan; ResourceNotFound: not bought, the
   error the API reference documents), the HyperPod cluster (DescribeCluster;
   ResourceNotFound: not deployed) and its nodes (ListClusterNodes, every page);
2. with jobs on the cluster, their runs: EKS DescribeCluster of the EKS cluster (its
   private endpoint and CA), then the PyTorchJobs of the jobs' namespace through the
   Kubernetes API (handler_core/kubernetes.py: a token presigned locally with the
   function's credentials, which the cluster maps through the check's own access entry
   to a Kubernetes group whose Role lists PyTorchJobs in that namespace only);
3. puts the metrics of what it read (CloudWatch PutMetricData, in the settings'
   namespace, at most 1000 a request);
4. reads the state the last run left (DynamoDB GetItem, strongly consistent: the item
   of this environment in the monitor stack's table), decides the alerts it owes and
   the job events it saw (`decisions.decide`), claims them by writing the new state with
   a conditional PutItem on the item's `Sequence`, and only then logs each job event
   (one JSON line, step "job-event") and publishes each alert (SNS Publish, one
   sentence). A run that finds the item moved by another sends nothing and leaves it
   be: the other run owns what both saw, and the next run takes it from there.

So an alert goes out at most once, however many runs see it, one after another or at
the same time (the claim is DynamoDB's conditional write, never a read). One whose
Publish failed is released by a second conditional write, so the next run owes it
again; one lost between its claim and its publish (the function timed out or crashed)
or whose release failed is not re-sent, and that run counts in the function's Errors
metric, which the check's alarm watches. Without the state (its read failed) a run
sends nothing: it cannot know what was sent. A read or call that fails leaves its part
out and the others are still done; the run then fails (one JSON line names each failed
call), so the function's Errors metric counts it, and the next run, minutes later,
starts again: a Kubernetes API that does not answer is such a failure, never a failed
run. Nothing here changes the environment but the metrics, the alerts and the state
item.

Every AWS call has connect and read timeouts and botocore's standard retries
(`worst_case_seconds` bounds a run; the construct's timeout is above it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ...handler_core import aws, errors, kubernetes, values
from ...handler_core.values import log as _log
from ...handler_core.values import utc_now as _now
from . import decisions
from .decisions import ClusterSample, JobSettings, JobsSample, PlanSample, Samples, Settings, State

CONNECT_TIMEOUT_SECONDS: float = 3
READ_TIMEOUT_SECONDS: float = 5
MAX_ATTEMPTS = 3
MAX_BACKOFF_SECONDS = 20  # botocore standard mode: pause before retry n <= min(2**n, 20) s
NOT_FOUND = "ResourceNotFound"
CONDITION_FAILED = "ConditionalCheckFailedException"
EKS_NOT_FOUND = "ResourceNotFoundException"
# Each GET of the Kubernetes API, no retry (the next run reads again).
KUBERNETES_TIMEOUT_SECONDS: float = 5


class CheckError(Exception):
    """A run that could not read or record everything; its sentence names each call."""


def _client(service: str) -> Any:
    return aws.client(
        service, aws.Settings(MAX_ATTEMPTS, CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS)
    )


def worst_case_seconds(calls: int, kubernetes_gets: int = 0) -> float:
    """The longest a run of `calls` AWS calls and `kubernetes_gets` GETs of the Kubernetes
    API can take: each AWS call retried to its limit, each GET once (its timeout bounds
    the connect and the read)."""
    pauses = sum(min(2.0**n, MAX_BACKOFF_SECONDS) for n in range(1, MAX_ATTEMPTS))
    aws_calls = calls * (MAX_ATTEMPTS * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + pauses)
    return aws_calls + kubernetes_gets * 2 * KUBERNETES_TIMEOUT_SECONDS


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
        **(
            {"jobs": samples.jobs.error or f"{len(samples.jobs.pytorchjobs)} PyTorchJobs"}
            if samples.jobs is not None
            else {}
        ),
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
    """Claim the alerts this run owes and the job events it saw (the state's conditional
    write), then log the events and publish the alerts; the keys of those sent."""
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
    if previous.sequence and decision.state.text() == previous.text():
        return []  # nothing new: no alert owed, no event seen
    claimed = _write_state(dynamodb, settings, decision.state, now, failures)
    if claimed is None:
        return []  # another run wrote first (it owns what both saw), or the write failed
    for event in decision.events:
        _log("job-event", event.message, environment=settings.environment, **event.fields())
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
    if unsent:
        # Released, so the next run owes them again.
        released = decisions.without(decision.state, unsent, sequence=claimed)
        _write_state(dynamodb, settings, released, now, failures)
    return sent


def _write_state(
    dynamodb: Any, settings: Settings, state: State, now: datetime, failures: list[str]
) -> int | None:
    """The new state, if the item is still the one this run read (its Sequence): the
    sequence written, or None (moved by another run, or the write failed)."""
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
                "another run wrote the check's state first; it sends what both saw, and "
                "the next run takes it from there",
                environment=settings.environment,
            )
            return None
        failures.append(errors.failed("DynamoDB PutItem of the check's state", exc))
        return None
    return state.sequence + 1


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
    jobs = _sample_jobs(settings.jobs, failures) if settings.jobs is not None else None
    return Samples(tuple(plans), cluster, jobs)


def _sample_jobs(jobs: JobSettings, failures: list[str]) -> JobsSample:
    """The PyTorchJobs of the jobs' namespace; what could not be read is a failure of
    the run (never a run's failure)."""
    name = jobs.eks_cluster
    try:
        described = _client("eks").describe_cluster(name=name)["cluster"]
    except aws.ERRORS as exc:
        if errors.error_code(exc) == EKS_NOT_FOUND:
            # Not deployed (the error EKS DescribeCluster documents): no run to read, and
            # what was known of the runs stays.
            return JobsSample(error=f"EKS cluster {name} is not deployed")
        failures.append(errors.failed(f"EKS DescribeCluster of {name}", exc))
        return JobsSample(error=failures[-1])
    what = f"Kubernetes API of EKS cluster {name}: list PyTorchJobs in {jobs.namespace}"
    try:
        cluster = kubernetes.connect(described, _client("sts"))
        items = kubernetes.list_items(
            cluster,
            kubernetes.PYTORCHJOBS.format(namespace=jobs.namespace),
            timeout=KUBERNETES_TIMEOUT_SECONDS,
        )
    except kubernetes.Unreachable as exc:
        failures.append(f"{what} failed (no answer: {exc})")
        return JobsSample(error=failures[-1])
    except kubernetes.Refused as exc:
        failures.append(f"{what} failed (refused: {exc})")
        return JobsSample(error=failures[-1])
    except aws.ERRORS as exc:  # no credentials to sign the token with
        failures.append(errors.failed(what, exc))
        return JobsSample(error=failures[-1])
    return JobsSample(tuple(items))


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
