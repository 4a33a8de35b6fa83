"""The handler core's clients (handler_core/aws.py) against the fake control plane: reused
while nothing boto3 reads has changed, made anew when the environment points elsewhere,
and handed over with a new client's retry budget."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff

from novapod.constructs.handler_core import aws
from novapod.constructs.training_plan.handler import index
from tests.fakes.aws_control_plane import FakeControlPlane

SETTINGS = aws.Settings(max_attempts=3, connect_timeout=2, read_timeout=2)


@pytest.fixture
def plane(control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch) -> FakeControlPlane:
    control_plane.reset()
    # botocore's pauses between attempts, a few milliseconds.
    monkeypatch.setitem(
        ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "non_throttling_base_scale", 0.001
    )
    return control_plane


@pytest.fixture
def other_plane() -> Iterator[FakeControlPlane]:
    with FakeControlPlane() as other:
        yield other


def describe(client: Any) -> None:
    """One DescribeTrainingPlan (the fake has no plans: ResourceNotFound)."""
    with pytest.raises(ClientError):
        client.describe_training_plan(TrainingPlanName="nope")


@contextmanager
def signing_keys(client: Any) -> Iterator[list[str]]:
    """The access key of each request the client sends meanwhile (the hook comes off:
    the client outlives the test)."""
    keys: list[str] = []

    def record(request: Any, **_: Any) -> None:
        authorization = request.headers["Authorization"].decode()
        keys.append(authorization.split("Credential=")[1].split("/")[0])

    client.meta.events.register("before-send", record, unique_id="test-signing-keys")
    try:
        yield keys
    finally:
        client.meta.events.unregister("before-send", unique_id="test-signing-keys")


def test_a_client_is_reused_for_the_same_service_settings_and_environment(
    plane: FakeControlPlane,
) -> None:
    first = aws.client("sagemaker", SETTINGS)
    assert aws.client("sagemaker", SETTINGS) is first
    assert aws.client("sagemaker", aws.Settings(1, 2, 2)) is not first
    assert aws.client("ec2", SETTINGS) is not first
    assert aws.client("s3") is aws.client("s3")  # botocore's defaults
    # The handlers' factories hand out the core's clients: one per invocation's call site
    # no more (the 1,361 clients of one test file).
    assert index._client("sagemaker") is index._client("sagemaker")
    assert index._client("sagemaker", max_attempts=1) is not index._client("sagemaker")


def test_settings_are_the_clients_retries_and_timeouts(plane: FakeControlPlane) -> None:
    config = aws.client("sagemaker", aws.Settings(1, 4, 7)).meta.config
    assert config.retries == {"mode": "standard", "total_max_attempts": 1}
    assert (config.connect_timeout, config.read_timeout) == (4, 7)


def test_a_changed_endpoint_url_is_a_new_client_that_calls_the_new_endpoint(
    plane: FakeControlPlane, other_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A previous test's fake on another port: a client kept from it would call there.
    before = aws.client("sagemaker", SETTINGS)
    describe(before)
    assert plane.operations() == ["DescribeTrainingPlan"]

    monkeypatch.setenv("AWS_ENDPOINT_URL", other_plane.url)
    moved = aws.client("sagemaker", SETTINGS)
    assert moved is not before
    assert moved.meta.endpoint_url == other_plane.url
    describe(moved)
    describe(index._client("sagemaker"))
    assert other_plane.operations() == ["DescribeTrainingPlan"] * 2
    assert plane.operations() == ["DescribeTrainingPlan"]

    monkeypatch.setenv("AWS_ENDPOINT_URL", plane.url)
    back = aws.client("sagemaker", SETTINGS)
    assert back.meta.endpoint_url == plane.url
    describe(back)
    assert plane.operations() == ["DescribeTrainingPlan"] * 2


def test_changed_credentials_sign_with_the_new_key(
    plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = aws.client("sagemaker", SETTINGS)
    with signing_keys(first) as keys:
        describe(first)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDOTHERFAKEKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "other-secret")
    second = aws.client("sagemaker", SETTINGS)
    assert second is not first
    with signing_keys(second) as keys_now:
        describe(second)
    assert (keys, keys_now) == (["AKIDFAKEFAKEFAKE"], ["AKIDOTHERFAKEKEY"])


def test_a_changed_region_is_a_client_of_that_region(
    plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert aws.client("sagemaker", SETTINGS).meta.region_name == "us-east-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert aws.client("sagemaker", SETTINGS).meta.region_name == "eu-west-1"


def test_the_environment_is_every_aws_variable_and_the_proxies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", "http://127.0.0.1:1")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    monkeypatch.setenv("NOT_AWS", "x")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ca.pem")
    monkeypatch.setenv("BOTOCORE_EXPERIMENTAL__PLUGINS", "x=y")
    monkeypatch.setenv("HOME", "/home/elsewhere")
    seen = dict(aws.environment())
    assert seen["AWS_ENDPOINT_URL_SAGEMAKER"] == "http://127.0.0.1:1"
    assert seen["HTTPS_PROXY"] == "http://proxy:3128"
    assert seen["REQUESTS_CA_BUNDLE"] == "/etc/ca.pem"
    assert seen["BOTOCORE_EXPERIMENTAL__PLUGINS"] == "x=y"
    assert seen["HOME"] == "/home/elsewhere"  # where ~/.aws/config is
    assert "NOT_AWS" not in seen


def test_each_hand_over_has_the_retry_budget_of_a_new_client(plane: FakeControlPlane) -> None:
    # botocore's standard mode keeps a retry quota per client (500, 14 a retry after a
    # 5xx): 20 failing calls on one client drain it, and its last calls go out once.
    calls = 20
    plane.server_error("DescribeTrainingPlan", times=3 * calls)
    kept = aws.client("sagemaker", SETTINGS)
    for _ in range(calls):
        describe(kept)
    drained = len(plane.operations())
    assert drained < 3 * calls

    # Taken again for each call, as each invocation takes it: three attempts each time,
    # what a client made for the call would send.
    plane.reset()
    plane.server_error("DescribeTrainingPlan", times=3 * calls)
    for _ in range(calls):
        describe(aws.client("sagemaker", SETTINGS))
    assert plane.operations() == ["DescribeTrainingPlan"] * (3 * calls)


def test_a_client_whose_retries_are_not_known_here_is_never_reused(
    plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another botocore (its retry quota elsewhere): a new client per call, as before.
    monkeypatch.setattr(aws, "_refill_retry_quota", lambda made: False)
    assert aws.client("sagemaker", SETTINGS) is not aws.client("sagemaker", SETTINGS)


def test_a_quota_not_where_this_botocore_keeps_it_is_detected(plane: FakeControlPlane) -> None:
    made = aws.client("sagemaker", SETTINGS)
    assert aws._refill_retry_quota(made)
    handler = made.meta.events._emitter._unique_id_handlers["retry-config-sagemaker"]["handler"]
    checker = handler.__self__._retry_quota
    checker._quota = object()  # e.g. a botocore whose quota is another kind of object
    assert not aws._refill_retry_quota(made)
    del checker._quota  # or one that keeps it under another name
    assert not aws._refill_retry_quota(made)
    assert aws.client("sagemaker", SETTINGS) is not made


class _ForgetsIdleConnections(BaseHTTPRequestHandler):
    """Answers the first request of each connection with a bought plan and resets any
    later one on it: the far end forgot the idle connection, as after a Lambda was
    frozen between two invocations."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[int, bool]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        again = getattr(self, "_answered", False)
        self.seen.append((self.client_address[1], again))
        if again:
            linger = struct.pack("ii", 1, 0)  # close with a reset, not a FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            self.close_connection = True
            self.connection.close()
            return
        self._answered = True
        body = json.dumps({"TrainingPlanArn": f"arn:aws:sagemaker:us-east-1:{'1' * 12}:x"})
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


def test_a_single_attempt_client_never_sends_on_a_kept_connection(monkeypatch) -> None:
    """Two purchases by warm invocations: the second goes out on a new connection (on the
    kept one its one attempt would fail and the purchase would turn ambiguous)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ForgetsIdleConnections)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _ForgetsIdleConnections.seen = []
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    buyer = aws.Settings(max_attempts=1, connect_timeout=2, read_timeout=2)
    try:
        for _ in range(3):
            sagemaker = aws.client("sagemaker", buyer)
            answer = sagemaker.create_training_plan(
                TrainingPlanName="novapod-test", TrainingPlanOfferingId="tpo-1"
            )
            assert answer["TrainingPlanArn"].endswith(":x")
        assert aws.client("sagemaker", buyer) is sagemaker  # still the one client
    finally:
        server.shutdown()
        server.server_close()
    ports = [port for port, _ in _ForgetsIdleConnections.seen]
    assert [again for _, again in _ForgetsIdleConnections.seen] == [False] * 3
    assert len(set(ports)) == 3
