"""HyperPodStack: restricted groups bound to training plans, standard groups, roles."""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

import pytest

from benchmarks.critical_path import ancestors, resource_graph
from novapod.stacks.hyperpod import CLUSTER_LOGICAL_ID
from tests.conftest import DEFAULT_CONFIG, ROOT, joined, producer_value, resources

EXAMPLES = ROOT / "config" / "examples"
PURCHASE = EXAMPLES / "single-rig-purchase.yaml"
TWO = EXAMPLES / "two-rigs-two-plans.yaml"
MIXED = EXAMPLES / "rig-plus-standard.yaml"
ADOPT = EXAMPLES / "adopt-existing-plan.yaml"
EXISTING = EXAMPLES / "existing-vpc.yaml"
STANDARD_ON_PLAN = EXAMPLES / "standard-group-on-plan.yaml"


def cluster(result) -> dict[str, Any]:
    return result.templates["hyperpod"]["Resources"][CLUSTER_LOGICAL_ID]


def groups(result, key: str = "RestrictedInstanceGroups") -> dict[str, dict[str, Any]]:
    return {g["InstanceGroupName"]: g for g in cluster(result)["Properties"].get(key, [])}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (PURCHASE, {"nova-lite": "TrainingPlanLiteSft"}),
        (TWO, {"rig-lite": "TrainingPlanLite", "rig-pro": "TrainingPlanPro"}),
        (ADOPT, {"nova-pro": "TrainingPlanReserved"}),
    ],
    ids=["one", "two", "adopted"],
)
def test_each_rig_runs_on_its_plan_in_the_plans_zone(synth, path, expected) -> None:
    result = synth(path)
    rigs = groups(result)
    assert set(rigs) == set(expected)
    for name, plan_id in expected.items():
        rig = rigs[name]
        plan = result.templates["capacity"]["Resources"][plan_id]["Properties"]
        if plan["Mode"] == "adopt":
            assert rig["TrainingPlanArn"] == plan["ExistingArn"]
        else:  # written from the deterministic name, so a new plan changes this template
            assert rig["TrainingPlanArn"] == (
                f"arn:aws:sagemaker:us-east-1:111122223333:training-plan/{plan['PlanName']}"
            )
        (subnet,) = rig["OverrideVpcConfig"]["Subnets"]
        assert producer_value(result, subnet) == {"Fn::GetAtt": [plan_id, "SubnetId"]}
        (group,) = rig["OverrideVpcConfig"]["SecurityGroupIds"]
        assert producer_value(result, group) == {
            "Fn::GetAtt": ["HyperPodSecurityGroup1B7ACBFE", "GroupId"]
        }


def test_rig_count_type_fsx_and_health_checks(synth) -> None:
    rigs = groups(synth(TWO))
    assert (rigs["rig-lite"]["InstanceType"], rigs["rig-lite"]["InstanceCount"]) == (
        "ml.p5.48xlarge",
        4,
    )
    assert rigs["rig-pro"]["InstanceCount"] == 8  # Pro DPO needs 6, plans sell 8
    assert rigs["rig-pro"]["EnvironmentConfig"] == {
        "FSxLustreConfig": {"SizeInGiB": 4800, "PerUnitStorageThroughput": 500}
    }
    one = groups(synth(PURCHASE))["nova-lite"]
    assert one["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    adopted = groups(synth(ADOPT))["nova-pro"]
    assert adopted["InstanceCount"] == 6  # explicit, below the adopted plan's 8
    assert "LifeCycleConfig" not in adopted  # no lifecycle scripts on restricted groups


def test_cluster_is_orchestrated_by_our_eks_in_our_private_subnets(synth) -> None:
    result = synth(PURCHASE)
    props = cluster(result)["Properties"]
    assert props["ClusterName"] == "novapod-nova-lite"
    assert producer_value(result, props["Orchestrator"]["Eks"]["ClusterArn"]) == {
        "Fn::GetAtt": ["ClusterEB0386A7", "Arn"]
    }
    subnets = [producer_value(result, s) for s in props["VpcConfig"]["Subnets"]]
    assert subnets == [{"Ref": "PrivateSubnetUse1Az4"}, {"Ref": "PrivateSubnetUse1Az6"}]
    assert props["NodeRecovery"] == "Automatic"
    # Per-group FSx (EnvironmentConfig); the cluster-wide SharedEnvironmentConfig would
    # need its own FSxLustreConfig (required in the CreateCluster API).
    assert "RestrictedInstanceGroupsConfig" not in props


def test_standard_groups_run_lifecycle_scripts_from_s3(synth) -> None:
    result = synth(MIXED)
    standard = groups(result, "InstanceGroups")
    assert set(standard) == {"system", "distillation"}
    system = standard["system"]
    assert system["LifeCycleConfig"]["OnCreate"] == "on_create.sh"
    uri = joined(system["LifeCycleConfig"]["SourceS3Uri"], result)
    assert uri.startswith("s3://${LifecycleScriptsBucket}/lifecycle-scripts/") and uri.endswith("/")
    bucket = result.templates["storage"]["Resources"]["LifecycleScriptsBucket"]
    # HyperPod documents lifecycle buckets named sagemaker-*.
    assert joined(bucket["Properties"]["BucketName"]) == (
        "sagemaker-np-mixed-${AWS::AccountId}-${AWS::Region}"
    )
    assert bucket["DeletionPolicy"] == "Retain"
    assert system["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 200}}]
    assert "TrainingPlanArn" not in system
    # Copied in by the eks stack, beside the EKS cluster (the storage stack, which the
    # EKS cluster waits for, holds only the bucket).
    assert resources(result.templates["storage"], "Custom::CDKBucketDeployment") == {}
    (deployment,) = resources(result.templates["eks"], "Custom::CDKBucketDeployment").values()
    prefix = joined(deployment["Properties"]["DestinationBucketKeyPrefix"])
    assert uri == f"s3://${{LifecycleScriptsBucket}}/{prefix}"
    destination = joined(deployment["Properties"]["DestinationBucketName"], result)
    assert destination == "${LifecycleScriptsBucket}"


def test_a_standard_group_runs_on_its_plan_in_the_plans_zone(synth) -> None:
    result = synth(STANDARD_ON_PLAN)
    assert "RestrictedInstanceGroups" not in cluster(result)["Properties"]
    (group,) = groups(result, "InstanceGroups").values()
    assert group["InstanceGroupName"] == "p5-train"
    assert group["TrainingPlanArn"] == (
        "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-std-plan-p5-std-7dfc5b66"
    )
    # The subnet the TrainingPlan resource reports for the zone of the plan's capacity.
    (subnet,) = group["OverrideVpcConfig"]["Subnets"]
    assert producer_value(result, subnet) == {"Fn::GetAtt": ["TrainingPlanP5Std", "SubnetId"]}
    (security_group,) = group["OverrideVpcConfig"]["SecurityGroupIds"]
    assert producer_value(result, security_group) == {
        "Fn::GetAtt": ["HyperPodSecurityGroup1B7ACBFE", "GroupId"]
    }
    plan = result.templates["capacity"]["Resources"]["TrainingPlanP5Std"]["Properties"]
    assert (plan["InstanceType"], plan["InstanceCount"], plan["DurationHours"]) == (
        "ml.p5.48xlarge",
        "2",
        "120",
    )
    assert plan["TargetResources"] == ["hyperpod-cluster"]
    assert set(plan["SubnetIdsByZoneId"]) == {"use1-az4", "use1-az6"}
    # Still a standard group: lifecycle scripts and its EBS volume.
    assert group["LifeCycleConfig"]["OnCreate"] == "on_create.sh"
    assert group["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]


def test_threads_per_core_reaches_the_group_and_only_when_set(synth) -> None:
    (group,) = groups(synth(STANDARD_ON_PLAN), "InstanceGroups").values()
    assert group["ThreadsPerCore"] == 1
    # Unset: the key is absent, so HyperPod uses the instance type's default.
    assert "ThreadsPerCore" not in groups(synth(MIXED), "InstanceGroups")["system"]
    assert "ThreadsPerCore" not in groups(synth(PURCHASE))["nova-lite"]


def role_statements(result, logical_fragment: str) -> list[dict[str, Any]]:
    # The execution roles live in the EKS stack (created while the EKS cluster is).
    template = result.templates["eks"]
    out = []
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        if logical_fragment in logical_id:
            out += policy["Properties"]["PolicyDocument"]["Statement"]
    return out


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@pytest.mark.parametrize(
    ("fragment", "kind"), [("RestrictedGroupRole", "restricted"), ("StandardGroupRole", "standard")]
)
def test_execution_role_statements(synth, fragment, kind) -> None:
    result = synth(MIXED)
    statements = {s["Sid"]: s for s in role_statements(result, fragment)}
    assert "fsx:DescribeFileSystems" in statements["DescribeWithoutResourceLevel"]["Action"]
    assert "cloudwatch:DescribeAlarms" in statements["DescribeWithoutResourceLevel"]["Action"]
    attach = statements["AttachInterfaces"]
    assert sorted(as_list(attach["Action"])) == [
        "ec2:AttachNetworkInterface",
        "ec2:DetachNetworkInterface",
    ]
    assert sorted(joined(r).rsplit(":", 1)[-1] for r in attach["Resource"]) == [
        "instance/*",
        "network-interface/*",
    ]
    assert statements["PodIdentityOnThisCluster"]["Action"] == "eks-auth:AssumeRoleForPodIdentity"
    # Written from the cluster's name, not read from the cluster: the ARN EKS gives it.
    (eks_cluster,) = resources(result.templates["eks"], "AWS::EKS::Cluster").values()
    name = eks_cluster["Properties"]["Name"]
    assert name == "novapod-mixed"
    assert joined(statements["PodIdentityOnThisCluster"]["Resource"]) == (
        f"arn:aws:eks:us-east-1:111122223333:cluster/{name}"
    )
    eni = statements["ManageInterfaces"]
    assert joined(eni["Resource"]).endswith(":network-interface/*")
    assert "ec2:CreateTags" not in as_list(eni["Action"])
    # The VPC CNI tags interfaces that already exist: no create-only condition.
    tags = statements["TagInterfaces"]
    assert tags["Action"] == "ec2:CreateTags" and "Condition" not in tags
    assert joined(tags["Resource"]).endswith(":network-interface/*")
    assert "ec2:DescribeInstanceTypes" in statements["DescribeWithoutResourceLevel"]["Action"]
    pulls = [joined(r) for r in as_list(statements["PullImages"]["Resource"])]
    if kind == "restricted":
        nova = "arn:aws:ecr:us-east-1:708977205387:repository/"
        assert f"{nova}init-container-repo" in pulls
        assert all("*" not in arn for arn in pulls)
    else:
        assert pulls == ["arn:aws:ecr:us-east-1:*:repository/*"]
    for statement in statements.values():
        assert all("*" not in a for a in as_list(statement["Action"]))
    # The role's S3/KMS access comes from StorageStack's managed policies.
    template = result.templates["eks"]
    (role,) = [
        r for k, r in resources(template, "AWS::IAM::Role").items() if k.startswith(fragment)
    ]
    attached = [
        producer_value(result, p)
        for p in role["Properties"]["ManagedPolicyArns"]
        if "Fn::GetStackOutput" in p
    ]
    assert sorted(a["Ref"] for a in attached) == sorted(
        k for k in resources(result.templates["storage"], "AWS::IAM::ManagedPolicy")
    )
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }


def test_storage_policies_use_object_arns_for_object_actions(synth) -> None:
    storage = synth(MIXED).templates["storage"]
    policies = resources(storage, "AWS::IAM::ManagedPolicy")
    statements = [
        s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    for statement in statements:
        actions = as_list(statement["Action"])
        targets = [joined(r) for r in as_list(statement["Resource"])]
        if any(a.startswith("s3:") and a != "s3:ListBucket" for a in actions):
            assert all(t.endswith("/*") for t in targets), statement
        if "s3:ListBucket" in actions:
            assert all(not t.endswith("/*") for t in targets), statement
    by_sid = {s["Sid"]: s for s in statements}
    assert [joined(r) for r in as_list(by_sid["WriteObjects"]["Resource"])] == [
        "${ArtifactsBucket.Arn}/*"
    ]
    assert sorted(joined(r) for r in by_sid["ReadObjects"]["Resource"]) == [
        "${ArtifactsBucket.Arn}/*",
        "${DataBucket.Arn}/*",
        "${LifecycleScriptsBucket.Arn}/*",
    ]


def execution_roles(result) -> set[str]:
    return {
        k
        for k in resources(result.templates["eks"], "AWS::IAM::Role")
        if k.startswith(("RestrictedGroupRole", "StandardGroupRole"))
    }


def test_only_the_needed_role_kinds_exist(synth) -> None:
    # Logical IDs kept from when the HyperPod stack built the roles.
    assert execution_roles(synth(PURCHASE)) == {"RestrictedGroupRole637F6980"}
    assert execution_roles(synth(EXISTING)) == {"StandardGroupRoleBEBA0EDF"}
    assert execution_roles(synth(MIXED)) == {
        "RestrictedGroupRole637F6980",
        "StandardGroupRoleBEBA0EDF",
    }
    # No HyperPod section, no execution roles.
    assert execution_roles(synth(DEFAULT_CONFIG)) == set()
    for path in (PURCHASE, EXISTING, MIXED):
        hyperpod = synth(path).templates["hyperpod"]
        assert not resources(hyperpod, "AWS::IAM::Role")
        assert not resources(hyperpod, "AWS::IAM::Policy")


@pytest.mark.parametrize("path", [PURCHASE, TWO, MIXED, ADOPT, EXISTING], ids=lambda p: p.stem)
def test_hyperpod_depends_on_eks_and_capacity_not_the_reverse(synth, path) -> None:
    result = synth(path)
    assert "eks" in result.dependencies["hyperpod"]
    if "capacity" in result.templates:
        assert "capacity" in result.dependencies["hyperpod"]
        assert "eks" not in result.dependencies["capacity"]
        assert "hyperpod" not in result.dependencies["eks"]


@pytest.mark.parametrize(
    ("path", "rig"), [(PURCHASE, True), (EXISTING, False)], ids=["rig", "standard-only"]
)
def test_cluster_waits_for_the_hyperpod_dependencies(synth, path, rig) -> None:
    result = synth(path)
    eks = result.templates["eks"]
    (bootstrap,) = resources(eks, "Custom::NovapodClusterBootstrap").values()
    assert bootstrap["Properties"]["InstallRigDependencies"] == ("true" if rig else "false")
    # The bootstrap runs after the managed add-ons (CNI, DNS, pod identity) exist ...
    assert set(resources(eks, "AWS::EKS::Addon")) <= set(bootstrap.get("DependsOn", []))
    # ... and the HyperPod cluster is in a stack that deploys after the EKS stack, which
    # completes only when the bootstrap resource has.
    assert "eks" in result.dependencies["hyperpod"]
    project = next(iter(resources(eks, "AWS::CodeBuild::Project").values()))["Properties"]
    assert len(project["VpcConfig"]["Subnets"]) == 2


# What nodes pull with their execution role, written out per region (EKS user guide
# "Amazon container image registries for Amazon EKS add-ons"; the health agent's
# registries from aws/sagemaker-hyperpod-cli's chart; the EFA plugin's chart default is
# in us-west-2 and the RIG install re-points it to the cluster's region).
EKS_SYSTEM_REPOSITORIES = (
    "amazon-k8s-cni",
    "amazon-k8s-cni-init",
    "amazon/aws-network-policy-agent",
    "eks/kube-proxy",
    "eks/coredns",
    "eks/eks-pod-identity-agent",
    "eks/pause",
)
HEALTH_AGENT_ACCOUNT = {"us-east-1": "767398015722", "eu-west-2": "011528288831"}


def system_images(region: str) -> list[str]:
    return [
        *(f"arn:aws:ecr:{region}:602401143452:repository/{r}" for r in EKS_SYSTEM_REPOSITORIES),
        "arn:aws:ecr:us-west-2:602401143452:repository/eks/aws-efa-k8s-device-plugin",
        f"arn:aws:ecr:{region}:602401143452:repository/eks/aws-efa-k8s-device-plugin",
        f"arn:aws:ecr:{region}:{HEALTH_AGENT_ACCOUNT[region]}:repository/"
        "hyperpod-health-monitoring-agent",
    ]


def allows(statements: list[dict[str, Any]], action: str, arn: str, region: str) -> bool:
    """Does an unconditioned Allow statement grant `action` on `arn`?"""
    for statement in statements:
        if statement.get("Effect") != "Allow" or "Condition" in statement:
            continue
        if action not in as_list(statement["Action"]):
            continue
        for resource in as_list(statement["Resource"]):
            pattern = (
                joined(resource)
                .replace("${AWS::Partition}", "aws")
                .replace("${AWS::Region}", region)
                .replace("${AWS::AccountId}", "111122223333")
            )
            if fnmatchcase(arn, pattern):
                return True
    return False


@pytest.mark.parametrize(
    ("path", "fragment", "region"),
    [
        (MIXED, "RestrictedGroupRole", "us-east-1"),
        (MIXED, "StandardGroupRole", "us-east-1"),
        (PURCHASE, "RestrictedGroupRole", "us-east-1"),
        (EXISTING, "StandardGroupRole", "eu-west-2"),
    ],
    ids=["mixed-restricted", "mixed-standard", "rig", "standard-eu-west-2"],
)
def test_every_execution_role_pulls_the_node_system_images(synth, path, fragment, region) -> None:
    statements = role_statements(synth(path), fragment)
    for arn in system_images(region):
        for action in ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"):
            assert allows(statements, action, arn, region), (action, arn)
    # The registry login token has no resource type: Resource "*" is the only form.
    assert any(
        s["Action"] == "ecr:GetAuthorizationToken" and s["Resource"] == "*" for s in statements
    )
    # Pulls only: nothing that writes to any registry.
    actions = {a for s in statements for a in as_list(s["Action"]) if a.startswith("ecr:")}
    assert actions == {
        "ecr:BatchGetImage",
        "ecr:GetDownloadUrlForLayer",
        "ecr:BatchCheckLayerAvailability",
        "ecr:GetAuthorizationToken",
    }


def test_restricted_role_pulls_no_other_aws_registry(synth) -> None:
    statements = role_statements(synth(PURCHASE), "RestrictedGroupRole")
    # The Nova registry's repositories; other repositories of the EKS registry, and
    # other repositories named nova-* of any account, stay out of reach.
    assert allows(
        statements,
        "ecr:BatchGetImage",
        "arn:aws:ecr:us-east-1:708977205387:repository/init-container-repo",
        "us-east-1",
    )
    for arn in (
        "arn:aws:ecr:us-east-1:123456789012:repository/nova-fine-tuning",
        "arn:aws:ecr:us-east-1:602401143452:repository/eks/aws-load-balancer-controller",
        "arn:aws:ecr:us-west-2:602401143452:repository/amazon-k8s-cni",
        "arn:aws:ecr:us-east-1:111122223333:repository/anything",
    ):
        assert not allows(statements, "ecr:BatchGetImage", arn, "us-east-1"), arn


@pytest.mark.parametrize("path", [PURCHASE, MIXED, EXISTING], ids=lambda p: p.stem)
def test_cluster_waits_for_its_execution_roles_without_them_waiting_for_eks(synth, path) -> None:
    result = synth(path)
    eks = result.templates["eks"]
    graph = resource_graph(eks)
    (eks_cluster,) = resources(eks, "AWS::EKS::Cluster")
    # Every group's role is a role of the EKS stack, with its inline policy there too ...
    used = {
        producer_value(result, g["ExecutionRole"])["Fn::GetAtt"][0]
        for key in ("RestrictedInstanceGroups", "InstanceGroups")
        for g in groups(result, key).values()
    }
    assert used and used <= set(resources(eks, "AWS::IAM::Role"))
    policies = {
        k: p
        for k, p in resources(eks, "AWS::IAM::Policy").items()
        if any(r.get("Ref") in used for r in p["Properties"]["Roles"])
    }
    assert {r["Ref"] for p in policies.values() for r in p["Properties"]["Roles"]} == used
    # ... the HyperPod stack deploys after the EKS stack has completed (roles, policies) ...
    assert "eks" in result.dependencies["hyperpod"]
    # ... and neither the roles nor their policies wait for the EKS cluster.
    for logical_id in used | set(policies):
        assert eks_cluster not in ancestors(graph, logical_id), logical_id


def test_hyperpod_outputs_name_and_arn_with_descriptions(synth) -> None:
    outputs = synth(PURCHASE).templates["hyperpod"]["Outputs"]
    assert outputs["ClusterName"]["Value"] == "novapod-nova-lite"
    assert outputs["ClusterArn"]["Value"] == {"Fn::GetAtt": [CLUSTER_LOGICAL_ID, "ClusterArn"]}
    for name in ("ClusterName", "ClusterArn"):
        assert len(outputs[name]["Description"]) > 20, name
