"""A fake SageMaker + EC2 control plane served over HTTP on 127.0.0.1.

Real boto3 clients talk to it through `AWS_ENDPOINT_URL` with dummy credentials, so
request serialization, botocore's retries and timeouts, and error parsing are the
real ones. It speaks SageMaker's JSON 1.1 protocol (`X-Amz-Target: SageMaker.<Op>`)
for the training-plan operations and EC2's query protocol (form body, XML answer) for
DescribeAvailabilityZones and DescribeSubnets.

Every SageMaker request is checked against botocore's service model (required and
unknown members, lengths, enums, patterns, ranges) and refused with a
ValidationException like the service's; every SageMaker answer is checked against the
output shape, and a violation (a bug of the fake) is kept in `violations`. EC2 query
parameters are checked by name and value kind (`service_model.py`).

Tests script it (zones, subnets, offerings, existing plans, a status sequence per
plan), inject faults per operation (throttle, 5xx, any error code, slow answers, a call
that hangs or whose connection is reset before it is worked, a create that succeeds but
whose answer is lost, a rival that buys the name first) and read back every call it
received. Offerings may be near matches (fewer instances, split segments, other zones
or currencies) that the search returns for any request, as the real search ranks its
best matches rather than only exact ones.

With a `principal` set (`act_as`), every call is authorized first against that role's
statements (`iam.py`, e.g. read from a synthesized template) and refused as the
services refuse: SageMaker with AccessDeniedException (HTTP 400), EC2 with
UnauthorizedOperation (HTTP 403). Without one, nothing is checked.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from tests.fakes import iam, service_model

ACCOUNT = "123456789012"
REGION = "us-east-1"
EC2_NAMESPACE = "http://ec2.amazonaws.com/doc/2016-11-15/"
JSON_CONTENT_TYPE = "application/x-amz-json-1.1"
_PLAN_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}")

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
    service: Literal["sagemaker", "ec2"]
    operation: str
    params: dict[str, Any]


class _ApiError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class _Answer:
    status: int
    content_type: str
    body: bytes


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
            self.tags: dict[str, list[dict[str, str]]] = {}
            self.default_statuses: tuple[tuple[str, str], ...] = (
                ("Pending", ""),
                ("Scheduled", ""),
            )
            self.describe_includes_zone_id = True
            self.near_matches: set[str] = set()
            self.calls: list[Call] = []
            self.violations: list[str] = []
            self.account = ACCOUNT
            self.principal: iam.Principal | None = None
            self._scripts: dict[str, deque[tuple[str, str]]] = {}
            self._faults: dict[str, deque[Fault | None]] = defaultdict(deque)

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
        """An offering whose instances are split evenly over `zones` (usually one), or
        made of explicit `segments`.

        `near_match`: the search returns it whatever the request asks for, as the
        service returns its best matches, not only exact ones.
        """
        if not segments:
            if start is None or not zones:
                raise ValueError("an offering needs zones and a start, or segments")
            per_zone = instance_count // len(zones)
            segments = [Segment(z, per_zone, start, duration_hours) for z in zones]
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

    def operations(self) -> list[str]:
        with self._lock:
            return [c.operation for c in self.calls]

    def calls_to(self, operation: str) -> list[dict[str, Any]]:
        with self._lock:
            return [c.params for c in self.calls if c.operation == operation]

    def create_counts(self) -> Counter[str]:
        """CreateTrainingPlan requests received per plan name (faulted ones included)."""
        return Counter(p.get("TrainingPlanName", "") for p in self.calls_to("CreateTrainingPlan"))

    def mark(self) -> int:
        """A position in the call log, for `operations_since`."""
        with self._lock:
            return len(self.calls)

    def operations_since(self, mark: int) -> list[str]:
        with self._lock:
            return [c.operation for c in self.calls[mark:]]

    # --- request handling (called from server threads) ----------------------------------

    def handle(
        self, service: Literal["sagemaker", "ec2"], operation: str, params: dict[str, Any]
    ) -> tuple[_Answer | _Hangup, float]:
        """The answer to send (or a hang-up) and a delay before sending it."""
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

    def _work(
        self, service: Literal["sagemaker", "ec2"], operation: str, params: dict[str, Any]
    ) -> _Answer:
        try:
            self._authorize(service, operation, params)
            if service == "sagemaker":
                handler = _SAGEMAKER_OPERATIONS.get(operation)
                if handler is None:
                    raise _ApiError("UnknownOperationException", f"no operation {operation}")
                errors = service_model.json_input_errors("sagemaker", operation, params)
                if errors:
                    raise _ApiError("ValidationException", service_model.validation_message(errors))
                payload = _jsonable(handler(self, params))
                self.violations.extend(
                    f"{operation} answer: {error}"
                    for error in service_model.json_output_errors("sagemaker", operation, payload)
                )
                return _json_answer(200, payload)
            ec2_handler = _EC2_OPERATIONS.get(operation)
            if ec2_handler is None:
                raise _ApiError("InvalidAction", f"no action {operation}")
            errors = service_model.ec2_input_errors(operation, params)
            if errors:
                raise _ApiError("UnknownParameter", "; ".join(errors))
            return _xml_answer(200, ec2_handler(self, params))
        except _ApiError as exc:
            return _api_error_answer(service, exc)

    def _authorize(
        self, service: Literal["sagemaker", "ec2"], operation: str, params: dict[str, Any]
    ) -> None:
        if self.principal is None:
            return
        for request in self._authorizations(service, operation, params):
            decision = iam.authorize(self.principal.statements, request)
            if decision == "allowed":
                continue
            if service == "ec2":
                # EC2 answers 403 and an encoded message, see docs.aws.amazon.com/AWSEC2/
                # latest/APIReference/query-api-troubleshooting.html#unauthorized-operation
                raise _ApiError(
                    "UnauthorizedOperation",
                    "You are not authorized to perform this operation.",
                    status=403,
                )
            message = iam.denial_message(self.account, self.principal, request, decision)
            raise _ApiError("AccessDeniedException", message)

    def _authorizations(
        self, service: Literal["sagemaker", "ec2"], operation: str, params: dict[str, Any]
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

    def _plan_arn(self, name: str) -> str:
        return f"arn:aws:sagemaker:{REGION}:{self.account}:training-plan/{name}"

    def _reserved_capacity_arn(self, name: str, index: int) -> str:
        return f"arn:aws:sagemaker:{REGION}:{self.account}:reserved-capacity/{name}-{index}"

    def _error_answer(self, service: Literal["sagemaker", "ec2"], fault: Fault) -> _Answer:
        if fault.kind == "throttle":
            code = "ThrottlingException" if service == "sagemaker" else "RequestLimitExceeded"
            status = 400 if service == "sagemaker" else 503
            return _api_error_answer(service, _ApiError(code, "Rate exceeded", status))
        if fault.kind == "server_error":
            code = "InternalFailure" if service == "sagemaker" else "InternalError"
            return _api_error_answer(
                service, _ApiError(code, "An internal error occurred", fault.status)
            )
        return _api_error_answer(service, _ApiError(fault.code, fault.message, fault.status))

    # --- SageMaker ----------------------------------------------------------------------

    def _search(self, params: dict[str, Any]) -> dict[str, Any]:
        after, before = _time(params.get("StartTimeAfter")), _time(params.get("EndTimeBefore"))
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

    def _describe(self, params: dict[str, Any]) -> dict[str, Any]:
        plan = self._plan(str(params.get("TrainingPlanName", "")))
        script = self._scripts.get(plan["TrainingPlanName"])
        if script:
            self._set_status(plan, *script[0])
            if len(script) > 1:
                script.popleft()
        shown = {k: v for k, v in plan.items() if v not in (None, "")}
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


_SAGEMAKER_OPERATIONS = {
    "SearchTrainingPlanOfferings": FakeControlPlane._search,
    "CreateTrainingPlan": FakeControlPlane._create,
    "DescribeTrainingPlan": FakeControlPlane._describe,
    "ListTrainingPlans": FakeControlPlane._list,
}
_EC2_OPERATIONS = {
    "DescribeAvailabilityZones": FakeControlPlane._describe_availability_zones,
    "DescribeSubnets": FakeControlPlane._describe_subnets,
}


class _Handler(BaseHTTPRequestHandler):
    control_plane: FakeControlPlane
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        target = self.headers.get("X-Amz-Target")
        if target:
            service: Literal["sagemaker", "ec2"] = "sagemaker"
            operation = target.split(".", 1)[-1]
            params = json.loads(body or b"{}")
        else:
            service = "ec2"
            params = dict(parse_qsl(body.decode(), keep_blank_values=True))
            operation = params.pop("Action", "")
            params.pop("Version", None)
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
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            self.end_headers()
            self.wfile.write(answer.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (read timeout)


# --- wire formats -----------------------------------------------------------------------


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


def _api_error_answer(service: Literal["sagemaker", "ec2"], error: _ApiError) -> _Answer:
    if service == "sagemaker":
        return _json_answer(error.status, {"__type": error.code, "message": error.message})
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


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return datetime.fromisoformat(str(value))


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
