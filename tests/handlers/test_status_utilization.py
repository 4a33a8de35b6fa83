"""`novapod status`: the instance-hours each plan reserved so far and the share of them in
use, read back from the scheduled check's CloudWatch metrics (GetMetricData against the
fake, validated against botocore's model): known samples give pinned figures; a check that
started late, no samples, a config without the monitor, paging and old plans' periods.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from novapod.constructs.monitor.handler import decisions
from tests.handlers.status_world import (
    ADOPTED,
    NOW,
    PLAN_START,
    StatusWorld,
    status_kube,
    status_world,
)

__all__ = ["status_kube", "status_world"]  # fixtures


@pytest.fixture(autouse=True)
def _answers_fit_the_model(status_world: StatusWorld) -> Any:
    yield
    assert status_world.plane.violations == []


def use_rows(out: str) -> list[str]:
    lines = out.splitlines()
    start = lines.index("Reserved instance-hours (in use: the scheduled check's samples)")
    end = lines.index("", start)
    return lines[start + 1 : end]


def test_the_share_in_use_is_computed_from_the_checks_samples(status_world) -> None:
    """main: two of its four instances in use for the first 12 h, all four since (72 of
    96 instance-hours); spare: the check began 6 h after the plan did and saw one of its
    two instances in use (18 of the 36 instance-hours it sampled)."""
    world = status_world.healthy()
    world.plane.monitoring.metrics.clear()
    half = PLAN_START + timedelta(hours=12)
    assert world.sampled("main", lambda when: 2 if when < half else 4) == 288
    assert world.sampled("spare", 1, since=PLAN_START + timedelta(hours=6)) == 216
    code, document, out = world.json_and_text()  # and the same round as text
    assert code == 0  # how much is used is a figure, not a finding (plan-idle is one)
    main, spare = (p["utilization"] for p in document["plans"])
    assert main == {
        "reserved_instance_hours": 96.0,
        "elapsed_hours": 24.0,
        "sampled_hours": 24.0,
        "coverage": 1.0,
        "in_use_instance_hours": 72.0,
        "in_use_share": 0.75,
        "first_sample": "2027-07-09T12:00:00Z",
        "period_seconds": 300,
        "note": None,
    }
    assert spare == {
        "reserved_instance_hours": 48.0,  # reserved so far needs no metric
        "elapsed_hours": 24.0,
        "sampled_hours": 18.0,
        "coverage": 0.75,
        "in_use_instance_hours": 18.0,
        "in_use_share": 0.5,  # of the 2 x 18 instance-hours sampled
        "first_sample": "2027-07-09T18:00:00Z",
        "period_seconds": 300,
        "note": "the check's samples cover 18 of the 24 hours since the plan started "
        "(sampled from 2027-07-09T18:00:00Z): the share is of those hours",
    }
    status = code
    assert status == 0
    assert use_rows(out) == [
        "  plan   reserved so far  sampled     in use     share  notes",
        "  main   96 inst-h        24 of 24 h  72 inst-h  75%    ok",
        "  spare  48 inst-h        18 of 24 h  18 inst-h  50%    the check's samples cover 18 "
        "of the 24 hours since the plan started (sampled from 2027-07-09T18:00:00Z): the "
        "share is of those hours",
    ]


def test_other_metrics_and_environments_do_not_count(status_world) -> None:
    world = status_world.healthy()
    monitoring = world.plane.monitoring
    main = {"Environment": "dev", "Plan": "main"}
    for name in ("InUseInstanceSeconds", "SampledSeconds"):
        for namespace, dimensions, unit in (
            ("novapod", {"Environment": "prod", "Plan": "main"}, "Seconds"),
            ("novapod", {"Environment": "dev"}, "Seconds"),
            ("other", main, "Seconds"),
            # MetricStat's Unit: only datums put with that unit (API_MetricStat.html).
            ("novapod", main, "Count"),
        ):
            monitoring.put_datum(
                namespace, name, dimensions, at=PLAN_START, value=99 * 3600, unit=unit
            )
    # The unweighted count (the dashboard's) is not read.
    monitoring.put_datum("novapod", "InUseInstances", main, at=PLAN_START, value=99)
    monitoring.put_datum("novapod", "TotalInstances", main, at=PLAN_START, value=99)
    _, document = world.json()
    use = document["plans"][0]["utilization"]
    assert (use["in_use_instance_hours"], use["sampled_hours"]) == (96.0, 24.0)


def test_samples_taken_at_two_intervals_count_each_for_its_own(status_world) -> None:
    """main (4 instances, 24 h): the check ran every 5 minutes with 2 in use for the first
    12 h, then `monitoring.every_minutes` became 15 and it ran every 15 minutes with all 4
    in use: 2 x 12 + 4 x 12 = 72 of 96 instance-hours. The datums are the check's own
    (decisions.metric_data of each schedule's settings, put through PutMetricData): the
    old rule, every sample times the config's interval now (15 min), would give 48 h
    sampled of 24 and 120 instance-hours in use."""
    world = status_world.healthy()
    world.path.write_text(world.path.read_text() + "monitoring: {every_minutes: 15}\n")
    world.plane.monitoring.metrics.clear()
    half = PLAN_START + timedelta(hours=12)
    datums = [
        *check_datums("main", 4, 2, every_minutes=5, since=PLAN_START, until=half),
        *check_datums("main", 4, 4, every_minutes=15, since=half, until=NOW),
        *check_datums("spare", 2, 1, every_minutes=15, since=half, until=NOW),
    ]
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    for batch in decisions.batches(datums):
        cloudwatch.put_metric_data(Namespace="novapod", MetricData=batch)
    code, document, out = world.json_and_text()  # and the same round as text
    assert code == 0
    main, spare = (p["utilization"] for p in document["plans"])
    assert main == {
        "reserved_instance_hours": 96.0,
        "elapsed_hours": 24.0,
        "sampled_hours": 24.0,
        "coverage": 1.0,
        "in_use_instance_hours": 72.0,
        "in_use_share": 0.75,
        "first_sample": "2027-07-09T12:00:00Z",
        "period_seconds": 900,  # the config's interval now: fewer datapoints, same sums
        "note": None,
    }
    assert (spare["sampled_hours"], spare["in_use_instance_hours"], spare["in_use_share"]) == (
        12.0,
        12.0,
        0.5,
    )
    assert spare["note"] == (
        "the check's samples cover 12 of the 24 hours since the plan started (sampled from "
        "2027-07-10T00:00:00Z): the share is of those hours"
    )
    assert use_rows(out)[1] == "  main   96 inst-h        24 of 24 h  72 inst-h  75%    ok"


def test_a_gap_shorter_than_an_interval_at_each_end_is_no_gap(status_world) -> None:
    """Sampled every 60 minutes from 1 h 30 min after the start: 23 of 24 h, short by
    less than an interval at each end, so no note; every 5 minutes from the same time,
    the same gap is 18 intervals: noted."""
    world = status_world.healthy()
    world.plane.monitoring.metrics.clear()
    late = PLAN_START + timedelta(minutes=90)
    world.sampled("main", 4, since=late, every_minutes=60)
    world.sampled("spare", 2, since=late)
    _, document = world.json()
    main, spare = (p["utilization"] for p in document["plans"])
    assert (main["sampled_hours"], main["in_use_share"], main["note"]) == (23.0, 1.0, None)
    assert (spare["sampled_hours"], spare["coverage"]) == (22.5, 0.9375)
    assert spare["note"] is not None and spare["note"].startswith(
        "the check's samples cover 22.5 of the 24 hours"
    )


def test_samples_put_twice_leave_the_share_as_it_is(status_world) -> None:
    """Every run's datums put twice (Scheduler invoked the check twice, or botocore
    retried a PutMetricData whose answer was lost): both sums double, so the share is
    the same 75 %, and the hours are capped at the window (review 22c, finding 9: the
    share of the doubled in-use sum over the capped hours was 100 %)."""
    world = status_world.healthy()
    world.plane.monitoring.metrics.clear()
    half = PLAN_START + timedelta(hours=12)
    datums = [
        *check_datums("main", 4, 2, every_minutes=5, since=PLAN_START, until=half),
        *check_datums("main", 4, 4, every_minutes=5, since=half, until=NOW),
    ]
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    for _ in range(2):
        for batch in decisions.batches(datums):
            cloudwatch.put_metric_data(Namespace="novapod", MetricData=batch)
    _, document = world.json()
    main = document["plans"][0]["utilization"]
    assert (main["sampled_hours"], main["coverage"]) == (24.0, 1.0)
    assert (main["in_use_share"], main["in_use_instance_hours"]) == (0.75, 72.0)
    assert main["note"] is None


def test_a_gap_after_a_day_sampled_hourly_is_seen_at_the_5_minute_interval(
    status_world,
) -> None:
    """main: every 60 minutes for the first 12 h, nothing for the next 1 h 55 min, then
    every 5 minutes: short by 1 h 55 min, more than an interval at each end (60 + 5 min),
    so noted. Two of the longest interval ever sampled (2 h) hid it (review 22c,
    finding 9)."""
    world = status_world.healthy()
    world.plane.monitoring.metrics.clear()
    half = PLAN_START + timedelta(hours=12)
    world.sampled("main", 4, until=half, every_minutes=60)
    world.sampled("main", 4, since=half + timedelta(minutes=115))
    _, document = world.json()
    main = document["plans"][0]["utilization"]
    assert (main["sampled_hours"], main["in_use_share"]) == (22.1, 1.0)
    assert main["note"] is not None and main["note"].startswith(
        "the check's samples cover 22.1 of the 24 hours"
    )


def check_datums(
    plan: str, total: int, in_use: int, *, every_minutes: int, since: Any, until: Any
) -> list[dict[str, Any]]:
    """What the scheduled check puts of an Active plan each run from `since` to before
    `until`, with the schedule's interval `every_minutes` (decisions.metric_data)."""
    raw = {
        "environment": "dev",
        "namespace": "novapod",
        "plans": [{"name": plan, "plan_name": f"novapod-dev-{plan}"}],
        "cluster": None,
        "idle_alert_minutes": 60,
        "ending_alert_days": 3,
        "topic_arn": "arn:aws:sns:us-east-1:111122223333:t",
        "state_table": "t",
        "every_minutes": every_minutes,
        "claim_lease_seconds": 420,
    }
    settings = decisions.parse_settings(raw)
    described = {
        "Status": "Active",
        "TotalInstanceCount": total,
        "AvailableInstanceCount": total - in_use,
        "InUseInstanceCount": in_use,
    }
    sample = decisions.PlanSample(settings.plans[0], described)
    data = []
    when = since
    while when < until:
        data += decisions.metric_data(decisions.Samples((sample,), None), settings, when)
        when += timedelta(minutes=every_minutes)
    return data


def test_without_samples_no_figure_is_invented(status_world) -> None:
    world = status_world.healthy()
    world.plane.monitoring.metrics.clear()
    code, document, out = world.json_and_text()  # and the same round as text
    assert code == 0
    main = document["plans"][0]["utilization"]
    deploy = f"npx cdk deploy -c config={world.path} novapod-dev-monitor"
    assert main == {
        "reserved_instance_hours": 96.0,
        "elapsed_hours": 24.0,
        "sampled_hours": None,
        "coverage": None,
        "in_use_instance_hours": None,
        "in_use_share": None,
        "first_sample": None,
        "period_seconds": 300,
        "note": "no samples of the scheduled check since the plan started: is the monitor "
        f"stack deployed ({deploy}) and its function running?",
    }
    assert use_rows(out)[1] == (
        "  main   96 inst-h        -        -       -      no samples of the scheduled check "
        f"since the plan started: is the monitor stack deployed ({deploy}) and its function "
        "running?"
    )


def test_with_monitoring_disabled_no_metric_is_read(status_world) -> None:
    world = status_world.healthy()
    world.path.write_text(world.path.read_text() + "monitoring: {enabled: false}\n")
    code, document = world.json()
    assert code == 0
    assert "GetMetricData" not in world.plane.operations()
    for plan in document["plans"]:
        use = plan["utilization"]
        assert use["reserved_instance_hours"] == (96.0 if plan["name"] == "main" else 48.0)
        assert (use["in_use_instance_hours"], use["in_use_share"], use["sampled_hours"]) == (
            None,
            None,
            None,
        )
        assert use["note"] == (
            "no samples of its use: monitoring.enabled is false, so the scheduled check is "
            "not deployed"
        )


def test_plans_not_active_read_no_metric(status_world) -> None:
    """Scheduled: nothing reserved yet; Expired: all of it, and no metric is read."""
    world = status_world
    world.buy(world.plan, status="Scheduled", start=NOW + timedelta(days=2), hours=144, count=4,
              fee="55000.00")  # fmt: skip
    world.plane.set_plan_counts(world.plan, available=0, in_use=0)
    world.plane.add_extension(world.plan, 24)
    world.buy(ADOPTED, status="Expired", start=NOW - timedelta(days=20), hours=336, count=2,
              fee="30000.00")  # fmt: skip
    _, document = world.json()
    main, spare = (p["utilization"] for p in document["plans"])
    assert (main["reserved_instance_hours"], main["elapsed_hours"]) == (0.0, 0.0)
    assert (spare["reserved_instance_hours"], spare["elapsed_hours"]) == (672.0, 336.0)
    assert main["in_use_share"] is None and spare["in_use_share"] is None
    assert main["note"] is None and spare["note"] is None
    assert "GetMetricData" not in world.plane.operations()


def test_a_plan_not_bought_has_no_figures(status_world) -> None:
    world = status_world
    world.buy(ADOPTED, status="Active", start=PLAN_START, hours=336, count=2, fee="30000.00")
    world.sampled("spare", 2)
    _, document, out = world.json_and_text()  # and the same round as text
    main, spare = document["plans"]
    assert set(main["utilization"].values()) == {None}
    assert spare["utilization"]["in_use_share"] == 1.0
    assert [row.split()[0] for row in use_rows(out)] == ["plan", "spare"]


def test_the_samples_are_read_page_by_page(status_world) -> None:
    """CloudWatch answers PartialData and a NextToken when MaxDatapoints stops a page
    short: collect follows the token to the last page, and the figures are whole."""
    world = status_world.healthy()
    world.plane.monitoring.max_datapoints = 100  # 3 x 288 datapoints a plan: 9 pages
    _, document = world.json()
    assert [p["utilization"]["in_use_instance_hours"] for p in document["plans"]] == [96.0, 48.0]
    reads = world.plane.calls_to("GetMetricData")
    assert len(reads) == 18
    assert ["NextToken" in r for r in reads[:9]] == [False] + [True] * 8
    assert all(r["ScanBy"] == "TimestampAscending" for r in reads)


def test_the_fakes_pages_say_partial_data_until_the_last(status_world) -> None:
    world = status_world.healthy()
    world.plane.monitoring.max_datapoints = 200
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    request = {
        "MetricDataQueries": [
            {
                "Id": "inuse",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "novapod",
                        "MetricName": "InUseInstances",
                        "Dimensions": [
                            {"Name": "Environment", "Value": "dev"},
                            {"Name": "Plan", "Value": "main"},
                        ],
                    },
                    "Period": 300,
                    "Stat": "Sum",
                },
            }
        ],
        "StartTime": PLAN_START,
        "EndTime": NOW,
    }
    first = cloudwatch.get_metric_data(**request)
    (result,) = first["MetricDataResults"]
    assert (result["StatusCode"], len(result["Values"])) == ("PartialData", 200)
    # Newest first by default (ScanBy TimestampDescending).
    assert result["Timestamps"][0] == NOW - timedelta(minutes=5)
    second = cloudwatch.get_metric_data(**request, NextToken=first["NextToken"])
    (result,) = second["MetricDataResults"]
    assert (result["StatusCode"], len(result["Values"])) == ("Complete", 88)
    assert "NextToken" not in second
    with pytest.raises(ClientError) as refused:
        cloudwatch.get_metric_data(
            **{**request, "EndTime": NOW - timedelta(hours=1)}, NextToken=first["NextToken"]
        )
    assert refused.value.response["Error"]["Code"] == "InvalidNextToken"


@pytest.mark.parametrize(
    ("days", "period"),
    [(10, 300), (20, 300), (70, 3600)],
)
def test_an_old_plan_is_read_at_a_period_cloudwatch_keeps(status_world, days, period) -> None:
    """A start older than 15 days needs a multiple of 300 s, older than 63 days of 3600 s,
    or CloudWatch (and the fake) returns no datapoint."""
    world = status_world
    start = NOW - timedelta(days=days)
    world.buy(world.plan, status="Active", start=PLAN_START, hours=144, count=4, fee="55000.00")
    world.buy(ADOPTED, status="Active", start=start, hours=24 * 90, count=2, fee="30000.00")
    world.sampled("spare", 1, since=start)
    _, document = world.json()
    spare = document["plans"][1]["utilization"]
    assert spare["period_seconds"] == period
    assert (spare["elapsed_hours"], spare["sampled_hours"]) == (24.0 * days, 24.0 * days)
    assert spare["in_use_share"] == 0.5


def test_the_fake_returns_nothing_at_a_period_cloudwatch_no_longer_keeps(status_world) -> None:
    world = status_world.healthy()
    start = NOW - timedelta(days=20)
    world.sampled("main", 4, since=start, until=start + timedelta(hours=1))
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    metric = {
        "Namespace": "novapod",
        "MetricName": "InUseInstances",
        "Dimensions": [{"Name": "Environment", "Value": "dev"}, {"Name": "Plan", "Value": "main"}],
    }

    def values(period: int) -> list[float]:
        answer = cloudwatch.get_metric_data(
            MetricDataQueries=[
                {"Id": "m", "MetricStat": {"Metric": metric, "Period": period, "Stat": "Sum"}}
            ],
            StartTime=start,
            EndTime=start + timedelta(hours=1),
        )
        return answer["MetricDataResults"][0]["Values"]

    assert values(60) == []
    assert values(300) == [4.0] * 12
    with pytest.raises(ClientError) as refused:
        values(90)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
