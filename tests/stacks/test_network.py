"""NetworkStack: subnets by zone ID, the security group's exact rules, endpoints, flow logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment
from aws_cdk.assertions import Match

from novapod.config import load_config
from novapod.environment import add_policy_checks, feature_flags
from novapod.stacks.network import NetworkStack
from tests.conftest import DEFAULT_CONFIG, ROOT, Synthesized, producer_value, resources

CLOSED = ROOT / "config" / "examples" / "closed-network.yaml"
EXISTING = ROOT / "config" / "examples" / "existing-vpc.yaml"
DEV = ROOT / "config" / "examples" / "dev-two-zones.yaml"
NOVA_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"
# What its jobs call from the restricted groups: the RFT reward Lambda and RFT's queues,
# and MLflow (aws.sagemaker.<region>.experiments) for lite-sft.
JOB_SET = ("lambda", "sqs", "experiments")
# The interface endpoints restricted instance groups need (Nova on HyperPod docs).
RIG_SET = (
    "ecr.api", "ecr.dkr", "sts", "logs", "monitoring", "eks", "eks-auth", "ssm", "ssmmessages",
    "ec2messages",
)  # fmt: skip


def endpoint_services(template: dict[str, Any]) -> list[str]:
    names = []
    for r in resources(template, "AWS::EC2::VPCEndpoint").values():
        service = r["Properties"]["ServiceName"]
        text = (
            service
            if isinstance(service, str)
            else "".join(p for p in service["Fn::Join"][1] if isinstance(p, str))
        )
        names.append(text.split(".", 3)[-1] if text.count(".") >= 3 else text.rsplit(".", 1)[-1])
    return sorted(names)


def sg_rules(template: dict[str, Any]) -> tuple[set[tuple], set[tuple]]:
    """(ingress, egress) as {(protocol, from, to, peer)} across inline and separate rules."""
    ((sg_id, sg),) = resources(template, "AWS::EC2::SecurityGroup").items()

    def peer(rule: dict[str, Any]) -> str:
        if "CidrIp" in rule:
            return rule["CidrIp"]
        ref = rule.get("SourceSecurityGroupId") or rule.get("DestinationSecurityGroupId")
        return "self" if ref == {"Fn::GetAtt": [sg_id, "GroupId"]} else repr(ref)

    def key(rule: dict[str, Any]) -> tuple:
        return (rule["IpProtocol"], rule.get("FromPort"), rule.get("ToPort"), peer(rule))

    ingress = {key(r) for r in sg["Properties"].get("SecurityGroupIngress", [])}
    egress = {key(r) for r in sg["Properties"].get("SecurityGroupEgress", [])}
    ingress |= {
        key(r["Properties"]) for r in resources(template, "AWS::EC2::SecurityGroupIngress").values()
    }
    egress |= {
        key(r["Properties"]) for r in resources(template, "AWS::EC2::SecurityGroupEgress").values()
    }
    return ingress, egress


SELF_INGRESS = {("-1", None, None, "self"), ("tcp", 988, 988, "self"), ("tcp", 1018, 1023, "self")}


def test_private_subnets_are_placed_by_zone_id(synth) -> None:
    template = synth(DEFAULT_CONFIG).templates["network"]
    config = load_config(DEFAULT_CONFIG)
    subnets = resources(template, "AWS::EC2::Subnet")
    private = {k: r["Properties"] for k, r in subnets.items() if k.startswith("PrivateSubnet")}
    assert sorted(p["AvailabilityZoneId"] for p in private.values()) == sorted(
        config.network.zone_ids
    )
    assert all("AvailabilityZone" not in r["Properties"] for r in subnets.values())
    assert {p["CidrBlock"] for p in private.values()} == {"10.0.0.0/20", "10.0.16.0/20"}
    assert set(private) == {"PrivateSubnetUse1Az4", "PrivateSubnetUse1Az6"}  # pinned IDs
    assert all(p["MapPublicIpOnLaunch"] is False for p in private.values())


def test_default_network_has_public_subnets_and_leaves_nat_to_the_eks_stack(synth) -> None:
    template = synth(DEFAULT_CONFIG).template("network")
    template.resource_count_is("AWS::EC2::InternetGateway", 1)
    template.resource_count_is("AWS::EC2::Subnet", 4)
    # With eks the NAT gateways are built in the eks stack (tests/stacks/test_egress.py).
    template.resource_count_is("AWS::EC2::NatGateway", 0)
    template.resource_properties_count_is("AWS::EC2::Route", {"NatGatewayId": Match.any_value()}, 0)
    template.has_resource_properties(
        "AWS::EC2::Route",
        {"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": Match.any_value()},
    )
    template.has_resource_properties(
        "AWS::EC2::VPC",
        {"CidrBlock": "10.0.0.0/16", "EnableDnsHostnames": True, "EnableDnsSupport": True},
    )


def test_public_subnet_prefix_sizes_the_public_subnets(synth) -> None:
    def cidrs(path: Path) -> dict[str, str]:
        template = synth(path).templates["network"]
        return {
            r["Properties"]["AvailabilityZoneId"]: r["Properties"]["CidrBlock"]
            for logical_id, r in resources(template, "AWS::EC2::Subnet").items()
            if "PublicSubnet" in logical_id
        }

    # public_subnet_prefix: 26, carved from the top of 10.90.0.0/16.
    assert cidrs(ROOT / "config" / "examples" / "standard-group-on-plan.yaml") == {
        "use1-az4": "10.90.255.192/26",
        "use1-az6": "10.90.255.128/26",
    }
    # The default /24.
    assert cidrs(DEFAULT_CONFIG) == {"use1-az4": "10.0.255.0/24", "use1-az6": "10.0.254.0/24"}


def test_single_nat_serves_every_private_subnet(synth) -> None:
    template = synth(DEV).templates["network"]
    nats = resources(template, "AWS::EC2::NatGateway")
    assert len(nats) == 1
    routes = [r["Properties"] for r in resources(template, "AWS::EC2::Route").values()]
    nat_routes = [r for r in routes if "NatGatewayId" in r]
    assert len(nat_routes) == 2
    assert {r["NatGatewayId"]["Ref"] for r in nat_routes} == set(nats)


def test_security_group_rules_exactly_open_network(synth) -> None:
    ingress, egress = sg_rules(synth(DEFAULT_CONFIG).templates["network"])
    assert ingress == SELF_INGRESS | {("tcp", 443, 443, "10.0.0.0/16")}
    # EFA needs the rule to the group itself besides 0.0.0.0/0.
    assert egress == {("-1", None, None, "0.0.0.0/0"), ("-1", None, None, "self")}


def test_security_group_rules_exactly_closed_network(synth) -> None:
    ingress, egress = sg_rules(synth(CLOSED).templates["network"])
    assert ingress == SELF_INGRESS | {("tcp", 443, 443, "10.30.0.0/16")}
    assert egress == SELF_INGRESS | {("tcp", 443, 443, "0.0.0.0/0")}


@pytest.mark.parametrize("path", [DEFAULT_CONFIG, CLOSED, EXISTING], ids=["open", "closed", "vpc"])
def test_efa_egress_rule_to_the_group_itself(synth, path) -> None:
    """An egress resource of the group, all protocols, to the group itself (EFA)."""
    template = synth(path).templates["network"]
    ((sg_id, _),) = resources(template, "AWS::EC2::SecurityGroup").items()
    group = {"Fn::GetAtt": [sg_id, "GroupId"]}
    rules = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::SecurityGroupEgress").values()
        if r["Properties"].get("DestinationSecurityGroupId") == group
        and r["Properties"]["GroupId"] == group
        and r["Properties"]["IpProtocol"] == "-1"
    ]
    assert len(rules) == 1, rules
    assert "FromPort" not in rules[0] and "CidrIp" not in rules[0]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # Written out, not read from novapod.config's tables (they would vouch for themselves).
        (DEFAULT_CONFIG, ("s3", *RIG_SET)),
        (CLOSED, ("s3", *RIG_SET, "lambda", "sqs")),
        (EXISTING, ("s3", "eks", "eks-auth")),
        (NOVA_JOBS, ("s3", *RIG_SET, *JOB_SET)),
    ],
    ids=["default", "closed", "existing", "nova-jobs"],
)
def test_endpoint_set_matches_config(synth, path, expected) -> None:
    result = synth(path)
    assert endpoint_services(endpoint_template(result)) == sorted(expected)
    # With an eks stack the endpoints are built there, beside the EKS cluster (which needs
    # none and would otherwise wait ~90 s for them); without one, in the network stack.
    other = "network" if "eks" in result.templates else "eks"
    assert endpoint_services(result.templates.get(other, {"Resources": {}})) == []


def endpoint_template(result: Synthesized) -> dict[str, Any]:
    return result.templates["eks" if "eks" in result.templates else "network"]


def test_interface_endpoints_use_private_dns_the_shared_group_and_every_zone(synth) -> None:
    template = synth(CLOSED).templates["network"]
    (sg_id,) = resources(template, "AWS::EC2::SecurityGroup")
    interface = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::VPCEndpoint").values()
        if r["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert len(interface) == 12  # every endpoint of a closed network but the S3 gateway
    for props in interface:
        assert props["PrivateDnsEnabled"] is True
        assert props["SecurityGroupIds"] == [{"Fn::GetAtt": [sg_id, "GroupId"]}]
        assert len(props["SubnetIds"]) == 3


def test_jobs_reach_lambda_sqs_and_mlflow_privately_from_the_restricted_groups(synth) -> None:
    """nova-jobs (an open network): the endpoints its jobs call, with private DNS, in the
    subnets and under the security group the HyperPod cluster and its RIGs use."""
    result = synth(NOVA_JOBS)
    endpoints = {
        service: r["Properties"]
        for r in resources(result.templates["eks"], "AWS::EC2::VPCEndpoint").values()
        for service in [r["Properties"]["ServiceName"]]
        if isinstance(service, str) and service.rsplit(".", 1)[-1] in JOB_SET
    }
    assert sorted(endpoints) == [
        "aws.sagemaker.us-east-1.experiments",
        "com.amazonaws.us-east-1.lambda",
        "com.amazonaws.us-east-1.sqs",
    ]
    ((_, cluster),) = resources(result.templates["hyperpod"], "AWS::SageMaker::Cluster").items()
    vpc = cluster["Properties"]["VpcConfig"]
    groups = {repr(producer_value(result, g)) for g in vpc["SecurityGroupIds"]}
    subnets = sorted(repr(producer_value(result, s)) for s in vpc["Subnets"])
    for rig in cluster["Properties"]["RestrictedInstanceGroups"]:
        rig_groups = rig["OverrideVpcConfig"]["SecurityGroupIds"]
        assert {repr(producer_value(result, g)) for g in rig_groups} == groups
    network = result.templates["network"]
    (sg_id,) = resources(network, "AWS::EC2::SecurityGroup")
    assert groups == {repr({"Fn::GetAtt": [sg_id, "GroupId"]})}
    assert subnets == sorted(
        repr({"Ref": k}) for k in resources(network, "AWS::EC2::Subnet") if "Private" in k
    )
    for props in endpoints.values():
        assert props["VpcEndpointType"] == "Interface"
        assert props["PrivateDnsEnabled"] is True
        assert {repr(producer_value(result, g)) for g in props["SecurityGroupIds"]} == groups
        assert sorted(repr(producer_value(result, s)) for s in props["SubnetIds"]) == subnets
    # The group admits HTTPS from the VPC, the endpoints' only way in.
    assert ("tcp", 443, 443, "10.90.0.0/16") in sg_rules(network)[0]


def test_closed_network_gets_the_jobs_endpoints_with_private_dns() -> None:
    """A closed network (no eks section yet: the bootstrap needs the internet) built with
    the endpoints jobs calling Lambda, RFT's queues and MLflow add, under cdk-nag."""
    config = load_config(CLOSED)
    names = config.network.endpoints_with(("lambda", "sqs", "sagemaker.experiments"))
    app = App(context=feature_flags())
    stack = NetworkStack(
        app,
        "ClosedNetwork",
        network=config.network,
        endpoints=names,
        name="novapod-secure",
        env=Environment(account="111122223333", region="us-west-2"),
    )
    add_policy_checks(app, ["nist-800-53-r5", "hipaa"])
    template = app.synth().get_stack_by_name(stack.stack_name).template
    assert endpoint_services(template) == sorted(("s3", *RIG_SET, *JOB_SET))
    (sg_id,) = resources(template, "AWS::EC2::SecurityGroup")
    private = sorted(k for k in resources(template, "AWS::EC2::Subnet") if "Private" in k)
    assert len(private) == 3
    interface = [
        r["Properties"]
        for r in resources(template, "AWS::EC2::VPCEndpoint").values()
        if r["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert len(interface) == 13
    for props in interface:
        assert props["PrivateDnsEnabled"] is True
        assert props["SecurityGroupIds"] == [{"Fn::GetAtt": [sg_id, "GroupId"]}]
        assert sorted(s["Ref"] for s in props["SubnetIds"]) == private
    for type_ in ("AWS::EC2::InternetGateway", "AWS::EC2::NatGateway"):
        assert resources(template, type_) == {}


def test_s3_gateway_endpoint_is_on_private_route_tables(synth) -> None:
    result = synth(DEFAULT_CONFIG)
    template = result.templates["network"]
    (gateway,) = [
        r["Properties"]
        for r in resources(endpoint_template(result), "AWS::EC2::VPCEndpoint").values()
        if r["Properties"].get("VpcEndpointType") == "Gateway"
    ]
    private_tables = {
        k for k in resources(template, "AWS::EC2::RouteTable") if k.startswith("NetworkPrivate")
    }
    tables = [producer_value(result, t) for t in gateway["RouteTableIds"]]
    assert {t["Ref"] for t in tables} == private_tables


def test_closed_network_has_no_internet_path(synth) -> None:
    template = synth(CLOSED).templates["network"]
    for type_ in ("AWS::EC2::InternetGateway", "AWS::EC2::NatGateway", "AWS::EC2::EIP"):
        assert resources(template, type_) == {}
    assert not [r for r in resources(template, "AWS::EC2::Route").values()]
    assert len(resources(template, "AWS::EC2::Subnet")) == 3


def test_existing_vpc_creates_no_network_resources(synth) -> None:
    result = synth(EXISTING)
    template = result.templates["network"]
    for type_ in ("AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::RouteTable", "AWS::EC2::FlowLog"):
        assert resources(template, type_) == {}
    (sg,) = resources(template, "AWS::EC2::SecurityGroup").values()
    assert sg["Properties"]["VpcId"] == "vpc-0a1b2c3d4e5f60718"
    interface = [
        r["Properties"]
        for r in resources(endpoint_template(result), "AWS::EC2::VPCEndpoint").values()
        if r["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert all(
        sorted(p["SubnetIds"]) == ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
        for p in interface
    )
    (gateway,) = [
        r["Properties"]
        for r in resources(endpoint_template(result), "AWS::EC2::VPCEndpoint").values()
        if r["Properties"].get("VpcEndpointType") == "Gateway"
    ]
    assert sorted(gateway["RouteTableIds"]) == ["rtb-0a1b2c3d4e5f60001", "rtb-0a1b2c3d4e5f60002"]


def test_flow_logs_capture_all_traffic_with_configured_retention(synth) -> None:
    # Without an eks stack: in the storage stack, under its key (constructs/flow_logs.py).
    result = synth(DEV)
    assert "eks" not in result.templates
    assert resources(result.templates["network"], "AWS::EC2::FlowLog") == {}
    template = result.template("storage")
    template.has_resource_properties(
        "AWS::EC2::FlowLog",
        {"ResourceType": "VPC", "TrafficType": "ALL"},
    )
    template.has_resource(
        "AWS::Logs::LogGroup", {"Properties": {"RetentionInDays": 90}, "DeletionPolicy": "Retain"}
    )


def test_vpc_logical_id_is_pinned(synth) -> None:
    template = synth(DEFAULT_CONFIG).templates["network"]
    assert template["Resources"]["Vpc"]["Type"] == "AWS::EC2::VPC"
