"""One reason, both tools: cdk-nag acknowledgements and checkov resource metadata."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3

from novapod.constructs.acknowledge import EQUIVALENT_RULES, acknowledge, equivalent

REASON = "The access-log bucket is the logging target; logging it into itself would loop."


def _app_with_bucket(tmp_path):
    app = App(outdir=str(tmp_path))
    bucket = s3.Bucket(Stack(app, "S"), "Logs")
    return app, bucket


def _acknowledged(tmp_path) -> dict[str, str]:
    metadata = json.loads((tmp_path / "S.metadata.json").read_text())
    out: dict[str, str] = {}
    for entries in metadata.values():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                out |= entry["data"]
    return out


def test_one_reason_reaches_every_pack_and_checkov(tmp_path) -> None:
    app, bucket = _app_with_bucket(tmp_path)
    acknowledge(bucket, "AwsSolutions-S1", REASON)
    template = app.synth().get_stack_by_name("S").template
    (resource,) = template["Resources"].values()
    assert resource["Metadata"]["checkov"] == {"skip": [{"id": "CKV_AWS_18", "comment": REASON}]}
    assert _acknowledged(tmp_path) == {
        "Annotation::AwsSolutions-S1": REASON,
        "Annotation::NIST.800.53.R5-S3BucketLoggingEnabled": REASON,
        "Annotation::HIPAA.Security-S3BucketLoggingEnabled": REASON,
    }


def test_a_check_skipped_twice_keeps_both_reasons_once(tmp_path) -> None:
    app, bucket = _app_with_bucket(tmp_path)
    other = "A second, different reason for the very same checkov check on this bucket."
    acknowledge(bucket, "AwsSolutions-S1", REASON)
    acknowledge(bucket, "AwsSolutions-S1", REASON)
    acknowledge(bucket, "AwsSolutions-S1", other)
    (resource,) = app.synth().get_stack_by_name("S").template["Resources"].values()
    assert resource["Metadata"]["checkov"]["skip"] == [
        {"id": "CKV_AWS_18", "comment": f"{REASON} / {other}"}
    ]


def test_a_nag_only_rule_adds_no_checkov_metadata(tmp_path) -> None:
    app, bucket = _app_with_bucket(tmp_path)
    acknowledge(bucket, "S3BucketReplicationEnabled", REASON)
    (resource,) = app.synth().get_stack_by_name("S").template["Resources"].values()
    assert "Metadata" not in resource or "checkov" not in resource["Metadata"]
    assert set(_acknowledged(tmp_path)) == {
        "Annotation::NIST.800.53.R5-S3BucketReplicationEnabled",
        "Annotation::HIPAA.Security-S3BucketReplicationEnabled",
    }


def test_a_thin_reason_is_refused(tmp_path) -> None:
    _, bucket = _app_with_bucket(tmp_path)
    with pytest.raises(ValueError, match="needs a specific reason"):
        acknowledge(bucket, "AwsSolutions-S1", "not needed")


@pytest.mark.parametrize(
    "rule", ["NIST.800.53.R5-LambdaDLQ", "HIPAA.Security-LambdaDLQ", "CKV_AWS_116"]
)
def test_pack_and_checkov_ids_go_through_the_table(rule) -> None:
    with pytest.raises(ValueError, match="by its key in EQUIVALENT_RULES"):
        equivalent(rule)


def test_other_nag_rules_pass_through_unchanged() -> None:
    assert equivalent("AwsSolutions-IAM5[Resource::arn:aws:s3:::b/*]").nag == (
        "AwsSolutions-IAM5[Resource::arn:aws:s3:::b/*]",
    )
    assert equivalent("AwsSolutions-IAM5[Resource::arn:aws:s3:::b/*]").checkov == ()


def test_every_table_entry_names_a_rule_in_some_tool() -> None:
    for key, rules in EQUIVALENT_RULES.items():
        assert rules.nag or rules.checkov, key
        assert all(c.startswith("CKV_AWS_") for c in rules.checkov), key
        packs = [r for r in rules.nag if not r.startswith("AwsSolutions-")]
        assert all(r.startswith(("NIST.800.53.R5-", "HIPAA.Security-")) for r in packs), key
