"""Extending a bought plan: the extension's name (pinned), the `extend` block's
validation (one sentence per field, exit 2), and the advice to extend instead of
buying a second plan when an edit only lengthens one."""

from __future__ import annotations

import copy
import hashlib
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from novapod import yamlsafe
from novapod.capacity import extension
from novapod.capacity.naming import EXTENSION_NAME, extension_name
from novapod.cli import main
from novapod.config import ConfigError, parse_config
from novapod.facts import plan_instance_types
from tests.conftest import ROOT
from tests.conftest import VALIDATION_TIME as NOW
from tests.unit.golden import NAME, REQUEST

TYPES = sorted(plan_instance_types())
PURCHASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
BOUGHT = "novapod-nova-lite-lite-sft-50d13e0b"  # the example's plan: 4 x p5, 144 h
EXT24 = "novapod-nova-lite-lite-sft-50d13e0b-ext24h-c2dfa27d"

# --- the name ----------------------------------------------------------------------------


def test_extension_names_are_pinned() -> None:
    # Literals: a change renames every approved extension (and asks for new approvals).
    assert extension_name(NAME, 48) == "novapod-dev-main-e41dea05-ext48h-cff5e5be"
    assert extension_name(NAME, 96) == "novapod-dev-main-e41dea05-ext96h-119306d7"
    assert extension_name("team-p5-january", 24) == "team-p5-january-ext24h-47d29035"


def test_the_digest_covers_the_plan_and_the_hours_as_canonical_json() -> None:
    canonical = '{"extend_hours":48,"training_plan":"novapod-dev-main-e41dea05"}'
    assert hashlib.sha256(canonical.encode()).hexdigest()[:8] == "cff5e5be"
    assert extension_name("novapod-dev-main-0663ff74", 48) != extension_name(NAME, 48)


def test_the_name_pattern_reads_back_the_plan_and_the_hours() -> None:
    match = EXTENSION_NAME.match("novapod-dev-main-e41dea05-ext48h-cff5e5be")
    assert match is not None
    assert (match.group("plan"), match.group("hours")) == ("novapod-dev-main-e41dea05", "48")
    assert EXTENSION_NAME.match("novapod-dev-main-e41dea05") is None


# --- the extend block --------------------------------------------------------------------


def example(**extend: Any) -> dict[str, Any]:
    """The purchase example, pinned at its bought 144 h, with this extend block."""
    data = yamlsafe.load(PURCHASE.read_text())
    plan = data["capacity"]["training_plans"][0]
    plan["duration_hours"] = 144
    if extend:
        plan["extend"] = extend
    return data


def errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, now=NOW)
    return caught.value.issues


WHERE = "capacity.training_plans[0].extend"


def test_an_approved_extend_block_validates_and_keeps_the_plan_name() -> None:
    config = parse_config(example(duration_hours=24, approve=EXT24, max_upfront_fee=10000), now=NOW)
    ((spec, request),) = config.training_plan_requests()
    assert spec.extend is not None and spec.extend.max_upfront_fee == Decimal(10000)
    assert request.duration_hours == 144  # as bought: the name stays approved
    assert config.purchase_names() == {"lite-sft": BOUGHT}
    # The jobs are sized against the extended plan: 4 instances x (144 + 24) h.
    assert request.reserved_instance_hours == 4 * 168


def test_an_extension_lets_grown_jobs_fit_the_bought_plan() -> None:
    data = example(duration_hours=24, approve=EXT24, max_upfront_fee=10000)
    data["jobs"][0]["runs"] = 5  # 5 x 30 h + 4 x 2 h = 158 h > 144 h
    ((_, request),) = parse_config(data, now=NOW).training_plan_requests()
    assert request.duration_hours == 144
    del data["capacity"]["training_plans"][0]["extend"]
    assert errors(data) == [
        (
            "capacity.training_plans[0]",
            "training plan lite-sft: duration_hours 144 is shorter than the 158 h its jobs "
            "(sft-lora, eval) need even on 64 instances; set duration_hours to 168 or more",
        )
    ]


@pytest.mark.parametrize(
    ("extend", "path", "message"),
    [
        (
            {"duration_hours": 24},
            f"{WHERE}.approve",
            f"extending training plan {BOUGHT} by 24 h is a non-refundable purchase: after "
            "reviewing prices (`aws sagemaker search-training-plan-offerings --training-plan-arn "
            f"ARN --duration-hours 24` lists them), set approve: {EXT24} (this exact extension) "
            "and max_upfront_fee",
        ),
        (
            {"duration_hours": 24, "approve": True, "max_upfront_fee": 1},
            f"{WHERE}.approve",
            f"approve must name the exact extension, not true: set approve: {EXT24}; a change to "
            "the plan or to duration_hours changes this name and needs a new approval",
        ),
        (
            {"duration_hours": 48, "approve": EXT24, "max_upfront_fee": 20000},
            f"{WHERE}.approve",
            f"approves {EXT24} but this config extends training plan {BOUGHT} by 48 h in total "
            f"as {BOUGHT}-ext48h-9eddf321 (duration_hours 24 -> 48); that is another "
            "non-refundable purchase of up to 20000 USD, and an extension, once bought, is never "
            f"undone: set approve: {BOUGHT}-ext48h-9eddf321 to buy it, or undo the edit",
        ),
        (
            {"duration_hours": 24, "approve": EXT24},
            f"{WHERE}.max_upfront_fee",
            "required with approve: the highest up-front fee to pay for this extension, a plain "
            "number in USD (`aws sagemaker search-training-plan-offerings --training-plan-arn "
            "ARN --duration-hours 24` lists prices)",
        ),
        (
            {"duration_hours": 30, "approve": EXT24, "max_upfront_fee": 1},
            f"{WHERE}.duration_hours",
            "30 is not whole days; extensions are sold by the day: use a multiple of 24 such as 24",
        ),
        (
            {"duration_hours": 24, "approve": BOUGHT, "max_upfront_fee": 1},
            f"{WHERE}.approve",
            f"'{BOUGHT}' is not an extension name (<plan name>-ext<hours>h-<digest>); paste the "
            "name validation prints",
        ),
        (
            {"duration_hours": 24, "approve": EXT24, "max_upfront_fee": "$9,000"},
            f"{WHERE}.max_upfront_fee",
            "'$9,000' is not a plain number; write 9000 (the currency goes in extend.currency)",
        ),
        (
            {"duration_hours": 24, "approve": EXT24, "max_upfront_fee": 1, "currency": "usd"},
            f"{WHERE}.currency",
            "currency codes are upper case; write USD",
        ),
    ],
    ids=[
        "no-approval",
        "approve-true",
        "hours-changed",
        "no-cap",
        "not-whole-days",
        "a-plan-name",
        "cap-with-symbols",
        "lower-case-currency",
    ],
)
def test_each_extend_field_has_one_sentence(extend, path, message) -> None:
    found = errors(example(**extend))
    assert (path, message) in found, found


def test_the_hours_stay_within_one_extension_of_182_days() -> None:
    ((path, message),) = [e for e in errors(example(duration_hours=4392)) if "duration" in e[0]]
    assert path == f"{WHERE}.duration_hours"
    assert message == "must be at most 4368, got 4392"


def test_extend_needs_the_bought_duration() -> None:
    data = example(duration_hours=24, approve=EXT24, max_upfront_fee=1)
    del data["capacity"]["training_plans"][0]["duration_hours"]
    assert errors(data) == [
        (
            "capacity.training_plans[0].duration_hours",
            "a plan with extend needs the hours it was bought for: set duration_hours to them, "
            "so its name (and its approval) stay those of the bought plan",
        )
    ]


def test_a_renamed_plan_needs_a_new_extension_approval() -> None:
    data = example(duration_hours=24, approve=EXT24, max_upfront_fee=10000)
    data["capacity"]["training_plans"][0]["retry"] = 1  # a new plan name
    found = dict(errors(data))
    assert (
        "(the plan changed from novapod-nova-lite-lite-sft-50d13e0b to "
        in found[f"{WHERE}.approve"]
    )


def test_an_adopted_plan_is_extended_under_its_arn_name() -> None:
    data = yamlsafe.load((ROOT / "config/examples/adopt-existing-plan.yaml").read_text())
    plan = data["capacity"]["training_plans"][0]
    plan["duration_hours"] = 336
    plan["extend"] = {"duration_hours": 168}
    ((path, message),) = errors(data)
    assert path == "capacity.training_plans[0].extend.approve"
    assert "set approve: team-p5-january-ext168h-ca472c09 (this exact extension)" in message


# --- advice: extend instead of a second plan ---------------------------------------------


def test_lengthening_is_found_only_for_a_longer_duration() -> None:
    longer = replace(REQUEST, duration_hours=96)
    assert extension.lengthening(NAME, "dev", longer, TYPES) == 48
    assert extension.lengthening(NAME, "dev", replace(REQUEST, duration_hours=24), TYPES) is None
    wider = replace(REQUEST, instance_count=8)
    assert extension.lengthening(NAME, "dev", wider, TYPES) is None
    both = replace(REQUEST, instance_count=8, duration_hours=96)
    assert extension.lengthening(NAME, "dev", both, TYPES) is None
    assert extension.lengthening(NAME, "prod", longer, TYPES) is None
    assert extension.lengthening("team-p5-january", "dev", longer, TYPES) is None


def test_the_advice_names_the_extend_block_to_write() -> None:
    advice = extension.lengthening_advice(
        approved=NAME,
        environment="dev",
        request=replace(REQUEST, duration_hours=96),
        fee_cap=Decimal("30000"),
        instance_types=TYPES,
    )
    assert advice == (
        f"since the edit only lengthens {NAME} by 48 h, extend that plan instead of buying a "
        "second one: keep duration_hours: 48 and add extend: {duration_hours: 48, approve: "
        "novapod-dev-main-e41dea05-ext48h-cff5e5be, max_upfront_fee: 30000} (the cap is the "
        "plan's pro rata; `aws sagemaker search-training-plan-offerings --training-plan-arn ARN "
        "--duration-hours 48` shows real prices once it is bought)"
    )


def test_the_advice_block_is_yaml_that_validates(tmp_path: Path) -> None:
    """Follow the advice literally: the config validates and buys no second plan."""
    data = example()
    del data["capacity"]["training_plans"][0]["duration_hours"]
    data["jobs"][0]["runs"] = 5  # the jobs grow: the derived plan lengthens to 168 h
    ((path, message),) = errors(data)
    assert path == "capacity.training_plans[0].purchase.approve"
    assert "(duration_hours 144 -> 168)" in message
    block = message.split("add extend: ", 1)[1].split(" (the cap", 1)[0]
    assert block == f"{{duration_hours: 24, approve: {EXT24}, max_upfront_fee: 10000}}"
    plan = data["capacity"]["training_plans"][0]
    plan["duration_hours"] = 144
    plan["extend"] = yamlsafe.load(block)
    config = parse_config(copy.deepcopy(data), now=NOW)
    assert config.purchase_names() == {"lite-sft": BOUGHT}


def test_no_advice_when_the_edit_does_more_than_lengthen() -> None:
    data = example()
    data["capacity"]["training_plans"][0]["duration_hours"] = 168
    data["capacity"]["training_plans"][0]["instance_count"] = 8
    ((_, message),) = errors(data)
    assert "extend" not in message


def test_novapod_plan_says_how_to_extend_instead_of_rebuying(tmp_path: Path, capsys) -> None:
    data = example()
    data["capacity"]["training_plans"][0]["duration_hours"] = 192
    path = tmp_path / "longer.yaml"
    path.write_text(yaml.safe_dump(data))
    # plan shows the plan (it looks before anyone approves) and says what validate refuses.
    assert main(["plan", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(
        f"{path}: not approved yet: capacity.training_plans[0].purchase.approve: approves "
    )
    assert "since the edit only lengthens novapod-nova-lite-lite-sft-50d13e0b by 48 h" in err
    assert "keep duration_hours: 144 and add extend: {duration_hours: 48, approve: " in err


def test_novapod_plan_lists_the_extensions_it_will_buy(capsys) -> None:
    assert main(["plan", str(ROOT / "tests/fixtures/extend-plans.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.split("Extensions (bought once per approval by the plan's custom resource)\n")[
        1
    ].splitlines() == [
        "lite: novapod-ext-lite-31e61478 (144 h as bought) extended to 192 h in total: "
        "novapod-ext-lite-31e61478-ext48h-ef01e65d, fee cap 20000 USD; non-refundable, never "
        "undone",
        "team: team-p5-january (336 h as bought) extended to 504 h in total: "
        "team-p5-january-ext168h-ca472c09, fee cap 150000 USD; non-refundable, never undone",
    ]


def test_novapod_plan_without_extend_lists_no_extensions(capsys) -> None:
    assert main(["plan", str(PURCHASE)]) == 0
    assert "Extensions" not in capsys.readouterr().out


def test_the_docs_extend_example_validates() -> None:
    readme = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = readme.split("## Extending a training plan\n", 1)[1].split("\n## ", 1)[0]
    snippet = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    (entry,) = yamlsafe.load(snippet)
    data = example()
    data["capacity"]["training_plans"][0].update(entry)
    data["jobs"][0]["runs"] = 5  # the grown jobs the extension is for
    config = parse_config(data, now=NOW)
    assert config.purchase_names() == {"lite-sft": entry["purchase"]["approve"]}


def test_the_schema_offers_editors_the_name_pattern_in_their_regex_dialect() -> None:
    import json
    import re

    from novapod.config import json_schema

    text = json.dumps(json_schema())
    assert "?P<" not in text  # ECMA-262 (JSON Schema) has no Python named groups
    schema = json_schema()
    extend = schema["definitions"]["Extension"]["properties"]["approve"]["anyOf"][0]["pattern"]
    assert re.fullmatch(extend, "novapod-dev-main-e41dea05-ext48h-cff5e5be")
    assert not re.fullmatch(extend, "novapod-dev-main-e41dea05")
