"""The handler's worst case (every call retried to its limit) fits its Lambda timeout."""

from __future__ import annotations

from novapod.constructs.training_plan import construct
from novapod.constructs.training_plan.handler import index

MAX_BACKOFF = 20  # botocore standard mode: pause before retry n <= min(2**n, 20) s


def read_call_seconds() -> float:
    per_attempt = index.CONNECT_TIMEOUT_SECONDS + index.READ_TIMEOUT_SECONDS
    pauses = sum(min(2**n, MAX_BACKOFF) for n in range(1, index.MAX_ATTEMPTS))
    return index.MAX_ATTEMPTS * per_attempt + pauses


def test_on_event_worst_case_fits_its_timeout() -> None:
    # describe, search, zones; one purchase attempt; confirming describes after it.
    purchase = index.CONNECT_TIMEOUT_SECONDS + index.CREATE_READ_TIMEOUT_SECONDS
    confirms = len(index.CONFIRM_DELAYS_SECONDS) * read_call_seconds() + sum(
        index.CONFIRM_DELAYS_SECONDS
    )
    worst = 3 * read_call_seconds() + purchase + confirms
    assert worst < construct.ON_EVENT_TIMEOUT.to_seconds()


def test_on_event_worst_case_of_an_extension_fits_its_timeout() -> None:
    # describe, history, markers, search, the pending marker (retried); the markers read
    # again (one attempt); one ExtendTrainingPlan attempt; the marker updated or deleted
    # (retried). No confirming reads: is_complete waits under the marker.
    extend = index.CONNECT_TIMEOUT_SECONDS + index.CREATE_READ_TIMEOUT_SECONDS
    single_read = index.CONNECT_TIMEOUT_SECONDS + index.READ_TIMEOUT_SECONDS
    worst = 5 * read_call_seconds() + single_read + extend + read_call_seconds()
    assert worst < construct.ON_EVENT_TIMEOUT.to_seconds()


def test_is_complete_worst_case_fits_its_timeout() -> None:
    # describe the plan, map its zone, and (with extend) read its extension history,
    # then its purchase markers once (the next poll is the retry)
    single_read = index.CONNECT_TIMEOUT_SECONDS + index.READ_TIMEOUT_SECONDS
    worst = 3 * read_call_seconds() + single_read
    assert worst < construct.IS_COMPLETE_TIMEOUT.to_seconds()
