"""Packing jobs side by side on a plan's instances: schedules, shapes, split advice,
the schedule view, and the same plan from the same jobs in any process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from novapod.capacity import (
    CAPACITY_PLAN_JSON_SCHEMA,
    PLAN_INSTANCE_COUNTS,
    CapacityPlan,
    PlanSettings,
    Workload,
    capacity_plan_json,
    packing,
    plan_capacity,
    render_gantt,
    render_table,
    split_advice,
)
from tests import json_schemas
from tests.conftest import ROOT


@pytest.fixture(autouse=True)
def _fresh_packings() -> None:
    """Pack anew in every test: packing.pack keeps its results, and a bug behind a kept
    result (mutmut forks from a warmed-up process) must still fail these tests."""
    packing.clear_cache()


# --------------------------------------------------------------------------- properties

# (model, technique) rows on p5 whose instance counts the catalog documents.
_ROWS = [
    ("micro", "cpt"),
    ("lite", "cpt"),
    ("pro", "cpt"),
    ("micro", "sft-lora"),
    ("lite", "sft-full"),
    ("pro", "dpo-full"),
    ("micro", "evaluation"),
    ("micro", "ppo"),
    ("lite", "ppo"),
    ("pro", "ppo"),
]


@st.composite
def _job_sets(draw: st.DrawFn) -> tuple[list[Workload], list[PlanSettings]]:
    """Up to 9 jobs on up to 3 plans; about a third wait for earlier jobs (any plan)."""
    workloads: list[Workload] = []
    for i in range(draw(st.integers(1, 9))):
        model, technique = draw(st.sampled_from(_ROWS))
        names = [w.name for w in workloads]
        after = tuple(draw(st.sets(st.sampled_from(names), max_size=2))) if names else ()
        if draw(st.integers(0, 2)) > 0:
            after = ()
        workloads.append(
            Workload(
                name=f"j{i}",
                model=model,
                technique=technique,
                runs=draw(st.integers(1, 3)),
                hours_per_run=None
                if technique == "ppo" and draw(st.booleans())
                else draw(st.sampled_from([0.5, 1.5, 4, 8, 12, 20, 24, 30, 47.25])),
                instance_count=draw(st.none() | st.sampled_from([1, 3, 12, 40]))
                if technique in ("cpt", "sft-lora")
                else None,
                plan=draw(st.sampled_from(["a", "a", "b", "c"])),
                after=after,
            )
        )
    # Sometimes a plan's count or duration is given (large enough to be valid).
    plans = []
    if draw(st.booleans()):
        plans.append(PlanSettings("a", instance_count=64))
    if draw(st.booleans()):
        plans.append(PlanSettings("b", duration_hours=draw(st.sampled_from([168, 720]))))
    return workloads, plans


def _check_plan(plan: CapacityPlan, workloads: list[Workload]) -> None:
    jobs = {job.name: job for job in plan.jobs}
    waits = {w.name: w.after for w in workloads}
    for request in plan.training_plans:
        slots = {slot.job: slot for slot in request.schedule}
        assert sorted(slots) == sorted(request.jobs)  # every job, once, in one plan
        assert request.instance_count in PLAN_INSTANCE_COUNTS  # a count plans sell
        assert request.duration_hours % 24 == 0  # whole days
        assert 24 <= request.duration_hours <= 4368
        assert request.reserved_instance_hours >= request.required_instance_hours
        for name, slot in slots.items():
            job = jobs[name]
            assert slot.instance_count == job.instance_count
            assert slot.start_hour >= 0
            assert slot.end_hour - slot.start_hour >= job.hours_per_run * job.runs - 1e-9
            assert slot.end_hour <= request.duration_hours  # never past the plan's end
            for before in waits[name]:
                if before in slots:  # in the same plan: its order holds
                    assert slots[before].end_hour <= slot.start_hour
        for hour in range(request.duration_hours):
            in_use = sum(
                s.instance_count for s in slots.values() if s.start_hour <= hour < s.end_hour
            )
            assert in_use <= request.instance_count
        bound = request.lower_bound_instance_hours
        assert bound is None or bound <= request.reserved_instance_hours


@settings(max_examples=150, deadline=None)
@given(_job_sets())
def test_random_job_sets_pack_into_valid_plans(
    job_set: tuple[list[Workload], list[PlanSettings]],
) -> None:
    workloads, plans = job_set
    try:
        plan = plan_capacity(workloads, plans)
    except ValueError as error:  # PlanningError: a given count or duration too small
        assert str(error).startswith("training plan ")
        assert "duration_hours" in str(error) or "instance_count" in str(error)
        return
    _check_plan(plan, workloads)
    for advice in split_advice(plan):
        assert advice.split_reserved_instance_hours < advice.reserved_instance_hours
        assert sorted(j for part in advice.parts for j in part.jobs) == sorted(
            next(r for r in plan.training_plans if r.name == advice.plan).jobs
        )
        for part in advice.parts:
            assert part.instance_count in PLAN_INSTANCE_COUNTS
            assert part.duration_hours % 24 == 0
            assert part.reserved_instance_hours >= part.required_instance_hours
    json_schemas.validate(
        json.loads(json.dumps(capacity_plan_json(plan))), CAPACITY_PLAN_JSON_SCHEMA
    )


@st.composite
def _tasks(draw: st.DrawFn) -> list[packing.Task]:
    tasks: list[packing.Task] = []
    for i in range(draw(st.integers(1, 8))):
        earlier = [t.name for t in tasks]
        tasks.append(
            packing.Task(
                name=f"t{i}",
                instance_count=draw(st.sampled_from([1, 2, 3, 5, 8, 11, 16, 24])),
                hours=draw(st.integers(1, 60)),
                after=tuple(draw(st.sets(st.sampled_from(earlier), max_size=2))) if earlier else (),
            )
        )
    return tasks


@settings(max_examples=150, deadline=None)
@given(_tasks())
def test_the_chosen_shape_is_no_worse_than_any_greedy_shape(tasks: list[packing.Task]) -> None:
    """The solver only ever improves on the greedy schedules, and the reported bound is
    below every shape tried."""
    widest = max(t.instance_count for t in tasks)
    counts = [c for c in PLAN_INSTANCE_COUNTS if c >= widest]
    best = packing.pack(tasks, counts)
    greedy = packing.pack(tasks, counts, solver=False)
    assert best is not None and greedy is not None
    assert (best.reserved_instance_hours, best.instance_count) <= (
        greedy.reserved_instance_hours,
        greedy.instance_count,
    )
    assert best.lower_bound_instance_hours <= best.reserved_instance_hours
    for hour in range(best.duration_hours):
        in_use = sum(s.instance_count for s in best.slots if s.start_hour <= hour < s.end_hour)
        assert in_use <= best.instance_count
    # No count reaches fewer days than the longest chain of waits allows.
    assert best.duration_hours >= packing.lower_bound_hours(tasks, 64)


def test_the_solver_finds_a_shorter_schedule_than_the_greedy_rules() -> None:
    # j0 -> j1 -> j2 and j0 -> j3; j2 and j4 (11 wide each) cannot overlap on 16, nor j4
    # with j0 or j3. Greedy runs the long chain first and puts j4 last: 74 h, 4 days.
    # j4 before j2 (beside j1), j3 last: 68 h, 3 days of 16, 1152 instance-hours.
    tasks = [
        packing.Task("j0", 8, 12),
        packing.Task("j1", 2, 10, ("j0",)),
        packing.Task("j2", 11, 26, ("j1",)),
        packing.Task("j3", 8, 4, ("j0",)),
        packing.Task("j4", 11, 26),
    ]
    greedy = packing.pack(tasks, (16, 32, 64), solver=False)
    assert greedy is not None
    assert (greedy.instance_count, greedy.duration_hours) == (16, 96)
    solved = packing.pack(tasks, (16, 32, 64))
    assert solved is not None
    assert (solved.instance_count, solved.duration_hours) == (16, 72)
    assert max(slot.end_hour for slot in solved.slots) <= 72
    assert solved.proven and solved.lower_bound_instance_hours == 16 * 72
    assert {s.job: (s.start_hour, s.end_hour) for s in solved.slots} == {
        "j0": (0, 12),
        "j1": (12, 22),
        "j2": (38, 64),
        "j3": (64, 68),
        "j4": (12, 38),
    }


def test_a_given_duration_the_greedy_rules_miss_is_met_by_the_solver() -> None:
    tasks = [
        packing.Task("j0", 8, 12),
        packing.Task("j1", 2, 10, ("j0",)),
        packing.Task("j2", 11, 26, ("j1",)),
        packing.Task("j3", 8, 4, ("j0",)),
        packing.Task("j4", 11, 26),
    ]
    greedy = packing.pack(tasks, (16, 32, 64), days=3, solver=False)
    assert greedy is not None and greedy.instance_count == 32
    found = packing.pack(tasks, (16, 32, 64), days=3)
    assert found is not None and found.instance_count == 16
    assert max(slot.end_hour for slot in found.slots) <= 72  # inside the plan
    assert found.lower_bound_instance_hours == 16 * 72
    # Two days need 32 (j2 and j4 side by side); one day is shorter than the chain.
    assert packing.pack(tasks, (16,), days=2) is None
    assert packing.pack(tasks, (16, 32), days=2) is not None
    assert packing.pack(tasks, (64,), days=1) is None


def test_bounds_count_the_chain_the_area_and_the_wide_jobs() -> None:
    chain = [packing.Task("a", 1, 10), packing.Task("b", 1, 5, ("a",))]
    assert packing.lower_bound_hours(chain, 8) == 15
    area = [packing.Task(f"w{i}", 4, 10) for i in range(5)]  # 200 instance-hours on 8
    assert packing.lower_bound_hours(area, 8) == 25
    wide = [packing.Task("x", 5, 10), packing.Task("y", 5, 7), packing.Task("z", 1, 1)]
    assert packing.lower_bound_hours(wide, 8) == 17  # 5 + 5 > 8: one at a time
    assert packing.lower_bound_hours([], 8) == 0


@pytest.mark.parametrize(
    ("best", "count", "days"),
    [
        ((1, 3), 2, 1),  # 2 x 1 < 1 x 3; 2 x 2 is more
        ((8, 3), 8, 2),  # the same count must take fewer days
        ((8, 3), 16, 1),  # 16 x 1 < 24; 16 x 2 is more
        ((8, 2), 4, 4),  # fewer instances may tie: 4 x 4 = 8 x 2
        ((8, 5), 4, 10),
    ],
)
def test_the_solver_only_looks_for_shapes_that_beat_the_best(
    best: tuple[int, int], count: int, days: int
) -> None:
    found = packing._most_days_beating(packing._Candidate(*best, starts=[]), count)
    assert found == days
    assert isinstance(found, int)  # a bound of the solver's integer variable


# --------------------------------------------------------------------------- the example

# One job per row of the Nova compute tables on p5 (docs: nova-hyperpod.md section 1,
# novapod/nova/catalog.yaml), as the issue counts them: CPT, DPO, SFT LoRA and SFT full
# for Micro, Lite and Pro, one evaluation, 24 h each, and PPO for all three models at
# their documented hours. Instance counts come from the catalog; 2,494 instance-hours.
_EXAMPLE = [
    Workload("cpt-micro", "micro", "cpt", hours_per_run=24),
    Workload("cpt-lite", "lite", "cpt", hours_per_run=24),
    Workload("cpt-pro", "pro", "cpt", hours_per_run=24),
    Workload("dpo-micro", "micro", "dpo-full", hours_per_run=24),
    Workload("dpo-lite", "lite", "dpo-full", hours_per_run=24),
    Workload("dpo-pro", "pro", "dpo-full", hours_per_run=24),
    Workload("sftl-micro", "micro", "sft-lora", hours_per_run=24),
    Workload("sftl-lite", "lite", "sft-lora", hours_per_run=24),
    Workload("sftl-pro", "pro", "sft-lora", hours_per_run=24),
    Workload("sftf-micro", "micro", "sft-full", hours_per_run=24),
    Workload("sftf-lite", "lite", "sft-full", hours_per_run=24),
    Workload("sftf-pro", "pro", "sft-full", hours_per_run=24),
    Workload("eval", "lite", "evaluation", hours_per_run=24),
    Workload("ppo-micro", "micro", "ppo"),
    Workload("ppo-lite", "lite", "ppo"),
    Workload("ppo-pro", "pro", "ppo"),
]


def test_the_issue_example_shares_one_p5_plan_at_most_1_25_times_what_it_needs() -> None:
    plan = plan_capacity(_EXAMPLE)
    [request] = plan.training_plans
    assert request.required_instance_hours == 2494
    # One after another it was 32 x 16 days = 12,288 (4.9x); side by side 32 x 4 days.
    assert (request.instance_count, request.duration_hours) == (32, 96)
    assert request.reserved_instance_hours == 3072
    assert request.reserved_instance_hours / request.required_instance_hours <= 1.25
    assert request.lower_bound_instance_hours == 3072  # 3 days cannot hold 2,494 on 32
    _check_plan(plan, _EXAMPLE)


def test_the_split_advice_finds_the_issue_example_at_most_1_10_times() -> None:
    plan = plan_capacity(_EXAMPLE)
    [advice] = split_advice(plan)
    assert advice.plan == "p5-48xlarge"
    assert advice.reserved_instance_hours == 3072
    assert advice.split_reserved_instance_hours == 2688
    assert advice.saved_instance_hours == 384
    assert advice.split_reserved_instance_hours / advice.required_instance_hours <= 1.10
    # The Lite CPT alone on 16 for a day; the rest side by side on 32 for three days.
    assert [(p.instance_count, p.duration_hours) for p in advice.parts] == [(16, 24), (32, 72)]
    assert advice.parts[0].jobs == ("cpt-lite",)
    assert advice.parts[1].jobs == tuple(w.name for w in _EXAMPLE if w.name != "cpt-lite")
    assert [p.required_instance_hours for p in advice.parts] == [384, 2110]
    # Advice only: the plan itself is what it was.
    assert plan.training_plans[0].jobs == tuple(w.name for w in _EXAMPLE)

    text = render_table(plan, advice=[advice])
    assert (
        "Split advice (never applied: move jobs with plan: or instance_group)\n"
        "- p5-48xlarge: 2 plans would reserve 2688 instance-hours instead of 3072, 384 fewer "
        "(1.08x instead of 1.23x the 2494 required):\n"
        "  1. 16 x 24 h, 384 reserved: cpt-lite\n"
        "  2. 32 x 72 h, 2304 reserved: cpt-micro, cpt-pro, dpo-micro, dpo-lite, dpo-pro, "
        "sftl-micro, sftl-lite, sftl-pro, sftf-micro, sftf-lite, sftf-pro, eval, ppo-micro, "
        "ppo-lite, ppo-pro\n"
    ) in text
    document = capacity_plan_json(plan, advice=[advice])
    json_schemas.validate(json.loads(json.dumps(document)), CAPACITY_PLAN_JSON_SCHEMA)
    assert document["split_advice"][0]["saved_instance_hours"] == 384
    assert document["split_advice"][0]["plans"][0]["jobs"] == ["cpt-lite"]


def test_jobs_that_wait_for_each_other_stay_in_one_plan_of_a_split() -> None:
    # The example, with the small SFT jobs waiting for the Pro CPT: they would go to the
    # small plan, but cannot leave the CPT's plan.
    waiting = [
        Workload(w.name, w.model, w.technique, hours_per_run=w.hours_per_run, after=("cpt-pro",))
        if w.name in ("sftl-micro", "sftl-lite")
        else w
        for w in _EXAMPLE
    ]
    [advice] = split_advice(plan_capacity(waiting))
    [with_cpt] = [p for p in advice.parts if "cpt-pro" in p.jobs]
    assert {"sftl-micro", "sftl-lite"} <= set(with_cpt.jobs)


def _parts(found: tuple[packing.Packing, ...] | None) -> list[tuple[int, int, tuple[str, ...]]]:
    assert found is not None
    return [(p.instance_count, p.duration_hours, tuple(s.job for s in p.slots)) for p in found]


_C = PLAN_INSTANCE_COUNTS
_T = packing.Task


def test_two_jobs_that_waste_each_others_plan_are_split() -> None:
    # Side by side 64 + 1 > 64: one after another, 31 days of 64 instances.
    two = [_T("wide", 64, 24), _T("long", 1, 720)]
    whole = packing.pack(two, (64,))
    assert whole is not None and whole.reserved_instance_hours == 64 * 744
    assert _parts(packing.split_plan(two, _C)) == [(64, 24, ("wide",)), (1, 720, ("long",))]


def test_a_split_goes_on_while_it_helps_up_to_the_parts_allowed() -> None:
    jobs = [
        _T("t0", 2, 100),
        _T("t1", 8, 4),
        _T("t2", 1, 12),
        _T("t3", 64, 100),
        _T("t4", 11, 48),
        _T("t5", 1, 30),
        _T("t6", 24, 24),
    ]
    # 240 + 7680 + 768 + 768 = 9456 instance-hours in four plans.
    assert _parts(packing.split_plan(jobs, _C)) == [
        (2, 120, ("t0",)),
        (64, 120, ("t3",)),
        (16, 48, ("t4", "t5")),
        (32, 24, ("t1", "t2", "t6")),
    ]
    assert _parts(packing.split_plan(jobs, _C, max_parts=3)) == [
        (2, 120, ("t0",)),
        (64, 120, ("t3",)),
        (32, 72, ("t1", "t2", "t4", "t5", "t6")),
    ]
    assert len(_parts(packing.split_plan(jobs, _C, max_parts=2))) == 2


def test_moving_single_jobs_improves_on_the_cuts() -> None:
    # The cuts by width, hours and instance-hours give 32 x 9 days + 64 x 10 days
    # (22,272); moving t1 to the 32-instance side gives 32 x 10 + 64 x 9 (21,504).
    jobs = [
        _T("t0", 32, 200),
        _T("t1", 32, 30),
        _T("t2", 64, 8),
        _T("t3", 40, 200),
        _T("t4", 24, 12),
    ]
    assert _parts(packing.split_plan(jobs, _C)) == [
        (32, 240, ("t0", "t1")),
        (64, 216, ("t2", "t3", "t4")),
    ]


def test_cuts_by_instance_hours_find_what_the_others_miss() -> None:
    jobs = [
        _T("t0", 16, 30),
        _T("t1", 6, 4),
        _T("t2", 11, 200),
        _T("t3", 2, 48),
        _T("t4", 32, 8),
        _T("t5", 64, 72),
        _T("t6", 16, 12),
    ]
    assert _parts(packing.split_plan(jobs, _C)) == [
        (64, 72, ("t5",)),
        (32, 24, ("t4", "t6")),
        (16, 240, ("t0", "t1", "t2", "t3")),
    ]


def test_equal_splits_keep_the_first_found() -> None:
    # t1 alone (8 x 9 days) or with t3 (8 x 13 days): 5,568 instance-hours either way.
    jobs = [_T("t0", 16, 4), _T("t1", 8, 200), _T("t2", 24, 72), _T("t3", 8, 100), _T("t4", 11, 24)]
    assert _parts(packing.split_plan(jobs, _C)) == [
        (8, 216, ("t1",)),
        (32, 120, ("t0", "t2", "t3", "t4")),
    ]


def test_a_split_keeps_to_the_plans_window() -> None:
    # Within 10 days: one plan of 64 for 10 days (15,360); t3 alone saves 672.
    jobs = [
        _T("t0", 32, 100),
        _T("t1", 24, 200),
        _T("t2", 40, 24),
        _T("t3", 4, 200),
        _T("t4", 24, 12),
    ]
    whole = packing.pack(jobs, (64,), max_days=10)
    assert whole is not None and whole.reserved_instance_hours == 15360
    assert _parts(packing.split_plan(jobs, _C, max_days=10)) == [
        (4, 216, ("t3",)),
        (64, 216, ("t0", "t1", "t2", "t4")),
    ]
    four = [_T("t0", 4, 72), _T("t1", 64, 4), _T("t2", 2, 200), _T("t3", 2, 48)]
    assert _parts(packing.split_plan(four, _C, max_days=10)) == [
        (64, 24, ("t1",)),
        (2, 216, ("t2",)),
        (4, 72, ("t0",)),
        (2, 48, ("t3",)),
    ]


def test_no_advice_when_one_plan_is_already_the_cheapest() -> None:
    plan = plan_capacity([Workload(f"c{i}", "lite", "cpt", hours_per_run=24) for i in range(4)])
    assert split_advice(plan) == []
    assert "Split advice (never applied" in render_table(plan, advice=[])
    assert "(none: no split into plans that sell reserves fewer instance-hours)" in render_table(
        plan, advice=[]
    )


def test_a_plan_whose_settings_fix_its_shape_gets_no_advice() -> None:
    fixed = [PlanSettings("p5-48xlarge", instance_count=32)]
    assert split_advice(plan_capacity(_EXAMPLE, fixed)) == []


# --------------------------------------------------------------------------- the view

_GANTT = """\
p5-48xlarge: 8 x ml.p5.48xlarge for 48 h (2 days); one cell = 1 h
job   count  hours  |1                       |2                       |  (day)
sft       2   0-20  |####################....|........................|
ppo       7  20-28  |....................####|####....................|
eval      1    0-2  |##......................|........................|
"""


def test_the_gantt_draws_each_job_as_a_bar_over_the_days() -> None:
    plan = plan_capacity(
        [
            Workload("sft", "micro", "sft-lora", hours_per_run=10, runs=2),
            Workload("ppo", "micro", "ppo"),
            Workload("eval", "micro", "evaluation", hours_per_run=0.5, runs=4),
        ]
    )
    assert render_gantt(plan) == _GANTT


def test_the_gantt_of_a_long_plan_uses_whole_days_per_cell() -> None:
    plan = plan_capacity(
        [
            Workload("long", "micro", "cpt", hours_per_run=1000),
            Workload("then", "micro", "cpt", hours_per_run=30, after=("long",)),
        ]
    )
    lines = render_gantt(plan).splitlines()
    assert lines[0] == "p5-48xlarge: 8 x ml.p5.48xlarge for 1032 h (43 days); one cell = 1 day"
    assert lines[1] == (
        "job   count      hours  |1 3 5 7 9 11 14 17 20 23 26 29 32 35 38 41 |  (day)"
    )
    assert lines[2] == "long      8     0-1000  |" + "#" * 42 + ".|"
    assert lines[3] == "then      8  1000-1030  |" + "." * 41 + "##|"
    # 182 days: two days a cell.
    longest = plan_capacity([Workload("x", "micro", "cpt", hours_per_run=4368)])
    assert render_gantt(longest).splitlines()[0].endswith("one cell = 3 days")


def test_the_gantt_without_plans_says_so() -> None:
    assert render_gantt(plan_capacity([])) == "No training plan has jobs to schedule.\n"


# --------------------------------------------------------------------------- determinism

# Jobs the greedy rules alone would plan as 16 x 4 days: the solver's plan (16 x 3 days)
# is what is bought, so it must come out the same in every process.
_SOLVER_RUN = textwrap.dedent(
    """
    import json, sys
    from novapod.capacity import (
        Workload, capacity_plan_json, plan_capacity, render_gantt, split_advice,
    )
    jobs = [
        Workload("j0", "micro", "cpt", hours_per_run=12),
        Workload("j1", "micro", "sft-full", hours_per_run=10, after=("j0",)),
        Workload("j2", "pro", "ppo", after=("j1",)),
        Workload("j3", "micro", "cpt", hours_per_run=4, after=("j0",)),
        Workload("j4", "pro", "ppo"),
        *[Workload(f"e{i}", "lite", "evaluation", hours_per_run=3 + i) for i in range(4)],
    ]
    plan = plan_capacity(jobs)
    print(json.dumps(capacity_plan_json(plan, advice=split_advice(plan)), sort_keys=True))
    print(render_gantt(plan))
    print("solver loaded:", "ortools.sat.python.cp_model" in sys.modules)
    """
)


def _run(args: list[str], seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout


def test_the_same_jobs_give_the_same_plan_in_every_process() -> None:
    first, second = (_run(["-c", _SOLVER_RUN], seed) for seed in ("0", "4242"))
    assert first == second
    assert first.rstrip().endswith("solver loaded: True")  # the solver's path was taken
    document = json.loads(first.splitlines()[0])
    [request] = document["training_plans"]
    assert (request["instance_count"], request["duration_hours"]) == (16, 72)


def test_novapod_plan_prints_the_same_bytes_twice() -> None:
    args = ["-m", "novapod.cli", "plan", "config/examples/nova-jobs.yaml", "--json"]
    assert _run(args, "1") == _run(args, "2")
