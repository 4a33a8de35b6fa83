"""When an IAM statement's new condition may allow more: the one judgement the review
makes beyond CDK's diff engine (which reports any changed statement as removed + added).
"""

from __future__ import annotations

import pytest

from novapod.review.iam import condition_changes, condition_widens

PREFIXES = {"StringEquals": {"s3:prefix": ["a/", "b/"]}}


@pytest.mark.parametrize(
    ("new", "widens"),
    [
        (PREFIXES, False),  # unchanged
        ({"StringEquals": {"s3:prefix": ["a/"]}}, False),  # fewer allowed values
        ({"StringEquals": {"s3:prefix": ["a/", "b/", "c/"]}}, True),  # more allowed values
        ({"StringEquals": {"s3:prefix": "a/"}}, False),  # a lone value is a list of one
        ({**PREFIXES, "Bool": {"aws:SecureTransport": "true"}}, False),  # a test added: ANDed
        ({"StringLike": {"s3:prefix": ["a/", "b/"]}}, True),  # another operator
        (None, True),  # the condition dropped
    ],
)
def test_positive_operators(new, widens) -> None:
    assert condition_widens(PREFIXES, new) is widens


def test_negated_operators_widen_when_they_exclude_less() -> None:
    old = {"StringNotEquals": {"aws:PrincipalTag/team": ["a", "b"]}}
    assert condition_widens(old, {"StringNotEquals": {"aws:PrincipalTag/team": ["a"]}}) is True
    more = {"StringNotEquals": {"aws:PrincipalTag/team": ["a", "b", "c"]}}
    assert condition_widens(old, more) is False


def test_bool_and_null_must_stay_equal() -> None:
    old = {"Bool": {"aws:SecureTransport": "false"}}
    assert condition_widens(old, {"Bool": {"aws:SecureTransport": "true"}}) is True
    assert condition_widens(None, old) is False  # a condition added where there was none


def test_changes_show_each_differing_test_old_to_new() -> None:
    wider = {
        "StringEquals": {"s3:prefix": ["a/", "b/", "c/"]},
        "Bool": {"aws:SecureTransport": "true"},
    }
    assert condition_changes(PREFIXES, wider) == [
        "StringEquals s3:prefix: [a/, b/] → [a/, b/, c/]",
        "Bool aws:SecureTransport: none → true",
    ]
    assert condition_changes(PREFIXES, None) == ["StringEquals s3:prefix: [a/, b/] → none"]
    # A condition that is no map of tests (an intrinsic) is shown whole.
    fn_if = {"Fn::If": ["Cond", PREFIXES, {"Ref": "AWS::NoValue"}]}
    assert condition_changes(PREFIXES, fn_if) == [
        '{"StringEquals":{"s3:prefix":["a/","b/"]}} → '
        + '{"Fn::If":["Cond",{"StringEquals":{"s3:prefix":["a/","b/"]}},{"Ref":"AWS::NoValue"}]}'
    ]
