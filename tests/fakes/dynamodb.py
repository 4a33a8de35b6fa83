"""A fake Amazon DynamoDB (the item operations on one account's tables), served by
`aws_control_plane.FakeControlPlane` for requests signed for `dynamodb`.

DynamoDB speaks JSON 1.0: `POST /` with `X-Amz-Target: DynamoDB_20120810.<Operation>`
and `Content-Type: application/x-amz-json-1.0`; answers carry `x-amz-crc32` (the CRC32
of the body, which botocore checks) and errors are `{"__type": "<namespace>#<Code>",
"message": ...}` with the HTTP status of the error, the namespace being the service's
(`com.amazonaws.dynamodb.v20120810`) or Coral's for the errors the front end raises
(`com.amazon.coral.validate#ValidationException`, `com.amazon.coral.service#
AccessDeniedException`); botocore reads the code after the `#`.

Served: GetItem, PutItem, UpdateItem, DeleteItem, Query and DescribeTable, on tables
that tests create (`create_table`, string keys unless told otherwise). Every request is
checked against botocore's model (`service_model.json_input_errors`) and then as the
service checks it, in the service's order and words, which follow the API reference
(API_PutItem.html, API_UpdateItem.html, API_Query.html, ... as botocore's model carries
their text) and the developer guide's pages on expressions:
- Expressions.OperatorsAndFunctions.html: condition and filter syntax, functions (names
  case-sensitive), precedence NOT > AND > OR, parentheses, IN with at most 100 values.
- Expressions.UpdateExpressions.html: SET (`+`, `-`, list_append, if_not_exists), REMOVE
  (list elements by their index before the update), ADD (numbers and sets, 0 or the
  empty set when absent), DELETE (sets; an emptied set is removed); each clause once.
- Expressions.ExpressionAttributeNames.html and ReservedWords.html: a name that is a
  reserved word (case-insensitive), starts with a digit or holds a special character
  needs a `#name`; every `#name` and `:value` defined must be used and every one used
  must be defined.
- API_Query.html: the key condition (`pk = :v` and one sort key comparison, BETWEEN or
  begins_with), Limit counting items evaluated (a page that reaches the Limit returns a
  LastEvaluatedKey, also when nothing follows), 1 MB pages, ScanIndexForward, Select.
Where the service's exact words are not documented, the words are those the service
answers as recorded by emulators tested against it (architect/dynalite's validations and
tests, getmoto/moto's exceptions); each such place says so.

Attribute values are kept in the wire form (`{"S": ...}`, numbers as canonical text,
binary as base64) and compared as the service compares them: numbers as decimals, strings
by their UTF-8 bytes, binary as unsigned bytes, sets as sets.

Consistency: reads are eventually consistent unless ConsistentRead is true
(HowItWorks.ReadConsistency.html). `stale_reads(n)` makes the next n GetItem or Query
calls that do not ask for a consistent read answer from the version of each item before
its latest write; consistent reads, conditions and updates always see the latest.

Authorization: with a principal (the plane's `act_as`), each call asks IAM for
`dynamodb:<Operation>` on `arn:aws:dynamodb:<region>:<account>:table/<name>`, with the
multivalued `dynamodb:LeadingKeys` (the partition key value the call touches) for the
item operations and Query (specifying-conditions.html); a refusal is
AccessDeniedException (HTTP 400). DynamoDB's other condition keys (dynamodb:Attributes,
dynamodb:Select, ...) are not computed, so a statement conditioned on them never allows.

A request is checked in this order: the model, the table name, the request's own
parameters and values, its expressions and placeholders, then IAM, then the table's
existence (ResourceNotFoundException, "Requested resource not found"), the key against
the table's schema, and last the condition against the item.

What the fake does not serve is refused with a ValidationException that says "The fake
does not support ...": other operations, secondary indexes (IndexName), the legacy
parameters (Expected, AttributeUpdates, KeyConditions, QueryFilter, AttributesToGet,
ConditionalOperator), Select ALL_PROJECTED_ATTRIBUTES.

Tests script it through `plane.dynamodb`: `create_table`, `put_raw` (seed an item in
plain Python values), `stale_reads`, `rival_put` (another writer's item lands just before
the next call of an operation), and read it back with `items` and `item`. Faults
(throttles, 5xx, lost answers) are the plane's, by operation name.
"""

from __future__ import annotations

import base64
import binascii
import copy
import decimal
import json
import math
import re
import threading
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from tests.fakes import iam, service_model

SERVICE = "dynamodb"
TARGET_PREFIX = "DynamoDB_20120810."
CONTENT_TYPE = "application/x-amz-json-1.0"
SERVED = ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "DescribeTable")
MAX_ITEM_BYTES = 400 * 1024  # ServiceQuotas.html: "The maximum item size in DynamoDB is 400 KB"
PAGE_BYTES = 1024 * 1024  # a Query reads at most 1 MB per page (API_Query.html)
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
FAKE = "The fake does not support"

Wire = dict[str, Any]  # one AttributeValue: {"S": "x"}, {"N": "1"}, {"M": {...}}, ...
Item = dict[str, Wire]
Key = tuple[Any, ...]  # a primary key in sort order: bytes, Decimal or bytes per part
Part = str | int  # one element of a document path: a map key or a list index
Path = tuple[Part, ...]

# ReservedWords.html (573 words; "This list isn't case-sensitive").
_RESERVED_TEXT = """
ABORT ABSOLUTE ACTION ADD AFTER AGENT AGGREGATE ALL ALLOCATE ALTER ANALYZE AND ANY ARCHIVE
ARE ARRAY AS ASC ASCII ASENSITIVE ASSERTION ASYMMETRIC AT ATOMIC ATTACH ATTRIBUTE AUTH
AUTHORIZATION AUTHORIZE AUTO AVG BACK BACKUP BASE BATCH BEFORE BEGIN BETWEEN BIGINT BINARY
BIT BLOB BLOCK BOOLEAN BOTH BREADTH BUCKET BULK BY BYTE CALL CALLED CALLING CAPACITY CASCADE
CASCADED CASE CAST CATALOG CHAR CHARACTER CHECK CLASS CLOB CLOSE CLUSTER CLUSTERED CLUSTERING
CLUSTERS COALESCE COLLATE COLLATION COLLECTION COLUMN COLUMNS COMBINE COMMENT COMMIT COMPACT
COMPILE COMPRESS CONDITION CONFLICT CONNECT CONNECTION CONSISTENCY CONSISTENT CONSTRAINT
CONSTRAINTS CONSTRUCTOR CONSUMED CONTINUE CONVERT COPY CORRESPONDING COUNT COUNTER CREATE
CROSS CUBE CURRENT CURSOR CYCLE DATA DATABASE DATE DATETIME DAY DEALLOCATE DEC DECIMAL
DECLARE DEFAULT DEFERRABLE DEFERRED DEFINE DEFINED DEFINITION DELETE DELIMITED DEPTH DEREF
DESC DESCRIBE DESCRIPTOR DETACH DETERMINISTIC DIAGNOSTICS DIRECTORIES DISABLE DISCONNECT
DISTINCT DISTRIBUTE DO DOMAIN DOUBLE DROP DUMP DURATION DYNAMIC EACH ELEMENT ELSE ELSEIF
EMPTY ENABLE END EQUAL EQUALS ERROR ESCAPE ESCAPED EVAL EVALUATE EXCEEDED EXCEPT EXCEPTION
EXCEPTIONS EXCLUSIVE EXEC EXECUTE EXISTS EXIT EXPLAIN EXPLODE EXPORT EXPRESSION EXTENDED
EXTERNAL EXTRACT FAIL FALSE FAMILY FETCH FIELDS FILE FILTER FILTERING FINAL FINISH FIRST
FIXED FLATTERN FLOAT FOR FORCE FOREIGN FORMAT FORWARD FOUND FREE FROM FULL FUNCTION FUNCTIONS
GENERAL GENERATE GET GLOB GLOBAL GO GOTO GRANT GREATER GROUP GROUPING HANDLER HASH HAVE
HAVING HEAP HIDDEN HOLD HOUR IDENTIFIED IDENTITY IF IGNORE IMMEDIATE IMPORT IN INCLUDING
INCLUSIVE INCREMENT INCREMENTAL INDEX INDEXED INDEXES INDICATOR INFINITE INITIALLY INLINE
INNER INNTER INOUT INPUT INSENSITIVE INSERT INSTEAD INT INTEGER INTERSECT INTERVAL INTO
INVALIDATE IS ISOLATION ITEM ITEMS ITERATE JOIN KEY KEYS LAG LANGUAGE LARGE LAST LATERAL
LEAD LEADING LEAVE LEFT LENGTH LESS LEVEL LIKE LIMIT LIMITED LINES LIST LOAD LOCAL LOCALTIME
LOCALTIMESTAMP LOCATION LOCATOR LOCK LOCKS LOG LOGED LONG LOOP LOWER MAP MATCH MATERIALIZED
MAX MAXLEN MEMBER MERGE METHOD METRICS MIN MINUS MINUTE MISSING MOD MODE MODIFIES MODIFY
MODULE MONTH MULTI MULTISET NAME NAMES NATIONAL NATURAL NCHAR NCLOB NEW NEXT NO NONE NOT
NULL NULLIF NUMBER NUMERIC OBJECT OF OFFLINE OFFSET OLD ON ONLINE ONLY OPAQUE OPEN OPERATOR
OPTION OR ORDER ORDINALITY OTHER OTHERS OUT OUTER OUTPUT OVER OVERLAPS OVERRIDE OWNER PAD
PARALLEL PARAMETER PARAMETERS PARTIAL PARTITION PARTITIONED PARTITIONS PATH PERCENT
PERCENTILE PERMISSION PERMISSIONS PIPE PIPELINED PLAN POOL POSITION PRECISION PREPARE
PRESERVE PRIMARY PRIOR PRIVATE PRIVILEGES PROCEDURE PROCESSED PROJECT PROJECTION PROPERTY
PROVISIONING PUBLIC PUT QUERY QUIT QUORUM RAISE RANDOM RANGE RANK RAW READ READS REAL
REBUILD RECORD RECURSIVE REDUCE REF REFERENCE REFERENCES REFERENCING REGEXP REGION REINDEX
RELATIVE RELEASE REMAINDER RENAME REPEAT REPLACE REQUEST RESET RESIGNAL RESOURCE RESPONSE
RESTORE RESTRICT RESULT RETURN RETURNING RETURNS REVERSE REVOKE RIGHT ROLE ROLES ROLLBACK
ROLLUP ROUTINE ROW ROWS RULE RULES SAMPLE SATISFIES SAVE SAVEPOINT SCAN SCHEMA SCOPE SCROLL
SEARCH SECOND SECTION SEGMENT SEGMENTS SELECT SELF SEMI SENSITIVE SEPARATE SEQUENCE
SERIALIZABLE SESSION SET SETS SHARD SHARE SHARED SHORT SHOW SIGNAL SIMILAR SIZE SKEWED
SMALLINT SNAPSHOT SOME SOURCE SPACE SPACES SPARSE SPECIFIC SPECIFICTYPE SPLIT SQL SQLCODE
SQLERROR SQLEXCEPTION SQLSTATE SQLWARNING START STATE STATIC STATUS STORAGE STORE STORED
STREAM STRING STRUCT STYLE SUB SUBMULTISET SUBPARTITION SUBSTRING SUBTYPE SUM SUPER SYMMETRIC
SYNONYM SYSTEM TABLE TABLESAMPLE TEMP TEMPORARY TERMINATED TEXT THAN THEN THROUGHPUT TIME
TIMESTAMP TIMEZONE TINYINT TO TOKEN TOTAL TOUCH TRAILING TRANSACTION TRANSFORM TRANSLATE
TRANSLATION TREAT TRIGGER TRIM TRUE TRUNCATE TTL TUPLE TYPE UNDER UNDO UNION UNIQUE UNIT
UNKNOWN UNLOGGED UNNEST UNPROCESSED UNSIGNED UNTIL UPDATE UPPER URL USAGE USE USER USERS
USING UUID VACUUM VALUE VALUED VALUES VARCHAR VARIABLE VARIANCE VARINT VARYING VIEW VIEWS
VIRTUAL VOID WAIT WHEN WHENEVER WHERE WHILE WINDOW WITH WITHIN WITHOUT WORK WRAPPED WRITE
YEAR ZONE
"""
RESERVED_WORDS = frozenset(_RESERVED_TEXT.split())

# The errors the front end raises come in Coral's namespaces, the others in the service's
# (dynalite's validations, tested against the service, answer the same).
_NAMESPACES = {
    "ValidationException": "com.amazon.coral.validate",
    "AccessDeniedException": "com.amazon.coral.service",
    "UnrecognizedClientException": "com.amazon.coral.service",
    "SerializationException": "com.amazon.coral.service",
    "UnknownOperationException": "com.amazon.coral.service",
    "ThrottlingException": "com.amazon.coral.availability",
}
_SERVICE_NAMESPACE = "com.amazonaws.dynamodb.v20120810"
_INVALID = "One or more parameter values were invalid: "


class DynamoDBError(Exception):
    """An error answer: its code, message, HTTP status and extra members (`Item`)."""

    def __init__(
        self,
        code: str,
        message: str,
        status: int = 400,
        *,
        members: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.members = dict(members or {})


def _invalid(message: str) -> DynamoDBError:
    return DynamoDBError("ValidationException", message)


def _unsupported(what: str) -> DynamoDBError:
    return _invalid(f"{FAKE} {what}.")


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...]


def _answer(status: int, payload: Mapping[str, Any]) -> Answer:
    body = json.dumps(payload).encode()
    # The service signs its body with a CRC32 that botocore checks (and retries on).
    return Answer(status, body, (("x-amz-crc32", str(zlib.crc32(body) & 0xFFFFFFFF)),))


def error_answer(
    code: str, message: str, status: int = 400, members: Mapping[str, Any] | None = None
) -> Answer:
    namespace = _NAMESPACES.get(code, _SERVICE_NAMESPACE)
    # Coral's service errors spell it "Message"; botocore reads either.
    text_key = "Message" if namespace == "com.amazon.coral.service" else "message"
    return _answer(status, {"__type": f"{namespace}#{code}", text_key: message, **(members or {})})


def operation_of(target: str) -> str:
    """The operation an X-Amz-Target names (the whole target when it is not DynamoDB's)."""
    return target[len(TARGET_PREFIX) :] if target.startswith(TARGET_PREFIX) else target


# --- attribute values -------------------------------------------------------------------

_SCALARS = ("S", "N", "B")
_SETS = {"SS": "S", "NS": "N", "BS": "B"}
_TYPES = ("S", "N", "B", "NULL", "BOOL", "SS", "NS", "BS", "L", "M")
# Java BigDecimal's syntax as the service reads numbers (no leading '+', no spaces).
_NUMBER = re.compile(r"-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_DECIMALS = decimal.Context(prec=200, Emax=999_999, Emin=-999_999)


class _BadValueError(Exception):
    """A malformed attribute value; the message is the service's."""


def kind(value: Wire) -> str:
    """The data type of an attribute value: S, N, B, NULL, BOOL, SS, NS, BS, L or M."""
    return next(iter(value))


def _number(text: str) -> str:
    """The canonical text of a number (the service trims zeros and exponents: 1.50 is 1.5,
    1E+2 is 100), or _BadValueError in the service's words (dynalite's tested messages)."""
    if text == "":
        raise _BadValueError("The parameter cannot be converted to a numeric value")
    if not _NUMBER.fullmatch(text):
        raise _BadValueError(f"The parameter cannot be converted to a numeric value: {text}")
    return _canonical(Decimal(text))


def _canonical(number: Decimal) -> str:
    if number.is_zero():
        return "0"
    normal = number.normalize(_DECIMALS)
    # 38 significant digits, magnitudes 1E-130 .. 9.99..E+125 (HowItWorks.NamingRulesDataTypes).
    if normal.adjusted() > 125:
        raise _BadValueError(
            "Number overflow. Attempting to store a number with magnitude larger than "
            "supported range"
        )
    if normal.adjusted() < -130:
        raise _BadValueError(
            "Number underflow. Attempting to store a number with magnitude smaller than "
            "supported range"
        )
    if len(normal.as_tuple().digits) > 38:
        raise _BadValueError("Attempting to store more than 38 significant digits in a Number")
    return format(normal, "f")


def _binary(text: str) -> str:
    try:
        return base64.b64encode(base64.b64decode(text, validate=True)).decode()
    except (binascii.Error, ValueError):
        raise DynamoDBError(
            "SerializationException", f"'{text}' can not be converted to a Blob"
        ) from None


def checked(value: Any) -> Wire:
    """An attribute value as the service accepts it, in canonical form, or _BadValueError.

    The messages are the service's for Item, Key and ExpressionAttributeValues
    (dynalite's tests record them): each type given is checked, then that there is one.
    """
    if not isinstance(value, Mapping):
        raise _BadValueError(
            "Supplied AttributeValue is empty, must contain exactly one of the types"
        )
    present = [t for t in _TYPES if t in value]
    if not present:
        raise _BadValueError(
            "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
        )
    out: Wire = {}
    for t in present:
        out[t] = _checked_member(t, value[t])
    if len(present) > 1:
        raise _BadValueError(
            "Supplied AttributeValue has more than one datatypes set, must contain exactly "
            "one of the supported datatypes"
        )
    return out


def _checked_set(t: str, members: list[Any]) -> list[str]:
    if not members:
        empty = {
            "SS": "An string set  may not be empty",
            "NS": "An number set  may not be empty",
            "BS": "Binary sets should not be empty",
        }
        raise _BadValueError(_INVALID + empty[t])
    if t == "SS":
        if len(set(members)) != len(members):
            raise _BadValueError(
                _INVALID + f"Input collection [{', '.join(members)}] contains duplicates."
            )
        return [str(m) for m in members]
    if t == "NS":
        numbers = [_number(str(m)) for m in members]
        if len(set(numbers)) != len(numbers):
            raise _BadValueError("Input collection contains duplicates")
        return numbers
    blobs = [_binary(str(m)) for m in members]
    if len(set(blobs)) != len(blobs):
        raise _BadValueError(
            _INVALID + f"Input collection [{', '.join(members)}]of type BS contains duplicates."
        )
    return blobs


def _checked_member(t: str, member: Any) -> Any:
    if t in _SETS:
        return _checked_set(t, list(member))
    if t == "NULL":
        if member is not True:
            raise _BadValueError(
                _INVALID + "Null attribute value types must have the value of true"
            )
        return True
    if t == "L":
        return [checked(m) for m in member]
    if t == "M":
        return {str(k): checked(v) for k, v in dict(member).items()}
    scalar: dict[str, Callable[[Any], Any]] = {
        "S": str,
        "N": lambda m: _number(str(m)),
        "B": lambda m: _binary(str(m)),
        "BOOL": bool,
    }
    return scalar[t](member)


def _checked_attributes(attributes: Mapping[str, Any]) -> Item:
    try:
        return {name: checked(value) for name, value in attributes.items()}
    except _BadValueError as exc:
        raise _invalid(str(exc)) from None


def same(a: Wire, b: Wire) -> bool:
    """Equality as the service compares values (sets as sets; values are canonical)."""
    ta, tb = kind(a), kind(b)
    if ta != tb:
        return False
    if ta in _SETS:
        return set(a[ta]) == set(b[ta])
    if ta == "L":
        return len(a["L"]) == len(b["L"]) and all(map(same, a["L"], b["L"]))
    if ta == "M":
        return a["M"].keys() == b["M"].keys() and all(same(v, b["M"][k]) for k, v in a["M"].items())
    return bool(a[ta] == b[ta])


def _order(value: Wire) -> Any:
    """What orders scalars: strings by UTF-8 bytes, numbers as decimals, binary as bytes."""
    t = kind(value)
    if t == "S":
        return value["S"].encode()
    if t == "N":
        return Decimal(value["N"])
    return base64.b64decode(value["B"])


def _compare(a: Wire | None, op: str, b: Wire | None) -> bool:
    if op == "=":
        return a is not None and b is not None and same(a, b)
    if op == "<>":
        return not (a is not None and b is not None and same(a, b))
    if a is None or b is None or kind(a) != kind(b) or kind(a) not in _SCALARS:
        return False
    x, y = _order(a), _order(b)
    return bool({"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op])


def _value_size(value: Wire) -> int:
    """Item sizes as CapacityUnitCalculations.html counts them."""
    t = kind(value)
    if t == "S":
        return len(value["S"].encode())
    if t == "N":
        digits = len(Decimal(value["N"]).normalize(_DECIMALS).as_tuple().digits)
        return (digits + 1) // 2 + 1
    if t == "B":
        return len(base64.b64decode(value["B"]))
    if t in ("NULL", "BOOL"):
        return 1
    if t in _SETS:
        return sum(_value_size({_SETS[t]: member}) for member in value[t])
    if t == "L":
        return 3 + sum(1 + _value_size(v) for v in value["L"])
    return 3 + sum(len(k.encode()) + 1 + _value_size(v) for k, v in value["M"].items())


def item_size(item: Mapping[str, Wire]) -> int:
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def plain(value: Wire) -> Any:
    """A wire value as plain Python: str, Decimal, bytes, bool, None, dict, list, set."""
    t = kind(value)
    if t == "S":
        return value["S"]
    if t == "N":
        return Decimal(value["N"])
    if t == "B":
        return base64.b64decode(value["B"])
    if t == "BOOL":
        return value["BOOL"]
    if t == "NULL":
        return None
    if t == "SS":
        return set(value["SS"])
    if t == "NS":
        return {Decimal(n) for n in value["NS"]}
    if t == "BS":
        return {base64.b64decode(b) for b in value["BS"]}
    if t == "L":
        return [plain(v) for v in value["L"]]
    return {k: plain(v) for k, v in value["M"].items()}


def plain_item(item: Mapping[str, Wire]) -> dict[str, Any]:
    return {name: plain(value) for name, value in item.items()}


def wire(value: Any) -> Wire:
    """A plain Python value as a wire value (the reverse of `plain`; ints, Decimals and
    floats are numbers, bytes are binary, sets are typed by their members)."""
    if isinstance(value, bool):
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, int | float | Decimal):
        return {"N": str(value)}
    if isinstance(value, bytes | bytearray):
        return {"B": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Mapping):
        return {"M": {str(k): wire(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [wire(v) for v in value]}
    if isinstance(value, set | frozenset):
        members = [wire(v) for v in value]
        kinds = {kind(m) for m in members}
        if len(kinds) != 1 or not kinds <= set(_SCALARS):
            raise ValueError(f"a set needs members of one scalar type: {value!r}")
        scalar = kinds.pop()
        return {{"S": "SS", "N": "NS", "B": "BS"}[scalar]: [m[scalar] for m in members]}
    raise TypeError(f"no DynamoDB type for {value!r}")


# --- expressions: tokens ------------------------------------------------------------------


class _SyntaxError(Exception):
    """A syntax error, in the service's form: Syntax error; token: "x", near: "y"."""


@dataclass(frozen=True)
class _Token:
    kind: str  # name (#x), value (:x), number, ident, op, eof
    text: str
    start: int
    end: int

    def op(self, *texts: str) -> bool:
        return self.kind == "op" and self.text in texts

    def word(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.upper() in words


_LEXEME = re.compile(
    r"(?P<space>\s+)|(?P<name>#[A-Za-z0-9_]+)|(?P<value>:[A-Za-z0-9_]+)|(?P<number>[0-9]+)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<op><>|<=|>=|[=<>()\[\].,+\-])"
)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        match = _LEXEME.match(text, pos)
        if match is None:
            start = tokens[-1].start if tokens else pos
            raise _SyntaxError(
                f'Syntax error; token: "{text[pos]}", near: "{text[start : pos + 1]}"'
            )
        if match.lastgroup != "space":
            tokens.append(_Token(str(match.lastgroup), match.group(), match.start(), match.end()))
        pos = match.end()
    tokens.append(_Token("eof", "<EOF>", len(text), len(text)))
    return tokens


# --- expressions: syntax trees ------------------------------------------------------------


@dataclass(frozen=True)
class _PathNode:
    parts: Path

    def text(self) -> str:
        return "[" + ", ".join(f"[{p}]" if isinstance(p, int) else p for p in self.parts) + "]"


@dataclass(frozen=True)
class _ValueNode:
    name: str
    value: Wire | None  # None: not defined (an error is recorded)


@dataclass(frozen=True)
class _Call:
    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class _Compare:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class _Between:
    operand: Any
    low: Any
    high: Any


@dataclass(frozen=True)
class _In:
    operand: Any
    options: tuple[Any, ...]


@dataclass(frozen=True)
class _Logic:
    op: str  # AND, OR, NOT
    args: tuple[Any, ...]


@dataclass(frozen=True)
class _Arith:
    op: str  # + or -
    left: Any
    right: Any


@dataclass(frozen=True)
class _Action:
    clause: str  # SET, REMOVE, ADD, DELETE
    path: _PathNode
    value: Any = None


_CONDITION_FUNCTIONS = {
    "attribute_exists": 1,
    "attribute_not_exists": 1,
    "attribute_type": 2,
    "begins_with": 2,
    "contains": 2,
    "size": 1,
}
_UPDATE_FUNCTIONS = {"if_not_exists": 2, "list_append": 2}
_TYPE_NAMES = ("B", "NULL", "SS", "BOOL", "L", "BS", "N", "NS", "S", "M")
_OPERAND_TYPE_WORDS = {
    "S": "STRING",
    "N": "NUMBER",
    "B": "BINARY",
    "NULL": "NULL",
    "BOOL": "BOOLEAN",
    "L": "LIST",
    "M": "MAP",
}
# Which of several errors of one expression the service names (dynalite's grammars,
# which follow the service's answers).
_PRIORITY = {
    "condition": (
        "parens",
        "unknownFunction",
        "misusedFunction",
        "reserved",
        "attrNameVal",
        "operand",
        "distinct",
        "function",
    ),
    "update": (
        "reserved",
        "unknownFunction",
        "section",
        "attrName",
        "attrVal",
        "pathOverlap",
        "pathConflict",
        "operand",
        "function",
    ),
    "projection": ("reserved", "attrNameVal", "pathOverlap", "pathConflict"),
}


@dataclass
class _Context:
    """The request's placeholders and which of them its expressions use."""

    names: Mapping[str, str]
    values: Mapping[str, Wire]
    used_names: set[str] = field(default_factory=set)
    used_values: set[str] = field(default_factory=set)


def _describe(value: Wire) -> str:
    t = kind(value)
    return f"AttributeValue: {{{t}:{value[t]}}}"


class _Parser:
    """Recursive descent over one expression. Syntax errors raise at once; the other
    errors are recorded by category and the service's first one is named at the end."""

    def __init__(self, text: str, grammar: str, context: _Context) -> None:
        self.text = text
        self.grammar = grammar  # condition, update or projection
        self.context = context
        self.tokens = _tokens(text)
        self.pos = 0
        self.errors: dict[str, str] = {}
        self.parenthesized: set[int] = set()
        self.paths: list[_PathNode] = []

    # --- tokens -------------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.peek()
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def expect(self, op: str) -> None:
        if not self.peek().op(op):
            raise self.syntax()
        self.take()

    def syntax(self) -> _SyntaxError:
        """The service quotes the token and its neighbourhood ("near"); the fake's
        neighbourhood is the token before it and the token itself."""
        token = self.peek()
        before = self.tokens[self.pos - 1] if self.pos > 0 else token
        if token.kind == "eof":
            start = self.tokens[max(self.pos - 2, 0)].start
            return _SyntaxError(f'Syntax error; token: "<EOF>", near: "{self.text[start:]}"')
        return _SyntaxError(
            f'Syntax error; token: "{token.text}", near: "{self.text[before.start : token.end]}"'
        )

    def error(self, category: str, message: str) -> None:
        self.errors.setdefault(category, message)

    def first_error(self) -> str | None:
        for category in _PRIORITY[self.grammar]:
            if category in self.errors:
                return self.errors[category]
        return None

    def keywords(self) -> tuple[str, ...]:
        if self.grammar == "condition":
            return ("AND", "OR", "NOT", "BETWEEN", "IN")
        if self.grammar == "update":
            return ("SET", "REMOVE", "ADD", "DELETE")
        return ()

    # --- placeholders and paths ---------------------------------------------------------

    def value(self) -> _ValueNode:
        token = self.take()
        value = self.context.values.get(token.text)
        if value is None:
            category = "attrNameVal" if self.grammar == "condition" else "attrVal"
            self.error(
                category,
                "An expression attribute value used in expression is not defined; "
                f"attribute value: {token.text}",
            )
        else:
            self.context.used_values.add(token.text)
        return _ValueNode(token.text, value)

    def element(self) -> str:
        token = self.peek()
        # A condition's path starts with a letter; update and projection paths may start
        # with '_' (dynalite's grammars).
        if token.kind not in ("name", "ident") or (
            token.kind == "ident"
            and (
                token.text.upper() in self.keywords()
                or (self.grammar == "condition" and token.text.startswith("_"))
            )
        ):
            raise self.syntax()
        self.take()
        if token.kind == "name":
            name = self.context.names.get(token.text)
            if name is None:
                category = "attrName" if self.grammar == "update" else "attrNameVal"
                self.error(
                    category,
                    "An expression attribute name used in the document path is not defined; "
                    f"attribute name: {token.text}",
                )
                return token.text  # stands in for the undefined name
            self.context.used_names.add(token.text)
            return name
        if token.text.upper() in RESERVED_WORDS:
            self.error(
                "reserved", f"Attribute name is a reserved keyword; reserved keyword: {token.text}"
            )
        return token.text

    def path(self) -> _PathNode:
        parts: list[Part] = [self.element()]
        while True:
            if self.peek().op("."):
                self.take()
                parts.append(self.element())
            elif self.peek().op("["):
                self.take()
                if self.peek().kind != "number":
                    raise self.syntax()
                parts.append(int(self.take().text))
                self.expect("]")
            else:
                return _PathNode(tuple(parts))

    def check_path(self, path: _PathNode) -> None:
        """Update and projection paths may neither overlap nor conflict."""
        for earlier in self.paths:
            for a, b in zip(earlier.parts, path.parts, strict=False):
                if isinstance(a, int) != isinstance(b, int):
                    self.error(
                        "pathConflict",
                        "Two document paths conflict with each other; must remove or rewrite "
                        f"one of these paths; path one: {earlier.text()}, path two: {path.text()}",
                    )
                    break
                if a != b:
                    break
            else:
                self.error(
                    "pathOverlap",
                    "Two document paths overlap with each other; must remove or rewrite one "
                    f"of these paths; path one: {earlier.text()}, path two: {path.text()}",
                )
        self.paths.append(path)

    # --- conditions ---------------------------------------------------------------------

    def condition(self) -> Any:
        node = self.disjunction()
        if self.peek().kind != "eof":
            raise self.syntax()
        self.misused_size(node)
        return node

    def disjunction(self) -> Any:
        node = self.conjunction()
        while self.peek().word("OR"):
            self.take()
            right = self.conjunction()
            self.misused_size(node)
            self.misused_size(right)
            node = _Logic("OR", (node, right))
        return node

    def conjunction(self) -> Any:
        node = self.negation()
        while self.peek().word("AND"):
            self.take()
            right = self.negation()
            self.misused_size(node)
            self.misused_size(right)
            node = _Logic("AND", (node, right))
        return node

    def negation(self) -> Any:
        if self.peek().word("NOT"):
            self.take()
            node = self.primary()
            self.misused_size(node)
            return _Logic("NOT", (node,))
        return self.primary()

    def primary(self) -> Any:
        if self.peek().op("("):
            saved = (
                self.pos,
                dict(self.errors),
                set(self.context.used_names),
                set(self.context.used_values),
                set(self.parenthesized),
            )
            try:
                self.take()
                inner = self.disjunction()
                self.expect(")")
            except _SyntaxError:
                # Not a parenthesized condition: a parenthesized operand, "(a) = :v".
                self.pos, self.errors = saved[0], saved[1]
                self.context.used_names, self.context.used_values = saved[2], saved[3]
                self.parenthesized = saved[4]
            else:
                self.mark_parenthesized(inner)
                return inner
        left = self.operand()
        token = self.peek()
        if token.op("=", "<>", "<", "<=", ">", ">="):
            self.take()
            right = self.operand()
            self.misused(left, right)
            self.distinct(token.text, left, right)
            return _Compare(token.text, left, right)
        if token.word("BETWEEN"):
            self.take()
            low = self.operand()
            if not self.peek().word("AND"):
                raise self.syntax()
            self.take()
            high = self.operand()
            self.misused(left, low, high)
            self.between(low, high)
            return _Between(left, low, high)
        if token.word("IN"):
            self.take()
            self.expect("(")
            options = [self.operand()]
            while self.peek().op(","):
                self.take()
                options.append(self.operand())
            self.expect(")")
            self.misused(left, *options)
            if len(options) > 100:
                # "The list can contain up to 100 values" (OperatorsAndFunctions); the
                # message is the fake's.
                self.error(
                    "function",
                    "The IN operator is provided with too many operands; number of operands: "
                    f"{len(options)}",
                )
            return _In(left, tuple(options))
        if isinstance(left, _Call):
            return left  # a function is a condition
        raise self.syntax()

    def mark_parenthesized(self, node: Any) -> None:
        if id(node) in self.parenthesized:
            self.error("parens", "The expression has redundant parentheses;")
        self.parenthesized.add(id(node))

    def operand(self) -> Any:
        token = self.peek()
        if token.op("("):
            self.take()
            inner = self.operand()
            self.expect(")")
            self.mark_parenthesized(inner)
            return inner
        if token.kind == "value":
            return self.value()
        if (
            token.kind == "ident"
            and self.peek(1).op("(")
            and token.text.upper() not in self.keywords()
        ):
            return self.function()
        if token.kind in ("ident", "name"):
            return self.path()
        raise self.syntax()

    def arguments(self, operand: Callable[[], Any]) -> tuple[Any, ...]:
        self.expect("(")
        args = [operand()]
        while self.peek().op(","):
            self.take()
            args.append(operand())
        self.expect(")")
        return tuple(args)

    def function(self) -> _Call:
        name = self.take().text
        call = _Call(name, self.arguments(self.operand))
        self.misused(*call.args)
        count = _CONDITION_FUNCTIONS.get(name)
        if count is None:
            self.error("unknownFunction", f"Invalid function name; function: {name}")
            return call
        if count != len(call.args):
            self.error(
                "operand",
                "Incorrect number of operands for operator or function; operator or function: "
                f"{name}, number of operands: {len(call.args)}",
            )
            return call
        self.distinct(name, *call.args)
        first = call.args[0]
        if name in ("attribute_exists", "attribute_not_exists") and not isinstance(
            first, _PathNode
        ):
            self.error(
                "function",
                f"Operator or function requires a document path; operator or function: {name}",
            )
        elif name == "begins_with":
            for arg in call.args:
                t = _static_type(arg)
                if t is not None and t not in ("S", "B"):
                    self.incorrect_operand(name, t)
                    break
        elif name == "attribute_type":
            wanted = call.args[1]
            t = _static_type(wanted)
            if t != "S":
                self.incorrect_operand(name, t or "{NS,SS,L,BS,N,M,B,BOOL,NULL,S}")
            elif (
                isinstance(wanted, _ValueNode)
                and wanted.value is not None
                and wanted.value["S"] not in _TYPE_NAMES
            ):
                self.error(
                    "function",
                    f"Invalid attribute type name found; type: {wanted.value['S']}, "
                    "valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}",
                )
        elif name == "size":
            t = _static_type(first)
            if t in ("N", "BOOL", "NULL"):
                self.incorrect_operand(name, t)
        return call

    def incorrect_operand(self, name: str, t: str) -> None:
        self.error(
            "function",
            "Incorrect operand type for operator or function; operator or function: "
            f"{name}, operand type: {t}",
        )

    def misused(self, *args: Any) -> None:
        for arg in args:
            if isinstance(arg, _Call) and arg.name != "size":
                self.error(
                    "misusedFunction",
                    "The function is not allowed to be used this way in an expression; "
                    f"function: {arg.name}",
                )
                return

    def misused_size(self, node: Any) -> None:
        if isinstance(node, _Call) and node.name == "size":
            self.error(
                "misusedFunction",
                "The function is not allowed to be used this way in an expression; function: size",
            )

    def distinct(self, operator: str, *args: Any) -> None:
        # OperatorsAndFunctions: "The path and the operand must be distinct; that is,
        # contains (a, a) will return an error" (and so for comparators).
        if len(args) == 2 and all(isinstance(a, _PathNode) for a in args) and args[0] == args[1]:
            self.error(
                "distinct",
                "The first operand must be distinct from the remaining operands for this "
                f"operator or function; operator: {operator}, first operand: {args[0].text()}",
            )

    def between(self, low: Any, high: Any) -> None:
        if not (isinstance(low, _ValueNode) and isinstance(high, _ValueNode)):
            return
        if low.value is None or high.value is None:
            return
        lt, ht = kind(low.value), kind(high.value)
        if lt != ht:
            self.error(
                "function",
                "The BETWEEN operator requires same data type for lower and upper bounds; "
                f"lower bound operand: {_describe(low.value)}, upper bound operand: "
                f"{_describe(high.value)}",
            )
        elif lt in _SCALARS and _order(low.value) > _order(high.value):
            self.error(
                "function",
                "The BETWEEN operator requires upper bound to be greater than or equal to "
                f"lower bound; lower bound operand: {_describe(low.value)}, upper bound "
                f"operand: {_describe(high.value)}",
            )

    # --- updates ------------------------------------------------------------------------

    def update(self) -> list[_Action]:
        actions: list[_Action] = []
        sections: set[str] = set()
        while self.peek().kind != "eof":
            token = self.peek()
            if not token.word("SET", "REMOVE", "ADD", "DELETE"):
                raise self.syntax()
            self.take()
            clause = token.text.upper()
            if clause in sections:
                self.error(
                    "section",
                    f'The "{clause}" section can only be used once in an update expression;',
                )
            sections.add(clause)
            while True:
                actions.append(self.action(clause))
                if not self.peek().op(","):
                    break
                self.take()
        return actions

    def action(self, clause: str) -> _Action:
        path = self.path()
        if clause == "SET":
            self.expect("=")
            action = _Action(clause, path, self.set_value())
        elif clause == "REMOVE":
            action = _Action(clause, path)
        else:
            if self.peek().kind != "value":
                raise self.syntax()
            value = self.value()
            # ADD takes a number or a set, DELETE a set (the service's words for others).
            t = _static_type(value)
            if t in _OPERAND_TYPE_WORDS and not (clause == "ADD" and t == "N"):
                self.error(
                    "operand",
                    "Incorrect operand type for operator or function; operator: "
                    f"{clause}, operand type: {_OPERAND_TYPE_WORDS[t]}",
                )
            action = _Action(clause, path, value)
        self.check_path(path)
        return action

    def set_value(self) -> Any:
        if self.peek().op("("):
            self.take()
            value = self.set_sum()
            self.expect(")")
            return value
        return self.set_sum()

    def set_sum(self) -> Any:
        left = self.set_operand()
        if self.peek().op("+", "-"):
            op = self.take().text
            right = self.set_operand()
            for arg in (left, right):
                t = _static_type(arg, immediate=True)
                if t is not None and t != "N":
                    self.update_function_error(op, t)
                    break
            return _Arith(op, left, right)
        return left

    def set_operand(self) -> Any:
        if self.peek().op("("):
            self.take()
            operand = self.set_operand()
            self.expect(")")
            return operand
        token = self.peek()
        if token.kind == "value":
            return self.value()
        if (
            token.kind == "ident"
            and self.peek(1).op("(")
            and token.text.upper() not in self.keywords()
        ):
            name = self.take().text
            call = _Call(name, self.arguments(self.set_operand))
            count = _UPDATE_FUNCTIONS.get(name)
            if count is None:
                self.error("unknownFunction", f"Invalid function name; function: {name}")
            elif count != len(call.args):
                self.error(
                    "function",
                    "Incorrect number of operands for operator or function; operator or "
                    f"function: {name}, number of operands: {len(call.args)}",
                )
            elif name == "if_not_exists" and not isinstance(call.args[0], _PathNode):
                self.error(
                    "function",
                    "Operator or function requires a document path; operator or function: "
                    "if_not_exists",
                )
            elif name == "list_append":
                for arg in call.args:
                    t = _static_type(arg, immediate=True)
                    if t is not None and t != "L":
                        self.update_function_error(name, t)
                        break
            return call
        return self.path()

    def update_function_error(self, name: str, t: str) -> None:
        self.error(
            "function",
            "Incorrect operand type for operator or function; operator or function: "
            f"{name}, operand type: {t}",
        )

    # --- projections --------------------------------------------------------------------

    def projection(self) -> list[_PathNode]:
        paths = [self.path()]
        while self.peek().op(","):
            self.take()
            paths.append(self.path())
        if self.peek().kind != "eof":
            raise self.syntax()
        for path in paths:
            self.check_path(path)
        return paths


def _static_type(node: Any, *, immediate: bool = False) -> str | None:
    """The type an operand has before any item is read: a value's, size()'s (N)."""
    if isinstance(node, _ValueNode) and node.value is not None:
        return kind(node.value)
    if not immediate and isinstance(node, _Call) and node.name == "size":
        return "N"
    return None


def _parse(member: str, text: str, context: _Context) -> Any:
    """One expression of a request, or the service's ValidationException for it."""
    grammar = {"UpdateExpression": "update", "ProjectionExpression": "projection"}.get(
        member, "condition"
    )
    if text == "":
        raise _invalid(f"Invalid {member}: The expression can not be empty;")
    try:
        parser = _Parser(text, grammar, context)
        if grammar == "update":
            tree: Any = parser.update()
        elif grammar == "projection":
            tree = parser.projection()
        else:
            tree = parser.condition()
    except _SyntaxError as exc:
        raise _invalid(f"Invalid {member}: {exc}") from None
    message = parser.first_error()
    if message is not None:
        raise _invalid(f"Invalid {member}: {message}")
    return tree


def _paths_of(node: Any) -> Iterator[_PathNode]:
    if isinstance(node, _PathNode):
        yield node
    elif isinstance(node, _Compare | _Arith):
        yield from _paths_of(node.left)
        yield from _paths_of(node.right)
    elif isinstance(node, _Between):
        for arg in (node.operand, node.low, node.high):
            yield from _paths_of(arg)
    elif isinstance(node, _In):
        for arg in (node.operand, *node.options):
            yield from _paths_of(arg)
    elif isinstance(node, _Call | _Logic):
        for arg in node.args:
            yield from _paths_of(arg)
    elif isinstance(node, _Action):
        yield node.path
        yield from _paths_of(node.value)
    elif isinstance(node, list):
        for child in node:
            yield from _paths_of(child)


# --- expressions: evaluation ----------------------------------------------------------------

_MISSING_OPERAND = "The provided expression refers to an attribute that does not exist in the item"
_BAD_OPERAND = "An operand in the update expression has an incorrect data type"
_BAD_PATH = "The document path provided in the update expression is invalid for update"


def _lookup(item: Mapping[str, Wire], parts: Path) -> Wire | None:
    current: Wire | None = {"M": item}
    for part in parts:
        if current is None:
            return None
        if isinstance(part, int):
            elements = current.get("L")
            current = elements[part] if elements is not None and part < len(elements) else None
        else:
            members = current.get("M")
            current = members.get(part) if members is not None else None
    return current


def _size(value: Wire | None) -> Wire | None:
    """size(): a string's length, a binary's bytes, a set's, list's or map's members."""
    if value is None:
        return None
    t = kind(value)
    if t == "S":
        length = len(value["S"].encode("utf-16-le")) // 2  # Java's String.length()
    elif t == "B":
        length = len(base64.b64decode(value["B"]))
    elif t in _SETS or t in ("L", "M"):
        length = len(value[t])
    else:
        return None
    return {"N": str(length)}


def _operand(node: Any, item: Mapping[str, Wire]) -> Wire | None:
    if isinstance(node, _PathNode):
        return _lookup(item, node.parts)
    if isinstance(node, _ValueNode):
        return node.value
    if isinstance(node, _Call) and node.name == "size":
        return _size(_operand(node.args[0], item))
    return None


def _holds(node: Any, item: Mapping[str, Wire]) -> bool:
    """Whether a condition (or filter) holds for an item ({} when there is none)."""
    if isinstance(node, _Logic):
        if node.op == "NOT":
            return not _holds(node.args[0], item)
        results = (_holds(arg, item) for arg in node.args)
        return all(results) if node.op == "AND" else any(results)
    if isinstance(node, _Compare):
        return _compare(_operand(node.left, item), node.op, _operand(node.right, item))
    if isinstance(node, _Between):
        value = _operand(node.operand, item)
        return _compare(value, ">=", _operand(node.low, item)) and _compare(
            value, "<=", _operand(node.high, item)
        )
    if isinstance(node, _In):
        value = _operand(node.operand, item)
        return any(_compare(value, "=", _operand(option, item)) for option in node.options)
    assert isinstance(node, _Call)
    return _holds_function(node, item)


def _holds_function(node: _Call, item: Mapping[str, Wire]) -> bool:
    value = _operand(node.args[0], item)
    if node.name == "attribute_exists":
        return value is not None
    if node.name == "attribute_not_exists":
        return value is None
    other = _operand(node.args[1], item)
    if value is None or other is None:
        return False
    if node.name == "attribute_type":
        return kind(other) == "S" and kind(value) == other["S"]
    if node.name == "begins_with":
        if kind(value) != kind(other) or kind(value) not in ("S", "B"):
            return False
        return bool(_order(value).startswith(_order(other)))
    # contains: a substring of a string, a member of a set, an element of a list.
    t = kind(value)
    if t == "S":
        return kind(other) == "S" and other["S"] in value["S"]
    if t in _SETS:
        return kind(other) == _SETS[t] and other[kind(other)] in value[t]
    if t == "L":
        return any(same(element, other) for element in value["L"])
    return False


def _project(item: Mapping[str, Wire], paths: Sequence[_PathNode]) -> Item:
    """The parts of an item a projection names, nested as in the item; list elements keep
    their order (ProjectionExpressions.html)."""
    root: dict[str, Any] = {"M": {}}
    for path in paths:
        value = _lookup(item, path.parts)
        if value is None:
            continue
        node = root
        for position, part in enumerate(path.parts):
            children = node.setdefault("L" if isinstance(part, int) else "M", {})
            if position == len(path.parts) - 1:
                children[part] = copy.deepcopy(value)
            else:
                node = children.setdefault(part, {})
    projected: Item = _squash(root)["M"]
    return projected


def _squash(node: Wire) -> Wire:
    """Lists built by `_project` (index -> element) as lists."""
    if isinstance(node.get("L"), dict):
        return {"L": [_squash(node["L"][i]) for i in sorted(node["L"])]}
    if isinstance(node.get("M"), dict):
        return {"M": {k: _squash(v) for k, v in node["M"].items()}}
    return node


def _resolve(node: Any, item: Mapping[str, Wire]) -> Wire:
    """A SET value, read from the item as it was before the update."""
    if isinstance(node, _PathNode):
        value = _lookup(item, node.parts)
        if value is None:
            raise _invalid(_MISSING_OPERAND)
        return copy.deepcopy(value)
    if isinstance(node, _ValueNode):
        assert node.value is not None
        return copy.deepcopy(node.value)
    if isinstance(node, _Arith):
        left, right = _resolve(node.left, item), _resolve(node.right, item)
        if kind(left) != "N" or kind(right) != "N":
            raise _invalid(_BAD_OPERAND)
        a, b = Decimal(left["N"]), Decimal(right["N"])
        result = _DECIMALS.add(a, b) if node.op == "+" else _DECIMALS.subtract(a, b)
        try:
            return {"N": _canonical(result)}
        except _BadValueError as exc:
            raise _invalid(str(exc)) from None
    assert isinstance(node, _Call)
    if node.name == "if_not_exists":
        existing = _lookup(item, node.args[0].parts)
        return copy.deepcopy(existing) if existing is not None else _resolve(node.args[1], item)
    first, second = _resolve(node.args[0], item), _resolve(node.args[1], item)
    if kind(first) != "L" or kind(second) != "L":
        raise _invalid(_BAD_OPERAND)
    return {"L": first["L"] + second["L"]}


@dataclass
class _ListEdits:
    """List elements removed or appended by an update, applied once all actions ran so
    that every index refers to the list as it was (Expressions.UpdateExpressions.html)."""

    removed: dict[int, tuple[list[Wire], set[int]]] = field(default_factory=dict)
    appended: dict[int, tuple[list[Wire], list[tuple[int, Wire]]]] = field(default_factory=dict)

    def finish(self) -> None:
        for elements, indexes in self.removed.values():
            for index in sorted(indexes, reverse=True):
                del elements[index]
        for elements, extra in self.appended.values():
            elements.extend(value for _, value in sorted(extra, key=lambda pair: pair[0]))


def _put(parent: Wire, part: Part, value: Wire, edits: _ListEdits) -> None:
    if isinstance(part, str):
        parent["M"][part] = value
        return
    elements: list[Wire] = parent["L"]
    if part < len(elements):
        elements[part] = value
    else:  # "If the element does not already exist, SET will append the new element"
        edits.appended.setdefault(id(elements), (elements, []))[1].append((part, value))


def _drop(parent: Wire, part: Part, edits: _ListEdits) -> None:
    if isinstance(part, str):
        parent["M"].pop(part, None)
        return
    elements: list[Wire] = parent["L"]
    if part < len(elements):
        edits.removed.setdefault(id(elements), (elements, set()))[1].add(part)


def _add_or_delete(
    action: _Action, parent: Wire, last: Part, existing: Wire | None, edits: _ListEdits
) -> None:
    """ADD adds a number or set members (to 0 or an empty set when absent), DELETE
    removes set members (Expressions.UpdateExpressions.html)."""
    value: Wire = action.value.value
    t = kind(value)
    if existing is not None and kind(existing) != t:
        raise _invalid(_BAD_OPERAND)
    if action.clause == "ADD":
        if existing is None:
            _put(parent, last, copy.deepcopy(value), edits)
        elif t == "N":
            total = _DECIMALS.add(Decimal(existing["N"]), Decimal(value["N"]))
            try:
                existing["N"] = _canonical(total)
            except _BadValueError as exc:
                raise _invalid(str(exc)) from None
        else:
            existing[t] = existing[t] + [m for m in value[t] if m not in existing[t]]
    elif existing is not None:  # DELETE
        left = [m for m in existing[t] if m not in value[t]]
        if left:
            existing[t] = left
        else:  # an emptied set is removed (sets cannot be empty)
            _drop(parent, last, edits)


def _apply(actions: Sequence[_Action], base: Mapping[str, Wire]) -> Item:
    """The item after an update expression (values read from `base`, the item before)."""
    values = {id(a): _resolve(a.value, base) for a in actions if a.clause == "SET"}
    item: Item = copy.deepcopy(dict(base))
    edits = _ListEdits()
    for action in actions:
        *head, last = action.path.parts
        parent = _lookup(item, tuple(head))
        if parent is None or ("L" if isinstance(last, int) else "M") not in parent:
            raise _invalid(_BAD_PATH)
        existing = _lookup(item, action.path.parts)
        if action.clause == "SET":
            _put(parent, last, values[id(action)], edits)
        elif action.clause == "REMOVE":
            _drop(parent, last, edits)
        else:
            _add_or_delete(action, parent, last, existing, edits)
    edits.finish()
    return item


@dataclass(frozen=True)
class _KeyCondition:
    attribute: str
    op: str  # =, <, <=, >, >=, BETWEEN, begins_with
    values: tuple[Wire, ...]


_FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _key_conditions(tree: Any) -> dict[str, _KeyCondition]:
    """A KeyConditionExpression as one condition per key attribute, refused in the
    service's words when it is not one (dynalite's tested messages)."""
    found: dict[str, _KeyCondition] = {}
    pending = [tree]
    while pending:
        node = pending.pop(0)
        if isinstance(node, _Logic) and node.op == "AND":
            pending[:0] = node.args
            continue
        _refuse_key_operator(node)
        condition = _key_condition(node)
        if condition.attribute in found:
            raise _invalid("KeyConditionExpressions must only contain one condition per key")
        found[condition.attribute] = condition
    return found


def _refuse_key_operator(node: Any) -> None:
    if isinstance(node, _Logic):
        raise _invalid(f"Invalid operator used in KeyConditionExpression: {node.op}")
    if isinstance(node, _In):
        raise _invalid("Invalid operator used in KeyConditionExpression: IN")
    if isinstance(node, _Compare) and node.op == "<>":
        raise _invalid("Invalid operator used in KeyConditionExpression: <>")
    if isinstance(node, _Call) and node.name == "size":
        raise _invalid("KeyConditionExpressions cannot contain nested operations")
    if isinstance(node, _Call) and node.name != "begins_with":
        raise _invalid(f"Invalid operator used in KeyConditionExpression: {node.name}")
    if isinstance(node, _Between):
        first, operator = node.operand, "BETWEEN"
    elif isinstance(node, _Call):
        first, operator = node.args[0], "begins_with"
    else:
        return
    if not isinstance(first, _PathNode):
        raise _invalid(
            f"Invalid condition in KeyConditionExpression: {operator} operator must have "
            "the key attribute as its first operand"
        )


def _key_condition(node: _Compare | _Between | _Call) -> _KeyCondition:
    if isinstance(node, _Compare):
        args: tuple[Any, ...] = (node.left, node.right)
    elif isinstance(node, _Between):
        args = (node.operand, node.low, node.high)
    else:
        args = node.args
    path: _PathNode | None = None
    position = 0
    for index, arg in enumerate(args):
        if isinstance(arg, _PathNode):
            if path is not None:
                raise _invalid(
                    "Invalid condition in KeyConditionExpression: Multiple attribute names "
                    "used in one condition"
                )
            if len(arg.parts) > 1:
                raise _invalid(
                    "KeyConditionExpressions cannot have conditions on nested attributes"
                )
            path, position = arg, index
        elif isinstance(arg, _Call):
            raise _invalid("KeyConditionExpressions cannot contain nested operations")
    if path is None:
        raise _invalid("Invalid condition in KeyConditionExpression: No key attribute specified")
    values = tuple(a.value for a in args if isinstance(a, _ValueNode) and a.value is not None)
    if isinstance(node, _Compare):
        # ":v < sk" reads as "sk > :v"
        op = node.op if position == 0 else _FLIPPED[node.op]
    else:
        op = "BETWEEN" if isinstance(node, _Between) else "begins_with"
    return _KeyCondition(str(path.parts[0]), op, values)


def _sort_matches(condition: _KeyCondition, value: Wire) -> bool:
    if condition.op == "BETWEEN":
        low, high = condition.values
        return _compare(value, ">=", low) and _compare(value, "<=", high)
    if condition.op == "begins_with":
        prefix = condition.values[0]
        return kind(prefix) == kind(value) and bool(_order(value).startswith(_order(prefix)))
    return _compare(value, condition.op, condition.values[0])


# --- tables -------------------------------------------------------------------------------


@dataclass
class _Table:
    name: str
    schema: tuple[tuple[str, str], ...]  # (attribute, type), the partition key first
    created: datetime
    table_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    items: dict[Key, Item] = field(default_factory=dict)
    # Each item's version before its latest write (None: it did not exist), which an
    # eventually consistent read may still see.
    earlier: dict[Key, Item | None] = field(default_factory=dict)

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.schema)

    def key(self, item: Mapping[str, Wire]) -> Key:
        return tuple(_order(item[name]) for name, _ in self.schema)

    def write(self, key: Key, item: Item | None) -> None:
        self.earlier[key] = copy.deepcopy(self.items.get(key))
        if item is None:
            self.items.pop(key, None)
        else:
            self.items[key] = copy.deepcopy(item)

    def view(self, *, stale: bool) -> dict[Key, Item]:
        if not stale:
            return self.items
        seen = dict(self.items)
        for key, before in self.earlier.items():
            if before is None:
                seen.pop(key, None)
            else:
                seen[key] = before
        return seen


def _key_size_error(table: _Table, key: Mapping[str, Wire]) -> None:
    (partition, _), *rest = table.schema
    if _value_size(key[partition]) > MAX_PARTITION_KEY_BYTES:
        raise _invalid(
            _INVALID + "Size of hashkey has exceeded the maximum size limit of2048 bytes"
        )
    if rest and _value_size(key[rest[0][0]]) > MAX_SORT_KEY_BYTES:
        raise _invalid(
            _INVALID + "Aggregated size of all range keys has exceeded the size limit of 1024 bytes"
        )


def _empty_key_word(value: Wire) -> str | None:
    t = kind(value)
    if value[t] == "" and t in ("S", "B"):
        return "string" if t == "S" else "binary"
    return None


def _key_of(table: _Table, key: Mapping[str, Wire]) -> Key:
    """The primary key a Key names: exactly the key attributes, of the schema's types."""
    if len(key) != len(table.schema) or any(
        name not in key or kind(key[name]) != t for name, t in table.schema
    ):
        raise _invalid("The provided key element does not match the schema")
    for name, _ in table.schema:
        word = _empty_key_word(key[name])
        if word is not None:
            raise _invalid(
                _INVALID + f"The AttributeValue for a key attribute cannot contain an empty "
                f"{word} value. Key: {name}"
            )
    _key_size_error(table, key)
    return table.key(key)


def _key_of_item(table: _Table, item: Mapping[str, Wire]) -> Key:
    """The primary key of an item to put (the service's words differ from `_key_of`)."""
    for name, t in table.schema:
        if name not in item:
            raise _invalid(_INVALID + f"Missing the key {name} in the item")
        if kind(item[name]) != t:
            raise _invalid(
                _INVALID + f"Type mismatch for key {name} expected: {t} actual: {kind(item[name])}"
            )
        word = _empty_key_word(item[name])
        if word is not None:
            raise _invalid(
                "One or more parameter values are not valid. The AttributeValue for a key "
                f"attribute cannot contain an empty {word} value. Key: {name}"
            )
    _key_size_error(table, item)
    return table.key(item)


def _scalar_keys(table: _Table, tree: Any) -> None:
    for path in _paths_of(tree):
        if len(path.parts) > 1 and path.parts[0] in table.key_names:
            raise _invalid(
                "Key attributes must be scalars; list random access '[]' and map lookup '.' "
                f"are not allowed: Key: {path.parts[0]}"
            )


# --- requests -------------------------------------------------------------------------------

_TABLE_ARN = re.compile(r"arn:aws:dynamodb:([a-z0-9-]+):(\d{12}):table/([a-zA-Z0-9_.-]{3,255})")
_NAME_KEY = re.compile(r"#[0-9a-zA-Z_]+")
_VALUE_KEY = re.compile(r":[0-9a-zA-Z_]+")
# DynamoDB's condition keys the fake does not compute (list_amazondynamodb.html); IAM
# cannot evaluate a condition on them here, so such an Allow never applies.
_UNMODELLED_KEYS = (
    "dynamodb:Attributes",
    "dynamodb:EnclosingOperation",
    "dynamodb:FirstPartitionKeyValues",
    "dynamodb:FullTableScan",
    "dynamodb:ReturnConsumedCapacity",
    "dynamodb:ReturnValues",
    "dynamodb:Select",
)


def _expression_params(
    params: Mapping[str, Any], expressions: Sequence[str], legacy: Sequence[str]
) -> None:
    """Expressions and legacy parameters do not mix, and placeholders need expressions
    (dynalite's validateExpressionParams, in the service's words)."""
    used = [e for e in expressions if e in params]
    old = [p for p in legacy if p in params]
    if used and old:
        raise _invalid(
            "Can not use both expression and non-expression parameters in the same request: "
            f"Non-expression parameters: {{{', '.join(old)}}} "
            f"Expression parameters: {{{', '.join(used)}}}"
        )
    if "ExpressionAttributeNames" in params and not used:
        raise _invalid("ExpressionAttributeNames can only be specified when using expressions")
    with_values = [e for e in expressions if e != "ProjectionExpression"]
    if (
        "ExpressionAttributeValues" in params
        and with_values
        and not any(e in params for e in with_values)
    ):
        verb = "are" if len(with_values) > 1 else "is"
        raise _invalid(
            "ExpressionAttributeValues can only be specified when using expressions: "
            f"{' and '.join(with_values)} {verb} null"
        )
    if old:
        raise _unsupported(f"the legacy parameter {old[0]} (use expressions)")


# The order in which the service parses (and so refuses) a request's expressions.
_EXPRESSION_ORDER = (
    "UpdateExpression",
    "ConditionExpression",
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
)


def _expressions(params: Mapping[str, Any], members: Sequence[str]) -> dict[str, Any]:
    """The request's expressions parsed, after its placeholders are checked; every
    placeholder defined must be used (dynalite's validateExpressions)."""
    names = params.get("ExpressionAttributeNames")
    raw_values = params.get("ExpressionAttributeValues")
    if names is not None:
        if not names:
            raise _invalid("ExpressionAttributeNames must not be empty")
        for name in names:
            if not _NAME_KEY.fullmatch(name):
                raise _invalid(
                    f'ExpressionAttributeNames contains invalid key: Syntax error; key: "{name}"'
                )
    values: dict[str, Wire] = {}
    if raw_values is not None:
        if not raw_values:
            raise _invalid("ExpressionAttributeValues must not be empty")
        for name in raw_values:
            if not _VALUE_KEY.fullmatch(name):
                raise _invalid(
                    f'ExpressionAttributeValues contains invalid key: Syntax error; key: "{name}"'
                )
        for name, value in raw_values.items():
            try:
                values[name] = checked(value)
            except _BadValueError as exc:
                raise _invalid(
                    f"ExpressionAttributeValues contains invalid value: {exc} for key {name}"
                ) from None
    context = _Context(dict(names or {}), values)
    trees = {
        member: _parse(member, str(params[member]), context)
        for member in _EXPRESSION_ORDER
        if member in members and member in params
    }
    unused_names = [n for n in names or {} if n not in context.used_names]
    if unused_names:
        raise _invalid(
            "Value provided in ExpressionAttributeNames unused in expressions: "
            f"keys: {{{', '.join(unused_names)}}}"
        )
    unused_values = [v for v in values if v not in context.used_values]
    if unused_values:
        raise _invalid(
            "Value provided in ExpressionAttributeValues unused in expressions: "
            f"keys: {{{', '.join(unused_values)}}}"
        )
    return trees


def _start_key(raw: Mapping[str, Any]) -> Item:
    try:
        return {name: checked(value) for name, value in raw.items()}
    except _BadValueError as exc:
        message = str(exc)
        # The service prefixes only some of these (dynalite's tests record which).
        tagged = re.search(
            "contains duplicates|number set|numeric value|significant digits|number with magnitude",
            message,
        )
        raise _invalid(
            message if tagged else f"The provided starting key is invalid: {message}"
        ) from None


def _page(
    table: _Table,
    found: Sequence[Item],
    params: Mapping[str, Any],
    filter_tree: Any,
    projection: Sequence[_PathNode] | None,
) -> dict[str, Any]:
    """One page of a Query: Limit counts the items evaluated, matching the filter or not,
    and a page stops at 1 MB; a page that stopped returns the last evaluated key, also
    when no item follows (API_Query.html: Limit; dynalite's queryTable). `_bytes` is
    the size read, for the consumed capacity."""
    limit = params.get("Limit")
    evaluated, size = 0, 0
    matched: list[Item] = []
    last: Item | None = None
    stopped = False
    for item in found:
        evaluated += 1
        size += item_size(item)
        last = item
        if filter_tree is None or _holds(filter_tree, item):
            matched.append(item)
        if (limit is not None and evaluated >= limit) or size >= PAGE_BYTES:
            stopped = True
            break
    answer: dict[str, Any] = {}
    if params.get("Select") != "COUNT":
        answer["Items"] = [
            _project(i, projection) if projection else copy.deepcopy(i) for i in matched
        ]
    answer["Count"] = len(matched)
    answer["ScannedCount"] = evaluated
    if stopped and last is not None:
        answer["LastEvaluatedKey"] = {n: copy.deepcopy(last[n]) for n in table.key_names}
    answer["_bytes"] = size
    return answer


def _leading_key(value: Wire) -> str:
    return str(value[kind(value)])


class FakeDynamoDB:
    """DynamoDB tables of one account and region; see the module docstring.

    `account` may be a callable, read at each call (the plane's account can change).
    """

    def __init__(
        self,
        *,
        account: str | Callable[[], str] = "123456789012",
        region: str = "us-east-1",
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._account = account if callable(account) else (lambda: str(account))
        self.region = region
        self._now = now or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self.tables: dict[str, _Table] = {}
        self.violations: list[str] = []
        self._stale_reads = 0
        self._rivals: dict[str, deque[tuple[str, Item]]] = {}

    @property
    def account(self) -> str:
        return self._account()

    # --- scripting ----------------------------------------------------------------------

    def create_table(
        self,
        name: str,
        *,
        partition_key: str,
        sort_key: str | None = None,
        partition_key_type: str = "S",
        sort_key_type: str = "S",
    ) -> str:
        """An ACTIVE on-demand table with this primary key; returns its ARN."""
        if not re.fullmatch(r"[a-zA-Z0-9_.-]{3,255}", name):
            raise ValueError(f"not a DynamoDB table name: {name!r}")
        if {partition_key_type, sort_key_type} - set(_SCALARS):
            raise ValueError("key attributes are of type S, N or B")
        schema: tuple[tuple[str, str], ...] = ((partition_key, partition_key_type),)
        if sort_key is not None:
            schema += ((sort_key, sort_key_type),)
        with self._lock:
            if name in self.tables:
                raise ValueError(f"table {name} exists")
            self.tables[name] = _Table(name, schema, self._now())
        return self.table_arn(name)

    def table_arn(self, name: str) -> str:
        return f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}"

    def put_raw(self, table: str, item: Mapping[str, Any], *, settled: bool = False) -> None:
        """Store an item given in plain Python values (see `wire`), checked as PutItem
        checks it. It is the item's latest write: a stale read sees the version before,
        unless `settled` (every replica has it)."""
        with self._lock:
            self._put_raw(table, {name: wire(value) for name, value in item.items()}, settled)

    def _table(self, name: str) -> _Table:
        table = self.tables.get(name)
        if table is None:
            raise KeyError(f"no table {name!r} (create_table first)")
        return table

    def _put_raw(self, table_name: str, item: Item, settled: bool) -> None:
        table = self._table(table_name)
        checked_item = _checked_attributes(item)
        key = _key_of_item(table, checked_item)
        table.write(key, checked_item)
        if settled:
            table.earlier.pop(key, None)

    def stale_reads(self, count: int) -> None:
        """The next `count` GetItem or Query calls without ConsistentRead=True answer
        from each item's version before its latest write."""
        with self._lock:
            self._stale_reads = count

    def rival_put(self, operation: str, table: str, item: Mapping[str, Any]) -> None:
        """Another writer puts `item` (plain values) just before the next `operation`
        call is worked, as a concurrent writer would."""
        with self._lock:
            wired = {name: wire(value) for name, value in item.items()}
            self._rivals.setdefault(operation, deque()).append((table, wired))

    # --- inspection ---------------------------------------------------------------------

    def items(self, table: str) -> list[dict[str, Any]]:
        """A table's items (latest versions) in key order, as plain Python values."""
        with self._lock:
            stored = self._table(table).items
            return [plain_item(stored[key]) for key in sorted(stored)]

    def item(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """One item by its key attributes (plain values), or None."""
        with self._lock:
            found = self._table(table)
            stored = found.items.get(found.key({k: wire(v) for k, v in key.items()}))
            return None if stored is None else plain_item(stored)

    # --- serving ------------------------------------------------------------------------

    def handle(
        self, operation: str, params: dict[str, Any], *, principal: iam.Principal | None = None
    ) -> Answer:
        with self._lock:
            try:
                payload = self._serve(operation, params, principal)
            except DynamoDBError as exc:
                return error_answer(exc.code, exc.message, exc.status, exc.members)
            self.violations.extend(
                f"{operation} answer: {error}"
                for error in service_model.json_output_errors(SERVICE, operation, payload)
            )
            return _answer(200, payload)

    def _serve(
        self, operation: str, params: dict[str, Any], principal: iam.Principal | None
    ) -> dict[str, Any]:
        rivals = self._rivals.get(operation)
        if rivals:
            table, item = rivals.popleft()
            self._put_raw(table, item, settled=False)
        handler = _HANDLERS.get(operation)
        if handler is None:
            if operation in service_model.service_model(SERVICE).operation_names:
                raise _unsupported(f"DynamoDB {operation}")
            raise DynamoDBError(
                "UnknownOperationException",
                f"{FAKE} {operation!r}, which is no DynamoDB operation.",
            )
        errors = service_model.json_input_errors(SERVICE, operation, params)
        if errors:
            raise _invalid(service_model.validation_message(errors))
        return handler(self, params, principal)

    def _table_name(self, given: str) -> tuple[str, str]:
        """The table's name and ARN; TableName may be either (API_GetItem.html)."""
        if given.startswith("arn:"):
            match = _TABLE_ARN.fullmatch(given)
            if match is None:
                raise _invalid(f"Invalid TableName: {given} is no table ARN (the fake's words)")
            return match.group(3), given
        errors = []
        if not re.fullmatch(r"[a-zA-Z0-9_.-]+", given):
            errors.append(
                f"Value '{given}' at 'tableName' failed to satisfy constraint: Member must "
                "satisfy regular expression pattern: [a-zA-Z0-9_.-]+"
            )
        if len(given) < 3:
            errors.append(
                f"Value '{given}' at 'tableName' failed to satisfy constraint: Member must "
                "have length greater than or equal to 3"
            )
        if len(given) > 255:
            errors.append(
                f"Value '{given}' at 'tableName' failed to satisfy constraint: Member must "
                "have length less than or equal to 255"
            )
        if errors:
            raise _invalid(service_model.validation_message(errors))
        return given, self.table_arn(given)

    def _existing(self, name: str, arn: str) -> _Table:
        table = self.tables.get(name)
        if table is None or arn != self.table_arn(name):
            raise DynamoDBError("ResourceNotFoundException", "Requested resource not found")
        return table

    def _authorize(
        self,
        principal: iam.Principal | None,
        operation: str,
        arn: str,
        leading_keys: tuple[str, ...] | None,
    ) -> None:
        """IAM's decision for `dynamodb:<Operation>` on the table (specifying-conditions
        .html: dynamodb:LeadingKeys holds the partition key values the request touches)."""
        if principal is None:
            return
        context: dict[str, str | tuple[str, ...]] = {}
        if leading_keys is not None:
            context["dynamodb:LeadingKeys"] = leading_keys
        request = iam.Request(f"dynamodb:{operation}", arn, context, unmodelled=_UNMODELLED_KEYS)
        decision = iam.authorize(principal.statements, request)
        if decision != "allowed":
            raise DynamoDBError(
                "AccessDeniedException",
                iam.denial_message(self.account, principal, request, decision),
            )

    @staticmethod
    def _leading(table: _Table | None, attributes: Mapping[str, Wire]) -> tuple[str, ...] | None:
        if table is None or table.schema[0][0] not in attributes:
            return None
        return (_leading_key(attributes[table.schema[0][0]]),)

    def _stale(self, consistent: bool) -> bool:
        if consistent or self._stale_reads <= 0:
            return False
        self._stale_reads -= 1
        return True

    @staticmethod
    def _check_condition(params: Mapping[str, Any], condition: Any, old: Item | None) -> None:
        if condition is None or _holds(condition, old or {}):
            return
        members: dict[str, Any] = {}
        # "returns the item attributes for an operation that failed a condition check"
        # (ReturnValuesOnConditionCheckFailure; the error's Item member).
        if params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old is not None:
            members["Item"] = copy.deepcopy(old)
        raise DynamoDBError(
            "ConditionalCheckFailedException", "The conditional request failed", members=members
        )

    @staticmethod
    def _consumed(params: Mapping[str, Any], table: _Table, units: float) -> dict[str, Any]:
        mode = params.get("ReturnConsumedCapacity", "NONE")
        if mode == "NONE":
            return {}
        consumed: dict[str, Any] = {"TableName": table.name, "CapacityUnits": units}
        if mode == "INDEXES":
            consumed["Table"] = {"CapacityUnits": units}
        return {"ConsumedCapacity": consumed}

    # --- operations ---------------------------------------------------------------------

    def _get_item(self, params: dict[str, Any], principal: iam.Principal | None) -> dict[str, Any]:
        name, arn = self._table_name(params["TableName"])
        _expression_params(params, ("ProjectionExpression",), ("AttributesToGet",))
        key = _checked_attributes(params["Key"])
        trees = _expressions(params, ("ProjectionExpression",))
        self._authorize(principal, "GetItem", arn, self._leading(self.tables.get(name), key))
        table = self._existing(name, arn)
        key_value = _key_of(table, key)
        projection = trees.get("ProjectionExpression")
        _scalar_keys(table, projection)
        consistent = params.get("ConsistentRead") is True
        item = table.view(stale=self._stale(consistent)).get(key_value)
        answer: dict[str, Any] = {}
        if item is not None:
            answer["Item"] = _project(item, projection) if projection else copy.deepcopy(item)
        units = math.ceil(item_size(item) / 4096) if item is not None else 1
        answer.update(self._consumed(params, table, units * (1.0 if consistent else 0.5)))
        return answer

    def _put_item(self, params: dict[str, Any], principal: iam.Principal | None) -> dict[str, Any]:
        name, arn = self._table_name(params["TableName"])
        _expression_params(params, ("ConditionExpression",), ("Expected", "ConditionalOperator"))
        item = _checked_attributes(params["Item"])
        returns = params.get("ReturnValues", "NONE")
        if returns not in ("NONE", "ALL_OLD"):
            raise _invalid("ReturnValues can only be ALL_OLD or NONE")
        if item_size(item) > MAX_ITEM_BYTES:
            raise _invalid("Item size has exceeded the maximum allowed size")
        trees = _expressions(params, ("ConditionExpression",))
        self._authorize(principal, "PutItem", arn, self._leading(self.tables.get(name), item))
        table = self._existing(name, arn)
        key = _key_of_item(table, item)
        condition = trees.get("ConditionExpression")
        _scalar_keys(table, condition)
        old = table.items.get(key)
        self._check_condition(params, condition, old)
        table.write(key, item)
        answer: dict[str, Any] = {}
        if returns == "ALL_OLD" and old is not None:
            answer["Attributes"] = copy.deepcopy(old)
        size = max(item_size(item), item_size(old or {}))
        answer.update(self._consumed(params, table, float(max(1, math.ceil(size / 1024)))))
        return answer

    def _update_item(
        self, params: dict[str, Any], principal: iam.Principal | None
    ) -> dict[str, Any]:
        name, arn = self._table_name(params["TableName"])
        _expression_params(
            params,
            ("UpdateExpression", "ConditionExpression"),
            ("AttributeUpdates", "Expected", "ConditionalOperator"),
        )
        key = _checked_attributes(params["Key"])
        trees = _expressions(params, ("UpdateExpression", "ConditionExpression"))
        self._authorize(principal, "UpdateItem", arn, self._leading(self.tables.get(name), key))
        table = self._existing(name, arn)
        key_value = _key_of(table, key)
        actions: list[_Action] = trees.get("UpdateExpression") or []
        for key_name in table.key_names:
            if any(action.path.parts[0] == key_name for action in actions):
                raise _invalid(
                    _INVALID
                    + f"Cannot update attribute {key_name}. This attribute is part of the key"
                )
        condition = trees.get("ConditionExpression")
        _scalar_keys(table, condition)
        old = table.items.get(key_value)
        self._check_condition(params, condition, old)
        # "Edits an existing item's attributes, or adds a new item to the table if it
        # does not already exist" (API_UpdateItem.html).
        new = _apply(actions, old if old is not None else key)
        if item_size(new) > MAX_ITEM_BYTES:
            raise _invalid("Item size to update has exceeded the maximum allowed size")
        table.write(key_value, new)
        returns = params.get("ReturnValues", "NONE")
        targets = [action.path for action in actions]
        attributes: Item | None = None
        if returns == "ALL_OLD":
            attributes = old
        elif returns == "ALL_NEW":
            attributes = new
        elif returns == "UPDATED_OLD" and old is not None:
            attributes = _project(old, targets)
        elif returns == "UPDATED_NEW":
            attributes = _project(new, targets)
        answer: dict[str, Any] = {}
        if attributes:
            answer["Attributes"] = copy.deepcopy(attributes)
        size = max(item_size(new), item_size(old or {}))
        answer.update(self._consumed(params, table, float(max(1, math.ceil(size / 1024)))))
        return answer

    def _delete_item(
        self, params: dict[str, Any], principal: iam.Principal | None
    ) -> dict[str, Any]:
        name, arn = self._table_name(params["TableName"])
        _expression_params(params, ("ConditionExpression",), ("Expected", "ConditionalOperator"))
        key = _checked_attributes(params["Key"])
        returns = params.get("ReturnValues", "NONE")
        if returns not in ("NONE", "ALL_OLD"):
            raise _invalid("ReturnValues can only be ALL_OLD or NONE")
        trees = _expressions(params, ("ConditionExpression",))
        self._authorize(principal, "DeleteItem", arn, self._leading(self.tables.get(name), key))
        table = self._existing(name, arn)
        key_value = _key_of(table, key)
        condition = trees.get("ConditionExpression")
        _scalar_keys(table, condition)
        old = table.items.get(key_value)
        self._check_condition(params, condition, old)
        if old is not None:
            table.write(key_value, None)
        answer: dict[str, Any] = {}
        if returns == "ALL_OLD" and old is not None:
            answer["Attributes"] = copy.deepcopy(old)
        size = item_size(old or {})
        answer.update(self._consumed(params, table, float(max(1, math.ceil(size / 1024)))))
        return answer

    def _query(self, params: dict[str, Any], principal: iam.Principal | None) -> dict[str, Any]:
        name, arn = self._table_name(params["TableName"])
        _expression_params(
            params,
            ("ProjectionExpression", "FilterExpression", "KeyConditionExpression"),
            ("AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions"),
        )
        start = _start_key(params["ExclusiveStartKey"]) if "ExclusiveStartKey" in params else None
        if "KeyConditionExpression" not in params:
            raise _invalid(
                "Either the KeyConditions or KeyConditionExpression parameter must be "
                "specified in the request."
            )
        trees = _expressions(
            params, ("KeyConditionExpression", "FilterExpression", "ProjectionExpression")
        )
        conditions = _key_conditions(trees["KeyConditionExpression"])
        if "IndexName" in params:
            raise _unsupported("IndexName (secondary indexes)")
        select = params.get("Select")
        projection = trees.get("ProjectionExpression")
        if select == "ALL_PROJECTED_ATTRIBUTES":
            raise _unsupported("Select ALL_PROJECTED_ATTRIBUTES (it needs an index)")
        # "If you use the ProjectionExpression parameter, then the value for Select can
        # only be SPECIFIC_ATTRIBUTES" (API_Query.html); the words are the fake's.
        if projection is not None and select not in (None, "SPECIFIC_ATTRIBUTES"):
            raise _invalid(f"Select {select} cannot be used with a ProjectionExpression")
        if select == "SPECIFIC_ATTRIBUTES" and projection is None:
            raise _invalid("Select SPECIFIC_ATTRIBUTES needs a ProjectionExpression")
        known = self.tables.get(name)
        leading = None
        if known is not None and known.schema[0][0] in conditions:
            leading = tuple(_leading_key(v) for v in conditions[known.schema[0][0]].values)
        self._authorize(principal, "Query", arn, leading)
        table = self._existing(name, arn)
        partition = self._check_key_conditions(table, conditions)
        filter_tree = trees.get("FilterExpression")
        heads = {path.parts[0] for path in _paths_of(filter_tree)}
        for key_name in table.key_names:
            if key_name in heads:
                raise _invalid(
                    "Filter Expression can only contain non-primary key attributes: "
                    f"Primary key attribute: {key_name}"
                )
        _scalar_keys(table, projection)
        sort = table.schema[1][0] if len(table.schema) > 1 else None
        sort_condition = conditions.get(sort) if sort is not None else None
        if start is not None:
            self._check_start_key(table, start, partition, sort_condition)
        consistent = params.get("ConsistentRead") is True
        view = table.view(stale=self._stale(consistent))
        wanted = _order(partition)
        found = sorted(
            (key, item)
            for key, item in view.items()
            if key[0] == wanted
            and (sort_condition is None or _sort_matches(sort_condition, item[str(sort)]))
        )
        forward = params.get("ScanIndexForward", True) is not False
        if not forward:
            found.reverse()
        if start is not None:
            after = table.key(start)
            found = [(k, i) for k, i in found if (k > after if forward else k < after)]
        answer = _page(table, [item for _, item in found], params, filter_tree, projection)
        units = math.ceil(answer.pop("_bytes") / 4096) * (1.0 if consistent else 0.5)
        answer.update(self._consumed(params, table, units))
        return answer

    @staticmethod
    def _check_key_conditions(table: _Table, conditions: Mapping[str, _KeyCondition]) -> Wire:
        """The key conditions against the schema (dynalite's order and words); returns the
        partition key value."""
        for position, (key_name, t) in enumerate(table.schema):
            if position == 0 and len(table.schema) == 1 and len(conditions) > 1:
                raise _invalid("Query key condition not supported")
            condition = conditions.get(key_name)
            if condition is None:
                if position == 0 or len(conditions) > 1:
                    raise _invalid(f"Query condition missed key schema element: {key_name}")
                continue
            if any(kind(v) != t for v in condition.values):
                raise _invalid(_INVALID + "Condition parameter type does not match schema type")
            if position == 0 and condition.op != "=":
                raise _invalid("Query key condition not supported")
        return conditions[table.schema[0][0]].values[0]

    @staticmethod
    def _check_start_key(
        table: _Table, start: Item, partition: Wire, sort_condition: _KeyCondition | None
    ) -> None:
        if len(start) != len(table.schema) or any(n not in start for n in table.key_names):
            raise _invalid("The provided starting key is invalid")
        if any(kind(start[n]) != t for n, t in table.schema):
            raise _invalid(
                "The provided starting key is invalid: The provided key element does not match "
                "the schema"
            )
        same_partition = same(start[table.schema[0][0]], partition)
        if sort_condition is None:
            if not same_partition:
                raise _invalid(
                    "The provided starting key is outside query boundaries based on provided "
                    "conditions"
                )
            return
        if not _sort_matches(sort_condition, start[sort_condition.attribute]):
            raise _invalid("The provided starting key does not match the range key predicate")
        if not same_partition:
            raise _invalid("The query can return at most one row and cannot be restarted")

    def _describe_table(
        self, params: dict[str, Any], principal: iam.Principal | None
    ) -> dict[str, Any]:
        name, arn = self._table_name(params["TableName"])
        self._authorize(principal, "DescribeTable", arn, None)
        table = self.tables.get(name)
        if table is None or arn != self.table_arn(name):
            raise DynamoDBError(
                "ResourceNotFoundException",
                f"Requested resource not found: Table: {name} not found",
            )
        created = table.created.timestamp()
        return {
            "Table": {
                "AttributeDefinitions": [
                    {"AttributeName": n, "AttributeType": t} for n, t in table.schema
                ],
                "TableName": table.name,
                "KeySchema": [
                    {"AttributeName": n, "KeyType": "HASH" if i == 0 else "RANGE"}
                    for i, (n, _) in enumerate(table.schema)
                ],
                "TableStatus": "ACTIVE",
                "CreationDateTime": created,
                # On demand: no capacity. (The service also sends NumberOfDecreasesToday: 0,
                # which the model's minimum of 1 forbids; the fake leaves it out.)
                "ProvisionedThroughput": {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0},
                "TableSizeBytes": sum(item_size(i) for i in table.items.values()),
                "ItemCount": len(table.items),
                "TableArn": self.table_arn(table.name),
                "TableId": table.table_id,
                "BillingModeSummary": {
                    "BillingMode": "PAY_PER_REQUEST",
                    "LastUpdateToPayPerRequestDateTime": created,
                },
                "DeletionProtectionEnabled": False,
            }
        }


_Handler = Callable[[FakeDynamoDB, dict[str, Any], "iam.Principal | None"], dict[str, Any]]
_HANDLERS: dict[str, _Handler] = {
    "GetItem": FakeDynamoDB._get_item,
    "PutItem": FakeDynamoDB._put_item,
    "UpdateItem": FakeDynamoDB._update_item,
    "DeleteItem": FakeDynamoDB._delete_item,
    "Query": FakeDynamoDB._query,
    "DescribeTable": FakeDynamoDB._describe_table,
}
