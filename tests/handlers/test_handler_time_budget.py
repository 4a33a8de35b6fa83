"""The handler's worst case (every call retried to its limit) fits its Lambda timeout."""

from __future__ import annotations

from novapod.constructs.training_plan import construct
from novapod.constructs.training_plan.handler import index

MAX_BACKOFF = 20  # botocore standard mode: pause before retry n <= min(2**n, 20) s


def _retried(connect: float, read: float) -> float:
    per_attempt = connect + read
    pauses = sum(min(2**n, MAX_BACKOFF) for n in range(1, index.MAX_ATTEMPTS))
    return index.MAX_ATTEMPTS * per_attempt + pauses


def read_call_seconds() -> float:
    return _retried(index.CONNECT_TIMEOUT_SECONDS, index.READ_TIMEOUT_SECONDS)


def ledger_read_seconds() -> float:
    return _retried(index.LEDGER_CONNECT_TIMEOUT_SECONDS, index.LEDGER_READ_TIMEOUT_SECONDS)


def ledger_write_seconds() -> float:
    """A conditional write, retried, then the strong read that settles a lost answer."""
    return 2 * ledger_read_seconds()


def purchase_seconds() -> float:
    """One attempt, never resent, with the purchase's longer read timeout."""
    return index.CONNECT_TIMEOUT_SECONDS + index.CREATE_READ_TIMEOUT_SECONDS


def test_on_event_worst_case_fits_its_timeout() -> None:
    # describe, search, zones; the ledger's read, claim, calling, ambiguous and bought;
    # one purchase attempt; confirming describes after it.
    confirms = len(index.CONFIRM_DELAYS_SECONDS) * read_call_seconds() + sum(
        index.CONFIRM_DELAYS_SECONDS
    )
    ledger = ledger_read_seconds() + 4 * ledger_write_seconds()
    worst = 3 * read_call_seconds() + ledger + purchase_seconds() + confirms
    assert worst < construct.ON_EVENT_TIMEOUT.to_seconds()


def test_on_event_worst_case_of_an_extension_fits_its_timeout() -> None:
    # describe, the plan's owner (ListTags), history, old markers (ListTags), search; the
    # resolved markers' deletion (one attempt); the plan's ledger read and adoption, the
    # extension's read, the plan's other extensions (Query), claim, calling and settle;
    # one ExtendTrainingPlan attempt. No confirming reads: is_complete settles an
    # ambiguous purchase from the history.
    one_attempt = index.CONNECT_TIMEOUT_SECONDS + index.READ_TIMEOUT_SECONDS
    sagemaker = 5 * read_call_seconds() + one_attempt + purchase_seconds()
    ledger = 3 * ledger_read_seconds() + 4 * ledger_write_seconds()
    assert sagemaker + ledger < construct.ON_EVENT_TIMEOUT.to_seconds()


def test_is_complete_worst_case_fits_its_timeout() -> None:
    # describe the plan, map its zone, read its extension history; the plan's and the
    # extension's ledger items read and settled (or a stale claim released).
    worst = 3 * read_call_seconds() + 2 * (ledger_read_seconds() + ledger_write_seconds())
    assert worst < construct.IS_COMPLETE_TIMEOUT.to_seconds()
