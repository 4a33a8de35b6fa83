"""CloudWatch PutMetricData and SNS Publish of the fake control plane (`aws_control_plane.py`
routes requests signed for `monitoring` and `sns` here).

CloudWatch: botocore 1.44 speaks JSON 1.0 to it (the model lists smithy-rpc-v2-cbor, json
and query; botocore sends `X-Amz-Target: GraniteServiceVersion20100801.<Op>` with
`x-amzn-query-mode: true`, the model being awsQueryCompatible). PutMetricData has no
output shape: the answer is an empty body. An error is `{"__type": code, "message": ...}`
with `x-amzn-query-error: <code>;Sender`, the query-compatible form botocore reads the
code from. The request is checked against botocore's model (`json_input_errors`), then
as the API reference states (API_PutMetricData.html): at most 1000 metrics, a namespace
that does not begin with `AWS/`, finite values within ±2^360, Value or Values not both.
What it stores is in `metrics` (namespace, datum).

GetMetricData answers from those datums as its API reference states
(API_GetMetricData.html, and botocore's model of it): at most 500 queries, each with a
unique Id of letters, digits and underscores that begins with a lowercase letter, a
MetricStat (the fake serves no math Expression) whose Stat is one of the five basic
statistics and whose Period is a multiple of 60 (or 1, 5, 10, 20, 30); StartTime before
EndTime (inclusive, exclusive), the start rounded down to the minute, to 5 minutes past
15 days ago, to the hour past 63 days ago; a period that is not a multiple of 60, 300 or
3600 for a start older than 3 hours, 15 or 63 days returns no datapoint ("or no data
points in that time range is returned", MetricStat's Period), and nothing older than 455
days is kept. A metric is its namespace, name and exact set of dimensions; with a Unit
only datums of that unit count. Datapoints come newest first unless ScanBy is
TimestampAscending, MaxDatapoints (default 100,800) at a time, or `max_datapoints` to
page sooner: a page that stops short answers PartialData for each query with datapoints
left, and a NextToken that only the same request may present again (InvalidNextToken,
HTTP 400, otherwise: the error botocore's model lists).

SNS: the query protocol (form body, XML answer, `PublishResponse/PublishResult/MessageId`),
checked against botocore's model (`service_model.query_input_errors`), then as the API
reference states (API_Publish.html): the topic exists (NotFound, HTTP 404), a subject of
fewer than 100 characters without line breaks or control characters (InvalidParameter).
What it publishes is in `published`; topics are created by tests (`add_topic`).

Authorization (the plane's `act_as`): `cloudwatch:PutMetricData` on "*" with the
`cloudwatch:namespace` condition key (the Service Authorization Reference's CloudWatch
page: no resource type, that condition key), and `sns:Publish` on the topic's ARN. A
refusal is AccessDenied (HTTP 403) from CloudWatch and AuthorizationError (HTTP 403)
from SNS, the codes their API references list. A topic encrypted with a key
(`add_topic(..., key_arn=)`) also needs the publisher's `kms:GenerateDataKey` and
`kms:Decrypt` on that key, called by SNS (`kms:ViaService` sns.<region>.amazonaws.com):
the SNS developer guide's sns-key-management.html asks a publisher to an encrypted topic
for both; the key policy is taken to delegate to IAM (the storage key's root
statement), so the role's own statements decide. Refused, SNS answers KMSAccessDenied
(HTTP 400, botocore's sns model: KMSAccessDeniedException). SNS reuses a data key for
up to five minutes (the same page), so the real service may not ask KMS on every
Publish; the fake asks every time, which is stricter, never looser.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.fakes import iam, service_model

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
SNS_NAMESPACE = "http://sns.amazonaws.com/doc/2010-03-31/"
MAX_DATUMS = 1000
VALUE_LIMIT = 2.0**360
# GetMetricData (API_GetMetricData.html): 500 queries, 100,800 datapoints before paging.
MAX_QUERIES = 500
MAX_DATAPOINTS = 100_800
QUERY_ID = re.compile(r"^[a-z][A-Za-z0-9_]*$")
STATISTICS = ("Average", "Sum", "SampleCount", "Minimum", "Maximum")
HIGH_RESOLUTION_PERIODS = (1, 5, 10, 20, 30)
# How long CloudWatch keeps each resolution, and the period a start that old needs
# (MetricStat's Period and GetMetricData's StartTime in the API reference).
RETENTION = (
    (timedelta(hours=3), 1),
    (timedelta(days=15), 60),
    (timedelta(days=63), 300),
    (timedelta(days=455), 3600),
)
ErrorFactory = Callable[..., Exception]


@dataclass(frozen=True)
class Published:
    topic_arn: str
    message: str
    subject: str | None


def cloudwatch_operation(target: str) -> str:
    """The operation of an X-Amz-Target (`GraniteServiceVersion20100801.PutMetricData`)."""
    return target.rpartition(".")[2]


def cloudwatch_error(code: str) -> tuple[tuple[str, str], ...]:
    """The headers of a query-compatible JSON error answer."""
    return (("x-amzn-query-error", f"{code};Sender"),)


# --- the services ---------------------------------------------------------------------------


class FakeMonitoring:
    """CloudWatch's metrics and SNS's topics of one account; `error(code, message,
    status)` makes the plane's API error."""

    def __init__(
        self,
        error: ErrorFactory,
        *,
        account: Callable[[], str],
        region: str,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._error = error
        self._account = account
        self._region = region
        self._now = now
        self._lock = threading.Lock()
        self.metrics: list[tuple[str, dict[str, Any]]] = []
        # GetMetricData's page size when smaller than the request's MaxDatapoints.
        self.max_datapoints = MAX_DATAPOINTS
        self.topics: set[str] = set()
        self.topic_keys: dict[str, str] = {}  # topic ARN -> its KMS key's ARN
        self.published: list[Published] = []

    def add_topic(self, name: str, *, key_arn: str | None = None) -> str:
        arn = f"arn:aws:sns:{self._region}:{self._account()}:{name}"
        with self._lock:
            self.topics.add(arn)
            if key_arn is not None:
                self.topic_keys[arn] = key_arn
        return arn

    # --- authorization --------------------------------------------------------------------

    def authorizations(
        self, service: str, operation: str, params: Mapping[str, Any]
    ) -> list[iam.Request]:
        if service == "monitoring" and operation == "PutMetricData":
            context = {"cloudwatch:namespace": str(params.get("Namespace", ""))}
            return [iam.Request(f"cloudwatch:{operation}", "*", context)]
        if service == "monitoring":
            # GetMetricData: no resource type and no condition key of its own.
            return [iam.Request(f"cloudwatch:{operation}", "*")]
        topic = str(params.get("TopicArn", ""))
        requests = [iam.Request(f"sns:{operation}", topic)]
        key = self.topic_keys.get(topic)
        if operation == "Publish" and key is not None:
            via = {"kms:ViaService": f"sns.{self._region}.amazonaws.com"}
            requests += [iam.Request(a, key, via) for a in ("kms:GenerateDataKey", "kms:Decrypt")]
        return requests

    def denied(self, service: str, message: str, request: iam.Request | None = None) -> Exception:
        if service == "monitoring":
            return self._error("AccessDenied", message, 403)
        if request is not None and request.action.startswith("kms:"):
            return self._error("KMSAccessDenied", message, 400)
        return self._error("AuthorizationError", message, 403)

    # --- CloudWatch -----------------------------------------------------------------------

    def work_cloudwatch(self, operation: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """PutMetricData (no answer) or GetMetricData (its answer)."""
        if operation == "GetMetricData":
            return self.get_metric_data(params)
        if operation != "PutMetricData":
            raise self._error(
                "InvalidAction", f"The fake does not serve CloudWatch {operation}.", 400
            )
        errors = service_model.json_input_errors("cloudwatch", operation, params)
        if errors:
            raise self._error("InvalidParameterValue", service_model.validation_message(errors))
        namespace = str(params["Namespace"])
        if namespace.startswith("AWS/"):
            raise self._error(
                "InvalidParameterValue", "The value AWS/ for parameter Namespace is invalid."
            )
        data = list(params.get("MetricData") or [])
        if len(data) > MAX_DATUMS:
            raise self._error(
                "InvalidParameterValue",
                f"The collection MetricData must not have a size greater than {MAX_DATUMS}.",
            )
        for index, datum in enumerate(data, start=1):
            if "Value" in datum and "Values" in datum:
                raise self._error(
                    "InvalidParameterCombination",
                    f"The parameters MetricData.member.{index}.Value and "
                    f"MetricData.member.{index}.Values are mutually exclusive.",
                )
            for value in [datum.get("Value"), *(datum.get("Values") or [])]:
                if value is not None and not (math.isfinite(value) and abs(value) <= VALUE_LIMIT):
                    raise self._error(
                        "InvalidParameterValue",
                        f"The value {value} for parameter MetricData.member.{index}.Value "
                        "is invalid.",
                    )
        with self._lock:
            self.metrics += [(namespace, dict(datum)) for datum in data]
        return None

    def put_datum(
        self,
        namespace: str,
        name: str,
        dimensions: Mapping[str, str],
        *,
        at: datetime,
        value: float,
        unit: str = "Count",
    ) -> None:
        """A datum as PutMetricData stores it (for tests that script what was sampled)."""
        datum = {
            "MetricName": name,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
            "Timestamp": at.timestamp(),
            "Value": float(value),
            "Unit": unit,
        }
        with self._lock:
            self.metrics.append((namespace, datum))

    # --- GetMetricData ----------------------------------------------------------------------

    def get_metric_data(self, params: dict[str, Any]) -> dict[str, Any]:
        errors = service_model.json_input_errors("cloudwatch", "GetMetricData", params)
        if errors:
            raise self._error("InvalidParameterValue", service_model.validation_message(errors))
        queries = list(params["MetricDataQueries"])
        if len(queries) > MAX_QUERIES:
            raise self._error(
                "InvalidParameterValue",
                f"The collection MetricDataQueries must not have a size greater than "
                f"{MAX_QUERIES}.",
            )
        start = datetime.fromtimestamp(params["StartTime"], UTC)
        end = datetime.fromtimestamp(params["EndTime"], UTC)
        if start >= end:
            raise self._error(
                "InvalidParameterValue",
                "The parameter StartTime must be less than the parameter EndTime.",
            )
        self._check_queries(queries)
        token = params.get("NextToken")
        offset = 0
        digest = _request_digest(params)
        if token is not None:
            offset = _token_offset(token, digest)
            if offset is None:
                raise self._error("InvalidNextToken", "The next token specified is invalid.", 400)
        now = self._now()
        start = _rounded_start(start, now)
        series = [(q, self._series(q, start, end, now)) for q in queries]
        if params.get("ScanBy", "TimestampDescending") == "TimestampDescending":
            series = [(q, points[::-1]) for q, points in series]
        size = min(int(params.get("MaxDatapoints") or MAX_DATAPOINTS), self.max_datapoints)
        flat = [(q["Id"], point) for q, points in series for point in points]
        page = flat[offset : offset + size]
        rest = {ident for ident, _ in flat[offset + size :]}
        results = []
        for query, _ in series:
            if query.get("ReturnData") is False:
                continue
            mine = [point for ident, point in page if ident == query["Id"]]
            results.append(
                {
                    "Id": query["Id"],
                    "Label": query.get("Label") or query["MetricStat"]["Metric"]["MetricName"],
                    "Timestamps": [t for t, _ in mine],
                    "Values": [v for _, v in mine],
                    "StatusCode": "PartialData" if query["Id"] in rest else "Complete",
                }
            )
        answer: dict[str, Any] = {"MetricDataResults": results, "Messages": []}
        if offset + size < len(flat):
            answer["NextToken"] = _token(offset + size, digest)
        return answer

    def _check_queries(self, queries: list[dict[str, Any]]) -> None:
        """What the model cannot say of the queries: Ids, MetricStat, Stat, Period."""
        seen: set[str] = set()
        for index, query in enumerate(queries, start=1):
            where = f"MetricDataQueries.member.{index}"
            if not QUERY_ID.match(query["Id"]):
                raise self._error(
                    "InvalidParameterValue",
                    f"The value {query['Id']} for parameter {where}.Id is invalid: it must "
                    "begin with a lowercase letter and hold letters, numbers and underscores.",
                )
            if query["Id"] in seen:
                raise self._error("InvalidParameterValue", f"The Id {query['Id']} is used twice.")
            seen.add(query["Id"])
            if ("MetricStat" in query) == ("Expression" in query):
                raise self._error(
                    "InvalidParameterValue",
                    f"{where}: exactly one of MetricStat and Expression must be given.",
                )
            if "Expression" in query:
                raise self._error("InvalidAction", "The fake serves MetricStat queries only.", 400)
            stat = query["MetricStat"]
            if stat["Stat"] not in STATISTICS:
                raise self._error(
                    "InvalidAction", f"The fake serves the statistics {', '.join(STATISTICS)}.", 400
                )
            period = int(stat["Period"])
            if period % 60 and period not in HIGH_RESOLUTION_PERIODS:
                raise self._error(
                    "InvalidParameterValue",
                    f"The parameter {where}.MetricStat.Period must be a multiple of 60 or "
                    "1, 5, 10, 20 or 30.",
                )

    def _series(
        self, query: Mapping[str, Any], start: datetime, end: datetime, now: datetime
    ) -> list[tuple[datetime, float]]:
        """One query's datapoints, oldest first: a period's statistic of the datums in it."""
        stat = query["MetricStat"]
        period = int(stat["Period"])
        if not _period_kept(period, start, now):
            return []
        metric = stat["Metric"]
        dimensions = {d["Name"]: d["Value"] for d in metric.get("Dimensions") or []}
        oldest = now - RETENTION[-1][0]
        buckets: dict[int, list[tuple[float, float]]] = {}
        with self._lock:
            stored = list(self.metrics)
        for namespace, datum in stored:
            if (
                namespace != metric["Namespace"]
                or datum["MetricName"] != metric["MetricName"]
                or {d["Name"]: d["Value"] for d in datum.get("Dimensions") or []} != dimensions
                or ("Unit" in stat and datum.get("Unit", "None") != stat["Unit"])
            ):
                continue
            stamp = datum.get("Timestamp")
            when = datetime.fromtimestamp(stamp, UTC) if stamp is not None else now
            if not (start <= when < end) or when < oldest:
                continue
            index = int((when - start).total_seconds() // period)
            buckets.setdefault(index, []).extend(_samples(datum))
        points = []
        for index in sorted(buckets):
            samples = buckets[index]
            points.append((start + timedelta(seconds=index * period), _statistic(stat, samples)))
        return points

    def metric_values(self, name: str, **dimensions: str) -> list[float]:
        """The values put under a metric name whose dimensions are exactly these."""
        with self._lock:
            return [
                float(d["Value"])
                for _, d in self.metrics
                if d["MetricName"] == name
                and {x["Name"]: x["Value"] for x in d.get("Dimensions") or []} == dimensions
            ]

    # --- SNS ------------------------------------------------------------------------------

    def work_sns(self, operation: str, params: dict[str, str]) -> dict[str, Any]:
        if operation != "Publish":
            raise self._error("InvalidAction", f"The fake does not serve SNS {operation}.", 400)
        errors = service_model.query_input_errors("sns", operation, params)
        if errors:
            raise self._error("InvalidParameter", service_model.validation_message(errors))
        topic = params.get("TopicArn")
        if not topic:
            # TargetArn and PhoneNumber publish elsewhere; the fake serves topics only.
            raise self._error("InvalidParameter", "The fake publishes to topics only.")
        subject = params.get("Subject")
        if subject is not None and (
            len(subject) >= 100 or any(ord(c) < 32 or ord(c) == 127 for c in subject)
        ):
            raise self._error("InvalidParameter", "Invalid parameter: Subject", 400)
        if not params.get("Message"):
            raise self._error("InvalidParameter", "Invalid parameter: Empty message", 400)
        with self._lock:
            if topic not in self.topics:
                raise self._error("NotFound", "Topic does not exist", 404)
            self.published.append(Published(topic, params["Message"], subject))
        return {"MessageId": str(uuid.uuid4())}

    def sns_document(self, operation: str, payload: Mapping[str, Any]) -> str:
        members = service_model.xml_members("sns", operation, payload)
        return (
            f'<{operation}Response xmlns="{SNS_NAMESPACE}">'
            f"<{operation}Result>{members}</{operation}Result>"
            f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
            f"</{operation}Response>"
        )


# --- GetMetricData's arithmetic ----------------------------------------------------------------


def _samples(datum: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(value, count) pairs of one datum: Value, Values with Counts, or StatisticValues
    (as a Sum over a SampleCount, its minimum and maximum standing for themselves)."""
    if "Value" in datum:
        return [(float(datum["Value"]), 1.0)]
    if "Values" in datum:
        counts = datum.get("Counts") or [1.0] * len(datum["Values"])
        return [(float(v), float(c)) for v, c in zip(datum["Values"], counts, strict=True)]
    stats = datum["StatisticValues"]
    count = float(stats["SampleCount"])
    return [(float(stats["Sum"]) / count, count)] if count else []


def _statistic(stat: Mapping[str, Any], samples: list[tuple[float, float]]) -> float:
    name = stat["Stat"]
    count = sum(c for _, c in samples)
    total = sum(v * c for v, c in samples)
    if name == "Sum":
        return total
    if name == "SampleCount":
        return count
    if name == "Average":
        return total / count if count else 0.0
    values = [v for v, _ in samples]
    return min(values) if name == "Minimum" else max(values)


def _rounded_start(start: datetime, now: datetime) -> datetime:
    """GetMetricData's StartTime as CloudWatch rounds it: down to the minute within 15
    days, to 5 minutes within 63 days, to the hour before (API_GetMetricData.html)."""
    age = now - start
    step = 60 if age <= timedelta(days=15) else 300 if age <= timedelta(days=63) else 3600
    return datetime.fromtimestamp(int(start.timestamp()) // step * step, UTC)


def _period_kept(period: int, start: datetime, now: datetime) -> bool:
    """Whether data as old as `start` is kept at `period` (a multiple of what is left)."""
    age = now - start
    for kept, step in RETENTION:
        if age <= kept:
            return period % step == 0 if step > 1 else True
    return period % RETENTION[-1][1] == 0


def _request_digest(params: Mapping[str, Any]) -> str:
    same = {k: v for k, v in params.items() if k != "NextToken"}
    return hashlib.sha256(json.dumps(same, sort_keys=True).encode()).hexdigest()[:16]


def _token(offset: int, digest: str) -> str:
    return base64.b64encode(json.dumps({"offset": offset, "request": digest}).encode()).decode()


def _token_offset(token: str, digest: str) -> int | None:
    try:
        found = json.loads(base64.b64decode(token, validate=True))
    except ValueError:
        return None
    if not isinstance(found, dict) or found.get("request") != digest:
        return None
    offset = found.get("offset")
    return offset if isinstance(offset, int) and offset > 0 else None
