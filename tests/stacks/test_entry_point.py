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
    novapod.add_policy_checks(prod)
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
