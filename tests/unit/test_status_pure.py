"""The pure parts of `novapod status`: the watch loop, the ledger's plan of an item, the
time spans and the tables (the whole command runs against the fake in
tests/handlers/test_status_cli.py)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from novapod.constructs.handler_core.ledger import Entry
from novapod.operate.status import assess, collect, render, utilization, watch
from novapod.operate.status.collect import ledger_plan


def test_watch_redraws_in_place_on_a_terminal_and_returns_the_last_status() -> None:
    statuses = iter([("first", 4), ("second", 0)])
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            raise KeyboardInterrupt

    out = io.StringIO()
    assert watch.watch(lambda: next(statuses), 5, sleep=sleep, out=out, redraw=True) == 0
    assert out.getvalue() == f"{watch.CLEAR}first\n{watch.CLEAR}second\n"
    assert slept == [5, 5]


def test_an_interrupt_during_a_round_keeps_the_status_of_the_round_before() -> None:
    def rounds():
        yield "first", 4
        raise KeyboardInterrupt

    it = rounds()
    out = io.StringIO()
    assert watch.watch(lambda: next(it), 1, sleep=lambda _: None, out=out, redraw=False) == 4
    assert out.getvalue() == "first\n"


def test_a_failed_round_ends_the_watch() -> None:
    def fail() -> tuple[str, int]:
        raise RuntimeError("DescribeCluster failed")

    with pytest.raises(RuntimeError):
        watch.watch(fail, 1, sleep=lambda _: None, out=io.StringIO(), redraw=False)


def _entry(kind: str, name: str) -> Entry:
    return Entry("dev", kind, name, "bought", 1, 1, "r", "c", "2030-01-01T00:00:00Z")


@pytest.mark.parametrize(
    ("kind", "name", "plan"),
    [
        ("plan", "novapod-dev-main-a59a3808", "novapod-dev-main-a59a3808"),
        (
            "extension",
            "novapod-dev-main-a59a3808-ext24h-50b4973d",
            "novapod-dev-main-a59a3808",
        ),
        ("extension", "not-an-extension-name", None),
        ("import", "my-model", None),
        ("deployment", "my-deployment", None),
    ],
)
def test_the_plan_a_ledger_item_buys(kind, name, plan) -> None:
    assert ledger_plan(_entry(kind, name)) == plan


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(days=2, hours=5, minutes=59), "2d 5h"),
        (timedelta(hours=5, minutes=10), "5h 10m"),
        (timedelta(minutes=9, seconds=59), "9m"),
        (timedelta(seconds=-30), "0m"),
    ],
)
def test_spans_read_in_days_hours_and_minutes(delta, text) -> None:
    assert assess._span(delta) == text


def test_hours_round_towards_the_past() -> None:
    assert assess._hours(timedelta(minutes=59)) == 0
    assert assess._hours(timedelta(minutes=-1)) == -1  # an end a minute ago is past


def test_tables_align_columns_and_drop_trailing_spaces() -> None:
    assert render.table([["a", "bb", ""], ["ccc", "d", "e"]]) == ["  a    bb", "  ccc  d   e"]


def test_the_urgency_order_names_every_kind_once() -> None:
    from typing import get_args

    assert sorted(assess.URGENCY) == sorted(get_args(assess.AttentionKind))
    assert len(set(assess.URGENCY)) == len(assess.URGENCY)


def test_the_schema_lists_the_kinds_in_their_order() -> None:
    import json

    from tests.conftest import ROOT

    schema = json.loads((ROOT / "docs" / "reference" / "status.schema.json").read_text())
    kinds = schema["properties"]["attention"]["items"]["properties"]["kind"]["enum"]
    assert kinds == list(assess.URGENCY)


@pytest.mark.parametrize(
    ("job", "name", "run"),
    [
        ("sft", "sft-a1b2c", "sft-a1b2c"),
        ("sft", "sft-a1b2c-rm", "sft-a1b2c"),  # PPO's reward model, critic, anchor, actor
        ("sft", "sft-a1b2c-at", "sft-a1b2c"),
        ("sft", "sft-a1b2c-ag", None),  # PPO's actor generation is a StatefulSet, not a job
        ("sft", "sft-eval-a1b2c", None),  # another job's run
        ("sft", "sft-A1B2C", None),
        ("a" * 40, "a" * 34 + "-x9y8z", "a" * 34 + "-x9y8z"),  # the launcher keeps 34 chars
    ],
)
def test_the_run_a_pytorchjob_belongs_to(job, name, run) -> None:
    from novapod.operate.status.jobs import run_name

    assert run_name(job, name) == run


def test_a_pytorchjob_s_state_is_its_last_true_condition() -> None:
    from novapod.operate.status.jobs import condition

    job = {
        "status": {
            "conditions": [
                {
                    "type": "Created",
                    "status": "False",
                    "lastTransitionTime": "2027-07-09T12:00:00Z",
                },
                {
                    "type": "Running",
                    "status": "False",
                    "lastTransitionTime": "2027-07-09T12:01:00Z",
                },
                {
                    "type": "Failed",
                    "status": "True",
                    "lastTransitionTime": "2027-07-09T18:00:00Z",
                    "message": "1 Master replica(s) failed.",
                },
                {"type": "Restarting", "status": "False"},
            ]
        }
    }
    kind, when, message = condition(job)
    assert (kind, when.isoformat(), message) == (
        "Failed",
        "2027-07-09T18:00:00+00:00",
        "1 Master replica(s) failed.",
    )
    assert condition({"status": {}}) == (None, None, None)


# --- the plans' instance-hours ------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "minutes", "period"),
    [
        (timedelta(hours=2), 5, 300),  # no shorter than the check's interval
        (timedelta(days=14), 1, 60),  # 1-minute data for 15 days
        (timedelta(days=15, minutes=1), 1, 300),  # then 5-minute data
        (timedelta(days=62), 7, 600),  # a multiple of 300 above 7 minutes
        (timedelta(days=64), 5, 3600),  # hourly beyond 63 days
    ],
)
def test_the_metric_period_is_one_cloudwatch_keeps(age, minutes, period) -> None:
    now = datetime(2027, 7, 10, tzinfo=UTC)
    assert collect.metric_period(now - age, now, minutes) == period


def test_the_metric_period_keeps_the_series_within_one_page() -> None:
    now = datetime(2027, 7, 10, tzinfo=UTC)
    # 14 days of ten 1-minute series would be 201,600 datapoints: 2 minutes make 100,800.
    assert collect.metric_period(now - timedelta(days=14), now, 1, series=10) == 120


def test_reserved_instance_hours_need_no_samples_and_end_with_the_plan() -> None:
    start = datetime(2027, 7, 1, tzinfo=UTC)
    plan = {
        "Status": "Expired",
        "StartTime": start,
        "EndTime": start + timedelta(hours=48),
        "TotalInstanceCount": 8,
    }
    row = utilization.utilization(plan, None, start + timedelta(days=9), True, "deploy")
    assert (row["reserved_instance_hours"], row["elapsed_hours"]) == (384.0, 48.0)
    assert row["in_use_share"] is None and row["note"] is None


def test_a_cloudwatch_status_other_than_complete_gives_no_figure() -> None:
    start = datetime(2027, 7, 1, tzinfo=UTC)
    plan = {"Status": "Active", "StartTime": start, "TotalInstanceCount": 2}
    usage = collect.UsageFacts(
        start,
        start + timedelta(hours=1),
        300,
        ((start, 600.0),),
        ((start, 300.0),),
        ((start, 300.0),),
        "InternalError",
    )
    row = utilization.utilization(plan, usage, start + timedelta(hours=1), True, "deploy")
    assert (row["in_use_instance_hours"], row["in_use_share"]) == (None, None)
    assert row["note"] == (
        "CloudWatch answered InternalError for the scheduled check's samples; run status again"
    )
