"""What the review says about IAM and counts as bought (issue 21, section 3): a new
environment's roles as one summary each, a plan's ARN that follows its purchase is no
broadening, the plans a change buys, a widened condition shown old -> new. The pairs are
synthesized configs (conftest.py), an empty base for a first deploy, and copies of them
with one policy statement edited as JSON.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from novapod import review
from tests.review.conftest import TemplateEdit
from tests.review.test_review import ENV, cli, section

NOVA_BASE = f"{ENV}-nova-base"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/"


@pytest.fixture(scope="module")
def first_deploy(variant, tmp_path_factory) -> dict[str, Any]:
    """The single-RIG example reviewed against nothing: a new environment."""
    nothing = tmp_path_factory.mktemp("first-deploy")
    return review.build(nothing, variant("base").outdir)


def _role_statements(template: dict[str, Any]) -> Counter[str]:
    """Role logical ID -> its Allow statements, from the policies attached by Ref."""
    counts: Counter[str] = Counter()
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role":
            counts[logical_id] += 0
            for policy in resource["Properties"].get("Policies", []):
                counts[logical_id] += sum(
                    s["Effect"] == "Allow" for s in policy["PolicyDocument"]["Statement"]
                )
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        statements = resource["Properties"]["PolicyDocument"]["Statement"]
        for role in resource["Properties"].get("Roles", []):
            if isinstance(role, dict) and "Ref" in role:
                counts[role["Ref"]] += sum(s["Effect"] == "Allow" for s in statements)
    return counts


# --- a new environment: one summary per role --------------------------------------------


def test_a_new_environment_lists_one_summary_per_role_and_no_broadenings(
    first_deploy, variant
) -> None:
    security = first_deploy["security"]
    assert security["iam"] == []  # 111 "broadenings", one per statement, before
    summaries = security["iam_new_principals"]
    roles = {(e["stack"], e["logical_id"]): e for e in summaries if e["kind"] == "role"}
    assert len(roles) == sum(1 for e in summaries if e["kind"] == "role")  # one each
    # Every role of every stack has its summary, with each of its statements counted.
    base = variant("base")
    expected = {
        (base.stack_names[kind], logical_id): count
        for kind, template in base.templates.items()
        for logical_id, count in _role_statements(template).items()
    }
    assert {key: e["statements"] for key, e in roles.items()} == expected
    assert all(e["new"] == "stack-added" for e in summaries)
    assert all(e["assumed_by"] for e in roles.values())  # each role's trust policy
    # The purchase handler: who assumes it, its services, what it may do on any resource.
    ((stack, logical_id), on_event) = next(
        (key, e)
        for key, e in roles.items()
        if key[1].startswith("TrainingPlanProviderHandlersOnEventRole")
    )
    assert stack == f"{ENV}-capacity"
    assert on_event["assumed_by"] == ["Service:lambda.amazonaws.com"]
    assert {"sagemaker", "dynamodb", "kms", "logs"} <= set(on_event["services"])
    assert "sagemaker:CreateTrainingPlan" in on_event["actions"]
    assert on_event["on_any_resource"] == [
        "ec2:DescribeAvailabilityZones",
        "sagemaker:SearchTrainingPlanOfferings",
    ]
    assert f"{PLAN_ARN}novapod-nova-lite-lite-sft-????????" in on_event["wildcard_resources"]
    # Resource policies name principals that are no role of the stack: one summary each.
    others = {(e["stack"], e["principal"]) for e in summaries if e["kind"] == "principal"}
    assert (f"{ENV}-storage", "Service:logging.s3.amazonaws.com") in others
    summary = first_deploy["summary"]
    assert (summary["iam_broadenings"], summary["iam_new_principals"]) == (0, len(summaries))
    # New roles grant more than nothing: the gate still trips.
    assert first_deploy["gates"]["iam-broadening"] is True
    text = section(review.render(first_deploy), 3)
    assert "**IAM broadening**" not in text and "**IAM of new roles and stacks**" in text
    listed = text.split("**Security-group")[0].splitlines()
    assert sum(line.startswith("- ") for line in listed) == len(summaries)
    (line,) = [t for t in text.splitlines() if f"role `{logical_id}`" in t]
    assert line.startswith(
        f"- `{ENV}-capacity` role `{logical_id}`, assumed by `Service:lambda.amazonaws.com`: "
        f"{on_event['statements']} statements grant {len(on_event['actions'])} actions in "
        f"{', '.join(on_event['services'])} on {len(on_event['resources'])} resources"
    )
    on_any = "`ec2:DescribeAvailabilityZones`, `sagemaker:SearchTrainingPlanOfferings`"
    assert f"; on any resource (`*`): {on_any}" in line


def test_a_role_added_to_an_existing_stack_is_one_summary(review_of) -> None:
    report = review_of("base", "mlflow")
    assert report["security"]["iam"] == []  # 4 statements, one "broadening" each, before
    (role,) = report["security"]["iam_new_principals"]
    assert (role["stack"], role["kind"], role["new"]) == (NOVA_BASE, "role", "role-added")
    assert role["logical_id"].startswith("MlflowRole")
    assert role["assumed_by"] == ["Service:sagemaker.amazonaws.com"]
    assert (role["statements"], role["services"]) == (3, ["kms", "s3"])
    assert report["gates"]["iam-broadening"] is True


def test_a_changed_role_in_an_existing_environment_keeps_its_broadenings(review_of) -> None:
    report = review_of("base", "add-zone")
    assert report["security"]["iam_new_principals"] == []
    assert {e["sid"] for e in report["security"]["iam"]} >= {"CreateInterfacesInOurSubnets"}


# --- a purchase's plan ARN is no broadening ----------------------------------------------


def test_a_bought_plans_arn_in_a_describe_statement_is_no_broadening(
    review_of, variant, capsys
) -> None:
    report = review_of("base", "plan-count")
    assert [p["action"] for p in report["purchases"]] == ["buy"]
    # DescribeGroupPlans now names the new plan: it follows the purchase listed above.
    assert report["security"]["iam"] == []
    assert report["gates"] == dict.fromkeys(review.GATES, False) | {"purchase": True}
    pair = ["--base", str(variant("base").outdir), "--head", str(variant("plan-count").outdir)]
    status, _, err = cli(capsys, *pair, "--fail-on", "iam-broadening")
    assert (status, err) == (0, "")
    assert cli(capsys, *pair, "--fail-on", "purchase,iam-broadening")[0] == 3


def test_a_new_plans_grants_follow_it_but_a_new_roles_do_not(review_of) -> None:
    # A second plan (bought) and a Bedrock import (new roles) in one change.
    report = review_of("base", "extra-purchases")
    spare = next(p["plan_name"] for p in report["purchases"] if p["action"] == "buy")
    # The purchase handler's statements gain the plan's name head (digest left open), the
    # cluster check's its ARN: none of it is a broadening.
    assert not [
        e for e in report["security"]["iam"] if any(PLAN_ARN in r for r in e["added_resources"])
    ]
    assert report["security"]["iam"] == []
    assert spare.startswith("novapod-nova-lite-spare-")
    roles = report["security"]["iam_new_principals"]
    assert {e["logical_id"][:-8] for e in roles} >= {  # less CDK's 8-character hash
        "BedrockModelsHandlersOnEventRole",
        "BedrockModelsImportRole",
    }
    assert report["gates"]["iam-broadening"] is True  # the import's roles


def _describe_group_plans(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict], None]:
    def change(template: dict[str, Any]) -> None:
        (statement,) = [
            s
            for r in template["Resources"].values()
            if r["Type"] == "AWS::IAM::Policy"
            for s in r["Properties"]["PolicyDocument"]["Statement"]
            if s.get("Sid") == "DescribeGroupPlans"
        ]
        edit(statement)

    return change


def _also(key: str, value: str) -> Callable[[dict[str, Any]], None]:
    def edit(statement: dict[str, Any]) -> None:
        values = statement[key] if isinstance(statement[key], list) else [statement[key]]
        statement[key] = [*values, value]

    return edit


# label -> the statement's key that gets the value, and the entry's list that shows it.
BESIDE = {
    # A new action beside the new plan's ARN is a grant of its own.
    "new-action": ("Action", "sagemaker:ListTrainingPlans", "added_actions"),
    # So is a resource that is no plan bought here: another environment's plan ...
    "other-plan": ("Resource", f"{PLAN_ARN}novapod-other-lite-sft-0123abcd", "added_resources"),
    # ... the name head of a plan this review does not buy, or every plan.
    "other-head": ("Resource", f"{PLAN_ARN}novapod-nova-lite-spare-????????", "added_resources"),
    "every-plan": ("Resource", f"{PLAN_ARN}*", "added_resources"),
}


def test_the_bought_plans_name_in_any_account_or_region_still_counts(
    template_edit: TemplateEdit, variant, review_of
) -> None:
    (bought,) = [p["plan_name"] for p in review_of("base", "plan-count")["purchases"]]
    anywhere = f"arn:aws:sagemaker:*:*:training-plan/{bought}"
    head = template_edit(
        "iam-anywhere",
        "plan-count",
        "nova-base",
        _describe_group_plans(_also("Resource", anywhere)),
    )
    report = review.build(Path(variant("base").outdir), head)
    (entry,) = report["security"]["iam"]
    assert entry["sid"] == "DescribeGroupPlans" and anywhere in entry["added_resources"]
    assert report["gates"]["iam-broadening"] is True


def _widened(*resources: str) -> dict[str, Any]:
    return {
        "kind": "statement-widened",
        "not": [],
        "condition_widened": False,
        "added_actions": [],
        "added_principals": [],
        "added_resources": list(resources),
    }


def _plan(action: str, name: str) -> dict[str, Any]:
    return {"kind": "training-plan", "action": action, "plan_name": name}


PLAN = "novapod-nova-lite-lite-sft-50d13e0b"


@pytest.mark.parametrize(
    ("resource", "follows"),
    [
        (f"{PLAN_ARN}{PLAN}", True),
        (
            f"arn:${{AWS::Partition}}:sagemaker:${{AWS::Region}}:${{AWS::AccountId}}:training-plan/{PLAN}",
            True,
        ),
        (f"{PLAN_ARN}novapod-nova-lite-lite-sft-????????", True),  # its name head
        (f"arn:aws:sagemaker:*:111122223333:training-plan/{PLAN}", False),
        (f"arn:aws:sagemaker:us-east-1:*:training-plan/{PLAN}", False),
        (f"arn:aws:sagemaker:us-east-1:1111222233?3:training-plan/{PLAN}", False),
        (f"arn:*:sagemaker:us-east-1:111122223333:training-plan/{PLAN}", False),
    ],
)
def test_only_a_named_account_and_region_follow_a_purchase(resource: str, follows: bool) -> None:
    from novapod.review import iam

    assert iam.follows_purchase(_widened(resource), [_plan("buy", PLAN)]) is follows


def test_an_adopted_plans_arn_is_a_broadening() -> None:
    # Adoption buys nothing and trips no gate of its own, so a grant on another team's plan
    # that the change adopts is reviewed as IAM.
    from novapod.review import iam

    arn = f"{PLAN_ARN}team-b-plan"
    assert iam.follows_purchase(_widened(arn), [_plan("adopt", "team-b-plan")]) is False
    assert iam.follows_purchase(_widened(arn), [_plan("buy", "team-b-plan")]) is True


@pytest.mark.parametrize("label", BESIDE)
def test_a_grant_beside_the_plans_arn_still_counts(
    template_edit: TemplateEdit, variant, label
) -> None:
    key, value, added = BESIDE[label]
    head = template_edit(
        f"iam-{label}", "plan-count", "nova-base", _describe_group_plans(_also(key, value))
    )
    report = review.build(Path(variant("base").outdir), head)
    (entry,) = report["security"]["iam"]
    assert (entry["stack"], entry["sid"], entry["kind"]) == (
        NOVA_BASE,
        "DescribeGroupPlans",
        "statement-widened",
    )
    assert value in entry[added]
    assert report["gates"]["iam-broadening"] is True


# --- what the summary counts as purchases ------------------------------------------------


@pytest.mark.parametrize(
    ("base", "head", "bought", "actions"),
    [
        # A plan bought and a Bedrock import (buys nothing).
        ("base", "extra-purchases", 1, ["buy", "import"]),
        # A plan and an import removed: nothing bought.
        ("extra-purchases", "base", 0, ["remove", "remove"]),
        # The old plan removed, the same bought again under the new environment's name.
        ("base", "rename-environment", 1, ["remove", "buy"]),
        ("base", "plan-count", 1, ["buy"]),
        ("base", "fewer-instances", 0, []),
    ],
)
def test_the_summary_counts_the_plans_bought(review_of, base, head, bought, actions) -> None:
    report = review_of(base, head)
    assert report["summary"]["purchases"] == bought
    assert sorted(p["action"] for p in report["purchases"]) == sorted(actions)


# --- a widened condition, old -> new -----------------------------------------------------


def test_a_widened_condition_is_shown_old_to_new(review_of) -> None:
    # Back from the evaluation-only job list: the data grant's s3:prefix allows the SFT data.
    report = review_of("fewer-instances", "base")
    (entry,) = [e for e in report["security"]["iam"] if e["condition_widened"]]
    assert entry["previous_condition"] == {"StringEquals": {"s3:prefix": ["eval/gen_qa.jsonl"]}}
    assert entry["condition"] == {
        "StringEquals": {"s3:prefix": ["sft/train.jsonl", "eval/gen_qa.jsonl"]}
    }
    (line,) = [t for t in section(review.render(report), 3).splitlines() if entry["sid"] in t]
    assert line.endswith(
        "widened: its condition allows more (`StringEquals s3:prefix: [eval/gen_qa.jsonl] → "
        "[sft/train.jsonl, eval/gen_qa.jsonl]`)"
    )


def test_a_notaction_statement_grants_every_action_but_those_it_lists() -> None:
    from novapod.review import iam, markdown

    def targets(*values: str, negated: bool = False) -> dict[str, Any]:
        return {"values": list(values), "not": negated}

    statement = {
        "sid": "AllButIam",
        "effect": "Allow",
        "actions": targets("iam:*", negated=True),
        "resources": targets("*"),
        "principals": targets("AWS:${NewRole}"),
        "condition": None,
    }
    _, (summary,) = iam.new_grants(
        "stack", {"statement_additions": [statement]}, {"NewRole": None}, stack_added=False
    )
    assert summary["all_actions_except"] == ["iam:*"]
    assert "iam:*" not in summary["actions"] and summary["on_any_resource"] == ["*"]
    line = markdown._new_principal_line(summary)
    assert "every action (`*`) except `iam:*` (NotAction)" in line
    assert "NotAction in some statements" not in line
