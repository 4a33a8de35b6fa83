"""The Nova stacks: dependencies, scientists' access, data grants and outputs (nova);
MLflow and the recipe bundle (nova-base)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Template

from novapod import yamlsafe
from novapod.config import load_config, parse_config
from novapod.constructs.network import PrivatePlacement
from novapod.constructs.purchase_ledger import PurchaseLedger
from novapod.environment import feature_flags
from novapod.nova import render
from novapod.nova.access import scientist_entry_id
from novapod.nova.mlflow import mlflow_actions
from novapod.stacks.nova import NovaStack
from novapod.stacks.nova_base import NovaBaseStack
from tests.conftest import ALL_CONFIGS, DEFAULT_CONFIG, ROOT, joined, resources

EXAMPLE = ROOT / "config" / "examples" / "nova-jobs.yaml"
LITE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"  # no functions, no MLflow
SCIENTIST = "arn:aws:iam::111122223333:role/NovaScientist"
OTHER = "arn:aws:iam::111122223333:role/NovaReviewer"
MLFLOW_ARN = "arn:aws:sagemaker:us-east-1:111122223333:mlflow-tracking-server/novapod-nova-jobs"
DATASETS = [
    "lite/dpo/preferences.jsonl",
    "lite/eval/gen_qa.jsonl",
    "lite/eval/judge_pairs.jsonl",
    "lite/sft/train.jsonl",
    "micro/ppo/prompts.jsonl",
    "nova2/rft/prompts.jsonl",
]


def nova(synth) -> tuple[Any, dict[str, Any]]:
    result = synth(EXAMPLE)
    return result, result.templates["nova"]


def base(synth) -> tuple[Any, dict[str, Any]]:
    result = synth(EXAMPLE)
    return result, result.templates["nova-base"]


def one(template: dict[str, Any], type_: str, prefix: str) -> dict[str, Any]:
    found = [r for k, r in resources(template, type_).items() if k.startswith(prefix)]
    assert len(found) == 1, (prefix, len(found))
    return found[0]


def statements(result, policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Sid -> (actions, rendered resources, condition) of a policy resource."""
    out = {}
    for s in policy["Properties"]["PolicyDocument"]["Statement"]:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        found = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        out[s["Sid"]] = {
            "actions": actions,
            "resources": sorted(joined(r, result) for r in found),
            "condition": s.get("Condition"),
        }
    return out


def test_depends_on_the_hyperpod_storage_and_nova_base_stacks_only(synth) -> None:
    result = synth(EXAMPLE)
    assert result.dependencies["nova"] == {"hyperpod", "storage", "nova-base"}
    # What needs no cluster waits for none: MLflow, the bundle, the handlers.
    assert result.dependencies["nova-base"] == {"network", "storage"}
    # The role name comes from the hyperpod stack's own output, never the EKS stack's.
    for kind in ("nova", "nova-base"):
        template = json.dumps(result.templates[kind])
        assert "novapod-nova-jobs-eks" not in template
        assert "novapod-nova-jobs-hyperpod" not in template or kind == "nova"


def test_no_nova_stacks_without_jobs(synth) -> None:
    templates = synth(DEFAULT_CONFIG).templates
    assert "nova" not in templates
    assert "nova-base" not in templates


def test_scientists_get_an_access_entry_in_their_group_and_no_access_policy(synth) -> None:
    _, template = nova(synth)
    entries = {
        k: e
        for k, e in resources(template, "AWS::EKS::AccessEntry").items()
        if not k.startswith("NovaEnvironment")  # the check's own entry, tested on its own
    }
    assert list(entries) == [scientist_entry_id(SCIENTIST)]
    props = entries[scientist_entry_id(SCIENTIST)]["Properties"]
    assert props == {
        "ClusterName": "novapod-nova-jobs",
        "PrincipalArn": SCIENTIST,
        "KubernetesGroups": ["novapod-nova-scientists"],
        "Type": "STANDARD",
        "Tags": props["Tags"],
    }
    assert "AmazonEKSClusterAdminPolicy" not in json.dumps(template)


def _standalone(scientists: list[str]) -> dict[str, Any]:
    data = yamlsafe.load(EXAMPLE.read_text())
    data = copy.deepcopy(data)
    data["nova"]["scientists"] = scientists
    stack = _standalone_stack(data)
    return Template.from_stack(stack).find_resources(
        "AWS::EKS::AccessEntry", {"Properties": {"KubernetesGroups": ["novapod-nova-scientists"]}}
    )


def _standalone_stack(data: dict[str, Any]) -> NovaStack:
    """The nova stack of a config, in an App of its own (no other stacks synthesized)."""
    config = parse_config(data)
    app = App(context=feature_flags())
    env = Environment(account="111122223333", region="us-east-1")
    stored = {
        "data_bucket_name": "data",
        "artifacts_bucket_name": "artifacts",
        "key_arn": "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    }
    storage = Stack(app, "Storage", env=env)
    ledger = PurchaseLedger(
        storage, "PurchaseLedger", key=kms.Key(storage, "Key"), logical_id="PurchaseLedger"
    )
    base = NovaBaseStack(
        app,
        "NovaBase",
        config=config,
        cluster_name=config.prefix,
        placement=PrivatePlacement(
            vpc_id="vpc-0a1b2c3d", subnet_ids=("subnet-0a1b2c3d",), security_group_id="sg-0a1b2c3d"
        ),
        env=env,
        ledger=ledger,
        **stored,
    )
    stack = NovaStack(
        app,
        "Nova",
        config=config,
        cluster_name=config.prefix,
        hyperpod_cluster_arn="arn:aws:sagemaker:us-east-1:111122223333:cluster/abc",
        restricted_role_name="RestrictedRole",
        base=base,
        env=env,
    )
    return stack


def test_reordering_the_scientists_keeps_every_entry() -> None:
    forward = _standalone([SCIENTIST, OTHER])
    backward = _standalone([OTHER, SCIENTIST])
    assert forward == backward
    assert {e["Properties"]["PrincipalArn"] for e in forward.values()} == {SCIENTIST, OTHER}


def test_the_restricted_role_reads_datasets_writes_outputs_and_calls_its_functions(
    synth,
) -> None:
    result, template = nova(synth)
    policy = one(template, "AWS::IAM::Policy", "RestrictedGroupDataGrants")
    # Attached to the role the hyperpod stack re-publishes from the EKS stack.
    (role,) = policy["Properties"]["Roles"]
    assert role == {
        "Fn::GetStackOutput": {
            "StackName": "novapod-nova-jobs-hyperpod",
            "OutputName": "RestrictedGroupRoleName",
        }
    }
    assert joined(role, result).startswith("${RestrictedGroupRole")
    found = statements(result, policy)
    assert found == {
        "ReadDatasets": {
            "actions": ["s3:GetObject"],
            "resources": [f"arn:aws:s3:::${{DataBucket}}/{k}" for k in DATASETS],
            "condition": None,
        },
        "ListDatasets0": {
            "actions": ["s3:ListBucket"],
            "resources": ["arn:aws:s3:::${DataBucket}"],
            "condition": {
                "StringEquals": {
                    "s3:prefix": found["ListDatasets0"]["condition"]["StringEquals"]["s3:prefix"]
                }
            },
        },
        "WriteOutputs": {
            "actions": ["s3:GetObject", "s3:PutObject"],
            "resources": ["arn:aws:s3:::${ArtifactsBucket}/nova/nova-jobs/*"],
            "condition": None,
        },
        "UseTheKey": {
            "actions": ["kms:Decrypt", "kms:GenerateDataKey"],
            "resources": ["${EncryptionKey.Arn}"],
            "condition": None,
        },
        "InvokeJobFunctions": {
            "actions": ["lambda:InvokeFunction"],
            "resources": ["arn:aws:lambda:us-east-1:111122223333:function:nova-reward"],
            "condition": None,
        },
        "TrackRuns": {
            "actions": found["TrackRuns"]["actions"],
            "resources": [MLFLOW_ARN],
            "condition": None,
        },
        # What the AWS RIG sample grants RFT on its queues, in this account and Region.
        "UseRftQueues": {
            "actions": ["sqs:DeleteMessage", "sqs:ReceiveMessage", "sqs:SendMessage"],
            "resources": ["arn:aws:sqs:us-east-1:111122223333:*SageMaker*"],
            "condition": None,
        },
    }
    # Listing names the dataset keys exactly (no bucket-wide list).
    assert sorted(found["ListDatasets0"]["condition"]["StringEquals"]["s3:prefix"]) == DATASETS
    # sagemaker-mlflow:* as AWS's Nova MLflow setup grants it, written out on the one server
    # (every action on the tracking-server resource but the deletes).
    tracking = mlflow_actions().tracking_server_actions
    assert sorted(found["TrackRuns"]["actions"]) == sorted(
        f"sagemaker-mlflow:{a}" for a in tracking if not a.startswith("Delete")
    )
    for action in ("LogMetric", "LogModel", "LogOutputs", "FinalizeLoggedModel", "UpdateRun"):
        assert f"sagemaker-mlflow:{action}" in found["TrackRuns"]["actions"]
    assert "sagemaker-mlflow:DeleteRun" not in found["TrackRuns"]["actions"]


def test_jobs_without_functions_rft_or_mlflow_get_none_of_their_grants() -> None:
    data = yamlsafe.load(LITE.read_text())
    template = Template.from_stack(_standalone_stack(data)).to_json()
    policy = one(template, "AWS::IAM::Policy", "RestrictedGroupDataGrants")
    sids = [s["Sid"] for s in policy["Properties"]["PolicyDocument"]["Statement"]]
    assert sids == ["ReadDatasets", "ListDatasets0", "WriteOutputs", "UseTheKey"]


def test_datasets_in_other_buckets_are_granted_by_object_and_listed_by_prefix() -> None:
    from novapod.nova.access import data_grants

    data = yamlsafe.load(EXAMPLE.read_text())
    data["jobs"][0]["data"] = {"train": "s3://team-data/sft/train.jsonl"}
    grants = data_grants(parse_config(data))
    assert grants.external == {"team-data": ("sft/train.jsonl",)}
    assert "sft/train.jsonl" not in grants.data_keys
    assert grants.lambdas == ("arn:aws:lambda:us-east-1:111122223333:function:nova-reward",)


def test_the_scientist_policy_reads_and_describes_only(synth) -> None:
    result, template = nova(synth)
    policy = one(template, "AWS::IAM::ManagedPolicy", "ScientistPolicy")
    found = statements(result, policy)
    assert found["DescribeHyperPodCluster"]["resources"] == ["${HyperPodCluster.ClusterArn}"]
    assert found["DescribeEksCluster"]["resources"] == [
        "arn:aws:eks:us-east-1:111122223333:cluster/novapod-nova-jobs"
    ]
    assert found["ReadOutputsAndBundle"] == {
        "actions": ["s3:GetObject"],
        "resources": [
            "arn:aws:s3:::${ArtifactsBucket}/nova/nova-jobs/*",
            "arn:aws:s3:::${ArtifactsBucket}/recipes/*",
        ],
        "condition": None,
    }
    assert found["ReadStackOutputs"]["resources"] == [
        f"arn:aws:cloudformation:us-east-1:111122223333:stack/novapod-nova-jobs-{k}/*"
        for k in ("hyperpod", "nova", "storage")
    ]
    assert found["ReadExperiments"]["resources"] == [MLFLOW_ARN]
    # RIG restricts kubectl logs: the jobs' logs are read in the HyperPod cluster's log
    # group, and `hyperpod get-log` lists the EKS add-ons (issue 19).
    assert found["ReadJobLogs"] == {
        "actions": ["logs:DescribeLogStreams", "logs:FilterLogEvents", "logs:GetLogEvents"],
        "resources": [
            "arn:aws:logs:us-east-1:111122223333:log-group:/aws/sagemaker/Clusters/"
            "novapod-nova-jobs/*"
        ],
        "condition": None,
    }
    assert found["ListEksAddons"]["actions"] == ["eks:ListAddons"]
    assert found["ListEksAddons"]["resources"] == found["DescribeEksCluster"]["resources"]
    writes = [a for s in found.values() for a in s["actions"] if ":Put" in a or ":Create" in a]
    assert writes == ["sagemaker:CreatePresignedMlflowTrackingServerUrl"]
    outputs = template["Outputs"]
    assert outputs["ScientistPolicyArn"]["Value"] == {
        "Ref": next(k for k in resources(template, "AWS::IAM::ManagedPolicy"))
    }


def test_mlflow_tracking_server_stores_artifacts_under_mlflow_with_its_own_role(synth) -> None:
    result, template = base(synth)
    ((server_id, server),) = resources(template, "AWS::SageMaker::MlflowTrackingServer").items()
    # Stateful (the experiments): retained, and its logical ID pinned in nova-base.
    assert server_id == "MlflowTrackingServer"
    assert server["DeletionPolicy"] == "Retain"
    props = server["Properties"]
    assert props["TrackingServerName"] == "novapod-nova-jobs"
    assert props["TrackingServerSize"] == "Small"
    assert joined(props["ArtifactStoreUri"], result) == "s3://${ArtifactsBucket}/mlflow/"
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    role = template["Resources"][role_id]
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "sagemaker.amazonaws.com"}]
    policy = one(template, "AWS::IAM::Policy", "MlflowPolicy")
    assert policy["Properties"]["Roles"] == [{"Ref": role_id}]
    assert statements(result, policy) == {
        # The server lists and locates its bucket without a prefix (the API reference
        # asks for AmazonS3FullAccess on its role).
        "ListArtifactStore": {
            "actions": ["s3:GetBucketLocation", "s3:ListBucket"],
            "resources": ["arn:aws:s3:::${ArtifactsBucket}"],
            "condition": None,
        },
        "ReadWriteArtifacts": {
            "actions": ["s3:GetObject", "s3:PutObject"],
            "resources": ["arn:aws:s3:::${ArtifactsBucket}/mlflow/*"],
            "condition": None,
        },
        "UseTheKey": {
            "actions": ["kms:Decrypt", "kms:GenerateDataKey"],
            "resources": ["${EncryptionKey.Arn}"],
            "condition": None,
        },
    }
    # NovaStack's output (what `novapod launch` reads): the same ARN, formatted from
    # the server's name, which the server keeps (TrackingServerName above).
    outputs = result.templates["nova"]["Outputs"]
    assert joined(outputs["MlflowTrackingServerArn"]["Value"], result) == MLFLOW_ARN


def bundle_files(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["Key"]: r["Properties"]
        for r in resources(template, "Custom::NovaBundleFile").values()
    }


def test_every_bundle_file_is_written_under_recipes(synth) -> None:
    result, template = base(synth)
    files = bundle_files(template)
    expected = {"recipes/" + p for p in render.bundle(load_config(EXAMPLE))}
    assert set(files) == expected
    assert "recipes/index.json" in files
    for props in files.values():
        assert joined(props["Bucket"], result) == "${ArtifactsBucket}"


def test_a_recipe_body_is_substituted_by_cloudformation_with_omegaconf_escaped(synth) -> None:
    _, template = base(synth)
    text = render.bundle(load_config(EXAMPLE))["recipes/nova2-rft.yaml"]
    # The recipe's own OmegaConf interpolations, which Fn::Sub must leave as they are.
    assert "${oc.select:run.reward_lambda_arn}" in text
    expected = text.replace("${oc.select:", "${!oc.select:")
    storage = "novapod-nova-jobs-storage"
    assert bundle_files(template)["recipes/recipes/nova2-rft.yaml"]["Body"] == {
        "Fn::Sub": [
            expected,
            {
                "DataBucket": {
                    "Fn::GetStackOutput": {"StackName": storage, "OutputName": "DataBucketName"}
                },
                "ArtifactsBucket": {
                    "Fn::GetStackOutput": {
                        "StackName": storage,
                        "OutputName": "ArtifactsBucketName",
                    }
                },
            },
        ]
    }


def test_the_mlflow_recipe_gets_the_servers_arn(synth) -> None:
    _, template = base(synth)
    body = bundle_files(template)["recipes/recipes/lite-sft.yaml"]["Body"]["Fn::Sub"]
    assert "mlflow_tracking_uri: ${MlflowTrackingServerArn}\n" in body[0]
    # Formatted from the server's name, so the bundle does not wait for the server.
    assert joined(body[1]["MlflowTrackingServerArn"]) == MLFLOW_ARN
    # Only the names a file uses (cfn-lint flags unused Fn::Sub variables).
    assert set(body[1]) == {"DataBucket", "ArtifactsBucket", "MlflowTrackingServerArn"}
    launch = bundle_files(template)["recipes/launch/lite-sft.json"]["Body"]["Fn::Sub"]
    assert launch[1]["ClusterName"] == "novapod-nova-jobs"  # known at synth
    assert set(launch[1]) == {
        "DataBucket",
        "ArtifactsBucket",
        "ClusterName",
        "MlflowTrackingServerArn",
    }


# CloudFormation reads templates of at most 1 MB from S3, and invokes a custom
# resource's function asynchronously, whose event is at most 256 KB (Lambda quotas).
TEMPLATE_LIMIT = 1_000_000
EVENT_LIMIT = 256 * 1024


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_templates_and_bundle_events_stay_within_limits(synth, path) -> None:
    result = synth(path)
    for kind, template in result.templates.items():
        assert len(json.dumps(template)) < TEMPLATE_LIMIT, kind
    for props in bundle_files(result.templates.get("nova-base", {"Resources": {}})).values():
        assert len(json.dumps(props)) < EVENT_LIMIT // 4, props["Key"]


def test_outputs_say_where_things_are(synth) -> None:
    result, template = nova(synth)
    outputs = template["Outputs"]
    assert all(o.get("Description") for o in outputs.values())
    assert outputs["ConnectClusterCommand"]["Value"] == (
        "hyperpod connect-cluster --cluster-name novapod-nova-jobs --region us-east-1 "
        "--namespace nova-jobs"
    )
    assert outputs["Namespace"]["Value"] == "nova-jobs"
    assert joined(outputs["RecipeIndexUri"]["Value"], result) == (
        "s3://${ArtifactsBucket}/recipes/index.json"
    )
    assert joined(outputs["OutputsPrefix"]["Value"], result) == (
        "s3://${ArtifactsBucket}/nova/nova-jobs/"
    )
    assert joined(outputs["RecipeBundleLogGroup"]["Value"], result).startswith("${RecipeBundleLogs")


def test_launch_specs_use_the_configured_namespace() -> None:
    data = yamlsafe.load(EXAMPLE.read_text())
    data["nova"]["namespace"] = "nova-team"
    config = parse_config(data)
    spec = render.launch_spec(config, config.jobs[0])
    assert spec["namespace"] == "nova-team"
    assert spec["commands"][0][-2:] == ["--namespace", "nova-team"]
