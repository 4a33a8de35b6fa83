"""The security group HyperPod nodes, FSx for Lustre and the VPC endpoints share, and the
one the environment's SageMaker training jobs run in."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from novapod.constructs.acknowledge import acknowledge

LUSTRE_PORT = 988
LUSTRE_PORT_RANGE = (1018, 1023)
HTTPS = 443
EFA_RULE = "EFA and node-to-node traffic"
TRAINING_JOB_RULE = "A training job's instances (and EFA) to each other"


class HyperPodSecurityGroup(Construct):
    """All traffic within the group (EFA needs it), Lustre ports, HTTPS from the VPC.

    Egress: all traffic to the group itself in every network, because EFA requires an
    outbound rule to its own group besides any 0.0.0.0/0 rule (EC2 User Guide, "Prepare
    an EFA-enabled security group", docs.aws.amazon.com/AWSEC2/latest/UserGuide/
    efa-start.html; AWS's HyperPod EKS sample has both rules: awsome-distributed-training
    1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/
    security-group-stack.yaml). Then everything when the VPC has a NAT route; in a closed
    network only HTTPS, which reaches nothing but the VPC endpoints and the S3 gateway.
    """

    def __init__(
        self, scope: Construct, id_: str, *, vpc: ec2.IVpc, vpc_cidr: str, closed: bool
    ) -> None:
        super().__init__(scope, id_)
        self.security_group = ec2.SecurityGroup(
            self,
            "Group",
            vpc=vpc,
            description="novapod HyperPod nodes, FSx for Lustre and VPC endpoints",
            # Everything outbound when a NAT route exists (CDK refuses an all-traffic
            # 0.0.0.0/0 rule any other way); in a closed network only HTTPS.
            allow_all_outbound=not closed,
        )
        sg = self.security_group
        lustre_ports = (ec2.Port.tcp(LUSTRE_PORT), ec2.Port.tcp_range(*LUSTRE_PORT_RANGE))
        _admit_own_members(
            sg,
            EFA_RULE,
            "EFA requires a self-referencing all-traffic rule (EC2 User Guide, efa-start.html).",
        )
        for port in lustre_ports:
            sg.add_ingress_rule(sg, port, "FSx for Lustre")
        sg.add_ingress_rule(
            ec2.Peer.ipv4(vpc_cidr), ec2.Port.tcp(HTTPS), "HTTPS to VPC endpoints from the VPC"
        )
        if closed:
            sg.add_egress_rule(sg, ec2.Port.all_traffic(), EFA_RULE)
            for port in lustre_ports:
                sg.add_egress_rule(sg, port, "FSx for Lustre")
            sg.add_egress_rule(
                ec2.Peer.any_ipv4(), ec2.Port.tcp(HTTPS), "HTTPS to VPC endpoints and S3 gateway"
            )
        else:
            # CDK drops add_egress_rule on a group with allow_all_outbound, and EFA's
            # traffic needs this rule besides 0.0.0.0/0: write the rule out.
            ec2.CfnSecurityGroupEgress(
                self,
                "EfaEgressToSelf",
                group_id=sg.security_group_id,
                destination_security_group_id=sg.security_group_id,
                ip_protocol="-1",
                description=EFA_RULE,
            )


class TrainingJobSecurityGroup(Construct):
    """The group a training job's network interfaces carry (its VpcConfig
    SecurityGroupIds), its own rather than the HyperPod group: that one admits all
    traffic among its members, so a training job in it could reach every HyperPod node
    and the FSx for Lustre file systems, which it never needs.

    - All traffic among the group's members, in and out: the instances of one
      distributed training job talk to each other (docs.aws.amazon.com/sagemaker/latest/
      dg/train-vpc.html, "Configure the VPC security group", asks for communication among
      the job's containers in the group; that section was not retrieved word for word
      here), and EFA (p4d, p5) needs both self-referencing rules besides any other (EC2
      User Guide, efa-start.html, as for the HyperPod group).
    - Out: HTTPS only, which reaches the VPC's interface endpoints (the HyperPod group
      they carry admits HTTPS from the VPC's CIDR), the S3 gateway (addresses of S3's
      prefix list, whose ID a template cannot name without a lookup) and, where the
      network has NAT, AWS APIs without an endpoint. Nothing else inbound.
    """

    def __init__(self, scope: Construct, id_: str, *, vpc: ec2.IVpc) -> None:
        super().__init__(scope, id_)
        self.security_group = ec2.SecurityGroup(
            self,
            "Group",
            vpc=vpc,
            description="novapod SageMaker training jobs",
            allow_all_outbound=False,
        )
        sg = self.security_group
        _admit_own_members(
            sg,
            TRAINING_JOB_RULE,
            "a distributed training job's instances talk to each other, over EFA on "
            "p4d and p5 (train-vpc.html; EC2 User Guide, efa-start.html).",
        )
        sg.add_egress_rule(sg, ec2.Port.all_traffic(), TRAINING_JOB_RULE)
        sg.add_egress_rule(
            ec2.Peer.any_ipv4(), ec2.Port.tcp(HTTPS), "HTTPS to VPC endpoints, S3 and AWS APIs"
        )


def admit_to_eks_api(
    scope: Construct, *, cluster_group_id: str, source_group_id: str, who: str
) -> ec2.CfnSecurityGroupIngress:
    """HTTPS from `source_group_id` (a handler's own group) to the group the EKS cluster's
    private endpoint network interfaces carry (`cluster_group_id`, the HyperPod group the
    eks stack gives at CreateCluster: securityGroupIds, docs.aws.amazon.com/eks/latest/
    APIReference/API_VpcConfigRequest.html), as `EksApiIngress` of `scope`."""
    return ec2.CfnSecurityGroupIngress(
        scope,
        "EksApiIngress",
        group_id=cluster_group_id,
        source_security_group_id=source_group_id,
        ip_protocol="tcp",
        from_port=HTTPS,
        to_port=HTTPS,
        description=f"novapod {who} to the EKS API",
    )


def _admit_own_members(sg: ec2.SecurityGroup, description: str, why: str) -> None:
    """All traffic in from the group's own members, acknowledged for cdk-nag's
    EC2RestrictedCommonPorts with `why` (the rule names no address range)."""
    sg.add_ingress_rule(sg, ec2.Port.all_traffic(), description)
    (self_ingress,) = [
        c
        for c in sg.node.children
        if isinstance(c, ec2.CfnSecurityGroupIngress) and c.ip_protocol == "-1"
    ]
    acknowledge(
        self_ingress,
        "EC2RestrictedCommonPorts",
        "All traffic is admitted only from this group itself, never from an address range: " + why,
    )
