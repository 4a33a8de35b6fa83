"""The cfn-lint cache of tests/lint.py: findings keyed by template, region, settings and
cfn-lint's version, served from disk on a hit and never when any of them changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import lint

# An S3 bucket whose VersioningConfiguration lacks its required Status: cfn-lint's E3003.
BROKEN = {
    "Resources": {
        "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"VersioningConfiguration": {}}}
    }
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NOVAPOD_LINT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NOVAPOD_LINT_CACHE", raising=False)
    return tmp_path


def counting(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, str]]:
    calls: list[tuple[Any, str]] = []
    real = lint._lint

    def spy(template: dict[str, Any], region: str) -> list[list[str]]:
        calls.append((template, region))
        return real(template, region)

    monkeypatch.setattr(lint, "_lint", spy)
    return calls


def test_a_hit_serves_the_same_findings_without_linting_again(cache, monkeypatch) -> None:
    calls = counting(monkeypatch)
    first = lint.lint_findings(BROKEN, "us-east-1")
    assert [f.split()[0] for f in first] == ["E3003"]
    assert "'Status' is a required property" in first[0]
    assert lint.lint_findings(BROKEN, "us-east-1") == first
    assert len(calls) == 1
    assert len(list(cache.glob("*.json"))) == 1


def test_also_ignore_filters_a_cached_entry(cache) -> None:
    assert lint.lint_findings(BROKEN, "us-east-1")
    assert lint.lint_findings(BROKEN, "us-east-1", also_ignore=("E3003",)) == []


def test_another_template_region_setting_or_version_is_a_miss(cache, monkeypatch) -> None:
    key = lint.lint_key(BROKEN, "us-east-1")
    fixed = {"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}}}
    assert lint.lint_key(fixed, "us-east-1") != key
    assert lint.lint_key(BROKEN, "eu-west-1") != key
    monkeypatch.setattr(lint, "SETTINGS", {"ignore_checks": ["W3005", "E3003"]})
    assert lint.lint_key(BROKEN, "us-east-1") != key
    monkeypatch.undo()
    monkeypatch.setattr(lint.metadata, "version", lambda name: "0.0.0")
    assert lint.lint_key(BROKEN, "us-east-1") != key


def test_a_fixed_template_is_linted_afresh(cache, monkeypatch) -> None:
    calls = counting(monkeypatch)
    assert lint.lint_findings(BROKEN, "us-east-1")
    fixed = {"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}}}
    assert lint.lint_findings(fixed, "us-east-1") == []
    assert len(calls) == 2


def test_turned_off_it_lints_every_time_and_writes_nothing(cache, monkeypatch) -> None:
    monkeypatch.setenv("NOVAPOD_LINT_CACHE", "0")
    calls = counting(monkeypatch)
    lint.lint_findings(BROKEN, "us-east-1")
    lint.lint_findings(BROKEN, "us-east-1")
    assert len(calls) == 2
    assert not list(cache.iterdir())
