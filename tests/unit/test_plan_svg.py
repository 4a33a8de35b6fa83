"""`novapod plan --format svg | html`: each plan's schedule as a Gantt chart.

The picture is parsed with xml.etree and checked against the plan's JSON (`novapod plan
--json`, the contract), never against the chart module that drew it: every plan with
jobs has its window, every job its row in the schedule's order, every run its bar where
its hours put it, inside the window; the hours where the plan holds more instances than
the jobs use are hatched, with the number idle.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from novapod.capacity import CapacityPlan, JobPlan, PlanRequest, packing
from novapod.capacity.svg import render_html, render_svg
from novapod.cli import main
from tests.conftest import ALL_CONFIGS, ROOT

SVG = "{http://www.w3.org/2000/svg}"
NOVA_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"
PLANNED = [p for p in ALL_CONFIGS if "training_plans:" in p.read_text()]
TOLERANCE = 0.01  # coordinates are written with two decimals


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["plan", *args])
    return status, capsys.readouterr().out


def elements(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if e.get("class") == cls]


def title(element: ET.Element) -> str:
    found = element.find(SVG + "title")
    assert found is not None and found.text, f"{element.tag} {element.attrib} has no <title>"
    return found.text


def box(rect: ET.Element) -> tuple[float, float, float, float]:
    """x, y, width, height."""
    return tuple(float(rect.get(k, "nan")) for k in ("x", "y", "width", "height"))  # type: ignore[return-value]


def idle_hours(plan: dict[str, Any]) -> dict[int, int]:
    """Hour -> instances idle, from the JSON schedule (hours the plan holds but no job uses)."""
    found = {}
    for hour in range(plan["duration_hours"]):
        used = sum(
            s["instance_count"] for s in plan["schedule"] if s["start_hour"] <= hour < s["end_hour"]
        )
        if used < plan["instance_count"]:
            found[hour] = plan["instance_count"] - used
    return found


def checked_plans(capsys: pytest.CaptureFixture[str], path: Path) -> Iterator[str]:
    """Check every plan with jobs in `path`'s picture against its JSON; yield their names."""
    status, out = cli(capsys, str(path), "--json")
    assert status == 0
    document = json.loads(out)
    jobs = {job["name"]: job for job in document["jobs"]}
    status, out = cli(capsys, str(path), "--format", "svg")
    assert status == 0
    root = ET.fromstring(out)
    assert root.tag == SVG + "svg" and root.get("role") == "img"
    assert title(root).startswith("Training-plan schedules of ")
    drawn = {g.get("data-plan"): g for g in elements(root, "g", "plan")}
    planned = [p for p in document["training_plans"] if p["schedule"]]
    assert sorted(drawn) == sorted(p["name"] for p in planned)
    for plan in planned:
        group = drawn[plan["name"]]
        assert plan["name"] in title(group)
        (window,) = elements(group, "rect", "window")
        wx, wy, ww, wh = box(window)
        scale = ww / plan["duration_hours"]
        header = "".join(group.itertext())
        assert f"{plan['instance_count']} x {plan['instance_type']}" in header
        for bound in (plan["start_after"], plan["end_before"]):
            if bound:  # the window's dates, as a person reads them
                assert bound[:10] + " " + bound[11:16] in header
        rows = elements(group, "g", "job")
        assert [g.get("data-job") for g in rows] == [s["job"] for s in plan["schedule"]]
        tops = []
        for slot, row in zip(plan["schedule"], rows, strict=True):
            job = jobs[slot["job"]]
            assert slot["job"] in title(row)
            name = [t for t in elements(row, "text", "job-name")]
            assert [t.text for t in name] == [slot["job"]]
            runs = elements(row, "rect", "run")
            assert [r.get("data-run") for r in runs] == [str(k + 1) for k in range(job["runs"])]
            for k, run in enumerate(runs):
                x, y, width, height = box(run)
                start = slot["start_hour"] + k * job["hours_per_run"]
                assert abs(x - (wx + start * scale)) <= TOLERANCE, (plan["name"], slot, k)
                assert abs(width - job["hours_per_run"] * scale) <= TOLERANCE
                assert wx - TOLERANCE <= x and x + width <= wx + ww + TOLERANCE
                assert wy <= y and y + height <= wy + wh
                assert f"run {k + 1} of {job['runs']}" in title(run)
            tops.append(box(runs[0])[1])
            waits = elements(row, "line", "wait")
            if slot["start_hour"] > 0:  # the dashed line ends where the job starts
                assert max(float(w.get("x2", "nan")) for w in waits) == pytest.approx(
                    wx + slot["start_hour"] * scale, abs=TOLERANCE
                )
            else:
                assert waits == []
        assert tops == sorted(tops) and len(set(tops)) == len(tops)  # rows top to bottom
        expected = idle_hours(plan)
        shaded: dict[int, int] = {}
        for rect in elements(group, "rect", "idle"):
            x, _, width, _ = box(rect)
            first, last = round((x - wx) / scale), round((x + width - wx) / scale)
            for hour in range(first, last):
                shaded[hour] = int(rect.get("data-instances", "0"))
            assert f"{rect.get('data-instances')} of {plan['instance_count']}" in title(rect)
        assert shaded == expected, plan["name"]
        yield plan["name"]


def test_every_plan_job_and_run_of_the_nova_jobs_example_is_drawn(capsys) -> None:
    assert list(checked_plans(capsys, NOVA_JOBS)) == ["tune", "rl"]
    _, out = cli(capsys, str(NOVA_JOBS), "--format", "svg")
    root = ET.fromstring(out)
    (rl,) = [g for g in elements(root, "g", "plan") if g.get("data-plan") == "rl"]
    # rl holds 8 instances; micro-ppo uses 7 of them for 8 h, then all 8 are idle.
    idle = [(r.get("data-instances"), title(r)) for r in elements(rl, "rect", "idle")]
    assert idle == [
        ("1", "hours 24-32: 1 of 8 instances idle"),
        ("8", "hours 32-48: 8 of 8 instances idle"),
    ]
    (ppo,) = [g for g in elements(rl, "g", "job") if g.get("data-job") == "micro-ppo"]
    assert [title(w) for w in elements(ppo, "line", "wait")] == [
        "micro-ppo waits for nova2-rft to finish: hours 0-24"
    ]
    assert [p.get("data-after") for p in elements(ppo, "path", "dependency")] == ["nova2-rft"]


@pytest.mark.parametrize("path", PLANNED, ids=lambda p: p.name)
def test_every_shipped_config_draws_its_plans(capsys, path) -> None:
    list(checked_plans(capsys, path))


def test_the_picture_is_the_same_bytes_every_time(capsys) -> None:
    first = cli(capsys, str(NOVA_JOBS), "--format", "svg")
    assert first == cli(capsys, str(NOVA_JOBS), "--format", "svg")
    assert first[1].startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg ')


def test_html_holds_the_same_svg(capsys) -> None:
    _, svg = cli(capsys, str(NOVA_JOBS), "--format", "svg")
    status, html = cli(capsys, str(NOVA_JOBS), "--format", "html")
    assert status == 0
    assert html.startswith("<!DOCTYPE html>\n") and html.endswith("</html>\n")
    assert "<title>Training-plan schedules of nova-jobs</title>" in html
    inline = html[html.index("<svg ") : html.index("</svg>") + len("</svg>\n")]
    assert inline == svg.split("\n", 1)[1]  # the document without its XML declaration


def test_format_is_one_of_the_outputs(capsys) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["plan", str(NOVA_JOBS), "--json", "--format", "svg"])
    assert raised.value.code == 2
    assert "not allowed with argument --json" in capsys.readouterr().err


def _job(name: str, runs: int, hours: float, count: int = 1) -> JobPlan:
    return JobPlan(name, "lite", "sft-lora", "ml.p5.48xlarge", count, hours, runs, runs * hours)


def _plan(
    name: str, slots: list[packing.Slot], jobs: list[JobPlan], duration: int, held: int
) -> CapacityPlan:
    request = PlanRequest(
        name=name,
        instance_type="ml.p5.48xlarge",
        instance_count=2,
        duration_hours=duration,
        start_after="2027-07-01T00:00:00+02:00",
        end_before=None,
        target_resources=("hyperpod-cluster",),
        jobs=tuple(j.name for j in jobs),
        required_instance_hours=sum(j.instance_hours for j in jobs),
        reserved_instance_hours=float(2 * held),
        waste_instance_hours=0.0,
        schedule=tuple(slots),
    )
    return CapacityPlan(jobs=jobs, training_plans=[request], on_demand=[], notes=[])


def test_names_are_escaped_whatever_they_hold() -> None:
    # Config validation allows only DNS labels for plan and job names; the renderer does
    # not count on it.
    hostile = "a<b>&\"c'\x01"
    plan = _plan(
        "p&<q>", [packing.Slot(hostile, 0, 5, 1)], [_job(hostile, 3, 1.5)], duration=24, held=24
    )
    document = render_svg(plan, 'env"<x>')
    root = ET.fromstring(document)  # well-formed
    (row,) = elements(root, "g", "job")
    assert row.get("data-job") == "a<b>&\"c'"  # the control character is dropped
    assert [t.text for t in elements(row, "text", "job-name")] == ["a<b>&\"c'"]
    assert title(root) == 'Training-plan schedules of env"<x>'
    assert "<b>" not in document and "&amp;" in document
    (group,) = elements(root, "g", "plan")
    assert group.get("data-plan") == "p&<q>"
    # 1.5 h runs: the third ends at 4.5 h, within the 5 hours the job holds.
    assert [title(r).split(":")[1] for r in elements(row, "rect", "run")] == [
        " hours 0-1.5 (day 1 00",
        " hours 1.5-3 (day 1 01",
        " hours 3-4.5 (day 1 03",
    ]
    # A window in another offset keeps its offset.
    assert "starts after 2027-07-01T00:00+02:00" in "".join(group.itertext())
    ET.fromstring(render_html(plan, "env").split("<body>\n")[1].split("</body>")[0])


def test_an_extended_plan_draws_its_extension_and_the_runs_in_it() -> None:
    # Bought for 48 h, extended by 24: the planner reserved 72 h and a job runs into them.
    plan = _plan("ext", [packing.Slot("long", 0, 60, 2)], [_job("long", 2, 30, 2)], 48, held=72)
    root = ET.fromstring(render_svg(plan, "env"))
    (window,) = elements(root, "rect", "window")
    (extension,) = elements(root, "rect", "extension")
    wx, _, ww, _ = box(window)
    ex, _, ew, _ = box(extension)
    assert ex == pytest.approx(wx + ww * 48 / 72) and ex + ew == pytest.approx(wx + ww)
    assert "48 h bought + 24 h extension" in "".join(root.itertext())
    last = elements(root, "rect", "run")[-1]
    x, _, width, _ = box(last)
    assert x + width == pytest.approx(wx + ww * 60 / 72, abs=TOLERANCE)
    (idle,) = elements(root, "rect", "idle")
    assert title(idle) == "hours 60-72: 2 of 2 instances idle"


def test_a_config_without_jobs_on_plans_says_so(capsys) -> None:
    status, out = cli(capsys, str(ROOT / "config" / "default.yaml"), "--format", "svg")
    assert status == 0
    root = ET.fromstring(out)
    assert elements(root, "g", "plan") == []
    assert "No training plan has jobs to schedule." in "".join(root.itertext())
