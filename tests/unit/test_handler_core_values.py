"""The handler core's pure parts: CloudFormation's properties, times, the log line
(handler_core/values.py), what a failed call says (errors.py), the ledger's sentences."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from novapod.constructs.handler_core import errors, ledger, values


class RefusedError(ValueError):
    """A handler's PropertyError."""


def test_strings_required_optional_and_present() -> None:
    raw = {"Name": "x", "Empty": "", "Number": 3}
    assert values.required_str(raw, "Name", RefusedError) == "x"
    for key in ("Empty", "Number", "Missing"):
        with pytest.raises(
            RefusedError, match=f"^{key} is required and must be a non-empty string$"
        ):
            values.required_str(raw, key, RefusedError)
    assert values.optional_str(raw, "Empty", RefusedError) is None
    assert values.optional_str(raw, "Missing", RefusedError) is None
    with pytest.raises(RefusedError):
        values.optional_str(raw, "Number", RefusedError)
    assert [values.present(raw, k) for k in ("Name", "Empty", "Missing")] == [True, False, False]


def test_json_values_as_objects_or_strings() -> None:
    assert values.json_value({"L": '["a"]'}, "L", RefusedError) == ["a"]
    assert values.json_value({"L": ["a"]}, "L", RefusedError) == ["a"]
    assert values.json_value({}, "L", RefusedError) is None
    with pytest.raises(RefusedError, match=r"^L is a string but not valid JSON$"):
        values.json_value({"L": "[a"}, "L", RefusedError)


def test_whole_numbers_within_bounds() -> None:
    assert values.whole_number({"N": "60"}, "N", 60, 3600, RefusedError, required=False) == 60
    assert values.whole_number({"N": 7}, "N", 1, 9, RefusedError, required=True) == 7
    assert values.whole_number({"N": ""}, "N", 1, 9, RefusedError, required=False) is None
    with pytest.raises(RefusedError, match=r"^N is required$"):
        values.whole_number({}, "N", 1, 9, RefusedError, required=True)
    with pytest.raises(RefusedError, match=r"^N must be a whole number, not '1\.5'$"):
        values.whole_number({"N": "1.5"}, "N", 1, 9, RefusedError, required=False)
    with pytest.raises(RefusedError, match=r"^N must be between 60 and 3600, not 59$"):
        values.whole_number({"N": "59"}, "N", 60, 3600, RefusedError, required=False)


def test_times_are_iso_utc() -> None:
    assert (
        values.iso(datetime(2030, 1, 1, 2, tzinfo=UTC) + timedelta(minutes=1))
        == "2030-01-01T02:01:00Z"
    )
    assert values.iso("2030-01-01T01:00:00+01:00") == "2030-01-01T00:00:00Z"
    assert values.iso(datetime(2030, 1, 1)) == "2030-01-01T00:00:00Z"  # naive means UTC
    assert values.iso(datetime(2030, 1, 1, 3, tzinfo=timezone(timedelta(hours=3)))) == (
        "2030-01-01T00:00:00Z"
    )
    assert values.iso(None) == ""
    assert values.as_utc("not a time") is None
    assert values.as_utc(5) is None
    assert values.utc_now().utcoffset() == timedelta(0)


def test_timed_out_at_the_timeout() -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    assert not values.timed_out(start, start + timedelta(seconds=59), 60)
    assert values.timed_out(start, start + timedelta(seconds=60), 60)


def test_the_log_line_is_step_message_then_the_fields_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    values.log("poll", "waiting", zeta=1, alpha=datetime(2030, 1, 1, tzinfo=UTC))
    values.emit({"decision": "wait", "b": 1, "a": 2}, sort_keys=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        '{"step": "poll", "message": "waiting", "alpha": "2030-01-01 00:00:00+00:00", "zeta": 1}',
        '{"a": 2, "b": 1, "decision": "wait"}',
    ]
    assert list(json.loads(lines[0])) == ["step", "message", "alpha", "zeta"]


def client_error(code: str | None, message: str | None, status: int, retries: int) -> ClientError:
    error = {k: v for k, v in (("Code", code), ("Message", message)) if v is not None}
    metadata = {"HTTPStatusCode": status, "RetryAttempts": retries}
    return ClientError({"Error": error, "ResponseMetadata": metadata}, "CreateThing")


def test_a_service_answer_gives_code_status_retries_and_detail() -> None:
    exc = client_error("ThrottlingException", "Rate  exceeded.", 400, 2)
    assert errors.error_code(exc) == "ThrottlingException"
    assert errors.http_status(exc) == 400
    assert errors.retry_attempts(exc) == 2
    assert errors.error_detail(exc) == "ThrottlingException: Rate  exceeded."
    tidy = errors.error_detail(exc, tidy=lambda m: " ".join(m.split()).rstrip("."))
    assert tidy == "ThrottlingException: Rate exceeded"
    assert errors.failed("CreateThing for x", exc) == (
        "CreateThing for x failed (ThrottlingException: Rate  exceeded.)"
    )
    bare = client_error(None, None, 500, 0)
    assert (errors.error_code(bare), errors.error_detail(bare)) == (None, "error: no message")


def test_a_failure_without_an_answer_names_its_class() -> None:
    exc = EndpointConnectionError(endpoint_url="http://127.0.0.1:9/")
    assert (errors.error_code(exc), errors.http_status(exc), errors.retry_attempts(exc)) == (
        None,
        None,
        0,
    )
    assert errors.error_detail(exc) == (
        'EndpointConnectionError: Could not connect to the endpoint URL: "http://127.0.0.1:9/"'
    )


def test_the_missing_ledger_sentence_of_each_purchase() -> None:
    assert ledger.missing_message("training plan p", done="bought", acts="buys") == (
        "training plan p was not bought: the resource names no purchase ledger (LedgerTable "
        "and Environment), and novapod buys only under a claim in it; synthesize with this "
        "novapod version, whose storage stack holds the ledger"
    )
    assert ledger.missing_message("Bedrock model m", done="imported", acts="calls Bedrock") == (
        "Bedrock model m was not imported: the resource names no purchase ledger (LedgerTable "
        "and Environment), and novapod calls Bedrock only under a claim in it; synthesize "
        "with this novapod version, whose storage stack holds the ledger"
    )
