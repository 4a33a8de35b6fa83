"""What the review says about IAM and counts as bought (issue 21, section 3): the
plans a change buys, a widened condition shown old -> new. The pairs are synthesized
configs (conftest.py).
"""

from __future__ import annotations

import pytest

from novapod import review
from tests.review.test_review import section

# --- what the summary counts as purchases ------------------------------------------------


@pytest.mark.parametrize(
    ("base", "head", "bought"),
    [
        ("base", "extra-purchases", 1),  # a plan bought and a Bedrock import (buys nothing)
        ("extra-purchases", "base", 0),  # a plan and an import removed: nothing bought
        ("base", "rename-environment", 1),  # the old plan removed, the same bought again
        ("base", "plan-count", 1),
        ("base", "fewer-instances", 0),
    ],
)
def test_the_summary_counts_the_plans_bought(review_of, base, head, bought) -> None:
    report = review_of(base, head)
    assert report["summary"]["purchases"] == bought
    assert bought == sum(p["purchase"] for p in report["purchases"])


# --- a widened condition, old -> new -----------------------------------------------------


def test_a_widened_condition_is_shown_old_to_new(review_of) -> None:
    # Back from the evaluation-only job list: the data grant's s3:prefix allows the SFT data.
    report = review_of("fewer-instances", "base")
    (entry,) = [e for e in report["security"]["iam"] if e["condition_widened"]]
    assert entry["previous_condition"] == {"StringEquals": {"s3:prefix": ["eval/gen_qa.jsonl"]}}
    assert entry["condition"] == {
        "StringEquals": {"s3:prefix": ["sft/train.jsonl", "eval/gen_qa.jsonl"]}
    }
    (line,) = [t for t in section(review.render(report), 3).splitlines() if entry["sid"] in t]
    assert line.endswith(
        "widened: its condition allows more (`StringEquals s3:prefix: [eval/gen_qa.jsonl] → "
        "[sft/train.jsonl, eval/gen_qa.jsonl]`)"
    )
