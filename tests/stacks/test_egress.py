"""NAT egress is built beside the first thing that needs the internet.

With an `eks` section and a created, open VPC: in the eks stack, where only the
bootstrap build waits for it. Without `eks`: in the network stack, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.critical_path import ancestors, resource_graph
from novapod import yamlsafe
from tests.conftest import DEFAULT_CONFIG, ROOT, Synthesized, producer_value, resources

DEV = ROOT / "config" / "examples" / "dev-two-zones.yaml"  # no eks, nat_gateways: single
ZONES = ("use1-az4", "use1-az6")  # both configs, in this order
EGRESS_TYPES = ("AWS::EC2::NatGateway", "AWS::EC2::EIP")


@pytest.fixture(scope="module")
def single_nat_with_eks(synth, tmp_path_factory) -> Synthesized:
    data = yamlsafe.load(DEFAULT_CONFIG.read_text())
    data["network"]["vpc"]["nat_gateways"] = "single"
    path = Path(tmp_path_factory.mktemp("egress")) / "single-nat-eks.yaml"
    path.write_text(yaml.safe_dump(data))
    return synth(path)


def nat_routes(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        k: r["Properties"]
        for k, r in resources(template, "AWS::EC2::Route").items()
        if r["Properties"].get("DestinationCidrBlock") == "0.0.0.0/0"
        and "NatGatewayId" in r["Properties"]
    }


def network_id(result: Synthesized, value: Any) -> str:
    """Logical ID (in the network template) of a Ref, local or across stacks."""
    if "Fn::GetStackOutput" in value:
        value = producer_value(result, value)
    assert isinstance(value, dict) and "Ref" in value, value
    return str(value["Ref"])


def zone_of_subnet(network: dict[str, Any], subnet_id: str) -> str:
    return str(network["Resources"][subnet_id]["Properties"]["AvailabilityZoneId"])


def zone_of_route_table(network: dict[str, Any], table_id: str) -> str:
    (subnet,) = [
        a["Properties"]["SubnetId"]["Ref"]
        for a in resources(network, "AWS::EC2::SubnetRouteTableAssociation").values()
        if a["Properties"]["RouteTableId"] == {"Ref": table_id}
    ]
    return zone_of_subnet(network, subnet)


def private_route_tables(network: dict[str, Any]) -> set[str]:
    return {k for k in resources(network, "AWS::EC2::RouteTable") if "Private" in k}


def routes_by_zone(result: Synthesized, kind: str) -> dict[str, str]:
    """Private subnet's zone ID -> zone ID of the NAT gateway its default route uses."""
    network, template = result.templates["network"], result.templates[kind]
    found: dict[str, str] = {}
    for props in nat_routes(template).values():
        table = network_id(result, props["RouteTableId"])
        assert table in private_route_tables(network), table
        nat = template["Resources"][props["NatGatewayId"]["Ref"]]["Properties"]
        found[zone_of_route_table(network, table)] = zone_of_subnet(
            network, network_id(result, nat["SubnetId"])
        )
    return found


def test_with_eks_the_network_stack_builds_no_nat(synth, single_nat_with_eks) -> None:
    for result in (synth(DEFAULT_CONFIG), single_nat_with_eks):
        network = result.templates["network"]
        for type_ in EGRESS_TYPES:
            assert resources(network, type_) == {}, type_
        assert nat_routes(network) == {}
        # ... but keeps the internet gateway and the public subnets the NAT gateways use.
        assert len(resources(network, "AWS::EC2::InternetGateway")) == 1
        assert len(resources(network, "AWS::EC2::Subnet")) == 4


def test_with_eks_each_zone_routes_through_its_own_nat_in_the_eks_stack(synth) -> None:
    result = synth(DEFAULT_CONFIG)
    eks = result.templates["eks"]
    assert len(resources(eks, "AWS::EC2::NatGateway")) == 2
    assert len(resources(eks, "AWS::EC2::EIP")) == 2
    assert routes_by_zone(result, "eks") == {zone: zone for zone in ZONES}
    # Each NAT gateway takes its own Elastic IP.
    allocations = [
        n["Properties"]["AllocationId"]["Fn::GetAtt"][0]
        for n in resources(eks, "AWS::EC2::NatGateway").values()
    ]
    assert sorted(allocations) == sorted(resources(eks, "AWS::EC2::EIP"))


def test_with_eks_a_single_nat_serves_every_zone_from_the_eks_stack(single_nat_with_eks) -> None:
    eks = single_nat_with_eks.templates["eks"]
    assert len(resources(eks, "AWS::EC2::NatGateway")) == 1
    assert len(resources(eks, "AWS::EC2::EIP")) == 1
    assert routes_by_zone(single_nat_with_eks, "eks") == {zone: ZONES[0] for zone in ZONES}


@pytest.mark.parametrize("single", [False, True], ids=["one-per-zone", "single"])
def test_only_the_bootstrap_build_waits_for_the_nat_routes(
    synth, single_nat_with_eks, single
) -> None:
    eks = (single_nat_with_eks if single else synth(DEFAULT_CONFIG)).templates["eks"]
    routes = set(nat_routes(eks))
    assert len(routes) == 2
    (bootstrap,) = resources(eks, "Custom::NovapodClusterBootstrap")
    assert routes <= set(eks["Resources"][bootstrap]["DependsOn"])
    # Nothing else does: not the cluster, add-ons, provider functions or roles.
    graph = resource_graph(eks)
    egress = routes.union(*(resources(eks, t) for t in EGRESS_TYPES))
    waiting = {r for r in graph if r not in egress and ancestors(graph, r) & egress}
    assert waiting == {bootstrap}


def test_without_eks_the_network_stack_keeps_its_nat_and_route_ids(synth) -> None:
    result = synth(DEV)
    assert "eks" not in result.templates
    network = result.templates["network"]
    (nat,) = resources(network, "AWS::EC2::NatGateway")
    (eip,) = resources(network, "AWS::EC2::EIP")
    # The IDs of earlier releases: a route under a new ID would collide with the old one.
    assert nat == "NetworkNatGatewayUse1Az444BAE6FD"
    assert eip == "NetworkNatEipUse1Az40D2605B3"
    assert set(nat_routes(network)) == {
        "NetworkPrivateDefaultRouteUse1Az46EC047A3",
        "NetworkPrivateDefaultRouteUse1Az64D1E02DF",
    }
    assert routes_by_zone(result, "network") == {zone: ZONES[0] for zone in ZONES}
    # In the same template the Elastic IP waits for the internet gateway's attachment.
    (attachment,) = resources(network, "AWS::EC2::VPCGatewayAttachment")
    assert network["Resources"][eip]["DependsOn"] == [attachment]
