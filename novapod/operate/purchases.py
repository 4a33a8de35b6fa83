"""`novapod purchases CONFIG`: the purchase ledger of an environment, read with the
caller's credentials (and, with `--release`, the one deliberate write a human makes:
refused for a calling or ambiguous item younger than `SETTLING` unless forced).

The ledger (novapod/constructs/handler_core/ledger.py) holds one item per purchase:
training plans, plan extensions, Bedrock imports and deployments, with the state of
the last attempt (claimed, calling, bought, refused, ambiguous, failed, released), what
was bought, when, for how much and under which approval, and the earlier attempts.
The table's name is the storage stack's `PurchaseLedgerTableName` output.

JSON (`--json`) is the contract: `{"environment", "table", "purchases": [...],
"attention": [...]}`, each purchase with the stable keys of `_purchase_json`; `attention`
lists the keys of items a human must look at (a call whose outcome is unknown, a claim
that never called).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from novapod.constructs.handler_core import ledger
from novapod.constructs.handler_core.ledger import Entry

ATTENTION: dict[str, str] = {
    ledger.AMBIGUOUS: "the purchase call's outcome is unknown: it may have been bought",
    ledger.CALLING: "a purchase call was about to be made or is under way",
    ledger.CLAIMED: "claimed by a deploy that has not called the service (yet)",
    ledger.FAILED: "bought, but the service lists the purchase Failed (nothing added)",
}
# A human may release only what may block deploys and was not bought, after checking.
RELEASABLE = frozenset({ledger.CLAIMED, ledger.CALLING, ledger.AMBIGUOUS})
# A bought Bedrock model or deployment can be deleted by hand (a training plan or an
# extension cannot): releasing its item lets the next deploy import it anew.
RELEASABLE_BOUGHT = frozenset({"import", "deployment"})
RELEASER = "novapod-purchases-release"
# A call may still be under way for this long after its item last changed: an on_event
# (at most 14 min, the TrainingPlan and Bedrock handlers' timeout) and the wait for its
# outcome (10 min). Younger calling or ambiguous items are released only with force.
SETTLING = timedelta(minutes=30)


def attention(entry: Entry) -> str | None:
    """Why a human should look at this item, or None."""
    if entry.state == ledger.RELEASED and entry.get("ReleasedFrom") in ledger.UNSETTLED:
        return f"released by hand from {entry.get('ReleasedFrom')}: it may have been bought"
    return ATTENTION.get(entry.state)


class PurchasesError(Exception):
    """A request the ledger cannot serve (unknown key, not releasable); one sentence."""


def _fields(entry: Entry) -> dict[str, Any]:
    keys = {
        "arn": "Arn",
        "offering_id": "OfferingId",
        "upfront_fee": "UpfrontFee",
        "currency": "Currency",
        "bought_at": "BoughtAt",
        "calling_at": "CallingAt",
        "approval": "Approval",
        "hours": "Hours",
        "source": "Source",
        "error": "Error",
        "detail": "Detail",
        "plan": "Plan",
    }
    return {ours: entry.get(theirs) for ours, theirs in keys.items()}


def _purchase_json(entry: Entry) -> dict[str, Any]:
    return {
        "key": entry.key,
        "kind": entry.kind,
        "name": entry.name,
        "state": entry.state,
        "attempt": entry.attempt,
        "sequence": entry.sequence,
        "request_id": entry.request_id,
        "updated_at": entry.updated_at,
        **_fields(entry),
        "attention": attention(entry),
        "earlier_attempts": [dict(a) for a in entry.attempts],
    }


def purchases_json(environment: str, table: str, entries: Sequence[Entry]) -> str:
    document = {
        "environment": environment,
        "table": table,
        "purchases": [_purchase_json(e) for e in entries],
        "attention": [e.key for e in entries if attention(e)],
    }
    return json.dumps(document, indent=2, sort_keys=True, default=str)


def render_text(environment: str, table: str, entries: Sequence[Entry]) -> str:
    """One line per purchase, those needing attention first, then how to read more."""
    if not entries:
        return f"no purchases recorded for environment {environment} (ledger {table})"
    ordered = sorted(entries, key=lambda e: (attention(e) is None, e.key))
    lines = [f"purchases of environment {environment} (ledger {table}):"]
    for entry in ordered:
        f = _fields(entry)
        money = f" {f['upfront_fee']} {f['currency']}" if f["upfront_fee"] else ""
        bought = f" on {f['bought_at']}" if f["bought_at"] else ""
        what = f" offering {f['offering_id']}" if f["offering_id"] else ""
        lines.append(
            f"  {entry.state:<9} {entry.key}{money}{bought}{what} (attempt {entry.attempt}, "
            f"approval {f['approval'] or '-'}, updated {entry.updated_at})"
        )
        why = attention(entry)
        if why is not None:
            reason = f["error"] or f["detail"]
            lines.append(f"            ! {why}{f' ({reason})' if reason else ''}")
    return "\n".join(lines)


def release(
    book: ledger.Ledger, key: str, *, now: datetime | None = None, force: bool = False
) -> Entry:
    """Release an item a human has checked was not bought, so deploys may buy again."""
    kind, _, name = key.partition("#")
    entry = book.read(kind, name) if name else None
    if entry is None:
        raise PurchasesError(f"the purchase ledger has no item {key} (keys look like plan#NAME)")
    bought_and_deletable = entry.state == ledger.BOUGHT and entry.kind in RELEASABLE_BOUGHT
    if entry.state not in RELEASABLE and not bought_and_deletable:
        raise PurchasesError(
            f"{key} is {entry.state}, which is not released by hand (only "
            f"{', '.join(sorted(RELEASABLE))} items are, and bought Bedrock imports and "
            "deployments deleted by hand): nothing was changed"
        )
    updated = _parsed(entry.updated_at)
    moment = now or datetime.now(UTC)
    if (
        entry.state in ledger.UNSETTLED
        and not force
        and (updated is None or moment - updated < SETTLING)
    ):
        raise PurchasesError(
            f"{key} is {entry.state} since {entry.updated_at or 'an unknown time'}: a purchase "
            f"call may still be under way for {int(SETTLING.total_seconds() // 60)} minutes "
            "after it, so nothing was changed; check again later, or pass --force once AWS "
            "shows it was not bought"
        )
    return book.advance(
        entry,
        ledger.RELEASED,
        claimant=RELEASER,
        ReleasedFrom=entry.state,
        Detail=f"released by hand from {entry.state} with novapod purchases --release",
    )


def _parsed(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
