"""The managed policy for `novapod status` (in the nova stack, in the hyperpod stack of
an environment without jobs, in the capacity stack of one without a cluster): exactly the
calls `status` makes, each on this environment's resources only."""

from __future__ import annotations

from typing import Any

from novapod.config import load_config
from novapod.constructs.cluster_bootstrap.buildspec import recorded_marker
from novapod.operate.status.collect import (
    ACTIONS,
    JOB_ACTIONS,
    METRIC_ACTIONS,
    TRAINING_JOB_ACTIONS,
)
from novapod.operate.status.expected import expected
from tests.conftest import ROOT, joined, resources

LITE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
ADOPT = ROOT / "config" / "examples" / "adopt-existing-plan.yaml"
TRAINING_JOBS = ROOT / "config" / "examples" / "training-jobs.yaml"


def policy_of(template: dict[str, Any]) -> dict[str, Any]:
    (policy,) = [
        r for k, r in resources(template, "AWS::IAM::ManagedPolicy").items()
        if k.startswith("StatusPolicy")
    ]  # fmt: skip
    return policy


def statements(result, policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for s in policy["Properties"]["PolicyDocument"]["Statement"]:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        found = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        out[s["Sid"]] = {
            "actions": sorted(actions),
            "resources": sorted(joined(r, result) for r in found),
            "condition": s.get("Condition"),
        }
    return out


def test_the_status_policy_grants_the_calls_status_makes_on_this_environment_only(synth) -> None:
    result = synth(LITE)
    template = result.templates["nova"]  # the example has jobs: a nova stack
    assert "StatusPolicyArn" not in result.templates["hyperpod"]["Outputs"]
    found = statements(result, policy_of(template))
    assert found == {
        "ReadLedgerTableName": {
            "actions": ["cloudformation:DescribeStacks"],
            "resources": [
                "arn:aws:cloudformation:us-east-1:111122223333:stack/novapod-nova-lite-storage/*"
            ],
            "condition": None,
        },
        "QueryPurchaseLedger": {
            "actions": ["dynamodb:Query"],
            "resources": ["${PurchaseLedger.Arn}"],
            "condition": {
                "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["nova-lite"]},
                "Null": {"dynamodb:LeadingKeys": "false"},
            },
        },
        "DecryptPurchaseLedger": {
            "actions": ["kms:Decrypt", "kms:DescribeKey"],
            "resources": ["${EncryptionKey.Arn}"],
            "condition": {
                "StringEquals": {
                    "kms:ViaService": {
                        "Fn::Join": ["", ["dynamodb.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]
                    }
                }
            },
        },
        "DescribeTrainingPlans": {
            "actions": [
                "sagemaker:DescribeTrainingPlan",
                "sagemaker:DescribeTrainingPlanExtensionHistory",
            ],
            "resources": [
                "arn:aws:sagemaker:us-east-1:111122223333:training-plan/"
                "novapod-nova-lite-lite-sft-50d13e0b"
            ],
            "condition": None,
        },
        "DescribeHyperPodCluster": {
            "actions": ["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
            "resources": ["${HyperPodCluster.ClusterArn}"],
            "condition": None,
        },
        # When CloudFormation last updated the cluster (the nodes launched since).
        "ReadClusterUpdateTime": {
            "actions": ["cloudformation:DescribeStackResource"],
            "resources": [
                "arn:aws:cloudformation:us-east-1:111122223333:stack/novapod-nova-lite-hyperpod/*"
            ],
            "condition": None,
        },
        # Its Kubernetes version, and the endpoint for the marker and the jobs' runs.
        "DescribeEksCluster": {
            "actions": ["eks:DescribeCluster"],
            "resources": ["arn:aws:eks:us-east-1:111122223333:cluster/novapod-nova-lite"],
            "condition": None,
        },
        # The jobs' outputs' listing only.
        "ListJobOutputs": {
            "actions": ["s3:ListBucket"],
            "resources": ["arn:aws:s3:::${ArtifactsBucket}"],  # the storage stack's bucket
            "condition": {"StringEquals": {"s3:prefix": "nova/nova-lite/"}},
        },
        # The scheduled check's samples: GetMetricData has no resource-level permissions.
        "ReadPlanMetrics": {
            "actions": ["cloudwatch:GetMetricData"],
            "resources": ["*"],
            "condition": None,
        },
    }
    # The actions are the calls `status` makes (collect.ACTIONS and, with jobs,
    # JOB_ACTIONS, with the monitor METRIC_ACTIONS), plus the key it reads with.
    granted = {a for s in found.values() for a in s["actions"]}
    assert granted == {*ACTIONS, *JOB_ACTIONS, *METRIC_ACTIONS, "kms:Decrypt", "kms:DescribeKey"}
    # Resource "*" is acknowledged with its reason on the policy alone (cdk-nag's
    # AwsSolutions-IAM5 fails synthesis otherwise; checkov's CKV_AWS_111 is its twin).
    skipped = {s["id"]: s["comment"] for s in policy_of(template)["Metadata"]["checkov"]["skip"]}
    assert skipped["CKV_AWS_111"].startswith(
        "cloudwatch:GetMetricData has no resource-level permissions"
    )
    output = template["Outputs"]["StatusPolicyArn"]
    assert output["Value"] == {
        "Ref": next(
            k
            for k in resources(template, "AWS::IAM::ManagedPolicy")
            if k.startswith("StatusPolicy")
        )
    }


def test_with_training_job_jobs_it_lists_training_jobs_and_describes_its_own(synth) -> None:
    """ListTrainingJobs has no resource type (list_amazonsagemaker.html): "*", acknowledged
    with that reason; DescribeTrainingJob on this environment's training jobs only.
    Fails if status's training-job calls were not granted, or granted on every job."""
    result = synth(TRAINING_JOBS)
    policy = policy_of(result.templates["nova"])
    found = statements(result, policy)
    assert found["ListTrainingJobs"] == {
        "actions": ["sagemaker:ListTrainingJobs"],
        "resources": ["*"],
        "condition": None,
    }
    assert found["DescribeTrainingJobs"] == {
        "actions": ["sagemaker:DescribeTrainingJob"],
        "resources": ["arn:aws:sagemaker:us-east-1:111122223333:training-job/novapod-mixed-tj--*"],
        "condition": None,
    }
    granted = {a for s in found.values() for a in s["actions"]}
    assert granted == {
        *ACTIONS,
        *JOB_ACTIONS,
        *METRIC_ACTIONS,
        *TRAINING_JOB_ACTIONS,
        "kms:Decrypt",
        "kms:DescribeKey",
    }
    skipped = {s["id"]: s["comment"] for s in policy["Metadata"]["checkov"]["skip"]}
    assert "sagemaker:ListTrainingJobs has no resource-level permissions" in skipped["CKV_AWS_111"]
    assert "cloudwatch:GetMetricData has no resource-level permissions" in skipped["CKV_AWS_111"]


def test_without_jobs_the_hyperpod_stack_has_it_and_adopted_plans_go_by_arn(synth) -> None:
    result = synth(ADOPT)
    assert "nova" not in result.templates
    template = result.templates["hyperpod"]
    assert "StatusPolicyArn" in template["Outputs"]
    found = statements(result, policy_of(template))
    assert "ListJobOutputs" not in found  # no jobs
    # The drift of the EKS cluster and of the nodes is read without jobs too.
    assert found["DescribeEksCluster"]["resources"] == [
        "arn:aws:eks:us-east-1:111122223333:cluster/novapod-adopt"
    ]
    assert found["ReadClusterUpdateTime"]["resources"] == [
        "arn:aws:cloudformation:us-east-1:111122223333:stack/novapod-adopt-hyperpod/*"
    ]
    granted = {a for s in found.values() for a in s["actions"]}
    assert granted == {*ACTIONS, *METRIC_ACTIONS, "kms:Decrypt", "kms:DescribeKey"}
    assert found["DescribeHyperPodCluster"]["resources"] == ["${HyperPodCluster.ClusterArn}"]
    assert found["QueryPurchaseLedger"]["resources"] == ["${PurchaseLedger.Arn}"]
    assert found["DescribeTrainingPlans"]["resources"] == [
        "arn:aws:sagemaker:us-east-1:111122223333:training-plan/team-p5-january"
    ]


def test_without_the_monitor_stack_no_metric_is_granted(synth, tmp_path) -> None:
    config = tmp_path / "no-monitor.yaml"
    text = LITE.read_text().replace("notifications:\n  emails: [platform-team@example.com]\n", "")
    assert "notifications" not in text  # nothing alerts without the monitor
    config.write_text(text + "monitoring: {enabled: false}\n")
    result = synth(config)
    assert "monitor" not in result.templates
    found = statements(result, policy_of(result.templates["nova"]))
    assert "ReadPlanMetrics" not in found
    granted = {a for s in found.values() for a in s["actions"]}
    assert granted == {*ACTIONS, *JOB_ACTIONS, "kms:Decrypt", "kms:DescribeKey"}


def health_policy_of(template: dict[str, Any]) -> dict[str, Any]:
    (policy,) = [
        r for k, r in resources(template, "AWS::IAM::ManagedPolicy").items()
        if k.startswith("HealthCheckPolicy")
    ]  # fmt: skip
    return policy


def test_the_health_check_policy_starts_deep_health_checks_on_this_cluster_only(synth) -> None:
    """`novapod health`'s one write is its own policy, beside the read-only StatusPolicy
    (in the nova stack with jobs, in the hyperpod stack without)."""
    for path, kind in ((LITE, "nova"), (ADOPT, "hyperpod")):
        result = synth(path)
        template = result.templates[kind]
        found = statements(result, health_policy_of(template))
        assert found == {
            "StartDeepHealthCheck": {
                "actions": ["sagemaker:StartClusterHealthCheck"],
                "resources": ["${HyperPodCluster.ClusterArn}"],
                "condition": None,
            }
        }, path
        output = template["Outputs"]["HealthCheckPolicyArn"]
        assert output["Value"] == {
            "Ref": next(
                k
                for k in resources(template, "AWS::IAM::ManagedPolicy")
                if k.startswith("HealthCheckPolicy")
            )
        }
        # Never in the read-only policy.
        granted = {
            a
            for s in policy_of(template)["Properties"]["PolicyDocument"]["Statement"]
            for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        }
        assert "sagemaker:StartClusterHealthCheck" not in granted
    assert "HealthCheckPolicyArn" not in synth(LITE).templates["hyperpod"]["Outputs"]


def test_status_expects_the_marker_the_eks_stack_s_bootstrap_records(synth) -> None:
    """What `status` compares the marker with is what the synthesized bootstrap resource's
    build environment makes the build record: one computation (buildspec.recorded_marker
    of buildspec.build_environment), with the chart's revision the template shows."""
    for path in (LITE, ADOPT):
        result = synth(path)
        (bootstrap,) = resources(
            result.templates["eks"], "Custom::NovapodClusterBootstrap"
        ).values()
        props = bootstrap["Properties"]
        wanted = expected(load_config(path, approvals=False)).eks
        assert wanted is not None
        assert dict(wanted.marker) == recorded_marker(props["BuildEnvironment"]), path
        assert wanted.marker["chart_revision"] == props["ChartRevision"]
        assert wanted.marker.get("rig_revision") == (props["RigRevision"] or None)
        assert wanted.marker["nova_access_sha256"] == props.get("KubernetesSha256", "")


def test_plans_without_a_cluster_get_it_in_the_capacity_stack(synth, tmp_path) -> None:
    """An environment of training plans alone: its capacity stack holds the policy, with
    the plans, the ledger and the metrics, and nothing of a cluster."""
    import yaml

    document = yaml.safe_load(LITE.read_text())
    for section in ("jobs", "eks", "hyperpod"):
        del document[section]
    (plan,) = document["capacity"]["training_plans"]
    plan.update(instance_type="ml.p5.48xlarge", instance_count=2, duration_hours=48)
    plan["purchase"]["approve"] = "novapod-nova-lite-lite-sft-116b5d1a"  # 2 x 48 h
    path = tmp_path / "plans-only.yaml"
    path.write_text(yaml.safe_dump(document))
    result = synth(path)
    assert "hyperpod" not in result.templates and "nova" not in result.templates
    found = statements(result, policy_of(result.templates["capacity"]))
    assert sorted(found) == [
        "DecryptPurchaseLedger",
        "DescribeTrainingPlans",
        "QueryPurchaseLedger",
        "ReadLedgerTableName",
        "ReadPlanMetrics",
    ]
    assert found["DescribeTrainingPlans"]["resources"] == [
        "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-nova-lite-lite-sft-116b5d1a"
    ]
    outputs = result.templates["capacity"]["Outputs"]
    assert "StatusPolicyArn" in outputs
