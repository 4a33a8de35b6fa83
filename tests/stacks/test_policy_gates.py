"""Every shipped config passes cdk-nag (at synth) and cfn-lint with zero findings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from novapod.config import load_config
from tests.conftest import ALL_CONFIGS
from tests.lint import lint_findings

# AWS Solutions always; the opt-in packs run in every test synthesis (tests/conftest.py).
NAG_PACKS = ("AwsSolutions", "NIST.800.53.R5", "HIPAA.Security")


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_cfn_lint_reports_nothing(synth, path) -> None:
    result = synth(path)
    region = load_config(path).region
    assert {"network", "storage"} <= set(result.templates)
    for kind, template in result.templates.items():
        assert lint_findings(template, region) == [], kind


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_cdk_nag_passes_with_reasoned_acknowledgements_only(synth, path) -> None:
    outdir = synth(path).outdir  # synthesis itself fails on an unacknowledged finding
    report = json.loads((outdir / "validation-report.json").read_text())
    for plugin in report["pluginReports"]:
        assert plugin["conclusion"] == "success", plugin
    acknowledged = 0
    for metadata_file in outdir.glob("*.metadata.json"):
        for construct_path, entries in json.loads(metadata_file.read_text()).items():
            for entry in entries:
                if entry["type"] != "aws:cdk:acknowledged-rules":
                    continue
                for rule, reason in entry["data"].items():
                    if not any(pack in rule for pack in NAG_PACKS):
                        continue  # aws-cdk-lib's own acknowledgements (e.g. of cfn validation)
                    acknowledged += 1
                    assert rule.startswith(tuple(f"Annotation::{p}-" for p in NAG_PACKS)), rule
                    assert len(reason) >= 60, f"{construct_path} {rule}: reason too thin"
                    # On the narrowest construct: never a whole stack.
                    assert construct_path.count("/") >= 2, construct_path
    assert acknowledged >= 1  # the access-log bucket's S1 at least


def test_nag_fails_synthesis_on_an_unacknowledged_finding(tmp_path) -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_s3 as s3

    from novapod.environment import add_policy_checks, build_environment, feature_flags
    from tests.conftest import DEFAULT_CONFIG

    app = App(outdir=str(tmp_path), context=feature_flags())
    build_environment(app, load_config(DEFAULT_CONFIG))
    s3.Bucket(Stack(app, "Intruder"), "Unlogged")
    add_policy_checks(app)
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = (tmp_path / "validation-report.json").read_text()
    assert "AwsSolutions-S1" in report and "AwsSolutions-S10" in report


def _allow_statements(node: Any, where: str = ""):
    """Every Allow statement in any policy document of a template."""
    if isinstance(node, dict):
        if "Statement" in node and isinstance(node["Statement"], list):
            for statement in node["Statement"]:
                if statement.get("Effect") == "Allow":
                    yield where, statement
        for key, value in node.items():
            yield from _allow_statements(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _allow_statements(value, f"{where}[{i}]")


def _is_key_admin_root(statement: dict[str, Any]) -> bool:
    # KMS's default key policy statement: the account root may use IAM policies to
    # grant access to the key. Without it the key cannot be administered at all.
    principal = json.dumps(statement.get("Principal", {}))
    return statement.get("Action") == "kms:*" and ":root" in principal


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_no_wildcard_actions_in_any_allow_statement(synth, path) -> None:
    for kind, template in synth(path).templates.items():
        for where, statement in _allow_statements(template["Resources"]):
            if _is_key_admin_root(statement):
                continue
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            assert all("*" not in a for a in actions), f"{kind}{where}: {actions}"
