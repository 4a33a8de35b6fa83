"""The planner with training-job workloads: training-job plans sized and packed like
HyperPod plans, named deterministically, on-demand jobs on no plan, and never a job on a
plan whose target resources exclude where it runs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from novapod.capacity import PlanningError, PlanSettings, Workload, plan_capacity
from novapod.capacity.naming import training_plan_name

P5, R5 = "ml.p5.48xlarge", "ml.r5.24xlarge"
HP, TJ = "hyperpod-cluster", "training-job"


def tj(name: str, **kw) -> Workload:
    kw.setdefault("instance_type", P5)
    kw.setdefault("instance_count", 2)
    return Workload(name, "micro", "sft-lora", hours_per_run=10, target=TJ, **kw)


def test_a_training_job_plan_is_sized_from_its_jobs_side_by_side() -> None:
    plan = plan_capacity(
        [tj("a", plan="t", instance_count=2), tj("b", plan="t", instance_count=1)],
        [PlanSettings(name="t", target_resources=(TJ,))],
    )
    (request,) = plan.training_plans
    # The largest job's count (2), the other beside it: both in one day.
    assert (request.instance_count, request.duration_hours) == (2, 24)
    assert request.target_resources == (TJ,)
    assert request.jobs == ("a", "b")


def test_unlisted_training_job_plans_get_the_training_job_target_and_a_pinned_name() -> None:
    """A plan derived for training jobs is bought for training-job: its name (what money
    depends on) differs from the HyperPod plan of the same shape."""
    hp = plan_capacity([Workload("a", "micro", "sft-lora", hours_per_run=10, plan="p")])
    job = plan_capacity([tj("a", plan="p")])
    (hp_request,), (tj_request,) = hp.training_plans, job.training_plans
    assert tj_request.target_resources == (TJ,)
    # The same shape (2 x p5 for a day): only the target differs. The HyperPod name is
    # the one novapod gave before training jobs existed.
    assert (hp_request.instance_count, hp_request.duration_hours) == (2, 24)
    assert (tj_request.instance_count, tj_request.duration_hours) == (2, 24)
    assert training_plan_name("dev", hp_request) == "novapod-dev-p-d9749c83"
    assert training_plan_name("dev", tj_request) == "novapod-dev-p-67e89136"
    # Without plan:, training jobs share a plan per type of their own.
    (shared,) = plan_capacity([tj("a"), tj("b")]).training_plans
    assert shared.name == "p5-48xlarge-tj"
    assert training_plan_name("dev", shared) == "novapod-dev-p5-48xlarge-tj-67e89136"


def test_on_demand_training_jobs_need_no_plan() -> None:
    plan = plan_capacity(
        [
            tj("sft", plan="t"),
            Workload("d", "micro", "distillation", hours_per_run=6, instance_type=R5,
                     target=TJ, on_demand=True),
            tj("p5-on-demand", on_demand=True),
        ]
    )  # fmt: skip
    assert [j.name for j in plan.on_demand] == ["d", "p5-on-demand"]
    assert [r.name for r in plan.training_plans] == ["t"]


def test_hyperpod_jobs_do_not_run_on_demand() -> None:
    with pytest.raises(PlanningError, match="only training jobs run on demand"):
        plan_capacity([Workload("a", "micro", "sft-lora", hours_per_run=1, on_demand=True)])


def test_a_plan_never_serves_two_targets() -> None:
    with pytest.raises(PlanningError) as info:
        plan_capacity(
            [Workload("h", "micro", "sft-lora", hours_per_run=1, plan="p"), tj("t", plan="p")]
        )
    assert str(info.value) == (
        "training plan p would serve jobs of two targets (hyperpod-cluster: h; training-job: "
        "t), and a plan is specific to its target resource; give the jobs of each target "
        "their own plan"
    )


def test_a_listed_plan_without_the_jobs_target_is_refused() -> None:
    with pytest.raises(PlanningError) as info:
        plan_capacity([tj("t", plan="p")], [PlanSettings(name="p")])
    assert str(info.value) == (
        "training plan p is for hyperpod-cluster, not training-job, which job t runs on; add "
        "training-job to its target_resources or give the job another plan"
    )


TARGETS = st.sampled_from([(HP,), (TJ,), (HP, TJ)])


@st.composite
def workloads_and_plans(draw):
    """Jobs of either target, each on one of three plans (or none, or on demand), the
    plans listed with any targets or left to the planner."""
    plans = {name: draw(st.none() | TARGETS) for name in ("a", "b", "c")}
    jobs = []
    for i in range(draw(st.integers(1, 6))):
        target = draw(st.sampled_from([HP, TJ]))
        plan = draw(st.sampled_from(["a", "b", "c", None]))
        on_demand = target == TJ and plan is None and draw(st.booleans())
        jobs.append(
            Workload(
                f"j{i}", "micro", "sft-lora", hours_per_run=draw(st.integers(1, 30)),
                instance_type=P5, instance_count=draw(st.sampled_from([1, 2, 4])),
                plan=plan, target=target, on_demand=on_demand,
            )
        )  # fmt: skip
    listed = [
        PlanSettings(name=n, target_resources=t)
        for n, t in plans.items()
        if t is not None and any(j.plan == n for j in jobs)
    ]
    return jobs, listed


@settings(max_examples=300, deadline=None)
@given(workloads_and_plans())
def test_no_job_lands_on_a_plan_whose_targets_exclude_it(case) -> None:
    jobs, listed = case
    try:
        plan = plan_capacity(jobs, listed)
    except PlanningError as exc:
        # Refused only for a mix of targets on one plan or a plan without a job's target.
        assert "target" in str(exc), str(exc)
        return
    where = {job.name: job for job in jobs}
    placed: set[str] = set()
    for request in plan.training_plans:
        for name in request.jobs:
            assert where[name].target in request.target_resources, (name, request)
            assert not where[name].on_demand
            placed.add(name)
    on_demand = {job.name for job in plan.on_demand}
    assert on_demand == {j.name for j in jobs if j.on_demand}
    assert placed | on_demand == set(where)
