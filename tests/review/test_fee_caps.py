"""A fee cap or currency changed under an unchanged plan or extension name (issue 18, §3).

The name is the approval and covers what is bought, never the cap (capacity/naming.py), so
raising `max_upfront_fee` keeps the approval valid: the review is where that is decided.
The pairs are copies of the synthesized base whose training-plan properties are edited
as JSON (conftest.plan_edit): what the construct writes for another cap or currency.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from novapod import review
from novapod.capacity.naming import extension_name
from novapod.review import markdown, semantics
from tests.review.test_review import ENV, cli, section

PLAN = "novapod-nova-lite-lite-sft-50d13e0b"  # config/examples/single-rig-purchase.yaml
CAPACITY = f"{ENV}-capacity"
LOGICAL_ID = "TrainingPlanLiteSft"
WHERE = f"(`{CAPACITY}` `{LOGICAL_ID}`)"
EXTENSION = extension_name(PLAN, 24)

PlanEdit = Callable[[str, Callable[[dict[str, Any]], None]], Path]


def _cap(fee: str, currency: str = "USD") -> Callable[[dict[str, Any]], None]:
    return lambda properties: properties.update(MaxUpfrontFee=fee, Currency=currency)


def _extended(fee: str) -> Callable[[dict[str, Any]], None]:
    """The plan with `extend` (24 h), as the construct writes it, at an extension cap."""
    return lambda properties: properties.update(
        ExtendHours="24",
        ExtensionName=EXTENSION,
        ApprovedExtensionName=EXTENSION,
        ExtensionMaxUpfrontFee=fee,
        ExtensionCurrency="USD",
    )


def _plan_entry(report: dict[str, Any]) -> dict[str, Any]:
    (entry,) = report["purchases"]
    assert (entry["stack"], entry["logical_id"], entry["plan_name"]) == (
        CAPACITY,
        LOGICAL_ID,
        PLAN,
    )
    return entry


def _purchase_lines(report: dict[str, Any]) -> list[str]:
    return [t for t in section(review.render(report), 1).splitlines() if t.startswith("- ")]


@pytest.fixture(scope="module")
def base_dir(variant) -> Path:
    return Path(variant("base").outdir)


def test_a_raised_cap_on_the_same_plan_name_is_listed_and_trips_purchase(
    plan_edit: PlanEdit, capsys
) -> None:
    # The example: 6,000 -> 600,000 USD, the same plan name (the approval).
    base, head = plan_edit("cap-6000", _cap("6000")), plan_edit("cap-600000", _cap("600000"))
    report = review.build(base, head)
    entry = _plan_entry(report)
    # The existing keys say what they said: the same name buys nothing new by itself.
    assert (entry["action"], entry["purchase"], entry["changed"]) == (
        "update",
        False,
        ["MaxUpfrontFee"],
    )
    assert (entry["max_upfront_fee"], entry["currency"]) == ("600000", "USD")
    assert entry["cap_changes"] == [
        {
            "of": "plan",
            "name": PLAN,
            "change": "raised",
            "previous_max_upfront_fee": "6000",
            "max_upfront_fee": "600000",
            "previous_currency": "USD",
            "currency": "USD",
            "may_spend_more": True,
            "note": "the approval (the plan's name) stays valid, so if the plan is not bought "
            "yet it may now cost up to 600,000 USD",
        }
    ]
    assert report["gates"]["purchase"] is True
    assert report["summary"]["purchases"] == 0  # it trips the gate, but buys nothing itself
    lines = _purchase_lines(report)
    assert lines[1] == (
        f"- **Cap raised** 6,000 → 600,000 USD on training plan `{PLAN}` {WHERE}: The "
        "approval (the plan's name) stays valid, so if the plan is not bought yet it may now "
        "cost up to 600,000 USD."
    )
    assert lines[0].startswith(f"- **Updates** training plan `{PLAN}` {WHERE}")
    assert "Trips `purchase` (a training plan is bought, or a fee cap is raised" in (
        review.render(report)
    )
    status, out, err = cli(
        capsys, "--base", str(base), "--head", str(head), "--fail-on", "purchase"
    )
    assert status == 3 and out.startswith("## novapod review")
    assert err == "novapod review: tripped --fail-on purchase\n"


def test_a_lowered_cap_is_listed_but_does_not_trip_purchase(
    base_dir: Path, plan_edit: PlanEdit, capsys
) -> None:
    # 60,000 (the example's cap) -> 6,000: a purchase under the approval can only cost less.
    head = plan_edit("cap-6000", _cap("6000"))
    report = review.build(base_dir, head)
    (change,) = _plan_entry(report)["cap_changes"]
    assert change == {
        "of": "plan",
        "name": PLAN,
        "change": "lowered",
        "previous_max_upfront_fee": "60000",
        "max_upfront_fee": "6000",
        "previous_currency": "USD",
        "currency": "USD",
        "may_spend_more": False,
        "note": "offerings above 6,000 USD are refused; nothing can cost more than before",
    }
    assert report["gates"]["purchase"] is False
    assert _purchase_lines(report)[1] == (
        f"- **Cap lowered** 60,000 → 6,000 USD on training plan `{PLAN}` {WHERE}: Offerings "
        "above 6,000 USD are refused; nothing can cost more than before."
    )
    args = ("--base", str(base_dir), "--head", str(head), "--fail-on", "purchase")
    assert cli(capsys, *args)[0] == 0


def test_a_changed_currency_is_listed_and_trips_purchase(
    base_dir: Path, plan_edit: PlanEdit, capsys
) -> None:
    # The same amount in another currency is another cap: amounts do not compare.
    head = plan_edit("currency-eur", _cap("60000", "EUR"))
    report = review.build(base_dir, head)
    entry = _plan_entry(report)
    assert entry["changed"] == ["Currency"]
    (change,) = entry["cap_changes"]
    assert change == {
        "of": "plan",
        "name": PLAN,
        "change": "currency-changed",
        "previous_max_upfront_fee": "60000",
        "max_upfront_fee": "60000",
        "previous_currency": "USD",
        "currency": "EUR",
        "may_spend_more": True,
        "note": "the approval (the plan's name) stays valid, so if the plan is not bought "
        "yet it may now cost up to 60,000 EUR",
    }
    assert report["gates"]["purchase"] is True
    assert _purchase_lines(report)[1] == (
        f"- **Currency changed** USD → EUR (cap 60,000 USD → 60,000 EUR) on training plan "
        f"`{PLAN}` {WHERE}: The approval (the plan's name) stays valid, so if the plan is not "
        "bought yet it may now cost up to 60,000 EUR."
    )
    args = ("--base", str(base_dir), "--head", str(head), "--fail-on", "purchase")
    assert cli(capsys, *args)[0] == 3


def test_a_raised_extension_cap_is_listed_on_the_extensions_name(
    plan_edit: PlanEdit, capsys
) -> None:
    base = plan_edit("extension-10000", _extended("10000"))
    head = plan_edit("extension-20000", _extended("20000"))
    report = review.build(base, head)
    entry = _plan_entry(report)
    assert (entry["action"], entry["purchase"], entry["changed"]) == (
        "update",
        False,
        ["ExtensionMaxUpfrontFee"],
    )
    assert entry["cap_changes"] == [
        {
            "of": "extension",
            "name": EXTENSION,
            "change": "raised",
            "previous_max_upfront_fee": "10000",
            "max_upfront_fee": "20000",
            "previous_currency": "USD",
            "currency": "USD",
            "may_spend_more": True,
            "note": "the approval (the extension's name) stays valid, so if the extension is "
            "not bought yet it may now cost up to 20,000 USD",
        }
    ]
    assert report["gates"]["purchase"] is True
    assert _purchase_lines(report)[1] == (
        f"- **Cap raised** 10,000 → 20,000 USD on extension `{EXTENSION}` {WHERE}: The "
        "approval (the extension's name) stays valid, so if the extension is not bought yet "
        "it may now cost up to 20,000 USD."
    )
    status, _, err = cli(capsys, "--base", str(base), "--head", str(head), "--fail-on", "purchase")
    assert (status, err) == (3, "novapod review: tripped --fail-on purchase\n")


# --- the rules, on the construct's properties (no engine run) -----------------------


def _resource(**properties: str) -> dict[str, Any]:
    return {
        "Type": semantics.TRAINING_PLAN,
        "Properties": {
            "Mode": "purchase",
            "PlanName": PLAN,
            "ApprovedPlanName": PLAN,
            "MaxUpfrontFee": "60000",
            "Currency": "USD",
            **properties,
        },
    }


def _changes(base: dict[str, Any], head: dict[str, Any]) -> list[dict[str, Any]]:
    entry = semantics.training_plan(CAPACITY, LOGICAL_ID, base, head)
    assert entry is not None
    return list(entry["cap_changes"])


def test_the_same_amount_written_otherwise_is_no_cap_change() -> None:
    assert _changes(_resource(), _resource(MaxUpfrontFee="60000.00")) == []


def test_a_new_name_is_a_purchase_not_a_cap_change() -> None:
    # A new plan is a new approval with its own cap, reported as a purchase (action buy);
    # its extension is renamed with it.
    base = _resource(ExtensionName=EXTENSION, ExtensionMaxUpfrontFee="10000")
    head = _resource(PlanName="novapod-nova-lite-lite-sft-f57fdf2e", MaxUpfrontFee="600000")
    head["Properties"] |= {
        "ExtensionName": extension_name("novapod-nova-lite-lite-sft-f57fdf2e", 24),
        "ExtensionMaxUpfrontFee": "20000",
    }
    entry = semantics.training_plan(CAPACITY, LOGICAL_ID, base, head)
    assert entry is not None
    assert (entry["action"], entry["purchase"], entry["cap_changes"]) == ("buy", True, [])


def test_a_cap_that_cannot_be_compared_counts_as_raised() -> None:
    head = _resource()
    head["Properties"]["MaxUpfrontFee"] = {"Ref": "Cap"}
    (change,) = _changes(_resource(), head)
    assert (change["change"], change["max_upfront_fee"], change["may_spend_more"]) == (
        "changed",
        "${Cap}",
        True,
    )
    report = {"purchases": [{"purchase": False, "cap_changes": [change]}], "stateful": []}
    report["security"] = {"iam": [], "security_groups": []}
    assert review.tripped(report)["purchase"] is True


def test_a_cap_only_on_the_head_counts_and_none_on_the_head_does_not() -> None:
    # Adopting the plan novapod bought (existing_arn: the same name) drops the cap: the
    # handler buys nothing without one. Buying under that name again brings one back.
    adopted = _resource(Mode="adopt")
    for key in ("MaxUpfrontFee", "Currency", "ApprovedPlanName"):
        del adopted["Properties"][key]
    assert _changes(_resource(), adopted) == []
    base, head = adopted, _resource()
    entry = semantics.training_plan(CAPACITY, LOGICAL_ID, base, head)
    assert entry is not None
    (change,) = entry["cap_changes"]
    assert (change["change"], change["previous_max_upfront_fee"], change["may_spend_more"]) == (
        "changed",
        None,
        True,
    )
    assert markdown._cap_line(entry, change) == (
        f"- **Cap changed** no cap → 60,000 USD on training plan `{PLAN}` {WHERE}: The "
        "approval (the plan's name) stays valid, so if the plan is not bought yet it may now "
        "cost up to 60,000 USD."
    )


def test_a_report_from_before_cap_changes_still_gates() -> None:
    entry = semantics.training_plan(CAPACITY, LOGICAL_ID, None, _resource())
    assert entry is not None
    old = copy.deepcopy(entry)
    old.pop("cap_changes")  # as report.build wrote it before the key existed
    report = {"purchases": [old], "stateful": [], "security": {"iam": [], "security_groups": []}}
    assert review.tripped(report)["purchase"] is True


# --- a grown plan under the same cap (issue 21, §3) ---------------------------------


def test_a_grown_plan_under_the_same_cap_is_warned(review_of, variant_path) -> None:
    # plan-count doubles the instances (4 -> 8 for 144 h) and keeps the 60,000 USD cap: the
    # new name is a new purchase, approved with the cap written for the smaller plan.
    report = review_of("base", "plan-count")
    (entry,) = report["purchases"]
    new = entry["plan_name"]
    assert (entry["action"], entry["previous_plan_name"]) == ("buy", PLAN)
    assert entry["cap_warnings"] == [
        {
            "of": "plan",
            "warning": "cap-unchanged",
            "name": new,
            "previous_name": PLAN,
            "max_upfront_fee": "60000",
            "currency": "USD",
            "previous_instance_count": 4,
            "instance_count": 8,
            "previous_duration_hours": 144,
            "duration_hours": 144,
            "previous_instance_hours": 576,
            "instance_hours": 1152,
            "note": "the cap was written for the smaller plan (576 instance-hours, now 1,152): "
            "an offering above it is refused at deploy and nothing is bought; check the "
            "price with novapod offerings and raise max_upfront_fee if needed",
        }
    ]
    assert _purchase_lines(report)[1] == (
        f"- **Cap unchanged** 60,000 USD on training plan `{new}` {WHERE}, grown from "
        "4 x 144 h to 8 x 144 h: The cap was written for the smaller plan (576 "
        "instance-hours, now 1,152): an offering above it is refused at deploy and nothing "
        "is bought; check the price with novapod offerings and raise max_upfront_fee if "
        "needed."
    )
    # Not a gate of its own: the new name already trips purchase.
    assert report["gates"]["purchase"] is True
    # Shrinking it back: the old cap covers the smaller plan.
    assert review_of("plan-count", "base")["purchases"][0]["cap_warnings"] == []


def _grown(**properties: str) -> dict[str, Any]:
    return _resource(PlanName="novapod-nova-lite-lite-sft-f57fdf2e", **properties)


def _warnings(base: dict[str, Any], head: dict[str, Any]) -> list[dict[str, Any]]:
    entry = semantics.training_plan(CAPACITY, LOGICAL_ID, base, head)
    assert entry is not None
    return list(entry["cap_warnings"])


@pytest.mark.parametrize(
    ("head", "warned"),
    [
        (_grown(InstanceCount="8", DurationHours="144"), True),  # more instances
        (_grown(InstanceCount="4", DurationHours="168"), True),  # a longer plan
        (_grown(InstanceCount="8", DurationHours="72"), False),  # the same instance-hours
        (_grown(InstanceCount="2", DurationHours="144"), False),  # a smaller plan
        (_grown(InstanceCount="8", DurationHours="144", MaxUpfrontFee="120000"), False),
        (_grown(InstanceCount="8", DurationHours="144", Currency="EUR"), False),
        (_resource(InstanceCount="8", DurationHours="144"), False),  # the same name
    ],
)
def test_which_grown_plans_are_warned(head: dict[str, Any], warned: bool) -> None:
    base = _resource(InstanceCount="4", DurationHours="144")
    assert bool(_warnings(base, head)) is warned


def test_an_adopted_plan_has_no_cap_to_warn_about() -> None:
    base = _resource(InstanceCount="4", DurationHours="144")
    head = _grown(Mode="adopt", InstanceCount="8", DurationHours="144")
    del head["Properties"]["MaxUpfrontFee"]
    assert _warnings(base, head) == []


# --- an extension is a purchase of its own -----------------------------------------------


def test_an_extension_added_under_the_same_plan_name_is_a_purchase(
    plan_edit: PlanEdit, base_dir: Path, capsys
) -> None:
    head = plan_edit("extension-added", _extended("5000"))
    report = review.build(base_dir, head)
    entry = _plan_entry(report)
    assert (entry["action"], entry["purchase"], entry["extension_name"]) == (
        "extend",
        True,
        EXTENSION,
    )
    assert entry["note"] == (
        f"a new non-refundable extension {EXTENSION} of plan {PLAN} by 24 h, up to 5000 USD; "
        "the plan itself is not bought again"
    )
    assert report["summary"]["purchases"] == 1
    assert report["gates"]["purchase"] is True
    assert _purchase_lines(report)[0].startswith(f"- **Extends** training plan `{PLAN}` {WHERE}")
    status, _, err = cli(
        capsys, "--base", str(base_dir), "--head", str(head), "--fail-on", "purchase"
    )
    assert (status, err) == (3, "novapod review: tripped --fail-on purchase\n")


def test_a_longer_extension_is_a_new_purchase(plan_edit: PlanEdit) -> None:
    longer = extension_name(PLAN, 48)
    base = plan_edit("extension-24", _extended("5000"))
    head = plan_edit(
        "extension-48",
        lambda p: (
            _extended("5000")(p),
            p.update(ExtendHours="48", ExtensionName=longer, ApprovedExtensionName=longer),
        ),
    )
    report = review.build(base, head)
    entry = _plan_entry(report)
    assert (entry["action"], entry["purchase"], entry["extension_name"]) == ("extend", True, longer)
    assert "by 48 h, up to 5000 USD" in entry["note"]
    assert report["summary"]["purchases"] == 1


def test_an_unchanged_extension_buys_nothing_new(plan_edit: PlanEdit) -> None:
    base = plan_edit("extension-same", _extended("5000"))
    head = plan_edit("extension-same-tagged", lambda p: (_extended("5000")(p), p.update(Tag="x")))
    report = review.build(base, head)
    entry = _plan_entry(report)
    assert (entry["action"], entry["purchase"]) == ("update", False)
    assert report["summary"]["purchases"] == 0
    assert report["gates"]["purchase"] is False
