"""`novapod destroy-plan`: the sequence, pinned for the default config and the example with
Nova jobs, MLflow and a Bedrock model; every aws command it prints is a real operation
with real parameters (botocore's service models); ended plan windows do not stop it.

The plan against the synthesized assemblies (stacks, dependencies, Retain policies) is
tests/stacks/test_destroy_plan_assembly.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest

from novapod.cli import main
from novapod.config import ConfigError, load_config
from novapod.operate import destroy
from tests.aws_cli import api_call
from tests.conftest import ALL_CONFIGS, DEFAULT_CONFIG, ROOT, VALIDATION_TIME

NOVA_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"


def plan_of(path: Any, now: datetime = VALIDATION_TIME) -> destroy.DestroyPlan:
    relative = str(path.relative_to(ROOT))
    return destroy.destroy_plan(destroy.load(str(path)), relative, now=now)


def test_the_default_config_is_destroyed_eks_storage_network() -> None:
    plan = plan_of(DEFAULT_CONFIG)
    assert [(s.stack, s.before, s.command) for s in plan.steps] == [
        (
            "novapod-default-eks",
            (),
            "npx cdk destroy --exclusively -c config=config/default.yaml novapod-default-eks",
        ),
        (
            "novapod-default-storage",
            (
                "aws cloudformation update-termination-protection "
                "--no-enable-termination-protection --stack-name novapod-default-storage "
                "--region us-east-1",
            ),
            "npx cdk destroy --exclusively -c config=config/default.yaml novapod-default-storage",
        ),
        (
            "novapod-default-network",
            (),
            "npx cdk destroy --exclusively -c config=config/default.yaml novapod-default-network",
        ),
    ]
    assert [(k.what, k.name, k.keeps_costing) for k in plan.kept] == [
        ("EKS control-plane log group", "/aws/eks/novapod-default/cluster", True),
        ("VPC flow-log log group", "$FLOW_LOG_GROUP", True),
        ("data bucket", "$DATA_BUCKET", True),
        ("artifacts bucket (job outputs, recipes, MLflow artifacts)", "$ARTIFACTS_BUCKET", True),
        (
            "access-log bucket (emptied last: the others log into it)",
            "$ACCESS_LOGS_BUCKET",
            True,
        ),
        ("purchase ledger (DynamoDB table, deletion-protected)", "$PURCHASE_LEDGER", True),
        ("KMS key of the buckets, log groups, ledger and file system", "$STORAGE_KEY", True),
    ]
    assert plan.validate_as_of is None


def test_nova_jobs_destroys_the_monitor_and_nova_first_and_keeps_mlflow_bedrock_and_plans() -> None:
    plan = plan_of(NOVA_JOBS)
    assert plan.stacks == (
        "novapod-nova-jobs-monitor",  # nothing depends on it
        "novapod-nova-jobs-nova",
        "novapod-nova-jobs-hyperpod",
        "novapod-nova-jobs-nova-base",
        "novapod-nova-jobs-eks",
        "novapod-nova-jobs-capacity",
        "novapod-nova-jobs-storage",
        "novapod-nova-jobs-network",
    )
    monitor, nova = plan.steps[:2]
    assert monitor.before == ()
    assert nova.before[-1] == (
        'aws iam detach-role-policy --role-name NovaScientist --policy-arn "$SCIENTIST_POLICY" '
        "--region us-east-1"
    )
    assert [(k.stack, k.name, k.keeps_costing) for k in plan.kept][:4] == [
        ("novapod-nova-jobs-nova", "lite-sft-model-<8 hex>", True),
        ("novapod-nova-jobs-nova-base", "novapod-nova-jobs", True),  # the MLflow server
        ("novapod-nova-jobs-capacity", "novapod-nova-jobs-tune-4d4c3289", False),
        ("novapod-nova-jobs-capacity", "novapod-nova-jobs-rl-7e7cec5d", False),
    ]
    bedrock, mlflow = plan.kept[0], plan.kept[1]
    # Deployments go before the models they serve.
    assert [c.split()[2] for c in bedrock.remove if c.startswith("aws ")] == [
        "list-custom-model-deployments",
        "delete-custom-model-deployment",
        "list-custom-models",
        "delete-custom-model",
    ]
    assert mlflow.remove == (
        "aws sagemaker delete-mlflow-tracking-server --tracking-server-name novapod-nova-jobs "
        "--region us-east-1",
    )
    hyperpod_logs = next(k for k in plan.kept if k.made_by)
    assert hyperpod_logs.name == "/aws/sagemaker/Clusters/novapod-nova-jobs/<cluster id>"
    # The key goes last, after everything it encrypts; the access-log bucket after the
    # buckets that log into it.
    names = [k.name for k in plan.kept]
    assert names[-1] == "$STORAGE_KEY"
    assert names.index("$ACCESS_LOGS_BUCKET") > names.index("$ARTIFACTS_BUCKET")
    # Every variable a command uses is recorded in step 1 before the stacks go.
    recorded = {r.variable for r in plan.recorded}
    used = set(re.findall(r'"\$([A-Z_]+)"', "\n".join(destroy.render_text(plan).splitlines())))
    assert used == recorded


def test_a_retained_lustre_file_system_is_deleted_before_the_network() -> None:
    plan = plan_of(ROOT / "config" / "examples" / "dev-two-zones.yaml")
    assert plan.stacks == ("novapod-dev-storage", "novapod-dev-network")
    network = plan.steps[-1]
    assert any("aws fsx delete-file-system" in line for line in network.before)
    lustre = next(k for k in plan.kept if k.removed_before)
    assert lustre.removed_before == "network" and lustre.logical_id == "LustreFileSystem"


def test_a_bedrock_model_that_is_not_retained_is_not_kept(tmp_path) -> None:
    text = NOVA_JOBS.read_text(encoding="utf-8").replace(
        "deployment: on-demand}", "deployment: on-demand, retain: false}"
    )
    assert "retain: false" in text
    path = tmp_path / "nova-jobs.yaml"
    path.write_text(text, encoding="utf-8")
    plan = destroy.destroy_plan(destroy.load(str(path)), str(path), now=VALIDATION_TIME)
    assert not any("Bedrock" in k.what for k in plan.kept)


def test_ended_plan_windows_are_judged_as_of_a_second_before_the_first_ends() -> None:
    after = datetime(2028, 1, 1, tzinfo=UTC)
    with pytest.raises(ConfigError, match="end_before"):
        load_config(NOVA_JOBS, now=after)  # what `cdk destroy` would hit
    plan = plan_of(NOVA_JOBS, now=after)
    assert plan.validate_as_of == "2027-08-29T23:59:59Z"
    for step in plan.steps:
        assert step.command.startswith("NOVAPOD_VALIDATE_AS_OF=2027-08-29T23:59:59Z npx cdk ")
    assert any(
        line.startswith("NOVAPOD_VALIDATE_AS_OF=2027-08-29T23:59:59Z novapod purchases")
        for line in plan.prepare
    )
    # As of that time the config validates, approvals included: it synthesizes.
    load_config(NOVA_JOBS, now=datetime(2027, 8, 29, 23, 59, 59, tzinfo=UTC))


def test_cdk_logical_ids_are_computed_as_cdk_computes_them() -> None:
    assert destroy.cdk_logical_id("MlflowTrackingServer") == "MlflowTrackingServer"
    assert destroy.cdk_logical_id("ControlPlaneLogs", "Resource") == "ControlPlaneLogs95F30E24"
    assert destroy.cdk_logical_id("VpcFlowLog", "LogGroup", "Resource") == (
        "VpcFlowLogLogGroupBB186289"
    )
    assert destroy.cdk_logical_id("BedrockModels", "Model-lite-sft-model", "Default") == (
        "BedrockModelsModellitesftmodel65C1730E"
    )


# --- every aws command is an operation of the service with parameters it takes ----------

# What step 1 records, by resource type: values of the shape the services return.
SAMPLES = {
    "AWS::S3::Bucket": "novapod-example-storage-databucket-0123456789ab",
    "AWS::KMS::Key": "1234abcd-12ab-34cd-56ef-1234567890ab",
    "AWS::DynamoDB::Table": "novapod-example-storage-PurchaseLedger-ABCDEF012345",
    "AWS::FSx::FileSystem": "fs-0123456789abcdef0",
    "AWS::Logs::LogGroup": "novapod-example-eks-VpcFlowLogLogGroup-ABCDEF012345",
    "AWS::IAM::ManagedPolicy": "arn:aws:iam::111122223333:policy/novapod-ScientistPolicy-X",
}


def aws_commands(plan: destroy.DestroyPlan) -> list[str]:
    """Every aws command of the plan (those inside step 1's $(...) too), each recorded
    variable replaced by a value of the kind it will hold."""
    text = destroy.render_text(plan)
    for record in plan.recorded:
        text = text.replace(f'"${record.variable}"', SAMPLES[record.resource_type])
    found = []
    for line in text.splitlines():
        inner = re.search(r"\$\((aws [^)]*)\)", line)
        if inner:
            found.append(inner[1])
        elif line.startswith("aws "):
            found.append(line)
    return found


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_every_aws_command_of_the_plan_is_a_real_call(path) -> None:
    commands = aws_commands(plan_of(path))
    calls = [api_call(command) for command in commands]
    assert ("cloudformation", "UpdateTerminationProtection") in {c[:2] for c in calls}
    assert ("kms", "ScheduleKeyDeletion") in {c[:2] for c in calls}


def test_the_checker_refuses_an_unknown_option_or_operation() -> None:
    with pytest.raises(AssertionError, match="takes no --bucket-name"):
        api_call("aws s3api delete-bucket --bucket-name b")
    with pytest.raises(AssertionError, match="has no operation"):
        api_call("aws sagemaker delete-training-plan --training-plan-name p")
    with pytest.raises(AssertionError, match="Missing required parameter"):
        api_call("aws kms schedule-key-deletion --pending-window-in-days 30")


# --- the command ------------------------------------------------------------------------


def test_destroy_plan_prints_the_sequence_and_json(capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["destroy-plan", "config/examples/nova-jobs.yaml"]) == 0
    text = capsys.readouterr().out
    assert text == destroy.render_text(plan_of(NOVA_JOBS))
    assert "npx cdk destroy --exclusively -c config=config/examples/nova-jobs.yaml " in text
    assert main(["destroy-plan", "config/examples/nova-jobs.yaml", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in document["stacks"]] == list(plan_of(NOVA_JOBS).stacks)
    assert [s["termination_protected"] for s in document["stacks"]].count(True) == 1
    assert {k["keeps_costing"] for k in document["kept"]} == {True, False}


def test_destroy_plan_ignores_approvals_but_not_mistakes(tmp_path) -> None:
    stale = NOVA_JOBS.read_text(encoding="utf-8").replace(
        "approve: novapod-nova-jobs-tune-4d4c3289", "approve: true"
    )
    path = tmp_path / "stale.yaml"
    path.write_text(stale, encoding="utf-8")
    assert main(["destroy-plan", str(path)]) == 0
    broken = tmp_path / "broken.yaml"
    broken.write_text(stale.replace("region: us-east-1", "region: mars-1"), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "novapod.cli", "destroy-plan", str(broken)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"{broken}: region:")
    assert "Traceback" not in result.stderr


def test_destroy_plan_refuses_a_pipeline_file(capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["destroy-plan", "config/pipeline.example.yaml"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "run novapod destroy-plan on each environment file it lists" in line
