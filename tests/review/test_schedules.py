"""The review draws each training plan whose schedule is new or moved as a Mermaid gantt
chart (issue 21 §6), from the schedule the capacity stack records in each cloud assembly.

The charts are parsed back (sections, tasks, their start and end) and compared with
`novapod plan --json` of the config (the planner's contract), never with the module that
drew them.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from novapod import review
from novapod.capacity.chart import METADATA_TYPE, PlanChart, chart_json
from novapod.cli import main
from novapod.review import mermaid
from tests.review.conftest import BASE

CAPACITY = "novapod-nova-lite-capacity"
BLOCK = re.compile(r"```mermaid\n(.*?)\n```", re.DOTALL)
TASK = re.compile(r"^    (?P<name>[^:]+?) :(?P<meta>.*)$")


def planned(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    """The plan's JSON (`novapod plan --json`) of the single training plan of `path`."""
    assert main(["plan", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (plan,) = document["training_plans"]
    plan["jobs_by_name"] = {job["name"]: job for job in document["jobs"]}
    return plan


def gantt(block: str) -> tuple[str, list[tuple[str, list[tuple[str, datetime, datetime]]]]]:
    """(title, [(section, [(task, start, end)])]) of one Mermaid gantt block."""
    assert block.startswith("---\ndisplayMode: compact\n---\ngantt\n")
    title = ""
    sections: list[tuple[str, list[tuple[str, datetime, datetime]]]] = []
    for line in block.splitlines()[4:]:
        if line.startswith("    title "):
            title = line.removeprefix("    title ")
        elif line.startswith("    section "):
            sections.append((line.removeprefix("    section "), []))
        elif match := TASK.match(line):
            *_, start, end = (item.strip() for item in match["meta"].split(","))
            when = [datetime.strptime(t, "%Y-%m-%d %H:%M") for t in (start, end)]
            sections[-1][1].append((match["name"], when[0], when[1]))
        else:
            assert line.split(" ", 5)[4] in {
                "dateFormat",
                "axisFormat",
                "tickInterval",
                "todayMarker",
            }, line
    return title, sections


def expected_sections(plan: dict[str, Any], zero: datetime) -> list[tuple[str, list[Any]]]:
    """What the chart of `plan` (its JSON) must hold, hour 0 drawn at `zero`."""

    def at(hour: float) -> datetime:
        return zero + timedelta(minutes=round(hour * 60))

    count = plan["instance_count"]
    sections: list[tuple[str, list[Any]]] = [
        ("plan", [(f"{plan['duration_hours']} h reserved", at(0), at(plan["duration_hours"]))])
    ]
    for slot in plan["schedule"]:
        job = plan["jobs_by_name"][slot["job"]]
        each = job["hours_per_run"]
        runs = [
            (f"run {k + 1} of {job['runs']}", at(slot["start_hour"] + k * each),
             at(slot["start_hour"] + (k + 1) * each))
            for k in range(job["runs"])
        ]  # fmt: skip
        sections.append((f"{slot['job']} ({slot['instance_count']} of {count})", runs))
    idle: list[Any] = []
    for hour in range(plan["duration_hours"]):
        used = sum(
            s["instance_count"] for s in plan["schedule"] if s["start_hour"] <= hour < s["end_hour"]
        )
        name = f"{count - used} of {count} idle"
        if used == count:
            continue
        if idle and idle[-1][0] == name and idle[-1][2] == at(hour):
            idle[-1] = (name, idle[-1][1], at(hour + 1))
        else:
            idle.append((name, at(hour), at(hour + 1)))
    if idle:
        sections.append(("idle", idle))
    return sections


def check_chart(block: str, plan: dict[str, Any]) -> None:
    title, sections = gantt(block)
    assert title.startswith(f"{plan['name']} - {plan['instance_count']} x {plan['instance_type']}")
    zero = sections[0][1][0][1]  # the plan's task starts at hour 0
    assert sections == expected_sections(plan, zero)


def test_a_new_plan_is_drawn_with_every_job_and_run(capsys, variant, tmp_path) -> None:
    nothing = tmp_path / "first"
    nothing.mkdir()
    report = review.build(nothing, variant("base").outdir)
    (entry,) = report["schedules"]
    assert (entry["stack"], entry["plan"], entry["change"]) == (CAPACITY, "lite-sft", "added")
    assert entry["before"] is None
    markdown = review.render(report)
    purchases = markdown[markdown.index("### 1. Purchases") : markdown.index("### 2. Stateful")]
    (block,) = BLOCK.findall(purchases)
    check_chart(block, planned(capsys, BASE))
    assert "Schedule of `lite-sft` (`novapod-nova-lite-capacity`), new" in purchases
    assert (
        "window: starts after 2027-07-05 00:00 UTC, ends before 2027-08-29 00:00 UTC" in purchases
    )
    # The schedule is cloud-assembly metadata, never part of what CloudFormation deploys.
    assert METADATA_TYPE not in json.dumps(variant("base").templates["capacity"])


def test_a_changed_schedule_shows_the_old_and_the_new(capsys, review_of, variant_path) -> None:
    report = review_of("base", "plan-count")  # 4 -> 8 instances
    (entry,) = report["schedules"]
    assert (entry["plan"], entry["change"]) == ("lite-sft", "changed")
    markdown = review.render(report)
    before, after = BLOCK.findall(markdown)
    check_chart(before, planned(capsys, BASE))
    check_chart(after, planned(capsys, variant_path("plan-count")))
    assert markdown.index("Before (base): 4 x") < markdown.index(before)
    assert markdown.index(before) < markdown.index("After (head): 8 x") < markdown.index(after)


@pytest.mark.parametrize("head", ["same", "fsx-throughput"])
def test_an_unchanged_schedule_is_not_drawn(review_of, head) -> None:
    report = review_of("base", head)
    assert report["schedules"] == []
    assert "```mermaid" not in review.render(report)


def _edited_copy(source: Path, target: Path, edit: Any) -> Path:
    """A copy of an assembly (assets left out) whose capacity metadata `edit` changed."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("asset.*"))
    path = target / f"{CAPACITY}.metadata.json"
    metadata = json.loads(path.read_text())
    edit(metadata)
    path.write_text(json.dumps(metadata))
    return target


def _schedule_entries(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for entries in metadata.values() for e in entries if e["type"] == METADATA_TYPE]


def test_a_schedule_that_moves_under_the_same_templates_is_drawn(variant, tmp_path) -> None:
    def later(metadata: dict[str, Any]) -> None:
        (entry,) = _schedule_entries(metadata)
        eval_job = entry["data"]["jobs"][1]
        eval_job.update(start_hour=eval_job["start_hour"] + 4, end_hour=eval_job["end_hour"] + 4)

    head = _edited_copy(variant("base").outdir, tmp_path / "moved", later)
    report = review.build(variant("base").outdir, head)
    assert report["summary"]["changed"] is False
    assert [e["change"] for e in report["schedules"]] == ["changed"]
    markdown = review.render(report)
    assert "No changes: all 8 stacks synthesize the same templates." in markdown
    before, after = BLOCK.findall(markdown)
    # eval (the second job) ran from hour 120, day 6 00:00; now from hour 124.
    assert "run 1 of 4 :j2r1, 2024-01-06 00:00," in before
    assert "run 1 of 4 :j2r1, 2024-01-06 04:00," in after


def test_a_base_that_recorded_no_schedule_shows_the_head_as_new(variant, tmp_path) -> None:
    # A base synthesized before schedules were recorded: no metadata entry of the type.
    def strip(metadata: dict[str, Any]) -> None:
        for path, entries in metadata.items():
            metadata[path] = [e for e in entries if e["type"] != METADATA_TYPE]

    base = _edited_copy(variant("base").outdir, tmp_path / "old", strip)
    report = review.build(base, variant("base").outdir)
    assert [(e["plan"], e["change"]) for e in report["schedules"]] == [("lite-sft", "added")]
    assert "new (none recorded at the base)" in review.render(report)


def test_a_damaged_schedule_is_not_drawn_and_never_fails_the_review(variant, tmp_path) -> None:
    def damage(metadata: dict[str, Any]) -> None:
        (entry,) = _schedule_entries(metadata)
        entry["data"]["jobs"] = "not a list"

    head = _edited_copy(variant("base").outdir, tmp_path / "damaged", damage)
    report = review.build(variant("base").outdir, head)
    assert report["schedules"] == []


def test_schedules_take_at_most_half_the_comment(review_of) -> None:
    report = dict(review_of("base", "plan-count"))
    (entry,) = report["schedules"]
    report["schedules"] = [dict(entry, plan=f"p{i}") for i in range(60)]
    markdown = review.render(report)
    assert len(markdown) < review.COMMENT_LIMIT
    shown = len(BLOCK.findall(markdown)) // 2
    assert 0 < shown < 60
    assert f"{60 - shown} schedules" in markdown  # counted as left out
    assert markdown.index("### 2. Stateful") < markdown.index("### 3. Security")
    assert markdown.count("```") % 2 == 0  # no block cut in half


def _chart(name: str) -> PlanChart:
    from novapod.capacity.chart import JobBar

    bar = JobBar(name, 1, 0, 5, 3, 1.5, ())
    return PlanChart("p;1", "ml.p5.48xlarge", 2, 24, 24, None, None, (bar,))


def test_mermaid_special_characters_are_left_out_of_names() -> None:
    lines = mermaid.gantt(_chart("a:b;c#d%%e`f\ng"))
    (section,) = [line for line in lines if line.startswith("    section a")]
    assert section == "    section a b c d%e f g (1 of 2)"
    tasks = [line for line in lines if TASK.match(line)]
    assert len(tasks) == 1 + 3 + 2  # the plan, three runs, idle before and after hour 5
    assert all(line.count(":") == 1 + 2 for line in tasks)  # the task's colon, two HH:mm
    assert "    title p 1 - 2 x ml.p5.48xlarge for 24 h (1 day)" in lines
    # Runs of 1.5 h end mid-hour: to the minute.
    assert "    run 3 of 3 :j1r3, 2024-01-01 03:00, 2024-01-01 04:30" in lines


def test_a_chart_with_many_runs_draws_one_task_per_job() -> None:
    from novapod.capacity.chart import JobBar

    many = JobBar("sweep", 1, 0, 100, 50, 2, ())
    chart = PlanChart("p", "ml.p5.48xlarge", 1, 120, 120, None, None, (many,))
    (task,) = [line for line in mermaid.gantt(chart) if line.startswith("    runs ")]
    assert task == "    runs 1-50, 2 h each :j1, 2024-01-01 00:00, 2024-01-05 04:00"
    assert chart_json(chart)["jobs"][0]["runs"] == 50


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a%%%b", "a%b"),  # no `%%` left: mid-line it would start a Mermaid comment
        ("a%%b%%%%c", "a%b%c"),
        ("plan: lite#1;`x`", "plan lite 1 x"),
        ("  two\n lines  ", "two lines"),
    ],
)
def test_a_label_is_safe_for_mermaid(value: str, shown: str) -> None:
    from novapod.review import mermaid

    assert mermaid.label(value) == shown
    assert mermaid.label(shown) == shown
