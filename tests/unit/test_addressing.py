"""Subnet allocation and zone-ID rules."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from novapod import addressing


def test_private_subnets_from_the_bottom_public_from_the_top() -> None:
    plan = addressing.plan_subnets("10.0.0.0/16", ["use1-az4", "use1-az6"], 20, 24)
    assert [(a.zone_id, a.kind, a.cidr) for a in plan] == [
        ("use1-az4", "private", "10.0.0.0/20"),
        ("use1-az6", "private", "10.0.16.0/20"),
        ("use1-az4", "public", "10.0.255.0/24"),
        ("use1-az6", "public", "10.0.254.0/24"),
    ]


def test_appending_a_zone_never_moves_an_existing_subnet() -> None:
    two = addressing.plan_subnets("10.0.0.0/16", ["a1-az1", "a1-az2"], 20, 24)
    three = addressing.plan_subnets("10.0.0.0/16", ["a1-az1", "a1-az2", "a1-az3"], 20, 24)
    assert set(two) <= set(three)


def test_adding_public_subnets_never_moves_private_ones() -> None:
    closed = addressing.plan_subnets("10.0.0.0/16", ["a1-az1", "a1-az2"], 19, None)
    open_ = addressing.plan_subnets("10.0.0.0/16", ["a1-az1", "a1-az2"], 19, 24)
    assert [a.cidr for a in closed] == [a.cidr for a in open_ if a.kind == "private"]


def test_too_many_subnets_is_refused_with_sizes() -> None:
    with pytest.raises(
        addressing.AddressPlanError, match=r"cannot hold 3 private /20, 3 public /24"
    ):
        addressing.plan_subnets("10.0.0.0/19", ["a", "b", "c"], 20, 24)


def test_subnet_larger_than_vpc_is_refused() -> None:
    with pytest.raises(addressing.AddressPlanError, match="larger than the VPC CIDR"):
        addressing.plan_subnets("10.0.0.0/22", ["a", "b"], 20, None)


@given(
    prefix=st.integers(16, 24),
    zones=st.integers(2, 6),
    private=st.integers(16, 28),
    public=st.one_of(st.none(), st.integers(16, 28)),
)
def test_allocations_are_disjoint_and_inside_the_vpc(prefix, zones, private, public) -> None:
    cidr = f"10.0.0.0/{prefix}"
    # Whether the subnets fit, counted independently of the allocator.
    sizes = [2 ** (32 - private)] * zones + ([2 ** (32 - public)] * zones if public else [])
    fits = min(private, public or 32) >= prefix and sum(sizes) <= 2 ** (32 - prefix)
    try:
        plan = addressing.plan_subnets(cidr, [f"z{i}" for i in range(zones)], private, public)
    except addressing.AddressPlanError:
        assert not fits  # refused only what does not fit
        return
    assert fits
    assert [(a.kind, ipaddress.ip_network(a.cidr).prefixlen) for a in plan] == [
        ("private", private)
    ] * zones + [("public", public)] * (zones if public else 0)
    vpc = ipaddress.ip_network(cidr)
    networks = [ipaddress.ip_network(a.cidr) for a in plan]
    assert all(n.subnet_of(vpc) for n in networks)
    for i, a in enumerate(networks):
        for b in networks[i + 1 :]:
            assert not a.overlaps(b)


@pytest.mark.parametrize(
    ("region", "prefix"),
    [
        ("us-east-1", "use1"),
        ("us-west-2", "usw2"),
        ("eu-west-2", "euw2"),
        ("eu-north-1", "eun1"),
        ("ap-northeast-1", "apne1"),
        ("ap-southeast-2", "apse2"),
        ("eu-central-1", "euc1"),
        ("us-gov-west-1", "usgw1"),
        ("us-gov-east-1", "usge1"),
        ("mars-west-1", None),
    ],
)
def test_zone_id_prefix(region, prefix) -> None:
    assert addressing.zone_id_prefix(region) == prefix


def test_zone_id_region_match() -> None:
    assert addressing.zone_id_matches_region("use1-az4", "us-east-1")
    assert not addressing.zone_id_matches_region("usw2-az1", "us-east-1")
    assert addressing.zone_id_matches_region("xx1-az1", "mars-west-1")  # unknown region: no verdict
    # GovCloud zone IDs carry a `g`; the commercial region's zones are not GovCloud's.
    assert addressing.zone_id_matches_region("usgw1-az1", "us-gov-west-1")
    assert addressing.zone_id_matches_region("usge1-az3", "us-gov-east-1")
    assert not addressing.zone_id_matches_region("usw1-az1", "us-gov-west-1")
    assert not addressing.zone_id_matches_region("usgw1-az1", "us-west-1")


def test_p5_capacity_of_subnet_sizes() -> None:
    assert addressing.p5_nodes_per_subnet(21) == 25
    assert addressing.p5_nodes_per_subnet(20) == 50
    assert addressing.usable_addresses(24) == 251


def test_nat_zones_one_per_zone_or_the_first_zones_for_all() -> None:
    zones = ["use1-az6", "use1-az4", "use1-az1"]
    assert addressing.nat_zones(zones, "one-per-zone") == {z: z for z in zones}
    assert addressing.nat_zones(zones, "single") == {z: "use1-az6" for z in zones}
