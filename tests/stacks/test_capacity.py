"""CapacityStack: the TrainingPlan custom resource, its Provider and its IAM."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from novapod.capacity.naming import TRAINING_PLAN_NAME, training_plan_name
from novapod.config import load_config
from tests.conftest import DEFAULT_CONFIG, ROOT, joined, resources

PURCHASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
ADOPT = ROOT / "config" / "examples" / "adopt-existing-plan.yaml"


def plan_resource(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    resource = template["Resources"][logical_id]
    assert resource["Type"] == "Custom::NovapodTrainingPlan"
    return resource


def statements(template: dict[str, Any], role_fragment: str) -> list[dict[str, Any]]:
    out = []
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        if role_fragment in logical_id:
            out += policy["Properties"]["PolicyDocument"]["Statement"]
    assert out, f"no policy for {role_fragment}"
    return out


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_purchase_properties_carry_request_and_guardrails(synth) -> None:
    template = synth(PURCHASE).templates["capacity"]
    props = plan_resource(template, "TrainingPlanLiteSft")["Properties"]
    assert props["Mode"] == "purchase"
    assert TRAINING_PLAN_NAME.match(props["PlanName"]) and len(props["PlanName"]) <= 64
    assert props["PlanName"].startswith("novapod-nova-lite-lite-sft-")
    assert (props["InstanceType"], props["InstanceCount"], props["DurationHours"]) == (
        "ml.p5.48xlarge",
        "4",
        "144",  # 4 x 30 h SFT + 4 x 2 h evaluation = 128 h, rounded up to 6 days
    )
    # Pinned: the name is what the config approves; a changed digest would buy again.
    assert props["PlanName"] == "novapod-nova-lite-lite-sft-50d13e0b"
    assert props["ApprovedPlanName"] == "novapod-nova-lite-lite-sft-50d13e0b"
    assert (props["MaxUpfrontFee"], props["Currency"]) == ("60000", "USD")
    assert props["ChoicePolicy"] == "cheapest"
    assert props["TargetResources"] == ["hyperpod-cluster"]
    assert props["StartTimeAfter"] == "2027-07-05T00:00:00+00:00"
    assert props["EndTimeBefore"] == "2027-08-29T00:00:00+00:00"
    assert set(props["SubnetIdsByZoneId"]) == {"use1-az4", "use1-az6"}
    assert all(len(ids) == 1 for ids in props["SubnetIdsByZoneId"].values())
    assert "PrivateSubnetUse1Az4" in json.dumps(props["SubnetIdsByZoneId"]["use1-az4"])
    assert props["PendingTimeoutSeconds"] == "3000"
    assert "ExistingArn" not in props


def test_adoption_has_no_purchase_path(synth) -> None:
    template = synth(ADOPT).templates["capacity"]
    props = plan_resource(template, "TrainingPlanReserved")["Properties"]
    assert props["Mode"] == "adopt"
    assert props["ExistingArn"].endswith(":training-plan/team-p5-january")
    assert props["PlanName"] == "team-p5-january"
    for key in ("ApprovedPlanName", "MaxUpfrontFee", "ChoicePolicy", "DurationHours"):
        assert key not in props
    describe = [
        s
        for s in statements(template, "IsCompleteRole")
        if "sagemaker:DescribeTrainingPlan" in as_list(s["Action"])
    ]
    assert any(props["ExistingArn"] in as_list(s["Resource"]) for s in describe)


def test_plan_name_ignores_guardrails_but_not_purchase_inputs() -> None:
    config = load_config(PURCHASE)
    ((_, request),) = config.training_plan_requests()
    from dataclasses import replace

    # Pinned literals: a changed digest renames every plan, and each environment buys again.
    assert training_plan_name("nova-lite", request) == "novapod-nova-lite-lite-sft-50d13e0b"
    assert training_plan_name("nova-lite", replace(request, jobs=())) == (
        "novapod-nova-lite-lite-sft-50d13e0b"
    )
    assert training_plan_name("nova-lite", replace(request, instance_count=8)) == (
        "novapod-nova-lite-lite-sft-f57fdf2e"
    )
    assert training_plan_name("nova-lite", replace(request, duration_hours=168)) == (
        "novapod-nova-lite-lite-sft-b165e94c"
    )
    long = replace(request, name="a" * 24)
    assert training_plan_name("x" * 20, long) == (
        "novapod-xxxxxxxxxxxxxxxxxxxx-aaaaaaaaaaaaaaaaaaaaaaaa-50d13e0b"
    )  # 62 characters, within the API's 64


def test_provider_timeouts(synth) -> None:
    template = synth(PURCHASE).templates["capacity"]
    functions = {
        r["Properties"]["Handler"]: r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
    }
    assert (
        functions["novapod_lambda.training_plan.handler.index.on_event"]["Timeout"] == 840
    )  # under Lambda's 900
    assert functions["novapod_lambda.training_plan.handler.index.is_complete"]["Timeout"] == 480
    assert functions["novapod_lambda.training_plan.handler.index.on_event"]["Runtime"].startswith(
        "python3."
    )
    (machine,) = resources(template, "AWS::StepFunctions::StateMachine").values()
    definition = "".join(
        p for p in machine["Properties"]["DefinitionString"]["Fn::Join"][1] if isinstance(p, str)
    )
    interval = int(re.search(r'"IntervalSeconds":(\d+)', definition).group(1))
    attempts = int(re.search(r'"MaxAttempts":(\d+)', definition).group(1))
    assert interval == 60
    assert interval * attempts <= 3600  # CloudFormation's 1 h custom-resource limit
    assert interval * attempts > 3000  # longer than the handler's own Pending timeout
    assert machine["Properties"]["LoggingConfiguration"]["Level"] == "ALL"


def test_log_groups_have_retention(synth) -> None:
    template = synth(PURCHASE).templates["capacity"]
    groups = resources(template, "AWS::Logs::LogGroup")
    assert len(groups) == 4
    assert all(g["Properties"]["RetentionInDays"] == 365 for g in groups.values())


def test_iam_is_least_privilege(synth) -> None:
    result = synth(PURCHASE)
    template = result.templates["capacity"]
    plan_arn = (
        "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-nova-lite-lite-sft-????????"
    )
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = as_list(statement["Action"])
            assert all("*" not in a for a in actions), actions
    on_event = statements(template, "OnEventRole")
    by_action = {a: as_list(s["Resource"]) for s in on_event for a in as_list(s["Action"])}
    assert by_action["sagemaker:DescribeTrainingPlan"] == [plan_arn]
    assert by_action["sagemaker:SearchTrainingPlanOfferings"] == ["*"]
    assert by_action["ec2:DescribeAvailabilityZones"] == ["*"]
    for action, scope in by_action.items():
        if scope == ["*"]:
            assert action in {
                "sagemaker:SearchTrainingPlanOfferings",
                "ec2:DescribeAvailabilityZones",
            }
    for statement in on_event:
        assert not any(
            joined(r, result).endswith(":training-plan/*") for r in as_list(statement["Resource"])
        ), "plans are limited to this environment's names"
    is_complete = statements(template, "IsCompleteRole")
    assert {a for s in is_complete for a in as_list(s["Action"])} == {
        "sagemaker:DescribeTrainingPlan",
        "ec2:DescribeAvailabilityZones",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        # The purchase ledger: is_complete settles what on_event left unsettled.
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "kms:Decrypt",
        "kms:DescribeKey",
        "kms:Encrypt",
        "kms:GenerateDataKey",
    }
    (logs,) = [s for s in is_complete if "logs:PutLogEvents" in as_list(s["Action"])]
    assert logs["Resource"] == {
        "Fn::GetAtt": [
            next(k for k in resources(template, "AWS::Logs::LogGroup") if "IsCompleteLogs" in k),
            "Arn",
        ]
    }
    assert not any("sagemaker:CreateTrainingPlan" in as_list(s["Action"]) for s in is_complete)


def test_no_managed_policies_on_our_roles(synth) -> None:
    template = synth(PURCHASE).templates["capacity"]
    for role in resources(template, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]


@pytest.mark.parametrize("path", [PURCHASE, ADOPT], ids=["purchase", "adopt"])
def test_capacity_depends_on_network_and_storage_only(synth, path) -> None:
    result = synth(path)
    # storage: the key of its log groups (CloudWatchLogGroupEncrypted); never eks.
    assert result.dependencies["capacity"] == {"network", "storage"}
    assert "eks" not in result.dependencies["capacity"]


def test_default_config_has_no_capacity_stack(synth) -> None:
    assert "capacity" not in synth(DEFAULT_CONFIG).templates


PLANS = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-nova-lite-lite-sft-????????"
CAPACITIES = "arn:aws:sagemaker:us-east-1:111122223333:reserved-capacity/*"


def test_purchase_with_tags_is_allowed_on_plans_and_reserved_capacity(synth) -> None:
    """AmazonSageMakerTrainingPlanCreateAccess's grants, narrowed to our plan names."""
    on_event = {
        s.get("Sid"): s for s in statements(synth(PURCHASE).templates["capacity"], "OnEvent")
    }
    buy = on_event["BuyOwnPlans"]
    assert sorted(as_list(buy["Action"])) == [
        "sagemaker:CreateReservedCapacity",
        "sagemaker:CreateTrainingPlan",
    ]
    assert sorted(joined(r) for r in buy["Resource"]) == sorted([PLANS, CAPACITIES])
    assert "Condition" not in buy
    tag = on_event["TagOnPurchaseOnly"]
    assert tag["Action"] == "sagemaker:AddTags"
    assert sorted(joined(r) for r in tag["Resource"]) == sorted([PLANS, CAPACITIES])
    # Tags only as part of the purchase, never on an existing plan afterwards.
    assert tag["Condition"] == {
        "StringEquals": {
            "sagemaker:TaggingAction": ["CreateTrainingPlan", "CreateReservedCapacity"]
        }
    }


@pytest.mark.parametrize(
    ("path", "logical_id"),
    [(PURCHASE, "TrainingPlanLiteSft"), (ADOPT, "TrainingPlanReserved")],
    ids=["purchase", "adopt"],
)
def test_plans_are_retained_on_delete_and_replace(synth, path, logical_id) -> None:
    resource = plan_resource(synth(path).templates["capacity"], logical_id)
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["UpdateReplacePolicy"] == "Retain"


def test_capacity_outputs_per_plan_with_descriptions(synth) -> None:
    template = synth(PURCHASE).templates["capacity"]
    outputs = template["Outputs"]
    plan = "TrainingPlanLiteSft"
    assert outputs[f"{plan}Arn"]["Value"] == {"Fn::GetAtt": [plan, "PlanArn"]}
    assert outputs[f"{plan}Start"]["Value"] == {"Fn::GetAtt": [plan, "StartTime"]}
    assert outputs[f"{plan}End"]["Value"] == {"Fn::GetAtt": [plan, "EndTime"]}
    assert outputs[f"{plan}UpfrontFee"]["Value"] == {
        "Fn::Join": [
            " ",
            [{"Fn::GetAtt": [plan, "UpfrontFee"]}, {"Fn::GetAtt": [plan, "CurrencyCode"]}],
        ]
    }
    groups = resources(template, "AWS::Logs::LogGroup")
    on_event_logs = next(k for k in groups if "OnEventLogs" in k)
    is_complete_logs = next(k for k in groups if "IsCompleteLogs" in k)
    assert outputs["PurchaseLogGroup"]["Value"] == {"Ref": on_event_logs}
    assert outputs["PurchaseWaitLogGroup"]["Value"] == {"Ref": is_complete_logs}
    for name, output in outputs.items():
        if name.startswith("PublishOutput"):  # CDK's own (weak) cross-stack references
            continue
        assert len(output.get("Description", "")) > 20, name
    assert "training plan lite-sft" in outputs[f"{plan}UpfrontFee"]["Description"]


def test_plan_permissions_never_reach_another_environments_plans(synth) -> None:
    # Issue 18 §3: `novapod-nova-lite-*` would also match every plan of an environment
    # named `nova-lite-lite` (or a plan `lite-sft-x`); the eight `?` stop at the digest.
    from tests.fakes import iam

    result = synth(PURCHASE)
    template = result.templates["capacity"]
    resources_ = [
        joined(r, result)
        for s in statements(template, "OnEventRole")
        for r in as_list(s["Resource"])
        if "training-plan/" in joined(r, result)
    ]
    prefix = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/"
    own = prefix + "novapod-nova-lite-lite-sft-50d13e0b"
    other_environment = prefix + "novapod-nova-lite-lite-sft-x-31e61478"
    assert any(iam.wildcard_match(r, own) for r in resources_)
    assert not any(iam.wildcard_match(r, other_environment) for r in resources_)


def test_each_plan_with_jobs_records_its_schedule_as_assembly_metadata(synth) -> None:
    # For `novapod review` (tests/review/test_schedules.py): on the plan's construct, in
    # the stack's metadata file, one entry per plan that has jobs; a plan without jobs
    # (the adopted one) has none.
    from novapod.capacity.chart import METADATA_TYPE, chart_from_json, plan_charts

    for path, plans in ((ROOT / "config" / "examples" / "nova-jobs.yaml", ["Rl", "Tune"]),
                        (ADOPT, [])):  # fmt: skip
        result = synth(path)
        stack = result.stack_names["capacity"]
        metadata = json.loads((result.outdir / f"{stack}.metadata.json").read_text())
        found = {
            where: entry["data"]
            for where, entries in metadata.items()
            for entry in entries
            if entry["type"] == METADATA_TYPE
        }
        config = load_config(path)
        groups = {job.name: job.instance_group for job in config.jobs}
        charts = plan_charts(config.capacity_plan(), groups)
        # Read back as the review reads it (the assembly leaves out null values).
        assert {where: chart_from_json(data) for where, data in found.items()} == {
            f"/{stack}/TrainingPlan{chart.plan.capitalize()}": chart for chart in charts
        }
        assert sorted(where.rsplit("TrainingPlan", 1)[1] for where in found) == plans
        # Where each plan's capacity goes (CHART_VERSION 2): its target, each job's
        # platform and restricted group, as the config places them.
        for data in found.values():
            assert (data["version"], data["target"]) == (2, "hyperpod-cluster")
            assert {(b["runs_on"], b["instance_group"]) for b in data["jobs"]} <= {
                ("hyperpod", job.instance_group) for job in config.jobs
            }
