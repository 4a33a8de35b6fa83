"""EksStack: native EKS cluster prepared for HyperPod."""

from __future__ import annotations

from typing import Any

import pytest

from novapod.facts import eks_facts
from tests.conftest import DEFAULT_CONFIG, ROOT, joined, producer_value, resources

MIXED = ROOT / "config" / "examples" / "rig-plus-standard.yaml"
PURCHASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
EXISTING = ROOT / "config" / "examples" / "existing-vpc.yaml"


def cluster_props(template: dict[str, Any]) -> dict[str, Any]:
    (cluster,) = resources(template, "AWS::EKS::Cluster").values()
    return cluster["Properties"]


def test_cluster_is_native_private_and_not_auto_mode(synth) -> None:
    props = cluster_props(synth(DEFAULT_CONFIG).templates["eks"])
    assert props.get("BootstrapSelfManagedAddons", True) is True  # CoreDNS comes from here
    assert props["Name"] == "novapod-default"
    assert props["Version"] == "1.33"
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
    pinned = eks_facts().addon_versions("1.33")
    assert pinned is not None
    found = {a["Properties"]["AddonName"]: a["Properties"] for a in addons.values()}
    # coredns stays self-managed: with no nodes before HyperPod, a managed one would be
    # DEGRADED and stall the stack.
    assert set(found) == {"vpc-cni", "kube-proxy", "eks-pod-identity-agent"}
    for name, props in found.items():
        assert props["AddonVersion"] == pinned[name]
        assert props["ResolveConflicts"] == "OVERWRITE"


def test_vpc_cni_pin_satisfies_restricted_groups() -> None:
    import yaml

    from novapod.facts import parse_eks_facts, version_tuple

    facts = eks_facts()
    for version, pins in facts.addons.items():
        assert version_tuple(pins["vpc-cni"]) >= version_tuple(facts.min_vpc_cni_for_rig), version
    data = yaml.safe_load((ROOT / "novapod" / "data" / "eks.yaml").read_text())
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
