"""The purchase ledger's table (storage stack) and who may touch it (issue 18 §2).

Exactly-once purchases rest on this table: it must survive every stack operation, be
encrypted with the environment's key, and be writable only by the purchasing handlers,
each limited to its own environment's items by dynamodb:LeadingKeys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DEFAULT_CONFIG, ROOT, Synthesized, resources

PURCHASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
NOVA_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"
WRITES = {
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:*",
    "*",
}


def _ledger(result: Synthesized) -> dict[str, Any]:
    return result.templates["storage"]["Resources"]["PurchaseLedger"]


def test_the_ledger_is_retained_encrypted_recoverable_and_on_demand(synth) -> None:
    table = _ledger(synth(DEFAULT_CONFIG))
    assert table["Type"] == "AWS::DynamoDB::Table"
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    props = table["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": "Environment", "KeyType": "HASH"},
        {"AttributeName": "Purchase", "KeyType": "RANGE"},
    ]
    assert props["AttributeDefinitions"] == [
        {"AttributeName": "Environment", "AttributeType": "S"},
        {"AttributeName": "Purchase", "AttributeType": "S"},
    ]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["SSESpecification"] == {
        "KMSMasterKeyId": {"Fn::GetAtt": ["EncryptionKey", "Arn"]},
        "SSEEnabled": True,
        "SSEType": "KMS",
    }
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["DeletionProtectionEnabled"] is True
    # A fixed name would make a re-created storage stack collide with the retained table.
    assert "TableName" not in props


def test_the_storage_stack_names_the_table_for_novapod_purchases(synth) -> None:
    outputs = synth(DEFAULT_CONFIG).templates["storage"]["Outputs"]
    assert outputs["PurchaseLedgerTableName"]["Value"] == {"Ref": "PurchaseLedger"}


def _statements(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for policy_id, policy in resources(template, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            found.append((policy_id, statement))
    for role_id, role in resources(template, "AWS::IAM::Role").items():
        for inline in role["Properties"].get("Policies", []):
            for statement in inline["PolicyDocument"]["Statement"]:
                found.append((role_id, statement))
    for policy_id, policy in resources(template, "AWS::IAM::ManagedPolicy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            found.append((policy_id, statement))
    return found


def _actions(statement: dict[str, Any]) -> set[str]:
    actions = statement.get("Action", [])
    return {actions} if isinstance(actions, str) else set(actions)


# Per config: the roles that may write the ledger (on_event buys, is_complete settles).
LEDGER_WRITERS = {
    PURCHASE: (
        "nova-lite",
        [
            "capacity/TrainingPlanProviderHandlersIsCompleteRoleDefaultPolicy76A652DF",
            "capacity/TrainingPlanProviderHandlersOnEventRoleDefaultPolicy651B773C",
        ],
    ),
    # Training plans and Bedrock imports (nova.bedrock_models[]): both purchase handlers.
    NOVA_JOBS: (
        "nova-jobs",
        [
            "capacity/TrainingPlanProviderHandlersIsCompleteRoleDefaultPolicy76A652DF",
            "capacity/TrainingPlanProviderHandlersOnEventRoleDefaultPolicy651B773C",
            "nova-base/BedrockModelsHandlersIsCompleteRoleDefaultPolicyE90786C0",
            "nova-base/BedrockModelsHandlersOnEventRoleDefaultPolicy1601E754",
        ],
    ),
}


def _limited_to(condition: dict[str, Any], environment: str) -> bool:
    """The statement's condition allows the items of `environment` and nothing else:
    `dynamodb:LeadingKeys` all equal to it and present (`Null` false: ForAllValues alone
    holds for a request without the key); no other key that could widen or replace it."""
    if condition.get("ForAllValues:StringEquals") != {"dynamodb:LeadingKeys": [environment]}:
        return False
    present = ({"dynamodb:LeadingKeys": "false"}, {"dynamodb:LeadingKeys": False})
    if condition.get("Null") not in present:
        return False
    return set(condition) <= {"ForAllValues:StringEquals", "Null"}


@pytest.mark.parametrize("config", list(LEDGER_WRITERS), ids=lambda p: p.name)
def test_only_the_purchase_handlers_write_the_ledger_and_only_their_environment(
    synth, config: Path
) -> None:
    environment, expected = LEDGER_WRITERS[config]
    result = synth(config)
    writers: dict[str, list[dict[str, Any]]] = {}
    for kind, template in result.templates.items():
        for policy_id, statement in _statements(template):
            if statement["Effect"] == "Allow" and _actions(statement) & WRITES:
                resource = json.dumps(statement.get("Resource"))
                if "PurchaseLedger" in resource or statement.get("Resource") == "*":
                    writers.setdefault(f"{kind}/{policy_id}", []).append(statement)
    assert sorted(writers) == expected
    for writer, statements in writers.items():
        (statement,) = statements
        assert sorted(_actions(statement)) == [
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:Query",
        ], writer
        assert _limited_to(statement["Condition"], environment), (writer, statement["Condition"])
        assert "PurchaseLedgerArn" in json.dumps(statement["Resource"]), writer


def test_a_condition_is_limited_to_one_environment_only_as_the_construct_writes_it() -> None:
    env = {"dynamodb:LeadingKeys": ["nova-jobs"]}
    present = {"dynamodb:LeadingKeys": "false"}
    assert not _limited_to({"ForAllValues:StringEquals": env}, "nova-jobs")  # key may be absent
    assert _limited_to({"ForAllValues:StringEquals": env, "Null": present}, "nova-jobs")
    assert _limited_to(
        {"ForAllValues:StringEquals": env, "Null": {"dynamodb:LeadingKeys": False}}, "nova-jobs"
    )
    assert not _limited_to({"ForAllValues:StringEquals": env, "Null": present}, "nova-lite")
    assert not _limited_to(
        {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["nova-jobs", "nova-lite"]}},
        "nova-jobs",
    )
    assert not _limited_to(
        {"ForAllValues:StringEquals": env, "Null": {"dynamodb:LeadingKeys": "true"}}, "nova-jobs"
    )
    assert not _limited_to(
        {"ForAllValues:StringEquals": env, "StringLike": {"aws:PrincipalArn": "*"}}, "nova-jobs"
    )
    assert not _limited_to({"Null": present}, "nova-jobs")


def test_the_handlers_use_the_key_only_through_dynamodb(synth) -> None:
    result = synth(PURCHASE)
    template = result.templates["capacity"]
    key_statements = [
        s for _, s in _statements(template) if s.get("Sid", "").startswith("PurchaseLedgerKey")
    ]
    assert len(key_statements) == 2
    for statement in key_statements:
        assert sorted(_actions(statement)) == [
            "kms:Decrypt",
            "kms:DescribeKey",
            "kms:Encrypt",
            "kms:GenerateDataKey",
        ]
        assert statement["Condition"] == {
            "StringEquals": {
                "kms:ViaService": {
                    "Fn::Join": ["", ["dynamodb.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]
                }
            }
        }
        assert "EncryptionKeyArn" in json.dumps(statement["Resource"])


def test_each_plan_names_the_ledger_and_its_environment(synth) -> None:
    result = synth(PURCHASE)
    plans = resources(result.templates["capacity"], "Custom::NovapodTrainingPlan")
    assert plans
    for plan in plans.values():
        props = plan["Properties"]
        assert props["Environment"] == "nova-lite"
        assert "PurchaseLedger" in json.dumps(props["LedgerTable"])


def test_the_handlers_ship_the_handler_core(synth) -> None:
    result = synth(PURCHASE)
    functions = resources(result.templates["capacity"], "AWS::Lambda::Function")
    handlers = sorted(f["Properties"]["Handler"] for f in functions.values())
    assert "novapod_lambda.training_plan.handler.index.on_event" in handlers
    assert "novapod_lambda.training_plan.handler.index.is_complete" in handlers
