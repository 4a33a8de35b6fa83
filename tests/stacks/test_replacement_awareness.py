"""Which config edits keep the HyperPod cluster (and other stateful resources), which replace it.

Each variant edits the single-RIG example and is synthesized once; the comparison uses
the create-only properties of the CloudFormation schemas shipped with cfn-lint.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from novapod.replacement import replacements
from novapod.stacks.hyperpod import CLUSTER_LOGICAL_ID
from tests.conftest import ROOT, joined, resources

BASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"


def edit(data: dict[str, Any], change: str) -> dict[str, Any]:
    data = copy.deepcopy(data)
    rig = data["hyperpod"]["restricted_instance_groups"][0]
    if change == "node-recovery":
        data["hyperpod"]["node_recovery"] = "None"
    elif change == "fewer-instances":
        rig["instance_count"] = 2
        # The SFT job needs all 4 instances, so only the evaluation (1 instance) stays,
        # and the plan keeps its size explicitly: the same purchase under the same name.
        data["jobs"] = [
            {k: v for k, v in job.items() if k != "from"}
            for job in data["jobs"]
            if job["technique"] == "evaluation"
        ]
        data["capacity"]["training_plans"][0].update(instance_count=4, duration_hours=144)
    elif change == "health-checks":
        rig["deep_health_checks"] = ["InstanceStress"]
    elif change == "fsx-throughput":
        rig["fsx_throughput"] = 500
    elif change == "eks-admins":
        data["eks"]["admin_principals"].append("arn:aws:iam::111122223333:role/Other")
    elif change == "endpoint-set":
        # The default (S3 + the RIG set) plus two more interface endpoints.
        data["network"]["endpoints"] = [
            "s3", "ecr.api", "ecr.dkr", "sts", "logs", "monitoring", "eks", "eks-auth",
            "ssm", "ssmmessages", "ec2messages", "lambda", "sqs",
        ]  # fmt: skip
    elif change == "log-retention":
        data["eks"]["log_retention_days"] = 90
        data["network"]["flow_logs"] = {"retention_days": 30}
    elif change == "add-zone":
        data["network"]["vpc"]["zone_ids"].append("use1-az1")
    elif change == "new-plan-window":
        data["capacity"]["training_plans"][0]["start_after"] = "2027-01-11T00:00:00Z"
        # What is bought changed: validation demands the new name's approval.
        data["capacity"]["training_plans"][0]["purchase"]["approve"] = (
            "novapod-nova-lite-lite-sft-861a5d38"
        )
    elif change == "rename-environment":
        data["name"] = "renamed"
        # A renamed environment buys its plan anew: approved under the new name.
        data["capacity"]["training_plans"][0]["purchase"]["approve"] = (
            "novapod-renamed-lite-sft-31e61478"
        )
    else:
        raise AssertionError(change)
    return data


@pytest.fixture(scope="module")
def variant(synth, tmp_path_factory):
    base = yaml.safe_load(BASE.read_text())
    folder = tmp_path_factory.mktemp("variants")

    def make(change: str):
        path = Path(folder) / f"{change}.yaml"
        path.write_text(yaml.safe_dump(edit(base, change)))
        return synth(path)

    return make


def replaced(synth, result, kind: str) -> set[str]:
    before = synth(BASE).templates[kind]
    return {r.logical_id for r in replacements(before, result.templates[kind])}


def retention_days(result, kind: str) -> set[int]:
    return {
        r["Properties"]["RetentionInDays"]
        for r in result.templates[kind]["Resources"].values()
        if r["Type"] == "AWS::Logs::LogGroup"
    }


def interface_endpoints(result) -> set[str]:
    return {
        joined(r["Properties"]["ServiceName"]).rsplit(".", 1)[-1]
        for kind in ("network", "eks")
        for r in result.templates.get(kind, {"Resources": {}})["Resources"].values()
        if r["Type"] == "AWS::EC2::VPCEndpoint"
    }


# The README's "Kept in place" list: instance counts, health checks, node recovery,
# admin principals, endpoint sets, log retention.
@pytest.mark.parametrize(
    "change",
    [
        "node-recovery",
        "fewer-instances",
        "health-checks",
        "fsx-throughput",
        "eks-admins",
        "endpoint-set",
        "log-retention",
    ],
)
def test_edits_that_keep_the_cluster(synth, variant, change) -> None:
    result = variant(change)
    for kind in ("network", "storage", "capacity", "eks", "hyperpod"):
        assert replaced(synth, result, kind) == set(), kind
    base = synth(BASE)
    # Each edit reaches the templates, so the comparison above saw it.
    if change == "eks-admins":
        assert len(resources(result.templates["eks"], "AWS::EKS::AccessEntry")) == (
            len(resources(base.templates["eks"], "AWS::EKS::AccessEntry")) + 1
        )
    elif change == "endpoint-set":
        assert interface_endpoints(result) - interface_endpoints(base) == {"lambda", "sqs"}
    elif change == "log-retention":
        assert retention_days(base, "eks") == {365} and retention_days(result, "eks") == {90}
        assert retention_days(base, "network") == {365}
        assert retention_days(result, "network") == {30}
    else:  # the edit reaches the cluster, as an in-place update
        before = base.templates["hyperpod"]["Resources"][CLUSTER_LOGICAL_ID]
        assert result.templates["hyperpod"]["Resources"][CLUSTER_LOGICAL_ID] != before


def test_adding_a_zone_replaces_the_hyperpod_cluster_but_no_stateful_resource(
    synth, variant
) -> None:
    result = variant("add-zone")
    (found,) = [
        r
        for r in replacements(synth(BASE).templates["hyperpod"], result.templates["hyperpod"])
        if r.logical_id == CLUSTER_LOGICAL_ID
    ]
    assert found.reason == "VpcConfig changes"  # create-only
    # ... and the cluster keeps its name, so CloudFormation would refuse the update:
    # adding a zone needs the HyperPod cluster deleted first (see the README).
    assert found.blocked_by_name == "ClusterName"
    assert replaced(synth, result, "storage") == set()
    # Existing subnets, routes and NAT gateways stay; the new zone's are added.
    assert replaced(synth, result, "network") == set()


def test_renaming_the_environment_replaces_the_clusters(synth, variant) -> None:
    result = variant("rename-environment")
    base = synth(BASE)
    hyperpod = {
        r.reason for r in replacements(base.templates["hyperpod"], result.templates["hyperpod"])
    }
    assert "ClusterName changes" in hyperpod
    eks = {r.reason for r in replacements(base.templates["eks"], result.templates["eks"])}
    assert "Name changes" in eks


def test_buying_a_different_plan_moves_the_group_onto_it_in_place(synth, variant) -> None:
    """What is bought changes -> new plan name -> the HyperPod template changes too.

    (Were the ARN only read across stacks, this template would not change and the
    deploy would skip it, leaving the group on the old plan.)
    """
    base, result = synth(BASE), variant("new-plan-window")
    old_plan = base.templates["capacity"]["Resources"]["TrainingPlanLiteSft"]["Properties"]
    new_plan = result.templates["capacity"]["Resources"]["TrainingPlanLiteSft"]["Properties"]
    assert old_plan["PlanName"] != new_plan["PlanName"]
    group = result.templates["hyperpod"]["Resources"][CLUSTER_LOGICAL_ID]["Properties"][
        "RestrictedInstanceGroups"
    ][0]
    assert group["TrainingPlanArn"].endswith(f"training-plan/{new_plan['PlanName']}")
    assert replaced(synth, result, "hyperpod") == set()
