"""Lambda entry points of the NovaEnvironment custom resource (CDK `Provider` framework).

A deploy-time check that the HyperPod cluster can take a Nova job. on_event only
validates the properties and starts the wait (so a repeated Create or Update is
harmless); every is_complete reads, in order: SageMaker DescribeCluster until the
cluster is InService; EKS DescribeCluster for the API endpoint and CA; the Kubernetes
API for the namespace and each required CRD; the restricted groups' node counts and
training plans. It fails with one sentence naming what is missing, and keeps waiting
(returns not complete, the Provider polls again) while the cluster is busy or a read
fails transiently, until TimeoutSeconds. Delete has nothing to undo: the check creates
nothing. Every step is one JSON line in the function's log group.

Each invocation is bounded: every AWS call has connect/read timeouts and botocore's
standard retries (`MAX_ATTEMPTS`), every Kubernetes GET a timeout, nothing sleeps
(see `worst_case_seconds`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...handler_core import aws, errors, values

# The JSON log line and the clock (tests replace it).
from ...handler_core.values import log as _log
from ...handler_core.values import utc_now as _now
from . import decisions, kubernetes
from .decisions import EnvironmentProperties, GroupReport, NovaEnvironmentError

CONNECT_TIMEOUT_SECONDS: float = 5
READ_TIMEOUT_SECONDS: float = 10
KUBERNETES_TIMEOUT_SECONDS: float = 10
MAX_ATTEMPTS = 3
MAX_BACKOFF_SECONDS = 20  # botocore standard mode: pause before retry n <= min(2**n, 20) s
# Top-level key of on_event's result; the Provider passes it to every is_complete.
WAIT_STARTED_AT = "WaitStartedAt"


class _Wait(Exception):  # noqa: N818  (control flow: not complete yet, say why)
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _client(service: str) -> Any:
    return aws.client(
        service, aws.Settings(MAX_ATTEMPTS, CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS)
    )


def _error_detail(exc: BaseException) -> str:
    """The error, its message on one line (it sits inside the reason for waiting)."""
    return errors.error_detail(exc, tidy=decisions.one_line)


def worst_case_seconds(groups: int, crds: int) -> float:
    """The longest one is_complete can take: every call retried to its limit."""
    pauses = sum(min(2.0**n, MAX_BACKOFF_SECONDS) for n in range(1, MAX_ATTEMPTS))
    per_call = MAX_ATTEMPTS * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + pauses
    aws_calls = 2 + groups  # SageMaker and EKS DescribeCluster, a plan per group
    kubernetes_calls = 1 + crds  # the namespace, each CRD
    return aws_calls * per_call + kubernetes_calls * KUBERNETES_TIMEOUT_SECONDS


# --- on_event ---------------------------------------------------------------------------


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request_type = event["RequestType"]
    if request_type == "Delete":
        physical_id = event.get("PhysicalResourceId", "")
        _log("delete", f"nothing to delete for {physical_id}: the check creates nothing")
        return {"PhysicalResourceId": physical_id}
    props = decisions.parse_properties(event["ResourceProperties"])
    _log(
        "start",
        f"{request_type}: checking the Nova environment on HyperPod cluster "
        f"{props.cluster_name} (EKS cluster {props.eks_cluster_name}, namespace "
        f"{props.namespace})",
        request_type=request_type,
        cluster_name=props.cluster_name,
        eks_cluster_name=props.eks_cluster_name,
        namespace=props.namespace,
        restricted_groups=[g.name for g in props.restricted_groups],
        required_crds=list(props.required_crds),
    )
    return {"PhysicalResourceId": props.physical_id, WAIT_STARTED_AT: values.iso(_now())}


# --- is_complete ------------------------------------------------------------------------


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = decisions.parse_properties(event["ResourceProperties"])
    since = values.as_utc(event.get(WAIT_STARTED_AT)) or _now()
    try:
        return _check(props)
    except _Wait as wait:
        if values.timed_out(since, _now(), props.timeout_seconds):
            message = decisions.timeout_message(props, wait.reason)
            _log("timeout", message, cluster_name=props.cluster_name)
            raise NovaEnvironmentError(message) from None
        _log(
            "wait",
            f"not ready yet: {wait.reason}; asking again at the next poll",
            cluster_name=props.cluster_name,
            since=values.iso(since),
        )
        return {"IsComplete": False}
    except NovaEnvironmentError as failure:
        _log("fail", str(failure), cluster_name=props.cluster_name)
        raise


def _check(props: EnvironmentProperties) -> dict[str, Any]:
    sagemaker = _client("sagemaker")
    cluster = _describe_hyperpod(sagemaker, props.cluster_name)
    status = str(cluster.get("ClusterStatus"))
    _log(
        "cluster",
        f"HyperPod cluster {props.cluster_name} is {status}",
        cluster_name=props.cluster_name,
        status=status,
    )
    if decisions.cluster_verdict(props.cluster_name, cluster) == "waiting":
        raise _Wait(f"HyperPod cluster {props.cluster_name} is {status}")
    endpoint, authority = _describe_eks(props.eks_cluster_name)
    _check_kubernetes(props, endpoint, authority)
    reports = [_report(sagemaker, props, group, cluster) for group in props.restricted_groups]
    data = decisions.result_data(props, status, reports)
    _log("ready", f"the Nova environment is ready: {data['Summary']}", **data)
    return {"IsComplete": True, "Data": data}


def _describe_hyperpod(sagemaker: Any, name: str) -> dict[str, Any]:
    try:
        return dict(sagemaker.describe_cluster(ClusterName=name))
    except aws.ERRORS as exc:
        if errors.error_code(exc) == "ResourceNotFound":
            raise NovaEnvironmentError(decisions.cluster_missing_message(name)) from exc
        # Throttled or failing after botocore's retries: says nothing about the cluster.
        raise _Wait(f"SageMaker DescribeCluster kept failing ({_error_detail(exc)})") from exc


def _describe_eks(name: str) -> tuple[str, str]:
    try:
        cluster = _client("eks").describe_cluster(name=name)["cluster"]
    except aws.ERRORS as exc:
        if errors.error_code(exc) == "ResourceNotFoundException":
            raise NovaEnvironmentError(decisions.eks_missing_message(name)) from exc
        raise _Wait(f"EKS DescribeCluster kept failing ({_error_detail(exc)})") from exc
    endpoint = cluster.get("endpoint")
    authority = (cluster.get("certificateAuthority") or {}).get("data")
    if not endpoint or not authority:
        raise _Wait(f"EKS cluster {name} has no API endpoint yet ({cluster.get('status')})")
    return str(endpoint), str(authority)


def _check_kubernetes(props: EnvironmentProperties, endpoint: str, authority: str) -> None:
    eks = props.eks_cluster_name
    sts = _client("sts")
    try:
        context = kubernetes.tls_context(authority)
    except kubernetes.KubernetesUnreachable as exc:
        raise _Wait(f"no TLS context for EKS cluster {eks} ({exc})") from exc
    checks = [
        (f"namespace {props.namespace}", "namespaces", decisions.namespace_path(props.namespace))
    ]
    checks += [
        (f"CRD {crd}", "customresourcedefinitions", decisions.crd_path(crd))
        for crd in props.required_crds
    ]
    for what, kind, path in checks:
        try:
            # A fresh token per request: presigning is local, and the token's URL is
            # signed for 60 s while the requests may take longer together.
            bearer = kubernetes.token(sts, eks)
        except aws.ERRORS as exc:
            raise _Wait(f"no credentials to sign a Kubernetes token ({exc})") from exc
        try:
            answer = kubernetes.get(
                endpoint, path, bearer=bearer, context=context, timeout=KUBERNETES_TIMEOUT_SECONDS
            )
        except kubernetes.KubernetesUnreachable as exc:
            # A private endpoint the function cannot reach looks like this too: say so.
            raise _Wait(
                f"the Kubernetes API of EKS cluster {eks} at {endpoint} does not answer ({exc}); "
                "the handler must run in the cluster's VPC or reach its endpoint"
            ) from exc
        verdict = decisions.kubernetes_verdict(answer.status)
        _log(
            "kubernetes",
            f"GET {path}: HTTP {answer.status} ({verdict})",
            eks_cluster_name=eks,
            path=path,
            status=answer.status,
        )
        if verdict == "present":
            continue
        if verdict == "missing":
            if kind == "namespaces":
                raise NovaEnvironmentError(
                    decisions.namespace_missing_message(props.namespace, eks)
                )
            raise NovaEnvironmentError(decisions.crd_missing_message(path.rsplit("/", 1)[-1], eks))
        if verdict in ("unauthenticated", "forbidden"):
            raise NovaEnvironmentError(
                decisions.access_message(
                    verdict,
                    eks_cluster=eks,
                    role_arn=props.role_arn,
                    what=what,
                    detail=answer.message,
                )
            )
        raise _Wait(f"the Kubernetes API answered HTTP {answer.status} for {what}")


def _report(
    sagemaker: Any,
    props: EnvironmentProperties,
    group: decisions.RestrictedGroup,
    cluster: Mapping[str, Any],
) -> GroupReport:
    reported = decisions.cluster_group(group, props.cluster_name, cluster)
    arn = decisions.plan_arn(group, reported)
    plan: dict[str, Any] | None = None
    if arn is not None:
        name = decisions.plan_name_from_arn(arn)
        try:
            plan = dict(sagemaker.describe_training_plan(TrainingPlanName=name))
        except aws.ERRORS as exc:
            if errors.error_code(exc) == "ResourceNotFound":
                raise NovaEnvironmentError(
                    f"training plan {name} of restricted instance group {group.name} does not exist"
                ) from exc
            raise _Wait(
                f"DescribeTrainingPlan for {name} kept failing ({_error_detail(exc)})"
            ) from exc
    report = decisions.group_report(group.name, reported, plan, _now())
    _log(
        "group",
        report.summary,
        group=group.name,
        current_count=report.current_count,
        target_count=report.target_count,
        plan_status=report.plan_status,
        plan_start=values.iso(report.plan_start),
    )
    return report
