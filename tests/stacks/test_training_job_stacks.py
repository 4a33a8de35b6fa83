"""The training jobs wired into the environment (config/examples/training-jobs.yaml): the
nova-base stack's TrainingJobPermissions (trust, every statement of the execution policy
and of the launch policy, written out), its pinned logical IDs and outputs, the training
jobs' security group in the network stack, the VPC endpoints they need, and the
scientists' policy, which gains the launch rights. Configs without training-job jobs get
none of it, and the scientists' policy of nova-jobs.yaml keeps its bytes. cdk-nag (all
packs) and cfn-lint run on every example in test_policy_gates.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from novapod.config import load_config
from novapod.nova import launch
from novapod.nova.training_jobs import parse_subnets, takes_volume_key
from novapod.stacks.nova_base import TRAINING_JOB_OUTPUTS, TRAINING_JOB_PINNED_IDS
from tests.conftest import ALL_CONFIGS, ROOT, Synthesized, joined, resources
from tests.stacks.test_network import endpoint_services

EXAMPLE = ROOT / "config" / "examples" / "training-jobs.yaml"
NOVA_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"
# The scientists' policy of nova-jobs.yaml as main synthesized it before training jobs
# were wired in (3991bba, regenerated at 00c1fff: the same bytes).
SCIENTIST_GOLDEN = ROOT / "tests" / "fixtures" / "scientist_policy_nova_jobs.json"
ACCOUNT, REGION = "111122223333", "us-east-1"
NOVA = "708977205387"  # the us-east-1 Nova registry (catalog.yaml registries)
JOBS = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/novapod-mixed-tj--*"
ENI = f"arn:aws:ec2:{REGION}:{ACCOUNT}:network-interface/*"
PROFILE = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/us.amazon.nova-pro-v1:0"
KEY = "${EncryptionKey.Arn}"
SG = "${TrainingJobSecurityGroup66BD87C4.GroupId}"
SUBNETS = ["${PrivateSubnetUse1Az4}", "${PrivateSubnetUse1Az6}"]
# The plan micro-tj as the capacity stack buys it (its deterministic name).
PLAN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/novapod-mixed-tj-micro-tj-43d97959"


def rendered(value: Any, result: Synthesized) -> Any:
    """A template value with every string and intrinsic rendered as text (joined)."""
    if isinstance(value, list):
        return [rendered(v, result) for v in value]
    if isinstance(value, dict) and not (
        {"Fn::Join", "Ref", "Fn::GetAtt", "Fn::GetStackOutput"} & set(value)
    ):
        return {k: rendered(v, result) for k, v in value.items()}
    return joined(value, result)


def statements(result: Synthesized, document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Sid -> actions, sorted rendered resources and rendered condition."""
    out = {}
    for s in document["Statement"]:
        assert s["Effect"] == "Allow"
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        found = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        out[s["Sid"]] = {
            "actions": sorted(actions),
            "resources": sorted(joined(r, result) for r in found),
            "condition": rendered(s["Condition"], result) if "Condition" in s else None,
        }
    return out


def base(synth) -> tuple[Synthesized, dict[str, Any]]:
    result = synth(EXAMPLE)
    return result, result.templates["nova-base"]


# The launch policy's statements: what the TrainingJobLaunchPolicy holds, and the
# scientists' policy with it.
LAUNCH = {
    "CreateTrainingJobsInOurVpc": {
        "actions": ["sagemaker:CreateTrainingJob"],
        "resources": [JOBS],
        "condition": {
            "ForAllValues:StringEquals": {
                "sagemaker:VpcSubnets": SUBNETS,
                "sagemaker:VpcSecurityGroupIds": [SG],
            },
            "Null": {
                "sagemaker:VpcSubnets": "false",
                "sagemaker:VpcSecurityGroupIds": "false",
                "sagemaker:OutputKmsKey": "false",
            },
            "ArnEquals": {"sagemaker:OutputKmsKey": KEY},
            "ArnEqualsIfExists": {"sagemaker:VolumeKmsKey": KEY},
        },
    },
    "RunOnOurTrainingPlans": {
        "actions": ["sagemaker:CreateTrainingJob"],
        "resources": [f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/*", PLAN],
        "condition": None,
    },
    "DescribeOurTrainingPlans": {
        "actions": ["sagemaker:DescribeTrainingPlan"],
        "resources": [PLAN],
        "condition": None,
    },
    "TagTrainingJobsOnCreate": {
        "actions": ["sagemaker:AddTags"],
        "resources": [JOBS],
        "condition": {"StringEquals": {"sagemaker:TaggingAction": "CreateTrainingJob"}},
    },
    "PassTheExecutionRole": {
        "actions": ["iam:PassRole"],
        "resources": ["${TrainingJobExecutionRole.Arn}"],
        "condition": {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
    },
    "DescribeAndStopOurTrainingJobs": {
        "actions": ["sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob"],
        "resources": [JOBS],
        "condition": None,
    },
    "ListTrainingJobs": {
        "actions": ["sagemaker:ListTrainingJobs"],
        "resources": ["*"],
        "condition": None,
    },
    "MapPlanZones": {
        "actions": ["ec2:DescribeAvailabilityZones"],
        "resources": ["*"],
        "condition": None,
    },
    "UploadRecipes": {
        "actions": ["s3:PutObject"],
        "resources": ["arn:aws:s3:::${DataBucket}/training-jobs/recipes/*"],
        "condition": None,
    },
    "EncryptRecipeUploads": {
        "actions": ["kms:GenerateDataKey"],
        "resources": [KEY],
        "condition": {"StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"}},
    },
    "ReadOurTrainingJobLogs": {
        "actions": ["logs:GetLogEvents"],
        "resources": [
            f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:"
            "log-stream:novapod-mixed-tj--*"
        ],
        "condition": None,
    },
    "FindOurTrainingJobLogStreams": {
        "actions": ["logs:DescribeLogStreams"],
        "resources": [f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs:*"],
        "condition": None,
    },
}


def test_the_role_and_policies_have_pinned_logical_ids(synth) -> None:
    """A logical ID derived from the construct path would replace the role (and every
    ARN a launch names) when the code around it moves."""
    _, template = base(synth)
    kinds = {k: template["Resources"][k]["Type"] for k in TRAINING_JOB_PINNED_IDS.values()}
    assert kinds == {
        "TrainingJobExecutionRole": "AWS::IAM::Role",
        "TrainingJobExecutionPolicy": "AWS::IAM::Policy",
        "TrainingJobLaunchPolicy": "AWS::IAM::ManagedPolicy",
    }
    assert len(resources(template, "AWS::IAM::ManagedPolicy")) == 1


def test_the_role_is_trusted_by_sagemaker_for_this_environments_jobs_only(synth) -> None:
    """A trust without aws:SourceArn lets any SageMaker job of any environment (or a
    confused deputy) take the role."""
    _, template = base(synth)
    role = template["Resources"]["TrainingJobExecutionRole"]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Condition": {"ArnLike": {"aws:SourceArn": JOBS}},
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
        }
    ]
    assert "ManagedPolicyArns" not in role


def test_every_statement_of_the_execution_policy(synth) -> None:
    """Only the training-job jobs' datasets (not lite-sft's, which runs on HyperPod), the
    recipes, the outputs prefix every job writes below, the three repositories of their
    images, the storage key (and CreateGrant: distill runs on ml.r5, EBS volumes), their
    log streams, the metrics namespace, interfaces in our subnets and security group,
    and distill's teacher through its inference profile. No MLflow and no functions: no
    job uses them."""
    result, template = base(synth)
    policy = template["Resources"]["TrainingJobExecutionPolicy"]["Properties"]
    assert policy["Roles"] == [{"Ref": "TrainingJobExecutionRole"}]
    data = "arn:aws:s3:::${DataBucket}"
    streams = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs"
    assert statements(result, policy["PolicyDocument"]) == {
        "ReadInputsAndRecipes": {
            "actions": ["s3:GetObject"],
            "resources": [
                f"{data}/eval/micro-gen-qa.jsonl*",
                f"{data}/sft/micro-train.jsonl*",
                f"{data}/training-jobs/recipes/*",
            ],
            "condition": None,
        },
        "ListInputsAndRecipes": {
            "actions": ["s3:ListBucket"],
            "resources": [data],
            "condition": {
                "StringLike": {
                    "s3:prefix": [
                        "sft/micro-train.jsonl*",
                        "eval/micro-gen-qa.jsonl*",
                        "training-jobs/recipes/*",
                    ]
                }
            },
        },
        "WriteOutputs": {
            "actions": ["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"],
            "resources": ["arn:aws:s3:::${ArtifactsBucket}/nova/mixed-tj/*"],
            "condition": None,
        },
        "ListOutputs": {
            "actions": ["s3:ListBucket"],
            "resources": ["arn:aws:s3:::${ArtifactsBucket}"],
            "condition": {"StringLike": {"s3:prefix": "nova/mixed-tj/*"}},
        },
        "UseTheStorageKey": {
            "actions": ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
            "resources": [KEY],
            "condition": None,
        },
        "EncryptTheVolumes": {
            "actions": ["kms:CreateGrant"],
            "resources": [KEY],
            "condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
        "PullJobImages": {
            "actions": [
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:GetDownloadUrlForLayer",
            ],
            "resources": [
                f"arn:aws:ecr:{REGION}:{NOVA}:repository/nova-distillation-repo",
                f"arn:aws:ecr:{REGION}:{NOVA}:repository/nova-evaluation-repo",
                f"arn:aws:ecr:{REGION}:{NOVA}:repository/nova-fine-tune-repo",
            ],
            "condition": None,
        },
        "WriteJobLogs": {
            "actions": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "resources": [f"{streams}:log-stream:novapod-mixed-tj--*"],
            "condition": None,
        },
        "TrainingJobsLogGroup": {
            "actions": ["logs:CreateLogGroup", "logs:DescribeLogStreams"],
            "resources": [f"{streams}:*"],
            "condition": None,
        },
        "PublishJobMetrics": {
            "actions": ["cloudwatch:PutMetricData"],
            "resources": ["*"],
            "condition": {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/TrainingJobs"}},
        },
        "CreateInterfacesInOurSubnets": {
            "actions": ["ec2:CreateNetworkInterface"],
            "resources": sorted(
                [
                    ENI,
                    f"arn:aws:ec2:{REGION}:{ACCOUNT}:security-group/{SG}",
                    *(f"arn:aws:ec2:{REGION}:{ACCOUNT}:subnet/{s}" for s in SUBNETS),
                ]
            ),
            "condition": None,
        },
        "ManageInterfaces": {
            "actions": [
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
            ],
            "resources": [ENI],
            "condition": None,
        },
        "DescribeWithoutResourceLevel": {
            "actions": [
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSubnets",
                "ec2:DescribeVpcs",
                "ecr:GetAuthorizationToken",
            ],
            "resources": ["*"],
            "condition": None,
        },
        "InvokeTeacherProfiles": {
            "actions": ["bedrock:InvokeModel"],
            "resources": [PROFILE],
            "condition": None,
        },
        "InvokeTeacherModelsThroughProfiles": {
            "actions": ["bedrock:InvokeModel"],
            "resources": ["arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0"],
            "condition": {"StringEquals": {"bedrock:InferenceProfileArn": [PROFILE]}},
        },
    }


def test_every_statement_of_the_launch_policy(synth) -> None:
    """CreateTrainingJob only in our subnets and group with our key, on micro-tj (the
    plan its jobs run on: lite-rig is HyperPod's), PassRole of this role only."""
    result, template = base(synth)
    policy = template["Resources"]["TrainingJobLaunchPolicy"]["Properties"]
    assert statements(result, policy["PolicyDocument"]) == LAUNCH
    assert "Roles" not in policy and "Users" not in policy and "Groups" not in policy


def test_the_plan_arn_is_the_one_the_capacity_stack_buys(synth) -> None:
    """The plan's ARN is written out from its deterministic name: a name that drifted
    from the capacity stack's would let no job start on the bought plan."""
    result = synth(EXAMPLE)
    names = {
        r["Properties"]["PlanName"]
        for r in result.templates["capacity"]["Resources"].values()
        if "PlanName" in r.get("Properties", {})
    }
    assert PLAN.rsplit("/", 1)[1] in names


def test_outputs_give_what_a_launch_request_sends(synth) -> None:
    """The launcher reads these (novapod/nova/launch.py STACK_OUTPUTS): the role, the
    subnets by zone ID (a plan's zones pick among them), the security group; and the
    launch policy's ARN for whoever attaches it."""
    result, template = base(synth)
    outputs = {
        k: (joined(v["Value"], result), v["Description"])
        for k, v in template["Outputs"].items()
        if k.startswith("TrainingJob")
    }
    assert {k: v for k, (v, _) in outputs.items()} == {
        "TrainingJobRoleArn": "${TrainingJobExecutionRole.Arn}",
        "TrainingJobLaunchPolicyArn": "${TrainingJobLaunchPolicy}",
        "TrainingJobSubnets": f"use1-az4={SUBNETS[0]},use1-az6={SUBNETS[1]}",
        "TrainingJobSecurityGroupId": SG,
    }
    assert all(description for _, description in outputs.values())
    # The subnets are the network stack's private subnets, by the zone each is in.
    network = result.templates["network"]["Resources"]
    assert network["PrivateSubnetUse1Az4"]["Properties"]["AvailabilityZoneId"] == "use1-az4"
    assert network["PrivateSubnetUse1Az6"]["Properties"]["AvailabilityZoneId"] == "use1-az6"


def test_the_launcher_reads_the_outputs_nova_base_declares() -> None:
    """A renamed output would leave `novapod launch` asking for one that is not there."""
    fields = TRAINING_JOB_OUTPUTS
    assert {k: v for k, v in launch.STACK_OUTPUTS.items() if v[0] == "nova-base"} == {
        fields.role_arn: ("nova-base", fields.role_arn),
        fields.subnets: ("nova-base", fields.subnets),
        fields.security_group: ("nova-base", fields.security_group),
    }


def test_subnets_output_parses_by_zone_or_refuses() -> None:
    assert parse_subnets("use1-az4=subnet-a,use1-az6=subnet-b,use1-az4=subnet-c") == {
        "use1-az4": ["subnet-a", "subnet-c"],
        "use1-az6": ["subnet-b"],
    }
    assert parse_subnets("") == {}
    with pytest.raises(Exception, match="'subnet-a', not zone-id=subnet-id"):
        parse_subnets("subnet-a")


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("ml.r5.24xlarge", True),
        ("ml.p5.48xlarge", False),
        ("ml.p4d.24xlarge", False),
        ("ml.g5.12xlarge", False),
        ("ml.g6.48xlarge", False),
        ("ml.p5en.48xlarge", False),
    ],
)
def test_only_ebs_backed_instances_take_a_volume_key(instance_type, expected) -> None:
    """VolumeKmsKeyId on an instance with local NVMe storage is refused by SageMaker."""
    assert takes_volume_key(instance_type) is expected


def test_the_training_jobs_security_group_admits_only_itself(synth) -> None:
    """Its own group, not the HyperPod one (which admits all traffic among HyperPod nodes
    and FSx): all traffic to and from itself (distributed training, EFA), HTTPS out."""
    network = synth(EXAMPLE).templates["network"]
    groups = {
        k: r
        for k, r in resources(network, "AWS::EC2::SecurityGroup").items()
        if k.startswith("TrainingJobSecurityGroup")
    }
    ((sg_id, sg),) = groups.items()
    me = {"Fn::GetAtt": [sg_id, "GroupId"]}
    assert sg["Properties"]["GroupDescription"] == "novapod SageMaker training jobs"
    assert sg["Properties"]["SecurityGroupEgress"] == [
        {
            "CidrIp": "0.0.0.0/0",
            "Description": "HTTPS to VPC endpoints, S3 and AWS APIs",
            "FromPort": 443,
            "IpProtocol": "tcp",
            "ToPort": 443,
        }
    ]
    assert "SecurityGroupIngress" not in sg["Properties"]

    def rules(type_: str) -> list[dict[str, Any]]:
        return [
            r["Properties"]
            for r in resources(network, type_).values()
            if r["Properties"]["GroupId"] == me
        ]

    (ingress,) = rules("AWS::EC2::SecurityGroupIngress")
    (egress,) = rules("AWS::EC2::SecurityGroupEgress")
    assert ingress["IpProtocol"] == "-1" and ingress["SourceSecurityGroupId"] == me
    assert egress["IpProtocol"] == "-1" and egress["DestinationSecurityGroupId"] == me
    # Nothing else names it: the HyperPod group (endpoints, FSx) does not admit it.
    others = json.dumps(
        [r for k, r in network["Resources"].items() if not k.startswith("TrainingJobSecurity")]
    )
    assert sg_id not in others


def test_the_endpoints_add_bedrock_runtime_for_the_distillation_teacher(synth) -> None:
    """distill calls its teacher through bedrock-runtime; the S3 gateway carries the
    training jobs' data. With eks, the endpoints are in the eks stack."""
    result = synth(EXAMPLE)
    config = load_config(EXAMPLE)
    assert config.job_endpoints == {"s3": "micro-sft", "bedrock-runtime": "distill"}
    services = endpoint_services(result.templates["eks"])
    assert services == sorted(
        [
            "s3", "ecr.api", "ecr.dkr", "sts", "logs", "monitoring", "eks", "eks-auth", "ssm",
            "ssmmessages", "ec2messages", "bedrock-runtime",
        ]
    )  # fmt: skip


def test_the_scientists_policy_gains_the_launch_rights_and_reads_nova_base(synth) -> None:
    """The scientists start training jobs with the policy they carry: the launch
    statements merged in, and DescribeStacks on nova-base for the launch's outputs."""
    result = synth(EXAMPLE)
    template = result.templates["nova"]
    ((_, policy),) = (
        (k, r)
        for k, r in resources(template, "AWS::IAM::ManagedPolicy").items()
        if k.startswith("ScientistPolicy")
    )
    found = statements(result, policy["Properties"]["PolicyDocument"])
    assert {sid: found[sid] for sid in LAUNCH} == LAUNCH
    stacks = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/novapod-mixed-tj"
    assert found["ReadStackOutputs"]["resources"] == sorted(
        f"{stacks}-{kind}/*" for kind in ("hyperpod", "nova", "nova-base", "storage")
    )
    assert "and starts" in policy["Properties"]["Description"]


@pytest.mark.parametrize("path", [p for p in ALL_CONFIGS if p != EXAMPLE], ids=lambda p: p.name)
def test_nothing_of_it_without_training_job_jobs(synth, path) -> None:
    """No role, policy, group, output or Bedrock endpoint where no job runs as a
    training job (config/default.yaml, nova-jobs.yaml and every other example)."""
    assert not load_config(path).training_jobs
    for kind, template in synth(path).templates.items():
        text = json.dumps(template)
        assert "TrainingJob" not in text.replace("CreateTrainingJob", ""), kind
        assert "bedrock-runtime" not in text, kind


def test_the_scientists_policy_keeps_its_bytes_without_training_job_jobs(synth) -> None:
    """nova-jobs.yaml's policy as it was before training jobs were wired in."""
    golden = json.loads(SCIENTIST_GOLDEN.read_text())
    template = synth(NOVA_JOBS).templates["nova"]
    assert template["Resources"][golden["logical_id"]] == golden["resource"]


def test_the_cluster_nodes_read_only_the_cluster_jobs_datasets(synth) -> None:
    """The restricted groups' role reads lite-sft's dataset only: micro-sft's and
    micro-eval's are read by the training jobs' own role. Fails if the HyperPod grants
    were taken from every job of the config."""
    result = synth(EXAMPLE)
    template = result.templates["nova"]
    (policy,) = [
        r["Properties"]["PolicyDocument"]
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and k.startswith("RestrictedGroupDataGrants")
    ]
    found = statements(result, policy)
    assert found["ReadDatasets"] == {
        "actions": ["s3:GetObject"],
        "resources": ["arn:aws:s3:::${DataBucket}/sft/lite-train.jsonl"],
        "condition": None,
    }
    assert found["ListDatasets0"]["condition"] == {
        "StringEquals": {"s3:prefix": ["sft/lite-train.jsonl"]}
    }
