"""CapacityStack with `extend`: the extension's properties and its least-privilege IAM."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import ROOT, resources
from tests.lint import lint_findings

EXTENDED = ROOT / "tests" / "fixtures" / "extend-plans.yaml"
PURCHASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
TEAM_ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/team-p5-january"
EXTENSION_ACTIONS = {
    "sagemaker:ExtendTrainingPlan",
    "sagemaker:DescribeTrainingPlanExtensionHistory",
    "sagemaker:ListTags",  # the purchase markers
}


def _statements(template: dict[str, Any], role_fragment: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        if role_fragment in logical_id:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                out[statement.get("Sid", "")] = statement
    return out


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_extension_properties_name_the_exact_extension(synth) -> None:
    template = synth(EXTENDED).templates["capacity"]
    lite = template["Resources"]["TrainingPlanLite"]["Properties"]
    # Pinned literals: these names are what the config approves.
    assert lite["PlanName"] == "novapod-ext-lite-31e61478"
    assert {k: lite[k] for k in lite if k.startswith("Exten") or k == "ApprovedExtensionName"} == {
        "ExtendHours": "48",
        "ExtensionName": "novapod-ext-lite-31e61478-ext48h-ef01e65d",
        "ApprovedExtensionName": "novapod-ext-lite-31e61478-ext48h-ef01e65d",
        "ExtensionMaxUpfrontFee": "20000",
        "ExtensionCurrency": "USD",
    }
    assert lite["DurationHours"] == "144"  # as bought: the extension is not in the name
    team = template["Resources"]["TrainingPlanTeam"]["Properties"]
    assert team["Mode"] == "adopt"
    assert team["DurationHours"] == "336"
    assert team["ExtensionName"] == "team-p5-january-ext168h-ca472c09"
    assert team["ExtendHours"] == "168"


def test_no_extension_properties_or_permissions_without_extend(synth) -> None:
    template = synth(PURCHASE).templates["capacity"]
    (plan,) = resources(template, "Custom::NovapodTrainingPlan").values()
    assert not any(k.startswith("Exten") for k in plan["Properties"])
    text = json.dumps(resources(template, "AWS::IAM::Policy"))
    assert "ExtendTrainingPlan" not in text and "ExtensionHistory" not in text
    # No clean-up of old purchase markers either; ListTags only to check a plan's owner.
    assert "DeleteTags" not in text and "novapod-extension" not in text
    assert "ClearOldPurchaseMarkers" not in text


def test_extension_permissions_cover_only_the_plans_extended(synth) -> None:
    template = synth(EXTENDED).templates["capacity"]
    on_event = _statements(template, "OnEventRole")
    extend = on_event["ExtendOwnPlans"]
    assert set(_listed(extend["Action"])) == EXTENSION_ACTIONS
    resources_ = _listed(extend["Resource"])
    assert TEAM_ARN in resources_
    assert resources_ == [
        "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-ext-lite-????????",
        TEAM_ARN,
    ]
    read = _statements(template, "IsCompleteRole")["ReadExtensions"]
    assert _listed(read["Action"]) == ["sagemaker:DescribeTrainingPlanExtensionHistory"]
    assert _listed(read["Resource"]) == resources_


def test_old_purchase_markers_may_only_be_deleted_and_only_their_keys(synth) -> None:
    # The ledger replaced the tag markers: the handler never writes one, it only deletes
    # the resolved markers earlier versions left (issue 18 §2).
    template = synth(EXTENDED).templates["capacity"]
    mark = _statements(template, "OnEventRole")["ClearOldPurchaseMarkers"]
    assert mark["Effect"] == "Allow"
    assert _listed(mark["Action"]) == ["sagemaker:DeleteTags"]
    assert _listed(mark["Resource"]) == [
        "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-ext-lite-????????",
        TEAM_ARN,
    ]
    assert mark["Condition"] == {
        "ForAllValues:StringLike": {"aws:TagKeys": ["novapod-extension:*"]}
    }
    assert "ClearOldPurchaseMarkers" not in _statements(template, "IsCompleteRole")
    text = json.dumps(resources(template, "AWS::IAM::Policy"))
    assert "MarkExtensionPurchases" not in text


def test_the_extended_stack_passes_cfn_lint(synth) -> None:
    result = synth(EXTENDED)  # synthesis runs cdk-nag and fails on a finding
    for kind, template in result.templates.items():
        assert lint_findings(template, "us-east-1") == [], kind
