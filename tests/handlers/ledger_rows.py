"""A purchase-ledger item as the ledger stores it (handler_core/ledger.py's layout), for
the tests that seed the fake table a command reads (`purchases`, `status`)."""

from __future__ import annotations


def ledger_row(
    purchase: str, state: str, *, updated_at: str, **fields: object
) -> dict[str, object]:
    """`purchase` is the item's key (`plan#NAME`, `extension#NAME`, ...); `fields` its
    Fields map."""
    kind, _, name = purchase.partition("#")
    return {
        "Environment": "dev",
        "Purchase": purchase,
        "Kind": kind,
        "Name": name,
        "State": state,
        "Sequence": 3,
        "Attempt": 1,
        "RequestId": "req-1",
        "Claimant": "c1",
        "UpdatedAt": updated_at,
        "Fields": dict(fields),
        "Attempts": [],
    }
