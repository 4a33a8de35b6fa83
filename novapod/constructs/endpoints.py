"""VPC endpoints: the S3 gateway and the interface endpoints HyperPod needs."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from novapod.constructs.network import VpcHandle


def _construct_id(name: str) -> str:
    return "".join(p.capitalize() for p in name.replace(".", "-").split("-"))


def _service(name: str) -> ec2.IInterfaceVpcEndpointService:
    """The interface endpoint service of a config endpoint name."""
    if name == "sagemaker.experiments":
        # SageMaker managed MLflow: aws.sagemaker.<region>.experiments, not under
        # com.amazonaws (aws-cdk-lib 2.275 InterfaceVpcEndpointAwsService
        # .SAGEMAKER_EXPERIMENTS). Its private DNS name is the host the sagemaker-mlflow
        # plugin sends a tracking-server ARN's requests to, <region>.experiments.sagemaker
        # .aws (sagemaker-mlflow 0.5.0 sagemaker_mlflow/mlflow_sagemaker_helpers.py).
        return ec2.InterfaceVpcEndpointAwsService.SAGEMAKER_EXPERIMENTS
    return ec2.InterfaceVpcEndpointAwsService(name)


class VpcEndpoints(Construct):
    """One endpoint per configured service, interface endpoints in every private subnet."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        network: VpcHandle,
        names: tuple[str, ...],
        security_group: ec2.ISecurityGroup,
    ) -> None:
        super().__init__(scope, id_)
        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        self.all: list[ec2.IVpcEndpoint] = []
        for name in names:
            if name == "s3":
                gateway = ec2.GatewayVpcEndpoint(
                    self,
                    "S3",
                    vpc=network.vpc,
                    service=ec2.GatewayVpcEndpointAwsService.S3,
                    subnets=[network.subnet_selection],
                )
                self.all.append(gateway)
                continue
            self.interface_endpoints[name] = ec2.InterfaceVpcEndpoint(
                self,
                _construct_id(name),
                vpc=network.vpc,
                service=_service(name),
                subnets=network.subnet_selection,
                security_groups=[security_group],
                private_dns_enabled=True,
                # The shared security group already admits HTTPS from the VPC CIDR.
                open=False,
            )
            self.all.append(self.interface_endpoints[name])
