"""EksStack: native EKS cluster prepared for HyperPod."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from benchmarks.critical_path import StackTemplate, ancestors, critical_path, resource_graph
from novapod import yamlsafe
from novapod.facts import eks_facts, parse_eks_facts, support_warning
from tests.conftest import DEFAULT_CONFIG, ROOT, Synthesized, joined, producer_value, resources

MIXED = ROOT / "config" / "examples" / "rig-plus-standard.yaml"
# The bootstrap handlers' module in their asset (which bundles the handler core).
BOOTSTRAP_HANDLER = "novapod_lambda.cluster_bootstrap.handler.index"
PURCHASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
EXISTING = ROOT / "config" / "examples" / "existing-vpc.yaml"


def cluster_props(template: dict[str, Any]) -> dict[str, Any]:
    (cluster,) = resources(template, "AWS::EKS::Cluster").values()
    return cluster["Properties"]


def test_cluster_is_native_private_and_not_auto_mode(synth) -> None:
    props = cluster_props(synth(DEFAULT_CONFIG).templates["eks"])
    assert props.get("BootstrapSelfManagedAddons", True) is True  # CoreDNS comes from here
    assert props["Name"] == "novapod-default"
    assert props["Version"] == "1.34"
    assert props["ComputeConfig"] == {"Enabled": False}
    vpc = props["ResourcesVpcConfig"]
    assert (vpc["EndpointPrivateAccess"], vpc["EndpointPublicAccess"]) == (True, False)
    assert "PublicAccessCidrs" not in vpc
    assert len(vpc["SubnetIds"]) == 2


def test_authentication_mode_follows_config(synth) -> None:
    assert cluster_props(synth(DEFAULT_CONFIG).templates["eks"])["AccessConfig"] == {
        "AuthenticationMode": "API_AND_CONFIG_MAP",
        "BootstrapClusterCreatorAdminPermissions": False,
    }
    assert (
        cluster_props(synth(EXISTING).templates["eks"])["AccessConfig"]["AuthenticationMode"]
        == "API"
    )


def test_public_endpoint_only_from_listed_cidrs(synth) -> None:
    vpc = cluster_props(synth(MIXED).templates["eks"])["ResourcesVpcConfig"]
    assert (vpc["EndpointPrivateAccess"], vpc["EndpointPublicAccess"]) == (True, True)
    assert vpc["PublicAccessCidrs"] == ["203.0.113.0/24"]


def test_listed_networks_reach_the_private_endpoint_on_443(synth) -> None:
    result = synth(MIXED)
    rules = [
        r["Properties"]
        for r in resources(result.templates["eks"], "AWS::EC2::SecurityGroupIngress").values()
        if "CidrIp" in r["Properties"]
    ]
    assert rules == [
        {
            "CidrIp": "10.100.0.0/16",
            "Description": "Kubernetes API private endpoint from 10.100.0.0/16 "
            "(eks.private_access_cidrs)",
            "FromPort": 443,
            "GroupId": rules[0]["GroupId"],
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    # On the group the cluster's control-plane ENIs carry.
    (group,) = cluster_props(result.templates["eks"])["ResourcesVpcConfig"]["SecurityGroupIds"]
    assert rules[0]["GroupId"] == group
    # Without the list only the VPC's CIDR (network stack) reaches it.
    default = resources(synth(DEFAULT_CONFIG).templates["eks"], "AWS::EC2::SecurityGroupIngress")
    assert not [r for r in default.values() if "CidrIp" in r["Properties"]]


def test_all_control_plane_logs_with_retention(synth) -> None:
    result = synth(DEFAULT_CONFIG)
    props = cluster_props(result.templates["eks"])
    types = {t["Type"] for t in props["Logging"]["ClusterLogging"]["EnabledTypes"]}
    assert types == {"api", "audit", "authenticator", "controllerManager", "scheduler"}
    (group,) = [
        g
        for g in resources(result.templates["eks"], "AWS::Logs::LogGroup").values()
        if g["Properties"].get("LogGroupName") == "/aws/eks/novapod-default/cluster"
    ]
    assert group["Properties"]["RetentionInDays"] == 365


def test_secrets_are_encrypted_with_the_environment_key(synth) -> None:
    result = synth(DEFAULT_CONFIG)
    (encryption,) = cluster_props(result.templates["eks"])["EncryptionConfig"]
    assert encryption["Resources"] == ["secrets"]
    assert producer_value(result, encryption["Provider"]["KeyArn"]) == {
        "Fn::GetAtt": ["EncryptionKey", "Arn"]
    }
    statements = [
        s
        for p in resources(result.templates["eks"], "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    (kms,) = [s for s in statements if s.get("Sid") == "EncryptKubernetesSecrets"]
    assert sorted(kms["Action"]) == [
        "kms:CreateGrant",
        "kms:Decrypt",
        "kms:DescribeKey",
        "kms:Encrypt",
    ]


def test_cluster_uses_the_hyperpod_security_group(synth) -> None:
    result = synth(DEFAULT_CONFIG)
    (group,) = cluster_props(result.templates["eks"])["ResourcesVpcConfig"]["SecurityGroupIds"]
    assert producer_value(result, group) == {
        "Fn::GetAtt": ["HyperPodSecurityGroup1B7ACBFE", "GroupId"]
    }


def test_addons_are_managed_at_pinned_versions(synth) -> None:
    addons = resources(synth(DEFAULT_CONFIG).templates["eks"], "AWS::EKS::Addon")
    pinned = eks_facts().addon_versions("1.34")
    assert pinned is not None
    found = {a["Properties"]["AddonName"]: a["Properties"] for a in addons.values()}
    # coredns stays self-managed: with no nodes before HyperPod, a managed one would be
    # DEGRADED and stall the stack.
    assert set(found) == {"vpc-cni", "kube-proxy", "eks-pod-identity-agent"}
    for name, props in found.items():
        assert props["AddonVersion"] == pinned[name]
        assert props["ResolveConflicts"] == "OVERWRITE"


def test_vpc_cni_pin_satisfies_restricted_groups() -> None:
    from novapod.facts import parse_eks_facts, version_tuple

    facts = eks_facts()
    for version, pins in facts.addons.items():
        assert version_tuple(pins["vpc-cni"]) >= version_tuple(facts.min_vpc_cni_for_rig), version
    data = yamlsafe.load((ROOT / "novapod" / "data" / "eks.yaml").read_text())
    data["addons"]["1.33"]["vpc-cni"] = "v1.19.5-eksbuild.1"
    with pytest.raises(
        ValueError, match=r"vpc-cni v1.19.5-eksbuild.1 for 1.33 is older than 1.19.6"
    ):
        parse_eks_facts(data)


def test_admin_principals_get_cluster_admin_access_entries(synth) -> None:
    entries = resources(synth(PURCHASE).templates["eks"], "AWS::EKS::AccessEntry")
    admin = [
        e["Properties"]
        for e in entries.values()
        if e["Properties"]["PrincipalArn"] == "arn:aws:iam::111122223333:role/PlatformAdmin"
    ]
    assert len(admin) == 1
    (policy,) = admin[0]["AccessPolicies"]
    assert joined(policy["PolicyArn"]) == (
        "arn:${AWS::Partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )
    assert policy["AccessScope"] == {"Type": "cluster"}


@pytest.mark.parametrize("path", [DEFAULT_CONFIG, PURCHASE], ids=["default", "purchase"])
def test_eks_does_not_depend_on_capacity(synth, path) -> None:
    result = synth(path)
    assert "capacity" not in result.dependencies["eks"]
    assert result.dependencies["eks"] <= {"network", "storage"}


# --- Kubernetes versions -----------------------------------------------------------------


def eks_data() -> dict[str, Any]:
    data: dict[str, Any] = yamlsafe.load((ROOT / "novapod" / "data" / "eks.yaml").read_text())
    return data


def test_every_version_the_config_accepts_has_pinned_addons() -> None:
    from novapod.config import ConfigError, parse_config

    facts = eks_facts()
    base = yamlsafe.load(DEFAULT_CONFIG.read_text())
    accepted = []
    for version in facts.supported_versions:
        try:
            parse_config({**base, "eks": {**base["eks"], "kubernetes_version": version}})
        except ConfigError as error:
            assert "no pinned add-on versions" in str(error), str(error)
        else:
            accepted.append(version)
    assert accepted == ["1.33", "1.34"]
    for version in accepted:
        pins = facts.addon_versions(version)
        assert pins is not None and set(pins) == {"vpc-cni", "kube-proxy", "eks-pod-identity-agent"}
        # The kube-proxy add-on follows the cluster's minor version.
        assert pins["kube-proxy"].startswith(f"v{version}.")
        assert facts.support_calendar[version].end_of_extended_support > facts.as_of


HYPERPOD_PREREQUISITES = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html"
)


def test_the_versions_are_those_the_hyperpod_prerequisites_page_lists() -> None:
    # The newest copy of the page found lists 1.28-1.34 (novapod/data/eks.yaml says where).
    facts = eks_facts()
    assert facts.supported_versions == ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
    assert facts.supported_source == HYPERPOD_PREREQUISITES
    assert facts.supported_checked == date(2026, 12, 2)


def test_the_default_version_is_the_newest_hyperpod_lists_with_pins() -> None:
    facts = eks_facts()
    assert facts.default_version == "1.34"
    from novapod.config import parse_config

    base = yamlsafe.load(DEFAULT_CONFIG.read_text())
    assert parse_config({**base, "eks": {}}).eks.kubernetes_version == "1.34"  # type: ignore[union-attr]
    data = eks_data()
    data["default_kubernetes_version"] = "1.33"
    with pytest.raises(
        ValueError,
        match=r"the default 1\.33 is not 1\.34, the newest version in "
        r"supported_kubernetes_versions with add-on pins",
    ):
        parse_eks_facts(data)


@pytest.mark.parametrize("version", ["1.35", "1.27"])
def test_a_version_hyperpod_does_not_list_is_refused_naming_the_source(version: str) -> None:
    from novapod.config import ConfigError, parse_config

    base = yamlsafe.load(DEFAULT_CONFIG.read_text())
    with pytest.raises(ConfigError) as refused:
        parse_config({**base, "eks": {**base["eks"], "kubernetes_version": version}})
    assert str(refused.value) == (
        f"eks.kubernetes_version: {version} is not a Kubernetes version SageMaker HyperPod "
        f"lists for EKS clusters (1.28 to 1.34 on {HYPERPOD_PREREQUISITES}, read "
        "2026-12-02), so HyperPod may not create nodes for it; use 1.33, 1.34"
    )


def test_novapod_validate_refuses_an_unlisted_version_with_status_2(tmp_path) -> None:
    import subprocess
    import sys

    text = DEFAULT_CONFIG.read_text().replace(
        'kubernetes_version: "1.34"', 'kubernetes_version: "1.35"'
    )
    path = tmp_path / "k8s-1.35.yaml"
    path.write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "novapod.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"{path}: eks.kubernetes_version: 1.35 is not a Kubernetes version SageMaker "
        f"HyperPod lists for EKS clusters (1.28 to 1.34 on {HYPERPOD_PREREQUISITES}, read "
        "2026-12-02), so HyperPod may not create nodes for it; use 1.33, 1.34"
    )


def test_pins_for_a_version_hyperpod_does_not_list_are_refused() -> None:
    data = eks_data()
    data["addons"]["1.35"] = dict(data["addons"]["1.34"])
    with pytest.raises(ValueError, match=r"add-ons pinned for 1\.35, which is not in"):
        parse_eks_facts(data)


def test_versions_past_standard_support_warn_in_one_sentence() -> None:
    today = date(2026, 11, 30)
    assert support_warning("1.34", today) is None
    assert support_warning("1.34", date(2026, 12, 2)) == (
        "eks.kubernetes_version: 1.34 left EKS standard support on 2026-12-02; EKS charges "
        "extended-support rates for the cluster until 2027-12-02, then upgrades it itself. "
        f"It is the newest version SageMaker HyperPod lists ({HYPERPOD_PREREQUISITES}); "
        "upgrade once it lists a newer one (docs/operations.md: Upgrading Kubernetes)."
    )
    assert support_warning("1.33", today) == (
        "eks.kubernetes_version: 1.33 left EKS standard support on 2026-07-29; EKS charges "
        "extended-support rates for the cluster until 2027-07-29, then upgrades it itself. "
        "Upgrade one minor version at a time towards 1.34 (docs/operations.md: Upgrading Kubernetes)."
    )
    assert "left EKS extended support on 2026-11-26" in str(support_warning("1.31", today))


def test_pins_for_a_version_outside_the_calendar_are_refused() -> None:
    data = eks_data()
    data["supported_kubernetes_versions"].append("1.36")
    data["addons"]["1.36"] = dict(data["addons"]["1.34"])
    with pytest.raises(ValueError, match=r"support_calendar lacks 1\.36"):
        parse_eks_facts(data)


# --- deploy critical path ----------------------------------------------------------------


def stack_templates(result: Synthesized) -> dict[str, StackTemplate]:
    return {
        kind: StackTemplate(kind, template, frozenset(result.dependencies[kind]))
        for kind, template in result.templates.items()
    }


def test_bootstrap_provider_does_not_wait_for_the_eks_cluster(synth) -> None:
    template = synth(PURCHASE).templates["eks"]
    graph = resource_graph(template)
    (cluster,) = resources(template, "AWS::EKS::Cluster")
    (bootstrap,) = resources(template, "Custom::NovapodClusterBootstrap")
    provider_types = {
        "AWS::Lambda::Function",
        "AWS::IAM::Role",
        "AWS::IAM::Policy",
        "AWS::StepFunctions::StateMachine",
        "AWS::CodeBuild::Project",
        "AWS::Logs::LogGroup",
    }
    provider = [
        logical
        for logical, resource in template["Resources"].items()
        if logical.startswith("HyperPodDependencies") and resource["Type"] in provider_types
    ]
    assert len([p for p in provider if p.startswith("HyperPodDependenciesHandlers")]) >= 15
    for logical in provider:
        assert cluster not in ancestors(graph, logical), logical
    # Only the build start waits for the cluster and every add-on.
    waits_for = ancestors(graph, bootstrap)
    assert cluster in waits_for
    assert set(resources(template, "AWS::EKS::Addon")) <= waits_for


def test_deploy_critical_path_is_the_floor_plus_a_network_without_nat(synth) -> None:
    # Up to the HyperPod cluster: the nova stack deploys after it (test_nova.py).
    templates = stack_templates(synth(PURCHASE))
    path = critical_path({k: t for k, t in templates.items() if k != "nova"})
    types = [s.type for s in path.steps]
    cluster = types.index("AWS::EKS::Cluster")
    # Before the cluster: the network (VPC, subnets, endpoints) and the cluster role,
    # no NAT gateway, Elastic IP or route (the eks stack builds them beside the cluster).
    assert not {"AWS::EC2::NatGateway", "AWS::EC2::EIP", "AWS::EC2::Route"} & set(types[:cluster])
    # Between the cluster and the HyperPod cluster: one add-on and the bootstrap; no
    # Provider function, role or state machine, and no execution role or policy.
    assert types[cluster:] == [
        "AWS::EKS::Cluster",
        "AWS::EKS::Addon",
        "Custom::NovapodClusterBootstrap",
        "AWS::SageMaker::Cluster",
    ]
    # 1.128 before the Provider was built from synth values, 1.109 before the execution
    # roles moved to the EKS stack, 1.093 before NAT egress did; 1985 s then, 2000 s now
    # that the cluster waits for its role's key policy (15 s): 1.075 of the 1860 s floor.
    assert path.ratio(1860) < 1.076


# --- access entries and outputs ----------------------------------------------------------


def admin_logical_ids(admins: list[str]) -> dict[str, str]:
    """principal -> logical ID of its access entry, for the default config plus admins."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_eks_v2 as eks_v2

    from novapod.config import parse_config
    from novapod.environment import build_environment, feature_flags

    data = yamlsafe.load(DEFAULT_CONFIG.read_text())
    data["eks"]["admin_principals"] = admins
    stacks = build_environment(App(context=feature_flags()), parse_config(data))
    assert stacks.eks is not None
    found = {}
    for child in stacks.eks.node.find_all():
        if isinstance(child, eks_v2.CfnAccessEntry):
            principal = stacks.eks.resolve(child.principal_arn)
            if isinstance(principal, str) and principal in admins:
                found[principal] = stacks.eks.resolve(Stack.of(child).get_logical_id(child))
    return found


def test_removing_the_first_admin_keeps_the_second_admins_entry() -> None:
    first = "arn:aws:iam::111122223333:role/PlatformAdmin"
    second = "arn:aws:iam::111122223333:role/OnCall"
    both = admin_logical_ids([first, second])
    assert set(both) == {first, second}
    assert admin_logical_ids([second]) == {second: both[second]}
    assert admin_logical_ids([second, first]) == both  # order does not matter either


def test_outputs_say_how_to_connect_and_where_bootstrap_progress_shows(synth) -> None:
    template = synth(DEFAULT_CONFIG).templates["eks"]
    outputs = template["Outputs"]
    assert all(o.get("Description") for o in outputs.values()), outputs
    assert outputs["KubeconfigCommand"]["Value"] == (
        "aws eks update-kubeconfig --name novapod-default --region us-east-1"
    )
    groups = resources(template, "AWS::Logs::LogGroup")

    def group_of(output: str) -> str:
        (logical,) = [k for k in groups if outputs[output]["Value"] == {"Ref": k}]
        return logical

    assert group_of("BootstrapBuildLogGroup").startswith("HyperPodDependenciesBuildLogs")
    (project,) = resources(template, "AWS::CodeBuild::Project").values()
    assert project["Properties"]["LogsConfig"]["CloudWatchLogs"]["GroupName"] == {
        "Ref": group_of("BootstrapBuildLogGroup")
    }
    functions = {
        f["Properties"]["Handler"]: f["Properties"]["LoggingConfig"]["LogGroup"]
        for f in resources(template, "AWS::Lambda::Function").values()
        if f["Properties"].get("Handler", "").startswith(f"{BOOTSTRAP_HANDLER}.")
    }
    assert functions[f"{BOOTSTRAP_HANDLER}.on_event"] == {"Ref": group_of("BootstrapStartLogGroup")}
    assert functions[f"{BOOTSTRAP_HANDLER}.is_complete"] == {
        "Ref": group_of("BootstrapProgressLogGroup")
    }
    assert "every poll" in outputs["BootstrapProgressLogGroup"]["Description"]


def test_the_cluster_waits_for_its_role_to_be_allowed_the_secrets_key(synth) -> None:
    """EKS checks the role's access to the key at CreateCluster: the policy comes first."""
    template = synth(DEFAULT_CONFIG).templates["eks"]
    clusters = resources(template, "AWS::EKS::Cluster")
    ((cluster_id, cluster),) = clusters.items()
    role_id = cluster["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    (policy_id,) = [
        k
        for k, r in resources(template, "AWS::IAM::Policy").items()
        if {"Ref": role_id} in r["Properties"]["Roles"]
        and any(
            s.get("Sid") == "EncryptKubernetesSecrets"
            for s in r["Properties"]["PolicyDocument"]["Statement"]
        )
    ]
    assert policy_id in cluster["DependsOn"], cluster_id
