"""A stateful resource that may be replaced, as CDK's diff engine itself says (issue 21, §3).

The engine says MAY_REPLACE ("maybe") for a property whose replacement the AWS service
spec makes conditional, and for one whose value refers (Ref, GetAtt) to a resource that
is replaced, so its new value is known only at deploy. None of novapod's own stateful
types has a conditional property (buckets, the key, FSx, the clusters, the MLflow server,
the ledger table: their replacing properties are all "yes"), so the pairs are an app that
composes novapod's stacks with its own (docs/cdk-app.md), reduced to its own stack: a
team's RDS database, synthesized by the CDK twice. The diff is the real engine's
(diff.js), never a fake.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from novapod import review
from tests.review.test_review import cli, section

STACK = "Team"

Synthesize = Callable[..., Path]


@pytest.fixture(scope="module")
def team_app(tmp_path_factory: pytest.TempPathFactory) -> Synthesize:
    """team_app(label, storage_type=, parameter_family=) -> the cdk.out of a stack `Team`
    holding an RDS database instance and the parameter group it refers to."""
    import aws_cdk as cdk
    from aws_cdk import aws_rds as rds

    folder = tmp_path_factory.mktemp("review-team-app")

    def make(label: str, *, storage_type: str = "gp3", parameter_family: str = "postgres16"):
        outdir = folder / label
        app = cdk.App(outdir=str(outdir))
        stack = cdk.Stack(
            app, STACK, env=cdk.Environment(account="111122223333", region="us-east-1")
        )
        parameters = rds.CfnDBParameterGroup(
            stack, "Parameters", family=parameter_family, description="the team's database"
        )
        rds.CfnDBInstance(
            stack,
            "Database",
            engine="postgres",
            db_instance_class="db.t4g.micro",
            allocated_storage="20",
            storage_type=storage_type,
            storage_encrypted=True,
            master_username="team",
            manage_master_user_password=True,
            db_parameter_group_name=parameters.ref,
        )
        app.synth()
        return outdir

    return make


def _resource(report: dict[str, Any], logical_id: str) -> dict[str, Any]:
    (stack,) = report["stacks"]
    (found,) = [r for r in stack["resources"] if r["logical_id"] == logical_id]
    return found


def test_a_conditional_property_may_replace_a_database(team_app: Synthesize, capsys) -> None:
    base, head = team_app("gp2", storage_type="gp2"), team_app("gp3", storage_type="gp3")
    report = review.build(base, head)
    # The engine's verdict, from the service spec (StorageType: conditional).
    database = _resource(report, "Database")
    assert (database["change"], database["replacement"], database["impact"]) == (
        "may-replace",
        "maybe",
        "MAY_REPLACE",
    )
    assert database["properties"] == {"StorageType": "MAY_REPLACE"}
    assert report["stateful"] == [
        {
            "stack": STACK,
            "logical_id": "Database",
            "type": "AWS::RDS::DBInstance",
            "what": "RDS database instance",
            "category": "may-replace",
            "cause": ["StorageType"],
            "deletes": [],
            "blocked_by_name": None,
            "note": "CloudFormation decides at deploy whether this replaces it (the AWS "
            "service spec makes the replacement conditional): treat it as a replacement and "
            "keep a copy of its data",
        }
    ]
    assert report["summary"]["stateful"]["may-replace"] == 1
    assert report["gates"]["may-replace"] is True
    assert report["gates"]["stateful-replacement"] is False  # maybe is not will
    text = section(review.render(report), 2)
    assert "**May be replaced**" in text
    assert (
        f"- RDS database instance `Database` (`{STACK}`): StorageType changes. CloudFormation "
        "decides at deploy whether this replaces it"
    ) in text
    pair = ("--base", str(base), "--head", str(head))
    status, out, err = cli(capsys, *pair, "--fail-on", "may-replace")
    assert status == 3 and out.startswith("## novapod review")
    assert err == "novapod review: tripped --fail-on may-replace\n"
    assert cli(capsys, *pair, "--fail-on", "purchase,stateful-replacement")[0] == 0


def test_a_reference_to_a_replaced_resource_may_replace_a_database(
    team_app: Synthesize, capsys
) -> None:
    # A new parameter-group family replaces the group (Family: yes); the database's
    # DBParameterGroupName is the same {"Ref": ...} in both templates, but its value is
    # the new group's name, known only at deploy.
    base = team_app("postgres15", parameter_family="postgres15")
    head = team_app("postgres16")
    templates = [json.loads((d / f"{STACK}.template.json").read_text()) for d in (base, head)]
    values = [t["Resources"]["Database"]["Properties"]["DBParameterGroupName"] for t in templates]
    assert values == [{"Ref": "Parameters"}] * 2
    report = review.build(base, head)
    assert _resource(report, "Parameters")["change"] == "replace"
    assert _resource(report, "Database")["properties"] == {"DBParameterGroupName": "MAY_REPLACE"}
    (entry,) = report["stateful"]
    assert (entry["logical_id"], entry["category"], entry["cause"]) == (
        "Database",
        "may-replace",
        ["DBParameterGroupName"],
    )
    assert entry["note"].startswith(
        "DBParameterGroupName refers to a resource that is replaced, so the new value is known "
        "only at deploy; CloudFormation decides at deploy whether this replaces it"
    )
    args = ("--base", str(base), "--head", str(head), "--fail-on", "may-replace")
    status, _, err = cli(capsys, *args)
    assert (status, err) == (3, "novapod review: tripped --fail-on may-replace\n")


def test_the_purchase_ledger_is_a_stateful_table(review_of) -> None:
    # Renaming the environment leaves the old stacks: the retained ledger is orphaned with
    # the buckets and the key, and listed.
    report = review_of("base", "rename-environment")
    orphaned = {
        (e["type"], e["category"]) for e in report["stateful"] if e["stack"].endswith("-storage")
    }
    assert ("AWS::DynamoDB::Table", "orphan") in orphaned
