"""Lambda entry point of the environment's scheduled check (EventBridge Scheduler invokes
`check` every few minutes with the settings the construct wrote as the schedule's input).

One run reads each plan (SageMaker DescribeTrainingPlan; ResourceNotFound: not bought,
the error the API reference documents), the HyperPod cluster (DescribeCluster;
ResourceNotFound: not deployed) and its nodes (ListClusterNodes, every page), then puts
the metrics of what it read (CloudWatch PutMetricData, in the settings' namespace, at
most 1000 a request). A read that fails leaves its plan or the cluster out of this run
and the others are still sampled; the run then fails (one JSON line says which call
failed and why), so the function's Errors metric counts it, and the next run, minutes
later, samples again. Nothing here changes the environment.

Every AWS call has connect and read timeouts and botocore's standard retries
(`worst_case_seconds` bounds a run; the construct's timeout is above it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...handler_core import aws, errors
from ...handler_core.values import log as _log
from ...handler_core.values import utc_now as _now
from . import decisions
from .decisions import ClusterSample, PlanSample, Samples, Settings

CONNECT_TIMEOUT_SECONDS: float = 3
READ_TIMEOUT_SECONDS: float = 5
MAX_ATTEMPTS = 3
MAX_BACKOFF_SECONDS = 20  # botocore standard mode: pause before retry n <= min(2**n, 20) s
NOT_FOUND = "ResourceNotFound"


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
    summary = {
        "plans": {p.settings.name: p.status for p in samples.plans if p.error is None},
        "metrics": len(data),
        "failures": failures,
    }
    if failures:
        _log("fail", "; ".join(failures), environment=settings.environment, **summary)
        raise CheckError("; ".join(failures))
    _log(
        "sampled",
        f"{len(data)} metrics of {len(samples.plans)} plans"
        + (f" and cluster {settings.cluster}" if settings.cluster else ""),
        environment=settings.environment,
        **summary,
    )
    return summary


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
