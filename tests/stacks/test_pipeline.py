"""PipelineStack (CDK Pipelines) from config/pipeline.example.yaml: a stage per environment,
approvals where they belong, the synth step's commands, box and time limit, the
repository connection's permissions, the post-deploy check and its permissions, the
artifact bucket's encryption, cdk-nag and cfn-lint. The example lists
rig-plus-standard.yaml (environment `mixed`) and nova-jobs.yaml (production); its
connection ARN has the codeconnections prefix, and a variant (`legacy`) has the
codestar-connections one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from novapod.config import load_config, load_pipeline
from tests.aws_credentials import PROBE, credential_method
from tests.conftest import DEFAULT_CONFIG, EXAMPLES, ROOT, resources
from tests.lint import lint_findings
from tests.pipeline_synth import (
    PIPELINE_EXAMPLE,
    SynthesizedPipeline,
    synthesize_pipeline,
    synthesize_pipeline_file,
)

pytestmark = pytest.mark.slow
ENVIRONMENTS = {"mixed": False, "nova-jobs": True}  # stage -> production
EXAMPLES_DIR = ROOT / "config" / "examples"
KINDS = ["network", "storage", "capacity", "eks", "nova-base", "hyperpod", "nova", "monitor"]
REVIEW = "/novapod-review/#{codepipeline.PipelineExecutionId}/"
CONNECTION = "connection/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
CONNECTIONS = {  # the example's, and the legacy variant's
    "codeconnections": f"arn:aws:codeconnections:us-east-1:111122223333:{CONNECTION}",
    "codestar-connections": f"arn:aws:codestar-connections:us-east-1:111122223333:{CONNECTION}",
}


@pytest.fixture(scope="module")
def synthesized() -> SynthesizedPipeline:
    return synthesize_pipeline()


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> SynthesizedPipeline:
    """The example with a connection made before July 2024 (a codestar-connections ARN),
    deploying rig-plus-standard.yaml (`mixed`, which has a post-deploy check) only."""
    text = PIPELINE_EXAMPLE.read_text()
    environments = (
        "    - config: examples/rig-plus-standard.yaml\n"
        "    - config: examples/nova-jobs.yaml\n"
        "      production: true"
    )
    assert CONNECTIONS["codeconnections"] in text and environments in text
    path = tmp_path_factory.mktemp("legacy") / "pipeline.yaml"
    path.write_text(
        text.replace(CONNECTIONS["codeconnections"], CONNECTIONS["codestar-connections"]).replace(
            environments, f"    - config: {EXAMPLES_DIR / 'rig-plus-standard.yaml'}"
        )
    )
    return synthesize_pipeline_file(path, "config/legacy.yaml")


def by_name(actions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {a["Name"]: a for a in actions}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def joined(value: Any) -> str:
    """A string or Fn::Join, with Refs as ${Id}."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return "${" + value["Ref"] + "}"
    separator, parts = value["Fn::Join"]
    return str(separator).join(joined(p) for p in parts)


def test_a_stage_per_environment_after_source_build_and_self_update(synthesized) -> None:
    names = [s["Name"] for s in synthesized.pipeline["Stages"]]
    assert names == ["Source", "Build", "UpdatePipeline", "Assets", "mixed", "nova-jobs"]
    for stage in ENVIRONMENTS:
        env = {"mixed": "mixed", "nova-jobs": "nova-jobs"}[stage]
        expected = {f"novapod-{env}-{kind}" for kind in KINDS}
        # The stage holds build_environment's stacks, and the pipeline deploys each.
        assert set(synthesized.stages[stage]) == expected
        deployed = {
            a["Configuration"]["StackName"]
            for a in synthesized.actions(stage)
            if a["ActionTypeId"]["Provider"] == "CloudFormation"
            and a["Configuration"].get("ActionMode") == "CHANGE_SET_EXECUTE"
        }
        assert deployed == expected


def test_the_stages_are_the_environments_own_templates(synthesized) -> None:
    # The same composition as app.py: the capacity stack buys the config's plan names.
    mixed = load_config(ROOT / "config" / "examples" / "rig-plus-standard.yaml")
    capacity = synthesized.stages["mixed"]["novapod-mixed-capacity"]
    names = {
        r["Properties"]["PlanName"]
        for r in resources(capacity, "Custom::NovapodTrainingPlan").values()
    }
    assert names == set(mixed.purchase_names().values())


def review_link(stage: str) -> str:
    return (
        "https://s3.console.aws.amazon.com/s3/object/${Artifacts82DD59A1}"
        f"{REVIEW}{stage}.md?region=us-east-1"
    )


def test_a_manual_approval_before_production_stages_only(synthesized) -> None:
    for stage, production in ENVIRONMENTS.items():
        actions = by_name(synthesized.actions(stage))
        promote = actions.get("PromoteToProduction")
        if not production:
            assert promote is None, stage
            continue
        assert promote is not None
        assert promote["ActionTypeId"] == {
            "Category": "Approval",
            "Owner": "AWS",
            "Provider": "Manual",
            "Version": "1",
        }
        others = [a["RunOrder"] for n, a in actions.items() if n != "PromoteToProduction"]
        assert promote["RunOrder"] < min(others)  # before anything of the stage
        comment = joined(promote["Configuration"]["CustomData"])
        assert f"${{Artifacts82DD59A1}}{REVIEW}{stage}.md" in comment
        assert joined(promote["Configuration"]["ExternalEntityLink"]) == review_link(stage)


def test_a_change_set_approval_before_each_capacity_stack_and_no_other(synthesized) -> None:
    for stage in ENVIRONMENTS:
        capacity = f"novapod-{stage}-capacity"
        actions = synthesized.actions(stage)
        approvals = [
            a for a in actions
            if a["ActionTypeId"]["Provider"] == "Manual" and a["Name"] != "PromoteToProduction"
        ]  # fmt: skip
        assert [a["Name"] for a in approvals] == [f"novapod-{stage}-capacity.ApprovePurchases"]
        steps = {
            (a["Configuration"].get("StackName"), a["Configuration"].get("ActionMode")): a
            for a in actions
            if a["ActionTypeId"]["Provider"] == "CloudFormation"
        }
        prepare = steps[(capacity, "CHANGE_SET_REPLACE")]["RunOrder"]
        execute = steps[(capacity, "CHANGE_SET_EXECUTE")]["RunOrder"]
        # After the change set exists (so it can be read), before it is executed.
        assert prepare < approvals[0]["RunOrder"] < execute
        comment = joined(approvals[0]["Configuration"]["CustomData"])
        assert "BUY training plans" in comment
        assert f"${{Artifacts82DD59A1}}{REVIEW}{stage}.md" in comment
        assert joined(approvals[0]["Configuration"]["ExternalEntityLink"]) == review_link(stage)


def test_gates_follow_the_config() -> None:
    from novapod.stacks.pipeline import Gates, stage_gates

    plain = load_config(DEFAULT_CONFIG)  # no plans, no HyperPod cluster
    assert stage_gates(plain, production=False) == Gates(False, False, False)
    assert stage_gates(plain, production=True) == Gates(True, False, False)
    mixed = load_config(ROOT / "config" / "examples" / "rig-plus-standard.yaml")
    assert stage_gates(mixed, production=False) == Gates(False, True, True)


def test_source_is_the_codestar_connection_cloned_for_codebuild(synthesized) -> None:
    (source,) = synthesized.actions("Source")
    assert source["ActionTypeId"]["Provider"] == "CodeStarSourceConnection"
    assert source["Configuration"] == {
        "ConnectionArn": "arn:aws:codeconnections:us-east-1:111122223333:connection/"
        "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
        "FullRepositoryId": "my-org/novapod-environments",
        "BranchName": "main",
        # A git clone, so the review step can synthesize the parent commit.
        "OutputArtifactFormat": "CODEBUILD_CLONE_REF",
    }


def test_the_synth_step_tests_synthesizes_with_the_pinned_cli_and_reviews(synthesized) -> None:
    (synth,) = synthesized.actions("Build")
    spec = synthesized.buildspec(synth)
    commands = spec["phases"]["build"]["commands"]
    # `make test` runs where botocore finds none of the credentials a build has
    # (tests/unit/test_pipeline_credentials.py tries every source on this wrapper).
    wrapper = commands[1].removesuffix("make test")
    assert wrapper != commands[1] and wrapper.startswith("env ")
    keys = {"HOME": "/nonexistent", "AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "x"}
    assert credential_method(PROBE, keys) == "env"
    assert credential_method(wrapper + PROBE, keys) == "none"
    assert commands[:1] + commands[2:] == [
        "make setup",
        'PATH="$PWD/.venv/bin:$PATH" npx --no-install cdk synth --quiet --no-lookups '
        '-a "python3 pipeline_app.py" -c pipeline=config/pipeline.example.yaml',
        "make pipeline-review PIPELINE=config/pipeline.example.yaml",
        'aws s3 cp --recursive review/ "s3://$REVIEW_BUCKET/novapod-review/$EXECUTION_ID/"',
    ]
    assert spec["phases"]["install"]["runtime-versions"] == {"python": "3.12", "nodejs": "20"}
    assert spec["artifacts"]["base-directory"] == "cdk.out"
    # The execution ID is a pipeline variable: CodePipeline fills it in, in the action.
    variables = json.loads(synth["Configuration"]["EnvironmentVariables"])
    assert {"name": "EXECUTION_ID", "type": "PLAINTEXT",
            "value": "#{codepipeline.PipelineExecutionId}"} in variables  # fmt: skip
    project = synthesized.project(synth)["Properties"]["Environment"]
    assert {"Name": "REVIEW_BUCKET", "Type": "PLAINTEXT",
            "Value": {"Ref": "Artifacts82DD59A1"}} in project["EnvironmentVariables"]  # fmt: skip
    assert project["Image"] == "aws/codebuild/standard:7.0"
    assert project.get("PrivilegedMode") is not True  # no Docker in the synth


def test_the_synth_step_has_a_medium_box_and_a_time_limit(synthesized) -> None:
    # CodeBuild's defaults would be BUILD_GENERAL1_SMALL and 60 minutes.
    (synth,) = synthesized.actions("Build")
    properties = synthesized.project(synth)["Properties"]
    assert properties["Environment"]["ComputeType"] == "BUILD_GENERAL1_MEDIUM"
    assert properties["Environment"]["Image"] == "aws/codebuild/standard:7.0"
    assert properties["TimeoutInMinutes"] == 90


def connection_users(synthesized: SynthesizedPipeline) -> dict[str, str]:
    """Role logical ID -> "source" or "clone", for each role that reads the repository:
    the source action's and every CodeBuild project whose input is the clone."""
    (source,) = synthesized.actions("Source")
    users = {source["RoleArn"]["Fn::GetAtt"][0]: "source"}
    (synth,) = synthesized.actions("Build")
    users[synthesized.role_of(synth)] = "clone"
    for stage in synthesized.pipeline["Stages"]:
        for action in stage["Actions"]:
            if action["Name"].startswith("Check"):
                users[synthesized.role_of(action)] = "clone"
    return users


@pytest.mark.parametrize("service", ["codeconnections", "codestar-connections"])
def test_the_connection_is_used_with_the_actions_of_its_arns_service(request, service) -> None:
    synthesized = request.getfixturevalue(
        {"codeconnections": "synthesized", "codestar-connections": "legacy"}[service]
    )
    arn = CONNECTIONS[service]
    (source,) = synthesized.actions("Source")
    assert source["Configuration"]["ConnectionArn"] == arn
    users = connection_users(synthesized)
    assert list(users.values()).count("clone") == 1 + len(synthesized.stages)  # synth, checks
    granted = synthesized.statements_on(arn)
    assert set(granted) == set(users)  # no other role may use the connection
    for role, use in users.items():
        ours = [s for s in granted[role] if "Sid" in s]
        (statement,) = ours
        expected = {f"{service}:UseConnection"}
        if use == "clone":
            expected.add(f"{service}:GetConnectionToken")
        assert (
            statement["Sid"]
            == {
                "source": "UseRepositoryConnection",
                "clone": "CloneThroughConnection",
            }[use]
        )
        assert (statement["Effect"], set(as_list(statement["Action"]))) == ("Allow", expected)
        assert "Condition" not in statement
        # Besides ours, only aws-cdk-lib's own grant, which names the old service whatever
        # the ARN (inert on a codeconnections ARN).
        cdk = [a for s in granted[role] if s not in ours for a in as_list(s["Action"])]
        assert cdk == ["codestar-connections:UseConnection"], (role, cdk)


def test_self_mutation_and_assets_use_pinned_clis(synthesized) -> None:
    pins = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    (mutate,) = synthesized.actions("UpdatePipeline")
    install = synthesized.buildspec(mutate)["phases"]["install"]["commands"]
    assert install == [f"npm install -g aws-cdk@{pins['aws-cdk']}"]
    (assets,) = synthesized.actions("Assets")  # one project for every file asset
    install = synthesized.buildspec(assets)["phases"]["install"]["commands"]
    assert install == ["npm install -g cdk-assets@4.7.3"]


def check_statements(synthesized: SynthesizedPipeline, stage: str) -> dict[str, dict]:
    check = by_name(synthesized.actions(stage))[
        f"Check{''.join(p.title() for p in stage.split('-'))}"
    ]
    role = synthesized.role_of(check)
    statements: dict[str, dict] = {}
    for policy in resources(synthesized.template, "AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                statements[statement.get("Sid", json.dumps(statement["Action"]))] = statement
    return statements


@pytest.mark.parametrize("stage", list(ENVIRONMENTS))
def test_the_post_deploy_check_runs_last_with_the_deployed_names(synthesized, stage) -> None:
    actions = synthesized.actions(stage)
    check = actions[-1]
    assert check["Name"] == f"Check{''.join(p.title() for p in stage.split('-'))}"
    assert check["RunOrder"] > max(a["RunOrder"] for a in actions[:-1])
    nova = synthesized.stages[stage][f"novapod-{stage}-nova"]
    (check_id,) = resources(nova, "Custom::NovapodNovaEnvironment")
    spec = synthesized.buildspec(check)
    assert spec["phases"]["install"]["commands"] == [
        "python3 -m pip install --quiet --disable-pip-version-check ."
    ]
    assert spec["phases"]["build"]["commands"] == [
        f"novapod pipeline-check --region us-east-1 --cluster novapod-{stage} "
        f"--nova-stack novapod-{stage}-nova --check-resource {check_id}"
    ]


@pytest.mark.parametrize("stage", list(ENVIRONMENTS))
def test_the_post_deploy_check_may_describe_its_cluster_and_nova_stack_only(
    synthesized, stage
) -> None:
    statements = check_statements(synthesized, stage)
    assert statements["DescribeHyperPodCluster"]["Action"] == "sagemaker:DescribeCluster"
    assert joined(statements["DescribeHyperPodCluster"]["Resource"]) == (
        "arn:${AWS::Partition}:sagemaker:us-east-1:111122223333:cluster/*"
    )
    assert statements["DescribeNovaStack"]["Action"] == [
        "cloudformation:DescribeStackResource",
        "cloudformation:DescribeStacks",
    ]
    assert joined(statements["DescribeNovaStack"]["Resource"]) == (
        f"arn:${{AWS::Partition}}:cloudformation:us-east-1:111122223333:stack/"
        f"novapod-{stage}-nova/*"
    )
    # Nothing else of SageMaker or CloudFormation: the rest is CodeBuild's own (logs,
    # reports, the source clone and the artifact bucket).
    assert set(as_list(statements["CloneThroughConnection"]["Action"])) == {
        "codeconnections:UseConnection",
        "codeconnections:GetConnectionToken",
    }
    services = {
        action.split(":")[0]
        for s in statements.values()
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert services == {"sagemaker", "cloudformation", "logs", "codebuild", "s3", "kms",
                        "codeconnections", "codestar-connections"}  # fmt: skip
    s3_actions = {a for s in statements.values() for a in s["Action"] if a.startswith("s3:")}
    assert not any(a.startswith(("s3:Put", "s3:Delete")) for a in s3_actions)


def test_no_star_actions_anywhere(synthesized) -> None:
    for policy in resources(synthesized.template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            for action in [actions] if isinstance(actions, str) else actions:
                assert action != "*" and not action.endswith(":*"), statement


def test_artifacts_are_kms_encrypted_with_a_rotated_key_and_logged(synthesized) -> None:
    template = synthesized.template
    store = synthesized.pipeline["ArtifactStore"]
    assert store["Location"] == {"Ref": "Artifacts82DD59A1"}
    assert store["EncryptionKey"] == {
        "Id": {"Fn::GetAtt": ["ArtifactsKeyA65E83CB", "Arn"]},
        "Type": "KMS",
    }
    key = template["Resources"]["ArtifactsKeyA65E83CB"]["Properties"]
    assert key["EnableKeyRotation"] is True
    bucket = template["Resources"]["Artifacts82DD59A1"]["Properties"]
    (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {
        "KMSMasterKeyID": {"Fn::GetAtt": ["ArtifactsKeyA65E83CB", "Arn"]},
        "SSEAlgorithm": "aws:kms",
    }
    assert bucket["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": "AccessLogs8B620ECA"}
    # Every CodeBuild project encrypts its artifacts with the same key (CB4).
    for project in resources(template, "AWS::CodeBuild::Project").values():
        assert project["Properties"]["EncryptionKey"] == {
            "Fn::GetAtt": ["ArtifactsKeyA65E83CB", "Arn"]
        }


def test_cdk_nag_passes_with_specific_acknowledgements(synthesized) -> None:
    outdir = synthesized.outdir  # synthesis fails on an unacknowledged finding
    report = json.loads((outdir / "validation-report.json").read_text())
    assert all(p["conclusion"] == "success" for p in report["pluginReports"]), report
    metadata = json.loads((outdir / "novapod-pipeline.metadata.json").read_text())
    acknowledged = 0
    for construct_path, entries in metadata.items():
        for entry in entries:
            if entry["type"] != "aws:cdk:acknowledged-rules":
                continue
            for rule, reason in entry["data"].items():
                if "AwsSolutions" not in rule:
                    continue
                acknowledged += 1
                assert rule.startswith(
                    ("Annotation::AwsSolutions-IAM5[", "Annotation::AwsSolutions-S1")
                ), rule
                assert len(reason) >= 60, (construct_path, rule)
                assert construct_path.count("/") >= 2, construct_path  # never a stack
    assert acknowledged >= 20


def test_cfn_lint_reports_nothing(synthesized) -> None:
    findings = lint_findings(synthesized.template, "us-east-1")
    # cfn-lint 1.58 checks a Prepare action's RoleArn as an IAM role ARN and passes on, as
    # E3703, the informational "prefer Fn::Sub" of its Fn::Join (rules/functions/
    # SubNotJoin.py), which CDK Pipelines writes for the bootstrap roles. Nothing else.
    informational = [f for f in findings if "Prefer using Fn::Sub over Fn::Join" in f]
    assert all(f.startswith("E3703 ") and f.endswith("/Configuration/RoleArn)")
               for f in informational)  # fmt: skip
    assert [f for f in findings if f not in informational] == []


def test_nag_checks_the_stages_templates(tmp_path, monkeypatch) -> None:
    """An App's cdk-nag plugins cover its stages: an unlogged bucket in a stage fails AWS
    Solutions and the compliance pack the stage's config asks for."""
    from aws_cdk import Stack
    from aws_cdk import aws_s3 as s3

    from novapod.stacks import pipeline as module
    from novapod.stacks.pipeline import create_pipeline_app

    compose = module.build_environment

    def with_intruder(scope, config):
        stacks = compose(scope, config)
        s3.Bucket(Stack(scope, "Intruder"), "Unlogged")
        return stacks

    # Before the pipeline is built: building it synthesizes the stages.
    monkeypatch.setattr(module, "build_environment", with_intruder)

    hipaa = tmp_path / "hipaa.yaml"
    hipaa.write_text(DEFAULT_CONFIG.read_text() + "\ncompliance: [hipaa]\n")
    pipeline_file = tmp_path / "pipeline.yaml"
    pipeline_file.write_text(
        PIPELINE_EXAMPLE.read_text().replace(
            "    - config: examples/rig-plus-standard.yaml\n"
            "    - config: examples/nova-jobs.yaml\n"
            "      production: true",
            f"    - config: {hipaa}",
        )
    )
    pipeline = load_pipeline(pipeline_file)
    assert [d.config.name for d in pipeline.deployments] == ["default"]
    app, _ = create_pipeline_app(pipeline, pipeline_file="p.yaml", outdir=tmp_path / "out")
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "out" / "validation-report.json").read_text())
    failed = {
        plugin["pluginName"]: {
            v["ruleName"]
            for v in plugin["violations"]
            if any(
                "/default/Intruder/Unlogged/" in c["constructPath"]
                for c in v["violatingConstructs"]
            )
        }
        for plugin in report["pluginReports"]
        if plugin["conclusion"] == "failure"
    }
    assert "AwsSolutions-S1" in failed["AwsSolutions"]
    # The stage's compliance: [hipaa] reaches the pipeline's App (pipeline_app.py is
    # create_pipeline_app): without it only AWS Solutions would report.
    assert "HIPAA.Security-S3BucketLoggingEnabled" in failed["HIPAA.Security"]


def test_a_pipeline_outside_a_checkout_is_one_sentence(tmp_path) -> None:
    from novapod.stacks.pipeline import NotACheckoutError, pinned_cli_version

    missing = tmp_path / "package.json"
    with pytest.raises(NotACheckoutError) as info:
        pinned_cli_version(missing)
    assert str(info.value) == (
        f"novapod's pipeline builds from a novapod checkout: {missing} (the pinned CDK CLI "
        "its synth step runs) is missing; run pipeline_app.py from a clone of the "
        "repository, not from an installed package"
    )


def test_the_example_pipeline_is_not_an_environment_config() -> None:
    # conftest's EXAMPLES are environment files synthesized by every stack test.
    assert PIPELINE_EXAMPLE not in EXAMPLES
