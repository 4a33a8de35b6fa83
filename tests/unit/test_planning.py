"""The capacity planner: documented requirements, packing into training plans, output."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from novapod.capacity import (
    CAPACITY_PLAN_JSON_SCHEMA,
    PLAN_INSTANCE_COUNTS,
    CapacityPlan,
    PlanningError,
    PlanSettings,
    Workload,
    capacity_plan_json,
    default_plan_name,
    documented_combinations,
    packing,
    plan_capacity,
    plan_duration_hours,
    plan_eligible,
    plan_jobs,
    render_table,
    requirement,
    requirements,
    sellable_instance_count,
    split_advice,
    units,
)

P5 = "ml.p5.48xlarge"
R5 = "ml.r5.24xlarge"

# The user documents' compute table for node counts and, on p5, the longest sequence
# (Nova 1 SFT at 65536 tokens, Lite LoRA at 32768: the recipes' 32768 is their default,
# not a limit), typed in again here so a typo in the catalog fails:
# (model, technique, instance type, nodes, max sequence length).
COMPUTE_TABLE = [
    ("micro", "cpt", P5, 8, 8192),
    ("lite", "cpt", P5, 16, 8192),
    ("pro", "cpt", P5, 24, 8192),
    ("micro", "dpo-lora", P5, 2, 32768),
    ("lite", "dpo-lora", P5, 4, 32768),
    ("pro", "dpo-lora", P5, 6, 32768),
    ("micro", "dpo-full", P5, 2, 32768),
    ("lite", "dpo-full", P5, 4, 32768),
    ("pro", "dpo-full", P5, 6, 32768),
    ("micro", "sft-lora", P5, 2, 65536),
    ("lite", "sft-lora", P5, 4, 32768),
    ("pro", "sft-lora", P5, 6, 65536),
    ("micro", "sft-full", P5, 2, 65536),
    ("lite", "sft-full", P5, 4, 65536),
    ("pro", "sft-full", P5, 6, 65536),
    ("micro", "distillation", R5, 1, None),
    ("lite", "distillation", R5, 1, None),
    ("pro", "distillation", R5, 1, None),
    ("micro", "evaluation", P5, 1, 8192),
    ("lite", "evaluation", P5, 1, 8192),
    ("pro", "evaluation", P5, 1, 8192),
    # Not in the tables: the recipes' default replicas (Nova 2 Lite SFT: at least 4, the
    # values both the recipe comment and the template parameters allow).
    ("nova-2-lite", "cpt", P5, 8, 8192),
    ("nova-2-lite", "sft-lora", P5, 4, 65536),
    ("nova-2-lite", "sft-full", P5, 4, 65536),
    ("nova-2-lite", "distillation", R5, 1, None),
    ("nova-2-lite", "evaluation", P5, 1, 8192),
]

# RFT (Nova 2 Lite): the user guide's minimum of 8 p5.48xlarge for its own group.
RFT_TABLE = [
    ("nova-2-lite", "rft-lora", P5, 8, 32768),
    ("nova-2-lite", "rft-full", P5, 8, 32768),
]

# The PPO role table: (model, critic, reward, anchor, actor train, actor generation,
# instances, hours per run, printed instance-hours, computed instance-hours).
PPO_TABLE = [
    ("micro", 1, 1, 1, 2, 2, 7, 8, 56, 56),
    ("lite", 1, 1, 1, 2, 2, 7, 16, 112, 112),
    ("pro", 1, 1, 1, 6, 2, 11, 26, 260, 286),
]


@pytest.fixture(autouse=True)
def _fresh_sizing_view() -> None:
    """Build the planner's view of the catalog in every test, not once per process: a
    bug in building it (requirements._requirement) must fail these tests, also when the
    cache was filled before the test ran (mutmut forks from a warmed-up process). The
    same for the packings the planner keeps (packing.pack)."""
    requirements.sizing_view.cache_clear()
    packing.clear_cache()


def _plan(*workloads: Workload, plans: tuple[PlanSettings, ...] = ()) -> CapacityPlan:
    return plan_capacity(list(workloads), list(plans))


def _validate(document: object) -> None:
    jsonschema.Draft202012Validator(CAPACITY_PLAN_JSON_SCHEMA).validate(document)


# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(
    ("model", "technique", "instance_type", "count", "max_length"), COMPUTE_TABLE + RFT_TABLE
)
def test_compute_table_row(
    model: str, technique: str, instance_type: str, count: int, max_length: int | None
) -> None:
    req = requirement(model, technique)
    assert (req.instance_type, req.instance_count, req.max_sequence_length) == (
        instance_type,
        count,
        max_length,
    )
    assert req.roles is None
    assert req.documented_hours_per_run is None


def test_every_documented_combination_is_in_the_tables() -> None:
    expected = {(m, t) for m, t, *_ in COMPUTE_TABLE + RFT_TABLE} | {
        (m, "ppo") for m, *_ in PPO_TABLE
    }
    assert set(documented_combinations()) == expected


@pytest.mark.parametrize("row", PPO_TABLE, ids=[row[0] for row in PPO_TABLE])
def test_ppo_roles_sum_and_instance_hours_are_computed(
    row: tuple[str, int, int, int, int, int, int, int, int, int],
) -> None:
    model, critic, reward, anchor, actor_train, actor_generation = row[:6]
    instances, hours, printed, computed = row[6:]
    req = requirement(model, "ppo")
    assert dict(req.roles or {}) == {
        "critic": critic,
        "reward": reward,
        "anchor": anchor,
        "actor_train": actor_train,
        "actor_generation": actor_generation,
    }
    assert req.instance_count == instances
    assert req.documented_hours_per_run == hours
    assert req.printed_instance_hours == printed
    assert req.max_sequence_length == 8192

    [job] = plan_jobs([Workload("ppo", model, "ppo")])
    assert (job.instance_count, job.hours_per_run, job.instance_hours) == (
        instances,
        hours,
        computed,
    )
    [three_runs] = plan_jobs([Workload("ppo", model, "ppo", runs=3)])
    assert three_runs.instance_hours == 3 * computed


def test_nova_pro_ppo_discrepancy_is_noted_only_when_pro_ppo_is_planned() -> None:
    assert requirement("pro", "ppo").note is not None
    assert "260" in (requirement("pro", "ppo").note or "")

    plan = _plan(Workload("ppo-pro", "pro", "ppo"))
    [note] = [n for n in plan.notes if "260" in n]
    assert "286" in note
    assert note.startswith("Nova Pro ppo:")
    assert plan.jobs[0].instance_hours == 286

    others = _plan(Workload("ppo-micro", "micro", "ppo"), Workload("ppo-lite", "lite", "ppo"))
    assert not [n for n in others.notes if "260" in n]


def test_nova_2_lite_rows_carry_their_assumption() -> None:
    for technique in ("sft-lora", "sft-full"):
        note = requirement("nova-2-lite", technique).note or ""
        assert "assumption" in note
        assert "replica count the recipe and its template parameters both allow" in note
    plan = _plan(Workload("sft2", "nova-2-lite", "sft-full", hours_per_run=5))
    assert any(n.startswith("Nova 2 Lite sft-full: not in the compute tables") for n in plan.notes)


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("technique", ["dpo-lora", "dpo-full", "ppo"])
def test_unpublished_nova_2_lite_techniques_are_refused(technique: str) -> None:
    with pytest.raises(PlanningError) as error:
        requirement("nova-2-lite", technique)
    message = str(error.value)
    assert f"{technique} is not documented for Nova 2 Lite" in message
    assert "use one of cpt, sft-lora, sft-full, rft-lora, rft-full, distillation, evaluation" in (
        message
    )


@pytest.mark.parametrize("technique", ["rft-lora", "rft-full"])
def test_rft_is_published_for_nova_2_lite_only(technique: str) -> None:
    for model in ("micro", "lite", "pro"):
        with pytest.raises(PlanningError, match=f"{technique} is not documented for Nova"):
            requirement(model, technique)
    assert requirement("nova-2-lite", technique).instance_count == 8


@pytest.mark.parametrize(
    ("model", "technique", "fragment"),
    [
        (
            "premier",
            "sft-lora",
            "unknown model 'premier'; use one of micro, lite, pro, nova-2-lite",
        ),
        ("lite", "multimodal", "unknown technique 'multimodal'; use one of cpt, sft-lora"),
        ("micro", "rft", "unknown technique 'rft'"),
    ],
)
def test_unknown_models_and_techniques_are_refused(
    model: str, technique: str, fragment: str
) -> None:
    with pytest.raises(PlanningError, match=r"^job 'w': ") as error:
        plan_jobs([Workload("w", model, technique, hours_per_run=1)])
    assert fragment in str(error.value)


@pytest.mark.parametrize(
    ("model", "technique", "limit"),
    [
        ("micro", "cpt", 8192),
        ("pro", "dpo-full", 32768),
        ("lite", "sft-lora", 32768),
        ("lite", "sft-full", 65536),
        ("micro", "sft-lora", 65536),
        ("lite", "evaluation", 8192),
        ("pro", "ppo", 8192),
        ("nova-2-lite", "sft-lora", 65536),
    ],
)
def test_sequence_length_up_to_the_documented_limit(model: str, technique: str, limit: int) -> None:
    assert requirement(model, technique, sequence_length=limit).max_sequence_length == limit
    with pytest.raises(PlanningError) as error:
        plan_jobs([Workload("long", model, technique, hours_per_run=1, sequence_length=limit + 1)])
    message = str(error.value)
    assert message.startswith("job 'long': ")
    assert f"documented up to {limit} tokens, not {limit + 1}" in message
    assert f"set sequence_length to {limit} or less" in message


def test_distillation_has_no_documented_sequence_limit() -> None:
    assert requirement("pro", "distillation", sequence_length=1_000_000).instance_type == R5


def test_hours_are_required_where_the_tables_have_none() -> None:
    with pytest.raises(PlanningError) as error:
        plan_jobs([Workload("sft", "micro", "sft-lora")])
    assert str(error.value) == (
        "job 'sft': the compute tables give no hours per run for Nova Micro sft-lora; "
        "set hours_per_run"
    )


@pytest.mark.parametrize(
    ("workload", "fragment"),
    [
        (Workload("Bad_Name", "micro", "cpt", hours_per_run=1), "is not a DNS label"),
        (Workload("w", "micro", "cpt", hours_per_run=0), "set a positive number of hours"),
        (Workload("w", "micro", "cpt", hours_per_run=math.inf), "positive number"),
        (Workload("w", "micro", "cpt", runs=0, hours_per_run=1), "set runs to 1 or more"),
        (Workload("w", "micro", "cpt", hours_per_run=1, instance_count=0), "set 1 or more"),
        (
            Workload("w", "micro", "cpt", hours_per_run=1, instance_type="p5.48xlarge"),
            "not a SageMaker instance type",
        ),
        (
            Workload("w", "lite", "evaluation", hours_per_run=1, instance_count=2),
            "runs on exactly 1 instance on HyperPod; remove instance_count",
        ),
        (
            Workload("w", "pro", "ppo", instance_count=10),
            "needs one instance per role replica, 11 in all (critic 1, reward 1, anchor 1, "
            "actor_train 6, actor_generation 2); set instance_count to 11 or more",
        ),
    ],
)
def test_invalid_workloads_are_refused(workload: Workload, fragment: str) -> None:
    with pytest.raises(PlanningError) as error:
        plan_jobs([workload])
    assert fragment in str(error.value)
    assert str(error.value).startswith(f"job {workload.name!r}: ")


def test_duplicate_workload_names_are_refused() -> None:
    twice = [Workload("a", "micro", "cpt", hours_per_run=1)] * 2
    with pytest.raises(PlanningError, match="job a is listed twice"):
        plan_jobs(twice)


# --------------------------------------------------------------------------- overrides


def test_workload_overrides_win_over_the_tables() -> None:
    [job] = plan_jobs(
        [
            Workload(
                "big",
                "micro",
                "sft-full",
                runs=2,
                hours_per_run=3.5,
                instance_type="ml.p5e.48xlarge",
                instance_count=8,
            )
        ]
    )
    assert (job.instance_type, job.instance_count, job.hours_per_run, job.runs) == (
        "ml.p5e.48xlarge",
        8,
        3.5,
        2,
    )
    assert job.instance_hours == 8 * 3.5 * 2

    [ppo] = plan_jobs([Workload("ppo", "pro", "ppo", hours_per_run=10, instance_count=12)])
    assert (ppo.instance_count, ppo.hours_per_run, ppo.instance_hours) == (12, 10, 120)


def test_plan_settings_win_over_derived_values() -> None:
    plan = _plan(
        Workload("sft", "micro", "sft-lora", hours_per_run=10, plan="march"),
        plans=(
            PlanSettings(
                "march",
                instance_type=P5,
                instance_count=16,
                duration_hours=240,
                start_after="2026-03-01T00:00:00Z",
                end_before="2026-03-31T00:00:00+00:00",
                target_resources=("hyperpod-cluster", "training-job"),
            ),
        ),
    )
    [request] = plan.training_plans
    assert (request.name, request.instance_count, request.duration_hours) == ("march", 16, 240)
    assert request.start_after == "2026-03-01T00:00:00Z"
    assert request.end_before == "2026-03-31T00:00:00+00:00"
    assert request.target_resources == ("hyperpod-cluster", "training-job")
    assert request.required_instance_hours == 20
    assert request.reserved_instance_hours == 16 * 240
    assert request.waste_instance_hours == 16 * 240 - 20
    # An explicit count is not "rounded up", so no rounding note.
    assert not [n for n in plan.notes if "rounded up" in n]


def test_plan_settings_apply_to_the_default_instance_type_plan() -> None:
    plan = _plan(
        Workload("sft", "micro", "sft-lora", hours_per_run=10),
        plans=(PlanSettings("p5-48xlarge", instance_count=4),),
    )
    assert [(p.name, p.instance_count) for p in plan.training_plans] == [("p5-48xlarge", 4)]


def test_a_plan_count_smaller_than_a_job_is_refused() -> None:
    with pytest.raises(PlanningError) as error:
        _plan(
            Workload("small", "micro", "sft-lora", hours_per_run=1, plan="shared"),
            Workload("cpt-lite", "lite", "cpt", hours_per_run=1, plan="shared"),
            plans=(PlanSettings("shared", instance_count=8),),
        )
    assert str(error.value) == (
        "training plan shared: instance_count 8 is smaller than the 16 instances job "
        "cpt-lite needs; set instance_count to 16 or more"
    )


def test_a_plan_duration_shorter_than_its_jobs_is_refused() -> None:
    # b waits for a: 20 h then 5 h, whatever the count.
    with pytest.raises(PlanningError) as error:
        _plan(
            Workload("a", "micro", "sft-lora", hours_per_run=10, runs=2),
            Workload("b", "micro", "evaluation", hours_per_run=5, after=("a",)),
            plans=(PlanSettings("p5-48xlarge", duration_hours=24),),
        )
    assert str(error.value) == (
        "training plan p5-48xlarge: duration_hours 24 is shorter than the 25 h its jobs "
        "(a, b) need even on 64 instances; set duration_hours to 48 or more"
    )
    # With its count fixed too, the message names that count.
    with pytest.raises(PlanningError) as error:
        _plan(
            Workload("a", "micro", "sft-lora", hours_per_run=10, runs=2),
            Workload("b", "micro", "sft-lora", hours_per_run=10),
            plans=(PlanSettings("p5-48xlarge", instance_count=2, duration_hours=24),),
        )
    assert str(error.value) == (
        "training plan p5-48xlarge: duration_hours 24 is shorter than the 30 h its jobs "
        "(a, b) need on its 2 instances; set duration_hours to 48 or more"
    )


def test_a_given_duration_takes_the_fewest_instances_that_hold_the_jobs() -> None:
    # One after another on 2 instances they need 25 h; side by side on 4 they fit a day.
    plan = _plan(
        Workload("a", "micro", "sft-lora", hours_per_run=10, runs=2),
        Workload("b", "micro", "evaluation", hours_per_run=5),
        plans=(PlanSettings("p5-48xlarge", duration_hours=24),),
    )
    [request] = plan.training_plans
    assert (request.instance_count, request.duration_hours) == (4, 24)
    assert [(s.job, s.start_hour, s.end_hour) for s in request.schedule] == [
        ("a", 0, 20),
        ("b", 0, 5),
    ]
    # The settings fix the duration, not the shape: the bound is still reported.
    assert request.lower_bound_instance_hours == 96


@pytest.mark.parametrize(
    ("plan_settings", "fragment"),
    [
        (PlanSettings("p", instance_count=3), "instance_count 3 is not a count plans sell"),
        (PlanSettings("p", duration_hours=30), "duration_hours 30 is not whole days"),
        (PlanSettings("p", duration_hours=4392), "duration_hours 4392 is not whole days"),
        (PlanSettings("p", instance_type=R5), "training plans do not sell ml.r5.24xlarge"),
        (
            PlanSettings("p", instance_type="ml.p5e.48xlarge"),
            "reserves ml.p5e.48xlarge but job w runs on ml.p5.48xlarge",
        ),
        (
            PlanSettings("p", start_after="2026-03-01T00:00:00"),
            "start_after '2026-03-01T00:00:00' is not an ISO 8601 time with a UTC offset",
        ),
        (PlanSettings("p", end_before="next week"), "end_before 'next week' is not an ISO 8601"),
        (
            PlanSettings("p", start_after="2026-03-02T00:00:00Z", end_before="2026-03-01T00:00Z"),
            "start_after 2026-03-02T00:00:00Z is not before end_before 2026-03-01T00:00Z; "
            "the window is inverted, swap the two times",
        ),
        (
            PlanSettings(
                "p",
                duration_hours=72,
                start_after="2026-03-01T00:00:00Z",
                end_before="2026-03-03T00:00:00Z",
            ),
            "is 48 h, shorter than its 72 h duration; widen the window",
        ),
        (PlanSettings("p", target_resources=()), "target_resources [] is not a list"),
        (PlanSettings("p", target_resources=("cluster",)), "target_resources ['cluster']"),
    ],
)
def test_invalid_plan_settings_are_refused(plan_settings: PlanSettings, fragment: str) -> None:
    with pytest.raises(PlanningError) as error:
        _plan(Workload("w", "micro", "sft-lora", hours_per_run=1, plan="p"), plans=(plan_settings,))
    assert str(error.value).startswith("training plan p")
    assert fragment in str(error.value)


def test_plan_settings_without_workloads_are_refused() -> None:
    with pytest.raises(PlanningError) as error:
        _plan(Workload("w", "micro", "cpt", hours_per_run=1), plans=(PlanSettings("spare"),))
    assert str(error.value) == (
        "training plan spare has no jobs; run a job on it (its instance group, or plan: "
        "spare), or give the plan instance_type, instance_count and duration_hours"
    )


def test_fully_specified_plan_without_workloads_is_a_standalone_request() -> None:
    spare = PlanSettings(
        "spare", instance_type="ml.p5.48xlarge", instance_count=4, duration_hours=48
    )
    plan = _plan(Workload("w", "micro", "cpt", hours_per_run=1), plans=(spare,))
    (standalone,) = [p for p in plan.training_plans if p.name == "spare"]
    assert (standalone.instance_count, standalone.duration_hours, standalone.jobs) == (4, 48, ())
    assert standalone.reserved_instance_hours == 192.0


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        (
            PlanSettings("s", instance_type="ml.r5.24xlarge", instance_count=1, duration_hours=24),
            "do not sell ml.r5.24xlarge",
        ),
        (
            PlanSettings("s", instance_type="ml.p5.48xlarge", instance_count=3, duration_hours=24),
            "instance_count 3 is not a count",
        ),
        (
            PlanSettings("s", instance_type="ml.p5.48xlarge", instance_count=2, duration_hours=30),
            "duration_hours 30 is not whole days",
        ),
    ],
)
def test_invalid_standalone_plans_are_refused(settings: PlanSettings, fragment: str) -> None:
    with pytest.raises(PlanningError, match=fragment):
        _plan(Workload("w", "micro", "cpt", hours_per_run=1), plans=(settings,))


def test_plan_names_must_be_dns_labels() -> None:
    with pytest.raises(PlanningError, match="plan 'My_Plan' is not a DNS label"):
        _plan(Workload("w", "micro", "cpt", hours_per_run=1, plan="My_Plan"))
    with pytest.raises(PlanningError, match=r"training plan 'x\.y' is not a DNS label"):
        _plan(Workload("w", "micro", "cpt", hours_per_run=1), plans=(PlanSettings("x.y"),))


def test_jobs_of_different_instance_types_cannot_share_a_plan() -> None:
    with pytest.raises(PlanningError) as error:
        _plan(
            Workload("a", "micro", "cpt", hours_per_run=1, plan="mixed"),
            Workload(
                "b", "micro", "cpt", hours_per_run=1, plan="mixed", instance_type="ml.p4d.24xlarge"
            ),
        )
    assert str(error.value) == (
        "training plan mixed reserves ml.p5.48xlarge but job b runs on ml.p4d.24xlarge; "
        "give the job its own plan or the same instance_type"
    )


# --------------------------------------------------------------------------- packing


@pytest.mark.parametrize(
    ("needed", "sold"),
    [(1, 1), (2, 2), (3, 4), (5, 8), (6, 8), (7, 8), (11, 16), (24, 32), (33, 64), (64, 64)],
)
def test_counts_round_up_to_what_plans_sell(needed: int, sold: int) -> None:
    assert sellable_instance_count(needed) == sold


@pytest.mark.parametrize(
    ("workload", "count"),
    [
        (Workload("pro-sft", "pro", "sft-full", hours_per_run=1), 8),  # 6 -> 8
        (Workload("pro-cpt", "pro", "cpt", hours_per_run=1), 32),  # 24 -> 32
        (Workload("pro-ppo", "pro", "ppo"), 16),  # 11 -> 16
        (Workload("micro-ppo", "micro", "ppo"), 8),  # 7 -> 8
        (Workload("odd", "micro", "cpt", hours_per_run=1, instance_count=3), 4),
        (Workload("five", "micro", "cpt", hours_per_run=1, instance_count=5), 8),
        (Workload("lite-cpt", "lite", "cpt", hours_per_run=1), 16),
    ],
)
def test_plan_count_is_the_rounded_up_largest_job(workload: Workload, count: int) -> None:
    [request] = _plan(workload).training_plans
    assert request.instance_count == count


def test_rounding_up_a_count_is_noted() -> None:
    plan = _plan(Workload("pro-cpt", "pro", "cpt", hours_per_run=1))
    assert (
        "training plan p5-48xlarge: its largest job needs 24 instances, rounded up to 32, "
        "the next count plans sell"
    ) in plan.notes
    assert not _plan(Workload("lite-cpt", "lite", "cpt", hours_per_run=1)).notes


def test_more_than_64_instances_are_refused() -> None:
    with pytest.raises(PlanningError, match="would need 65 instances but plans sell at most 64"):
        sellable_instance_count(65)
    with pytest.raises(PlanningError) as error:
        _plan(Workload("huge", "lite", "cpt", hours_per_run=1, instance_count=65))
    assert str(error.value) == (
        "training plan p5-48xlarge: job huge needs 65 instances but plans sell at most 64; "
        "lower its instance_count"
    )


@pytest.mark.parametrize(
    ("hours", "duration"),
    [(0.5, 24), (1, 24), (24, 24), (24.01, 48), (25, 48), (100, 120), (4367, 4368), (4368, 4368)],
)
def test_durations_round_up_to_whole_days(hours: float, duration: int) -> None:
    assert plan_duration_hours(hours) == duration
    [request] = _plan(Workload("w", "micro", "cpt", hours_per_run=hours)).training_plans
    assert request.duration_hours == duration


def test_jobs_sharing_a_plan_run_side_by_side_when_they_fit() -> None:
    plan = _plan(
        Workload("sft", "micro", "sft-lora", hours_per_run=10, runs=2),  # 2 x 20 h
        Workload("ppo", "micro", "ppo"),  # 7 x 8 h
        Workload("eval", "micro", "evaluation", hours_per_run=0.5, runs=4),  # 1 x 2 h
    )
    [request] = plan.training_plans
    assert request.jobs == ("sft", "ppo", "eval")
    # 8 instances: sft beside eval, then ppo (2 + 7 > 8): 28 h, two days. 16 instances
    # would hold all three in one day, the same 384 instance-hours: fewer instances win.
    assert (request.instance_count, request.duration_hours) == (8, 48)
    assert [(s.job, s.start_hour, s.end_hour, s.instance_count) for s in request.schedule] == [
        ("sft", 0, 20, 2),
        ("ppo", 20, 28, 7),
        ("eval", 0, 2, 1),
    ]
    assert request.required_instance_hours == 2 * 20 + 7 * 8 + 1 * 2
    assert request.reserved_instance_hours == 8 * 48
    assert request.waste_instance_hours == 8 * 48 - 98
    assert request.lower_bound_instance_hours == 8 * 48


def test_side_by_side_on_more_instances_wins_when_it_reserves_less() -> None:
    # Three 24-instance CPT days: one after another on 32 instances for 3 days (2304),
    # two at a time on 64 for 2 days (3072): 32 wins. Four 16-instance days: 16 x 4 days
    # (1536), 32 x 2 days (1536, a tie: fewer instances), 64 x 1 day (1536, same).
    three = _plan(*(Workload(f"c{i}", "pro", "cpt", hours_per_run=24) for i in range(3)))
    assert [(p.instance_count, p.duration_hours) for p in three.training_plans] == [(32, 72)]
    four = _plan(*(Workload(f"c{i}", "lite", "cpt", hours_per_run=24) for i in range(4)))
    assert [(p.instance_count, p.duration_hours) for p in four.training_plans] == [(16, 96)]
    # Five 12-hour 16-instance jobs: 16 x 3 days (1152) or 32 x 2 days (1536) or 64 x 1
    # day (1536): 16. Five of 6 instances for 20 h: 8 x 5 days (960) or 32 x 1 day (768).
    five = _plan(
        *(Workload(f"s{i}", "pro", "sft-full", hours_per_run=20) for i in range(5)),
    )
    [request] = five.training_plans
    assert (request.instance_count, request.duration_hours) == (32, 24)
    assert any(
        note == "training plan p5-48xlarge: 32 instances, more than the 8 its largest job "
        "needs, run its jobs side by side in 1 days: fewer instance-hours than fewer "
        "instances for longer"
        for note in five.notes
    )


def test_jobs_wait_for_the_jobs_they_come_after() -> None:
    plan = _plan(
        Workload("sft", "micro", "sft-full", hours_per_run=10),
        Workload("dpo", "micro", "dpo-full", hours_per_run=6, after=("sft",)),
        Workload("eval", "micro", "evaluation", hours_per_run=2, after=("dpo", "sft")),
        Workload("base-eval", "micro", "evaluation", hours_per_run=3),
    )
    [request] = plan.training_plans
    assert (request.instance_count, request.duration_hours) == (2, 24)
    assert {s.job: (s.start_hour, s.end_hour) for s in request.schedule} == {
        "sft": (0, 10),
        "dpo": (10, 16),
        "eval": (16, 18),
        "base-eval": (16, 19),  # both instances are busy until then; then beside eval
    }


def test_a_job_waiting_for_one_on_another_plan_is_noted() -> None:
    plan = _plan(
        Workload("sft", "micro", "sft-full", hours_per_run=10, plan="first"),
        Workload("eval", "micro", "evaluation", hours_per_run=2, plan="second", after=("sft",)),
    )
    assert (
        "job eval (training plan second) waits for sft (training plan first): plans are "
        "scheduled apart, so start second after sft ends (start_after)"
    ) in plan.notes
    # Within its own plan it starts at once: the other plan's job is not its to wait for.
    second = plan.training_plans[1]
    assert [(s.job, s.start_hour) for s in second.schedule] == [("eval", 0)]


def test_unknown_or_circular_waits_are_refused() -> None:
    with pytest.raises(PlanningError) as error:
        plan_jobs([Workload("a", "micro", "cpt", hours_per_run=1, after=("b",))])
    assert str(error.value) == "job a waits for b, which is not another job; use one of "
    with pytest.raises(PlanningError) as error:
        plan_jobs(
            [
                Workload("a", "micro", "cpt", hours_per_run=1, after=("b",)),
                Workload("b", "micro", "cpt", hours_per_run=1, after=("a",)),
                Workload("c", "micro", "cpt", hours_per_run=1),
            ]
        )
    assert str(error.value) == (
        "jobs a, b wait for each other in a cycle; remove one of those dependencies"
    )


def test_a_window_shorter_than_the_longest_plan_caps_the_duration() -> None:
    # Alone on 8 instances, four 16 h CPT jobs need 64 h: three days. A two-day window
    # takes 16 instances, two at a time, in 32 h.
    jobs = [Workload(f"c{i}", "micro", "cpt", hours_per_run=16, plan="w") for i in range(4)]
    window = PlanSettings(
        "w", start_after="2027-03-01T00:00:00Z", end_before="2027-03-03T12:00:00Z"
    )
    assert [(p.instance_count, p.duration_hours) for p in _plan(*jobs).training_plans] == [(8, 72)]
    [request] = _plan(*jobs, plans=(window,)).training_plans
    assert (request.instance_count, request.duration_hours) == (16, 48)
    # A window under the one job's hours is refused with the hours it needs.
    tight = PlanSettings("w", start_after="2027-03-01T00:00:00Z", end_before="2027-03-02T12:00:00Z")
    with pytest.raises(PlanningError) as error:
        _plan(Workload("long", "micro", "cpt", hours_per_run=30, plan="w"), plans=(tight,))
    assert str(error.value) == (
        "training plan w: the window from start_after to end_before holds 1 day, fewer "
        "than the 30 h its jobs need; widen the window or give some jobs another plan"
    )


def test_more_than_182_days_is_refused_with_a_split_suggestion() -> None:
    with pytest.raises(PlanningError) as error:
        _plan(Workload("long", "micro", "cpt", hours_per_run=4369))
    message = str(error.value)
    assert message.startswith("training plan p5-48xlarge would need 4369 h")
    assert "at most 182 days (4368 h)" in message
    assert "split its jobs into several plans (groups on other plans, or fewer runs per job)" in (
        message
    )

    # One waiting for the other: 4380 h however many instances the plan has.
    with pytest.raises(PlanningError) as error:
        _plan(
            Workload("a", "micro", "cpt", hours_per_run=2190, plan="one"),
            Workload("b", "micro", "cpt", hours_per_run=2190, plan="one", after=("a",)),
        )
    assert str(error.value).startswith(
        "training plan one would need 4380 h even on 64 instances but a plan lasts at most "
        "182 days (4368 h)"
    )
    # Side by side they fit one plan of twice the instances; in two plans, each its own.
    side_by_side = _plan(
        Workload("a", "micro", "cpt", hours_per_run=2190, plan="one"),
        Workload("b", "micro", "cpt", hours_per_run=2190, plan="one"),
    )
    [one] = side_by_side.training_plans
    assert (one.instance_count, one.duration_hours) == (16, 2208)
    split = _plan(
        Workload("a", "micro", "cpt", hours_per_run=2190, plan="one"),
        Workload("b", "micro", "cpt", hours_per_run=2190, plan="two"),
    )
    assert [(p.instance_count, p.duration_hours) for p in split.training_plans] == [
        (8, 2208),
        (8, 2208),
    ]


def test_workloads_without_a_plan_group_by_instance_type() -> None:
    plan = _plan(
        Workload("a", "micro", "sft-lora", hours_per_run=1),
        Workload("b", "micro", "sft-lora", hours_per_run=1, instance_type="ml.trn2.48xlarge"),
        Workload("c", "lite", "sft-lora", hours_per_run=1),
        Workload("d", "lite", "sft-lora", hours_per_run=1, plan="mine"),
    )
    assert [(p.name, p.instance_type, p.jobs) for p in plan.training_plans] == [
        ("p5-48xlarge", P5, ("a", "c")),
        ("trn2-48xlarge", "ml.trn2.48xlarge", ("b",)),
        ("mine", P5, ("d",)),
    ]
    assert default_plan_name("ml.p6-b200.48xlarge") == "p6-b200-48xlarge"


@pytest.mark.parametrize(
    ("instance_type", "eligible"),
    [
        (P5, True),
        ("ml.p4d.24xlarge", True),
        ("ml.p4de.24xlarge", True),
        ("ml.p5e.48xlarge", True),
        ("ml.p5en.48xlarge", True),
        ("ml.trn1.32xlarge", True),
        ("ml.trn2.48xlarge", True),
        (R5, False),
        ("ml.g5.12xlarge", False),
        ("ml.p3.16xlarge", False),
        ("p5.48xlarge", False),
    ],
)
def test_plan_eligible_instance_types(instance_type: str, eligible: bool) -> None:
    assert plan_eligible(instance_type) is eligible


def test_distillation_runs_on_demand() -> None:
    plan = _plan(
        Workload("distill", "pro", "distillation", hours_per_run=6),
        Workload("sft", "micro", "sft-lora", hours_per_run=1),
    )
    assert [job.name for job in plan.on_demand] == ["distill"]
    assert plan.on_demand[0].instance_type == R5
    assert [(p.name, p.jobs) for p in plan.training_plans] == [("p5-48xlarge", ("sft",))]
    assert [job.name for job in plan.jobs] == ["distill", "sft"]

    only_distillation = _plan(Workload("distill", "lite", "distillation", hours_per_run=6))
    assert only_distillation.training_plans == []
    assert capacity_plan_json(only_distillation)["on_demand"] == ["distill"]


def test_distillation_in_a_plan_is_refused() -> None:
    with pytest.raises(PlanningError) as error:
        _plan(Workload("distill", "pro", "distillation", hours_per_run=6, plan="p"))
    assert str(error.value) == (
        "job distill: training plans do not sell ml.r5.24xlarge; remove plan 'p' to run "
        "it on demand"
    )


# --------------------------------------------------------------------------- output


def _sample_plan() -> CapacityPlan:
    return _plan(
        Workload("cpt-pro", "pro", "cpt", hours_per_run=30),
        Workload("ppo-pro", "pro", "ppo", runs=2),
        Workload("distill", "pro", "distillation", hours_per_run=4),
        Workload("eval", "pro", "evaluation", hours_per_run=1.5, plan="evals"),
        plans=(
            PlanSettings(
                "evals", start_after="2026-03-01T00:00:00Z", end_before="2026-03-10T00:00:00Z"
            ),
        ),
    )


def test_json_output_matches_its_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(CAPACITY_PLAN_JSON_SCHEMA)
    document = json.loads(json.dumps(capacity_plan_json(_sample_plan())))
    _validate(document)

    assert document["jobs"][1] == {
        "name": "ppo-pro",
        "model": "pro",
        "technique": "ppo",
        "instance_type": P5,
        "instance_count": 11,
        "hours_per_run": 26,
        "runs": 2,
        "instance_hours": 572,
    }
    first, evals = document["training_plans"]
    assert {
        k: first[k] for k in CAPACITY_PLAN_JSON_SCHEMA["$defs"]["training_plan"]["required"]
    } == {
        "name": "p5-48xlarge",
        "instance_type": P5,
        "instance_count": 32,
        "duration_hours": 96,  # 30 + 2 x 26 = 82 h
        "start_after": None,
        "end_before": None,
        "target_resources": ["hyperpod-cluster"],
    }
    assert first["jobs"] == ["cpt-pro", "ppo-pro"]
    assert first["waste_instance_hours"] == 32 * 96 - (720 + 572)
    # 24 + 11 > 32: one after another; the longer first (its chain is longer).
    assert first["schedule"] == [
        {"job": "cpt-pro", "start_hour": 52, "end_hour": 82, "instance_count": 24},
        {"job": "ppo-pro", "start_hour": 0, "end_hour": 52, "instance_count": 11},
    ]
    assert first["lower_bound_instance_hours"] == 3072
    assert evals["schedule"] == [
        {"job": "eval", "start_hour": 0, "end_hour": 2, "instance_count": 1}
    ]
    assert document["totals"] == {
        "required_instance_hours": 1293.5,
        "reserved_instance_hours": 3096,
        "waste_instance_hours": 1802.5,
    }
    assert "split_advice" not in document  # only when asked for
    assert evals["start_after"] == "2026-03-01T00:00:00Z"
    assert document["on_demand"] == ["distill"]
    assert any("286" in note for note in document["notes"])


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda d: d["training_plans"][0].update(instance_count=3), "3 is not one of"),
        (lambda d: d["training_plans"][0].update(duration_hours=30), "is not a multiple of 24"),
        (lambda d: d["training_plans"][0].pop("start_after"), "'start_after' is a required"),
        (lambda d: d["jobs"][0].update(extra=1), "Additional properties"),
        (lambda d: d.update(cost=1), "Additional properties"),
        (lambda d: d["jobs"][0].update(technique="rft"), "is not one of"),
        (lambda d: d["training_plans"][0].update(name="P5"), "does not match"),
        (
            lambda d: d["training_plans"][0]["schedule"][0].update(start_hour=-1),
            "less than the minimum",
        ),
        (lambda d: d["training_plans"][0]["schedule"][0].pop("end_hour"), "'end_hour' is a"),
        (lambda d: d["totals"].update(cost=1), "Additional properties"),
        (lambda d: d.update(split_advice=[{"plan": "p"}]), "'required_instance_hours' is a"),
    ],
)
def test_schema_rejects_malformed_plans(
    mutate: Callable[[dict[str, Any]], object], error: str
) -> None:
    document = capacity_plan_json(_sample_plan())
    mutate(document)
    with pytest.raises(jsonschema.ValidationError, match=error):
        _validate(document)


def test_render_table_lists_jobs_plans_waste_and_notes() -> None:
    text = render_table(_sample_plan())
    lines = text.splitlines()
    assert lines[0] == "Jobs"
    assert lines[1].split() == [
        "name",
        "model",
        "technique",
        "instance",
        "type",
        "count",
        "hours/run",
        "runs",
        "inst-h",
    ]
    assert ["ppo-pro", "pro", "ppo", P5, "11", "26", "2", "572"] in [line.split() for line in lines]
    assert "eval     pro    evaluation    ml.p5.48xlarge      1        1.5     1     1.5" in lines
    plans = lines.index("Training plans")
    assert "waste" in lines[plans + 1]
    p5_row = lines[plans + 2].split()
    assert p5_row[:4] == ["p5-48xlarge", P5, "32", "96"]
    assert p5_row[6:10] == ["1292", "3072", "1780", "2.38x"]  # required, reserved, waste
    total = lines[plans + 4].split()
    assert total == ["total", "1293.5", "3096", "1802.5", "2.39x"]
    assert "distill: 1 x ml.r5.24xlarge, 4 instance-hours" in lines
    notes = lines.index("Notes")
    assert lines.index("On demand (instance types training plans do not sell)") < notes
    assert any("260" in line and "286" in line for line in lines[notes:])


# The whole text `novapod plan` prints for the sample plan, typed in: column widths,
# alignment (numbers right), reserved over required per plan and in total (1292 + 1.5
# required, 3072 + 24 reserved), the names section and the notes are all part of it.
SAMPLE_TABLE = """\
Jobs
name     model  technique     instance type   count  hours/run  runs  inst-h
cpt-pro  pro    cpt           ml.p5.48xlarge     24         30     1     720
ppo-pro  pro    ppo           ml.p5.48xlarge     11         26     2     572
distill  pro    distillation  ml.r5.24xlarge      1          4     1       4
eval     pro    evaluation    ml.p5.48xlarge      1        1.5     1     1.5

Training plans
name         instance type   count  hours  start after           end before            \
required  reserved   waste   ratio  jobs
p5-48xlarge  ml.p5.48xlarge     32     96  -                     -                     \
    1292      3072    1780   2.38x  cpt-pro, ppo-pro
evals        ml.p5.48xlarge      1     24  2026-03-01T00:00:00Z  2026-03-10T00:00:00Z  \
     1.5        24    22.5  16.00x  eval
total                                                                                  \
  1293.5      3096  1802.5   2.39x

Names the plans are bought under (purchase.approve must say the same)
p5-48xlarge: novapod-dev-p5-48xlarge-0123abcd

On demand (instance types training plans do not sell)
distill: 1 x ml.r5.24xlarge, 4 instance-hours

Notes
- Nova Pro ppo: the source prints 260 P5 instance-hours per run, but its own figures \
give 11 instances x 26 h = 286; novapod plans with 286
- training plan p5-48xlarge: its largest job needs 24 instances, rounded up to 32, the \
next count plans sell
"""


def test_render_table_text_is_exactly_the_plan() -> None:
    names = {"p5-48xlarge": "novapod-dev-p5-48xlarge-0123abcd"}
    assert render_table(_sample_plan(), names) == SAMPLE_TABLE


TWO_CPT_TABLE = """\
Jobs
name  model  technique  instance type   count  hours/run  runs  inst-h
a     lite   cpt        ml.p5.48xlarge     16         24     1     384
b     lite   cpt        ml.p5.48xlarge     16         24     1     384

Training plans
name         instance type   count  hours  start after  end before  required  reserved  waste  \
ratio  jobs
p5-48xlarge  ml.p5.48xlarge     16     48  -            -                768       768      0  \
1.00x  a, b
total                                                                    768       768      0  \
1.00x
{advice}
On demand (instance types training plans do not sell)
(none)
"""
NO_SPLIT = """
Split advice (never applied: move jobs with plan: or instance_group)
(none: no split into plans that sell reserves fewer instance-hours)
"""


def test_render_table_says_when_no_split_reserves_less() -> None:
    # Two 16-instance days: 16 x 2 days or 32 x 1 day (768, a tie: fewer instances); two
    # plans of 16 x 1 day reserve as much, so there is nothing to advise.
    independent = _plan(
        Workload("a", "lite", "cpt", hours_per_run=24),
        Workload("b", "lite", "cpt", hours_per_run=24),
    )
    assert split_advice(independent) == []
    assert render_table(independent, advice=[]) == TWO_CPT_TABLE.format(advice=NO_SPLIT)
    # b waits for a: one group of jobs, which no split may part; no section at all.
    chained = _plan(
        Workload("a", "lite", "cpt", hours_per_run=24),
        Workload("b", "lite", "cpt", hours_per_run=24, after=("a",)),
    )
    assert render_table(chained, advice=[]) == TWO_CPT_TABLE.format(advice="")


def test_render_table_of_an_empty_plan() -> None:
    text = render_table(_plan())
    assert "Training plans\n(none)" in text
    assert "Notes" not in text


# --------------------------------------------------------------------------- property


_COMBINATIONS = documented_combinations()


@st.composite
def _workloads(draw: st.DrawFn) -> list[Workload]:
    result = []
    for i in range(draw(st.integers(1, 6))):
        model, technique = draw(st.sampled_from(_COMBINATIONS))
        req = requirement(model, technique)
        count = None
        if not req.fixed_instance_count and draw(st.booleans()):
            count = draw(st.integers(req.instance_count if req.roles else 1, 64))
        hours_strategy: st.SearchStrategy[float | None] = st.floats(0.25, 100)
        if req.documented_hours_per_run is not None:
            hours_strategy = st.none() | hours_strategy
        instance_type = None
        plan = None
        if technique != "distillation":
            instance_type = draw(
                st.sampled_from([None, None, "ml.p5e.48xlarge", "ml.p4d.24xlarge"])
            )
            if instance_type is None:
                plan = draw(st.sampled_from([None, "alpha", "beta"]))
        result.append(
            Workload(
                name=f"w{i}",
                model=model,
                technique=technique,
                runs=draw(st.integers(1, 5)),
                hours_per_run=draw(hours_strategy),
                instance_type=instance_type,
                instance_count=count,
                plan=plan,
            )
        )
    return result


@settings(max_examples=200, deadline=None)
@given(_workloads())
def test_every_plan_fits_its_jobs(workloads: list[Workload]) -> None:
    plan = plan_capacity(workloads)
    jobs = {job.name: job for job in plan.jobs}
    planned = [name for request in plan.training_plans for name in request.jobs]
    assert sorted(planned + [job.name for job in plan.on_demand]) == sorted(jobs)
    assert all(not plan_eligible(job.instance_type) for job in plan.on_demand)

    for request in plan.training_plans:
        members = [jobs[name] for name in request.jobs]
        largest = max(job.instance_count for job in members)
        assert request.instance_count in PLAN_INSTANCE_COUNTS
        assert request.instance_count >= largest

        assert request.duration_hours % 24 == 0
        assert 24 <= request.duration_hours <= 4368
        # Never more than the same jobs one after another on the largest job's count
        # (whole hours each, as the planner schedules them).
        one_after_another = sum(math.ceil(job.hours_per_run * job.runs - 1e-9) for job in members)
        assert request.reserved_instance_hours <= sellable_instance_count(largest) * 24 * max(
            1, math.ceil(one_after_another / 24)
        )
        assert request.reserved_instance_hours >= request.required_instance_hours - 1e-6
        assert request.lower_bound_instance_hours is not None
        assert request.lower_bound_instance_hours <= request.reserved_instance_hours

        # Every job once, inside the plan, for its hours; never more instances than it has.
        assert [slot.job for slot in request.schedule] == list(request.jobs)
        for slot, job in zip(request.schedule, members, strict=True):
            assert slot.instance_count == job.instance_count
            assert slot.start_hour >= 0
            assert slot.end_hour - slot.start_hour >= job.hours_per_run * job.runs - 1e-9
            assert slot.end_hour <= request.duration_hours
        for hour in range(request.duration_hours):
            in_use = sum(
                s.instance_count for s in request.schedule if s.start_hour <= hour < s.end_hour
            )
            assert in_use <= request.instance_count

        assert all(job.instance_type == request.instance_type for job in members)
        assert request.waste_instance_hours == pytest.approx(
            request.reserved_instance_hours - request.required_instance_hours
        )
        assert request.waste_instance_hours >= -1e-9

    for job in plan.jobs:
        assert job.instance_hours == pytest.approx(
            job.instance_count * job.hours_per_run * job.runs
        )
    _validate(json.loads(json.dumps(capacity_plan_json(plan))))


def test_json_of_a_standalone_plan_follows_the_schema() -> None:
    import jsonschema

    spare = PlanSettings(
        "spare", instance_type="ml.p5.48xlarge", instance_count=2, duration_hours=24
    )
    document = capacity_plan_json(
        _plan(Workload("w", "micro", "cpt", hours_per_run=1), plans=(spare,))
    )
    jsonschema.validate(document, CAPACITY_PLAN_JSON_SCHEMA)
    (standalone,) = [p for p in document["training_plans"] if p["name"] == "spare"]
    assert standalone["jobs"] == []


def test_a_standalone_plan_keeps_its_settings_retry_and_no_waste() -> None:
    spare = PlanSettings(
        "spare", instance_type=P5, instance_count=2, duration_hours=4368, retry=2
    )  # the longest plan sold: 182 days
    (request,) = _plan(plans=(spare,)).training_plans
    assert (request.duration_hours, request.retry) == (4368, 2)
    assert (request.required_instance_hours, request.waste_instance_hours) == (0.0, 0.0)
    assert request.reserved_instance_hours == 2 * 4368


def test_a_standalone_plan_with_bad_targets_is_named() -> None:
    spare = PlanSettings(
        "spare", instance_type=P5, instance_count=2, duration_hours=24, target_resources=()
    )
    with pytest.raises(PlanningError) as error:
        _plan(plans=(spare,))
    assert str(error.value).startswith("training plan spare: target_resources [] is not a list")


def test_distillation_may_run_on_more_than_one_instance() -> None:
    # Only evaluations are pinned to one instance; other one-replica recipes are not.
    (job,) = plan_jobs([Workload("d", "micro", "distillation", hours_per_run=1, instance_count=2)])
    assert job.instance_count == 2


def test_numbers_in_the_table_keep_two_decimals() -> None:
    assert units.hours_text(1.125) == "1.12"
    assert units.hours_text(2.0) == "2"
    assert units.hours_text(1.5) == "1.5"
