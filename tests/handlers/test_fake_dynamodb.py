"""The fake DynamoDB answers real boto3 clients as the service does, and refuses as it does.

Each test names the fake's bug it would catch. The purchase ledger the handlers keep in
DynamoDB claims each purchase with a conditional write, so the tests dwell on conditions,
their placeholders, retried writes whose first answer was lost, stale reads and IAM's
dynamodb:LeadingKeys.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff

from tests.fakes import dynamodb, iam
from tests.fakes.aws_control_plane import ACCOUNT, Call, FakeControlPlane
from tests.fakes.iam import Principal, Request, Statement

ONE_ATTEMPT = Config(retries={"mode": "standard", "total_max_attempts": 1})
TWO_ATTEMPTS = Config(retries={"mode": "standard", "total_max_attempts": 2})
UNCHECKED = Config(
    retries={"mode": "standard", "total_max_attempts": 1}, parameter_validation=False
)
TABLE = "ledger"
TABLE_ARN = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{TABLE}"
KEY = {"pk": {"S": "purchase#1"}, "sk": {"S": "claim"}}


@pytest.fixture
def plane(
    control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeControlPlane]:
    control_plane.reset()
    control_plane.dynamodb.create_table(TABLE, partition_key="pk", sort_key="sk")
    # Retried throttles wait a few milliseconds, not seconds.
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    yield control_plane
    # Every answer the fake gave must fit botocore's output shapes.
    assert control_plane.violations == []


@pytest.fixture
def ddb(plane: FakeControlPlane) -> Any:
    return boto3.client("dynamodb", config=ONE_ATTEMPT)


def refusal(call: Callable[[], Any]) -> tuple[str, str]:
    with pytest.raises(ClientError) as caught:
        call()
    error = caught.value.response["Error"]
    return error["Code"], error["Message"]


def claim(ddb: Any, owner: str, **extra: Any) -> Any:
    return ddb.put_item(
        TableName=TABLE,
        Item={**KEY, "owner": {"S": owner}, "seq": {"N": "1"}},
        ConditionExpression="attribute_not_exists(pk)",
        **extra,
    )


# --- conditional writes ---------------------------------------------------------------------


def test_a_conditional_put_claims_once_and_the_loser_sees_the_winner(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bugs caught: a condition not evaluated (the second put overwrites), a failed put
    # that still writes, a missing or wrong `Item` on the failure.
    assert claim(ddb, "first")["ResponseMetadata"]["HTTPStatusCode"] == 200
    with pytest.raises(ClientError) as caught:
        claim(ddb, "second", ReturnValuesOnConditionCheckFailure="ALL_OLD")
    response = caught.value.response
    assert response["Error"] == {
        "Code": "ConditionalCheckFailedException",
        "Message": "The conditional request failed",
    }
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Item"] == {**KEY, "owner": {"S": "first"}, "seq": {"N": "1"}}
    # Without ReturnValuesOnConditionCheckFailure the failure carries no item.
    with pytest.raises(ClientError) as again:
        claim(ddb, "third")
    assert "Item" not in again.value.response
    assert plane.dynamodb.items(TABLE) == [
        {"pk": "purchase#1", "sk": "claim", "owner": "first", "seq": 1}
    ]


def test_a_sequence_compare_and_swap_lets_one_writer_through(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bugs caught: numbers compared as text ("1.0" is 1), ALL_NEW / ALL_OLD wrong, the
    # losing update applied anyway.
    claim(ddb, "first")

    def advance(expected: str, owner: str) -> Any:
        return ddb.update_item(
            TableName=TABLE,
            Key=KEY,
            UpdateExpression="SET #seq = #seq + :one, #owner = :owner",
            ConditionExpression="#seq = :expected",
            ExpressionAttributeNames={"#seq": "seq", "#owner": "owner"},
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":owner": {"S": owner},
                ":expected": {"N": expected},
            },
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )

    assert advance("1.0", "second")["Attributes"] == {
        **KEY,
        "owner": {"S": "second"},
        "seq": {"N": "2"},
    }
    with pytest.raises(ClientError) as caught:
        advance("1", "third")
    assert caught.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert caught.value.response["Item"]["seq"] == {"N": "2"}
    assert plane.dynamodb.item(TABLE, {"pk": "purchase#1", "sk": "claim"}) == {
        "pk": "purchase#1",
        "sk": "claim",
        "owner": "second",
        "seq": 2,
    }


def test_update_upserts_and_returns_what_was_asked(plane: FakeControlPlane, ddb: Any) -> None:
    # Bugs caught: an update of a missing item refused (the service creates it),
    # UPDATED_* returning the whole item, list indexes read after earlier removals,
    # an emptied set kept, ADD not starting from 0.
    new = ddb.update_item(
        TableName=TABLE,
        Key=KEY,
        UpdateExpression=(
            "SET events = list_append(if_not_exists(events, :none), :e), note = :n "
            "ADD tries :one, tags :tags"
        ),
        ExpressionAttributeValues={
            ":none": {"L": []},
            ":e": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}, {"S": "d"}]},
            ":n": {"S": "x"},
            ":one": {"N": "1"},
            ":tags": {"SS": ["p", "q"]},
        },
        ReturnValues="UPDATED_OLD",
    )
    assert "Attributes" not in new  # nothing was there before
    changed = ddb.update_item(
        TableName=TABLE,
        Key=KEY,
        UpdateExpression="REMOVE events[1], events[2], note ADD tries :one DELETE tags :tags",
        ExpressionAttributeValues={":one": {"N": "1"}, ":tags": {"SS": ["p", "q"]}},
        ReturnValues="ALL_NEW",
    )
    # events[1] and [2] are b and c of the list before the update; the note is gone, and
    # so is the emptied set.
    assert changed["Attributes"] == {
        **KEY,
        "events": {"L": [{"S": "a"}, {"S": "d"}]},
        "tries": {"N": "2"},
    }
    assert plane.dynamodb.items(TABLE) == [
        {"pk": "purchase#1", "sk": "claim", "events": ["a", "d"], "tries": 2}
    ]
    old = ddb.update_item(
        TableName=TABLE,
        Key=KEY,
        UpdateExpression="SET tries = :zero, info = :info",
        ExpressionAttributeValues={":zero": {"N": "0"}, ":info": {"M": {"plot": {"S": "p"}}}},
        ReturnValues="UPDATED_OLD",
    )
    assert old["Attributes"] == {"tries": {"N": "2"}}  # info was not there before
    # A nested update returns the nested part it changed (the Movies example's
    # "set info.rating=:r" with UPDATED_NEW in GettingStarted.Python).
    nested = ddb.update_item(
        TableName=TABLE,
        Key=KEY,
        UpdateExpression="SET info.rating = :r",
        ExpressionAttributeValues={":r": {"N": "5.5"}},
        ReturnValues="UPDATED_NEW",
    )
    assert nested["Attributes"] == {"info": {"M": {"rating": {"N": "5.5"}}}}


def test_an_update_may_not_change_the_key(plane: FakeControlPlane, ddb: Any) -> None:
    # Bug caught: a key attribute rewritten in place (the item would move keys).
    assert refusal(
        lambda: ddb.update_item(
            TableName=TABLE,
            Key=KEY,
            UpdateExpression="SET sk = :v",
            ExpressionAttributeValues={":v": {"S": "other"}},
        )
    ) == (
        "ValidationException",
        "One or more parameter values were invalid: Cannot update attribute sk. "
        "This attribute is part of the key",
    )
    assert plane.dynamodb.items(TABLE) == []


def test_update_operands_must_exist_and_have_the_right_type(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bugs caught: a missing operand read as 0, a string added to a number.
    plane.dynamodb.put_raw(TABLE, {"pk": "purchase#1", "sk": "claim", "word": "x"})
    for expression, message in [
        (
            "SET n = absent + :one",
            "The provided expression refers to an attribute that does not exist in the item",
        ),
        ("SET n = word + :one", "An operand in the update expression has an incorrect data type"),
        ("ADD word :one", "An operand in the update expression has an incorrect data type"),
        (
            "SET nested.deeper = :one",
            "The document path provided in the update expression is invalid for update",
        ),
    ]:
        assert refusal(
            lambda expression=expression: ddb.update_item(
                TableName=TABLE,
                Key=KEY,
                UpdateExpression=expression,
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
        ) == ("ValidationException", message)
    assert plane.dynamodb.items(TABLE) == [{"pk": "purchase#1", "sk": "claim", "word": "x"}]


def test_a_delete_is_conditional_too(plane: FakeControlPlane, ddb: Any) -> None:
    # Bug caught: a conditional delete that deletes whatever the condition says.
    claim(ddb, "first")
    condition = {
        "ConditionExpression": "#o = :me",
        "ExpressionAttributeNames": {"#o": "owner"},
    }
    assert refusal(
        lambda: ddb.delete_item(
            TableName=TABLE, Key=KEY, ExpressionAttributeValues={":me": {"S": "x"}}, **condition
        )
    ) == ("ConditionalCheckFailedException", "The conditional request failed")
    deleted = ddb.delete_item(
        TableName=TABLE,
        Key=KEY,
        ExpressionAttributeValues={":me": {"S": "first"}},
        ReturnValues="ALL_OLD",
        **condition,
    )
    assert deleted["Attributes"]["owner"] == {"S": "first"}
    assert plane.dynamodb.items(TABLE) == []


# --- expressions --------------------------------------------------------------------------

PUT = {"TableName": TABLE, "Item": {**KEY, "status": {"S": "new"}}}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {
                "ConditionExpression": "attribute_not_exists(pk)",
                "ExpressionAttributeValues": {":extra": {"S": "x"}},
            },
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:extra}",
        ),
        (
            {
                "ConditionExpression": "#s = :missing",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {":given": {"S": "x"}},
            },
            "Invalid ConditionExpression: An expression attribute value used in expression "
            "is not defined; attribute value: :missing",
        ),
        (
            {
                "ConditionExpression": "attribute_not_exists(pk)",
                "ExpressionAttributeNames": {"#unused": "status"},
            },
            "Value provided in ExpressionAttributeNames unused in expressions: keys: {#unused}",
        ),
        (
            {
                "ConditionExpression": "#missing = :v",
                "ExpressionAttributeValues": {":v": {"S": "x"}},
            },
            "Invalid ConditionExpression: An expression attribute name used in the document "
            "path is not defined; attribute name: #missing",
        ),
        (
            # STATUS is a reserved word: it needs a #name.
            {"ConditionExpression": "status = :v", "ExpressionAttributeValues": {":v": {"S": "x"}}},
            "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved "
            "keyword: status",
        ),
        (
            {"ExpressionAttributeValues": {":v": {"S": "x"}}},
            "ExpressionAttributeValues can only be specified when using expressions: "
            "ConditionExpression is null",
        ),
        (
            {"ConditionExpression": "attribute_not_exists(pk)", "ExpressionAttributeValues": {}},
            "ExpressionAttributeValues must not be empty",
        ),
        (
            {"ConditionExpression": ""},
            "Invalid ConditionExpression: The expression can not be empty;",
        ),
        (
            {"ConditionExpression": "contains(note, note)"},
            "Invalid ConditionExpression: The first operand must be distinct from the "
            "remaining operands for this operator or function; operator: contains, first "
            "operand: [note]",
        ),
        (
            {
                "ConditionExpression": "note BETWEEN :hi AND :lo",
                "ExpressionAttributeValues": {":hi": {"N": "5"}, ":lo": {"N": "1"}},
            },
            "Invalid ConditionExpression: The BETWEEN operator requires upper bound to be "
            "greater than or equal to lower bound; lower bound operand: AttributeValue: "
            "{N:5}, upper bound operand: AttributeValue: {N:1}",
        ),
        (
            {"ConditionExpression": "size(note)"},
            "Invalid ConditionExpression: The function is not allowed to be used this way in "
            "an expression; function: size",
        ),
        (
            {"ConditionExpression": "attribute_exist(note)"},
            "Invalid ConditionExpression: Invalid function name; function: attribute_exist",
        ),
        (
            {"ConditionExpression": "((attribute_exists(note)))"},
            "Invalid ConditionExpression: The expression has redundant parentheses;",
        ),
        (
            {"ConditionExpression": "attribute_exists(pk)", "Expected": {"pk": {"Exists": True}}},
            "Can not use both expression and non-expression parameters in the same request: "
            "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}",
        ),
        (
            {"Expected": {"pk": {"Exists": False}}},
            "The fake does not support the legacy parameter Expected (use expressions).",
        ),
    ],
)
def test_expression_placeholders_and_syntax_are_checked(
    plane: FakeControlPlane, ddb: Any, extra: dict[str, Any], message: str
) -> None:
    # Bugs caught: a placeholder left unused or undefined that the fake lets through
    # (the service refuses the whole request), a refused request that still writes.
    assert refusal(lambda: ddb.put_item(**PUT, **extra)) == ("ValidationException", message)
    assert plane.dynamodb.items(TABLE) == []


def test_a_syntax_error_names_its_token(ddb: Any) -> None:
    # Bug caught: an expression the service cannot parse, accepted.
    code, message = refusal(
        lambda: ddb.update_item(TableName=TABLE, Key=KEY, UpdateExpression="SET a = b / c")
    )
    assert code == "ValidationException"
    assert message.startswith('Invalid UpdateExpression: Syntax error; token: "/", near: ')
    code, message = refusal(
        lambda: ddb.update_item(TableName=TABLE, Key=KEY, UpdateExpression="SET a = b + c + d")
    )
    assert message.startswith('Invalid UpdateExpression: Syntax error; token: "+"')


@pytest.mark.parametrize(
    ("update", "message"),
    [
        (
            "SET a = :v SET b = :v",
            'The "SET" section can only be used once in an update expression;',
        ),
        (
            "SET a = :v, a.b = :v",
            "Two document paths overlap with each other; must remove or rewrite one of these "
            "paths; path one: [a], path two: [a, b]",
        ),
        (
            "ADD a :s",
            "Incorrect operand type for operator or function; operator: ADD, operand type: STRING",
        ),
        (
            "SET a = list_append(a, :s)",
            "Incorrect operand type for operator or function; operator or function: list_append, "
            "operand type: S",
        ),
        ("SET a = size(a)", "Invalid function name; function: size"),
        (
            "SET a = if_not_exists(:v, a)",
            "Operator or function requires a document path; operator or function: if_not_exists",
        ),
    ],
)
def test_update_expressions_are_checked_as_the_service_checks_them(
    ddb: Any, update: str, message: str
) -> None:
    # Bug caught: an update the service refuses, applied.
    values = {":v": {"N": "1"}, ":s": {"S": "x"}}
    params: dict[str, Any] = {"TableName": TABLE, "Key": KEY, "UpdateExpression": update}
    used = {k: v for k, v in values.items() if k in update}
    if used:
        params["ExpressionAttributeValues"] = used
    assert refusal(lambda: ddb.update_item(**params)) == (
        "ValidationException",
        f"Invalid UpdateExpression: {message}",
    )


SEEDED = {
    "pk": "purchase#1",
    "sk": "claim",
    "status": "active",
    "count": 9,
    "name": "nova-lite",
    "tags": {"gpu", "p5"},
    "amounts": {Decimal("1.5"), 3},
    "events": ["bought", {"zone": "use1-az4"}],
    "meta": {"offer": {"hours": 48, "zones": ["use1-az4", "use1-az6"]}, "ok": True},
    "gone": None,
    "bin": b"\x00\xff",
}


def client_value(value: Any) -> dict[str, Any]:
    """A plain value as the client takes it (botocore base64-encodes binary itself)."""
    return {"B": value} if isinstance(value, bytes) else dynamodb.wire(value)


@pytest.mark.parametrize(
    ("condition", "values", "holds"),
    [
        ("#status = :a", {":a": "active"}, True),
        ("#status <> :a", {":a": "active"}, False),
        ("absent <> :a", {":a": "active"}, True),  # an absent attribute is not equal
        ("absent = :a", {":a": "active"}, False),
        ("#count < :ten", {":ten": 10}, True),  # 9 < 10 as numbers ("9" > "10" as text)
        ("#count > :text", {":text": "1"}, False),  # a number and a string never compare
        ("#count BETWEEN :lo AND :hi", {":lo": 9, ":hi": 9}, True),
        ("#count IN (:a, :b)", {":a": 1, ":b": Decimal("9.0")}, True),
        ("#name IN (:a, :b)", {":a": "x", ":b": "y"}, False),
        ("begins_with(#name, :p)", {":p": "nova-"}, True),
        ("begins_with(#count, :p)", {":p": "9"}, False),
        ("contains(#name, :p)", {":p": "lite"}, True),
        ("contains(tags, :p)", {":p": "p5"}, True),
        ("contains(amounts, :p)", {":p": Decimal("1.50")}, True),
        ("contains(events, :p)", {":p": "bought"}, True),
        ("size(tags) = :two", {":two": 2}, True),
        ("size(#name) > :n", {":n": 8}, True),
        ("size(#count) = :n", {":n": 1}, False),  # a number has no size
        ("attribute_type(meta, :m)", {":m": "M"}, True),
        ("attribute_type(gone, :n)", {":n": "NULL"}, True),
        ("attribute_type(tags, :t)", {":t": "L"}, False),
        ("meta.offer.hours = :h", {":h": 48}, True),
        ("meta.offer.zones[1] = :z", {":z": "use1-az6"}, True),
        ("events[1].#zone = :z", {":z": "use1-az4"}, True),
        ("events[5] = :z", {":z": "use1-az4"}, False),
        ("attribute_exists(meta.ok) AND NOT attribute_exists(meta.nope)", {}, True),
        ("begins_with(bin, :b)", {":b": b"\x00"}, True),
        # Precedence: NOT > AND > OR (OperatorsAndFunctions.html).
        (
            "#status = :a OR #status = :b AND #count = :zero",
            {":a": "active", ":b": "x", ":zero": 0},
            True,
        ),
        (
            "(#status = :a OR #status = :b) AND #count = :zero",
            {":a": "active", ":b": "x", ":zero": 0},
            False,
        ),
        ("NOT #status = :b AND #count = :nine", {":b": "x", ":nine": 9}, True),
        ("NOT (#status = :a AND #count = :zero)", {":a": "active", ":zero": 0}, True),
    ],
)
def test_conditions_evaluate_as_documented(
    plane: FakeControlPlane, ddb: Any, condition: str, values: dict[str, Any], holds: bool
) -> None:
    # Bugs caught: wrong precedence, numbers compared as text, a function that fails
    # open or closed on the wrong types, document paths misread.
    plane.dynamodb.put_raw(TABLE, SEEDED)
    names = {
        k: v
        for k, v in {
            "#status": "status",
            "#count": "count",
            "#name": "name",
            "#zone": "zone",
        }.items()
        if k in condition
    }
    params: dict[str, Any] = {"TableName": TABLE, "Key": KEY, "ConditionExpression": condition}
    if names:
        params["ExpressionAttributeNames"] = names
    if values:
        params["ExpressionAttributeValues"] = {k: client_value(v) for k, v in values.items()}
    params["UpdateExpression"] = "SET touched = :touched"
    params.setdefault("ExpressionAttributeValues", {})[":touched"] = {"BOOL": True}
    if holds:
        ddb.update_item(**params)
        assert plane.dynamodb.item(TABLE, {"pk": "purchase#1", "sk": "claim"})["touched"] is True
    else:
        assert refusal(lambda: ddb.update_item(**params))[0] == "ConditionalCheckFailedException"


def test_projections_return_the_nested_parts_named(plane: FakeControlPlane, ddb: Any) -> None:
    # Bug caught: a projection that returns the whole item or flattens nested paths.
    plane.dynamodb.put_raw(TABLE, SEEDED)
    item = ddb.get_item(
        TableName=TABLE,
        Key=KEY,
        ProjectionExpression="meta.offer.zones[1], #n, events[0], nothing",
        ExpressionAttributeNames={"#n": "name"},
    )["Item"]
    assert item == {
        "meta": {"M": {"offer": {"M": {"zones": {"L": [{"S": "use1-az6"}]}}}}},
        "name": {"S": "nova-lite"},
        "events": {"L": [{"S": "bought"}]},
    }


# --- keys and values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        {"pk": {"S": "purchase#1"}},  # the sort key missing
        {**KEY, "extra": {"S": "x"}},  # an attribute that is not part of the key
        {"pk": {"N": "1"}, "sk": {"S": "claim"}},  # the wrong type
    ],
)
@pytest.mark.parametrize("operation", ["get_item", "update_item", "delete_item"])
def test_a_key_must_match_the_schema(
    plane: FakeControlPlane, ddb: Any, key: dict[str, Any], operation: str
) -> None:
    # Bug caught: an item addressed by part of its key (or a wrong type) found or written.
    assert refusal(lambda: getattr(ddb, operation)(TableName=TABLE, Key=key)) == (
        "ValidationException",
        "The provided key element does not match the schema",
    )
    assert plane.dynamodb.items(TABLE) == []


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {"pk": {"S": "a"}},
            "One or more parameter values were invalid: Missing the key sk in the item",
        ),
        (
            {"pk": {"N": "1"}, "sk": {"S": "a"}},
            "One or more parameter values were invalid: Type mismatch for key pk expected: S "
            "actual: N",
        ),
        (
            {"pk": {"S": ""}, "sk": {"S": "a"}},
            "One or more parameter values are not valid. The AttributeValue for a key attribute "
            "cannot contain an empty string value. Key: pk",
        ),
        (
            {**KEY, "tags": {"SS": []}},
            "One or more parameter values were invalid: An string set  may not be empty",
        ),
        (
            {**KEY, "tags": {"SS": ["a", "a"]}},
            "One or more parameter values were invalid: Input collection [a, a] contains "
            "duplicates.",
        ),
        (
            {**KEY, "gone": {"NULL": False}},
            "One or more parameter values were invalid: Null attribute value types must have the "
            "value of true",
        ),
        ({**KEY, "n": {"N": "1,5"}}, "The parameter cannot be converted to a numeric value: 1,5"),
        (
            {**KEY, "n": {"N": "1" * 39}},
            "Attempting to store more than 38 significant digits in a Number",
        ),
        (
            {**KEY, "n": {"N": "1E+126"}},
            "Number overflow. Attempting to store a number with magnitude larger than supported "
            "range",
        ),
        (
            {**KEY, "n": {"S": "x", "N": "1"}},
            "Supplied AttributeValue has more than one datatypes set, must contain exactly one of "
            "the supported datatypes",
        ),
        (
            {**KEY, "big": {"S": "x" * (400 * 1024)}},
            "Item size has exceeded the maximum allowed size",
        ),
    ],
)
def test_items_are_refused_as_the_service_refuses_them(
    plane: FakeControlPlane, item: dict[str, Any], message: str
) -> None:
    # Bug caught: a value the service refuses, stored (the next read would differ).
    unchecked = boto3.client("dynamodb", config=UNCHECKED)
    assert refusal(lambda: unchecked.put_item(TableName=TABLE, Item=item)) == (
        "ValidationException",
        message,
    )
    assert plane.dynamodb.items(TABLE) == []


def test_values_come_back_in_canonical_form(plane: FakeControlPlane, ddb: Any) -> None:
    # Bugs caught: numbers echoed as sent (the service trims them), an empty non-key
    # string refused (allowed since 2020), binary not round-tripped.
    ddb.put_item(
        TableName=TABLE,
        Item={
            **KEY,
            "n": {"N": "001.500"},
            "e": {"N": "1E+2"},
            "empty": {"S": ""},
            "b": {"B": b"\x00\x01"},
            "ns": {"NS": ["2", "1.0"]},
        },
    )
    item = ddb.get_item(TableName=TABLE, Key=KEY, ConsistentRead=True)["Item"]
    assert item["n"] == {"N": "1.5"}
    assert item["e"] == {"N": "100"}
    assert item["empty"] == {"S": ""}
    assert item["b"] == {"B": b"\x00\x01"}
    assert sorted(item["ns"]["NS"]) == ["1", "2"]
    # The resource layer's Decimals round-trip too.
    table = boto3.resource("dynamodb", config=ONE_ATTEMPT).Table(TABLE)
    table.put_item(Item={"pk": "purchase#2", "sk": "claim", "fee": Decimal("12.30")})
    assert table.get_item(Key={"pk": "purchase#2", "sk": "claim"})["Item"]["fee"] == Decimal("12.3")


# --- consistency ------------------------------------------------------------------------------


def test_stale_reads_see_the_version_before_the_latest_write(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bug caught: a handler that reads its own ledger eventually consistently and acts on
    # what it did not see; the fake must show the stale version unless asked not to.
    plane.dynamodb.put_raw(TABLE, {"pk": "purchase#1", "sk": "claim", "seq": 1}, settled=True)
    ddb.update_item(
        TableName=TABLE,
        Key=KEY,
        UpdateExpression="SET seq = :two",
        ExpressionAttributeValues={":two": {"N": "2"}},
    )
    plane.dynamodb.stale_reads(2)
    strong = ddb.get_item(TableName=TABLE, Key=KEY, ConsistentRead=True)
    assert strong["Item"]["seq"] == {"N": "2"}  # a consistent read spends no stale read
    assert ddb.get_item(TableName=TABLE, Key=KEY)["Item"]["seq"] == {"N": "1"}
    query = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": KEY["pk"]},
    }
    assert [i["seq"] for i in ddb.query(**query)["Items"]] == [{"N": "1"}]
    # The stale reads are spent: the next eventually consistent read is up to date.
    assert ddb.get_item(TableName=TABLE, Key=KEY)["Item"]["seq"] == {"N": "2"}
    # A claim written by someone else is not seen by a stale read at all.
    plane.dynamodb.put_raw(TABLE, {"pk": "purchase#9", "sk": "claim", "owner": "rival"})
    plane.dynamodb.stale_reads(1)
    other = {"pk": {"S": "purchase#9"}, "sk": {"S": "claim"}}
    assert "Item" not in ddb.get_item(TableName=TABLE, Key=other)
    assert ddb.get_item(TableName=TABLE, Key=other, ConsistentRead=True)["Item"]["owner"] == {
        "S": "rival"
    }


def test_a_rival_write_lands_just_before_the_call(plane: FakeControlPlane, ddb: Any) -> None:
    # Bug caught: a race the tests cannot stage (read, then a rival claims, then the
    # conditional write must fail).
    plane.dynamodb.rival_put(
        "PutItem", TABLE, {"pk": "purchase#1", "sk": "claim", "owner": "rival"}
    )
    assert "Item" not in ddb.get_item(TableName=TABLE, Key=KEY, ConsistentRead=True)
    with pytest.raises(ClientError) as caught:
        claim(ddb, "me", ReturnValuesOnConditionCheckFailure="ALL_OLD")
    assert caught.value.response["Item"]["owner"] == {"S": "rival"}


# --- queries -------------------------------------------------------------------------------


def test_query_pages_with_the_paginator(plane: FakeControlPlane, ddb: Any) -> None:
    # Bugs caught: pages that skip or repeat items, no LastEvaluatedKey where the service
    # gives one, ScanIndexForward ignored, other partitions leaking in.
    for n in range(7):
        plane.dynamodb.put_raw(TABLE, {"pk": "plan#a", "sk": f"event#{n}", "n": n}, settled=True)
    plane.dynamodb.put_raw(TABLE, {"pk": "plan#b", "sk": "event#0"}, settled=True)
    query = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :p AND begins_with(sk, :e)",
        "ExpressionAttributeValues": {":p": {"S": "plan#a"}, ":e": {"S": "event#"}},
    }
    pages = list(ddb.get_paginator("query").paginate(**query, PaginationConfig={"PageSize": 3}))
    assert [p["Count"] for p in pages] == [3, 3, 1]
    assert [i["n"]["N"] for p in pages for i in p["Items"]] == [str(n) for n in range(7)]
    assert pages[0]["LastEvaluatedKey"] == {"pk": {"S": "plan#a"}, "sk": {"S": "event#2"}}
    # A page that reaches the Limit has a LastEvaluatedKey even when nothing follows.
    full = ddb.query(**query, Limit=7)
    assert full["LastEvaluatedKey"] == {"pk": {"S": "plan#a"}, "sk": {"S": "event#6"}}
    after = ddb.query(**query, Limit=7, ExclusiveStartKey=full["LastEvaluatedKey"])
    assert (after["Count"], after["Items"], "LastEvaluatedKey" in after) == (0, [], False)
    backwards = ddb.query(**query, ScanIndexForward=False, Limit=2)
    assert [i["sk"]["S"] for i in backwards["Items"]] == ["event#6", "event#5"]
    # Limit counts the items evaluated, not those the filter keeps.
    filtered = ddb.query(
        **{
            **query,
            "ExpressionAttributeValues": {**query["ExpressionAttributeValues"], ":m": {"N": "4"}},
        },
        FilterExpression="n >= :m",
        Limit=5,
    )
    assert (filtered["Count"], filtered["ScannedCount"]) == (1, 5)
    counted = ddb.query(**query, Select="COUNT")
    assert (counted["Count"], "Items" in counted) == (7, False)


def test_query_orders_and_bounds_sort_keys_by_type(plane: FakeControlPlane) -> None:
    # Bug caught: numeric sort keys ordered as text (10 before 9).
    plane.dynamodb.create_table("versions", partition_key="plan", sort_key="v", sort_key_type="N")
    for v in (10, 9, 2, 100):
        plane.dynamodb.put_raw("versions", {"plan": "a", "v": v}, settled=True)
    ddb = boto3.client("dynamodb", config=ONE_ATTEMPT)
    found = ddb.query(
        TableName="versions",
        KeyConditionExpression="#p = :p AND v BETWEEN :lo AND :hi",
        ExpressionAttributeNames={"#p": "plan"},
        ExpressionAttributeValues={":p": {"S": "a"}, ":lo": {"N": "3"}, ":hi": {"N": "99"}},
    )
    assert [i["v"]["N"] for i in found["Items"]] == ["9", "10"]


@pytest.mark.parametrize(
    ("condition", "values", "message"),
    [
        ("pk < :p", {":p": {"S": "a"}}, "Query key condition not supported"),
        ("sk = :s", {":s": {"S": "a"}}, "Query condition missed key schema element: pk"),
        (
            "pk = :p OR sk = :s",
            {":p": {"S": "a"}, ":s": {"S": "a"}},
            "Invalid operator used in KeyConditionExpression: OR",
        ),
        (
            "pk = :p AND pk = :s",
            {":p": {"S": "a"}, ":s": {"S": "a"}},
            "KeyConditionExpressions must only contain one condition per key",
        ),
        (
            "pk = :p",
            {":p": {"N": "1"}},
            "One or more parameter values were invalid: Condition parameter type does not match "
            "schema type",
        ),
        (
            "pk = :p AND contains(sk, :s)",
            {":p": {"S": "a"}, ":s": {"S": "a"}},
            "Invalid operator used in KeyConditionExpression: contains",
        ),
    ],
)
def test_query_key_conditions_are_checked(
    ddb: Any, condition: str, values: dict[str, Any], message: str
) -> None:
    # Bug caught: a key condition the service refuses, answered (as a scan would).
    assert refusal(
        lambda: ddb.query(
            TableName=TABLE, KeyConditionExpression=condition, ExpressionAttributeValues=values
        )
    ) == ("ValidationException", message)


def test_a_query_filter_may_not_name_a_key_and_indexes_are_refused(ddb: Any) -> None:
    # Bugs caught: a filter on the sort key accepted (the service wants it in the key
    # condition), a secondary index silently read as the table.
    query = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": "a"}, ":s": {"S": "b"}},
        "FilterExpression": "sk = :s",
    }
    assert refusal(lambda: ddb.query(**query)) == (
        "ValidationException",
        "Filter Expression can only contain non-primary key attributes: Primary key attribute: sk",
    )
    del query["FilterExpression"]
    query["ExpressionAttributeValues"] = {":p": {"S": "a"}}
    assert refusal(lambda: ddb.query(**query, IndexName="by-owner")) == (
        "ValidationException",
        "The fake does not support IndexName (secondary indexes).",
    )


# --- the service's errors -------------------------------------------------------------------


def test_a_missing_table_and_a_bad_name(ddb: Any) -> None:
    # Bugs caught: a call on a table that does not exist answered, a name the model
    # allows but the service does not (3 to 255 characters) accepted.
    assert refusal(lambda: ddb.get_item(TableName="nope", Key=KEY)) == (
        "ResourceNotFoundException",
        "Requested resource not found",
    )
    assert refusal(lambda: ddb.describe_table(TableName="nope")) == (
        "ResourceNotFoundException",
        "Requested resource not found: Table: nope not found",
    )
    assert refusal(lambda: ddb.get_item(TableName="ab", Key=KEY)) == (
        "ValidationException",
        "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3",
    )
    # A table is also named by its ARN.
    assert "Item" not in ddb.get_item(TableName=TABLE_ARN, Key=KEY)
    described = ddb.describe_table(TableName=TABLE)["Table"]
    assert (described["TableArn"], described["TableStatus"], described["KeySchema"]) == (
        TABLE_ARN,
        "ACTIVE",
        [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )


def test_requests_are_checked_against_the_model(plane: FakeControlPlane) -> None:
    # Bug caught: a request botocore would not check (parameter_validation off, another
    # SDK) accepted outside the model's constraints.
    unchecked = boto3.client("dynamodb", config=UNCHECKED)
    assert refusal(
        lambda: unchecked.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "a"}},
            Limit=0,
        )
    ) == (
        "ValidationException",
        "1 validation error detected: Value 0 at 'limit' failed to satisfy constraint: Member "
        "must have value greater than or equal to 1",
    )
    assert refusal(
        lambda: unchecked.put_item(TableName=TABLE, Item=KEY, ReturnValues="ALL_NEW")
    ) == (
        "ValidationException",
        "ReturnValues can only be ALL_OLD or NONE",
    )


def raw_call(plane: FakeControlPlane, target: str, payload: dict[str, Any]) -> tuple[int, Any, Any]:
    """A request as any SDK sends it (the fake reads the service from the signature)."""
    body = json.dumps(payload).encode()
    headers = {
        "X-Amz-Target": target,
        "Content-Type": dynamodb.CONTENT_TYPE,
        "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDFAKE/20260101/us-east-1/dynamodb/"
        "aws4_request, SignedHeaders=host, Signature=0",
    }
    request = urllib.request.Request(plane.url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # loopback only
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_errors_and_answers_have_the_services_wire_form(plane: FakeControlPlane) -> None:
    # Bugs caught: a body whose x-amz-crc32 botocore would reject, an error namespace or
    # status botocore cannot map, an operation the fake does not serve answered.
    status, headers, body = raw_call(
        plane, "DynamoDB_20120810.GetItem", {"TableName": TABLE, "Key": KEY}
    )
    assert (status, headers["Content-Type"], body) == (200, dynamodb.CONTENT_TYPE, b"{}")
    assert headers["x-amz-crc32"] == str(zlib.crc32(body))
    status, _, body = raw_call(plane, "DynamoDB_20120810.GetItem", {"TableName": TABLE})
    assert status == 400
    assert json.loads(body) == {
        "__type": "com.amazon.coral.validate#ValidationException",
        "message": "1 validation error detected: Value None at 'key' failed to satisfy "
        "constraint: Member must not be null",
    }
    status, _, body = raw_call(plane, "DynamoDB_20120810.Scan", {"TableName": TABLE})
    assert (status, json.loads(body)["message"]) == (
        400,
        "The fake does not support DynamoDB Scan.",
    )
    status, _, body = raw_call(plane, "DynamoDB_20120810.Frobnicate", {})
    assert (status, json.loads(body)["__type"]) == (
        400,
        "com.amazon.coral.service#UnknownOperationException",
    )
    # botocore's legacy retry mode checks the CRC32 of every answer.
    legacy = boto3.client("dynamodb", config=Config(retries={"mode": "legacy", "max_attempts": 0}))
    assert "Item" not in legacy.get_item(TableName=TABLE, Key=KEY)


def test_calls_are_recorded_with_their_parameters(plane: FakeControlPlane, ddb: Any) -> None:
    # Bug caught: DynamoDB calls missing from the log tests read.
    mark = plane.mark()
    claim(ddb, "me")
    ddb.get_item(TableName=TABLE, Key=KEY, ConsistentRead=True)
    assert plane.operations_since(mark, ledger=True) == ["PutItem", "GetItem"]
    assert plane.calls[-1] == Call(
        "dynamodb", "GetItem", {"TableName": TABLE, "Key": KEY, "ConsistentRead": True}
    )
    assert plane.calls_to("PutItem")[0]["ConditionExpression"] == "attribute_not_exists(pk)"


# --- faults -----------------------------------------------------------------------------------


def test_a_throttle_is_retried_by_botocore_and_refused_without_retries(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bugs caught: a throttled call that writes anyway, a code botocore does not retry.
    plane.throttle("PutItem")
    with pytest.raises(ClientError) as caught:
        claim(ddb, "me")
    assert caught.value.response["Error"]["Code"] == "ThrottlingException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert plane.dynamodb.items(TABLE) == []
    plane.error("PutItem", code="ProvisionedThroughputExceededException", message="slow down")
    plane.throttle("PutItem")
    retried = boto3.client(
        "dynamodb", config=Config(retries={"mode": "standard", "total_max_attempts": 3})
    )
    claim(retried, "me")
    assert plane.operations(ledger=True)[-3:] == ["PutItem", "PutItem", "PutItem"]
    assert len(plane.dynamodb.items(TABLE)) == 1


def test_an_internal_error_is_a_500(plane: FakeControlPlane, ddb: Any) -> None:
    # Bug caught: a 5xx that botocore would not see as one (no retry of a read).
    plane.server_error("GetItem")
    with pytest.raises(ClientError) as caught:
        ddb.get_item(TableName=TABLE, Key=KEY)
    assert caught.value.response["Error"] == {
        "Code": "InternalServerError",
        "Message": "Internal server error",
    }
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    plane.server_error("GetItem")
    assert "Item" not in boto3.client("dynamodb", config=TWO_ATTEMPTS).get_item(
        TableName=TABLE, Key=KEY
    )


def test_a_lost_answer_after_the_write_makes_the_retry_fail_its_own_condition(
    plane: FakeControlPlane,
) -> None:
    # Bug caught: "5xx after the write" that did not write. The retry of a conditional
    # claim then fails on the item it wrote itself, which a ledger must recognise.
    plane.lose_response("PutItem", how="server_error")
    with pytest.raises(ClientError) as caught:
        claim(boto3.client("dynamodb", config=ONE_ATTEMPT), "me")
    assert caught.value.response["Error"]["Code"] == "InternalServerError"
    assert plane.dynamodb.items(TABLE) == [
        {"pk": "purchase#1", "sk": "claim", "owner": "me", "seq": 1}
    ]
    plane.reset()
    plane.dynamodb.create_table(TABLE, partition_key="pk", sort_key="sk")
    plane.lose_response("PutItem", how="server_error")
    with pytest.raises(ClientError) as retried:
        claim(
            boto3.client("dynamodb", config=TWO_ATTEMPTS),
            "me",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert retried.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert retried.value.response["Item"]["owner"] == {"S": "me"}
    assert plane.operations(ledger=True) == ["PutItem", "PutItem"]


def test_a_lost_answer_to_an_update_applies_it_and_a_retry_applies_it_again(
    plane: FakeControlPlane,
) -> None:
    # Bug caught: an update whose lost answer was not applied; an unconditional ADD
    # retried by botocore counts twice, as it does against the service.
    plane.lose_response("UpdateItem", how="server_error")
    boto3.client("dynamodb", config=TWO_ATTEMPTS).update_item(
        TableName=TABLE,
        Key=KEY,
        UpdateExpression="ADD attempts :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    assert plane.dynamodb.item(TABLE, {"pk": "purchase#1", "sk": "claim"}) == {
        "pk": "purchase#1",
        "sk": "claim",
        "attempts": 2,
    }


# --- IAM ------------------------------------------------------------------------------------


def ledger_role(*statements: Statement) -> Principal:
    return Principal("ledger-handler", statements)


OWN_PURCHASES = Statement(
    "Allow",
    ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"),
    (TABLE_ARN,),
    {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ("purchase#1",)}},
    sid="OwnPurchases",
)


def test_leading_keys_allow_the_partitions_named_and_refuse_others(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bugs caught: a LeadingKeys condition ignored (every partition allowed), a denial
    # that still writes, a denial in another error shape than the service's.
    plane.act_as(ledger_role(OWN_PURCHASES))
    claim(ddb, "me")
    other = {"pk": {"S": "purchase#2"}, "sk": {"S": "claim"}}
    code, message = refusal(lambda: ddb.put_item(TableName=TABLE, Item=other))
    assert code == "AccessDeniedException"
    assert message == (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/ledger-handler/handler is not authorized "
        f"to perform: dynamodb:PutItem on resource: {TABLE_ARN} because no identity-based "
        "policy allows the dynamodb:PutItem action"
    )
    assert refusal(
        lambda: ddb.query(
            TableName=TABLE,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": other["pk"]},
        )
    )[0] == ("AccessDeniedException")
    mine = ddb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": KEY["pk"]},
    )
    assert mine["Count"] == 1
    # DeleteItem and DescribeTable are not granted at all.
    assert refusal(lambda: ddb.delete_item(TableName=TABLE, Key=KEY))[0] == "AccessDeniedException"
    assert refusal(lambda: ddb.describe_table(TableName=TABLE))[0] == "AccessDeniedException"
    plane.act_as(None)
    assert [i["pk"] for i in plane.dynamodb.items(TABLE)] == ["purchase#1"]


def test_leading_keys_with_wildcards_and_an_explicit_deny(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bugs caught: StringLike on a multivalued key not evaluated, a Deny that loses.
    purchases = Statement(
        "Allow",
        ("dynamodb:*",),
        (TABLE_ARN,),
        {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ("purchase#*",)}},
    )
    no_nine = Statement(
        "Deny",
        ("dynamodb:PutItem",),
        ("*",),
        {"ForAnyValue:StringEquals": {"dynamodb:LeadingKeys": ("purchase#9",)}},
    )
    plane.act_as(ledger_role(purchases, no_nine))
    ddb.put_item(TableName=TABLE, Item={"pk": {"S": "purchase#7"}, "sk": {"S": "claim"}})
    code, message = refusal(
        lambda: ddb.put_item(TableName=TABLE, Item={"pk": {"S": "purchase#9"}, "sk": {"S": "c"}})
    )
    assert (code, message.endswith("with an explicit deny in an identity-based policy")) == (
        "AccessDeniedException",
        True,
    )
    assert (
        refusal(
            lambda: ddb.put_item(TableName=TABLE, Item={"pk": {"S": "plan#1"}, "sk": {"S": "c"}})
        )[0]
        == "AccessDeniedException"
    )
    # DescribeTable touches no partition: ForAllValues holds for the absent key.
    assert ddb.describe_table(TableName=TABLE)["Table"]["TableName"] == TABLE


def test_a_condition_on_a_key_the_fake_does_not_compute_never_allows(
    plane: FakeControlPlane, ddb: Any
) -> None:
    # Bug caught: dynamodb:Attributes or dynamodb:ReturnValues read as absent, so that
    # ForAllValues would allow what the service may refuse.
    plane.act_as(
        ledger_role(
            Statement(
                "Allow",
                ("dynamodb:GetItem",),
                (TABLE_ARN,),
                {"ForAllValues:StringEquals": {"dynamodb:Attributes": ("pk", "sk")}},
            )
        )
    )
    assert refusal(lambda: ddb.get_item(TableName=TABLE, Key=KEY))[0] == "AccessDeniedException"


@pytest.mark.parametrize(
    ("operator", "context", "decision"),
    [
        ("ForAllValues:StringEquals", {"k": ("a", "b")}, "allowed"),
        ("ForAllValues:StringEquals", {"k": ("a", "c")}, "implicit_deny"),
        ("ForAllValues:StringEquals", {}, "allowed"),  # holds for an absent key
        ("ForAnyValue:StringEquals", {"k": ("c", "a")}, "allowed"),
        ("ForAnyValue:StringEquals", {}, "implicit_deny"),
        ("ForAllValues:StringEqualsIgnoreCase", {"k": ("A",)}, "allowed"),
        ("ForAllValues:StringLike", {"k": ("a", "b")}, "allowed"),
        ("ForAllValues:StringEquals", {"k": "a"}, "implicit_deny"),  # single-valued key
        ("ForAllValues:StringNotEquals", {"k": ("z",)}, "implicit_deny"),  # not evaluated
    ],
)
def test_the_evaluator_applies_set_operators(
    operator: str, context: dict[str, Any], decision: str
) -> None:
    statement = Statement("Allow", ("dynamodb:*",), ("*",), {operator: {"k": ("a", "b")}})
    assert iam.authorize([statement], Request("dynamodb:GetItem", "x", context)) == decision
    # A key the service would set but the fake does not compute never satisfies an Allow.
    unknown = Request("dynamodb:GetItem", "x", {}, unmodelled=("k",))
    assert iam.authorize([statement], unknown) == "implicit_deny"


@pytest.mark.parametrize(
    ("value", "context", "decision"),
    [
        ("false", {"k": ("a",)}, "allowed"),  # the key is there
        ("false", {}, "implicit_deny"),
        ("false", {"k": ()}, "implicit_deny"),  # an empty set counts as absent
        ("true", {}, "allowed"),
        ("true", {"k": "a"}, "implicit_deny"),
        ("maybe", {"k": "a"}, "implicit_deny"),  # not evaluated: never an Allow
    ],
)
def test_the_evaluator_applies_null(value: str, context: dict[str, Any], decision: str) -> None:
    statement = Statement("Allow", ("dynamodb:*",), ("*",), {"Null": {"k": (value,)}})
    assert iam.authorize([statement], Request("dynamodb:GetItem", "x", context)) == decision
