"""`novapod.build_environment`: novapod's stacks inside a user's own CDK app."""

from __future__ import annotations

import json

import pytest

import novapod
from tests.conftest import DEFAULT_CONFIG, ROOT

WEAK = "@aws-cdk/core:defaultCrossStackReferences"


def test_build_environment_inside_a_users_own_app_and_stage(tmp_path) -> None:
    from aws_cdk import App, CfnOutput, Environment, Stack, Stage
    from aws_cdk import aws_ec2 as ec2

    # A user's app as `cdk init` makes it: no novapod feature flags on the App.
    app = App(outdir=str(tmp_path))
    prod = Stage(app, "Prod")
    stacks = novapod.build_environment(prod, DEFAULT_CONFIG)  # a path is loaded and validated
    # The user's own stack, in the same stage, consumes what novapod built.
    team = Stack(prod, "Team", env=Environment(region="us-east-1"))
    ec2.SecurityGroup(team, "Notebooks", vpc=stacks.network.handle.vpc, description="team")
    CfnOutput(team, "VpcId", value=stacks.network.handle.vpc.vpc_id)
    CfnOutput(team, "KeyArn", value=stacks.storage.key.key_arn)
    novapod.add_policy_checks(prod)  # the earlier sample's call: build_environment added them
    assembly = app.synth().get_nested_assembly(prod.artifact_id)

    names = {s.stack_name for s in assembly.stacks}
    assert names == {
        # Set by novapod, not prefixed by the stage: what `novapod launch` looks up.
        "novapod-default-network",
        "novapod-default-storage",
        "novapod-default-eks",
        "Prod-Team",
    }
    assert stacks.eks is not None and stacks.capacity is None and stacks.hyperpod is None
    team_template = next(s for s in assembly.stacks if s.stack_name == "Prod-Team").template
    outputs = team_template["Outputs"]
    # Weak references, as novapod's own app makes them: no exports lock the producers.
    assert outputs["VpcId"]["Value"]["Fn::GetStackOutput"]["StackName"] == (
        "novapod-default-network"
    )
    assert outputs["KeyArn"]["Value"]["Fn::GetStackOutput"]["StackName"] == (
        "novapod-default-storage"
    )
    for stack in assembly.stacks:
        assert "Fn::ImportValue" not in json.dumps(stack.template), stack.stack_name
        assert not any("Export" in o for o in stack.template.get("Outputs", {}).values())


def test_build_environment_accepts_a_validated_config_and_an_app(tmp_path) -> None:
    from aws_cdk import App

    app = App(outdir=str(tmp_path))
    config = novapod.load_config(ROOT / "config/examples/dev-two-zones.yaml")
    stacks = novapod.build_environment(app, config)
    assert stacks.network.stack_name == f"{config.prefix}-network"
    assert app.node.try_get_context(WEAK) == "weak"


def test_build_environment_refuses_a_populated_scope_without_novapods_flags() -> None:
    from aws_cdk import App, Stack

    app = App()
    Stack(app, "Existing")
    with pytest.raises(ValueError, match=r"already has constructs") as info:
        novapod.build_environment(app, DEFAULT_CONFIG)
    assert "App(context=novapod.feature_flags())" in str(info.value)


def test_a_populated_app_with_novapods_flags_is_fine() -> None:
    from aws_cdk import App, Stack

    app = App(context=novapod.feature_flags())
    Stack(app, "Existing")
    stacks = novapod.build_environment(app, DEFAULT_CONFIG)
    assert stacks.storage.termination_protection


def test_an_invalid_config_path_raises_config_error(tmp_path) -> None:
    from aws_cdk import App

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: dev\n", encoding="utf-8")
    with pytest.raises(novapod.ConfigError) as info:
        novapod.build_environment(App(), bad)
    assert info.value.render().startswith(f"{bad}: region: required")


def test_importing_novapod_does_not_load_the_cdk() -> None:
    import subprocess
    import sys

    probe = "import sys, novapod; print('aws_cdk' in sys.modules, 'jsii' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split() == ["False", "False"]


def _own_app_with_a_team_bucket(tmp_path, compliance: list[str], **options: object):
    """An own app: novapod's environment (the default config with `compliance`) in a
    Stage, beside the user's stack with a bucket that AWS Solutions accepts (enforced
    SSL, its access logging acknowledged) and the opt-in packs do not (no replication)."""
    from aws_cdk import App, Environment, Stack, Stage
    from aws_cdk import aws_s3 as s3

    from novapod.constructs.acknowledge import acknowledge

    app = App(outdir=str(tmp_path))
    prod = Stage(app, "Prod")
    config = novapod.load_config(DEFAULT_CONFIG).model_copy(update={"compliance": compliance})
    novapod.build_environment(prod, config, **options)  # type: ignore[arg-type]
    team = Stack(prod, "Team", env=Environment(region=config.region))
    bucket = s3.Bucket(team, "Data", enforce_ssl=True)
    acknowledge(
        bucket, "AwsSolutions-S1", "The team's scratch bucket: its access logs are not kept."
    )
    return app, prod


def _failed(tmp_path, app) -> list[tuple[str, set[str]]]:
    """Synthesis fails; each failing plugin report (in order) -> its rules."""
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    return [
        (plugin["pluginName"], {v["ruleName"] for v in plugin["violations"]})
        for plugin in report["pluginReports"]
        if plugin["conclusion"] == "failure"
    ]


def test_build_environment_runs_the_configs_compliance_packs(tmp_path) -> None:
    """`compliance: [hipaa]` in the config fails an own app's synth on a HIPAA finding,
    with no call besides build_environment, as `make synth` would."""
    app, _ = _own_app_with_a_team_bucket(tmp_path, ["hipaa"])
    ((plugin, rules),) = _failed(tmp_path, app)
    assert plugin == "HIPAA.Security"
    assert "HIPAA.Security-S3BucketReplicationEnabled" in rules


def test_policy_checks_false_leaves_them_to_you_and_each_pack_runs_once(tmp_path) -> None:
    """Without novapod's checks the config's pack is not added; the user's own
    add_policy_checks, called twice (as the earlier sample did after build_environment),
    adds AWS Solutions and NIST once each."""
    app, prod = _own_app_with_a_team_bucket(tmp_path, ["hipaa"], policy_checks=False)
    novapod.add_policy_checks(prod, ["nist-800-53-r5"])
    novapod.add_policy_checks(prod, ["nist-800-53-r5"])
    ((plugin, rules),) = _failed(tmp_path, app)  # one report: no HIPAA, NIST once
    assert plugin == "NIST.800.53.R5"
    assert "NIST.800.53.R5-S3BucketReplicationEnabled" in rules
