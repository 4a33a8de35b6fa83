"""The purchase ledger: one DynamoDB item per purchase, claimed before the call.

A training plan, a plan extension and a Bedrock import are bought with calls that have
no usable idempotency token (ExtendTrainingPlan has none at all; CreateTrainingPlan
only its name). Tags and list calls are eventually consistent, so they cannot serve as
a lock. The ledger can: DynamoDB's conditional writes are atomic and strongly
consistent reads (`ConsistentRead`) return every acknowledged write
(docs.aws.amazon.com/amazondynamodb/latest/developerguide/
WorkingWithItems.html#WorkingWithItems.ConditionalUpdate and
HowItWorks.ReadConsistency.html).

One item per purchase, keyed by the environment (partition key `Environment`, which the
handlers' IAM pins with `dynamodb:LeadingKeys`) and `<kind>#<name>` (sort key
`Purchase`), the name being the purchase's deterministic name (the approval). Every
write is a compare-and-swap on the item's own `Sequence`, which grows by one per write:

    (none) --claim--> claimed --> calling --> bought | refused | ambiguous
                         |                              (ambiguous --> bought | failed)
                         +--> released  (nothing was called: no offering, cap, ...)

- **claimed**: by one invocation (`Claimant`, new per invocation; `RequestId` is the
  CloudFormation request's) before any search result is acted on. It never reached the
  service, so a later event may take it over (a compare-and-swap: the first claimant's
  next write then fails and it buys nothing).
- **calling**: written right before the one purchase call, with what is about to be
  bought. Only the invocation whose write landed calls.
- **bought** (ARN, fee, currency, time, offering, approval), **refused** (the service
  refused: nothing bought), **ambiguous** (timeout, 5xx, unreadable answer: may have
  been bought), **failed** (bought, but the service shows the purchase Failed: nothing
  added), **released** (a claim given up before any call).
- A new attempt of the same name (after refused, failed or released) claims the item
  again: `Attempt` grows and the earlier attempt joins `Attempts` (the audit trail).

A write whose answer is lost (botocore retries it; the retry then fails its condition)
is settled by a strongly consistent read: the write landed when the item shows our
claimant at the sequence we wrote. Any read or write that cannot be settled raises
`LedgerError`, whose message says nothing was bought: the handlers fail closed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

from . import errors
from .values import utc_now

State = Literal["claimed", "calling", "bought", "refused", "ambiguous", "failed", "released"]
Kind = Literal["plan", "extension", "import", "deployment"]

CLAIMED: State = "claimed"
CALLING: State = "calling"
BOUGHT: State = "bought"
REFUSED: State = "refused"
AMBIGUOUS: State = "ambiguous"
FAILED: State = "failed"
RELEASED: State = "released"
STATES: tuple[State, ...] = (CLAIMED, CALLING, BOUGHT, REFUSED, AMBIGUOUS, FAILED, RELEASED)
# A new attempt may claim the item from these: nothing of the last attempt was bought.
RECLAIMABLE = frozenset({REFUSED, FAILED, RELEASED})
# The purchase call may have been made: reconcile with the service before anything else.
UNSETTLED = frozenset({CALLING, AMBIGUOUS})

PARTITION_KEY = "Environment"
SORT_KEY = "Purchase"


class LedgerError(Exception):
    """The ledger could not be read or written: nothing is bought (fail closed)."""


class ClaimConflictError(Exception):
    """A conditional write lost: another invocation moved the item first."""

    def __init__(self, current: Entry | None) -> None:
        super().__init__("the ledger item changed")
        self.current = current


@dataclass(frozen=True)
class Entry:
    """One purchase as the ledger holds it."""

    environment: str
    kind: str
    name: str
    state: str
    sequence: int
    attempt: int
    request_id: str
    claimant: str
    updated_at: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    attempts: tuple[Mapping[str, Any], ...] = ()
    # New for every write: tells this write from another writer's at the same sequence.
    write_id: str = ""

    @property
    def key(self) -> str:
        return purchase_key(self.kind, self.name)

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def summary(self) -> dict[str, Any]:
        """This attempt as it joins `Attempts` when the next one claims the item."""
        return {
            "Attempt": self.attempt,
            "State": self.state,
            "RequestId": self.request_id,
            "UpdatedAt": self.updated_at,
            **dict(self.fields),
        }


def purchase_key(kind: str, name: str) -> str:
    return f"{kind}#{name}"


def new_claimant() -> str:
    """New for every invocation: a duplicated delivery of one request claims as another."""
    return uuid.uuid4().hex


# --- (de)serialization --------------------------------------------------------------------


def _to_attribute(value: Any) -> dict[str, Any]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | Decimal):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, Mapping):
        return {"M": {str(k): _to_attribute(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [_to_attribute(v) for v in value]}
    raise TypeError(f"the ledger stores no {type(value).__name__}")


def _from_attribute(value: Mapping[str, Any]) -> Any:
    (kind, inner), *_ = value.items()
    if kind == "NULL":
        return None
    if kind == "BOOL":
        return bool(inner)
    if kind == "N":
        number = Decimal(inner)
        return int(number) if number == number.to_integral_value() else number
    if kind == "S":
        return str(inner)
    if kind == "M":
        return {k: _from_attribute(v) for k, v in inner.items()}
    if kind == "L":
        return [_from_attribute(v) for v in inner]
    if kind in ("SS", "NS"):
        return sorted(inner)
    return inner


def entry_from_item(item: Mapping[str, Any]) -> Entry:
    """An Entry from a DynamoDB item (attribute-value form)."""
    plain = {k: _from_attribute(v) for k, v in item.items()}
    return Entry(
        environment=str(plain.get(PARTITION_KEY, "")),
        kind=str(plain.get("Kind", "")),
        name=str(plain.get("Name", "")),
        state=str(plain.get("State", "")),
        sequence=int(plain.get("Sequence") or 0),
        attempt=int(plain.get("Attempt") or 0),
        request_id=str(plain.get("RequestId", "")),
        claimant=str(plain.get("Claimant", "")),
        updated_at=str(plain.get("UpdatedAt", "")),
        fields=dict(plain.get("Fields") or {}),
        attempts=tuple(plain.get("Attempts") or ()),
        write_id=str(plain.get("WriteId", "")),
    )


# --- the table ----------------------------------------------------------------------------


class Ledger:
    """The ledger of one environment in one table, through a boto3 DynamoDB client.

    `client` should retry throttling (botocore's standard mode does); every read is
    strongly consistent.
    """

    def __init__(
        self,
        client: Any,
        table: str,
        environment: str,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.client = client
        self.table = table
        self.environment = environment
        self.clock = clock

    def _key(self, kind: str, name: str) -> dict[str, Any]:
        return {
            PARTITION_KEY: {"S": self.environment},
            SORT_KEY: {"S": purchase_key(kind, name)},
        }

    def _now(self) -> str:
        return self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def read(self, kind: str, name: str) -> Entry | None:
        """The item, read strongly; LedgerError when it cannot be read."""
        try:
            answer = self.client.get_item(
                TableName=self.table, Key=self._key(kind, name), ConsistentRead=True
            )
        except Exception as exc:
            raise LedgerError(
                f"reading purchase {purchase_key(kind, name)} from the purchase ledger "
                f"{self.table} failed ({errors.error_detail(exc)})"
            ) from exc
        item = answer.get("Item")
        return entry_from_item(item) if item else None

    def entries(self, kind: str | None = None) -> list[Entry]:
        """Every item of this environment (of one kind), strongly read, in key order."""
        values: dict[str, Any] = {":env": {"S": self.environment}}
        condition = "#pk = :env"
        if kind is not None:
            condition += " AND begins_with(#sk, :kind)"
            values[":kind"] = {"S": f"{kind}#"}
        names = {"#pk": PARTITION_KEY} | ({"#sk": SORT_KEY} if kind is not None else {})
        items: list[Entry] = []
        try:
            paginator = self.client.get_paginator("query")
            for page in paginator.paginate(
                TableName=self.table,
                KeyConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ConsistentRead=True,
            ):
                items += [entry_from_item(i) for i in page.get("Items", [])]
        except Exception as exc:
            raise LedgerError(
                f"reading the purchase ledger {self.table} failed ({errors.error_detail(exc)})"
            ) from exc
        return items

    def claim(
        self,
        kind: str,
        name: str,
        *,
        current: Entry | None,
        request_id: str,
        claimant: str,
        fields: Mapping[str, Any] | None = None,
    ) -> Entry:
        """Claim the purchase for this invocation: a new item, a new attempt after a
        refused, failed or released one, or a takeover of a claim that never called.

        Raises ClaimConflictError when another invocation wrote first, ValueError when `current`
        may not be claimed (it is bought, or a call may be under way)."""
        if current is not None and current.state not in RECLAIMABLE | {CLAIMED}:
            raise ValueError(f"{current.key} is {current.state} and cannot be claimed")
        attempt = 1 if current is None else current.attempt + (current.state != CLAIMED)
        history = [] if current is None else list(current.attempts)
        if current is not None and current.state != CLAIMED:
            history.append(current.summary())
        target = Entry(
            environment=self.environment,
            kind=kind,
            name=name,
            state=CLAIMED,
            sequence=1 if current is None else current.sequence + 1,
            attempt=attempt,
            request_id=request_id,
            claimant=claimant,
            updated_at=self._now(),
            fields=dict(fields or {}),
            attempts=tuple(history),
        )
        return self._write(target, expected=current)

    def record(
        self,
        kind: str,
        name: str,
        state: State,
        *,
        request_id: str,
        claimant: str,
        fields: Mapping[str, Any],
    ) -> Entry:
        """A new item straight in `state`: a purchase found made without a claim (bought
        before the ledger existed). Raises ClaimConflictError when the item exists."""
        target = Entry(
            environment=self.environment,
            kind=kind,
            name=name,
            state=state,
            sequence=1,
            attempt=1,
            request_id=request_id,
            claimant=claimant,
            updated_at=self._now(),
            fields=dict(fields),
        )
        return self._write(target, expected=None)

    def advance(
        self, entry: Entry, state: State, *, claimant: str | None = None, **fields: Any
    ) -> Entry:
        """Move `entry` (as last read or written) to `state`, adding `fields`. Anyone who
        read it at its sequence may (a reconcile settles another invocation's item: it
        writes as `claimant`). Raises ClaimConflictError when the item moved meanwhile."""
        target = Entry(
            environment=self.environment,
            kind=entry.kind,
            name=entry.name,
            state=state,
            sequence=entry.sequence + 1,
            attempt=entry.attempt,
            request_id=entry.request_id,
            claimant=entry.claimant if claimant is None else claimant,
            updated_at=self._now(),
            fields={**dict(entry.fields), **fields},
            attempts=entry.attempts,
        )
        return self._write(target, expected=entry)

    def _write(self, target: Entry, *, expected: Entry | None) -> Entry:
        target = replace(target, write_id=uuid.uuid4().hex)
        item = {
            **self._key(target.kind, target.name),
            "Kind": {"S": target.kind},
            "Name": {"S": target.name},
            "State": {"S": target.state},
            "Sequence": {"N": str(target.sequence)},
            "Attempt": {"N": str(target.attempt)},
            "RequestId": {"S": target.request_id},
            "Claimant": {"S": target.claimant},
            "UpdatedAt": {"S": target.updated_at},
            "WriteId": {"S": target.write_id},
            "Fields": _to_attribute(dict(target.fields)),
            "Attempts": _to_attribute(list(target.attempts)),
        }
        if expected is None:
            condition = "attribute_not_exists(#sk)"
            names = {"#sk": SORT_KEY}
            values: dict[str, Any] | None = None
        else:
            condition = "#seq = :seq"
            names = {"#seq": "Sequence"}
            values = {":seq": {"N": str(expected.sequence)}}
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
        }
        if values is not None:
            kwargs["ExpressionAttributeValues"] = values
        try:
            self.client.put_item(**kwargs)
        except Exception as exc:
            # Lost, refused or throttled past botocore's retries: an earlier attempt of
            # this write may have landed. Only a strong read settles which.
            try:
                current = self.read(target.kind, target.name)
            except LedgerError as unread:
                raise LedgerError(
                    f"writing {target.state} for purchase {target.key} to the purchase "
                    f"ledger {self.table} failed ({errors.error_detail(exc)}), and reading it back "
                    f"failed too ({unread})"
                ) from exc
            if _landed(current, target):
                assert current is not None
                return current
            if errors.error_code(exc) == "ConditionalCheckFailedException":
                raise ClaimConflictError(current) from exc
            raise LedgerError(
                f"writing {target.state} for purchase {target.key} to the purchase ledger "
                f"{self.table} failed ({errors.error_detail(exc)})"
            ) from exc
        return target


def _landed(current: Entry | None, target: Entry) -> bool:
    """The item holds this very write (its sequence and its own write ID)."""
    return (
        current is not None
        and current.sequence == target.sequence
        and current.write_id == target.write_id
    )


def settle(
    book: Ledger,
    entry: Entry,
    state: State,
    *,
    log: Callable[..., None],
    settled_by: str,
    **fields: Any,
) -> Entry:
    """Best effort after the fact (the purchase is decided): a failed write leaves the
    item where it was, and the next read settles it again from `settled_by` (the service
    whose answer tells the outcome). `log(step, message, **fields)` is the handler's."""
    try:
        settled = book.advance(entry, state, **fields)
    except (LedgerError, ClaimConflictError) as exc:
        log(
            "ledger-settle-failed",
            f"recording {entry.key} as {state} failed ({exc}); it stays {entry.state} until "
            f"a later read settles it from {settled_by}",
            purchase=entry.key,
        )
        return entry
    log("ledger", f"recorded {entry.key} as {state}", purchase=entry.key, state=state)
    return settled


# --- messages -----------------------------------------------------------------------------


def unavailable_message(what: str, error: LedgerError) -> str:
    """Fail closed: the ledger is the lock, so without it nothing is bought."""
    return (
        f"{what} was not bought by this event: "
        f"the purchase ledger could not be used ({error}), and "
        "novapod buys only under a claim in it; no purchase call was made, deploy again "
        "once the table answers"
    )


def describe(entry: Entry) -> str:
    """One line for logs and messages: what the item says."""
    detail = entry.get("Error") or entry.get("Detail")
    extra = f" ({detail})" if detail else ""
    return (
        f"{entry.key} is {entry.state} (attempt {entry.attempt}, sequence {entry.sequence}, "
        f"request {entry.request_id or '?'}, updated {entry.updated_at or '?'}){extra}"
    )


def missing_message(what: str, *, done: str, acts: str) -> str:
    """The resource names no ledger (a template from before it): nothing is called."""
    return (
        f"{what} was not {done}: the resource names no purchase ledger (LedgerTable and "
        f"Environment), and novapod {acts} only under a claim in it; synthesize with this "
        "novapod version, whose storage stack holds the ledger"
    )
