"""The VPC's flow logs: all traffic, into a retained log group encrypted with the key.

Built in the eks stack when there is one, else in the storage stack (environment.py):
the stacks that hold the key, or deploy after it, so the network stack needs no key of
its own, and the storage stack, which the EKS cluster waits for, need not wait for the
network stack (as it would to reference the VPC).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from novapod.constructs.log_retention import retention


class VpcFlowLog(Construct):
    """Exposes `log_group` and `flow_log`."""

    def __init__(
        self, scope: Construct, id_: str, *, vpc: ec2.IVpc, key: kms.IKey, retention_days: int
    ) -> None:
        super().__init__(scope, id_)
        self.log_group = logs.LogGroup(
            self,
            "LogGroup",
            retention=retention(retention_days),
            encryption_key=key,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.flow_log = ec2.FlowLog(
            self,
            "FlowLog",
            resource_type=ec2.FlowLogResourceType.from_vpc(vpc),
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(self.log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
