"""novapod/data/node_images.yaml: the AWS-owned registries HyperPod nodes pull from."""

from __future__ import annotations

import copy

import pytest

from novapod.facts import eks_facts
from novapod.node_images import (
    ImageRepository,
    node_image_registries,
    parse_node_image_registries,
)
from novapod.pins import HealthAgentPin, default_pins

MINIMAL = {
    "eks_registries": {"us-east-1": "602401143452", "ap-east-1": "800184023465"},
    "eks_repositories": ["eks/kube-proxy"],
    "efa_device_plugin": {
        "repository": "eks/aws-efa-k8s-device-plugin",
        "account": "602401143452",
        "chart_region": "us-west-2",
    },
}
AGENT = HealthAgentPin(
    values_key="health-monitoring-agent.hmaimage",
    repository="hyperpod-health-monitoring-agent",
    tag="1.0.674.0_1.0.199.0",
    registry_accounts={"us-east-1": "767398015722", "ap-east-1": "111122223333"},
)


def test_every_rig_region_has_its_own_registries() -> None:
    data = node_image_registries()
    for region in eks_facts().rig_regions:
        assert region in data.eks_registries, region
        assert region in default_pins().health_agent.registry_accounts, region


def test_a_region_outside_the_common_account_gets_its_own_registry() -> None:
    repositories = parse_node_image_registries(MINIMAL).system_repositories("ap-east-1", AGENT)
    assert ImageRepository("ap-east-1", "800184023465", "eks/kube-proxy") in repositories
    # The health agent from the registry the bootstrap sets the chart's image to.
    assert (
        ImageRepository("ap-east-1", "111122223333", "hyperpod-health-monitoring-agent")
        in repositories
    )
    efa = [r for r in repositories if r.name == "eks/aws-efa-k8s-device-plugin"]
    assert {(r.region, r.account) for r in efa} == {
        ("us-west-2", "602401143452"),
        ("ap-east-1", "602401143452"),
    }


def test_unknown_region_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError) as error:
        parse_node_image_registries(MINIMAL).system_repositories("xx-north-9", AGENT)
    assert str(error.value).startswith("region: xx-north-9 has no Amazon EKS add-on image registry")
    assert "add-ons-images.html" in str(error.value)


def test_a_region_without_a_health_agent_registry_is_refused() -> None:
    data = copy.deepcopy(MINIMAL)
    data["eks_registries"]["eu-south-1"] = "590381155156"
    with pytest.raises(ValueError) as error:
        parse_node_image_registries(data).system_repositories("eu-south-1", AGENT)
    assert str(error.value).startswith(
        "region: eu-south-1 has no HyperPod health-monitoring agent registry in "
        "novapod/data/hyperpod_dependencies.yaml"
    )


def test_an_unquoted_account_is_refused() -> None:
    data = copy.deepcopy(MINIMAL)
    data["eks_registries"]["ap-east-1"] = 800184023465  # YAML reads an unquoted account so
    with pytest.raises(ValueError, match=r"eks_registries\.ap-east-1 must be a quoted 12-digit"):
        parse_node_image_registries(data)
