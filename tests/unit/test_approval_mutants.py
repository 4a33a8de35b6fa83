"""Purchase approval, pinned where `make mutation` found changes no test noticed: the
refusal without an approval, renames of both environment and plan, several changes in
one message, and the edges of the search for the edit that changed a plan's name."""

from __future__ import annotations

from dataclasses import replace

from novapod.capacity import PlanRequest
from novapod.capacity.approval import approval_problem, describe_change
from novapod.capacity.naming import training_plan_name
from novapod.facts import plan_instance_types
from tests.unit.golden import REQUEST as GOLDEN

# The golden request with its window bounds off midnight.
REQUEST = replace(
    GOLDEN, start_after="2027-01-04T12:00:00+00:00", end_before="2027-02-28T12:00:00+00:00"
)
TYPES = sorted(plan_instance_types())


def approved(request: PlanRequest = REQUEST) -> str:
    """The name an earlier `novapod plan` showed for `request` (the input, not the answer)."""
    return training_plan_name("dev", request)


def test_no_approval_says_how_to_give_one() -> None:
    problem = approval_problem(
        environment="dev",
        request=REQUEST,
        approve=None,
        fee_cap="100",
        currency="USD",
        instance_types=TYPES,
    )
    assert problem == (
        "buying a training plan is a non-refundable purchase: after reviewing prices with "
        f"`novapod offerings CONFIG --plan main`, set purchase.approve: {approved()} "
        "(this exact plan) and purchase.max_upfront_fee, or set existing_arn to adopt a "
        "plan you own"
    )


def test_environment_and_plan_both_renamed_name_both_heads() -> None:
    renamed = replace(REQUEST, name="other")
    assert describe_change(approved(), "prod", renamed, TYPES) == (
        "the environment or plan was renamed: novapod-dev-main -> novapod-prod-other"
    )


def test_a_rename_and_an_edit_are_both_named() -> None:
    edited = replace(REQUEST, name="other", instance_count=2)
    assert describe_change(approved(), "dev", edited, TYPES) == (
        "the plan was renamed from main to other; instance_count 4 -> 2"
    )


def test_a_window_start_off_midnight_moved_by_days_is_found() -> None:
    # The search steps whole days from the request's own start, not from today.
    edited = replace(REQUEST, start_after="2027-01-11T12:00:00+00:00")
    assert describe_change(approved(), "dev", edited, TYPES) == (
        "start_after 2027-01-04T12:00:00+00:00 -> 2027-01-11T12:00:00+00:00"
    )


def test_a_window_end_moved_by_days_is_found_from_the_end() -> None:
    edited = replace(REQUEST, end_before="2027-03-07T12:00:00+00:00")
    assert describe_change(approved(), "dev", edited, TYPES) == (
        "end_before 2027-02-28T12:00:00+00:00 -> 2027-03-07T12:00:00+00:00"
    )


def test_the_search_reaches_400_days_either_way() -> None:
    later = replace(REQUEST, start_after="2028-02-08T12:00:00+00:00")  # +400 days
    assert describe_change(approved(), "dev", later, TYPES) == (
        "start_after 2027-01-04T12:00:00+00:00 -> 2028-02-08T12:00:00+00:00"
    )
    earlier = replace(REQUEST, start_after="2025-11-30T12:00:00+00:00")  # -400 days
    assert describe_change(approved(), "dev", earlier, TYPES) == (
        "start_after 2027-01-04T12:00:00+00:00 -> 2025-11-30T12:00:00+00:00"
    )


def test_the_highest_retry_searched_is_found() -> None:
    assert describe_change(approved(), "dev", replace(REQUEST, retry=20), TYPES) == (
        "retry 0 -> 20"
    )


def test_a_retry_approved_earlier_is_named_from_the_approved_value() -> None:
    # Approved at the highest retry searched; the config now asks for the first attempt.
    assert describe_change(approved(replace(REQUEST, retry=20)), "dev", REQUEST, TYPES) == (
        "retry 20 -> 0"
    )


def test_the_search_stops_past_400_days() -> None:
    farther = replace(REQUEST, start_after="2028-02-09T12:00:00+00:00")  # +401 days
    assert describe_change(approved(farther), "dev", REQUEST, TYPES) == (
        "what is bought changed in more than one of instance type, count, duration, window "
        "and targets"
    )
    shifted = replace(
        REQUEST, start_after="2028-02-09T12:00:00+00:00", end_before="2028-04-04T12:00:00+00:00"
    )  # the whole window, +401 days
    assert describe_change(approved(shifted), "dev", REQUEST, TYPES) == (
        "what is bought changed in more than one of instance type, count, duration, window "
        "and targets"
    )


def test_each_bound_is_searched_from_its_own_time_of_day() -> None:
    # Start at noon, end at 18:00: a start searched from the end's time would never match.
    request = replace(REQUEST, end_before="2027-02-28T18:00:00+00:00")
    moved = replace(request, start_after="2027-01-11T12:00:00+00:00")
    assert describe_change(approved(moved), "dev", request, TYPES) == (
        "start_after 2027-01-11T12:00:00+00:00 -> 2027-01-04T12:00:00+00:00"
    )
    moved = replace(request, end_before="2027-03-07T18:00:00+00:00")
    assert describe_change(approved(moved), "dev", request, TYPES) == (
        "end_before 2027-03-07T18:00:00+00:00 -> 2027-02-28T18:00:00+00:00"
    )


def test_single_inputs_and_the_longest_duration_are_named() -> None:
    assert describe_change(
        approved(replace(REQUEST, instance_type="ml.p4d.24xlarge")), "dev", REQUEST, TYPES
    ) == ("instance_type ml.p4d.24xlarge -> ml.p5.48xlarge")
    assert describe_change(
        approved(replace(REQUEST, duration_hours=4368)), "dev", REQUEST, TYPES
    ) == ("duration_hours 4368 -> 48")
    assert describe_change(
        approved(replace(REQUEST, instance_count=64)), "dev", REQUEST, TYPES
    ) == ("instance_count 64 -> 4")
    assert describe_change(
        approved(replace(REQUEST, instance_type="ml.p4d.24xlarge", duration_hours=72)),
        "dev",
        REQUEST,
        TYPES,
    ) == ("instance_type ml.p4d.24xlarge -> ml.p5.48xlarge, duration_hours 72 -> 48")


def test_every_target_set_is_searched() -> None:
    everything = replace(REQUEST, target_resources=("hyperpod-cluster", "training-job", "endpoint"))
    assert describe_change(approved(everything), "dev", REQUEST, TYPES) == (
        "target_resources [endpoint, hyperpod-cluster, training-job] -> [hyperpod-cluster]"
    )


def test_the_search_stops_past_retry_20_and_shifts_whole_windows_400_days() -> None:
    assert describe_change(approved(replace(REQUEST, retry=21)), "dev", REQUEST, TYPES) == (
        "what is bought changed in more than one of instance type, count, duration, window "
        "and targets"
    )
    shifted = replace(
        REQUEST, start_after="2028-02-08T12:00:00+00:00", end_before="2028-04-03T12:00:00+00:00"
    )  # the whole window, +400 days
    assert describe_change(approved(shifted), "dev", REQUEST, TYPES) == (
        "start_after 2028-02-08T12:00:00+00:00 -> 2027-01-04T12:00:00+00:00, "
        "end_before 2028-04-03T12:00:00+00:00 -> 2027-02-28T12:00:00+00:00"
    )
