"""The NovaEnvironment check (config/examples/nova-jobs.yaml): its functions, network
placement, synth-known permissions and timeouts in the nova-base stack; the custom
resource, its cluster access, its grant on the HyperPod cluster and the log group's
output in the nova stack."""

from __future__ import annotations

import json
from typing import Any

import pytest

from novapod.constructs.nova_environment.handler import decisions, index
from novapod.nova.kubernetes import ENVIRONMENT_CHECK_GROUP
from tests.conftest import ROOT, joined, producer_value, resources

EXAMPLE = ROOT / "config" / "examples" / "nova-jobs.yaml"
ACCOUNT_REGION = "us-east-1:111122223333"
CLUSTER = "novapod-nova-jobs"
PLANS = {
    "rig-tune": f"arn:aws:sagemaker:{ACCOUNT_REGION}:training-plan/novapod-nova-jobs-tune-4d4c3289",
    "rig-rl": f"arn:aws:sagemaker:{ACCOUNT_REGION}:training-plan/novapod-nova-jobs-rl-7e7cec5d",
}


@pytest.fixture(scope="module")
def nova(synth) -> tuple[Any, dict[str, Any]]:
    result = synth(EXAMPLE)
    return result, result.templates["nova"]


@pytest.fixture(scope="module")
def base(synth) -> dict[str, Any]:
    return synth(EXAMPLE).templates["nova-base"]


def only(template: dict[str, Any], type_: str, prefix: str = "NovaEnvironment") -> tuple[str, Any]:
    found = [(k, r) for k, r in resources(template, type_).items() if k.startswith(prefix)]
    assert len(found) == 1, (type_, prefix, [k for k, _ in found])
    return found[0]


def logical_id(value: dict[str, Any]) -> str:
    return value["Fn::GetAtt"][0] if "Fn::GetAtt" in value else value["Ref"]


def check_role(result: Any, template: dict[str, Any]) -> str:
    """The logical ID (in nova-base) of the role the custom resource says the check runs as."""
    _, resource = only(template, "Custom::NovapodNovaEnvironment")
    return logical_id(producer_value(result, resource["Properties"]["RoleArn"]))


def granted(result: Any, policy: dict[str, Any]) -> dict[str, tuple[list[str], list[str]]]:
    return {
        s.get("Sid", "logs"): (
            sorted(s["Action"] if isinstance(s["Action"], list) else [s["Action"]]),
            sorted(
                joined(r, result)
                for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])
            ),
        )
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    }


def test_the_check_reads_exactly_its_cluster_its_plans_and_manages_its_interfaces(
    nova, base
) -> None:
    result, template = nova
    role = check_role(result, template)
    # In nova-base, built before any cluster: what is known at synth.
    policies = [
        p
        for p in resources(base, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
    ]
    assert len(policies) == 1
    got = granted(result, policies[0])
    assert got == {
        "logs": (["logs:CreateLogStream", "logs:PutLogEvents"], got["logs"][1]),
        "AttachToVpc": (
            [
                "ec2:AssignPrivateIpAddresses",
                "ec2:CreateNetworkInterface",
                "ec2:DeleteNetworkInterface",
                "ec2:UnassignPrivateIpAddresses",
            ],
            ["arn:${AWS::Partition}:ec2:us-east-1:111122223333:*/*"],
        ),
        "DescribeNetworkInterfaces": (["ec2:DescribeNetworkInterfaces"], ["*"]),
        "DescribeEksCluster": (
            ["eks:DescribeCluster"],
            [f"arn:aws:eks:{ACCOUNT_REGION}:cluster/{CLUSTER}"],
        ),
        "DescribeGroupPlans": (["sagemaker:DescribeTrainingPlan"], sorted(PLANS.values())),
    }
    # Its logs go to its own log group only.
    assert got["logs"][1] == ["${" + logical_id(check_log_group_ref(base)) + ".Arn}"]
    # In nova, after the HyperPod cluster: its own ARN (an ID known only once it exists),
    # read from the hyperpod stack, on the same role (read from nova-base).
    _, policy = only(template, "AWS::IAM::Policy", "NovaEnvironmentDescribeHyperPodCluster")
    assert [producer_value(result, r) for r in policy["Properties"]["Roles"]] == [{"Ref": role}]
    assert granted(result, policy) == {
        "DescribeHyperPodCluster": (
            ["sagemaker:DescribeCluster"],
            ["${HyperPodCluster.ClusterArn}"],
        )
    }


def check_log_group_ref(template: dict[str, Any]) -> dict[str, Any]:
    _, function = only(template, "AWS::Lambda::Function", "NovaEnvironmentHandlersIsComplete")
    return function["Properties"]["LoggingConfig"]["LogGroup"]


def test_the_check_role_reads_the_cluster_through_its_group_not_an_access_policy(nova) -> None:
    result, template = nova
    _, entry = only(template, "AWS::EKS::AccessEntry")
    props = entry["Properties"]
    assert props["ClusterName"] == CLUSTER
    assert producer_value(result, props["PrincipalArn"]) == {
        "Fn::GetAtt": [check_role(result, template), "Arn"]
    }
    assert props["Type"] == "STANDARD"
    # The group the bootstrap build binds to get on namespaces and CRDs, nothing more:
    # no EKS access policy (AdminView would read every Secret in the cluster).
    assert props["KubernetesGroups"] == ["novapod-nova-environment-check"]
    assert "AccessPolicies" not in props
    eks_template = result.templates["eks"]
    (bootstrap,) = resources(eks_template, "Custom::NovapodClusterBootstrap").values()
    variables = json.dumps(bootstrap["Properties"])
    assert "novapod-nova-environment-check" in variables
    # The handler's copy of the group name (its Lambda asset holds only its own folder).
    assert decisions.CHECK_GROUP == ENVIRONMENT_CHECK_GROUP


def test_is_complete_runs_in_the_private_subnets_with_https_only(nova, base) -> None:
    result, _ = nova
    _, function = only(base, "AWS::Lambda::Function", "NovaEnvironmentHandlersIsComplete")
    vpc = function["Properties"]["VpcConfig"]
    network = result.templates["network"]["Resources"]
    # The network stack's private subnets, one per zone, read from its outputs.
    private = [producer_value(result, s) for s in vpc["SubnetIds"]]
    assert len(private) == 2
    assert all(
        logical_id(s) in network and network[logical_id(s)]["Type"] == "AWS::EC2::Subnet"
        for s in private
    )
    # Built while the clusters are: the check's plumbing waits for no cluster.
    assert result.dependencies["nova-base"] == {"network", "storage"}

    group_id, group = only(base, "AWS::EC2::SecurityGroup")
    assert vpc["SecurityGroupIds"] == [{"Fn::GetAtt": [group_id, "GroupId"]}]
    assert "SecurityGroupIngress" not in group["Properties"]
    assert [
        (e["IpProtocol"], e["FromPort"], e["ToPort"], e["CidrIp"])
        for e in group["Properties"]["SecurityGroupEgress"]
    ] == [("tcp", 443, 443, "0.0.0.0/0")]
    vpc_id = producer_value(result, group["Properties"]["VpcId"])
    assert network[logical_id(vpc_id)]["Type"] == "AWS::EC2::VPC"

    # Admitted on HTTPS by the HyperPod group, which the EKS control plane's ENIs carry.
    _, ingress = only(base, "AWS::EC2::SecurityGroupIngress")
    props = ingress["Properties"]
    assert (props["IpProtocol"], props["FromPort"], props["ToPort"]) == ("tcp", 443, 443)
    assert props["SourceSecurityGroupId"] == {"Fn::GetAtt": [group_id, "GroupId"]}
    hyperpod_group = producer_value(result, props["GroupId"])
    eks_cluster = next(iter(resources(result.templates["eks"], "AWS::EKS::Cluster").values()))
    eks_groups = eks_cluster["Properties"]["ResourcesVpcConfig"]["SecurityGroupIds"]
    assert [producer_value(result, g) for g in eks_groups] == [hyperpod_group]

    # on_event only logs: no network interface for it.
    _, on_event = only(base, "AWS::Lambda::Function", "NovaEnvironmentHandlersOnEvent")
    assert "VpcConfig" not in on_event["Properties"]


def test_timeouts_fit_the_handler_and_cloudformation(nova, base) -> None:
    _, template = nova
    _, is_complete = only(base, "AWS::Lambda::Function", "NovaEnvironmentHandlersIsComplete")
    _, on_event = only(base, "AWS::Lambda::Function", "NovaEnvironmentHandlersOnEvent")
    worst = index.worst_case_seconds(decisions.MAX_GROUPS, decisions.MAX_CRDS)
    assert is_complete["Properties"]["Timeout"] == 660 >= worst
    assert on_event["Properties"]["Timeout"] == 60
    _, machine = only(base, "AWS::StepFunctions::StateMachine")
    definition = joined(machine["Properties"]["DefinitionString"])
    # 30 s between polls, 110 attempts: 55 min, past the check's own 50 min, under 1 h.
    assert '"IntervalSeconds":30' in definition
    assert '"MaxAttempts":110' in definition
    _, resource = only(template, "Custom::NovapodNovaEnvironment")
    timeout = int(resource["Properties"]["TimeoutSeconds"])
    assert timeout == 3000 < 110 * 30 <= 3600


def test_the_custom_resource_checks_this_environment(nova) -> None:
    result, template = nova
    resource_id, resource = only(template, "Custom::NovapodNovaEnvironment")
    props = dict(resource["Properties"])
    assert joined(props.pop("ServiceToken"), result).startswith(
        "${NovaEnvironmentHandlersProviderframeworkonEvent"
    )
    role_arn = props.pop("RoleArn")
    assert producer_value(result, role_arn) == {"Fn::GetAtt": [check_role(result, template), "Arn"]}
    assert props == {
        "ClusterName": CLUSTER,
        "EksClusterName": CLUSTER,
        "Namespace": "nova-jobs",
        "RestrictedGroups": [
            {"Name": "rig-tune", "TrainingPlanArn": PLANS["rig-tune"]},
            {"Name": "rig-rl", "TrainingPlanArn": PLANS["rig-rl"]},
        ],
        "RequiredCrds": ["pytorchjobs.kubeflow.org"],
        "TimeoutSeconds": "3000",
    }
    # What the handler parses is what the template says.
    parsed = decisions.parse_properties({**props, "RoleArn": "arn:aws:iam::111122223333:role/r"})
    assert [(g.name, g.training_plan_arn) for g in parsed.restricted_groups] == list(PLANS.items())
    # Access and the grant on the cluster exist before the first poll (the network path
    # and the other permissions are nova-base's, deployed before this stack).
    entry_id, _ = only(template, "AWS::EKS::AccessEntry")
    policy_id, _ = only(template, "AWS::IAM::Policy", "NovaEnvironmentDescribeHyperPodCluster")
    assert set(resource["DependsOn"]) == {entry_id, policy_id}
    assert resource_id.startswith("NovaEnvironment")
    assert result.dependencies["nova"] == {"hyperpod", "storage", "nova-base"}


def test_the_progress_log_group_is_an_output_with_retention(nova, base) -> None:
    result, template = nova
    output = template["Outputs"]["NovaEnvironmentLogGroup"]
    group = logical_id(check_log_group_ref(base))
    assert producer_value(result, output["Value"]) == {"Ref": group}
    assert "Nova job" in output["Description"]
    assert base["Resources"][group]["Properties"]["RetentionInDays"] == 365
