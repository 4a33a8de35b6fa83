"""SageMaker training jobs of the fake control plane (`aws_control_plane.py` routes here).

CreateTrainingJob, DescribeTrainingJob, ListTrainingJobs and StopTrainingJob speak JSON 1.1
like the plane's other SageMaker operations: the plane checks every request against
botocore's model (TrainingJobName's length 1..63 and pattern `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`,
RoleArn's IAM role ARN pattern, VpcConfig's 1..16 Subnets and 1..5 SecurityGroupIds,
TrainingPlanArn's pattern, the enums, ...) and every answer against the output shape. This
module adds the rules the model does not state:

- A name already used in the account and Region is ResourceInUse, in the service's words
  ("Training job names must be unique within an AWS account and region, and a training
  job with this name already exists (<arn>)", aws/amazon-sagemaker-examples#3108,
  SuperCowPowers/workbench#384). The ARN is arn:aws:sagemaker:<region>:<account>:
  training-job/<name in lower case>: SageMaker lower-cases the names in its ARNs
  (aws/sagemaker-experiments#172 lower-cases a training job's ARN to match the service's,
  boto/boto3#4606 shows lower-case job ARNs), so names that differ only in case are taken
  as one job here (an inference: the service's own rule is not documented).
- The role must be one SageMaker may assume (`trust_role`): otherwise ValidationException
  "Could not assume role <arn>. Please ensure that the role exists and allows principal
  'sagemaker.amazonaws.com' to assume the role." (the service's words for CreateTransformJob,
  awslabs/predictive-maintenance-using-machine-learning#3; the same check for training jobs).
- ResourceConfig.TrainingPlanArn (use-training-plan-for-training-jobs-using-api-cli-sdk.html:
  "You can use exactly one plan per job ... The InstanceType field set in the ResourceConfig
  ... must match the InstanceType of your training plan"; training-plan-utilization-for-
  training-jobs.html: "The training plan must be in the Scheduled or Active status to be
  used by a training job"; reserve-capacity-with-training-plans.html: plans "are specific to
  their target resource ... and cannot be interchanged"): the plan must exist in the plane,
  be Scheduled or Active, have training-job among its TargetResources, sell the job's
  InstanceType, and hold at least InstanceCount instances. Each refusal is a
  ValidationException in the fake's words (no AWS page or sample quotes the service's);
  an unknown plan is ResourceNotFound, an error CreateTrainingJob lists.
- A job that asks for what the fake does not model is NotImplemented (501), rather than
  answered as if it had not been sent: no ResourceConfig (a serverless job), InstanceGroups,
  InstancePreferences or InstancePlacementConfig, or no AlgorithmSpecification.TrainingImage.

DescribeTrainingJob of an unknown job is ValidationException "Requested resource not
found." (not ResourceNotFound: aws/aws-sdk#165, aws/amazon-sagemaker-examples#2360); so
is StopTrainingJob's (the fake assumes the same answer). A job shows a scripted status
sequence, one (TrainingJobStatus, SecondaryStatus[, FailureReason]) per describe, the last
one staying (`script_statuses`, like the HyperPod fake's); ListTrainingJobs and
StopTrainingJob see the status the next describe shows. Pairs follow the SecondaryStatus
documentation (botocore's model): InProgress with Starting, Pending (waiting for compute
capacity, e.g. a plan's), Downloading, Training, Interrupted, Uploading, Restarting or
Updating; Completed with Completed; Failed with Failed; Stopped with Stopped,
MaxRuntimeExceeded or MaxWaitTimeExceeded; Stopping with Stopping. The describe echoes the
request (AlgorithmSpecification, ResourceConfig with TrainingPlanArn, VpcConfig,
OutputDataConfig, HyperParameters, InputDataConfig, RoleArn, StoppingCondition - one day
when not sent, the documented default - ...), CreationTime, LastModifiedTime (the last
status change), TrainingStartTime (first shown Downloading, Training or Uploading),
TrainingEndTime (first shown terminal status) and SecondaryStatusTransitions.

ModelArtifacts: a Nova job's describe has none, also once Completed - "DescribeTrainingJob
returns ModelArtifacts: null for Nova (artifacts go to the managed escrow bucket)",
confirmed against a real job in aws/sagemaker-python-sdk#6091 - although the model marks
the member required (`TOLERATED_ANSWER_ERRORS`). `complete(..., model_artifacts=True)`
shows a generic job's instead: <S3OutputPath>/<name>/output/model.tar.gz, where SageMaker
writes the model archive.

StopTrainingJob ("SageMaker changes the status of the job to Stopping. After SageMaker
stops the job, it sets the status to Stopped", API reference in botocore's model) turns an
InProgress job Stopping for `stopping_polls` describes, then Stopped; any other status is a
ValidationException "The request was rejected because the training job is in status
<status>." (the service's words for a Stopped job, awslabs/benchmark-ai#928; the fake
answers so for every status but InProgress).

ListTrainingJobs filters by NameContains, StatusEquals, CreationTime/LastModifiedTime
After/Before and TrainingPlanArnEquals, sorts by SortBy (CreationTime by default) and
SortOrder (Ascending by default), and serves a page of MaxResults (NextToken an offset).
As its API reference says, with StatusEquals the page is taken first and then filtered by
status, so a page may hold fewer jobs than MaxResults while more follow.

`complete(name, files)` ends a job Completed and writes what a finished Nova job writes to
the plane's S3: <S3OutputPath>/<name>/output/output.tar.gz (loose files below
<name>/output/output/ with CompressionType NONE) holding manifest.json, whose
checkpoint_s3_bucket is s3://customer-escrow-<account>-smtj-<id>/<name>/stepID (Nova's
Iterative Training page, nova-iterative-training.html), and any other files of the archive,
e.g. an evaluation's <run>/eval_results/results_<timestamp>.json (`evaluation_files`; the
layout of aws/nova-customization-sdk's results reader and its tests).

IAM (`authorizations`), per the Service Authorization Reference (list_amazonsagemaker.html,
CreateTrainingJob on resource type training-job): the job's ARN, with the condition keys the
fake computes from the request - sagemaker:InstanceTypes, sagemaker:VpcSubnets,
sagemaker:VpcSecurityGroupIds (multivalued), sagemaker:NetworkIsolation,
sagemaker:InterContainerTrafficEncryption ("true"/"false", when sent),
sagemaker:MaxRuntimeInSeconds, sagemaker:OutputKmsKey, sagemaker:VolumeKmsKey (when sent),
aws:RequestTag/<key> and aws:TagKeys; the keys it does not compute (the sagemaker:FileSystem*
keys, sagemaker:EnableRemoteDebug, and the ...KmsKeyArn keys a newer reference may list) are
`unmodelled`, so a condition on them refuses an Allow. With a TrainingPlanArn, also
sagemaker:CreateTrainingJob on the plan: AWS's managed policy AmazonSageMakerFullAccess
grants "sagemaker:CreateTrainingJob" on training-plan/* for "the use ... of SageMaker AI
training plans ... in SageMaker training jobs" (security-iam-awsmanpol.html). With Tags,
sagemaker:AddTags on the job with sagemaker:TaggingAction CreateTrainingJob (a job created
with tags is refused without it: aws/aws-cdk#32294). And iam:PassRole on RoleArn with
iam:PassedToService sagemaker.amazonaws.com (the RoleArn documentation: "the caller of this
API must have the iam:PassRole permission"); iam:AssociatedResourceArn is not computed.
DescribeTrainingJob and StopTrainingJob act on the job's ARN with its tags as
aws:ResourceTag/<key>; ListTrainingJobs has no resource-level permission (the plane asks
for '*').
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import tarfile
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from tests.fakes import iam
from tests.fakes.service_model import json_time

ErrorFactory = Callable[..., Exception]
Status = tuple[str, str, str]  # TrainingJobStatus, SecondaryStatus, FailureReason

# SecondaryStatus values documented under each TrainingJobStatus (botocore's model; the
# deprecated LaunchingMLInstances, PreparingTrainingStack and DownloadingTrainingImage left out).
SECONDARY_STATUSES: dict[str, frozenset[str]] = {
    "InProgress": frozenset(
        {
            "Starting",
            "Pending",
            "Downloading",
            "Training",
            "Interrupted",
            "Uploading",
            "Restarting",
            "Updating",
        }
    ),
    "Completed": frozenset({"Completed"}),
    "Failed": frozenset({"Failed"}),
    "Stopped": frozenset({"Stopped", "MaxRuntimeExceeded", "MaxWaitTimeExceeded"}),
    "Stopping": frozenset({"Stopping"}),
}
TERMINAL = frozenset({"Completed", "Failed", "Stopped"})
_STARTED = frozenset({"Downloading", "Training", "Uploading"})
# Members the fake does not model: refused with NotImplemented rather than ignored.
_UNSERVED_RESOURCE_MEMBERS = ("InstanceGroups", "InstancePreferences", "InstancePlacementConfig")
# Request members a describe does not echo.
_NOT_ECHOED = frozenset({"Tags", "SessionChainingConfig"})
DEFAULT_MAX_RUNTIME_SECONDS = 86400  # StoppingCondition: "The default value is 1 day."
PLAN_STATUSES_FOR_JOBS = ("Scheduled", "Active")
# Answers the real service gives outside botocore's output shape (see the module docstring).
TOLERATED_ANSWER_ERRORS: dict[str, frozenset[str]] = {
    "DescribeTrainingJob": frozenset(
        {"Value None at 'modelArtifacts' failed to satisfy constraint: Member must not be null"}
    )
}
_UNMODELLED_KEYS = (
    "sagemaker:FileSystemAccessMode",
    "sagemaker:FileSystemDirectoryPath",
    "sagemaker:FileSystemId",
    "sagemaker:FileSystemType",
    "sagemaker:EnableRemoteDebug",
    "sagemaker:OutputKmsKeyArn",
    "sagemaker:VolumeKmsKeyArn",
)
NOT_FOUND = "Requested resource not found."


# Instance types without instance storage (EBS only) that novapod runs: ml.r5 (EC2 User
# Guide, instance store volumes: r5 has none, r5d is its NVMe variant).
EBS_ONLY = ("ml.r5.",)


class TrainingJobsFake:
    """Training jobs of one account and Region; `error(code, message, status)` makes the
    plane's API error. `plan(arn)` is the plane's training plan of that ARN (or None),
    `put_object(bucket, key, body, last_modified)` writes to the plane's S3."""

    def __init__(
        self,
        error: ErrorFactory,
        *,
        account: Callable[[], str],
        region: str,
        now: Callable[[], datetime],
        plan: Callable[[str], dict[str, Any] | None],
        put_object: Callable[[str, str, bytes, datetime], Any],
    ) -> None:
        self._error = error
        self._account = account
        self.region = region
        self._now = now
        self._plan = plan
        self._put_object = put_object
        self.jobs: dict[str, dict[str, Any]] = {}  # lower-case name -> job record
        self.trusted_roles: set[str] = set()  # roles SageMaker may assume
        self.default_statuses: tuple[Status, ...] = (("InProgress", "Starting", ""),)
        self.stopping_polls = 1  # describes a stopped job shows Stopping
        self.page_size = 100  # ListTrainingJobs' MaxResults is at most 100
        # Jobs created but not listed yet: a List call may lag a create (AWS APIs are
        # eventually consistent: docs.aws.amazon.com/ec2/latest/devguide/
        # eventual-consistency.html describes the model; SageMaker gives no bound).
        self.lagging: set[str] = set()  # lower-case names
        self._scripts: dict[str, deque[Status]] = {}

    # --- scripting ----------------------------------------------------------------------

    def trust_role(self, role_arn: str) -> None:
        """A role whose trust policy lets sagemaker.amazonaws.com assume it."""
        self.trusted_roles.add(role_arn)

    def script_statuses(
        self, name: str, statuses: Iterable[tuple[str, str] | tuple[str, str, str]]
    ) -> None:
        """Statuses the job shows, one per DescribeTrainingJob, the last one stays:
        (TrainingJobStatus, SecondaryStatus) or with a FailureReason as a third member.
        For a job not created yet, the script it starts with."""
        script: deque[Status] = deque()
        for entry in statuses:
            status, secondary, reason = (*entry, "")[:3]
            if secondary not in SECONDARY_STATUSES.get(status, frozenset()):
                raise ValueError(f"SecondaryStatus {secondary!r} is not one of {status!r}'s")
            script.append((status, secondary, reason))
        if not script:
            raise ValueError("a status script needs at least one status")
        self._scripts[name.lower()] = script

    def status(self, name: str) -> Status:
        """The status the next describe shows."""
        return self._scripts[self._job(name)["key"]][0]

    def request(self, name: str) -> dict[str, Any]:
        """The CreateTrainingJob request that created the job (as received)."""
        return copy.deepcopy(self._job(name)["request"])

    def complete(
        self,
        name: str,
        files: Mapping[str, bytes] | None = None,
        *,
        checkpoint: str | None = None,
        manifest: bool = True,
        model_artifacts: bool = False,
        compression: str | None = None,
    ) -> str:
        """End the job Completed (the next describe shows it) and write
        <S3OutputPath>/<name>/output/output.tar.gz with manifest.json (unless `manifest` is
        False) naming `checkpoint`, by default the escrow URI s3://customer-escrow-
        <account>-smtj-<id>/<name>/stepID, plus `files` (archive path -> bytes). Returns the
        archive's S3 URI. With OutputDataConfig.CompressionType NONE the same files are
        written loose below <S3OutputPath>/<name>/output/output/ instead (that prefix is
        returned). `model_artifacts`: show ModelArtifacts as a generic job does.
        `compression`: the layout of a job whose request said otherwise (one started by
        hand or by an SDK with SageMaker's default GZIP, under the same name)."""
        job = self._job(name)
        self._scripts[job["key"]] = deque([("Completed", "Completed", "")])
        job["model_artifacts"] = model_artifacts
        members: dict[str, bytes] = {}
        if manifest:
            escrow = checkpoint or self.escrow_checkpoint(job["name"])
            members["manifest.json"] = json.dumps({"checkpoint_s3_bucket": escrow}).encode()
        members.update(files or {})
        if compression is None:
            compression = job["request"]["OutputDataConfig"].get("CompressionType", "GZIP")
        if compression == "NONE":
            # Uncompressed, the files stay loose below <name>/output/output/
            # (model-customize-evaluation-metrics-formats.html: s3://<loc>/
            # <training-job-name>/output/output/<evaluation-job-name>/eval_results/).
            loose = self.output_prefix(job["name"]) + "output/output/"
            for path, body in members.items():
                bucket, key = _split_s3(loose + path)
                self._put_object(bucket, key, body, self._now())
            return loose
        bucket, key = _split_s3(self.output_prefix(job["name"]) + "output/output.tar.gz")
        self._put_object(bucket, key, archive(members), self._now())
        return f"s3://{bucket}/{key}"

    def output_prefix(self, name: str) -> str:
        """<S3OutputPath>/<name>/, where the job writes its output."""
        job = self._job(name)
        path = str(job["request"]["OutputDataConfig"]["S3OutputPath"]).rstrip("/")
        return f"{path}/{job['name']}/"

    def escrow_checkpoint(self, name: str) -> str:
        digest = hashlib.sha256(name.lower().encode()).hexdigest()[:10]
        return f"s3://customer-escrow-{self._account()}-smtj-{digest}/{name}/stepID"

    @staticmethod
    def evaluation_files(run: str, results: Mapping[str, Any], timestamp: str) -> dict[str, bytes]:
        """An evaluation's results file as a training job's output.tar.gz holds it."""
        body = json.dumps({"results": dict(results)}).encode()
        return {f"{run}/eval_results/results_{timestamp}.json": body}

    def job_arn(self, name: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self._account()}:training-job/{name.lower()}"

    # --- SageMaker ----------------------------------------------------------------------

    def create_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params["TrainingJobName"])
        key = name.lower()
        if key in self.jobs:
            raise self._error(
                "ResourceInUse",
                "Training job names must be unique within an AWS account and region, and a "
                f"training job with this name already exists ({self.jobs[key]['arn']})",
            )
        resources = params.get("ResourceConfig")
        if resources is None:
            raise self._error(
                "NotImplemented", "The fake does not serve jobs without a ResourceConfig.", 501
            )
        unserved = [m for m in _UNSERVED_RESOURCE_MEMBERS if m in resources]
        if unserved:
            raise self._error(
                "NotImplemented",
                f"The fake does not serve ResourceConfig.{', ResourceConfig.'.join(unserved)}.",
                501,
            )
        if not (params.get("AlgorithmSpecification") or {}).get("TrainingImage"):
            raise self._error(
                "NotImplemented",
                "The fake serves only jobs with an AlgorithmSpecification.TrainingImage.",
                501,
            )
        instance_type, count = resources.get("InstanceType"), resources.get("InstanceCount")
        if instance_type is None or count is None:
            raise self._error(
                "ValidationException",
                "ResourceConfig.InstanceType and ResourceConfig.InstanceCount are required "
                "without InstanceGroups.",
            )
        if "VolumeSizeInGB" not in resources and str(instance_type).startswith(EBS_ONLY):
            # botocore's ResourceConfig.VolumeSizeInGB: "When using an ML instance with
            # the EBS-only storage option and without instance storage, you must define
            # the size of EBS volume through VolumeSizeInGB."
            raise self._error(
                "ValidationException",
                f"{instance_type} has no instance storage: ResourceConfig.VolumeSizeInGB "
                "is required.",
            )
        role = str(params["RoleArn"])
        if role not in self.trusted_roles:
            raise self._error(
                "ValidationException",
                f"Could not assume role {role}. Please ensure that the role exists and allows "
                "principal 'sagemaker.amazonaws.com' to assume the role.",
            )
        plan_arn = resources.get("TrainingPlanArn")
        if plan_arn is not None:
            self._check_plan(str(plan_arn), str(instance_type), int(count))
        now = self._now()
        arn = self.job_arn(name)
        self.jobs[key] = {
            "key": key,
            "name": name,
            "arn": arn,
            "request": copy.deepcopy(params),
            "created": now,
            "modified": now,
            "started": None,
            "ended": None,
            "transitions": [],
            "model_artifacts": False,
        }
        self._scripts.setdefault(key, deque(self.default_statuses))
        return {"TrainingJobArn": arn}

    def _check_plan(self, arn: str, instance_type: str, count: int) -> None:
        plan = self._plan(arn)
        if plan is None:
            raise self._error("ResourceNotFound", f"Training plan {arn} not found.")
        name = plan["TrainingPlanName"]
        if plan["Status"] not in PLAN_STATUSES_FOR_JOBS:
            raise self._error(
                "ValidationException",
                f"Training plan {name} is {plan['Status']}; a training job can use a plan that "
                "is Scheduled or Active.",
            )
        if "training-job" not in plan["TargetResources"]:
            raise self._error(
                "ValidationException",
                f"Training plan {name} is for {', '.join(plan['TargetResources'])}, not "
                "training-job.",
            )
        sold = sorted({s["InstanceType"] for s in plan["ReservedCapacitySummaries"]})
        if instance_type not in sold:
            raise self._error(
                "ValidationException",
                f"The instance type {instance_type} does not match training plan {name}'s "
                f"instance type {', '.join(sold)}.",
            )
        total = int(plan["TotalInstanceCount"])
        if count > total:
            raise self._error(
                "ValidationException",
                f"The instance count {count} exceeds the {total} instances of training plan "
                f"{name}.",
            )

    def describe_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job(str(params["TrainingJobName"]))
        script = self._scripts[job["key"]]
        status, secondary, reason = script[0]
        if len(script) > 1:
            script.popleft()
        self._record(job, status, secondary, reason)
        request = job["request"]
        shown: dict[str, Any] = {
            k: copy.deepcopy(v) for k, v in request.items() if k not in _NOT_ECHOED
        }
        shown.setdefault("StoppingCondition", {"MaxRuntimeInSeconds": DEFAULT_MAX_RUNTIME_SECONDS})
        for flag in (
            "EnableNetworkIsolation",
            "EnableInterContainerTrafficEncryption",
            "EnableManagedSpotTraining",
        ):
            shown.setdefault(flag, False)
        shown.update(
            {
                "TrainingJobName": job["name"],
                "TrainingJobArn": job["arn"],
                "TrainingJobStatus": status,
                "SecondaryStatus": secondary,
                "CreationTime": job["created"],
                "LastModifiedTime": job["modified"],
                "SecondaryStatusTransitions": copy.deepcopy(job["transitions"]),
            }
        )
        if reason:
            shown["FailureReason"] = reason
        if job["started"] is not None:
            shown["TrainingStartTime"] = job["started"]
        if job["ended"] is not None:
            shown["TrainingEndTime"] = job["ended"]
        if job["started"] is not None and job["ended"] is not None:
            # "The billable time in seconds. Billable time refers to the absolute
            # wall-clock time" (botocore's BillableTimeInSeconds): from the start of
            # training to its end (the fake bills no start-up).
            seconds = int((job["ended"] - job["started"]).total_seconds())
            shown["BillableTimeInSeconds"] = max(seconds, 1)
        if status == "Completed" and job["model_artifacts"]:
            shown["ModelArtifacts"] = {
                "S3ModelArtifacts": self.output_prefix(job["name"]) + "output/model.tar.gz"
            }
        return shown

    def _record(self, job: dict[str, Any], status: str, secondary: str, reason: str) -> None:
        """A describe shows this status: note the transition and its times."""
        transitions: list[dict[str, Any]] = job["transitions"]
        if transitions and transitions[-1]["Status"] == secondary:
            return
        now = self._now()
        if transitions:
            transitions[-1]["EndTime"] = now
        transition: dict[str, Any] = {"Status": secondary, "StartTime": now}
        if reason:
            transition["StatusMessage"] = reason
        transitions.append(transition)
        job["modified"] = now
        if secondary in _STARTED and job["started"] is None:
            job["started"] = now
        if status in TERMINAL and job["ended"] is None:
            job["ended"] = now

    def list_training_jobs(self, params: dict[str, Any]) -> dict[str, Any]:
        jobs = [j for j in self.jobs.values() if j["key"] not in self.lagging]
        contains = params.get("NameContains")
        if contains:
            jobs = [j for j in jobs if str(contains).lower() in j["key"]]
        for member, field, after in (
            ("CreationTimeAfter", "created", True),
            ("CreationTimeBefore", "created", False),
            ("LastModifiedTimeAfter", "modified", True),
            ("LastModifiedTimeBefore", "modified", False),
        ):
            moment = json_time(params.get(member))
            if moment is not None:
                jobs = [j for j in jobs if (j[field] > moment if after else j[field] < moment)]
        plan = params.get("TrainingPlanArnEquals")
        if plan is not None:
            jobs = [j for j in jobs if _plan_arn(j) == plan]
        if params.get("WarmPoolStatusEquals") is not None:
            jobs = []  # the fake's jobs keep no warm pools
        sort_by = params.get("SortBy") or "CreationTime"
        sort_keys: dict[str, Callable[[dict[str, Any]], Any]] = {
            "CreationTime": lambda j: (j["created"], j["key"]),
            "Name": lambda j: j["name"],
            "Status": lambda j: self._scripts[j["key"]][0][0],
        }
        jobs.sort(key=sort_keys[sort_by], reverse=params.get("SortOrder") == "Descending")
        start = int(params.get("NextToken") or 0)
        size = min(int(params.get("MaxResults") or self.page_size), self.page_size)
        page = jobs[start : start + size]
        wanted = params.get("StatusEquals")
        summaries = [
            self._summary(j)
            for j in page
            if wanted is None or self._scripts[j["key"]][0][0] == wanted
        ]
        answer: dict[str, Any] = {"TrainingJobSummaries": summaries}
        if start + size < len(jobs):
            answer["NextToken"] = str(start + size)
        return answer

    def _summary(self, job: dict[str, Any]) -> dict[str, Any]:
        status, secondary, _ = self._scripts[job["key"]][0]
        summary: dict[str, Any] = {
            "TrainingJobName": job["name"],
            "TrainingJobArn": job["arn"],
            "CreationTime": job["created"],
            "LastModifiedTime": job["modified"],
            "TrainingJobStatus": status,
            "SecondaryStatus": secondary,
        }
        if job["ended"] is not None:
            summary["TrainingEndTime"] = job["ended"]
        if _plan_arn(job) is not None:
            summary["TrainingPlanArn"] = _plan_arn(job)
        return summary

    def stop_training_job(self, params: dict[str, Any]) -> dict[str, Any]:
        job = self._job(str(params["TrainingJobName"]))
        status = self._scripts[job["key"]][0][0]
        if status != "InProgress":
            raise self._error(
                "ValidationException",
                f"The request was rejected because the training job is in status {status}.",
            )
        stopping: list[Status] = [("Stopping", "Stopping", "")] * self.stopping_polls
        self._scripts[job["key"]] = deque([*stopping, ("Stopped", "Stopped", "")])
        return {}

    def _job(self, name: str) -> dict[str, Any]:
        job = self.jobs.get(name.lower())
        if job is None:
            raise self._error("ValidationException", NOT_FOUND)
        return job

    # --- IAM ----------------------------------------------------------------------------

    def authorizations(self, operation: str, params: dict[str, Any]) -> list[iam.Request]:
        action = f"sagemaker:{operation}"
        name = str(params.get("TrainingJobName", ""))
        arn = self.job_arn(name)
        if operation != "CreateTrainingJob":
            job = self.jobs.get(name.lower())
            tags = (job["request"].get("Tags") or []) if job else []
            tagged = {f"aws:ResourceTag/{t['Key']}": str(t.get("Value", "")) for t in tags}
            return [iam.Request(action, arn, tagged)]
        context = _create_context(params)
        requests = [iam.Request(action, arn, context, _UNMODELLED_KEYS)]
        plan = (params.get("ResourceConfig") or {}).get("TrainingPlanArn")
        if plan:
            requests.append(iam.Request(action, str(plan), context, _UNMODELLED_KEYS))
        if params.get("Tags"):
            tagging = {k: v for k, v in context.items() if k.startswith("aws:")}
            tagging["sagemaker:TaggingAction"] = "CreateTrainingJob"
            requests.append(iam.Request("sagemaker:AddTags", arn, tagging))
        requests.append(
            iam.Request(
                "iam:PassRole",
                str(params.get("RoleArn", "")),
                {"iam:PassedToService": "sagemaker.amazonaws.com"},
                ("iam:AssociatedResourceArn",),
            )
        )
        return requests


def _create_context(params: Mapping[str, Any]) -> dict[str, str | tuple[str, ...]]:
    """The condition keys of CreateTrainingJob the fake computes from the request."""
    context: dict[str, str | tuple[str, ...]] = {}
    resources = params.get("ResourceConfig") or {}
    if resources.get("InstanceType"):
        context["sagemaker:InstanceTypes"] = (str(resources["InstanceType"]),)
    vpc = params.get("VpcConfig")
    if vpc:
        context["sagemaker:VpcSubnets"] = tuple(str(s) for s in vpc.get("Subnets") or ())
        context["sagemaker:VpcSecurityGroupIds"] = tuple(
            str(g) for g in vpc.get("SecurityGroupIds") or ()
        )
    for member, key in (
        ("EnableNetworkIsolation", "sagemaker:NetworkIsolation"),
        ("EnableInterContainerTrafficEncryption", "sagemaker:InterContainerTrafficEncryption"),
    ):
        if member in params:
            context[key] = "true" if params[member] else "false"
    runtime = (params.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
    if runtime is not None:
        context["sagemaker:MaxRuntimeInSeconds"] = str(runtime)
    output_key = (params.get("OutputDataConfig") or {}).get("KmsKeyId")
    if output_key:
        context["sagemaker:OutputKmsKey"] = str(output_key)
    if resources.get("VolumeKmsKeyId"):
        context["sagemaker:VolumeKmsKey"] = str(resources["VolumeKmsKeyId"])
    tags = params.get("Tags") or []
    if tags:
        context["aws:TagKeys"] = tuple(str(t["Key"]) for t in tags)
        for tag in tags:
            context[f"aws:RequestTag/{tag['Key']}"] = str(tag.get("Value", ""))
    return context


def _plan_arn(job: Mapping[str, Any]) -> str | None:
    plan = (job["request"].get("ResourceConfig") or {}).get("TrainingPlanArn")
    return str(plan) if plan is not None else None


def _split_s3(uri: str) -> tuple[str, str]:
    rest = uri.split("://", 1)[1]
    bucket, _, key = rest.partition("/")
    return bucket, key


def archive(members: Mapping[str, bytes]) -> bytes:
    """A gzipped tar holding `members` (name -> bytes) in this order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buffer.getvalue()
