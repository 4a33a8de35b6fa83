"""What the NIST 800-53 R5, HIPAA and checkov findings fixed, asserted on the templates."""

from __future__ import annotations

import pytest

from tests.conftest import ALL_CONFIGS, DEFAULT_CONFIG, EXAMPLES, producer_value, resources

NOVA_JOBS = next(p for p in EXAMPLES if p.name == "nova-jobs.yaml")
TWO_PLANS = next(p for p in EXAMPLES if p.name == "two-rigs-two-plans.yaml")
DEV = next(p for p in EXAMPLES if p.name == "dev-two-zones.yaml")
STORAGE_KEY_ARN = {"Fn::GetAtt": ["EncryptionKey", "Arn"]}


def _key_of(result, kind: str, value: object) -> object:
    """A KmsKeyId as the storage stack's value (a cross-stack read resolved)."""
    if isinstance(value, dict) and "Fn::GetStackOutput" in value:
        return producer_value(result, value)
    assert kind == "storage", (kind, value)
    return value


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_every_log_group_is_encrypted_with_the_storage_key(synth, path) -> None:
    result = synth(path)
    seen = 0
    for kind, template in result.templates.items():
        for logical_id, group in resources(template, "AWS::Logs::LogGroup").items():
            key = group["Properties"].get("KmsKeyId")
            assert key is not None, f"{kind}/{logical_id} is not encrypted"
            assert _key_of(result, kind, key) == STORAGE_KEY_ARN, f"{kind}/{logical_id}"
            seen += 1
    # Flow logs; with eks the control plane's, the bootstrap build's and its handlers'.
    assert seen >= (7 if "eks" in result.templates else 1)


def _logs_statement(result) -> dict:
    (key,) = resources(result.templates["storage"], "AWS::KMS::Key").values()
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    (statement,) = [s for s in statements if s.get("Sid") == "CloudWatchLogsOfThisAccountAndRegion"]
    return statement


def test_the_key_policy_lets_cloudwatch_logs_of_this_region_use_the_key(synth) -> None:
    statement = _logs_statement(synth(TWO_PLANS))  # an account-bound example
    assert statement["Effect"] == "Allow"
    assert statement["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    assert all("*" not in action for action in statement["Action"])
    assert {"kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"} <= set(statement["Action"])
    assert statement["Condition"] == {
        "ArnLike": {
            "kms:EncryptionContext:aws:logs:arn": "arn:aws:logs:us-east-1:111122223333:log-group:*"
        }
    }


@pytest.mark.parametrize(
    ("path", "kind"), [(DEFAULT_CONFIG, "eks"), (DEV, "storage")], ids=["with-eks", "without-eks"]
)
def test_flow_logs_are_built_under_the_storage_key(synth, path, kind) -> None:
    result = synth(path)
    assert resources(result.templates["network"], "AWS::EC2::FlowLog") == {}
    (flow_log,) = resources(result.templates[kind], "AWS::EC2::FlowLog").values()
    assert flow_log["Properties"]["TrafficType"] == "ALL"
    group = flow_log["Properties"]["LogGroupName"]["Ref"]
    logs = result.templates[kind]["Resources"][group]
    assert _key_of(result, kind, logs["Properties"]["KmsKeyId"]) == STORAGE_KEY_ARN
    assert logs["DeletionPolicy"] == "Retain"
    # Without eks the storage stack waits for the VPC; with eks it never does.
    assert ("network" in result.dependencies["storage"]) == (kind == "storage")


def test_the_capacity_stack_waits_for_the_key_of_its_log_groups(synth) -> None:
    assert synth(TWO_PLANS).dependencies["capacity"] == {"network", "storage"}


def _functions(template: dict, prefix: str) -> dict[str, dict]:
    return {
        k: f["Properties"]
        for k, f in resources(template, "AWS::Lambda::Function").items()
        if k.startswith(prefix)
    }


@pytest.mark.parametrize(
    ("kind", "prefix"),
    [("eks", "HyperPodDependenciesHandlers"), ("nova-base", "BedrockModelsHandlers")],
)
def test_handlers_run_in_the_private_subnets_in_a_group_of_their_own(synth, kind, prefix) -> None:
    result = synth(NOVA_JOBS)
    template = result.templates[kind]
    handlers = {k: f for k, f in _functions(template, prefix).items() if "Provider" not in k}
    assert len(handlers) == 2  # on_event and is_complete
    groups = resources(template, "AWS::EC2::SecurityGroup")
    private_subnets = {
        k for k in resources(result.templates["network"], "AWS::EC2::Subnet") if "Private" in k
    }
    for logical_id, function in handlers.items():
        vpc = function["VpcConfig"]
        ((group_ref,),) = [[g["Fn::GetAtt"][0] for g in vpc["SecurityGroupIds"]]]
        assert group_ref.startswith(prefix), logical_id  # the handlers' own group
        egress = groups[group_ref]["Properties"]["SecurityGroupEgress"]
        assert egress == [
            {
                "CidrIp": "0.0.0.0/0",
                "Description": "HTTPS to AWS service APIs",
                "FromPort": 443,
                "IpProtocol": "tcp",
                "ToPort": 443,
            }
        ]
        assert "SecurityGroupIngress" not in groups[group_ref]["Properties"]
        subnets = {producer_value(result, s)["Ref"] for s in vpc["SubnetIds"]}
        assert subnets == private_subnets, logical_id
    # The framework functions stay outside (they relay events, acknowledged).
    framework = {k: f for k, f in _functions(template, prefix).items() if "Provider" in k}
    assert framework and all("VpcConfig" not in f for f in framework.values())


def test_a_vpc_handler_may_manage_its_network_interfaces(synth) -> None:
    template = synth(DEFAULT_CONFIG).templates["eks"]
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for k, p in resources(template, "AWS::IAM::Policy").items()
        if k.startswith("HyperPodDependenciesHandlersOnEventRole")
    ]
    (statements,) = policies
    by_sid = {s.get("Sid"): s for s in statements}
    assert "ec2:CreateNetworkInterface" in by_sid["AttachToVpc"]["Action"]
    assert by_sid["DescribeNetworkInterfaces"]["Resource"] == "*"


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_every_function_reserves_concurrency(synth, path) -> None:
    for kind, template in synth(path).templates.items():
        for logical_id, function in resources(template, "AWS::Lambda::Function").items():
            reserved = function["Properties"].get("ReservedConcurrentExecutions")
            assert isinstance(reserved, int) and 1 <= reserved <= 10, f"{kind}/{logical_id}"


def test_a_provider_reserves_one_execution_per_resource_it_serves(synth) -> None:
    result = synth(TWO_PLANS)
    plans = _functions(result.templates["capacity"], "TrainingPlanProviderHandlers")
    assert len(plans) == 5  # on_event, is_complete and the three framework functions
    assert {f["ReservedConcurrentExecutions"] for f in plans.values()} == {2}
    bootstrap = _functions(result.templates["eks"], "HyperPodDependenciesHandlers")
    assert {f["ReservedConcurrentExecutions"] for f in bootstrap.values()} == {1}


def test_the_bootstrap_build_is_encrypted_with_the_storage_key(synth) -> None:
    result = synth(DEFAULT_CONFIG)
    (project,) = resources(result.templates["eks"], "AWS::CodeBuild::Project").values()
    key = project["Properties"]["EncryptionKey"]
    assert producer_value(result, key) == STORAGE_KEY_ARN
