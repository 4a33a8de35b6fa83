"""What the review says about IAM (issue 21, section 3): a widened condition shown
old -> new. The pairs are synthesized configs (conftest.py).
"""

from __future__ import annotations

from novapod import review
from tests.review.test_review import section

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
