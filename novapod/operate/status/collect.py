"""The facts `novapod status` judges, read with the caller's credentials through the
clients passed in (tests point them at the fake control plane). Read-only: every call is
a Describe, List or Query.

- CloudFormation DescribeStacks of the storage stack: the purchase ledger's table name
  (its `PurchaseLedgerTableName` output), as `novapod purchases` finds it.
- DynamoDB Query of the ledger (strongly consistent, this environment's partition only):
  `handler_core.ledger.Ledger.entries`, the same read as `novapod purchases`.
- SageMaker DescribeTrainingPlan of each plan the config lists, by its name; a plan not
  bought is ResourceNotFound (the error DescribeTrainingPlan documents:
  docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeTrainingPlan.html).
  Its output (botocore's DescribeTrainingPlanResponse) holds Status (Pending | Active |
  Scheduled | Expired | Failed), StartTime, EndTime, UpfrontFee, CurrencyCode and the
  Total/Available/InUse/Unhealthy instance counts.
- DescribeTrainingPlanExtensionHistory of each plan found, every page (its paginator):
  TrainingPlanExtensions[] with Status, PaymentStatus, StartDate, EndDate, DurationHours
  (optional in the model), UpfrontFee, CurrencyCode (describe-extension-history-api-cli-
  sdk.html in the SageMaker developer guide).
- DescribeCluster of the HyperPod cluster (ResourceNotFound when it is not deployed):
  ClusterStatus, InstanceGroups[] and RestrictedInstanceGroups[] with CurrentCount,
  TargetCount, InstanceType, Status, TrainingPlanArn, TrainingPlanStatus
  (API_DescribeCluster.html, ClusterInstanceGroupDetails and
  ClusterRestrictedInstanceGroupDetails in botocore's model).
- ListClusterNodes, every page (its paginator): ClusterNodeSummaries[] with
  InstanceGroupName, InstanceId, InstanceType, LaunchTime and InstanceStatus {Status,
  Message} (API_ListClusterNodes.html).

With the monitor stack (`config.has_monitor`), how much of each Active plan was in use:

- CloudWatch GetMetricData of the scheduled check's `InUseInstances` of the plan
  (namespace novapod, dimensions Environment and Plan: the check's `decisions.metric_data`)
  from the plan's start to now, two statistics a period: Sum (the samples' in-use counts)
  and SampleCount (how many samples), every page (its paginator; a page that stops short
  answers PartialData and a NextToken: MetricDataResult's StatusCode in the API
  reference). CloudWatch keeps 1-minute data 15 days, 5-minute data 63 days and hourly
  data 455 days, and a start older than 3 hours, 15 or 63 days needs a period that is a
  multiple of 60, 300 or 3600 seconds or no datapoint comes back; one call returns at most
  100,800 datapoints before it pages (API_GetMetricData.html: the retention list,
  StartTime, MetricStat's Period, MaxDatapoints). `metric_period` picks the period by
  those rules, no shorter than the check's interval and long enough for both series to
  fit one page. GetMetricData has no resource-level permission (list_amazoncloudwatch.html
  in the Service Authorization Reference): the StatusPolicy grants it on "*".

With jobs (a config with `jobs` and a HyperPod cluster), their runs:

- S3 ListObjectsV2 of the jobs' outputs prefix `nova/<env>/` in the artifacts bucket
  (the storage stack's `ArtifactsBucketName` output), every page: each run's folder
  `<job>/<run>/`, when it was first and last written, and the object that says it
  finished, as `novapod launch` and `novapod results` find it (a training run's
  `manifest.json` or `output/output.tar.gz`, an evaluation's `eval-result/results_*.json`).
- EKS DescribeCluster of the HyperPod cluster's EKS cluster (its Orchestrator.Eks.ClusterArn)
  for the API endpoint and CA, then the Kubernetes API with the caller's credentials
  (`novapod.operate.cluster_api`): the PyTorchJobs and the pods of the jobs' namespace.
  An API that does not answer (a private endpoint seen from outside the VPC), or refuses
  the caller (no access entry, RBAC), is not an error: the runs are then read from S3
  only, and `KubernetesFacts.note` says why. An EKS cluster that is not found is the same.

Any other AWS error propagates (the CLI says which call failed and what it needs);
a ledger that cannot be read raises `ledger.LedgerError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from novapod.capacity.naming import EXTENSION_NAME
from novapod.constructs.bedrock_model.handler.manifest import ARCHIVE, MANIFEST, split_s3
from novapod.constructs.handler_core import ledger
from novapod.constructs.monitor.handler import decisions as monitor
from novapod.nova import launch
from novapod.operate import cluster_api
from novapod.operate.status.expected import Expected, expected

if TYPE_CHECKING:
    from novapod.config import NovapodConfig

NOT_FOUND = "ResourceNotFound"
# The IAM actions these calls need (the managed policy of `status` grants exactly these):
# the Service Authorization Reference names each SageMaker, DynamoDB and CloudFormation
# action after its operation (list_amazonsagemaker.html, list_amazondynamodb.html,
# list_awscloudformation.html); reading the ledger's items also needs kms:Decrypt on the
# environment's key, which encrypts the table.
ACTIONS = (
    "cloudformation:DescribeStacks",
    "dynamodb:Query",
    "sagemaker:DescribeTrainingPlan",
    "sagemaker:DescribeTrainingPlanExtensionHistory",
    "sagemaker:DescribeCluster",
    "sagemaker:ListClusterNodes",
)
# With jobs, also these (ListObjectsV2 is authorized as s3:ListBucket, list_amazons3.html).
JOB_ACTIONS = ("eks:DescribeCluster", "s3:ListBucket")
# With the monitor stack, also this (list_amazoncloudwatch.html: no resource type).
METRIC_ACTIONS = ("cloudwatch:GetMetricData",)
# GetMetricData (API_GetMetricData.html): datapoints one call returns before it pages, and
# how long CloudWatch keeps data of each period (the coarsest kept longest), oldest last.
MAX_DATAPOINTS = 100_800
RETENTION = (
    (timedelta(days=15), 60),
    (timedelta(days=63), 300),
    (timedelta(days=455), 3600),
)
# MetricDataResult's StatusCode when every datapoint was returned.
COMPLETE = "Complete"
EKS_NOT_FOUND = "ResourceNotFoundException"


@dataclass(frozen=True)
class UsageFacts:
    """The scheduled check's samples of one Active plan's in-use instances, read from
    CloudWatch: per period (its start), the sum of the samples' counts and how many
    samples there were."""

    start: datetime  # the query's StartTime: the plan's start (at most 455 days back)
    end: datetime  # its EndTime: now
    period: int  # seconds
    sums: tuple[tuple[datetime, float], ...]
    counts: tuple[tuple[datetime, float], ...]
    status: str = COMPLETE  # a StatusCode other than Complete: datapoints left out


@dataclass(frozen=True)
class PlanFacts:
    name: str  # the config entry's name
    described: Mapping[str, Any] | None  # DescribeTrainingPlan; None: not bought
    history: tuple[Mapping[str, Any], ...]  # DescribeTrainingPlanExtensionHistory
    ledger: tuple[ledger.Entry, ...]  # the plan's item and its extensions' items
    usage: UsageFacts | None = None  # an Active plan's samples, with the monitor stack


@dataclass(frozen=True)
class ClusterFacts:
    name: str
    described: Mapping[str, Any] | None  # DescribeCluster; None: not deployed
    nodes: tuple[Mapping[str, Any], ...]  # ListClusterNodes


@dataclass(frozen=True)
class RunOutput:
    """What one run left under its job's output prefix."""

    run: str
    first_written: datetime
    last_written: datetime
    finished: datetime | None  # when the object saying it finished was written
    finished_uri: str | None  # that object (manifest.json, output.tar.gz, results_*.json)


@dataclass(frozen=True)
class KubernetesFacts:
    eks_cluster: str
    namespace: str
    read: bool  # False: not reached or refused; the runs come from S3 only
    note: str | None  # why not read
    pytorchjobs: tuple[Mapping[str, Any], ...] = ()
    pods: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class JobsFacts:
    outputs_uri: str  # s3://<artifacts bucket>/nova/<env>/
    outputs: Mapping[str, tuple[RunOutput, ...]]  # job -> its runs' folders, by name
    kubernetes: KubernetesFacts


@dataclass(frozen=True)
class Facts:
    expected: Expected
    config_path: str
    observed_at: datetime
    ledger_table: str
    plans: tuple[PlanFacts, ...]
    ledger: tuple[ledger.Entry, ...]  # every item of the environment
    cluster: ClusterFacts | None  # None: the config has no HyperPod cluster
    jobs: JobsFacts | None = None  # None: the config has no jobs on a HyperPod cluster


def collect(
    config: NovapodConfig,
    config_path: str,
    *,
    cloudformation: Any,
    sagemaker: Any,
    dynamodb: Any,
    now: datetime,
    s3: Any = None,
    eks: Any = None,
    sts: Any = None,
    cloudwatch: Any = None,
) -> Facts:
    """Every fact of one round; `launch.LaunchError` when the storage stack (and so the
    ledger) is not deployed. The jobs' facts need the `s3`, `eks` and `sts` clients, the
    plans' use the `cloudwatch` client (and the monitor stack in the config)."""
    wanted = expected(config)
    with_jobs = bool(wanted.jobs) and s3 is not None and eks is not None and sts is not None
    names = launch.deployed_names(
        cloudformation, config, ["PurchaseLedger", *(["ArtifactsBucket"] if with_jobs else [])]
    )
    table = names["PurchaseLedger"]
    entries = tuple(ledger.Ledger(dynamodb, table, config.name).entries())
    plans = []
    for plan in wanted.plans:
        described = _described(sagemaker.describe_training_plan, TrainingPlanName=plan.plan_name)
        history: tuple[Mapping[str, Any], ...] = ()
        if described is not None:
            pages = sagemaker.get_paginator("describe_training_plan_extension_history")
            history = tuple(
                extension
                for page in pages.paginate(TrainingPlanArn=described["TrainingPlanArn"])
                for extension in page.get("TrainingPlanExtensions", [])
            )
        usage = None
        start = (described or {}).get("StartTime")
        if (
            cloudwatch is not None
            and wanted.sample_minutes is not None
            and (described or {}).get("Status") == "Active"
            and isinstance(start, datetime)
        ):
            usage = plan_usage(
                cloudwatch,
                environment=wanted.environment,
                plan=plan.name,
                start=start,
                now=now,
                sample_minutes=wanted.sample_minutes,
            )
        plans.append(
            PlanFacts(
                name=plan.name,
                described=described,
                history=history,
                ledger=tuple(e for e in entries if ledger_plan(e) == plan.plan_name),
                usage=usage,
            )
        )
    cluster = None
    if wanted.cluster_name is not None:
        described = _described(sagemaker.describe_cluster, ClusterName=wanted.cluster_name)
        nodes: tuple[Mapping[str, Any], ...] = ()
        if described is not None:
            pages = sagemaker.get_paginator("list_cluster_nodes")
            nodes = tuple(
                node
                for page in pages.paginate(ClusterName=wanted.cluster_name)
                for node in page.get("ClusterNodeSummaries", [])
            )
        cluster = ClusterFacts(wanted.cluster_name, described, nodes)
    jobs = None
    if with_jobs:
        assert wanted.namespace is not None and wanted.outputs is not None
        outputs_uri = f"s3://{names['ArtifactsBucket']}/{wanted.outputs}"
        jobs = JobsFacts(
            outputs_uri=outputs_uri,
            outputs=run_outputs(s3, outputs_uri, wanted),
            kubernetes=kubernetes_facts(
                eks, sts, eks_cluster_name(wanted, cluster), wanted.namespace
            ),
        )
    return Facts(
        expected=wanted,
        config_path=config_path,
        observed_at=now,
        ledger_table=table,
        plans=tuple(plans),
        ledger=entries,
        cluster=cluster,
        jobs=jobs,
    )


def metric_period(start: datetime, end: datetime, sample_minutes: int, *, series: int = 2) -> int:
    """The period (seconds) to read `series` metrics from `start` to `end` in one page: a
    multiple of what CloudWatch still keeps of data as old as `start` (60 s within 15
    days, 300 s within 63, 3600 s beyond), no shorter than the check's interval (each
    period then holds a sample while the check ran), and long enough that the series'
    datapoints stay within 100,800."""
    age = end - start
    step = next((s for kept, s in RETENTION if age <= kept), RETENTION[-1][1])
    span = max(0.0, (end - start).total_seconds())
    least = max(sample_minutes * 60, math.ceil(span * series / MAX_DATAPOINTS), step)
    return -(-least // step) * step


def plan_usage(
    cloudwatch: Any,
    *,
    environment: str,
    plan: str,
    start: datetime,
    now: datetime,
    sample_minutes: int,
) -> UsageFacts:
    """The check's in-use samples of the config's plan `plan` since `start` (no further
    back than CloudWatch keeps data), every page."""
    start = max(start, now - RETENTION[-1][0])
    if start >= now:
        return UsageFacts(start, now, 60, (), ())
    period = metric_period(start, now, sample_minutes)
    metric = {
        "Namespace": monitor.NAMESPACE,
        "MetricName": monitor.IN_USE_METRIC,
        "Dimensions": [
            {"Name": monitor.ENVIRONMENT_DIMENSION, "Value": environment},
            {"Name": monitor.PLAN_DIMENSION, "Value": plan},
        ],
    }
    queries = [
        {
            "Id": ident,
            "MetricStat": {"Metric": metric, "Period": period, "Stat": stat, "Unit": "Count"},
            "ReturnData": True,
        }
        for ident, stat in (("inuse", "Sum"), ("samples", "SampleCount"))
    ]
    found: dict[str, list[tuple[datetime, float]]] = {"inuse": [], "samples": []}
    last: dict[str, str] = {}
    pages = cloudwatch.get_paginator("get_metric_data").paginate(
        MetricDataQueries=queries, StartTime=start, EndTime=now, ScanBy="TimestampAscending"
    )
    for page in pages:
        for result in page.get("MetricDataResults", []):
            ident = str(result.get("Id"))
            if ident not in found:
                continue
            found[ident] += zip(result.get("Timestamps", []), result.get("Values", []), strict=True)
            last[ident] = str(result.get("StatusCode") or COMPLETE)
    status = next((c for c in last.values() if c != COMPLETE), COMPLETE)
    return UsageFacts(
        start=start,
        end=now,
        period=period,
        sums=tuple(sorted(found["inuse"])),
        counts=tuple(sorted(found["samples"])),
        status=status,
    )


def eks_cluster_name(wanted: Expected, cluster: ClusterFacts | None) -> str:
    """The EKS cluster the HyperPod cluster is orchestrated by (its DescribeCluster's
    Orchestrator.Eks.ClusterArn ends in it), else the one novapod creates (`<prefix>`)."""
    described = (cluster.described if cluster else None) or {}
    arn = str(((described.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn") or "")
    return arn.rsplit("/", 1)[-1] if "/" in arn else wanted.prefix


def run_outputs(s3: Any, outputs_uri: str, wanted: Expected) -> dict[str, tuple[RunOutput, ...]]:
    """Each job's run folders below the outputs prefix (`<job>/<run>/...`), one listing of
    the whole prefix; keys of other jobs' or no run's are left out."""
    bucket, prefix = split_s3(outputs_uri)
    evaluations = {j.name for j in wanted.jobs if j.technique == "evaluation"}
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            job, _, relative = str(item["Key"])[len(prefix) :].partition("/")
            run, _, rest = relative.partition("/")
            if wanted.job(job) is None or not run or not rest:
                continue
            written = item["LastModified"]
            entry = seen.setdefault(
                (job, run), {"first": written, "last": written, "finished": None, "uri": None}
            )
            entry["first"], entry["last"] = (
                min(entry["first"], written),
                max(entry["last"], written),
            )
            patterns = (launch.RESULTS,) if job in evaluations else (MANIFEST, ARCHIVE)
            if any(p.match(relative) for p in patterns) and (
                entry["finished"] is None or written > entry["finished"]
            ):
                entry["finished"], entry["uri"] = written, f"s3://{bucket}/{item['Key']}"
    out: dict[str, list[RunOutput]] = {}
    for (job, run), entry in sorted(seen.items()):
        out.setdefault(job, []).append(
            RunOutput(run, entry["first"], entry["last"], entry["finished"], entry["uri"])
        )
    return {job: tuple(runs) for job, runs in out.items()}


def kubernetes_facts(eks: Any, sts: Any, eks_cluster: str, namespace: str) -> KubernetesFacts:
    """The PyTorchJobs and pods of the jobs' namespace, read with the caller's credentials;
    an API that cannot be read gives `read=False` and the sentence saying why."""

    def unread(note: str) -> KubernetesFacts:
        return KubernetesFacts(eks_cluster, namespace, read=False, note=note)

    try:
        described = eks.describe_cluster(name=eks_cluster)["cluster"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == EKS_NOT_FOUND:
            return unread(f"EKS cluster {eks_cluster} is not deployed")
        raise
    what = f"the Kubernetes API of EKS cluster {eks_cluster}"
    try:
        api = cluster_api.connect(described, sts)
        pytorchjobs = cluster_api.list_items(
            api, cluster_api.PYTORCHJOBS.format(namespace=namespace)
        )
        pods = cluster_api.list_items(api, cluster_api.PODS.format(namespace=namespace))
    except cluster_api.Unreachable as error:
        return unread(
            f"{what} does not answer ({error}); with a private endpoint run novapod from "
            "inside the VPC or from a network in eks.private_access_cidrs"
        )
    except cluster_api.Refused as error:
        return unread(f"{what} refused the read: {kubernetes_refusal(error, namespace)}")
    return KubernetesFacts(
        eks_cluster,
        namespace,
        read=True,
        note=None,
        pytorchjobs=tuple(pytorchjobs),
        pods=tuple(pods),
    )


def kubernetes_refusal(error: cluster_api.Refused, namespace: str) -> str:
    """What a refusal of the API server means for the caller."""
    if error.status == 401:
        return (
            "HTTP 401, your role has no access entry in the cluster (the roles in "
            "nova.scientists have one)"
        )
    if error.status == 403:
        return (
            f"HTTP 403, RBAC does not let your role list PyTorchJobs and pods in namespace "
            f"{namespace} ({error.message or 'Forbidden'})"
        )
    if error.status == 404:
        return "HTTP 404, no PyTorchJob kind is served (is the training operator installed?)"
    return str(error)


def ledger_plan(entry: ledger.Entry) -> str | None:
    """The training plan a ledger item buys (a plan's name, or the plan an extension's
    name starts with), or None for other purchases (Bedrock imports, deployments)."""
    if entry.kind == "plan":
        return entry.name
    if entry.kind == "extension":
        match = EXTENSION_NAME.match(entry.name)
        return match.group("plan") if match else None
    return None


def _described(call: Any, **params: str) -> Mapping[str, Any] | None:
    try:
        answer: Mapping[str, Any] = call(**params)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == NOT_FOUND:
            return None
        raise
    return answer
