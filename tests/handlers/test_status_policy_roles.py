"""`novapod status` run as the nova stack's StatusPolicy, read from a synthesized
template: the fake authorizes every call against its statements (tests/fakes/iam.py), so
the policy is enough, and each of its statements is needed (least privilege)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme

from novapod import cli
from tests.conftest import ROOT, Synthesized, producer_value, resources
from tests.fakes import iam
from tests.fakes.aws_control_plane import FakeControlPlane, StackResource
from tests.fakes.hyperpod import restricted_group
from tests.handlers.test_fake_iam import EXAMPLE_ACCOUNT
from tests.handlers.world import LEDGER_TABLE

LITE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
PLAN = "novapod-nova-lite-lite-sft-50d13e0b"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{EXAMPLE_ACCOUNT}:training-plan/{PLAN}"
CLUSTER = "novapod-nova-lite"
NOW = datetime(2027, 7, 12, tzinfo=UTC)
ARTIFACTS = "novapod-nova-lite-storage-artifacts-1a2b3c"
CA_PEM = trustme.CA().cert_pem.bytes()


def _principal(
    result: Synthesized, cluster_arn: str, policies: tuple[str, ...] = ("StatusPolicy",)
) -> iam.Principal:
    """The nova stack's StatusPolicy (or the `policies` named) as a role's statements, its
    references to the other stacks (the ledger, the key, the cluster) resolved to the
    fake's resources."""
    attributes = {
        ("PurchaseLedger", "Arn"): (
            f"arn:aws:dynamodb:us-east-1:{EXAMPLE_ACCOUNT}:table/{LEDGER_TABLE}"
        ),
        ("EncryptionKey", "Arn"): f"arn:aws:kms:us-east-1:{EXAMPLE_ACCOUNT}:key/1111",
        ("HyperPodCluster", "ClusterArn"): cluster_arn,
    }

    def walk(value: Any) -> Any:
        if isinstance(value, dict) and "Fn::GetStackOutput" in value:
            value = producer_value(result, value)
        if isinstance(value, dict) and "Fn::GetAtt" in value:
            return attributes[tuple(value["Fn::GetAtt"])]
        if isinstance(value, dict) and value.get("Ref") == "ArtifactsBucket":
            return ARTIFACTS  # the storage stack's bucket, by its name
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    template = result.templates["nova"]  # the example has jobs: the policy is there
    raw = [
        statement
        for name in policies
        for k, r in resources(template, "AWS::IAM::ManagedPolicy").items()
        if k.startswith(name)
        for statement in walk(r["Properties"]["PolicyDocument"]["Statement"])
    ]
    resolved = iam.resolve(raw, account=EXAMPLE_ACCOUNT, region="us-east-1")
    return iam.Principal("PlatformEngineer", tuple(iam.parse_statement(s) for s in resolved))


@pytest.fixture(scope="module")
def synthesized(synth: Callable[[Path], Synthesized]) -> Synthesized:
    return synth(LITE)


@pytest.fixture
def deployed(control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch) -> str:
    """The example deployed and healthy in the fake; returns the cluster's ARN."""
    plane = control_plane
    plane.reset()
    plane.account = plane.hyperpod.account = EXAMPLE_ACCOUNT
    plane.add_stack(
        "novapod-nova-lite-storage",
        {"PurchaseLedgerTableName": LEDGER_TABLE, "ArtifactsBucketName": ARTIFACTS},
    )
    plane.add_bucket(ARTIFACTS)
    plane.dynamodb.create_table(LEDGER_TABLE, partition_key="Environment", sort_key="Purchase")
    offering = plane.add_offering(
        "tpo-lite",
        zones=["us-east-1a"],
        start=NOW,  # the plan starts now: its jobs are on schedule
        fee="55000.00",
        duration_hours=144,
    )
    plane.add_plan(PLAN, offering, statuses=["Active"])
    plane.set_plan_counts(PLAN, available=0, in_use=4)
    group = restricted_group(
        "nova-lite", current=4, target=4, plan_arn=PLAN_ARN, account=EXAMPLE_ACCOUNT
    )
    arn = plane.hyperpod.add_cluster(CLUSTER, restricted_groups=[group])
    plane.hyperpod.add_nodes(CLUSTER, "nova-lite", 4)
    # The EKS cluster's API is out of reach (a private endpoint): status reads the runs
    # from S3, and says so; what IAM grants is what this test is about.
    plane.hyperpod.add_eks_cluster(
        CLUSTER, endpoint="https://127.0.0.1:9", ca_pem=CA_PEM, version="1.34"
    )
    # The hyperpod stack: when CloudFormation last updated the cluster (before its nodes).
    plane.add_stack(
        "novapod-nova-lite-hyperpod",
        resources={
            "HyperPodCluster": StackResource(
                "AWS::SageMaker::Cluster", updated=datetime(2029, 12, 31, tzinfo=UTC)
            )
        },
    )
    plane.put_object(ARTIFACTS, "nova/nova-lite/sft-lora/sft-lora-a1b2c/manifest.json", b"{}", NOW)
    # An hour into the plan, sampled by the scheduled check every five minutes.
    dimensions = {"Environment": "nova-lite", "Plan": "lite-sft"}
    for minute in range(0, 60, 5):
        at = NOW + timedelta(minutes=minute)
        plane.monitoring.put_datum("novapod", "InUseInstances", dimensions, at=at, value=4)
        for name, value in (("InUseInstanceSeconds", 4 * 300), ("SampledSeconds", 300)):
            plane.monitoring.put_datum(
                "novapod", name, dimensions, at=at, value=value, unit="Seconds"
            )
    monkeypatch.setattr(cli, "_status_now", lambda: NOW + timedelta(hours=1))
    yield arn
    plane.act_as(None)
    assert plane.violations == []


def test_the_status_policy_is_enough(synthesized, deployed, control_plane, capsys) -> None:
    control_plane.act_as(_principal(synthesized, deployed))
    status = cli.main(["status", str(LITE)])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), out
    assert out.splitlines()[0].endswith(": healthy")
    assert "ListClusterNodes" in control_plane.operations()
    assert "ListObjectsV2" in control_plane.operations()
    assert ("eks", "DescribeCluster") in {(c.service, c.operation) for c in control_plane.calls}
    assert "DescribeStackResource" in control_plane.operations()
    assert "sft-lora-a1b2c  sft-lora  succeeded" in out  # its run, from S3
    assert "GetMetricData" in control_plane.operations()
    assert "  lite-sft  4 inst-h         1 of 1 h  4 inst-h  100%   ok" in out


@pytest.mark.parametrize(
    ("sid", "call"),
    [
        ("ReadLedgerTableName", "DescribeStacks"),
        ("QueryPurchaseLedger", "Query"),
        ("DescribeTrainingPlans", "DescribeTrainingPlan"),
        ("DescribeHyperPodCluster", "DescribeCluster"),
        ("ReadClusterUpdateTime", "DescribeStackResource"),
        ("DescribeEksCluster", "DescribeCluster"),
        ("ListJobOutputs", "ListObjectsV2"),
    ],
)
def test_each_statement_is_needed(  # noqa: PLR0917 - fixtures and one case
    synthesized, deployed, control_plane, capsys, sid, call
) -> None:
    control_plane.act_as(_principal(synthesized, deployed).without(sid))
    assert cli.main(["status", str(LITE)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("novapod status: "), err
    assert call in err and ("AccessDenied" in err), err


def test_without_the_metrics_statement_the_share_is_a_note_not_a_failure(
    synthesized, deployed, control_plane, capsys
) -> None:
    """ReadPlanMetrics is needed for the share (a role whose policy predates it gets a
    note), and its absence costs the report nothing else."""
    control_plane.act_as(_principal(synthesized, deployed).without("ReadPlanMetrics"))
    status = cli.main(["status", str(LITE), "--json"])
    out, err = capsys.readouterr()
    assert status in (0, 4) and err == "", err
    assert control_plane.calls_to("GetMetricData")  # asked, and refused
    notes = [p["utilization"]["note"] for p in json.loads(out)["plans"] if p["utilization"]]
    assert (
        "the scheduled check's samples were not read: you may not call "
        "cloudwatch:GetMetricData (the StatusPolicy grants it: deploy the stack that holds "
        "the policy again, or attach it)"
    ) in notes


def test_health_needs_the_health_check_policy_beside_the_status_policy(
    synthesized, deployed, control_plane, capsys
) -> None:
    """`novapod health` reads what the StatusPolicy allows and starts the check with the
    HealthCheckPolicy; the StatusPolicy alone may not start it."""
    both = _principal(synthesized, deployed, ("StatusPolicy", "HealthCheckPolicy"))
    argv = ["health", str(LITE), "--group", "nova-lite", "--force"]
    control_plane.act_as(both)
    assert cli.main(argv) == 0, capsys.readouterr()
    capsys.readouterr()
    assert len(control_plane.calls_to("StartClusterHealthCheck")) == 1
    control_plane.act_as(_principal(synthesized, deployed))
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "novapod health: an AWS call failed: An error occurred (AccessDeniedException) when "
        "calling the StartClusterHealthCheck operation: "
    ), err
    # Without --force it asks the cluster's API first, with the StatusPolicy's
    # eks:DescribeCluster; the private endpoint does not answer here, so it refuses.
    control_plane.act_as(both)
    assert cli.main(argv[:-1]) == 2
    assert "cannot tell whether group nova-lite runs a job" in capsys.readouterr().err
