"""The VPC: created with subnets placed by Availability Zone ID, or imported.

CDK's L2 `ec2.Vpc` places subnets by zone *name*, and zone names map to different
physical zones in every account. Training-plan capacity, EKS and HyperPod all have to
meet in the same physical zone, so novapod builds the VPC from L1 resources with
`AvailabilityZoneId`, then hands later constructs an ordinary `ec2.IVpc`.

`Egress` (NAT gateways and the private subnets' default routes) is built beside the
first thing that needs the internet: in the VPC's own stack, or, deferred, in a later
stack that gets an `EgressHandover`, so what needs no egress never waits ~2 minutes
for NAT gateways.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import CfnTag, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct, IDependable

from novapod import addressing
from novapod.config import CreateVpc, ExistingVpc
from novapod.constructs.acknowledge import acknowledge


@dataclass(frozen=True)
class PrivateSubnet:
    """A private subnet with the zone ID it lives in."""

    zone_id: str
    subnet: ec2.ISubnet

    @property
    def subnet_id(self) -> str:
        return self.subnet.subnet_id


@dataclass(frozen=True)
class VpcHandle:
    """What later stacks need to know about the VPC, typed."""

    vpc: ec2.IVpc
    cidr: str
    private_subnets: tuple[PrivateSubnet, ...]
    zone_ids: tuple[str, ...] = field(default=())

    def subnet_ids_by_zone(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {z: [] for z in self.zone_ids}
        for s in self.private_subnets:
            out.setdefault(s.zone_id, []).append(s.subnet_id)
        return out

    def subnets_in(self, zone_id: str) -> list[ec2.ISubnet]:
        return [s.subnet for s in self.private_subnets if s.zone_id == zone_id]

    @property
    def subnet_selection(self) -> ec2.SubnetSelection:
        return ec2.SubnetSelection(subnets=[s.subnet for s in self.private_subnets])


@dataclass(frozen=True)
class PrivatePlacement:
    """Where a function runs beside the cluster: the VPC, its private subnets and the
    security group of the HyperPod nodes and the EKS control plane, as IDs (a later
    stack reads them from the stack that re-publishes them)."""

    vpc_id: str
    subnet_ids: tuple[str, ...]
    security_group_id: str


@dataclass(frozen=True)
class EgressHandover:
    """What NAT egress is built from, by zone ID, typed (no lookups).

    The VPC's internet gateway must be attached before any of it is created: in the
    VPC's stack through `Egress(after=...)`, in a later stack through the stack order.
    """

    nat_gateways: addressing.NatGateways
    zone_ids: tuple[str, ...]
    public_subnet_ids: Mapping[str, str]
    private_route_table_ids: Mapping[str, str]
    name: str


class Egress(Construct):
    """NAT gateways (with their Elastic IPs) and each private subnet's route 0.0.0.0/0 to one.

    Attributes: `nat_gateways` and `routes`, by zone ID. Whatever needs the internet from
    the private subnets must depend on `routes`; `after` are resources the Elastic IPs
    must wait for (the internet gateway's attachment when it is in the same stack).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        handover: EgressHandover,
        after: Sequence[IDependable] = (),
    ) -> None:
        super().__init__(scope, id_)
        placement = addressing.nat_zones(handover.zone_ids, handover.nat_gateways)
        self.nat_gateways: dict[str, ec2.CfnNatGateway] = {}
        for zone in dict.fromkeys(placement.values()):
            eip = ec2.CfnEIP(self, f"NatEip{_suffix(zone)}", domain="vpc")
            # An EIP for a VPC defined in the same template must wait for the gateway
            # attachment (docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/
            # aws-attribute-dependson.html, "When a DependsOn attribute is required").
            if after:
                eip.node.add_dependency(*after)
            self.nat_gateways[zone] = ec2.CfnNatGateway(
                self,
                f"NatGateway{_suffix(zone)}",
                subnet_id=handover.public_subnet_ids[zone],
                allocation_id=eip.attr_allocation_id,
                tags=[CfnTag(key="Name", value=f"{handover.name}-{zone}")],
            )
        self.routes: dict[str, ec2.CfnRoute] = {
            zone: ec2.CfnRoute(
                self,
                f"PrivateDefaultRoute{_suffix(zone)}",
                route_table_id=handover.private_route_table_ids[zone],
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=self.nat_gateways[nat_zone].ref,
            )
            for zone, nat_zone in placement.items()
        }


class ZonalVpc(Construct):
    """A VPC with one private subnet per zone ID and, unless closed, public subnets + NAT.

    With `defer_egress` the NAT gateways and private default routes are not built here:
    `deferred_egress` hands a later stack what it needs to build them (`Egress`).
    Otherwise `egress` holds them (None when closed).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        spec: CreateVpc,
        closed: bool,
        name: str,
        defer_egress: bool = False,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        allocations = addressing.plan_subnets(
            spec.cidr,
            list(spec.zone_ids),
            spec.private_subnet_prefix,
            None if closed else spec.public_subnet_prefix,
        )
        self.cfn_vpc = ec2.CfnVPC(
            self,
            "Vpc",
            cidr_block=spec.cidr,
            enable_dns_hostnames=True,  # interface endpoints with private DNS need both
            enable_dns_support=True,
            tags=[CfnTag(key="Name", value=name)],
        )
        self.cfn_vpc.override_logical_id("Vpc")
        acknowledge(
            self.cfn_vpc,
            "VPCDefaultSecurityGroupClosed",
            "No resource novapod creates uses the VPC's default security group: the EKS "
            "control plane, nodes, endpoints, builds and functions each name their own. "
            "CloudFormation cannot edit the default group's rules without a custom resource.",
        )

        public_by_zone: dict[str, ec2.CfnSubnet] = {}
        attachment: ec2.CfnVPCGatewayAttachment | None = None
        if not closed:
            igw = ec2.CfnInternetGateway(
                self, "InternetGateway", tags=[CfnTag(key="Name", value=name)]
            )
            attachment = ec2.CfnVPCGatewayAttachment(
                self,
                "InternetGatewayAttachment",
                vpc_id=self.cfn_vpc.ref,
                internet_gateway_id=igw.ref,
            )
            for alloc in (a for a in allocations if a.kind == "public"):
                subnet, table = self._subnet(alloc, name)
                route = ec2.CfnRoute(
                    self,
                    f"PublicDefaultRoute{_suffix(alloc.zone_id)}",
                    route_table_id=table.ref,
                    destination_cidr_block="0.0.0.0/0",
                    gateway_id=igw.ref,
                )
                route.add_resource_dependency(attachment)
                acknowledge(
                    route,
                    "VPCNoUnrestrictedRouteToIGW",
                    "The public subnets' default route: they hold only the NAT gateways, "
                    "which need it to reach the internet; private subnets route through "
                    "NAT, and a closed network has neither.",
                )
                public_by_zone[alloc.zone_id] = subnet

        private: list[tuple[str, ec2.CfnSubnet, ec2.CfnRouteTable]] = []
        for alloc in (a for a in allocations if a.kind == "private"):
            subnet, table = self._subnet(alloc, name)
            subnet.override_logical_id(f"PrivateSubnet{_suffix(alloc.zone_id)}")
            private.append((alloc.zone_id, subnet, table))

        self.egress: Egress | None = None
        self.deferred_egress: EgressHandover | None = None
        if attachment is not None:
            handover = EgressHandover(
                nat_gateways=spec.nat_gateways,
                zone_ids=tuple(spec.zone_ids),
                public_subnet_ids={z: s.ref for z, s in public_by_zone.items()},
                private_route_table_ids={z: t.ref for z, _, t in private},
                name=name,
            )
            if defer_egress:
                self.deferred_egress = handover
            else:
                # "Default" drops out of logical IDs (docs.aws.amazon.com/cdk/v2/guide/
                # identifiers.html, logical ID heuristics): the NAT gateways, EIPs and
                # routes keep the IDs they had when built inline here. A route under a
                # new ID would be created beside the old one and fail (RouteAlreadyExists).
                self.egress = Egress(self, "Default", handover=handover, after=[attachment])

        self.private_route_table_ids = [t.ref for _, _, t in private]
        self.vpc = ec2.Vpc.from_vpc_attributes(
            self,
            "Handle",
            vpc_id=self.cfn_vpc.ref,
            vpc_cidr_block=spec.cidr,
            # Zone names are only known at deploy time; the subnet reports its own.
            availability_zones=[s.attr_availability_zone for _, s, _ in private],
            private_subnet_ids=[s.ref for _, s, _ in private],
            private_subnet_route_table_ids=self.private_route_table_ids,
            region=stack.region,
        )
        self.handle = VpcHandle(
            vpc=self.vpc,
            cidr=spec.cidr,
            private_subnets=tuple(
                PrivateSubnet(zone, sub)
                for zone, sub in zip(spec.zone_ids, self.vpc.private_subnets, strict=True)
            ),
            zone_ids=tuple(spec.zone_ids),
        )

    def _subnet(
        self, alloc: addressing.SubnetAllocation, name: str
    ) -> tuple[ec2.CfnSubnet, ec2.CfnRouteTable]:
        kind = alloc.kind.capitalize()
        suffix = _suffix(alloc.zone_id)
        subnet = ec2.CfnSubnet(
            self,
            f"{kind}Subnet{suffix}",
            vpc_id=self.cfn_vpc.ref,
            cidr_block=alloc.cidr,
            availability_zone_id=alloc.zone_id,
            map_public_ip_on_launch=False,
            tags=[
                CfnTag(key="Name", value=f"{name}-{alloc.kind}-{alloc.zone_id}"),
                CfnTag(key="novapod:zone-id", value=alloc.zone_id),
                # Lets EKS place internal load balancers in the private subnets.
                CfnTag(
                    key="kubernetes.io/role/internal-elb"
                    if alloc.kind == "private"
                    else "kubernetes.io/role/elb",
                    value="1",
                ),
            ],
        )
        table = ec2.CfnRouteTable(
            self,
            f"{kind}RouteTable{suffix}",
            vpc_id=self.cfn_vpc.ref,
            tags=[CfnTag(key="Name", value=f"{name}-{alloc.kind}-{alloc.zone_id}")],
        )
        ec2.CfnSubnetRouteTableAssociation(
            self,
            f"{kind}RouteTableAssociation{suffix}",
            subnet_id=subnet.ref,
            route_table_id=table.ref,
        )
        return subnet, table


def imported_vpc(scope: Construct, id_: str, *, spec: ExistingVpc) -> VpcHandle:
    """A handle on an existing VPC from the IDs in config; nothing is looked up."""
    subnets = list(spec.private_subnets)
    route_tables = [s.route_table_id for s in subnets]
    vpc = ec2.Vpc.from_vpc_attributes(
        scope,
        id_,
        vpc_id=spec.vpc_id,
        vpc_cidr_block=spec.cidr,
        # Imported subnets carry their zone *ID* here: names differ per account and
        # nothing in novapod selects subnets by zone name.
        availability_zones=[s.zone_id for s in subnets],
        private_subnet_ids=[s.subnet_id for s in subnets],
        private_subnet_route_table_ids=(
            [rt for rt in route_tables if rt] if all(route_tables) else None
        ),
    )
    return VpcHandle(
        vpc=vpc,
        cidr=spec.cidr,
        private_subnets=tuple(
            PrivateSubnet(s.zone_id, sub)
            for s, sub in zip(subnets, vpc.private_subnets, strict=True)
        ),
        zone_ids=tuple(spec.zone_ids),
    )


def _suffix(zone_id: str) -> str:
    """use1-az4 -> Use1Az4, for construct IDs that stay stable per zone."""
    return "".join(part.capitalize() for part in zone_id.split("-"))
