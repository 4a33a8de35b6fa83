"""TrainingJobPermissions built alone in a small stack: every statement of the execution
role's policy and of the launch policy written out as a literal, the trust policy, the
cdk-nag packs (all three, as a config with `compliance` runs them) with their reasons,
cfn-lint, and the endpoint and repository helpers. A dropped action, a widened resource
or a lost condition fails one of these tests; each test's docstring names the bug."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template

from novapod.config.network import TrainingJobNeeds, training_job_endpoints
from novapod.constructs.training_job_role import (
    TrainingJobPermissions,
    nova_training_job_repositories,
    training_job_prefix,
)
from novapod.node_images import ImageRepository
from novapod.nova.mlflow import mlflow_actions
from tests.conftest import resources

ACCOUNT, REGION = "111122223333", "us-east-1"
ROOT = "/Unit/TrainingJobs"
KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
MLFLOW = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-tracking-server/novapod-dev"
REWARD = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:reward"
PLAN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/novapod-dev-tj-0a1b2c3d"
JOBS = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/novapod-dev--*"
ENI = f"arn:aws:ec2:{REGION}:{ACCOUNT}:network-interface/*"
NOVA = "708977205387"  # the us-east-1 Nova registry (novapod/nova/catalog.yaml)
REPOSITORIES = [
    f"arn:aws:ecr:{REGION}:{NOVA}:repository/nova-fine-tune-repo",
    f"arn:aws:ecr:{REGION}:{NOVA}:repository/nova-evaluation-repo",
    f"arn:aws:ecr:{REGION}:{NOVA}:repository/nova-distillation-repo",
]


def _arguments(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "environment": "dev",
        "job_prefix": "novapod-dev--",
        "input_keys": ["datasets/sft/*", "datasets/eval.jsonl"],
        "recipe_prefix": "training-jobs/recipes/",
        "output_prefix": "nova/dev/",
        "subnet_ids": ["subnet-a", "subnet-b"],
        "security_group_id": "sg-1",
        "repositories": nova_training_job_repositories(REGION, distillation=True),
        "mlflow_server_arn": MLFLOW,
        "lambda_arns": [REWARD, REWARD],
        "distillation_teachers": ["us.amazon.nova-pro-v1:0"],
        "volume_encryption": True,
        "training_plan_arns": [PLAN],
    }
    arguments.update(overrides)
    return arguments


def _build(app: App, name: str = "Unit", **overrides: Any) -> tuple[Stack, TrainingJobPermissions]:
    stack = Stack(app, name, env=Environment(account=ACCOUNT, region=REGION))
    permissions = TrainingJobPermissions(
        stack,
        "TrainingJobs",
        data_bucket=s3.Bucket.from_bucket_name(stack, "Data", "novapod-dev-data"),
        output_bucket=s3.Bucket.from_bucket_name(stack, "Artifacts", "novapod-dev-artifacts"),
        key=kms.Key.from_key_arn(stack, "Key", KEY),
        **_arguments(**overrides),
    )
    return stack, permissions


def _template(**overrides: Any) -> dict[str, Any]:
    stack, _ = _build(App(), **overrides)
    return Template.from_stack(stack).to_json()


def _text(value: Any) -> Any:
    """A CloudFormation value with the partition resolved, as plain strings."""
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(_text(p) for p in parts)
    if value == {"Ref": "AWS::Partition"}:
        return "aws"
    if isinstance(value, list):
        return [_text(v) for v in value]
    if isinstance(value, dict):
        return {k: _text(v) for k, v in value.items()}
    return value


def _statements(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    (policy,) = resources(template, type_).values()
    found = {}
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Allow"
        found[statement["Sid"]] = {
            k: _text(v) for k, v in statement.items() if k not in ("Sid", "Effect")
        }
    return found


def _s3(path: str) -> str:
    return f"arn:aws:s3:::{path}"


DESCRIBE = [
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ecr:GetAuthorizationToken",
]
PROFILE = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/us.amazon.nova-pro-v1:0"


def test_execution_policy_statements() -> None:
    """Every statement of the role's policy, with everything a job may use. Fails on a
    dropped or added action, a resource widened past a prefix, repository or stream, a
    lost condition (ListBucket without s3:prefix, PutMetricData without its namespace,
    CreateGrant without GrantIsForAWSResource, the teacher model without the profile),
    or a Lambda ARN listed twice."""
    assert _statements(_template(), "AWS::IAM::Policy") == {
        "ReadInputsAndRecipes": {
            "Action": "s3:GetObject",
            "Resource": [
                _s3("novapod-dev-data/datasets/sft/*"),
                _s3("novapod-dev-data/datasets/eval.jsonl*"),
                _s3("novapod-dev-data/training-jobs/recipes/*"),
            ],
        },
        "ListInputsAndRecipes": {
            "Action": "s3:ListBucket",
            "Resource": _s3("novapod-dev-data"),
            "Condition": {
                "StringLike": {
                    "s3:prefix": [
                        "datasets/sft/*",
                        "datasets/eval.jsonl*",
                        "training-jobs/recipes/*",
                    ]
                }
            },
        },
        "WriteOutputs": {
            "Action": ["s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"],
            "Resource": _s3("novapod-dev-artifacts/nova/dev/*"),
        },
        "ListOutputs": {
            "Action": "s3:ListBucket",
            "Resource": _s3("novapod-dev-artifacts"),
            "Condition": {"StringLike": {"s3:prefix": "nova/dev/*"}},
        },
        "UseTheStorageKey": {
            "Action": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
            "Resource": KEY,
        },
        "EncryptTheVolumes": {
            "Action": "kms:CreateGrant",
            "Resource": KEY,
            "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
        "PullJobImages": {
            "Action": [
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
                "ecr:BatchCheckLayerAvailability",
            ],
            "Resource": REPOSITORIES,
        },
        "WriteJobLogs": {
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:"
            "log-stream:novapod-dev--*",
        },
        "TrainingJobsLogGroup": {
            "Action": ["logs:CreateLogGroup", "logs:DescribeLogStreams"],
            "Resource": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:*",
        },
        "PublishJobMetrics": {
            "Action": "cloudwatch:PutMetricData",
            "Resource": "*",
            "Condition": {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/TrainingJobs"}},
        },
        "CreateInterfacesInOurSubnets": {
            "Action": "ec2:CreateNetworkInterface",
            "Resource": [
                ENI,
                f"arn:aws:ec2:{REGION}:{ACCOUNT}:subnet/subnet-a",
                f"arn:aws:ec2:{REGION}:{ACCOUNT}:subnet/subnet-b",
                f"arn:aws:ec2:{REGION}:{ACCOUNT}:security-group/sg-1",
            ],
        },
        "ManageInterfaces": {
            "Action": [
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
            ],
            "Resource": ENI,
        },
        "DescribeWithoutResourceLevel": {"Action": DESCRIBE, "Resource": "*"},
        "TrackRuns": {"Action": list(mlflow_actions().run_actions()), "Resource": MLFLOW},
        "InvokeJobFunctions": {"Action": "lambda:InvokeFunction", "Resource": REWARD},
        "InvokeTeacherProfiles": {"Action": "bedrock:InvokeModel", "Resource": PROFILE},
        "InvokeTeacherModelsThroughProfiles": {
            "Action": "bedrock:InvokeModel",
            "Resource": "arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
            "Condition": {"StringEquals": {"bedrock:InferenceProfileArn": [PROFILE]}},
        },
    }


def test_mlflow_grant_logs_runs_and_never_deletes() -> None:
    """TrackRuns is the restricted groups' set: fails if it lost LogMetric or gained a
    Delete* action (experiments outlive the jobs)."""
    actions = list(mlflow_actions().run_actions())
    assert "sagemaker-mlflow:LogMetric" in actions and "sagemaker-mlflow:CreateRun" in actions
    assert not [a for a in actions if ":Delete" in a or "*" in a]


def test_optional_grants_appear_only_when_asked() -> None:
    """Without MLflow, functions, teachers and volume keys the role has none of their
    statements. Fails if MLflow, InvokeFunction, Bedrock or CreateGrant were granted
    unconditionally."""
    template = _template(
        mlflow_server_arn=None,
        lambda_arns=(),
        distillation_teachers=(),
        volume_encryption=False,
        repositories=nova_training_job_repositories(REGION, distillation=False),
    )
    statements = _statements(template, "AWS::IAM::Policy")
    assert list(statements) == [
        "ReadInputsAndRecipes",
        "ListInputsAndRecipes",
        "WriteOutputs",
        "ListOutputs",
        "UseTheStorageKey",
        "PullJobImages",
        "WriteJobLogs",
        "TrainingJobsLogGroup",
        "PublishJobMetrics",
        "CreateInterfacesInOurSubnets",
        "ManageInterfaces",
        "DescribeWithoutResourceLevel",
    ]
    assert statements["PullJobImages"]["Resource"] == REPOSITORIES[:2]


def test_a_teacher_named_by_its_model_id_is_invoked_in_this_region_only() -> None:
    """A bare model ID gets the in-Region model ARN and no profile statements; with a
    profile beside it the bare model stays unconditioned (a shared condition would deny
    it). Fails if a bare ID were treated as a profile or given a '*' Region."""
    bare = _statements(
        _template(distillation_teachers=["amazon.nova-premier-v1:0"]), "AWS::IAM::Policy"
    )
    model = f"arn:aws:bedrock:{REGION}::foundation-model/amazon.nova-premier-v1:0"
    assert bare["InvokeTeacherModels"] == {"Action": "bedrock:InvokeModel", "Resource": model}
    assert "InvokeTeacherProfiles" not in bare
    mixed = _statements(
        _template(distillation_teachers=["us.amazon.nova-pro-v1:0", "amazon.nova-premier-v1:0"]),
        "AWS::IAM::Policy",
    )
    assert mixed["InvokeTeacherModels"] == {"Action": "bedrock:InvokeModel", "Resource": model}
    assert mixed["InvokeTeacherModelsThroughProfiles"]["Condition"] == {
        "StringEquals": {"bedrock:InferenceProfileArn": [PROFILE]}
    }


def test_trust_is_sagemaker_for_this_environments_training_jobs_only() -> None:
    """The trust names SageMaker and, as AWS's confused-deputy example for training jobs
    does, aws:SourceArn of this account's training jobs, narrowed to the prefix. Fails
    without the condition, with training-job/* (any job of the account) or another
    service."""
    (role,) = resources(_template(), "AWS::IAM::Role").values()
    assert _text(role["Properties"]["AssumeRolePolicyDocument"]["Statement"]) == [
        {
            "Action": "sts:AssumeRole",
            "Condition": {"ArnLike": {"aws:SourceArn": JOBS}},
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
        }
    ]
    assert (
        role["Properties"]["Description"] == "novapod dev: SageMaker training jobs novapod-dev--*"
    )
    assert "ManagedPolicyArns" not in role["Properties"]  # nothing AWS-managed and broad


def _launch_statements(**overrides: Any) -> dict[str, dict[str, Any]]:
    template = _template(**overrides)
    role = next(iter(resources(template, "AWS::IAM::Role")))
    statements = _statements(template, "AWS::IAM::ManagedPolicy")
    passed = statements["PassTheExecutionRole"]
    assert passed["Resource"] == {"Fn::GetAtt": [role, "Arn"]}
    passed["Resource"] = "<role>"
    return statements


LAUNCH_BASE = {
    "CreateTrainingJobsInOurVpc": {
        "Action": "sagemaker:CreateTrainingJob",
        "Resource": JOBS,
        "Condition": {
            "ForAllValues:StringEquals": {
                "sagemaker:VpcSubnets": ["subnet-a", "subnet-b"],
                "sagemaker:VpcSecurityGroupIds": ["sg-1"],
            },
            "Null": {
                "sagemaker:VpcSubnets": "false",
                "sagemaker:VpcSecurityGroupIds": "false",
                "sagemaker:OutputKmsKey": "false",
            },
            "ArnEquals": {"sagemaker:OutputKmsKey": KEY},
            "ArnEqualsIfExists": {"sagemaker:VolumeKmsKey": KEY},
        },
    },
    "PassTheExecutionRole": {
        "Action": "iam:PassRole",
        "Resource": "<role>",
        "Condition": {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
    },
    "DescribeAndStopOurTrainingJobs": {
        "Action": ["sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob"],
        "Resource": JOBS,
    },
    "ListTrainingJobs": {"Action": "sagemaker:ListTrainingJobs", "Resource": "*"},
    "MapPlanZones": {"Action": "ec2:DescribeAvailabilityZones", "Resource": "*"},
    "UploadRecipes": {
        "Action": "s3:PutObject",
        "Resource": _s3("novapod-dev-data/training-jobs/recipes/*"),
    },
    "EncryptRecipeUploads": {
        "Action": "kms:GenerateDataKey",
        "Resource": KEY,
        "Condition": {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}},
    },
    # Our jobs' streams only: not FilterLogEvents, which takes the account-wide group.
    "ReadOurTrainingJobLogs": {
        "Action": "logs:GetLogEvents",
        "Resource": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:"
        "log-stream:novapod-dev--*",
    },
    "FindOurTrainingJobLogStreams": {
        "Action": "logs:DescribeLogStreams",
        "Resource": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:*",
    },
}


def test_launch_policy_statements() -> None:
    """Every statement of TrainingJobLaunchPolicy with a plan and tags. Fails if jobs
    could be created outside our subnets, security group or key (a condition lost, or
    ForAllValues without Null, which a request without a VpcConfig passes), on any
    plan, tagged beyond CreateTrainingJob, or if PassRole lost its service."""
    expected = dict(LAUNCH_BASE)
    expected["RunOnOurTrainingPlans"] = {
        "Action": "sagemaker:CreateTrainingJob",
        "Resource": [PLAN, f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/*"],
    }
    # The launcher describes the plan (ARN, status, zones) before it starts a job on it.
    expected["DescribeOurTrainingPlans"] = {
        "Action": "sagemaker:DescribeTrainingPlan",
        "Resource": PLAN,
    }
    expected["TagTrainingJobsOnCreate"] = {
        "Action": "sagemaker:AddTags",
        "Resource": JOBS,
        "Condition": {"StringEquals": {"sagemaker:TaggingAction": "CreateTrainingJob"}},
    }
    statements = _launch_statements()
    assert statements == expected
    assert list(statements)[:4] == [
        "CreateTrainingJobsInOurVpc",
        "RunOnOurTrainingPlans",
        "DescribeOurTrainingPlans",
        "TagTrainingJobsOnCreate",
    ]


def test_launch_policy_without_plans_or_tags() -> None:
    """On demand and untagged: no plan or AddTags statement. Fails if the plan statement
    were written with an empty list or AddTags granted regardless."""
    assert _launch_statements(training_plan_arns=(), tag_on_create=False) == LAUNCH_BASE


def test_no_statement_grants_a_wildcard_action() -> None:
    """No action in either policy (or the trust) has a '*'. Fails on sagemaker-mlflow:*,
    bedrock:InvokeModel*, s3:Get* and the like."""
    text = json.dumps(_template())
    actions = [
        a
        for document in _documents(json.loads(text))
        for s in document["Statement"]
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    assert actions and not [a for a in actions if "*" in a]


def _documents(template: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        for name in ("PolicyDocument", "AssumeRolePolicyDocument"):
            if name in properties:
                found.append(properties[name])
    return found


@pytest.fixture(scope="module")
def nagged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The construct under all three cdk-nag packs, as a config with `compliance` runs
    them (add_policy_checks; inline policies of one role acknowledged by the rule)."""
    from novapod.compliance.rules import acknowledge_inline_policies
    from novapod.environment import add_policy_checks, feature_flags

    outdir = tmp_path_factory.mktemp("training-job-cdk")
    app = App(outdir=str(outdir), context=feature_flags())
    stack, _ = _build(app)
    acknowledge_inline_policies(stack)
    add_policy_checks(app, ["nist-800-53-r5", "hipaa"])
    app.synth()  # fails on any unacknowledged finding
    return outdir


def _acknowledged(outdir: Path) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for path, entries in json.loads((outdir / "Unit.metadata.json").read_text()).items():
        for entry in entries:
            if entry["type"] == "aws:cdk:acknowledged-rules":
                found.setdefault(path, {}).update(entry["data"])
    return found


def test_cdk_nag_passes_with_a_reason_for_each_finding(nagged: Path) -> None:
    """All three packs pass, and exactly these findings are acknowledged, each with its
    reason. Fails on a new wildcard (a new finding with no reason fails synthesis), an
    acknowledgement of something that is no longer there, or a reason that went vague."""
    report = json.loads((nagged / "validation-report.json").read_text())
    assert all(plugin["conclusion"] == "success" for plugin in report["pluginReports"])
    acknowledged = _acknowledged(nagged)
    policy = {
        rule.removeprefix("Annotation::"): reason
        for rule, reason in acknowledged[f"{ROOT}/TrainingJobExecutionPolicy"].items()
        if "AwsSolutions-" in rule
    }
    data = "arn:aws:s3:::novapod-dev-data"
    logs = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs"
    inputs = (
        "Training jobs read every object below their datasets' prefixes and the uploaded "
        "recipes' prefix (File mode downloads the whole S3 prefix)."
    )
    assert policy == {
        "AwsSolutions-IAM5[Resource::*]": "EC2 Describe* and ecr:GetAuthorizationToken (a "
        "registry login token, account-wide) have no resource-level permissions, and "
        "cloudwatch:PutMetricData has none either: it is limited to the "
        "/aws/sagemaker/TrainingJobs namespace by cloudwatch:namespace.",
        f"AwsSolutions-IAM5[Resource::arn:aws:ec2:{REGION}:{ACCOUNT}:"
        "network-interface/*]": "SageMaker creates the jobs' network interfaces, whose IDs "
        "do not exist yet; creation is limited to our subnets and security group.",
        "AwsSolutions-IAM5[Resource::arn:aws:s3:::novapod-dev-artifacts/"
        "nova/dev/*]": "SageMaker writes each job's outputs under <output path>/<job name>/, "
        "keys chosen at run time; writes are limited to this environment's output prefix.",
        f"AwsSolutions-IAM5[Resource::{logs}:log-stream:novapod-dev--*]": "SageMaker names "
        "one log stream per instance, <job name>/algo-<n>-<time>; only streams of jobs "
        "named novapod-dev--*.",
        f"AwsSolutions-IAM5[Resource::{logs}:*]": "CloudWatch Logs authorizes "
        "CreateLogGroup and DescribeLogStreams on the group's ARN ending in ':*'; the "
        "statement allows only those two on the training jobs' group.",
        f"AwsSolutions-IAM5[Resource::{data}/datasets/sft/*]": inputs,
        f"AwsSolutions-IAM5[Resource::{data}/datasets/eval.jsonl*]": inputs,
        f"AwsSolutions-IAM5[Resource::{data}/training-jobs/recipes/*]": inputs,
        "AwsSolutions-IAM5[Resource::arn:aws:bedrock:*::foundation-model/"
        "amazon.nova-pro-v1:0]": "A cross-Region inference profile routes to the teacher "
        "model in any of its Regions; the model is allowed only through the profile "
        "(bedrock:InferenceProfileArn).",
    }
    launch = {
        rule.removeprefix("Annotation::"): reason
        for rule, reason in acknowledged[f"{ROOT}/TrainingJobLaunchPolicy"].items()
        if "AwsSolutions-" in rule
    }
    assert launch == {
        f"AwsSolutions-IAM5[Resource::arn:aws:sagemaker:{REGION}:{ACCOUNT}:"
        "training-job/novapod-dev--*]": "Training job names are chosen per run below the "
        "environment's prefix novapod-dev--; creation is also limited to our subnets, "
        "security group and key.",
        "AwsSolutions-IAM5[Resource::*]": "sagemaker:ListTrainingJobs and "
        "ec2:DescribeAvailabilityZones have no resource-level permissions (the Service "
        "Authorization Reference lists no resource type for them).",
        f"AwsSolutions-IAM5[Resource::{data}/training-jobs/recipes/*]": "The launcher uploads "
        "each rendered recipe under a content-addressed key below the recipe prefix.",
        f"AwsSolutions-IAM5[Resource::arn:aws:sagemaker:{REGION}:{ACCOUNT}:"
        "reserved-capacity/*]": "A training plan's reserved capacities have IDs SageMaker "
        "generates; AWS's AWSBatchServiceRolePolicyForSageMaker grants CreateTrainingJob "
        "on them so.",
        f"AwsSolutions-IAM5[Resource::{logs}:log-stream:novapod-dev--*]": "SageMaker names "
        "one log stream per instance, <job name>/algo-<n>-<time>; GetLogEvents only on "
        "streams of jobs named novapod-dev--*.",
        f"AwsSolutions-IAM5[Resource::{logs}:*]": "CloudWatch Logs authorizes "
        "DescribeLogStreams on the group's ARN ending in ':*'; it lists the training jobs' "
        "stream names, to find a job's.",
    }
    # The NIST and HIPAA packs flag the role's inline policy only, acknowledged by rule.
    others = {
        path: sorted(r for r in rules if "AwsSolutions-" not in r and "Annotation::" in r)
        for path, rules in acknowledged.items()
    }
    assert {p: r for p, r in others.items() if r} == {
        "/Unit/TrainingJobs/TrainingJobExecutionPolicy/Resource": [
            "Annotation::HIPAA.Security-IAMNoInlinePolicy",
            "Annotation::NIST.800.53.R5-IAMNoInlinePolicy",
        ]
    }


def test_cfn_lint_reports_nothing() -> None:
    from tests.lint import lint_findings

    assert lint_findings(_template(), REGION) == []


def test_endpoints_training_jobs_need() -> None:
    """S3's gateway for every training job, and each extra endpoint only for the jobs
    that call it, in one order. Fails if S3 were left out, an endpoint added for a job
    that does not call it, or a name were repeated."""
    assert training_job_endpoints([]) == ()
    assert training_job_endpoints([TrainingJobNeeds()]) == ("s3",)
    assert training_job_endpoints(
        [TrainingJobNeeds(distillation=True), TrainingJobNeeds(mlflow=True, lambdas=True)]
    ) == ("s3", "lambda", "sagemaker.experiments", "bedrock-runtime")
    assert training_job_endpoints([TrainingJobNeeds(mlflow=True)] * 3) == (
        "s3",
        "sagemaker.experiments",
    )


def test_nova_repositories_come_from_the_catalogs_registry() -> None:
    """The registry account per Region is the catalog's; distillation adds its own
    repository. Fails on a hard-coded account or a distillation pull for every role."""
    assert nova_training_job_repositories("us-west-2", distillation=False) == (
        ImageRepository("us-west-2", "176779409107", "nova-fine-tune-repo"),
        ImageRepository("us-west-2", "176779409107", "nova-evaluation-repo"),
    )
    assert nova_training_job_repositories("ap-northeast-1", distillation=True)[-1] == (
        ImageRepository("ap-northeast-1", "878185805882", "nova-distillation-repo")
    )
    with pytest.raises(ValueError, match=r"^region eu-west-2 has no Nova training images "):
        nova_training_job_repositories("eu-west-2", distillation=False)


def test_the_job_prefix_is_the_environments_with_a_dash() -> None:
    """`novapod-dev-`, so env dev's ARN pattern never covers env dev2's jobs."""
    assert training_job_prefix("novapod-dev") == "novapod-dev--"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"job_prefix": "novapod-dev"}, "job_prefix 'novapod-dev' must be lowercase"),
        ({"job_prefix": "Novapod-dev-"}, "job_prefix 'Novapod-dev-' must be lowercase"),
        ({"recipe_prefix": "recipes"}, "recipe_prefix 'recipes' must be a key prefix ending"),
        ({"output_prefix": "/nova/"}, "output_prefix '/nova/' must be a key prefix ending"),
        ({"input_keys": ["a/*/b"]}, r"input_keys \['a/\*/b'\] must be object keys"),
        ({"input_keys": [""]}, r"input_keys \[''\] must be object keys"),
        ({"subnet_ids": []}, "subnet_ids is empty"),
        ({"repositories": ()}, "repositories is empty"),
    ],
)
def test_bad_arguments_are_refused_in_one_sentence(overrides: dict[str, Any], message: str) -> None:
    """Fails if a prefix that would let env dev reach dev2's jobs, a mid-key wildcard or
    an empty subnet list (a role that can create no interface) got through."""
    with pytest.raises(ValueError, match=f"^{message}"):
        _build(App(), **overrides)
