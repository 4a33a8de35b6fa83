"""Fixtures for the custom-resource handler tests: a fake AWS, a fake clock, a driver."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import boto3
import pytest
from botocore.retries.standard import ExponentialBackoff

from novapod.constructs.training_plan.handler import index
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers.lifecycle import ProviderDriver
from tests.handlers.world import LEDGER_TABLE, T0, FakeClock, World, standard_offerings

POLL_SECONDS = 30.0


@pytest.fixture(scope="session")
def control_plane() -> Iterator[FakeControlPlane]:
    """One server for the session (clients keep their endpoint); reset per test."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("AWS_"):
                patch.delenv(name)
        with FakeControlPlane() as plane:
            patch.setenv("AWS_ENDPOINT_URL", plane.url)
            patch.setenv("AWS_ACCESS_KEY_ID", "AKIDFAKEFAKEFAKE")
            patch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
            patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
            patch.setenv("AWS_CONFIG_FILE", os.devnull)
            patch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
            patch.setenv("AWS_EC2_METADATA_DISABLED", "true")
            patch.setattr(boto3, "DEFAULT_SESSION", None)
            yield plane


@pytest.fixture
def world(control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    control_plane.reset()
    standard_offerings(control_plane)
    clock = FakeClock(T0)
    control_plane.now = clock.now  # extensions record ExtendedAt on the handler's clock
    monkeypatch.setattr(index, "_now", clock.now)
    monkeypatch.setattr(index, "_sleep", clock.advance)
    control_plane.dynamodb.create_table(
        LEDGER_TABLE, partition_key="Environment", sort_key="Purchase"
    )
    tokens = iter(range(1, 1000))  # ledger claimants: claimant-0001, claimant-0002, ...
    monkeypatch.setattr(index, "_claimant", lambda: f"claimant-{next(tokens):04d}")
    # Small timeouts and backoff keep fault scenarios to fractions of a second.
    monkeypatch.setattr(index, "CONNECT_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(index, "READ_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(index, "CREATE_READ_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    driver = ProviderDriver(
        index.on_event,
        index.is_complete,
        advance_clock=clock.advance,
        query_interval_seconds=POLL_SECONDS,
    )
    world = World(plane=control_plane, clock=clock, driver=driver)
    real_sleep = time.sleep

    def recorded_sleep(seconds: float) -> None:
        world.slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", recorded_sleep)
    yield world
    # Every answer the fake gave must fit botocore's output shapes.
    assert control_plane.violations == []
