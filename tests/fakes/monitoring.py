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

import math
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.fakes import iam, service_model

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
SNS_NAMESPACE = "http://sns.amazonaws.com/doc/2010-03-31/"
MAX_DATUMS = 1000
VALUE_LIMIT = 2.0**360
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

    def __init__(self, error: ErrorFactory, *, account: Callable[[], str], region: str) -> None:
        self._error = error
        self._account = account
        self._region = region
        self._lock = threading.Lock()
        self.metrics: list[tuple[str, dict[str, Any]]] = []
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
        if service == "monitoring":
            context = {"cloudwatch:namespace": str(params.get("Namespace", ""))}
            return [iam.Request(f"cloudwatch:{operation}", "*", context)]
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

    def work_cloudwatch(self, operation: str, params: dict[str, Any]) -> None:
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
