"""Bedrock import: the import role, the handlers' permissions (the purchase ledger's
included) and the Provider's timeouts in the nova-base stack; the custom resource of the
example's model and the outputs in the nova stack."""

from __future__ import annotations

import json
from typing import Any

from novapod.config import load_config
from novapod.nova import render
from tests.conftest import ROOT, joined, resources

EXAMPLE = ROOT / "config" / "examples" / "nova-jobs.yaml"
ACCOUNT = "111122223333"
MODELS = f"arn:aws:bedrock:us-east-1:{ACCOUNT}:custom-model/*"
DEPLOYMENTS = f"arn:aws:bedrock:us-east-1:{ACCOUNT}:custom-model-deployment/*"
ESCROW = "arn:${AWS::Partition}:s3:::customer-escrow-${AWS::AccountId}-*"
OUTPUTS = "arn:aws:s3:::${ArtifactsBucket}/nova/nova-jobs/lite-sft/*"
BUCKET = "arn:aws:s3:::${ArtifactsBucket}"
KEY = "${EncryptionKey.Arn}"  # the storage stack's KeyArn output
LEDGER = "${PurchaseLedger.Arn}"  # the storage stack's table
# Both handlers read and claim their environment's ledger items, nothing else
# (novapod/constructs/purchase_ledger.py grant_purchases).
CLAIMS_PURCHASES = {
    "PurchaseLedger": {
        "actions": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"],
        "resources": [LEDGER],
        "condition": {
            "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["nova-jobs"]},
            "Null": {"dynamodb:LeadingKeys": "false"},
        },
    },
    "PurchaseLedgerKey": {
        "actions": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"],
        "resources": [KEY],
        "condition": {
            "StringEquals": {
                "kms:ViaService": {
                    "Fn::Join": ["", ["dynamodb.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]
                }
            }
        },
    },
}


def nova(synth) -> tuple[Any, dict[str, Any]]:
    result = synth(EXAMPLE)
    return result, result.templates["nova"]


def base(synth) -> tuple[Any, dict[str, Any]]:
    result = synth(EXAMPLE)
    return result, result.templates["nova-base"]


def logical(template: dict[str, Any], type_: str, prefix: str) -> str:
    found = [k for k in resources(template, type_) if k.startswith(prefix)]
    assert len(found) == 1, (prefix, found)
    return found[0]


# Both handlers run in the private subnets (novapod/constructs/provider.py attach_to_vpc).
IN_THE_VPC = {
    "AttachToVpc": {
        "actions": [
            "ec2:AssignPrivateIpAddresses",
            "ec2:CreateNetworkInterface",
            "ec2:DeleteNetworkInterface",
            "ec2:UnassignPrivateIpAddresses",
        ],
        "resources": ["arn:${AWS::Partition}:ec2:us-east-1:111122223333:*/*"],
        "condition": None,
    },
    "DescribeNetworkInterfaces": {
        "actions": ["ec2:DescribeNetworkInterfaces"],
        "resources": ["*"],
        "condition": None,
    },
}


def statements(result: Any, policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Sid -> actions, resources (storage outputs rendered as what they point at),
    condition; the log-group statement has no Sid."""
    out = {}
    for s in policy["Properties"]["PolicyDocument"]["Statement"]:
        if "Sid" not in s:
            continue
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        found = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        out[s["Sid"]] = {
            "actions": sorted(actions),
            "resources": sorted(joined(r, result) for r in found),
            "condition": s.get("Condition"),
        }
    return out


def test_the_import_role_trusts_bedrock_from_this_account_only(synth) -> None:
    _, template = base(synth)
    role = template["Resources"][logical(template, "AWS::IAM::Role", "BedrockModelsImportRole")]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "bedrock.amazonaws.com"},
            "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
        }
    ]
    assert "ManagedPolicyArns" not in role["Properties"]


def test_the_import_role_reads_the_checkpoint_the_job_outputs_and_the_key(synth) -> None:
    result, template = base(synth)
    policy = template["Resources"][
        logical(template, "AWS::IAM::Policy", "BedrockModelsImportPolicy")
    ]
    assert policy["Properties"]["Roles"] == [
        {"Ref": logical(template, "AWS::IAM::Role", "BedrockModelsImportRole")}
    ]
    assert statements(result, policy) == {
        "ReadCheckpoints": {
            "actions": ["s3:GetBucketLocation", "s3:GetObject", "s3:ListBucket"],
            "resources": [ESCROW, f"{ESCROW}/*"],
            "condition": None,
        },
        "ListJobOutputs": {
            "actions": ["s3:ListBucket"],
            "resources": [BUCKET],
            "condition": {"StringLike": {"s3:prefix": ["nova/nova-jobs/lite-sft/*"]}},
        },
        "ReadJobOutputs": {"actions": ["s3:GetObject"], "resources": [OUTPUTS], "condition": None},
        "LocateOutputsBucket": {
            "actions": ["s3:GetBucketLocation"],
            "resources": [BUCKET],
            "condition": None,
        },
        "DecryptJobOutputs": {"actions": ["kms:Decrypt"], "resources": [KEY], "condition": None},
    }


def _handler_policy(template: dict[str, Any], function: str) -> dict[str, Any]:
    return template["Resources"][
        logical(template, "AWS::IAM::Policy", f"BedrockModelsHandlers{function}RoleDefaultPolicy")
    ]


def test_on_event_may_import_read_tag_delete_and_pass_only_the_import_role(synth) -> None:
    result, template = base(synth)
    import_role = logical(template, "AWS::IAM::Role", "BedrockModelsImportRole")
    assert statements(result, _handler_policy(template, "OnEvent")) == {
        **IN_THE_VPC,
        **CLAIMS_PURCHASES,
        "ListJobOutputs": {
            "actions": ["s3:ListBucket"],
            "resources": [BUCKET],
            "condition": {"StringLike": {"s3:prefix": ["nova/nova-jobs/lite-sft/*"]}},
        },
        "ReadJobOutputs": {"actions": ["s3:GetObject"], "resources": [OUTPUTS], "condition": None},
        "DecryptManifests": {"actions": ["kms:Decrypt"], "resources": [KEY], "condition": None},
        "ImportModels": {
            "actions": ["bedrock:CreateCustomModel"],
            "resources": ["*"],
            "condition": None,
        },
        "ReadAndTagModels": {
            "actions": [
                "bedrock:GetCustomModel",
                "bedrock:ListTagsForResource",
                "bedrock:TagResource",
            ],
            "resources": [MODELS],
            "condition": None,
        },
        "DeleteOwnModels": {
            "actions": ["bedrock:DeleteCustomModel"],
            "resources": [MODELS],
            "condition": {"Null": {"aws:ResourceTag/novapod:checkpoint-sha256": "false"}},
        },
        "ReadAndDeleteDeployments": {
            "actions": [
                "bedrock:DeleteCustomModelDeployment",
                "bedrock:GetCustomModelDeployment",
            ],
            "resources": [DEPLOYMENTS],
            "condition": None,
        },
        "PassImportRole": {
            "actions": ["iam:PassRole"],
            "resources": [f"${{{import_role}.Arn}}"],
            "condition": {"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}},
        },
    }


def test_is_complete_may_read_models_and_create_and_read_deployments(synth) -> None:
    result, template = base(synth)
    assert statements(result, _handler_policy(template, "IsComplete")) == {
        **IN_THE_VPC,
        **CLAIMS_PURCHASES,
        "ReadModelsAndDeploy": {
            "actions": ["bedrock:CreateCustomModelDeployment", "bedrock:GetCustomModel"],
            "resources": [MODELS],
            "condition": None,
        },
        "ReadAndTagDeployments": {
            "actions": ["bedrock:GetCustomModelDeployment", "bedrock:TagResource"],
            "resources": [DEPLOYMENTS],
            "condition": None,
        },
    }


def test_the_example_model_imports_lite_sft_with_an_on_demand_deployment(synth) -> None:
    result, template = nova(synth)
    _, base_template = base(synth)
    (logical_id,) = resources(template, "Custom::NovapodBedrockModel")
    resource = template["Resources"][logical_id]
    props = dict(resource["Properties"])
    # The Provider and the import role are the nova-base stack's (read as its outputs).
    assert joined(props.pop("ServiceToken"), result).startswith("${BedrockModelsHandlersProvider")
    output_prefix = joined(props.pop("OutputPrefix"), result)
    role = joined(props.pop("RoleArn"), result)
    # The purchase ledger's table, read from the storage stack.
    assert joined(props.pop("LedgerTable"), result) == "${PurchaseLedger}"
    assert props == {
        "ModelName": "lite-sft-model",
        "Deployment": "on-demand",
        "Tags": [{"Key": "novapod:environment", "Value": "nova-jobs"}],
        "RetainOnDelete": "true",
        "WaitTimeoutSeconds": "3000",
        "Environment": "nova-jobs",
    }
    # Where the rendered recipe of lite-sft writes (render.output_uri), with the
    # artifacts bucket of the storage stack.
    assert output_prefix == "s3://${ArtifactsBucket}/nova/nova-jobs/lite-sft/"
    config = load_config(EXAMPLE)
    (job,) = [j for j in config.jobs if j.name == "lite-sft"]
    assert output_prefix.replace("${ArtifactsBucket}", render.ARTIFACTS_BUCKET) == (
        render.output_uri(config, job)
    )
    assert role == (
        "${" + logical(base_template, "AWS::IAM::Role", "BedrockModelsImportRole") + ".Arn}"
    )
    # retain (the default): CloudFormation never sends Delete, replaced or removed.
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["UpdateReplacePolicy"] == "Retain"


def test_timeouts_cover_the_handler_and_the_wait_within_the_hour(synth) -> None:
    _, template = base(synth)
    functions = resources(template, "AWS::Lambda::Function")
    timeout = {
        f["Properties"]["Handler"]: f["Properties"]["Timeout"]
        for k, f in functions.items()
        if k.startswith("BedrockModelsHandlers")
    }
    # on_event runs rounds within 830 s, one is_complete poll ~6.5 min (handler/index.py);
    # the asset bundles the handler core (the purchase ledger).
    assert timeout["novapod_lambda.bedrock_model.handler.index.on_event"] == 840
    assert timeout["novapod_lambda.bedrock_model.handler.index.is_complete"] == 420
    machine = next(
        m
        for k, m in resources(template, "AWS::StepFunctions::StateMachine").items()
        if k.startswith("BedrockModelsHandlers")
    )
    definition = json.loads(joined(machine["Properties"]["DefinitionString"]))
    retry = definition["States"]["framework-isComplete-task"]["Retry"][0]
    waited = retry["IntervalSeconds"] * (retry["MaxAttempts"] + 1)
    assert retry["IntervalSeconds"] == 60
    # WaitTimeoutSeconds (3000) + one interval + one is_complete run < total <= 1 h.
    assert 3000 + 60 + 420 < waited <= 3600


def test_outputs_name_the_model_its_deployment_and_the_log_groups(synth) -> None:
    result, template = nova(synth)
    _, base_template = base(synth)
    outputs = {k: o for k, o in template["Outputs"].items() if k.startswith("BedrockModels")}
    model = logical(template, "Custom::NovapodBedrockModel", "BedrockModelsModel")
    by_value = {joined(o["Value"], result): o["Description"] for o in outputs.values()}
    on_event = logical(base_template, "AWS::Logs::LogGroup", "BedrockModelsHandlersOnEventLogs")
    waits = logical(base_template, "AWS::Logs::LogGroup", "BedrockModelsHandlersIsCompleteLogs")
    assert set(by_value) == {
        f"${{{model}.ModelArn}}",
        f"${{{model}.DeploymentArn}}",
        f"${{{on_event}}}",
        f"${{{waits}}}",
    }
    assert "lite-sft-model" in by_value[f"${{{model}.ModelArn}}"]
    assert all(len(d) > 30 for d in by_value.values())


def test_refresh_is_a_property_only_once_set_so_changing_it_sends_an_update() -> None:
    from novapod.config.nova import BedrockModel
    from novapod.constructs.bedrock_model.construct import model_properties
    from novapod.constructs.bedrock_model.handler.decisions import parse_properties

    def properties(**fields: Any) -> dict[str, object]:
        return model_properties(
            BedrockModel(name="lite-sft-model", job="lite-sft", **fields),
            output_prefix="s3://novapod-dev-artifacts/nova/dev/lite-sft/",
            role_arn=f"arn:aws:iam::{ACCOUNT}:role/import",
            ledger_table="novapod-dev-purchases",
            environment="dev",
            tags={},
        )

    # 0 (the default) leaves the template of a model deployed before refresh unchanged.
    assert "Refresh" not in properties()
    assert properties(refresh=1)["Refresh"] == "1"
    assert properties(refresh=1) != properties(refresh=2)
    # The handler takes it (and ignores it: only its change matters).
    assert parse_properties(properties(refresh=2)) == parse_properties(properties())
