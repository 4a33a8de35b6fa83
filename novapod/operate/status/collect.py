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

- CloudFormation DescribeStackResource of the HyperPod cluster in the hyperpod stack
  (logical ID `HyperPodCluster`): its LastUpdatedTimestamp, "time the status was updated"
  (StackResourceDetail in API_DescribeStackResource.html), i.e. when CloudFormation last
  created or updated the cluster. A node whose LaunchTime is later was not launched by
  the stack: HyperPod replaced it (node recovery, a deep health check) or someone did
  (BatchReplaceClusterNodes "terminates the specified instances and provisions new
  replacement instances", API_BatchReplaceClusterNodes.html), or the group's capacity
  came later (its plan started after the deploy). A stack or resource that does not
  exist is a ValidationError (the service's answer, aws/aws-cli#2532): nothing to compare.

With a HyperPod cluster, its EKS cluster (the HyperPod cluster's Orchestrator.Eks.ClusterArn,
else the one novapod creates, `<prefix>`):

- EKS DescribeCluster: `version` (the Kubernetes version, API_DescribeCluster.html:
  Cluster.version), `status`, the API endpoint and CA.
- A GET of the bootstrap's marker ConfigMap (`kube-system/novapod-hyperpod-dependencies`)
  through the Kubernetes API with the caller's credentials (`novapod.operate.cluster_api`):
  what the bootstrap build last installed. A 404 means no build recorded anything. A
  refusal (401 without an access entry; 403 for the scientists, whose Role is namespaced)
  and an API that does not answer are `MarkerFacts.note`, not errors.

With training-job jobs (`runs_on: training-job`), each such job's runs:

- SageMaker ListTrainingJobs, every page (its paginator: NextToken, at most 100 a page),
  with NameContains the job's name stem (`ExpectedJob.name_contains`); the summaries whose
  name is one `training_jobs.training_job_name` gives the job's runs are kept
  (`training_jobs.run_of`: NameContains also matches other jobs whose names start the
  same). The API reference documents no read-after-write consistency for the list, and
  AWS's Nova SDK finds a job it just started by listing (aws/nova-customization-sdk,
  manager/runtime_manager.py): a job started seconds ago may not show yet, so the
  report is what SageMaker listed then, not a claim that no other run exists.
- DescribeTrainingJob of each kept run: TrainingJobStatus, SecondaryStatus,
  FailureReason, ResourceConfig (InstanceType, InstanceCount, TrainingPlanArn: the plan it
  runs on, absent on demand), CreationTime, TrainingStartTime, TrainingEndTime and
  BillableTimeInSeconds (DescribeTrainingJobResponse in botocore's model). A job gone
  between the list and the describe (ValidationException "Requested resource not
  found.") is left out.

With the monitor stack (`config.has_monitor`), how much of each Active plan was in use:

- CloudWatch GetMetricData of the scheduled check's `InUseInstanceSeconds` and
  `SampledSeconds` of the plan (namespace novapod, dimensions Environment and Plan, unit
  Seconds: the check's `decisions.metric_data`, each sample weighted by the interval it
  stands for) from the plan's start to now, three series a period: the Sum of each and
  the Maximum of SampledSeconds (the longest interval), every page (its paginator; a
  page that stops short answers PartialData and a NextToken: MetricDataResult's
  StatusCode in the API reference). CloudWatch keeps 1-minute data 15 days, 5-minute
  data 63 days and hourly data 455 days, and a start older than 3 hours, 15 or 63 days
  needs a period that is a multiple of 60, 300 or 3600 seconds or no datapoint comes
  back; one call returns at most 100,800 datapoints before it pages
  (API_GetMetricData.html: the retention list, StartTime, MetricStat's Period,
  MaxDatapoints). `metric_period` picks the period by those rules, no shorter than the
  check's interval and long enough for the series to fit one page. GetMetricData has no
  resource-level permission (list_amazoncloudwatch.html in the Service Authorization
  Reference): the StatusPolicy grants it on "*", so the new series need no new grant.

With jobs (a config with `jobs` and a HyperPod cluster), their runs:

- S3 ListObjectsV2 of the jobs' outputs prefix `nova/<env>/` in the artifacts bucket
  (the storage stack's `ArtifactsBucketName` output), every page: each run's folder
  `<job>/<run>/`, when it was first and last written, and the object that says it
  finished, as `novapod launch` and `novapod results` find it (a training run's
  `manifest.json` or `output/output.tar.gz`, an evaluation's `eval-result/results_*.json`;
  a training job's evaluation's `<name>/output/output/.../eval_results/results_*.json`).
- The EKS cluster's Kubernetes API (the DescribeCluster above), with the caller's
  credentials: the PyTorchJobs and the pods of the jobs' namespace.
  An API that does not answer (a private endpoint seen from outside the VPC), or refuses
  the caller (no access entry, RBAC), is not an error: the runs are then read from S3
  only, and `KubernetesFacts.note` says why. An EKS cluster that is not found is the same;
  an API that did not answer the marker's GET is not asked again.

Any other AWS error propagates (the CLI says which call failed and what it needs);
a ledger that cannot be read raises `ledger.LedgerError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from novapod.capacity.naming import EXTENSION_NAME
from novapod.config.stacks import HYPERPOD_CLUSTER_LOGICAL_ID
from novapod.constructs.bedrock_model.handler.manifest import ARCHIVE, MANIFEST, split_s3
from novapod.constructs.handler_core import ledger
from novapod.constructs.monitor.handler import decisions as monitor
from novapod.nova import launch
from novapod.nova import training_jobs as tj
from novapod.operate import cluster_api
from novapod.operate.status.expected import Expected, ExpectedEks, expected

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
    "cloudformation:DescribeStackResource",
    "dynamodb:Query",
    "sagemaker:DescribeTrainingPlan",
    "sagemaker:DescribeTrainingPlanExtensionHistory",
    "sagemaker:DescribeCluster",
    "sagemaker:ListClusterNodes",
    "eks:DescribeCluster",
)
# With jobs, also this (ListObjectsV2 is authorized as s3:ListBucket, list_amazons3.html).
JOB_ACTIONS = ("s3:ListBucket",)
# With training-job jobs, also these (list_amazonsagemaker.html: ListTrainingJobs has no
# resource type, DescribeTrainingJob acts on training-job).
TRAINING_JOB_ACTIONS = ("sagemaker:ListTrainingJobs", "sagemaker:DescribeTrainingJob")
# DescribeTrainingJob of an unknown job (aws/aws-sdk#165: not ResourceNotFound).
TRAINING_JOB_NOT_FOUND = "Requested resource not found."
# With the monitor stack, also this (list_amazoncloudwatch.html: no resource type).
METRIC_ACTIONS = ("cloudwatch:GetMetricData",)
# What `plan_usage` asks of each Active plan: (query Id, metric, statistic).
USAGE_QUERIES = (
    ("inuse", monitor.IN_USE_SECONDS_METRIC, "Sum"),
    ("sampled", monitor.SAMPLED_SECONDS_METRIC, "Sum"),
    ("longest", monitor.SAMPLED_SECONDS_METRIC, "Maximum"),
)
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
# GetMetricData refused (CloudWatch's query protocol answers AccessDenied; the JSON one,
# AccessDeniedException): the usage's status then, a note in the report, not an error.
METRIC_DENIED = frozenset({"AccessDenied", "AccessDeniedException"})
DENIED = "denied"
# DescribeStackResource's answer for a stack or a logical ID that does not exist.
STACK_NOT_FOUND = "ValidationError"
EKS_NOT_FOUND = "ResourceNotFoundException"


@dataclass(frozen=True)
class UsageFacts:
    """The scheduled check's samples of one Active plan's in-use instances, read from
    CloudWatch, per period (its start): the sum of the samples' in-use instance-seconds
    (InUseInstanceSeconds), the sum of the seconds they stand for (SampledSeconds) and
    the longest of those (the longest interval between two of the check's runs)."""

    start: datetime  # the query's StartTime: the plan's start (at most 455 days back)
    end: datetime  # its EndTime: now
    period: int  # seconds
    in_use_seconds: tuple[tuple[datetime, float], ...]
    sampled_seconds: tuple[tuple[datetime, float], ...]
    longest: tuple[tuple[datetime, float], ...] = ()
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
    # When CloudFormation last created or updated the cluster; None: not known (the
    # hyperpod stack or its cluster resource not found)
    stack_updated_at: datetime | None = None


@dataclass(frozen=True)
class MarkerFacts:
    """The bootstrap's marker ConfigMap, as the caller could read it."""

    namespace: str
    name: str
    read: bool  # False: refused or not answered; `note` says why
    note: str | None = None
    data: Mapping[str, str] | None = None  # its data; None when read and not found


@dataclass(frozen=True)
class EksFacts:
    name: str
    described: Mapping[str, Any] | None  # EKS DescribeCluster's `cluster`; None: not found
    marker: MarkerFacts | None  # None: the cluster is not found or has no API yet


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
    # training-job job -> DescribeTrainingJob of each of its runs ListTrainingJobs showed
    training_jobs: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)


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
    eks: EksFacts | None = None  # None: no HyperPod cluster (or no EKS client given)


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
            try:
                usage = plan_usage(
                    cloudwatch,
                    environment=wanted.environment,
                    plan=plan.name,
                    start=start,
                    now=now,
                    sample_minutes=wanted.sample_minutes,
                )
            except ClientError as error:
                # A role whose StatusPolicy predates the metrics (or a caller without it):
                # the share is one figure, not worth the whole report.
                if error.response.get("Error", {}).get("Code") not in METRIC_DENIED:
                    raise
                usage = UsageFacts(start, now, 0, (), (), status=DENIED)
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
        cluster = ClusterFacts(
            wanted.cluster_name,
            described,
            nodes,
            stack_updated_at=(
                cluster_updated_at(cloudformation, wanted.stack("hyperpod"))
                if described is not None
                else None
            ),
        )
    eks_facts, api, unreachable = None, None, None
    if wanted.eks is not None and eks is not None and sts is not None:
        eks_name = eks_cluster_name(wanted, cluster)
        eks_described = describe_eks(eks, eks_name)
        marker = None
        if eks_described is not None:
            api, unreachable = _connect(eks_described, sts)
            marker, unreachable = marker_facts(api, unreachable, wanted.eks, eks_name)
        eks_facts = EksFacts(eks_name, eks_described, marker)
    jobs = None
    if with_jobs:
        assert wanted.namespace is not None and wanted.outputs is not None
        outputs_uri = f"s3://{names['ArtifactsBucket']}/{wanted.outputs}"
        eks_name = eks_cluster_name(wanted, cluster)
        jobs = JobsFacts(
            outputs_uri=outputs_uri,
            outputs=run_outputs(s3, outputs_uri, wanted),
            training_jobs=training_job_runs(sagemaker, wanted),
            kubernetes=(
                namespace_facts(
                    eks_facts.described, sts, eks_name, wanted.namespace, api, unreachable
                )
                if eks_facts is not None
                else kubernetes_facts(eks, sts, eks_name, wanted.namespace)
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
        eks=eks_facts,
    )


def metric_period(start: datetime, end: datetime, sample_minutes: int, *, series: int = 2) -> int:
    """The period (seconds) to read `series` metrics from `start` to `end` in one page: a
    multiple of what CloudWatch still keeps of data as old as `start` (60 s within 15
    days, 300 s within 63, 3600 s beyond), no shorter than the check's interval now (each
    period then holds a sample while the check ran: fewer datapoints; the sums do not
    depend on it, each sample carries the seconds it stands for), and long enough that
    the series' datapoints stay within 100,800."""
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
    back than CloudWatch keeps data), every page: the Sums of InUseInstanceSeconds and
    SampledSeconds (each sample weighted by the interval it stands for,
    `decisions.metric_data`), and the Maximum of SampledSeconds."""
    start = max(start, now - RETENTION[-1][0])
    if start >= now:
        return UsageFacts(start, now, 60, (), ())
    period = metric_period(start, now, sample_minutes, series=len(USAGE_QUERIES))

    def metric(name: str) -> dict[str, Any]:
        return {
            "Namespace": monitor.NAMESPACE,
            "MetricName": name,
            "Dimensions": [
                {"Name": monitor.ENVIRONMENT_DIMENSION, "Value": environment},
                {"Name": monitor.PLAN_DIMENSION, "Value": plan},
            ],
        }

    queries = [
        {
            "Id": ident,
            "MetricStat": {
                "Metric": metric(name),
                "Period": period,
                "Stat": stat,
                "Unit": monitor.SECONDS,
            },
            "ReturnData": True,
        }
        for ident, name, stat in USAGE_QUERIES
    ]
    found: dict[str, list[tuple[datetime, float]]] = {ident: [] for ident, _, _ in USAGE_QUERIES}
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
        in_use_seconds=tuple(sorted(found["inuse"])),
        sampled_seconds=tuple(sorted(found["sampled"])),
        longest=tuple(sorted(found["longest"])),
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
    on_training_jobs = {j.name for j in wanted.jobs if j.runs_on == "training-job"}
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
            patterns: tuple[re.Pattern[str], ...] = (MANIFEST, ARCHIVE)
            if job in evaluations:
                # A training job's evaluation leaves its results loose (CompressionType
                # NONE) below <name>/output/output/ (launch.TRAINING_JOB_RESULTS).
                patterns = (
                    (launch.TRAINING_JOB_RESULTS,) if job in on_training_jobs else (launch.RESULTS,)
                )
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


def training_job_runs(sagemaker: Any, wanted: Expected) -> dict[str, tuple[Mapping[str, Any], ...]]:
    """Each training-job job's runs as SageMaker lists and describes them, by run number."""
    out: dict[str, tuple[Mapping[str, Any], ...]] = {}
    for job in wanted.jobs:
        if job.name_contains is None:
            continue
        names: dict[int, str] = {}
        pages = sagemaker.get_paginator("list_training_jobs")
        for page in pages.paginate(NameContains=job.name_contains):
            for summary in page.get("TrainingJobSummaries", []):
                name = str(summary["TrainingJobName"])
                run = tj.run_of(job.name_contains, name)
                if run is not None:
                    names.setdefault(run, name)
        described = []
        for _, name in sorted(names.items()):
            try:
                described.append(sagemaker.describe_training_job(TrainingJobName=name))
            except ClientError as error:
                if error.response.get("Error", {}).get("Message") != TRAINING_JOB_NOT_FOUND:
                    raise
        out[job.name] = tuple(described)
    return out


def cluster_updated_at(cloudformation: Any, stack: str) -> datetime | None:
    """When CloudFormation last created or updated the HyperPod cluster of `stack`; None
    when the stack or its cluster resource does not exist."""
    try:
        detail = cloudformation.describe_stack_resource(
            StackName=stack, LogicalResourceId=HYPERPOD_CLUSTER_LOGICAL_ID
        )["StackResourceDetail"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == STACK_NOT_FOUND:
            return None
        raise
    updated: datetime = detail["LastUpdatedTimestamp"]
    return updated


def describe_eks(eks: Any, eks_cluster: str) -> Mapping[str, Any] | None:
    """EKS DescribeCluster's `cluster`, or None when there is no such cluster."""
    try:
        described: Mapping[str, Any] = eks.describe_cluster(name=eks_cluster)["cluster"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == EKS_NOT_FOUND:
            return None
        raise
    return described


def _unanswered(what: str, error: cluster_api.Unreachable) -> str:
    return (
        f"{what} does not answer ({error}); with a private endpoint run novapod from "
        "inside the VPC or from a network in eks.private_access_cidrs"
    )


def _connect(
    described: Mapping[str, Any], sts: Any
) -> tuple[cluster_api.Cluster | None, str | None]:
    """A connection to the cluster's API, or why there is none."""
    try:
        return cluster_api.connect(dict(described), sts), None
    except cluster_api.Unreachable as error:
        return None, _unanswered(
            f"the Kubernetes API of EKS cluster {described.get('name')}", error
        )


def marker_facts(
    api: cluster_api.Cluster | None, unreachable: str | None, wanted: ExpectedEks, eks_cluster: str
) -> tuple[MarkerFacts, str | None]:
    """The marker ConfigMap as the caller reads it, and why the API does not answer (None
    when it does): a refusal is the caller's rights, not the API's reach."""

    def unread(note: str) -> MarkerFacts:
        return MarkerFacts(wanted.marker_namespace, wanted.marker_name, read=False, note=note)

    if api is None:
        return unread(unreachable or "no API"), unreachable
    try:
        found = cluster_api.get_object(
            api,
            cluster_api.CONFIGMAP.format(
                namespace=wanted.marker_namespace, name=wanted.marker_name
            ),
        )
    except cluster_api.Unreachable as error:
        why = _unanswered(f"the Kubernetes API of EKS cluster {eks_cluster}", error)
        return unread(why), why
    except cluster_api.Refused as error:
        return unread(marker_refusal(error, wanted.marker_namespace)), None
    if found is None:  # no build recorded anything
        return MarkerFacts(wanted.marker_namespace, wanted.marker_name, read=True), None
    data = found.get("data")
    recorded = {str(k): str(v) for k, v in data.items()} if isinstance(data, Mapping) else {}
    return MarkerFacts(wanted.marker_namespace, wanted.marker_name, read=True, data=recorded), None


def marker_refusal(error: cluster_api.Refused, namespace: str) -> str:
    """What a refusal of the marker's GET means for the caller."""
    if error.status == 401:
        return (
            "HTTP 401, your role has no access entry in the cluster (the roles in "
            "eks.admin_principals have one)"
        )
    if error.status == 403:
        return (
            f"HTTP 403, RBAC does not let your role get ConfigMaps in namespace {namespace} "
            f"({error.message or 'Forbidden'}); the scientists' access is to the jobs' "
            "namespace only, a role in eks.admin_principals may read it"
        )
    return str(error)


def kubernetes_facts(eks: Any, sts: Any, eks_cluster: str, namespace: str) -> KubernetesFacts:
    """The PyTorchJobs and pods of the jobs' namespace, read with the caller's credentials;
    an API that cannot be read gives `read=False` and the sentence saying why."""
    return namespace_facts(describe_eks(eks, eks_cluster), sts, eks_cluster, namespace)


def namespace_facts(  # noqa: PLR0917 - one read, and what an earlier one found
    described: Mapping[str, Any] | None,
    sts: Any,
    eks_cluster: str,
    namespace: str,
    api: cluster_api.Cluster | None = None,
    unreachable: str | None = None,
) -> KubernetesFacts:
    """`kubernetes_facts` of a cluster already described (and perhaps connected to, or
    found not to answer)."""

    def unread(note: str) -> KubernetesFacts:
        return KubernetesFacts(eks_cluster, namespace, read=False, note=note)

    if described is None:
        return unread(f"EKS cluster {eks_cluster} is not deployed")
    if unreachable is not None:
        return unread(unreachable)
    what = f"the Kubernetes API of EKS cluster {eks_cluster}"
    try:
        api = api or cluster_api.connect(dict(described), sts)
        pytorchjobs = cluster_api.list_items(
            api, cluster_api.PYTORCHJOBS.format(namespace=namespace)
        )
        pods = cluster_api.list_items(api, cluster_api.PODS.format(namespace=namespace))
    except cluster_api.Unreachable as error:
        return unread(_unanswered(what, error))
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
