"""`novapod purchases CONFIG`: the purchase ledger read with the caller's credentials, and
the one deliberate write (`--release`) after a human checked that nothing was bought."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from novapod.cli import main
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers.ledger_rows import ledger_row

CONFIG = """
name: dev
region: us-east-1
network:
  vpc:
    zone_ids: [use1-az4, use1-az6]
"""
TABLE = "novapod-dev-storage-PurchaseLedger-1A2B3C"
PLAN = "novapod-dev-main-951cd24c"
OTHER = "novapod-dev-spare-0a1b2c3d"


@pytest.fixture
def fake(control_plane: FakeControlPlane) -> FakeControlPlane:
    control_plane.reset()
    control_plane.add_stack("novapod-dev-storage", {"PurchaseLedgerTableName": TABLE})
    control_plane.dynamodb.create_table(TABLE, partition_key="Environment", sort_key="Purchase")
    return control_plane


def item(purchase: str, state: str, **fields: object) -> dict[str, object]:
    return ledger_row(purchase, state, updated_at="2030-01-01T00:00:00Z", **fields)


def config(tmp_path: Path) -> str:
    path = tmp_path / "dev.yaml"
    path.write_text(CONFIG)
    return str(path)


def seed(fake: FakeControlPlane) -> None:
    fake.dynamodb.put_raw(
        TABLE,
        item(
            f"plan#{PLAN}",
            "bought",
            Arn=f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}",
            UpfrontFee="90000.00",
            Currency="USD",
            BoughtAt="2030-01-01T00:00:00Z",
            OfferingId="tpo-cheap",
            Approval=PLAN,
        ),
        settled=True,
    )
    ambiguous = item(
        f"plan#{OTHER}", "ambiguous", Error="InternalFailure: An internal error occurred"
    )
    fake.dynamodb.put_raw(TABLE, {**ambiguous, "UpdatedAt": "2026-06-01T00:00:00Z"}, settled=True)
    # Another environment's item in the same table is never listed.
    fake.dynamodb.put_raw(TABLE, {**item(f"plan#{PLAN}", "bought"), "Environment": "dev-a"})


def test_lists_what_was_bought_and_what_needs_a_look_first(fake, tmp_path, capsys) -> None:
    seed(fake)
    assert main(["purchases", config(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"purchases of environment dev (ledger {TABLE}):",
        f"  ambiguous plan#{OTHER} (attempt 1, approval -, updated 2026-06-01T00:00:00Z)",
        "            ! the purchase call's outcome is unknown: it may have been bought "
        "(InternalFailure: An internal error occurred)",
        f"  bought    plan#{PLAN} 90000.00 USD on 2030-01-01T00:00:00Z offering tpo-cheap "
        f"(attempt 1, approval {PLAN}, updated 2030-01-01T00:00:00Z)",
    ]
    (query,) = fake.calls_to("Query")
    assert query["ConsistentRead"] is True
    assert query["ExpressionAttributeValues"] == {":env": {"S": "dev"}}
    assert fake.calls_to("PutItem") == []  # read-only


def test_json_is_the_contract(fake, tmp_path, capsys) -> None:
    seed(fake)
    assert main(["purchases", config(tmp_path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["environment"] == "dev" and document["table"] == TABLE
    assert document["attention"] == [f"plan#{OTHER}"]
    bought = next(p for p in document["purchases"] if p["state"] == "bought")
    assert {k: bought[k] for k in ("key", "kind", "name", "upfront_fee", "currency")} == {
        "key": f"plan#{PLAN}",
        "kind": "plan",
        "name": PLAN,
        "upfront_fee": "90000.00",
        "currency": "USD",
    }
    assert bought["attention"] is None and bought["earlier_attempts"] == []


def test_release_moves_an_ambiguous_item_to_released(fake, tmp_path, capsys) -> None:
    seed(fake)  # the ambiguous item is from 2026-06-01, long settled by now
    assert main(["purchases", config(tmp_path), "--release", f"plan#{OTHER}"]) == 0
    assert capsys.readouterr().out.startswith(f"released plan#{OTHER}: plan#{OTHER} is released")
    stored = fake.dynamodb.item(TABLE, {"Environment": "dev", "Purchase": f"plan#{OTHER}"})
    assert stored is not None
    assert (stored["State"], stored["Sequence"], stored["Claimant"]) == (
        "released",
        4,
        "novapod-purchases-release",
    )
    assert stored["Fields"]["ReleasedFrom"] == "ambiguous"  # counted as possibly bought
    (put,) = fake.calls_to("PutItem")
    assert put["ConditionExpression"] == "#seq = :seq"  # never over a newer write


def test_release_refuses_a_bought_item(fake, tmp_path, capsys) -> None:
    seed(fake)
    assert main(["purchases", config(tmp_path), "--release", f"plan#{PLAN}"]) == 2
    assert capsys.readouterr().err == (
        f"novapod purchases: plan#{PLAN} is bought, which is not released by hand (only "
        "ambiguous, calling, claimed items are, and bought Bedrock imports and deployments "
        "deleted by hand): nothing was changed\n"
    )
    assert fake.calls_to("PutItem") == []


def test_release_of_an_unknown_key_says_how_keys_look(fake, tmp_path, capsys) -> None:
    assert main(["purchases", config(tmp_path), "--release", "nope"]) == 2
    assert capsys.readouterr().err == (
        "novapod purchases: the purchase ledger has no item nope (keys look like plan#NAME)\n"
    )


def test_an_empty_ledger_says_so(fake, tmp_path, capsys) -> None:
    assert main(["purchases", config(tmp_path)]) == 0
    assert capsys.readouterr().out == (
        f"no purchases recorded for environment dev (ledger {TABLE})\n"
    )


def test_an_undeployed_environment_is_named(control_plane, tmp_path, capsys) -> None:
    control_plane.reset()
    assert main(["purchases", config(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "novapod purchases: stack novapod-dev-storage is not deployed in us-east-1; deploy the "
        "environment first (cdk deploy novapod-dev-storage)\n"
    )


def test_an_unreadable_ledger_is_an_aws_error(fake, tmp_path, capsys) -> None:
    fake.error("Query", "AccessDeniedException", message="denied")
    assert main(["purchases", config(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"novapod purchases: reading the purchase ledger {TABLE} failed "
        "(AccessDeniedException: denied)\n"
    )


def test_release_refuses_an_item_a_call_may_still_be_under_way_for(fake, tmp_path, capsys) -> None:
    from datetime import UTC, datetime

    recent = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    fake.dynamodb.put_raw(
        TABLE, {**item(f"plan#{OTHER}", "calling"), "UpdatedAt": recent}, settled=True
    )
    assert main(["purchases", config(tmp_path), "--release", f"plan#{OTHER}"]) == 2
    assert capsys.readouterr().err == (
        f"novapod purchases: plan#{OTHER} is calling since {recent}: a purchase call may still "
        "be under way for 30 minutes after it, so nothing was changed; check again later, or "
        "pass --force once AWS shows it was not bought\n"
    )
    assert fake.calls_to("PutItem") == []
    assert main(["purchases", config(tmp_path), "--release", f"plan#{OTHER}", "--force"]) == 0


def test_an_item_released_from_ambiguous_still_asks_for_a_look(fake, tmp_path, capsys) -> None:
    released = item(f"plan#{OTHER}", "released", ReleasedFrom="ambiguous", Detail="by hand")
    fake.dynamodb.put_raw(TABLE, released, settled=True)
    assert main(["purchases", config(tmp_path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["attention"] == [f"plan#{OTHER}"]
    (listed,) = document["purchases"]
    assert listed["attention"] == "released by hand from ambiguous: it may have been bought"
