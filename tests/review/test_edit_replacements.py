"""Which config edits keep the HyperPod cluster (and every other resource), which replace it.

Each edit of the single-RIG example is synthesized once (conftest.py) and compared with
the example by `novapod review`, whose replacement verdicts are CDK's diff engine's. The
docs/reviewing.md's "What an edit replaces" rests on these tests.
"""

from __future__ import annotations

import pytest

from novapod.review.assembly import read_stacks
from novapod.review.engine import diff_templates
from novapod.stacks.hyperpod import CLUSTER_LOGICAL_ID

ENV = "novapod-nova-lite"


def changed(report, kind: str) -> dict[str, dict]:
    (stack,) = [s for s in report["stacks"] if s["stack"] == f"{ENV}-{kind}"]
    return {r["logical_id"]: r for r in stack["resources"]}


# docs/reviewing.md's "Kept in place" list: instance counts, health checks, node recovery,
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
def test_edits_that_keep_every_resource(review_of, change) -> None:
    report = review_of("base", change)
    for stack in report["stacks"]:
        assert {r["replacement"] for r in stack["resources"]} <= {"no"}, stack["stack"]
    assert report["stateful"] == [] and report["purchases"] == []
    # Each edit reaches the templates, so the comparison above saw it.
    if change == "eks-admins":
        entries = [
            r for r in changed(report, "eks").values() if r["type"] == "AWS::EKS::AccessEntry"
        ]
        assert [r["change"] for r in entries] == ["add"]
    elif change == "endpoint-set":
        services = {e["service"].rsplit(".", 1)[-1] for e in report["security"]["endpoints"]}
        assert services == {"lambda", "sqs"}
    elif change == "log-retention":
        for kind in ("eks",):  # the flow logs are there too (constructs/flow_logs.py)
            groups = [
                r for r in changed(report, kind).values() if r["type"] == "AWS::Logs::LogGroup"
            ]
            assert groups and all(
                r["properties"] == {"RetentionInDays": "WILL_UPDATE"} for r in groups
            )
    else:  # the edit reaches the cluster, as an in-place update
        cluster = changed(report, "hyperpod")[CLUSTER_LOGICAL_ID]
        assert (cluster["change"], cluster["replacement"]) == ("update", "no")


def test_renaming_the_environment_builds_a_second_one(review_of, variant) -> None:
    report = review_of("base", "rename-environment")
    stacks = report["summary"]["stacks"]
    # New stack names: cdk deploy creates them beside the old ones, which stay deployed.
    assert all(n.startswith("novapod-renamed-") for n in stacks["added"])
    assert all(n.startswith(f"{ENV}-") for n in stacks["removed"])
    assert len(stacks["added"]) == len(stacks["removed"]) == 8
    assert [p["action"] for p in report["purchases"]] == ["remove", "buy"]  # bought again
    # Compared kind by kind, the engine says the new names replace both clusters.
    base, head = variant("base").outdir, variant("rename-environment").outdir
    old, new = read_stacks(base, "--base"), read_stacks(head, "--head")
    hyperpod, eks = diff_templates(
        [
            (old[f"{ENV}-{kind}"].template_path, new[f"novapod-renamed-{kind}"].template_path)
            for kind in ("hyperpod", "eks")
        ]
    ).diffs
    cluster = next(r for r in hyperpod["resources"] if r["logical_id"] == CLUSTER_LOGICAL_ID)
    assert cluster["properties"]["ClusterName"] == "WILL_REPLACE"
    eks_cluster = next(r for r in eks["resources"] if r["new_type"] == "AWS::EKS::Cluster")
    assert eks_cluster["properties"]["Name"] == "WILL_REPLACE"
