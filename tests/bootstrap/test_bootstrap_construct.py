"""ClusterBootstrap in a stack with an EKS cluster, synthesized once under cdk-nag."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from novapod.constructs.cluster_bootstrap.buildspec import build_spec, pin_variables
from novapod.pins import default_pins
from tests.conftest import joined, resources

# The handlers' module in their asset (which bundles the handler core).
BOOTSTRAP_HANDLER = "novapod_lambda.cluster_bootstrap.handler.index"

ACCOUNT, REGION = "111122223333", "us-east-1"


@dataclass(frozen=True)
class Synthesized:
    rig: dict[str, Any]  # install_rig_dependencies=True, no key, default retention
    keyed: dict[str, Any]  # install_rig_dependencies=False, a KMS key, 30 days
    outdir: Path


def _fixture_stack(app: Any, name: str) -> tuple[Any, Any, Any, Any]:
    from aws_cdk import Environment, Stack
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_eks_v2 as eks

    from novapod.constructs.acknowledge import acknowledge

    stack = Stack(app, name, env=Environment(account=ACCOUNT, region=REGION))
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    group = ec2.SecurityGroup(stack, "BuildGroup", vpc=vpc, description="bootstrap test group")
    cluster = eks.Cluster(
        stack,
        "Cluster",
        cluster_name=f"{name.lower()}-eks",
        version=eks.KubernetesVersion.V1_33,
        vpc=vpc,
        default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
        default_capacity=0,
        endpoint_access=eks.EndpointAccess.PRIVATE,
    )
    # Findings of the test's own VPC and cluster, not of the construct under test.
    acknowledge(
        vpc,
        "AwsSolutions-VPC7",
        "Test fixture VPC for ClusterBootstrap; flow logs are NetworkStack's concern, not this one.",
    )
    acknowledge(
        cluster.role,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy]",
        "Test fixture cluster for ClusterBootstrap: the EKS service role needs this policy.",
    )
    return stack, vpc, group, cluster


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    from aws_cdk import App, Validations
    from aws_cdk import aws_kms as kms
    from cdk_nag import AwsSolutionsChecks

    from novapod.constructs.cluster_bootstrap.construct import ClusterBootstrap
    from novapod.environment import feature_flags

    outdir = tmp_path_factory.mktemp("bootstrap-cdk")
    app = App(outdir=str(outdir), context=feature_flags())
    stack, vpc, group, cluster = _fixture_stack(app, "BootstrapRig")
    ClusterBootstrap(
        stack,
        "Bootstrap",
        cluster=cluster,
        cluster_name="bootstraprig-eks",
        vpc=vpc,
        subnets=vpc.private_subnets,
        security_group=group,
        install_rig_dependencies=True,
    )
    keyed, vpc2, group2, cluster2 = _fixture_stack(app, "BootstrapKeyed")
    key = kms.Key(keyed, "Key", enable_key_rotation=True)
    ClusterBootstrap(
        keyed,
        "Bootstrap",
        cluster=cluster2,
        cluster_name="bootstrapkeyed-eks",
        vpc=vpc2,
        subnets=vpc2.private_subnets[:1],
        security_group=group2,
        install_rig_dependencies=False,
        log_retention_days=30,
        encryption_key=key,
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    # cdk-nag fails synth on any unacknowledged finding.
    assembly = app.synth()
    return Synthesized(
        rig=assembly.get_stack_by_name("BootstrapRig").template,
        keyed=assembly.get_stack_by_name("BootstrapKeyed").template,
        outdir=outdir,
    )


def only(template: dict[str, Any], type_: str) -> dict[str, Any]:
    (resource,) = resources(template, type_).values()
    return resource["Properties"]  # type: ignore[no-any-return]


def logical_id(template: dict[str, Any], type_: str, prefix: str) -> str:
    (found,) = [k for k in resources(template, type_) if k.startswith(prefix)]
    return found


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(template: dict[str, Any], fragment: str) -> list[dict[str, Any]]:
    found = [
        s
        for k, p in resources(template, "AWS::IAM::Policy").items()
        if fragment in k
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert found, f"no policy {fragment}"
    return found


def test_cdk_nag_passes_with_reasoned_acknowledgements(synthesized: Synthesized) -> None:
    outdir = synthesized.outdir  # synthesis itself fails on an unacknowledged finding
    report = json.loads((outdir / "validation-report.json").read_text())
    assert all(plugin["conclusion"] == "success" for plugin in report["pluginReports"])
    acknowledged: dict[str, set[str]] = {}
    for metadata_file in outdir.glob("BootstrapRig.metadata.json"):
        for path, entries in json.loads(metadata_file.read_text()).items():
            for entry in entries:
                if entry["type"] != "aws:cdk:acknowledged-rules" or "/Bootstrap/" not in path:
                    continue
                for rule, reason in entry["data"].items():
                    assert len(reason) >= 60, f"{path} {rule}: reason too thin"
                    acknowledged.setdefault(rule.split("::", 1)[1].split("[")[0], set()).add(path)
    # The project's VPC permissions, CDK's default log group, CB4 (no key here) and the
    # Provider framework's own functions and waiter: nothing else needs a reason.
    aws_solutions = {r for r in acknowledged if r.startswith("AwsSolutions-")}
    assert aws_solutions == {"AwsSolutions-IAM5", "AwsSolutions-CB4", "AwsSolutions-SF2"}
    assert acknowledged["AwsSolutions-CB4"] == {"/BootstrapRig/Bootstrap/Project"}


def test_cfn_lint_reports_nothing(synthesized: Synthesized) -> None:
    from tests.lint import lint_findings

    for template in (synthesized.rig, synthesized.keyed):
        # The fixture VPC's dummy zones are not the construct's; its own resources are.
        assert lint_findings(template, REGION, also_ignore=("W3010",)) == []


def test_project_runs_in_the_given_subnets_and_security_group(synthesized: Synthesized) -> None:
    template = synthesized.rig
    project = only(template, "AWS::CodeBuild::Project")
    vpc_config = project["VpcConfig"]
    assert vpc_config["VpcId"] == {"Ref": logical_id(template, "AWS::EC2::VPC", "Vpc")}
    private = sorted(k for k in resources(template, "AWS::EC2::Subnet") if "Private" in k)
    assert sorted(s["Ref"] for s in vpc_config["Subnets"]) == private
    group = logical_id(template, "AWS::EC2::SecurityGroup", "BuildGroup")
    assert vpc_config["SecurityGroupIds"] == [{"Fn::GetAtt": [group, "GroupId"]}]
    keyed = only(synthesized.keyed, "AWS::CodeBuild::Project")
    assert len(keyed["VpcConfig"]["Subnets"]) == 1


def test_project_runs_the_pinned_buildspec_without_docker(synthesized: Synthesized) -> None:
    project = only(synthesized.rig, "AWS::CodeBuild::Project")
    assert project["Source"]["Type"] == "NO_SOURCE"
    assert json.loads(project["Source"]["BuildSpec"]) == build_spec(
        default_pins(), "install", True, REGION
    )
    environment = project["Environment"]
    assert environment["Image"] == "aws/codebuild/standard:7.0"  # x86_64, like the pins
    assert environment["Type"] == "LINUX_CONTAINER"
    assert environment["PrivilegedMode"] is False
    variables = {v["Name"]: v["Value"] for v in environment["EnvironmentVariables"]}
    assert variables["CLUSTER_NAME"] == "bootstraprig-eks"  # a string: no wait for the cluster
    assert variables["SCRIPTS_KEY"].endswith(".zip")
    assert variables["SCRIPTS_BUCKET"].startswith("cdk-")
    assert (project["TimeoutInMinutes"], project["QueuedTimeoutInMinutes"]) == (45, 10)
    assert project["ConcurrentBuildLimit"] == 1
    keyed = only(synthesized.keyed, "AWS::CodeBuild::Project")
    assert json.loads(keyed["Source"]["BuildSpec"])["env"]["variables"]["INSTALL_RIG"] == "false"


def test_build_logs_have_retention_and_the_key(synthesized: Synthesized) -> None:
    rig, keyed = synthesized.rig, synthesized.keyed
    project = only(rig, "AWS::CodeBuild::Project")
    build_logs = logical_id(rig, "AWS::Logs::LogGroup", "BootstrapBuildLogs")
    assert project["LogsConfig"]["CloudWatchLogs"] == {
        "GroupName": {"Ref": build_logs},
        "Status": "ENABLED",
    }
    groups = resources(rig, "AWS::Logs::LogGroup")
    assert len(groups) == 5  # build, two handlers, framework, waiter
    assert {g["Properties"]["RetentionInDays"] for g in groups.values()} == {365}
    assert all("KmsKeyId" not in g["Properties"] for g in groups.values())
    key = logical_id(keyed, "AWS::KMS::Key", "Key")
    keyed_groups = resources(keyed, "AWS::Logs::LogGroup")
    for group in keyed_groups.values():
        assert group["Properties"]["RetentionInDays"] == 30
        assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [key, "Arn"]}
    keyed_project = only(keyed, "AWS::CodeBuild::Project")
    assert keyed_project["EncryptionKey"] == {"Fn::GetAtt": [key, "Arn"]}
    kms = [s for s in statements(keyed, "BootstrapRole") if s.get("Sid") == "EncryptBuildOutput"]
    assert kms[0]["Action"] == ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"]


def test_the_build_role_is_a_cluster_admin_through_an_access_entry(
    synthesized: Synthesized,
) -> None:
    template = synthesized.rig
    entry = only(template, "AWS::EKS::AccessEntry")
    role = logical_id(template, "AWS::IAM::Role", "BootstrapRole")
    cluster = logical_id(template, "AWS::EKS::Cluster", "Cluster")
    assert entry["PrincipalArn"] == {"Fn::GetAtt": [role, "Arn"]}
    assert entry["ClusterName"] == {"Ref": cluster}
    (policy,) = entry["AccessPolicies"]
    assert policy["AccessScope"] == {"Type": "cluster"}
    assert json.dumps(policy["PolicyArn"]).endswith(
        ':eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"]]}'
    )
    assert resources(template, "AWS::IAM::Role")[role]["Properties"]["AssumeRolePolicyDocument"][
        "Statement"
    ][0]["Principal"] == {"Service": "codebuild.amazonaws.com"}


def test_the_build_reaches_the_cluster_api_on_443(synthesized: Synthesized) -> None:
    template = synthesized.rig
    group = logical_id(template, "AWS::EC2::SecurityGroup", "BuildGroup")
    rules = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"].get("SourceSecurityGroupId") == {"Fn::GetAtt": [group, "GroupId"]}
    ]
    assert rules and all((r["FromPort"], r["ToPort"]) == (443, 443) for r in rules)
    cluster = logical_id(template, "AWS::EKS::Cluster", "Cluster")
    assert {"Fn::GetAtt": [cluster, "ClusterSecurityGroupId"]} in [r["GroupId"] for r in rules]


def test_iam_is_least_privilege(synthesized: Synthesized) -> None:
    for template in (synthesized.rig, synthesized.keyed):
        bootstrap = {
            k: p for k, p in resources(template, "AWS::IAM::Policy").items() if "Bootstrap" in k
        }
        assert bootstrap
        for policy in bootstrap.values():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                assert all("*" not in a for a in as_list(statement["Action"])), statement
        for logical, role in resources(template, "AWS::IAM::Role").items():
            if "Bootstrap" in logical:
                assert "ManagedPolicyArns" not in role["Properties"], logical

    template = synthesized.rig
    build = statements(template, "BootstrapRole")
    by_sid = {s.get("Sid"): s for s in build}
    cluster = logical_id(template, "AWS::EKS::Cluster", "Cluster")
    assert by_sid["DescribeThisCluster"]["Action"] == "eks:DescribeCluster"
    # Formatted from the name, not the cluster's Arn attribute: no wait for the cluster.
    assert joined(by_sid["DescribeThisCluster"]["Resource"]) == (
        f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/bootstraprig-eks"
    )
    assert cluster not in json.dumps(by_sid["DescribeThisCluster"])
    scripts = by_sid["ReadBootstrapScripts"]
    assert scripts["Action"] == "s3:GetObject"
    assert re.fullmatch(
        r"arn:aws:s3:::cdk-[a-z0-9]+-assets-\d+-[a-z0-9-]+/[0-9a-f]{64}\.zip", scripts["Resource"]
    )
    project = logical_id(template, "AWS::CodeBuild::Project", "BootstrapProject")
    on_event = statements(template, "BootstrapHandlersOnEventRole")
    is_complete = statements(template, "BootstrapHandlersIsCompleteRole")
    actions = {a: s["Resource"] for s in on_event + is_complete for a in as_list(s["Action"])}
    assert actions["codebuild:StartBuild"] == {"Fn::GetAtt": [project, "Arn"]}
    assert actions["codebuild:BatchGetBuilds"] == {"Fn::GetAtt": [project, "Arn"]}
    assert {a for s in on_event for a in as_list(s["Action"])} == {
        "codebuild:StartBuild",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    assert {a for s in is_complete for a in as_list(s["Action"])} == {
        "codebuild:BatchGetBuilds",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    # Resource "*" only where the service has no resource-level permissions.
    for logical, policy in resources(template, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "Bootstrap" in logical and statement["Resource"] == "*":
                assert all(a.startswith(("ec2:", "logs:")) for a in as_list(statement["Action"]))


def test_handlers_and_provider_timeouts(synthesized: Synthesized) -> None:
    template = synthesized.rig
    functions = {
        r["Properties"]["Handler"]: r["Properties"]
        for r in resources(template, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"].startswith(BOOTSTRAP_HANDLER)
    }
    assert set(functions) == {f"{BOOTSTRAP_HANDLER}.on_event", f"{BOOTSTRAP_HANDLER}.is_complete"}
    for function in functions.values():
        assert function["Runtime"] == "python3.14"
        assert function["Architectures"] == ["arm64"]
        assert function["Timeout"] == 60
    (machine,) = resources(template, "AWS::StepFunctions::StateMachine").values()
    definition = "".join(
        p for p in machine["Properties"]["DefinitionString"]["Fn::Join"][1] if isinstance(p, str)
    )
    interval = int(re.search(r'"IntervalSeconds":(\d+)', definition).group(1))  # type: ignore[union-attr]
    attempts = int(re.search(r'"MaxAttempts":(\d+)', definition).group(1))  # type: ignore[union-attr]
    assert 30 <= interval <= 60
    assert interval * attempts <= 3600  # CloudFormation's 1 h custom-resource limit
    project = only(template, "AWS::CodeBuild::Project")
    build_minutes = project["TimeoutInMinutes"] + project["QueuedTimeoutInMinutes"]
    assert build_minutes * 60 < interval * attempts  # the build ends before the Provider gives up


def test_the_custom_resource_carries_the_pins_and_waits_for_access(
    synthesized: Synthesized,
) -> None:
    template = synthesized.rig
    (logical, resource) = next(iter(resources(template, "Custom::NovapodClusterBootstrap").items()))
    props = resource["Properties"]
    pins = default_pins()
    assert props["PinsSha256"] == pins.digest()
    assert props["InstallRigDependencies"] == "true"
    assert props["ChartRevision"] == pins.chart.revision
    assert props["RigRevision"] == pins.rig.revision
    assert re.fullmatch(r"[0-9a-f]{64}", props["ScriptSha256"])
    # The handler hands these to every build, so each event installs what it declares.
    assert props["BuildEnvironment"] == pin_variables(pins, mode="install", rig=True, region=REGION)
    assert props["ClusterName"] == "bootstraprig-eks"
    project = logical_id(template, "AWS::CodeBuild::Project", "BootstrapProject")
    assert props["ProjectName"] == {"Ref": project}
    depends = set(resource["DependsOn"])
    assert logical_id(template, "AWS::EKS::AccessEntry", "Bootstrap") in depends
    # The cluster and the API ingress rule CDK puts under it.
    assert logical_id(template, "AWS::EKS::Cluster", "Cluster") in depends
    assert logical_id(
        template, "AWS::EC2::SecurityGroupIngress", "ClusterClusterSecurityGroup"
    ) in (depends)
    assert any(d.startswith("BootstrapRoleDefaultPolicy") for d in depends)
    assert resource["DeletionPolicy"] == "Delete"
    keyed = next(iter(resources(synthesized.keyed, "Custom::NovapodClusterBootstrap").values()))
    assert keyed["Properties"]["InstallRigDependencies"] == "false"
    assert keyed["Properties"]["RigRevision"] == ""
    assert logical.startswith("Bootstrap")


# --- input validation and unpinned values (no synthesis) ----------------------------------


def _light_stack() -> tuple[Any, Any, Any, Any]:
    from aws_cdk import App, Stack
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_eks_v2 as eks

    stack = Stack(App(), "Light")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    group = ec2.SecurityGroup(stack, "Group", vpc=vpc)
    cluster = eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="imported")
    return stack, vpc, group, cluster


def _light(stack: Any, vpc: Any, group: Any, cluster: Any, **overrides: Any) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "cluster_name": "imported",
        "vpc": vpc,
        "subnets": vpc.private_subnets,
        "security_group": group,
        "install_rig_dependencies": True,
        **overrides,
    }


def test_no_subnets_is_refused_in_one_sentence() -> None:
    from aws_cdk import Aws

    from novapod.constructs.cluster_bootstrap.construct import ClusterBootstrap

    stack, vpc, group, cluster = _light_stack()
    with pytest.raises(ValueError, match="needs at least one private subnet"):
        ClusterBootstrap(stack, "B", **_light(stack, vpc, group, cluster, subnets=[]))
    with pytest.raises(ValueError, match="does not offer a retention of 42 days"):
        ClusterBootstrap(stack, "C", **_light(stack, vpc, group, cluster, log_retention_days=42))
    # A token (the cluster's Ref) would make the build and handlers wait for the cluster.
    with pytest.raises(ValueError, match="needs the EKS cluster's name as a plain string"):
        ClusterBootstrap(
            stack, "D", **_light(stack, vpc, group, cluster, cluster_name=Aws.STACK_NAME)
        )


def test_a_region_without_a_health_agent_registry_fails_synthesis() -> None:
    from aws_cdk import App, Environment, Stack
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_eks_v2 as eks

    from novapod.constructs.cluster_bootstrap.construct import ClusterBootstrap

    stack = Stack(App(), "Far", env=Environment(account=ACCOUNT, region="me-central-1"))
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    group = ec2.SecurityGroup(stack, "Group", vpc=vpc)
    cluster = eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="imported")
    made = ClusterBootstrap(stack, "B", **_light(stack, vpc, group, cluster))
    errors = [str(m.data) for m in made.node.metadata if m.type == "aws:cdk:error"]
    assert errors == [
        "novapod/data/hyperpod_dependencies.yaml names no health-monitoring agent registry "
        "for me-central-1; add its account under health_monitoring_agent.registry_accounts "
        "(see the chart's _helpers.tpl)."
    ]


def test_unpinned_values_warn_at_synth(monkeypatch: pytest.MonkeyPatch) -> None:
    from novapod.constructs.cluster_bootstrap import construct

    pins = default_pins()
    monkeypatch.setattr(
        construct, "default_pins", lambda: replace(pins, yq=replace(pins.yq, sha256=None))
    )
    stack, vpc, group, cluster = _light_stack()
    made = construct.ClusterBootstrap(stack, "B", **_light(stack, vpc, group, cluster))
    warnings = [str(m.data) for m in made.node.metadata if m.type == "aws:cdk:warning"]
    assert any("no verified tools.yq.sha256" in w for w in warnings), warnings
    assert made.resource is not None and made.project is not None and made.role is not None
