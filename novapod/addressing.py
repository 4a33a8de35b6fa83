"""Address planning for the VPC novapod creates: pure functions, no CDK.

Subnets are carved from the VPC CIDR in a fixed order (all private subnets, then all
public ones, zones in config order), each aligned to its own size, so the same config
always yields the same CIDRs and adding a public subnet size never moves a private one.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# One ml.p5.48xlarge HyperPod node takes about 81 addresses from its subnet
# (32 EFA interfaces with prefix delegation plus the primary ENI).
IPS_PER_P5_NODE = 81
# AWS reserves the first four and the last address of every subnet.
AWS_RESERVED_PER_SUBNET = 5

_ZONE_ID = re.compile(r"^(?P<prefix>[a-z]{2,5}\d{1,2})-az(?P<n>\d{1,2})$")
_REGION = re.compile(r"^(?P<geo>[a-z]{2})(?P<gov>-gov)?-(?P<dir>[a-z]+)-(?P<n>\d{1,2})$")
_DIRECTION_CODES = {
    "north": "n",
    "south": "s",
    "east": "e",
    "west": "w",
    "central": "c",
    "northeast": "ne",
    "northwest": "nw",
    "southeast": "se",
    "southwest": "sw",
}


NatGateways = Literal["one-per-zone", "single"]


class AddressPlanError(ValueError):
    """The requested subnets do not fit the VPC CIDR."""


@dataclass(frozen=True)
class SubnetAllocation:
    zone_id: str
    kind: str  # "private" | "public"
    cidr: str


def usable_addresses(prefix_length: int) -> int:
    """Addresses left for ENIs in a subnet of this size."""
    return int(2 ** (32 - prefix_length)) - AWS_RESERVED_PER_SUBNET


def p5_nodes_per_subnet(prefix_length: int) -> int:
    return usable_addresses(prefix_length) // IPS_PER_P5_NODE


def zone_id_prefix(region: str) -> str | None:
    """The zone-ID prefix AWS uses for a region (us-east-1 -> use1), or None if unknown.

    GovCloud regions keep a `g` after the geography (us-gov-west-1 -> usgw1,
    us-gov-east-1 -> usge1): AWS's AZ-ID page states the rule for commercial regions
    (https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html),
    and the GovCloud zone IDs `usgw1-az1..3` / `usge1-az1..3` are what EC2 returns
    there (see getmoto/moto:moto/ec2/models/availability_zones_and_regions.py).
    """
    match = _REGION.match(region)
    if not match:
        return None
    direction = _DIRECTION_CODES.get(match["dir"])
    if direction is None:
        return None
    partition = "g" if match["gov"] else ""
    return f"{match['geo']}{partition}{direction}{match['n']}"


def is_zone_id(value: str) -> bool:
    return _ZONE_ID.match(value) is not None


def zone_id_matches_region(zone_id: str, region: str) -> bool:
    """True when the zone ID belongs to the region, or the region's prefix is unknown."""
    expected = zone_id_prefix(region)
    match = _ZONE_ID.match(zone_id)
    return expected is None or (match is not None and match["prefix"] == expected)


def plan_subnets(
    cidr: str,
    zone_ids: list[str],
    private_prefix: int,
    public_prefix: int | None,
) -> list[SubnetAllocation]:
    """Allocate one private (and optionally one public) subnet per zone inside cidr.

    Zone i's private subnet is the i-th private-sized block from the bottom of the
    range, its public subnet the i-th public-sized block from the top. Appending a
    zone therefore never moves an existing subnet (a moved CIDR replaces the subnet
    and everything in it). Raises AddressPlanError when the subnets do not fit.
    """
    network = ipaddress.ip_network(cidr, strict=True)
    for kind, prefix in (("private", private_prefix), ("public", public_prefix)):
        if prefix is not None and prefix < network.prefixlen:
            raise AddressPlanError(f"a /{prefix} {kind} subnet is larger than the VPC CIDR {cidr}")
    base = int(network.network_address)
    end = int(network.broadcast_address) + 1
    private_size = 2 ** (32 - private_prefix)
    allocations = [
        SubnetAllocation(
            z, "private", str(ipaddress.ip_network((base + i * private_size, private_prefix)))
        )
        for i, z in enumerate(zone_ids)
    ]
    lowest_free = base + len(zone_ids) * private_size
    if public_prefix is not None:
        public_size = 2 ** (32 - public_prefix)
        allocations += [
            SubnetAllocation(
                z, "public", str(ipaddress.ip_network((end - (i + 1) * public_size, public_prefix)))
            )
            for i, z in enumerate(zone_ids)
        ]
        top_taken = end - len(zone_ids) * public_size
    else:
        top_taken = end
    if lowest_free > top_taken:
        kinds = [("private", private_prefix)] + (
            [("public", public_prefix)] if public_prefix is not None else []
        )
        wanted = ", ".join(f"{len(zone_ids)} {k} /{p}" for k, p in kinds)
        raise AddressPlanError(
            f"{cidr} cannot hold {wanted} subnets; use a larger VPC CIDR or smaller subnets"
        )
    return allocations


def nat_zones(zone_ids: Sequence[str], nat_gateways: NatGateways) -> dict[str, str]:
    """Private subnet's zone ID -> zone ID of the NAT gateway its default route uses.

    `one-per-zone`: each zone its own, so a zone's failure takes only its own egress;
    `single`: every zone through the first zone's gateway.
    """
    if nat_gateways == "one-per-zone":
        return {zone: zone for zone in zone_ids}
    return {zone: zone_ids[0] for zone in zone_ids}
