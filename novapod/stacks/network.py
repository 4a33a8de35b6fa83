"""NetworkStack: the VPC (created by zone ID or imported), endpoints, security group.

NAT egress of a created, open VPC is built here unless `defer_egress` hands it to the
stack whose resources first need the internet (`deferred_egress`). The VPC endpoints
likewise, with `defer_endpoints` (`deferred_endpoints`): an interface endpoint takes
about 90 s to create, and every resource of a later stack waits for the whole of this
one, the EKS cluster included, which needs none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from novapod.config import Network
from novapod.constructs.acknowledge import acknowledge
from novapod.constructs.endpoints import VpcEndpoints
from novapod.constructs.network import (
    EgressHandover,
    PrivatePlacement,
    VpcHandle,
    ZonalVpc,
    imported_vpc,
)
from novapod.constructs.security_group import HyperPodSecurityGroup, TrainingJobSecurityGroup


class NetworkStack(Stack):
    """Exposes `handle` (VPC, private subnets by zone ID), `security_group`,
    `deferred_egress` (what a later stack builds NAT egress from, or None),
    `deferred_endpoints` (the endpoint names a later stack builds, else empty) and
    `placement` (where a function runs beside the cluster) and, with `training_jobs`,
    `training_job_security_group` (else None). `endpoints`: the VPC endpoints to create,
    the network's and the jobs' (NovapodConfig.endpoint_names)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        network: Network,
        endpoints: Sequence[str],
        name: str,
        defer_egress: bool = False,
        defer_endpoints: bool = False,
        training_jobs: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.deferred_egress: EgressHandover | None = None
        if network.vpc is not None:
            zonal = ZonalVpc(
                self,
                "Network",
                spec=network.vpc,
                closed=network.closed,
                name=name,
                defer_egress=defer_egress,
            )
            if network.flow_logs.enabled:
                acknowledge(
                    zonal.cfn_vpc,
                    "AwsSolutions-VPC7",
                    "The VPC's flow log (all traffic) is in the eks stack, or the storage "
                    "stack without eks, under the environment's key (constructs/"
                    "flow_logs.py); cdk-nag looks for flow logs in this stack only.",
                )
            self.handle: VpcHandle = zonal.handle
            self.deferred_egress = zonal.deferred_egress
        else:
            assert network.existing_vpc is not None
            self.handle = imported_vpc(self, "ExistingVpc", spec=network.existing_vpc)

        self.security_group = HyperPodSecurityGroup(
            self,
            "HyperPodSecurityGroup",
            vpc=self.handle.vpc,
            vpc_cidr=self.handle.cidr,
            closed=network.closed,
        ).security_group
        # The environment's SageMaker training jobs run in a group of their own.
        self.training_job_security_group: ec2.ISecurityGroup | None = None
        if training_jobs:
            self.training_job_security_group = TrainingJobSecurityGroup(
                self, "TrainingJobSecurityGroup", vpc=self.handle.vpc
            ).security_group
        self.deferred_endpoints: tuple[str, ...] = ()
        if defer_endpoints:
            self.deferred_endpoints = tuple(endpoints)
        else:
            VpcEndpoints(
                self,
                "Endpoints",
                network=self.handle,
                names=tuple(endpoints),
                security_group=self.security_group,
            )
        # The VPC's flow logs are built under the environment's key in a later stack
        # (novapod/constructs/flow_logs.py).

    @property
    def placement(self) -> PrivatePlacement:
        """The VPC, the private subnets the cluster uses and the HyperPod security group,
        as IDs (weak references in the stack that uses them)."""
        return PrivatePlacement(
            vpc_id=self.handle.vpc.vpc_id,
            subnet_ids=tuple(s.subnet_id for s in self.handle.private_subnets),
            security_group_id=self.security_group.security_group_id,
        )
