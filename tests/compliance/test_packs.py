"""The opt-in packs: `compliance` in the config, and what an unacknowledged finding does."""

from __future__ import annotations

import json

import pytest

from novapod import yamlsafe
from novapod.config import ConfigError, parse_config
from tests.conftest import ALL_CONFIGS, DEFAULT_CONFIG

BOTH = ["nist-800-53-r5", "hipaa"]


def _config(compliance: object):
    data = yamlsafe.load(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    return parse_config({**data, "compliance": compliance}, "env.yaml")


def test_compliance_lists_packs_and_defaults_to_none() -> None:
    assert _config(BOTH).compliance == BOTH
    assert parse_config(yamlsafe.load(DEFAULT_CONFIG.read_text())).compliance == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            ["pci-dss"],
            "env.yaml: compliance[0]: 'pci-dss' is not allowed; use one of "
            "'nist-800-53-r5' or 'hipaa'",
        ),
        (["hipaa", "hipaa"], "env.yaml: compliance: 'hipaa' is listed twice; list each pack once"),
        ("hipaa", "env.yaml: compliance: must be a list, got 'hipaa'"),
    ],
)
def test_bad_compliance_is_one_sentence_naming_the_field(value, message) -> None:
    with pytest.raises(ConfigError) as raised:
        _config(value)
    assert raised.value.render() == message


def _unreplicated_bucket_app(tmp_path, compliance):
    from aws_cdk import App, Stack
    from aws_cdk import aws_s3 as s3

    from novapod.constructs.acknowledge import acknowledge
    from novapod.environment import add_policy_checks

    app = App(outdir=str(tmp_path))
    bucket = s3.Bucket(Stack(app, "Intruder"), "Bucket", enforce_ssl=True)
    # Settled for AWS Solutions (and its pack equivalents), not for replication.
    acknowledge(bucket, "AwsSolutions-S1", "A test bucket: its access logging is not the point.")
    add_policy_checks(app, compliance)
    return app


def test_an_unacknowledged_pack_finding_fails_synthesis(tmp_path) -> None:
    app = _unreplicated_bucket_app(tmp_path, BOTH)
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    failed = {
        v["ruleName"]
        for plugin in report["pluginReports"]
        if plugin["conclusion"] == "failure"
        for v in plugin["violations"]
    }
    assert {
        "NIST.800.53.R5-S3BucketReplicationEnabled",
        "HIPAA.Security-S3BucketReplicationEnabled",
    } <= failed
    assert not any(rule.startswith("AwsSolutions-") for rule in failed)


def test_without_packs_the_same_app_passes(tmp_path) -> None:
    app = _unreplicated_bucket_app(tmp_path, [])
    app.synth()  # AWS Solutions alone: every finding on the bucket is acknowledged
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert report["pluginReports"] == []  # a plugin with no finding reports nothing


def test_the_packs_change_no_template(synth, tmp_path) -> None:
    """Acknowledgements for the packs live in the cloud assembly's metadata, never in a
    template: a config synthesizes to the same bytes with the packs on or off."""
    from novapod.config import load_config
    from novapod.environment import create_app

    with_packs = synth(DEFAULT_CONFIG)  # the session's synthesis runs both packs
    config = load_config(DEFAULT_CONFIG)
    assert config.compliance == []
    create_app(config, outdir=tmp_path).synth()
    written = sorted(p.name for p in tmp_path.glob("*.template.json"))
    assert written == sorted(p.name for p in with_packs.outdir.glob("*.template.json"))
    assert len(written) == 3
    for name in written:
        assert (tmp_path / name).read_bytes() == (with_packs.outdir / name).read_bytes(), name


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_every_example_passes_both_packs(synth, path) -> None:
    outdir = synth(path).outdir  # synthesis itself fails on an unacknowledged finding
    report = json.loads((outdir / "validation-report.json").read_text())
    assert report["pluginReports"] == []
    rules = set()
    for metadata_file in outdir.glob("*.metadata.json"):
        for entries in json.loads(metadata_file.read_text()).values():
            for entry in entries:
                if entry["type"] == "aws:cdk:acknowledged-rules":
                    rules |= set(entry["data"])
    # The packs ran: their acknowledgements are recorded beside AWS Solutions'.
    assert any(r.startswith("Annotation::NIST.800.53.R5-") for r in rules)
    assert any(r.startswith("Annotation::HIPAA.Security-") for r in rules)
