"""checkov suppressions: each carries its reason, and only checks the table knows."""

from __future__ import annotations

from collections import Counter

from novapod.constructs.acknowledge import EQUIVALENT_RULES
from tests.conftest import ALL_CONFIGS

KNOWN_CHECKS = {check for rules in EQUIVALENT_RULES.values() for check in rules.checkov}
MIN_REASON = 60


def test_every_checkov_suppression_in_every_example_carries_a_reason(synth) -> None:
    counted: Counter[str] = Counter()
    for path in ALL_CONFIGS:
        for kind, template in synth(path).templates.items():
            for logical_id, resource in template["Resources"].items():
                for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
                    where = f"{path.name} {kind}/{logical_id}"
                    assert set(skip) == {"id", "comment"}, where
                    assert skip["id"] in KNOWN_CHECKS, where
                    assert len(skip["comment"].strip()) >= MIN_REASON, where
                    counted[skip["id"]] += 1
    # Each kind of suppression is there, and their total is what `make compliance`
    # reports as skipped over the same templates.
    # Every function reserves concurrency and every log group uses the key: those two
    # checks are never suppressed.
    assert set(counted) == KNOWN_CHECKS - {"CKV_AWS_115", "CKV_AWS_158"}
    assert sum(counted.values()) >= 300, counted


def test_a_lambda_function_is_suppressed_only_for_what_it_does_not_need(synth) -> None:
    from tests.conftest import DEFAULT_CONFIG

    template = synth(DEFAULT_CONFIG).templates["eks"]
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        skipped = {s["id"] for s in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])}
        # Reserved concurrency is set everywhere: never suppressed.
        assert "CKV_AWS_115" not in skipped, logical_id
        if "VpcConfig" in resource["Properties"]:
            assert "CKV_AWS_117" not in skipped, logical_id
        else:
            assert "CKV_AWS_117" in skipped, logical_id
