"""A fake SageMaker, EC2, CloudFormation, S3 and DynamoDB served over HTTP on 127.0.0.1.

Real boto3 clients talk to it through `AWS_ENDPOINT_URL` with dummy credentials, so
request serialization, botocore's retries and timeouts, and error parsing are the
real ones. It speaks SageMaker's JSON 1.1 protocol (`X-Amz-Target: SageMaker.<Op>`)
for the training-plan operations, EC2's query protocol (form body, XML answer) for
DescribeAvailabilityZones and DescribeSubnets, CloudFormation's query protocol for
DescribeStacks and DescribeStackResource, and S3's REST-XML protocol for PutObject, GetObject, HeadObject and ListObjectsV2
(path-style addressing: `/bucket/key`). The service is the one the request is signed
for (`Credential=<key>/<date>/<region>/<service>/aws4_request`).
SageMaker DescribeCluster and EKS DescribeCluster (REST-JSON) are served by
`hyperpod.py`, SageMaker's training jobs (CreateTrainingJob, DescribeTrainingJob,
ListTrainingJobs, StopTrainingJob) by `training_jobs.py` (`plane.training_jobs`), DynamoDB's item operations (JSON 1.0, `X-Amz-Target:
DynamoDB_20120810.<Op>`) by `dynamodb.py` (`plane.dynamodb`).

Every SageMaker request is checked against botocore's service model (required and
unknown members, lengths, enums, patterns, ranges) and refused with a
ValidationException like the service's; every SageMaker answer is checked against the
output shape, and a violation (a bug of the fake) is kept in `violations`. EC2 query
parameters are checked by name and value kind, CloudFormation's like SageMaker's
members (`service_model.py`); CloudFormation and S3 answers are written from the
output shapes and checked against them too.

Plans can be extended (SearchTrainingPlanOfferings with TrainingPlanArn lists the
extension offerings scripted for that plan, ExtendTrainingPlan buys one and moves the
plan's end, DescribeTrainingPlanExtensionHistory lists them a page at a time), and an
extension can be scripted to show late in the history and in the plan's end time.
Plans take tags: AddTags (adds or overwrites), ListTags (a page at a time) and
DeleteTags (unknown keys ignored) on the plan's ARN, tags given at purchase included.

Tests script it (zones, subnets, offerings, existing plans, a status sequence per
plan, stacks and their outputs, buckets and objects), inject faults per operation
(throttle, 5xx, any error code, slow answers, a call that hangs or whose connection is
reset before it is worked, a create that succeeds but whose answer is lost, a rival
that buys the name first) and read back every call it received. Offerings may be
near matches (fewer or more instances, split segments, other zones or currencies) that
the search returns for any request, as the real search ranks its best matches rather
than only exact ones.

With a `principal` set (`act_as`), every call is authorized first against that role's
statements (`iam.py`, e.g. read from a synthesized template) and refused as the
services refuse: SageMaker and DynamoDB with AccessDeniedException (HTTP 400), EC2 with
UnauthorizedOperation (HTTP 403), CloudFormation and S3 with AccessDenied (HTTP 403).
Without one, nothing is checked.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import re
import socket
import struct
import threading
import uuid
import zlib
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, get_args
from urllib.parse import parse_qsl, quote_plus, urlsplit
from xml.sax.saxutils import escape

from tests.fakes import bedrock, dynamodb, hyperpod, iam, monitoring, service_model, training_jobs

ACCOUNT = "123456789012"
REGION = "us-east-1"
EC2_NAMESPACE = "http://ec2.amazonaws.com/doc/2016-11-15/"
CLOUDFORMATION_NAMESPACE = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
S3_NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
JSON_CONTENT_TYPE = "application/x-amz-json-1.1"
_PLAN_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")
# CloudFormation checks StackName against this although botocore's model does not
# state it (the service's ValidationError for DescribeStacks, aws/aws-sam-cli#4979).
STACK_NAME_PATTERN = "[a-zA-Z][-a-zA-Z0-9]*|arn:[-a-zA-Z0-9:/._+]*"
# The SigV4 credential scope names the service a request is signed for.
_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,]+/\d{8}/[^/,]+/([^/,]+)/aws4_request")

Service = Literal[
    "sagemaker", "ec2", "cloudformation", "s3", "bedrock", "eks", "dynamodb", "monitoring", "sns"
]

FaultKind = Literal[
    "throttle", "server_error", "error", "slow", "hang", "reset", "lose_response", "rival"
]
LostHow = Literal["timeout", "drop", "reset", "server_error"]


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour, consumed by the next call of its operation.

    - throttle / server_error / error: answer with that error instead of working.
    - slow: wait `seconds`, then work and answer (past the client's read timeout).
    - hang: wait `seconds`, then close the connection; the call is never worked.
    - reset: reset the connection (TCP RST) at once; the call is never worked.
    - lose_response: work (a create records the plan), then `how`: "timeout" waits
      `seconds` before answering, "drop" closes the connection without an answer,
      "reset" resets it, "server_error" answers 500.
    - rival: another buyer takes the name just before the call is worked.
    """

    kind: FaultKind
    seconds: float = 0.0
    code: str = ""
    status: int = 400
    message: str = ""
    how: LostHow = "timeout"


@dataclass(frozen=True)
class Segment:
    """One ReservedCapacityOffering of an offering: a zone, a count and a time span."""

    zone: str
    instance_count: int
    start: datetime
    hours: int
    instance_type: str | None = None  # the offering's type when None


@dataclass(frozen=True)
class Call:
    service: Service
    operation: str
    params: dict[str, Any]


@dataclass(frozen=True)
class S3Object:
    body: bytes
    last_modified: datetime
    content_type: str = "binary/octet-stream"

    @property
    def etag(self) -> str:
        # A single-part upload's ETag is the quoted MD5 of its bytes.
        return f'"{hashlib.md5(self.body, usedforsecurity=False).hexdigest()}"'


@dataclass(frozen=True)
class StackResource:
    """One resource of a scripted stack, as DescribeStackResource shows it."""

    resource_type: str
    status: str = "CREATE_COMPLETE"
    reason: str = ""
    physical_id: str = ""
    updated: datetime = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass
class _Extension:
    """One bought extension; `statuses` advance one per history read, the last stays."""

    offering_id: str
    hours: int
    extended_at: datetime
    start: datetime
    zone: str | None
    zone_id: str | None
    fee: str
    currency: str | None
    statuses: deque[tuple[str, str]]
    hidden_history: int = 0
    hidden_describe: int = 0

    def shown(self, *, advance: bool = False) -> dict[str, Any]:
        status, payment = self.statuses[0]
        if advance and len(self.statuses) > 1:
            self.statuses.popleft()
        return _drop_none(
            {
                "TrainingPlanExtensionOfferingId": self.offering_id,
                "ExtendedAt": self.extended_at,
                "StartDate": self.start,
                "EndDate": self.start + timedelta(hours=self.hours),
                "Status": status,
                "PaymentStatus": payment,
                "AvailabilityZone": self.zone,
                "AvailabilityZoneId": self.zone_id,
                "DurationHours": self.hours,
                "UpfrontFee": self.fee or None,
                "CurrencyCode": self.currency,
            }
        )


class _ApiError(Exception):
    def __init__(
        self,
        code: str,
        message: str,
        status: int = 400,
        *,
        details: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details = tuple(details)  # S3 names the key or bucket (<Key>, <BucketName>)


@dataclass(frozen=True)
class _Answer:
    status: int
    content_type: str
    body: bytes
    # Headers the answer carries (S3's ETag, Last-Modified, a HEAD's Content-Length).
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class _Hangup:
    """No answer: close the connection, or reset it (RST)."""

    reset: bool = False


class FakeControlPlane:
    """The scriptable fake; use as a context manager (starts and stops the server)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset()

    # --- lifecycle ----------------------------------------------------------------------

    def reset(self) -> None:
        """Forget all scripted state, faults and recorded calls."""
        with self._lock:
            self.zones: dict[str, str] = {}
            self.subnets: list[dict[str, str]] = []
            self.offerings: list[dict[str, Any]] = []
            self.plans: dict[str, dict[str, Any]] = {}
            self.unhealthy_counts: dict[str, int] = {}  # DescribeTrainingPlan only
            self.tags: dict[str, list[dict[str, str]]] = {}
            self.default_statuses: tuple[tuple[str, str], ...] = (
                ("Pending", ""),
                ("Scheduled", ""),
            )
            self.describe_includes_zone_id = True
            self.near_matches: set[str] = set()
            # Extensions: offerings per plan name, bought extensions per plan name, and
            # how many reads (history, describe) the next bought extension stays unseen.
            self.extension_offerings: dict[str, list[dict[str, Any]]] = {}
            self.extensions: dict[str, list[_Extension]] = {}
            self.extension_lag = (0, 0)
            self.extension_statuses: tuple[tuple[str, str], ...] = (
                ("Pending", "Pending"),
                ("Scheduled", "Completed"),
            )
            self.history_page_size = 100
            # DurationHours is optional in TrainingPlanExtension (botocore's model): with
            # this set, the history leaves it out, as the API allows.
            self.history_omits_duration_hours = False
            # The history's order is not documented: newest first with this set.
            self.history_newest_first = False
            self.tag_page_size = 50  # ListTags' MaxResults is at least 50
            self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
            self.calls: list[Call] = []
            self.violations: list[str] = []
            self.account = ACCOUNT
            self.principal: iam.Principal | None = None
            self.stacks: list[dict[str, Any]] = []  # in creation order
            self.stack_resources: dict[str, dict[str, StackResource]] = {}  # by StackId
            self.stack_page_size = 100
            self.buckets: dict[str, dict[str, S3Object]] = {}
            # Each PutObject worked, its members but the Body (the object is in buckets).
            self.put_requests: list[dict[str, Any]] = []
            self._scripts: dict[str, deque[tuple[str, str]]] = {}
            self._faults: dict[str, deque[Fault | None]] = defaultdict(deque)
            self.bedrock = bedrock.FakeBedrock(account=self.account, region=REGION)
            # HyperPod (SageMaker DescribeCluster) and EKS clusters: tests/fakes/hyperpod.py
            self.hyperpod = hyperpod.HyperPodFake(_ApiError, account=self.account)
            # SageMaker training jobs (tests/fakes/training_jobs.py), on the plane's plans and
            # writing their output to its S3.
            self.training_jobs = training_jobs.TrainingJobsFake(
                _ApiError,
                account=lambda: self.account,
                region=REGION,
                now=lambda: self.now(),  # noqa: PLW0108 - tests replace self.now later
                plan=self._plan_of_arn,
                put_object=self.put_object,
            )
            # DynamoDB tables (tests/fakes/dynamodb.py), in the plane's account as it is
            # at each call.
            self.dynamodb = dynamodb.FakeDynamoDB(account=lambda: self.account, region=REGION)
            # CloudWatch metrics and SNS topics (tests/fakes/monitoring.py).
            self.monitoring = monitoring.FakeMonitoring(
                _ApiError,
                account=lambda: self.account,
                region=REGION,
                now=lambda: self.now(),  # noqa: PLW0108 - tests replace self.now later
            )

    def start(self) -> FakeControlPlane:
        plane = self

        class Handler(_Handler):
            control_plane = plane

        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake control plane is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # --- scripting ----------------------------------------------------------------------

    def set_zones(self, zone_name_to_id: dict[str, str]) -> None:
        with self._lock:
            self.zones = dict(zone_name_to_id)

    def add_subnet(self, subnet_id: str, zone_name: str, *, vpc_id: str = "vpc-0fake") -> None:
        with self._lock:
            self.subnets.append({"SubnetId": subnet_id, "Zone": zone_name, "VpcId": vpc_id})

    def add_offering(
        self,
        offering_id: str,
        *,
        zones: Sequence[str] = (),
        start: datetime | None = None,
        fee: str,
        currency: str | None = "USD",
        instance_type: str = "ml.p5.48xlarge",
        instance_count: int = 4,
        duration_hours: int = 48,
        target_resources: Sequence[str] = ("hyperpod-cluster",),
        segments: Sequence[Segment] = (),
        near_match: bool = False,
    ) -> dict[str, Any]:
        """An offering of `instance_count` instances split as evenly as possible over
        `zones` (usually one; the first zones take the remainder), or made of explicit
        `segments`.

        `near_match`: the search returns it whatever the request asks for, as the
        service returns its best matches, not only exact ones: fewer or more instances
        than asked, another type, length, window, zone or currency.
        """
        if not segments:
            if start is None or not zones:
                raise ValueError("an offering needs zones and a start, or segments")
            per_zone, extra = divmod(instance_count, len(zones))
            segments = [
                Segment(zone, per_zone + (1 if index < extra else 0), start, duration_hours)
                for index, zone in enumerate(zones)
            ]
        offering: dict[str, Any] = {
            "TrainingPlanOfferingId": offering_id,
            "TargetResources": list(target_resources),
            "DurationHours": duration_hours,
            "DurationMinutes": 0,
            "UpfrontFee": fee,
            "CurrencyCode": currency,
            "ReservedCapacityOfferings": [
                {
                    "ReservedCapacityType": "Instance",
                    "InstanceType": segment.instance_type or instance_type,
                    "InstanceCount": segment.instance_count,
                    "AvailabilityZone": segment.zone,
                    "DurationHours": segment.hours,
                    "DurationMinutes": 0,
                    "StartTime": segment.start,
                    "EndTime": segment.start + timedelta(hours=segment.hours),
                }
                for segment in segments
            ],
        }
        with self._lock:
            self.offerings.append(offering)
            if near_match:
                self.near_matches.add(offering_id)
        return offering

    def add_plan(
        self, name: str, offering: dict[str, Any], *, statuses: Iterable[str | tuple[str, str]]
    ) -> str:
        """A plan that exists before the test (bought elsewhere); returns its ARN."""
        with self._lock:
            self.script_statuses(name, statuses)
            return self._buy(name, offering, [])

    def script_statuses(self, name: str, statuses: Iterable[str | tuple[str, str]]) -> None:
        """Statuses the plan shows, one per DescribeTrainingPlan; the last one stays."""
        script = deque((s, "") if isinstance(s, str) else s for s in statuses)
        if not script:
            raise ValueError("a status script needs at least one status")
        with self._lock:
            self._scripts[name] = script
            if name in self.plans:
                self._set_status(self.plans[name], *script[0])

    def add_extension_offering(
        self,
        plan: str,
        offering_id: str,
        *,
        hours: int,
        fee: str,
        currency: str | None = "USD",
        zone: str | None = None,
        near_match: bool = False,
    ) -> dict[str, Any]:
        """An extension of `plan` for sale. The search lists it when asked for `hours`
        (rounded up to whole days, as the service does), or always with `near_match`."""
        offering = _drop_none(
            {
                "TrainingPlanExtensionOfferingId": offering_id,
                "AvailabilityZone": zone,
                "DurationHours": hours,
                "UpfrontFee": fee,
                "CurrencyCode": currency,
            }
        )
        with self._lock:
            self.extension_offerings.setdefault(plan, []).append(offering)
            if near_match:
                self.near_matches.add(offering_id)
        return offering

    def add_extension(
        self, plan: str, hours: int, *, status: str = "Active", payment: str = "Completed"
    ) -> None:
        """An extension bought before the test (by an earlier deploy, or elsewhere)."""
        with self._lock:
            self._record_extension(
                plan, f"tpeo-earlier-{len(self.extensions.get(plan, []))}", hours, "", "USD"
            )
            self.extensions[plan][-1].statuses = deque([(status, payment)])

    def set_plan_counts(
        self,
        name: str,
        *,
        available: int | None = None,
        in_use: int | None = None,
        unhealthy: int | None = None,
    ) -> None:
        """The instance counts DescribeTrainingPlan shows for a plan (Available, InUse,
        Unhealthy; Total is what was bought). UnhealthyInstanceCount is in
        DescribeTrainingPlan's output only, not in TrainingPlanSummary (botocore's model),
        so ListTrainingPlans never shows it."""
        with self._lock:
            plan = self.plans[name]
            if available is not None:
                plan["AvailableInstanceCount"] = available
            if in_use is not None:
                plan["InUseInstanceCount"] = in_use
            if unhealthy is not None:
                self.unhealthy_counts[name] = unhealthy

    def lag_extensions(self, *, history_reads: int = 0, describe_reads: int = 0) -> None:
        """The next extension bought stays out of that many history reads and plan
        describes (the service's eventual consistency)."""
        with self._lock:
            self.extension_lag = (history_reads, describe_reads)

    def add_stack(
        self,
        name: str,
        outputs: Mapping[str, str] | None = None,
        *,
        status: str = "CREATE_COMPLETE",
        descriptions: Mapping[str, str] | None = None,
        exports: Mapping[str, str] | None = None,
        created: datetime | None = None,
        resources: Mapping[str, StackResource] | None = None,
    ) -> str:
        """A deployed stack with these outputs (key -> value; `descriptions` and
        `exports` by output key) and resources (logical ID -> StackResource, for
        DescribeStackResource); returns its StackId. A stack in DELETE_COMPLETE is
        found by its StackId only, as CloudFormation finds deleted stacks."""
        stack_id = f"arn:aws:cloudformation:{REGION}:{self.account}:stack/{name}/{uuid.uuid4()}"
        descriptions, exports = descriptions or {}, exports or {}
        stack: dict[str, Any] = {
            "StackId": stack_id,
            "StackName": name,
            "CreationTime": created or datetime.now(UTC).replace(microsecond=0),
            "StackStatus": status,
            "DisableRollback": False,
            "EnableTerminationProtection": False,
            "DriftInformation": {"StackDriftStatus": "NOT_CHECKED"},
        }
        if outputs:
            stack["Outputs"] = [
                _drop_none(
                    {
                        "OutputKey": key,
                        "OutputValue": value,
                        "Description": descriptions.get(key),
                        "ExportName": exports.get(key),
                    }
                )
                for key, value in outputs.items()
            ]
        with self._lock:
            self.stacks.append(stack)
            self.stack_resources[stack_id] = dict(resources or {})
        return stack_id

    def add_bucket(self, name: str) -> None:
        with self._lock:
            self.buckets.setdefault(name, {})

    def put_object(
        self,
        bucket: str,
        key: str,
        body: bytes,
        last_modified: datetime | None = None,
        *,
        content_type: str = "binary/octet-stream",
    ) -> S3Object:
        """Store an object (the bucket is added if it is new); S3 keeps whole seconds."""
        moment = (last_modified or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
        stored = S3Object(bytes(body), moment, content_type)
        with self._lock:
            self.buckets.setdefault(bucket, {})[key] = stored
        return stored

    def inject(self, operation: str, fault: Fault, *, times: int = 1, after: int = 0) -> None:
        """The next `times` calls of `operation` (after `after` calls that pass) misbehave."""
        with self._lock:
            self._faults[operation].extend([None] * after + [fault] * times)

    def throttle(self, operation: str, *, times: int = 1, after: int = 0) -> None:
        self.inject(operation, Fault("throttle"), times=times, after=after)

    def server_error(self, operation: str, *, times: int = 1, status: int = 500) -> None:
        self.inject(operation, Fault("server_error", status=status), times=times)

    def error(
        self, operation: str, code: str, *, times: int = 1, status: int = 400, message: str = ""
    ) -> None:
        fault = Fault("error", code=code, status=status, message=message or f"injected {code}")
        self.inject(operation, fault, times=times)

    def slow(self, operation: str, seconds: float, *, times: int = 1) -> None:
        self.inject(operation, Fault("slow", seconds=seconds), times=times)

    def hang(self, operation: str, seconds: float, *, times: int = 1) -> None:
        self.inject(operation, Fault("hang", seconds=seconds), times=times)

    def reset_connection(self, operation: str, *, times: int = 1) -> None:
        self.inject(operation, Fault("reset"), times=times)

    def lose_response(
        self, operation: str, *, how: LostHow = "timeout", seconds: float = 1.0
    ) -> None:
        self.inject(operation, Fault("lose_response", seconds=seconds, how=how))

    def act_as(self, principal: iam.Principal | None) -> None:
        """Authorize the calls that follow as this role (None: authorize nothing)."""
        with self._lock:
            self.principal = principal

    def rival_buys_first(self) -> None:
        """The next CreateTrainingPlan finds its name just taken by someone else."""
        self.inject("CreateTrainingPlan", Fault("rival"))

    # --- inspection ---------------------------------------------------------------------

    def operations(self, *, ledger: bool = False) -> list[str]:
        """The operations received, in order. DynamoDB's (the purchase ledger's) only
        with `ledger=True`: the SageMaker and EC2 sequences read as they always did, and
        the ledger's calls are asserted where they matter (`ledger_items`, `calls_to`)."""
        with self._lock:
            return [c.operation for c in self.calls if ledger or c.service != "dynamodb"]

    def calls_to(self, operation: str) -> list[dict[str, Any]]:
        with self._lock:
            return [c.params for c in self.calls if c.operation == operation]

    def create_counts(self) -> Counter[str]:
        """CreateTrainingPlan requests received per plan name (faulted ones included)."""
        return Counter(p.get("TrainingPlanName", "") for p in self.calls_to("CreateTrainingPlan"))

    def extend_counts(self) -> Counter[str]:
        """ExtendTrainingPlan requests received per plan name (faulted ones included)."""
        owners = {
            o["TrainingPlanExtensionOfferingId"]: plan
            for plan, offered in self.extension_offerings.items()
            for o in offered
        }
        return Counter(
            owners.get(str(p.get("TrainingPlanExtensionOfferingId")), "?")
            for p in self.calls_to("ExtendTrainingPlan")
        )

    def mark(self) -> int:
        """A position in the call log, for `operations_since`."""
        with self._lock:
            return len(self.calls)

    def operations_since(self, mark: int, *, ledger: bool = False) -> list[str]:
        with self._lock:
            return [c.operation for c in self.calls[mark:] if ledger or c.service != "dynamodb"]

    # --- request handling (called from server threads) ----------------------------------

    def handle(
        self, service: Service, operation: str, params: dict[str, Any]
    ) -> tuple[_Answer | _Hangup, float]:
        """The answer to send (or a hang-up) and a delay before sending it."""
        answer, delay = self._answer(service, operation, params)
        if isinstance(answer, _Answer) and operation == "HeadObject" and answer.status >= 300:
            # A HEAD answer has no body: S3 sends only the status (botocore makes the
            # error code of it, "404"), see the HeadObject API reference.
            answer = replace(answer, body=b"")
        return answer, delay

    def _answer(
        self, service: Service, operation: str, params: dict[str, Any]
    ) -> tuple[_Answer | _Hangup, float]:
        with self._lock:
            self.calls.append(Call(service, operation, params))
            queue = self._faults.get(operation)
            fault = queue.popleft() if queue else None
        if fault is not None and fault.kind == "slow":
            self._stopping.wait(fault.seconds)
        if fault is not None and fault.kind in ("hang", "reset"):
            return _Hangup(reset=fault.kind == "reset"), fault.seconds
        if fault is not None and fault.kind in ("throttle", "server_error", "error"):
            return self._error_answer(service, fault), 0.0
        with self._lock:
            if fault is not None and fault.kind == "rival":
                self._rival(params)
            answer = self._work(service, operation, params)
        if fault is not None and fault.kind == "lose_response":
            if fault.how in ("drop", "reset"):
                return _Hangup(reset=fault.how == "reset"), 0.0
            if fault.how == "server_error":
                return self._error_answer(service, Fault("server_error", status=500)), 0.0
            return answer, fault.seconds
        return answer, 0.0

    def wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _work(self, service: Service, operation: str, params: dict[str, Any]) -> _Answer:
        try:
            self._authorize(service, operation, params)
            if service == "dynamodb":
                return self._work_dynamodb(operation, params)
            if service == "sagemaker":
                return self._work_sagemaker(operation, params)
            if service == "cloudformation":
                return self._work_cloudformation(operation, params)
            if service == "bedrock":
                return self._work_bedrock(operation, params)
            if service == "monitoring":
                return self._work_cloudwatch(operation, params)
            if service == "sns":
                payload = self.monitoring.work_sns(operation, params)
                self._check_answer("sns", operation, payload)
                return _xml_answer(200, self.monitoring.sns_document(operation, payload))
            if service == "eks":
                payload = self.hyperpod.work_eks(operation, params)
                self._check_answer("eks", operation, payload)
                return _Answer(200, "application/json", json.dumps(_jsonable(payload)).encode())
            if service == "s3":
                s3_handler = _S3_OPERATIONS.get(operation)
                if s3_handler is None:
                    served = (
                        f"S3 {operation}" if operation else "an S3 call of this method and path"
                    )
                    raise _ApiError("NotImplemented", f"The fake does not serve {served}.", 501)
                return s3_handler(self, params)
            ec2_handler = _EC2_OPERATIONS.get(operation)
            if ec2_handler is None:
                raise _ApiError("InvalidAction", f"no action {operation}")
            errors = service_model.ec2_input_errors(operation, params)
            if errors:
                raise _ApiError("UnknownParameter", "; ".join(errors))
            return _xml_answer(200, ec2_handler(self, params))
        except _ApiError as exc:
            return _api_error_answer(service, exc)

    def _work_cloudwatch(self, operation: str, params: dict[str, Any]) -> _Answer:
        payload = self.monitoring.work_cloudwatch(operation, params)
        if payload is None:  # PutMetricData has no output shape: an empty body.
            return _Answer(200, monitoring.JSON_CONTENT_TYPE, b"")
        self.violations.extend(  # botocore names CloudWatch's model cloudwatch
            f"{operation} answer: {error}"
            for error in service_model.output_errors("cloudwatch", operation, payload)
        )
        body = json.dumps(_jsonable(payload)).encode()
        return _Answer(200, monitoring.JSON_CONTENT_TYPE, body)

    def _work_sagemaker(self, operation: str, params: dict[str, Any]) -> _Answer:
        handler = _SAGEMAKER_OPERATIONS.get(operation)
        if handler is None:
            raise _ApiError("UnknownOperationException", f"no operation {operation}")
        errors = service_model.json_input_errors("sagemaker", operation, params)
        if errors:
            raise _ApiError("ValidationException", service_model.validation_message(errors))
        payload = _jsonable(handler(self, params))
        tolerated = training_jobs.TOLERATED_ANSWER_ERRORS.get(operation, frozenset())
        self.violations.extend(
            f"{operation} answer: {error}"
            for error in service_model.json_output_errors("sagemaker", operation, payload)
            if error not in tolerated
        )
        return _json_answer(200, payload)

    def _work_cloudformation(self, operation: str, params: dict[str, Any]) -> _Answer:
        handler = _CLOUDFORMATION_OPERATIONS.get(operation)
        if handler is None:
            raise _ApiError("InvalidAction", f"no action {operation}")
        # CloudFormation answers constraint violations with ValidationError in the
        # Coral wording ("1 validation error detected: Value ... at 'stackName' ...",
        # aws/aws-sam-cli#4979). What it answers to a parameter its model lacks is not
        # documented; the fake refuses it the same way (stricter, never looser).
        errors = service_model.query_input_errors("cloudformation", operation, params)
        if errors:
            raise _ApiError("ValidationError", service_model.validation_message(errors))
        payload = handler(self, service_model.query_input("cloudformation", operation, params))
        self._check_answer("cloudformation", operation, payload)
        members = service_model.xml_members("cloudformation", operation, payload)
        # The query protocol's envelope: <OpResponse><OpResult>members</OpResult>...
        document = (
            f'<?xml version="1.0" encoding="UTF-8"?>'
            f'<{operation}Response xmlns="{CLOUDFORMATION_NAMESPACE}">'
            f"<{operation}Result>{members}</{operation}Result>"
            f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
            f"</{operation}Response>"
        )
        return _xml_answer(200, document)

    def _work_dynamodb(self, operation: str, params: dict[str, Any]) -> _Answer:
        """Checked, authorized and answered by `dynamodb.py` (its answers checked there)."""
        answer = self.dynamodb.handle(operation, params, principal=self.principal)
        self.violations.extend(self.dynamodb.violations)
        self.dynamodb.violations.clear()
        return _Answer(answer.status, dynamodb.CONTENT_TYPE, answer.body, answer.headers)

    def _work_bedrock(self, operation: str, params: dict[str, Any]) -> _Answer:
        try:
            answer = self.bedrock.handle(operation, params)
        except bedrock.BedrockError as exc:
            raise _ApiError(exc.code, exc.message, exc.status) from None
        self.violations.extend(self.bedrock.violations)
        self.bedrock.violations.clear()
        return _Answer(answer.status, "application/json", bedrock.body(answer.payload))

    def _authorize(self, service: Service, operation: str, params: dict[str, Any]) -> None:
        if self.principal is None or service in ("s3", "dynamodb"):
            # S3 authorizes in its operations (a missing key asks for ListBucket), and so
            # does DynamoDB (dynamodb:LeadingKeys needs the table's key schema).
            return
        if service == "bedrock":
            return  # Bedrock's resource-level permissions are not modelled (yet)
        for request in self._authorizations(service, operation, params):
            decision = iam.authorize(self.principal.statements, request)
            if decision == "allowed":
                continue
            if service in ("monitoring", "sns"):
                message = iam.denial_message(self.account, self.principal, request, decision)
                raise self.monitoring.denied(service, message, request)
            if service == "ec2":
                # EC2 answers 403 and an encoded message, see docs.aws.amazon.com/AWSEC2/
                # latest/APIReference/query-api-troubleshooting.html#unauthorized-operation
                raise _ApiError(
                    "UnauthorizedOperation",
                    "You are not authorized to perform this operation.",
                    status=403,
                )
            message = iam.denial_message(self.account, self.principal, request, decision)
            if service == "cloudformation":
                # AccessDenied, HTTP 403 (e.g. anomalyco/sst#3006, runs-on/runs-on#27).
                raise _ApiError("AccessDenied", message, status=403)
            raise _ApiError("AccessDeniedException", message)

    def _authorizations(
        self, service: Service, operation: str, params: dict[str, Any]
    ) -> list[iam.Request]:
        """What the service authorizes for a call, per the Service Authorization Reference
        (docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html
        and list_amazonec2.html): Search/List and EC2's Describe* have no resource-level
        permissions (Resource '*'); DescribeTrainingPlan and CreateTrainingPlan act on the
        plan (training-plan/<name>). A purchase also creates the plan's reserved capacities
        and, with Tags, tags both on create: SageMaker documents CreateTrainingPlan with
        CreateReservedCapacity and AddTags under sagemaker:TaggingAction
        (docs.aws.amazon.com/sagemaker/latest/dg/training-plan-iam-permissions.html, and
        the managed policy AmazonSageMakerTrainingPlanCreateAccess).
        """
        action = f"{service}:{operation}"
        if service in ("monitoring", "sns"):
            return self.monitoring.authorizations(service, operation, params)
        if service == "cloudformation":
            return self._cloudformation_authorizations(action, params)
        if service == "eks" and operation == "DescribeCluster":
            # On the cluster (resource type cluster, arn:aws:eks:<region>:<account>:
            # cluster/<name>: list_amazonelastickubernetesservice.html).
            name = str(params.get("name", ""))
            return [iam.Request(action, f"arn:aws:eks:{REGION}:{self.account}:cluster/{name}")]
        if service == "sagemaker" and operation in (
            "DescribeCluster",
            "ListClusterNodes",
            "StartClusterHealthCheck",
        ):
            # On the cluster (resource type cluster, list_amazonsagemaker.html), whose ARN
            # ends in the ID SageMaker gave it, also when the call names it by name; with
            # its tags as aws:ResourceTag/<key>, a condition key of that resource type.
            name = str(params["ClusterName"])
            tagged: dict[str, str | tuple[str, ...]] = dict(self.hyperpod.resource_tags(name))
            return [iam.Request(action, self.hyperpod.cluster_arn(name), tagged)]
        if operation in _TRAINING_JOB_OPERATIONS and operation != "ListTrainingJobs":
            # On the training job (and the plan it uses, the tags it adds, the role it
            # passes): training_jobs.py says which and why.
            return self.training_jobs.authorizations(operation, params)
        if operation == "DescribeTrainingPlanExtensionHistory":
            return [iam.Request(action, str(params.get("TrainingPlanArn", "")))]
        if operation in ("AddTags", "DeleteTags", "ListTags"):
            # On the tagged resource (training-plan is among their resource types); the
            # keys written or deleted are the multivalued aws:TagKeys.
            keys = [t.get("Key", "") for t in params.get("Tags") or []]
            keys += list(params.get("TagKeys") or [])
            context: dict[str, str | tuple[str, ...]] = {}
            if operation != "ListTags":
                context["aws:TagKeys"] = tuple(str(k) for k in keys)
            return [iam.Request(action, str(params.get("ResourceArn", "")), context)]
        if operation == "ExtendTrainingPlan":
            owner = next(
                (
                    plan
                    for plan, offered in self.extension_offerings.items()
                    for o in offered
                    if o["TrainingPlanExtensionOfferingId"]
                    == params.get("TrainingPlanExtensionOfferingId")
                ),
                "",
            )
            return [iam.Request(action, self._plan_arn(owner))]
        if operation not in ("DescribeTrainingPlan", "CreateTrainingPlan"):
            return [iam.Request(action, "*")]
        name = str(params.get("TrainingPlanName", ""))
        plan = self._plan_arn(name)
        if operation == "DescribeTrainingPlan":
            return [iam.Request(action, plan)]
        offering = next(
            (
                o
                for o in self.offerings
                if o["TrainingPlanOfferingId"] == params.get("TrainingPlanOfferingId")
            ),
            None,
        )
        count = len(offering["ReservedCapacityOfferings"]) if offering else 1
        capacities = [self._reserved_capacity_arn(name, i) for i in range(count)]
        requests = [iam.Request(action, plan)]
        requests += [iam.Request("sagemaker:CreateReservedCapacity", c) for c in capacities]
        if params.get("Tags"):
            requests.append(
                iam.Request(
                    "sagemaker:AddTags", plan, {"sagemaker:TaggingAction": "CreateTrainingPlan"}
                )
            )
            requests += [
                iam.Request(
                    "sagemaker:AddTags", c, {"sagemaker:TaggingAction": "CreateReservedCapacity"}
                )
                for c in capacities
            ]
        return requests

    def _cloudformation_authorizations(
        self, action: str, params: dict[str, Any]
    ) -> list[iam.Request]:
        """DescribeStacks acts on the stack (list_awscloudformation.html, resource type
        stack: arn:aws:cloudformation:<region>:<account>:stack/<name>/<id>). Named, the
        service asks for stack/<name>/* (aws-samples/aws-hpc-tutorials#271); by its ID,
        for that ARN. Without a name it describes every stack and needs ListStacks too
        (API_DescribeStacks.html), which the service asks for on stack/*/*
        (jogold/cloudstructs#217); DescribeStacks itself then on '*', as the reference
        page's deny example (NotResource stack/*/*) implies.
        """
        name = params.get("StackName")
        if not name:
            every = f"arn:aws:cloudformation:{REGION}:{self.account}:stack/*/*"
            return [iam.Request(action, "*"), iam.Request("cloudformation:ListStacks", every)]
        if str(name).startswith("arn:"):
            return [iam.Request(action, str(name))]
        return [
            iam.Request(action, f"arn:aws:cloudformation:{REGION}:{self.account}:stack/{name}/*")
        ]

    def _plan_arn(self, name: str) -> str:
        return f"arn:aws:sagemaker:{REGION}:{self.account}:training-plan/{name}"

    def _reserved_capacity_arn(self, name: str, index: int) -> str:
        return f"arn:aws:sagemaker:{REGION}:{self.account}:reserved-capacity/{name}-{index}"

    def _error_answer(self, service: Service, fault: Fault) -> _Answer:
        if fault.kind == "error":
            return _api_error_answer(service, _ApiError(fault.code, fault.message, fault.status))
        # Each service's own throttling and internal errors: SageMaker's JSON codes,
        # EC2's (docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html),
        # CloudFormation's Throttling / Rate exceeded (ansible/ansible-modules-core#224),
        # S3's SlowDown and InternalError (docs.aws.amazon.com/AmazonS3/latest/API/
        # ErrorResponses.html).
        code, message, status = _FAULT_ERRORS[service][fault.kind]
        if fault.kind == "server_error":
            status = fault.status
        return _api_error_answer(service, _ApiError(code, message, status))

    # --- SageMaker ----------------------------------------------------------------------

    def _search(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("TrainingPlanArn") is not None:
            return self._search_extensions(params)
        after = service_model.json_time(params.get("StartTimeAfter"))
        before = service_model.json_time(params.get("EndTimeBefore"))
        found = [
            {**offering, "RequestedStartTimeAfter": after, "RequestedEndTimeBefore": before}
            for offering in self.offerings
            if offering["TrainingPlanOfferingId"] in self.near_matches
            or _exact_match(offering, params, after, before)
        ]
        return {"TrainingPlanOfferings": [_drop_none(o) for o in found]}

    def _create(self, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("TrainingPlanName", ""))
        if len(name) > 64 or not _PLAN_NAME.fullmatch(name):
            raise _ApiError("ValidationException", f"invalid TrainingPlanName {name!r}")
        if name in self.plans:
            raise _ApiError("ResourceInUse", f"Training plan {name} already exists.")
        offering = self._offering(params.get("TrainingPlanOfferingId"))
        return {"TrainingPlanArn": self._buy(name, offering, params.get("Tags") or [])}

    def _search_extensions(self, params: dict[str, Any]) -> dict[str, Any]:
        """Extension offerings of one plan, which must be Active or Scheduled
        (docs.aws.amazon.com/sagemaker/latest/dg/search-extension-offerings-api-cli-sdk.html:
        "DurationHours is rounded up to the nearest multiple of 24")."""
        plan = self._plan(str(params["TrainingPlanArn"]))
        if plan["Status"] not in ("Active", "Scheduled"):
            raise _ApiError(
                "ValidationException",
                f"Training plan {plan['TrainingPlanName']} is {plan['Status']}; only Active or "
                "Scheduled plans can be extended.",
            )
        wanted = params.get("DurationHours")
        days = -(-int(wanted) // 24) * 24 if wanted is not None else None
        found = [
            {**o, "StartDate": self._shown_end(plan, consume=False)}
            | {
                "EndDate": self._shown_end(plan, consume=False)
                + timedelta(hours=o["DurationHours"])
            }
            for o in self.extension_offerings.get(plan["TrainingPlanName"], [])
            if o["TrainingPlanExtensionOfferingId"] in self.near_matches
            or days is None
            or o["DurationHours"] == days
        ]
        return {"TrainingPlanOfferings": [], "TrainingPlanExtensionOfferings": found}

    def _extend(self, params: dict[str, Any]) -> dict[str, Any]:
        offering_id = params["TrainingPlanExtensionOfferingId"]
        for plan_name, offered in self.extension_offerings.items():
            for offering in offered:
                if offering["TrainingPlanExtensionOfferingId"] == offering_id:
                    self._record_extension(
                        plan_name,
                        offering_id,
                        offering["DurationHours"],
                        offering.get("UpfrontFee", ""),
                        offering.get("CurrencyCode"),
                        lag=self.extension_lag,
                    )
                    self.extension_lag = (0, 0)
                    extensions = [e.shown() for e in self.extensions[plan_name]]
                    return {"TrainingPlanExtensions": extensions}
        raise _ApiError(
            "ResourceNotFound", f"Training plan extension offering {offering_id} not found."
        )

    def _record_extension(
        self,
        plan_name: str,
        offering_id: str,
        hours: int,
        fee: str,
        currency: str | None,
        *,
        lag: tuple[int, int] = (0, 0),
    ) -> None:
        plan = self.plans[plan_name]
        start = plan["EndTime"] + timedelta(
            hours=sum(e.hours for e in self.extensions.get(plan_name, []))
        )
        zones = [s.get("AvailabilityZone") for s in plan["ReservedCapacitySummaries"]]
        self.extensions.setdefault(plan_name, []).append(
            _Extension(
                offering_id=offering_id,
                hours=hours,
                extended_at=self.now().replace(microsecond=0),
                start=start,
                zone=zones[0] if zones else None,
                zone_id=self.zones.get(zones[0] or "") if zones else None,
                fee=fee,
                currency=currency,
                statuses=deque(self.extension_statuses),
                hidden_history=lag[0],
                hidden_describe=lag[1],
            )
        )

    def _extension_history(self, params: dict[str, Any]) -> dict[str, Any]:
        plan = self._plan(str(params["TrainingPlanArn"]))
        shown = []
        for extension in self.extensions.get(plan["TrainingPlanName"], []):
            if extension.hidden_history > 0:
                extension.hidden_history -= 1
                continue
            entry = extension.shown(advance=True)
            if self.history_omits_duration_hours:
                entry.pop("DurationHours", None)
            shown.append(entry)
        if self.history_newest_first:
            shown.reverse()
        start = int(params.get("NextToken") or 0)
        size = min(int(params.get("MaxResults") or self.history_page_size), self.history_page_size)
        answer: dict[str, Any] = {"TrainingPlanExtensions": shown[start : start + size]}
        if start + size < len(shown):
            answer["NextToken"] = str(start + size)
        return answer

    def _tagged(self, arn: str) -> list[dict[str, str]]:
        """The tags of a training plan (the only resources the fake tags)."""
        plan = self._plan(arn)
        if arn != plan["TrainingPlanArn"]:  # the tag APIs take the ARN, never the name
            raise _ApiError("ValidationException", f"{arn} is not a resource ARN.")
        return self.tags.setdefault(arn, [])

    def tag_plan(self, name: str, key: str, value: str) -> None:
        """A tag on a plan, put there before the test (by an earlier version, or by hand)."""
        with self._lock:
            self._add_tags(
                {
                    "ResourceArn": self._plan(name)["TrainingPlanArn"],
                    "Tags": [{"Key": key, "Value": value}],
                }
            )

    def _add_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        """Adds or overwrites (API_AddTags.html: "Tag keys must be unique per resource")."""
        tags = self._tagged(str(params["ResourceArn"]))
        for tag in params.get("Tags") or []:
            tags[:] = [t for t in tags if t["Key"] != tag["Key"]]
            tags.append({"Key": tag["Key"], "Value": tag.get("Value", "")})
        return {"Tags": list(params.get("Tags") or [])}

    def _list_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        tags = self._tagged(str(params["ResourceArn"]))
        start = int(params.get("NextToken") or 0)
        size = min(int(params.get("MaxResults") or self.tag_page_size), self.tag_page_size)
        answer: dict[str, Any] = {"Tags": [dict(t) for t in tags[start : start + size]]}
        if start + size < len(tags):
            answer["NextToken"] = str(start + size)
        return answer

    def _delete_tags(self, params: dict[str, Any]) -> dict[str, Any]:
        """Keys the resource does not have are ignored."""
        tags = self._tagged(str(params["ResourceArn"]))
        tags[:] = [t for t in tags if t["Key"] not in set(params.get("TagKeys") or [])]
        return {}

    def tag_values(self, plan: str) -> dict[str, str]:
        """A plan's tags, key -> value (for assertions)."""
        with self._lock:
            return {t["Key"]: t["Value"] for t in self.tags.get(self._plan_arn(plan), [])}

    def _shown_end(self, plan: dict[str, Any], *, consume: bool) -> datetime:
        """The plan's end moved by the extensions a describe sees."""
        end: datetime = plan["EndTime"]
        for extension in self.extensions.get(plan["TrainingPlanName"], []):
            if extension.hidden_describe > 0:
                if consume:
                    extension.hidden_describe -= 1
                continue
            if extension.statuses[0][0] != "Failed":  # a failed purchase adds no time
                end += timedelta(hours=extension.hours)
        return end

    def _describe(self, params: dict[str, Any]) -> dict[str, Any]:
        plan = self._plan(str(params.get("TrainingPlanName", "")))
        script = self._scripts.get(plan["TrainingPlanName"])
        if script:
            self._set_status(plan, *script[0])
            if len(script) > 1:
                script.popleft()
        shown = {k: v for k, v in plan.items() if v not in (None, "")}
        if plan["TrainingPlanName"] in self.unhealthy_counts:
            shown["UnhealthyInstanceCount"] = self.unhealthy_counts[plan["TrainingPlanName"]]
        if self.extensions.get(plan["TrainingPlanName"]):
            end = self._shown_end(plan, consume=True)
            # "updates your training plan's end date" (training-plan-extension-using-api-
            # cli-sdk.html); what else an extension changes in the describe is not documented.
            shown["EndTime"] = end
        if not self.describe_includes_zone_id:
            shown["ReservedCapacitySummaries"] = [
                {k: v for k, v in s.items() if k != "AvailabilityZoneId"}
                for s in plan["ReservedCapacitySummaries"]
            ]
        return shown

    def _list(self, params: dict[str, Any]) -> dict[str, Any]:
        statuses = {f["Value"] for f in params.get("Filters") or [] if f.get("Name") == "Status"}
        plans = [
            p for name, p in sorted(self.plans.items()) if not statuses or p["Status"] in statuses
        ]
        start = int(params.get("NextToken") or 0)
        size = int(params.get("MaxResults") or 100)
        page = plans[start : start + size]
        # The plan record holds exactly the members a TrainingPlanSummary has.
        answer: dict[str, Any] = {
            "TrainingPlanSummaries": [
                {k: v for k, v in p.items() if v not in (None, "")} for p in page
            ]
        }
        if start + size < len(plans):
            answer["NextToken"] = str(start + size)
        return answer

    def _plan_of_arn(self, arn: str) -> dict[str, Any] | None:
        """The plan of that ARN as it is now (no status script advanced), or None."""
        return next((p for p in self.plans.values() if p["TrainingPlanArn"] == arn), None)

    def _offering(self, offering_id: Any) -> dict[str, Any]:
        for offering in self.offerings:
            if offering["TrainingPlanOfferingId"] == offering_id:
                return offering
        raise _ApiError("ResourceNotFound", f"Training plan offering {offering_id} not found.")

    def _plan(self, name_or_arn: str) -> dict[str, Any]:
        for plan in self.plans.values():
            if name_or_arn in (plan["TrainingPlanName"], plan["TrainingPlanArn"]):
                return plan
        raise _ApiError("ResourceNotFound", f"Training plan {name_or_arn} not found.")

    def _buy(self, name: str, offering: dict[str, Any], tags: list[dict[str, str]]) -> str:
        arn = self._plan_arn(name)
        capacity = offering["ReservedCapacityOfferings"]
        self.plans[name] = {
            "TrainingPlanArn": arn,
            "TrainingPlanName": name,
            "Status": "Pending",
            "StatusMessage": "",
            "DurationHours": offering["DurationHours"],
            "DurationMinutes": 0,
            "StartTime": min(r["StartTime"] for r in capacity),
            "EndTime": max(r["EndTime"] for r in capacity),
            "UpfrontFee": offering["UpfrontFee"],
            "CurrencyCode": offering["CurrencyCode"],
            "TotalInstanceCount": sum(r["InstanceCount"] for r in capacity),
            "AvailableInstanceCount": sum(r["InstanceCount"] for r in capacity),
            "InUseInstanceCount": 0,
            "TargetResources": list(offering["TargetResources"]),
            "ReservedCapacitySummaries": [
                _drop_none(
                    {
                        "ReservedCapacityArn": self._reserved_capacity_arn(name, i),
                        "ReservedCapacityType": "Instance",
                        "InstanceType": r["InstanceType"],
                        "TotalInstanceCount": r["InstanceCount"],
                        "Status": "Pending",
                        "AvailabilityZone": r["AvailabilityZone"],
                        "AvailabilityZoneId": self.zones.get(r["AvailabilityZone"]),
                        "DurationHours": r["DurationHours"],
                        "DurationMinutes": 0,
                        "StartTime": r["StartTime"],
                        "EndTime": r["EndTime"],
                    }
                )
                for i, r in enumerate(capacity)
            ],
        }
        self.tags[arn] = list(tags)
        script = self._scripts.setdefault(name, deque(self.default_statuses))
        self._set_status(self.plans[name], *script[0])
        return arn

    def _rival(self, params: dict[str, Any]) -> None:
        name = str(params.get("TrainingPlanName", ""))
        if name not in self.plans:
            self._buy(name, self._offering(params.get("TrainingPlanOfferingId")), [])

    @staticmethod
    def _set_status(plan: dict[str, Any], status: str, message: str) -> None:
        plan["Status"] = status
        plan["StatusMessage"] = message
        for summary in plan["ReservedCapacitySummaries"]:
            summary["Status"] = status

    # --- EC2 ----------------------------------------------------------------------------

    def _describe_availability_zones(self, params: dict[str, Any]) -> str:
        names = _indexed(params, "ZoneName")
        ids = _indexed(params, "ZoneId")
        filters = _filters(params)
        items = []
        for name, zone_id in sorted(self.zones.items()):
            if (names and name not in names) or (ids and zone_id not in ids):
                continue
            if not _filter_ok(filters, {"zone-name": name, "zone-id": zone_id}):
                continue
            items.append(
                _xml_item(
                    {
                        "optInStatus": "opt-in-not-required",
                        "zoneState": "available",
                        "regionName": REGION,
                        "zoneName": name,
                        "zoneId": zone_id,
                        "groupName": REGION,
                        "networkBorderGroup": REGION,
                        "zoneType": "availability-zone",
                    }
                )
            )
        return _ec2_document(
            "DescribeAvailabilityZonesResponse",
            f"<availabilityZoneInfo>{''.join(items)}</availabilityZoneInfo>",
        )

    def _describe_subnets(self, params: dict[str, Any]) -> str:
        wanted = _indexed(params, "SubnetId")
        filters = _filters(params)
        items = []
        for subnet in self.subnets:
            zone_id = self.zones.get(subnet["Zone"], "")
            fields = {
                "subnet-id": subnet["SubnetId"],
                "vpc-id": subnet["VpcId"],
                "availability-zone": subnet["Zone"],
                "availability-zone-id": zone_id,
            }
            if (wanted and subnet["SubnetId"] not in wanted) or not _filter_ok(filters, fields):
                continue
            items.append(
                _xml_item(
                    {
                        "subnetId": subnet["SubnetId"],
                        "subnetArn": (
                            f"arn:aws:ec2:{REGION}:{self.account}:subnet/{subnet['SubnetId']}"
                        ),
                        "state": "available",
                        "vpcId": subnet["VpcId"],
                        "ownerId": self.account,
                        "cidrBlock": "10.0.0.0/21",
                        "availableIpAddressCount": "2043",
                        "availabilityZone": subnet["Zone"],
                        "availabilityZoneId": zone_id,
                        "defaultForAz": "false",
                        "mapPublicIpOnLaunch": "false",
                    }
                )
            )
        return _ec2_document("DescribeSubnetsResponse", f"<subnetSet>{''.join(items)}</subnetSet>")

    # --- CloudFormation -----------------------------------------------------------------

    def _describe_stacks(self, params: dict[str, Any]) -> dict[str, Any]:
        """One stack by name or StackId, else every stack not deleted, a page at a time
        (docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html).
        """
        name = params.get("StackName")
        if name is not None:
            if not re.fullmatch(STACK_NAME_PATTERN, name):
                violation = (
                    f"Value {name!r} at 'stackName' failed to satisfy constraint: Member "
                    f"must satisfy regular expression pattern: {STACK_NAME_PATTERN}"
                )
                raise _ApiError("ValidationError", service_model.validation_message([violation]))
            return {"Stacks": [self._stack(name)]}
        live = [s for s in self.stacks if s["StackStatus"] != "DELETE_COMPLETE"]
        token = params.get("NextToken") or "0"
        if not token.isdigit():
            raise _ApiError("ValidationError", f"Invalid NextToken {token!r}")  # the fake's words
        start = int(token)
        answer: dict[str, Any] = {"Stacks": live[start : start + self.stack_page_size]}
        if start + self.stack_page_size < len(live):
            answer["NextToken"] = str(start + self.stack_page_size)
        return answer

    def _describe_stack_resource(self, params: dict[str, Any]) -> dict[str, Any]:
        """One resource of a stack by logical ID (docs.aws.amazon.com/AWSCloudFormation/
        latest/APIReference/API_DescribeStackResource.html)."""
        stack = self._stack(str(params["StackName"]))
        logical_id = str(params["LogicalResourceId"])
        resource = self.stack_resources.get(stack["StackId"], {}).get(logical_id)
        if resource is None:
            # The service's words (ValidationError, HTTP 400), as in aws/aws-cli#2532.
            raise _ApiError(
                "ValidationError",
                f"Resource {logical_id} does not exist for stack {stack['StackName']}",
            )
        detail: dict[str, Any] = {
            "StackName": stack["StackName"],
            "StackId": stack["StackId"],
            "LogicalResourceId": logical_id,
            "PhysicalResourceId": resource.physical_id or f"{logical_id}-physical",
            "ResourceType": resource.resource_type,
            "LastUpdatedTimestamp": resource.updated,
            "ResourceStatus": resource.status,
        }
        if resource.reason:
            detail["ResourceStatusReason"] = resource.reason
        return {"StackResourceDetail": detail}

    def _stack(self, name_or_id: str) -> dict[str, Any]:
        # The newest stack of that name, unless deleted; a deleted one by its StackId only.
        stack: dict[str, Any]
        for stack in reversed(self.stacks):
            if name_or_id == stack["StackId"] or (
                name_or_id == stack["StackName"] and stack["StackStatus"] != "DELETE_COMPLETE"
            ):
                return stack
        # ValidationError, HTTP 400 (boto/boto3#2807 shows the service's answer).
        raise _ApiError("ValidationError", f"Stack with id {name_or_id} does not exist")

    # --- S3 -----------------------------------------------------------------------------

    def _put_object(self, params: dict[str, Any]) -> _Answer:
        """PutObject: s3:PutObject on the object (list_amazons3.html); the object is
        stored whole, replacing one of that key (versioning is not modelled), and the
        answer carries its ETag, as PutObject's output shape (a header) says."""
        objects = self._s3_bucket("PutObject", params)
        bucket, key = params["Bucket"], params["Key"]
        self._s3_authorize("s3:PutObject", f"arn:aws:s3:::{bucket}/{key}")
        body = params.get("Body", b"")
        length = params.get("ContentLength")
        if length is not None and int(length) != len(body):
            raise _ApiError(
                "IncompleteBody",
                "You did not provide the number of bytes specified by the "
                "Content-Length HTTP header",
                400,
            )
        crc = params.get("ChecksumCRC32")
        if crc is not None:
            # S3 checks the checksum it is sent against the bytes ("BadDigest: The CRC32 you
            # specified did not match the calculated checksum", checking-object-integrity.html).
            actual = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
            if crc != actual:
                raise _ApiError(
                    "BadDigest", "The CRC32 you specified did not match the calculated checksum."
                )
        content_type = str(params.get("ContentType") or "binary/octet-stream")
        stored = S3Object(
            bytes(body), self.now().astimezone(UTC).replace(microsecond=0), content_type
        )
        objects[key] = stored
        self.put_requests.append({k: v for k, v in params.items() if k != "Body"})
        payload = {"ETag": stored.etag}
        self._check_answer("s3", "PutObject", payload)
        headers = tuple(service_model.header_members("s3", "PutObject", payload))
        return _Answer(200, "application/xml", b"", headers)

    def _get_object(self, params: dict[str, Any]) -> _Answer:
        return self._object_answer("GetObject", params)

    def _head_object(self, params: dict[str, Any]) -> _Answer:
        return self._object_answer("HeadObject", params)

    def _object_answer(self, operation: str, params: dict[str, Any]) -> _Answer:
        """GetObject and HeadObject: both need s3:GetObject on the object; a missing key
        is NoSuchKey (404) only for a caller that may also s3:ListBucket the bucket, else
        AccessDenied (403) (the API reference of both, in botocore's model).
        """
        objects = self._s3_bucket(operation, params)
        bucket, key = params["Bucket"], params["Key"]
        self._s3_authorize("s3:GetObject", f"arn:aws:s3:::{bucket}/{key}")
        stored = objects.get(key)
        if stored is None:
            if not self._s3_allows("s3:ListBucket", f"arn:aws:s3:::{bucket}"):
                raise _ApiError("AccessDenied", "Access Denied", 403)
            raise _ApiError(
                "NoSuchKey", "The specified key does not exist.", 404, details=[("Key", key)]
            )
        payload = {
            "AcceptRanges": "bytes",
            "LastModified": stored.last_modified,
            "ContentLength": len(stored.body),
            "ETag": stored.etag,
            "ContentType": stored.content_type,
        }
        self._check_answer("s3", operation, payload)
        headers = tuple(service_model.header_members("s3", operation, payload))
        body = stored.body if operation == "GetObject" else b""
        return _Answer(200, stored.content_type, body, headers)

    def _list_objects_v2(self, params: dict[str, Any]) -> _Answer:
        """One page of a bucket's keys in UTF-8 binary order, keys sharing Prefix..Delimiter
        rolled into one CommonPrefixes entry that counts once against MaxKeys and in
        KeyCount (API_ListObjectsV2.html; KeyCount counts both, getmoto/moto#2375). With
        EncodingType=url, which botocore sends unasked and decodes, keys come URL-encoded.
        """
        objects = self._s3_bucket("ListObjectsV2", params)
        bucket = params["Bucket"]
        prefix, delimiter = params.get("Prefix", ""), params.get("Delimiter", "")
        max_keys = params.get("MaxKeys", 1000)
        if not isinstance(max_keys, int) or max_keys < 0:
            raise _ApiError(
                "InvalidArgument", "Provided max-keys not an integer or within integer range"
            )
        # ListBucket's condition keys (list_amazons3.html): s3:prefix, s3:delimiter, s3:max-keys.
        context = {key: str(params[member]) for member, key in _LIST_CONDITIONS if member in params}
        self._s3_authorize("s3:ListBucket", f"arn:aws:s3:::{bucket}", context)
        start_after = params.get("StartAfter", "")
        entries = _listing(objects, prefix, delimiter, start_after)
        token = params.get("ContinuationToken")
        marker = _continuation_marker(token) if token is not None else ""
        first = next((i for i, (n, _) in enumerate(entries) if n.encode() > marker.encode()), None)
        first = len(entries) if first is None else first
        page = entries[first : first + min(max_keys, 1000)]
        truncated = bool(page) and first + len(page) < len(entries)
        url = params.get("EncodingType") == "url"

        def shown(text: str) -> str:
            return quote_plus(text, safe="/") if url else text

        payload: dict[str, Any] = {"Name": bucket, "Prefix": shown(prefix)}
        if token is not None:
            payload["ContinuationToken"] = token
        if truncated:
            payload["NextContinuationToken"] = _continuation_token(page[-1][0])
        payload["KeyCount"] = len(page)
        payload["MaxKeys"] = max_keys
        if delimiter:
            payload["Delimiter"] = shown(delimiter)
        if url:
            payload["EncodingType"] = "url"
        if start_after:
            payload["StartAfter"] = shown(start_after)
        payload["IsTruncated"] = truncated
        payload["Contents"] = [
            {
                "Key": shown(name),
                "LastModified": stored.last_modified,
                "ETag": stored.etag,
                "Size": len(stored.body),
                "StorageClass": "STANDARD",
            }
            for name, stored in page
            if stored is not None
        ]
        payload["CommonPrefixes"] = [{"Prefix": shown(n)} for n, stored in page if stored is None]
        self._check_answer("s3", "ListObjectsV2", payload)
        members = service_model.xml_members("s3", "ListObjectsV2", payload)
        document = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<ListBucketResult xmlns="{S3_NAMESPACE}">{members}</ListBucketResult>'
        )
        return _Answer(200, "application/xml", document.encode())

    def _s3_bucket(self, operation: str, params: dict[str, Any]) -> dict[str, S3Object]:
        """The bucket's objects, after the checks S3 makes before any permission."""
        unserved = sorted(set(params) - _S3_SERVED_MEMBERS[operation])
        if unserved:
            # Say so rather than answer as if they were not sent (a Range, a version).
            raise _ApiError(
                "NotImplemented", f"The fake does not serve {', '.join(unserved)}.", 501
            )
        if params.get("EncodingType", "url") != "url":
            raise _ApiError("InvalidArgument", "Invalid Encoding Method specified in Request")
        objects = self.buckets.get(params["Bucket"])
        if objects is None:
            raise _ApiError(
                "NoSuchBucket",
                "The specified bucket does not exist",
                404,
                details=[("BucketName", params["Bucket"])],
            )
        owner = params.get("ExpectedBucketOwner")
        if owner is not None and owner != self.account:
            # Another owner than expected: 403 (ExpectedBucketOwner in the API reference).
            raise _ApiError("AccessDenied", "Access Denied", 403)
        return objects

    def _s3_allows(
        self, action: str, resource: str, context: Mapping[str, str] | None = None
    ) -> bool:
        if self.principal is None:
            return True
        request = iam.Request(action, resource, dict(context or {}))
        return iam.authorize(self.principal.statements, request) == "allowed"

    def _s3_authorize(
        self, action: str, resource: str, context: Mapping[str, str] | None = None
    ) -> None:
        """S3 refuses with AccessDenied (403), quoting the resource in its message
        (aws-samples/serverless-patterns#2457, aws-ia/terraform-aws-bedrock#41)."""
        if self.principal is None:
            return
        request = iam.Request(action, resource, dict(context or {}))
        decision = iam.authorize(self.principal.statements, request)
        if decision != "allowed":
            message = iam.denial_message(
                self.account, self.principal, request, decision, quote_resource=True
            )
            raise _ApiError("AccessDenied", message, 403)

    def _check_answer(self, service: Service, operation: str, payload: dict[str, Any]) -> None:
        self.violations.extend(
            f"{operation} answer: {error}"
            for error in service_model.output_errors(service, operation, payload)
        )


_SAGEMAKER_OPERATIONS = {
    "SearchTrainingPlanOfferings": FakeControlPlane._search,
    "CreateTrainingPlan": FakeControlPlane._create,
    "DescribeTrainingPlan": FakeControlPlane._describe,
    "ListTrainingPlans": FakeControlPlane._list,
    "ExtendTrainingPlan": FakeControlPlane._extend,
    "DescribeTrainingPlanExtensionHistory": FakeControlPlane._extension_history,
    "AddTags": FakeControlPlane._add_tags,
    "ListTags": FakeControlPlane._list_tags,
    "DeleteTags": FakeControlPlane._delete_tags,
    "DescribeCluster": lambda plane, params: plane.hyperpod.describe_cluster(params),
    "ListClusterNodes": lambda plane, params: plane.hyperpod.list_cluster_nodes(params),
    "StartClusterHealthCheck": lambda plane, params: plane.hyperpod.start_cluster_health_check(
        params
    ),
    "CreateTrainingJob": lambda plane, params: plane.training_jobs.create_training_job(params),
    "DescribeTrainingJob": lambda plane, params: plane.training_jobs.describe_training_job(params),
    "ListTrainingJobs": lambda plane, params: plane.training_jobs.list_training_jobs(params),
    "StopTrainingJob": lambda plane, params: plane.training_jobs.stop_training_job(params),
}
_TRAINING_JOB_OPERATIONS = frozenset(
    {"CreateTrainingJob", "DescribeTrainingJob", "ListTrainingJobs", "StopTrainingJob"}
)
_EC2_OPERATIONS = {
    "DescribeAvailabilityZones": FakeControlPlane._describe_availability_zones,
    "DescribeSubnets": FakeControlPlane._describe_subnets,
}
_CLOUDFORMATION_OPERATIONS = {
    "DescribeStacks": FakeControlPlane._describe_stacks,
    "DescribeStackResource": FakeControlPlane._describe_stack_resource,
}
_S3_OPERATIONS = {
    "PutObject": FakeControlPlane._put_object,
    "GetObject": FakeControlPlane._get_object,
    "HeadObject": FakeControlPlane._head_object,
    "ListObjectsV2": FakeControlPlane._list_objects_v2,
}
# The request members the fake honours; anything else botocore sends is refused.
_OBJECT_MEMBERS = {"Bucket", "Key", "ChecksumMode", "ExpectedBucketOwner"}
_S3_SERVED_MEMBERS = {
    # PutObject: the object and what botocore adds unasked (its checksum members); SSE,
    # ACLs, tags, Object Lock and the rest are refused rather than ignored.
    "PutObject": {
        "Bucket",
        "Key",
        "Body",
        "ContentLength",
        "ContentMD5",
        "ContentType",
        "ChecksumAlgorithm",
        "ChecksumCRC32",
        "ChecksumCRC32C",
        "ChecksumCRC64NVME",
        "ChecksumSHA1",
        "ChecksumSHA256",
        "ExpectedBucketOwner",
    },
    "GetObject": _OBJECT_MEMBERS,
    "HeadObject": _OBJECT_MEMBERS,
    "ListObjectsV2": {
        "Bucket",
        "Prefix",
        "Delimiter",
        "MaxKeys",
        "ContinuationToken",
        "StartAfter",
        "EncodingType",
        "ExpectedBucketOwner",
    },
}
_LIST_CONDITIONS = (
    ("Prefix", "s3:prefix"),
    ("Delimiter", "s3:delimiter"),
    ("MaxKeys", "s3:max-keys"),
)
_FAULT_ERRORS: dict[str, dict[str, tuple[str, str, int]]] = {
    "sagemaker": {
        "throttle": ("ThrottlingException", "Rate exceeded", 400),
        "server_error": ("InternalFailure", "An internal error occurred", 500),
    },
    "ec2": {
        "throttle": ("RequestLimitExceeded", "Rate exceeded", 503),
        "server_error": ("InternalError", "An internal error occurred", 500),
    },
    "cloudformation": {
        "throttle": ("Throttling", "Rate exceeded", 400),
        "server_error": ("InternalFailure", "An internal error occurred", 500),
    },
    "bedrock": {
        "throttle": ("ThrottlingException", "Too many requests, please wait.", 429),
        "server_error": ("InternalServerException", "An internal error occurred.", 500),
    },
    "eks": {
        "throttle": ("ThrottlingException", "Rate exceeded", 429),
        "server_error": ("ServerException", "An internal error occurred", 500),
    },
    # DynamoDB throttles with ThrottlingException or, on provisioned tables,
    # ProvisionedThroughputExceededException (inject that one with `error`), both HTTP 400,
    # and fails with InternalServerError, HTTP 500 (the Errors of API_PutItem.html and the
    # error shapes of botocore's model; the throttling message is the one the service gives
    # for its request rate, the fake uses it for any throttle).
    "dynamodb": {
        "throttle": (
            "ThrottlingException",
            "Rate of requests exceeds the allowed throughput.",
            400,
        ),
        "server_error": ("InternalServerError", "Internal server error", 500),
    },
    # CloudWatch and SNS (query protocol, or query-compatible): Throttling (HTTP 400), and
    # CloudWatch's InternalServiceError and SNS's InternalError (HTTP 500), as their API
    # references list them (API_PutMetricData.html, API_Publish.html).
    "monitoring": {
        "throttle": ("Throttling", "Rate exceeded", 400),
        "server_error": ("InternalServiceError", "An internal error occurred", 500),
    },
    "sns": {
        "throttle": ("Throttling", "Rate exceeded", 400),
        "server_error": ("InternalError", "An internal error occurred", 500),
    },
    "s3": {
        "throttle": ("SlowDown", "Please reduce your request rate.", 503),
        "server_error": (
            "InternalError",
            "We encountered an internal error. Please try again.",
            500,
        ),
    },
}


class _Handler(BaseHTTPRequestHandler):
    control_plane: FakeControlPlane
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: the body leaves right after the headers (a second small write). With
    # Nagle's algorithm it waits for the client's delayed ACK of the headers, some
    # 20-40 ms per call, most of a handler test's time.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def _serve(self, method: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        service, operation, params = self._request(method, body)
        answer, delay = self.control_plane.handle(service, operation, params)
        if delay:
            self.control_plane.wait(delay)
        if isinstance(answer, _Hangup):
            if answer.reset:
                # SO_LINGER with a zero timeout turns close() into a TCP reset.
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
            self.close_connection = True
            return
        given = {name.lower() for name, _ in answer.headers}
        try:
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            if "content-type" not in given:
                self.send_header("Content-Type", answer.content_type)
            if "content-length" not in given:
                self.send_header("Content-Length", str(len(answer.body)))
            request_id = str(uuid.uuid4())
            self.send_header("x-amzn-RequestId", request_id)
            if service == "s3":
                self.send_header("x-amz-request-id", request_id)
            self.end_headers()
            if method != "HEAD":
                self.wfile.write(answer.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (read timeout)

    def _request(self, method: str, body: bytes) -> tuple[Service, str, dict[str, Any]]:
        """The service (from the signature, else from the request's form), the
        operation and its parameters."""
        scope = _CREDENTIAL_SCOPE.search(self.headers.get("Authorization") or "")
        signed = scope.group(1) if scope else ""
        service: Service
        if signed in get_args(Service):
            service = signed  # type: ignore[assignment]  # checked against the Literal
        elif self.headers.get("X-Amz-Target"):
            service = "sagemaker"
        else:
            service = "ec2" if method == "POST" else "s3"
        if service == "sagemaker":
            target = self.headers.get("X-Amz-Target") or ""
            return service, target.split(".", 1)[-1], json.loads(body or b"{}")
        if service == "dynamodb":
            target = self.headers.get("X-Amz-Target") or ""
            return service, dynamodb.operation_of(target), json.loads(body or b"{}")
        if service == "monitoring":
            target = self.headers.get("X-Amz-Target") or ""
            operation = monitoring.cloudwatch_operation(target)
            # botocore gzips a PutMetricData body of 10 KiB or more (the operation's
            # requestcompression trait in its cloudwatch model, encodings [gzip]; the
            # client's request_min_compression_size_bytes, 10240 by default), saying so
            # in Content-Encoding; no other CloudWatch operation has the trait.
            if self.headers.get("Content-Encoding") == "gzip":
                assert operation == "PutMetricData", operation
                body = gzip.decompress(body)
            return service, operation, json.loads(body or b"{}")
        if service in ("ec2", "cloudformation", "sns"):
            params = dict(parse_qsl(body.decode(), keep_blank_values=True))
            operation = params.pop("Action", "")
            params.pop("Version", None)
            return service, operation, params
        url = urlsplit(self.path)
        query = parse_qsl(url.query, keep_blank_values=True)
        if service == "bedrock":
            return service, *bedrock.parse_request(
                method, url.path, query, dict(self.headers), body
            )
        rest = service_model.rest_request(service, method, url.path, query, dict(self.headers))
        if rest is None:
            return service, "", {"Method": method, "Path": url.path}
        if rest.operation == "PutObject":
            # The Body member is the request's payload (botocore's PutObject: payload Body).
            return service, rest.operation, {**rest.params, "Body": _decoded_body(self, body)}
        return service, rest.operation, rest.params


# --- wire formats -----------------------------------------------------------------------


def _decoded_body(handler: BaseHTTPRequestHandler, body: bytes) -> bytes:
    """A PUT's object bytes. botocore may send them aws-chunked (Content-Encoding
    aws-chunked, x-amz-decoded-content-length, a trailing checksum): hex size, CRLF,
    data, CRLF per chunk, a zero-size chunk, then the trailer
    (docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html)."""
    encoding = handler.headers.get("Content-Encoding") or ""
    if "aws-chunked" not in encoding:
        return body
    data, rest = b"", body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";", 1)[0], 16)
        if size == 0:
            break
        data, rest = data + rest[:size], rest[size + 2 :]
    return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _drop_none(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if v is not None}


def _json_answer(status: int, payload: dict[str, Any]) -> _Answer:
    return _Answer(status, JSON_CONTENT_TYPE, json.dumps(_jsonable(payload)).encode())


def _xml_answer(status: int, document: str) -> _Answer:
    return _Answer(status, "text/xml;charset=UTF-8", document.encode())


def _api_error_answer(service: Service, error: _ApiError) -> _Answer:
    if service == "dynamodb":
        answer = dynamodb.error_answer(error.code, error.message, error.status)
        return _Answer(answer.status, dynamodb.CONTENT_TYPE, answer.body, answer.headers)
    if service == "sagemaker":
        return _json_answer(error.status, {"__type": error.code, "message": error.message})
    if service == "bedrock":
        headers, text = bedrock.error_body(error.code, error.message)
        return _Answer(error.status, "application/json", text, headers)
    if service == "cloudformation":
        # The query protocol's ErrorResponse, as in boto/boto3#2807.
        kind = "Sender" if error.status < 500 else "Receiver"
        document = (
            f'<ErrorResponse xmlns="{CLOUDFORMATION_NAMESPACE}"><Error><Type>{kind}</Type>'
            f"<Code>{escape(error.code)}</Code><Message>{escape(error.message)}</Message>"
            f"</Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
        )
        return _xml_answer(error.status, document)
    if service == "monitoring":
        body = json.dumps({"__type": error.code, "message": error.message}).encode()
        headers = monitoring.cloudwatch_error(error.code)
        return _Answer(error.status, monitoring.JSON_CONTENT_TYPE, body, headers)
    if service == "sns":
        # The query protocol's ErrorResponse, in SNS's namespace (API_Publish.html errors).
        kind = "Sender" if error.status < 500 else "Receiver"
        document = (
            f'<ErrorResponse xmlns="{monitoring.SNS_NAMESPACE}"><Error><Type>{kind}</Type>'
            f"<Code>{escape(error.code)}</Code><Message>{escape(error.message)}</Message>"
            f"</Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
        )
        return _xml_answer(error.status, document)
    if service == "eks":
        # REST-JSON: the code in x-amzn-ErrorType, the message in the body.
        headers = (("x-amzn-ErrorType", error.code),)
        body = hyperpod.rest_json_error_body(error.message)
        return _Answer(error.status, "application/json", body, headers)
    if service == "s3":
        # S3's <Error> document (docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html),
        # naming the key or bucket as the service does (frostealth/yii2-aws-s3#25).
        details = "".join(f"<{name}>{escape(value)}</{name}>" for name, value in error.details)
        document = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{escape(error.code)}</Code><Message>{escape(error.message)}</Message>"
            f"{details}<RequestId>{uuid.uuid4().hex[:16].upper()}</RequestId>"
            f"<HostId>{base64.b64encode(uuid.uuid4().bytes).decode()}</HostId></Error>"
        )
        return _Answer(error.status, "application/xml", document.encode())
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f"<Response><Errors><Error><Code>{escape(error.code)}</Code>"
        f"<Message>{escape(error.message)}</Message></Error></Errors>"
        f"<RequestID>{uuid.uuid4()}</RequestID></Response>"
    )
    return _xml_answer(error.status, document)


def _ec2_document(root: str, inner: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><{root} xmlns="{EC2_NAMESPACE}">'
        f"<requestId>{uuid.uuid4()}</requestId>{inner}</{root}>"
    )


def _xml_item(fields: dict[str, str]) -> str:
    return "<item>" + "".join(f"<{k}>{escape(v)}</{k}>" for k, v in fields.items()) + "</item>"


def _exact_match(
    offering: dict[str, Any],
    params: dict[str, Any],
    after: datetime | None,
    before: datetime | None,
) -> bool:
    """The offering sells exactly what the search asks for."""
    capacity = offering["ReservedCapacityOfferings"]
    return (
        all(r["InstanceType"] == params.get("InstanceType", r["InstanceType"]) for r in capacity)
        and sum(r["InstanceCount"] for r in capacity)
        == params.get("InstanceCount", sum(r["InstanceCount"] for r in capacity))
        and offering["DurationHours"] == params.get("DurationHours", offering["DurationHours"])
        and all(t in offering["TargetResources"] for t in params.get("TargetResources") or [])
        and (after is None or min(r["StartTime"] for r in capacity) >= after)
        and (before is None or max(r["EndTime"] for r in capacity) <= before)
    )


def _indexed(params: dict[str, Any], prefix: str) -> list[str]:
    """EC2 query lists: Prefix.1, Prefix.2, ..."""
    pattern = re.compile(rf"{re.escape(prefix)}\.(\d+)")
    found = [(int(m.group(1)), v) for k, v in params.items() if (m := pattern.fullmatch(k))]
    return [v for _, v in sorted(found)]


def _filters(params: dict[str, Any]) -> dict[str, list[str]]:
    """EC2 query filters: Filter.N.Name and Filter.N.Value.M."""
    out: dict[str, list[str]] = {}
    for index in sorted(
        {int(m.group(1)) for k in params if (m := re.match(r"Filter\.(\d+)\.", k))}
    ):
        out[params[f"Filter.{index}.Name"]] = _indexed(params, f"Filter.{index}.Value")
    return out


def _filter_ok(filters: dict[str, list[str]], fields: dict[str, str]) -> bool:
    return all(fields.get(name) in values for name, values in filters.items())


def _listing(
    objects: Mapping[str, S3Object], prefix: str, delimiter: str, start_after: str
) -> list[tuple[str, S3Object | None]]:
    """A bucket's listing: (key, object) or (common prefix, None), in UTF-8 binary order.

    Keys that share a prefix are adjacent in that order, so a common prefix is one
    entry, and it sorts before any key after it: a page can resume after either.
    """
    entries: list[tuple[str, S3Object | None]] = []
    keys = sorted(
        (k for k in objects if k.startswith(prefix) and k.encode() > start_after.encode()),
        key=lambda k: k.encode(),
    )
    for key in keys:
        cut = key.find(delimiter, len(prefix)) if delimiter else -1
        if cut < 0:
            entries.append((key, objects[key]))
            continue
        common = key[: cut + len(delimiter)]
        if not entries or entries[-1] != (common, None):
            entries.append((common, None))
    return entries


def _continuation_token(marker: str) -> str:
    # Opaque to clients, as S3's is ("NextContinuationToken is obfuscated").
    return base64.urlsafe_b64encode(marker.encode()).decode()


def _continuation_marker(token: str) -> str:
    try:
        return base64.b64decode(token, altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise _ApiError("InvalidArgument", "The continuation token provided is incorrect") from None
