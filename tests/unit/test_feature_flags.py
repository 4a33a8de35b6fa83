"""novapod's CDK feature flags live in one place, the package (novapod/data/
feature_flags.json), so a wheel installed anywhere synthesizes what the checkout does;
app.py and pipeline_app.py pass them to their App (tests/e2e/test_cdk_cli.py runs them)."""

from __future__ import annotations

import json

import pytest

import novapod
from novapod import environment
from tests.conftest import ROOT


def test_the_flags_are_the_packages_file() -> None:
    shipped = json.loads(environment.FEATURE_FLAGS.read_text(encoding="utf-8"))
    assert environment.FEATURE_FLAGS.is_relative_to(ROOT / "novapod")
    assert novapod.feature_flags() == shipped
    assert shipped["@aws-cdk/core:defaultCrossStackReferences"] == "weak"


def test_cdk_json_holds_no_second_copy() -> None:
    """The CLI's context from cdk.json would override the App's, so a flag there would
    make `cdk synth` differ from the tests and from an installed novapod."""
    assert set(json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))) == {"app", "watch"}


def test_a_missing_flags_file_is_one_sentence(tmp_path, monkeypatch) -> None:
    missing = tmp_path / "feature_flags.json"
    monkeypatch.setattr(environment, "FEATURE_FLAGS", missing)
    with pytest.raises(RuntimeError) as raised:
        novapod.feature_flags()
    assert str(raised.value) == (
        f"novapod's feature flags are missing: {missing} is not there; reinstall novapod "
        "(its package ships data/feature_flags.json)"
    )
