"""The fake enforces the handler roles' IAM statements taken from the synthesized template.

The shipped purchase and adopt examples are synthesized once per session (`synth`);
their capacity stacks give the TrainingPlan custom resource's properties (what
CloudFormation sends the handler) and the statements of the on-event and is-complete
roles, found through the Provider framework's function environment. Each scenario runs
on_event as the on-event role and is_complete as the is-complete role against the fake,
which refuses whatever those statements do not allow. Removing one statement makes the
scenario fail where a deploy would, and a refused purchase buys nothing.

The evaluator itself (wildcards, conditions, deny by default) is tested at the end.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from novapod.config import load_config
from novapod.constructs.training_plan.handler import index
from tests.conftest import ROOT, Synthesized, resources
from tests.fakes import iam
from tests.fakes.aws_control_plane import ACCOUNT, REGION, FakeControlPlane
from tests.fakes.iam import Principal, Request, Statement
from tests.handlers.conftest import POLL_SECONDS
from tests.handlers.lifecycle import Handler, Outcome, ProviderDriver, Stack
from tests.handlers.world import LEDGER_TABLE, World

PURCHASE_EXAMPLE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
ADOPT_EXAMPLE = ROOT / "config" / "examples" / "adopt-existing-plan.yaml"

# The examples' account and plans (literal, as a reviewer reads them in the YAML).
EXAMPLE_ACCOUNT = "111122223333"
BOUGHT = "novapod-nova-lite-lite-sft-50d13e0b"
BOUGHT_ARN = f"arn:aws:sagemaker:us-east-1:{EXAMPLE_ACCOUNT}:training-plan/{BOUGHT}"
ADOPTED = "team-p5-january"
ADOPTED_ARN = f"arn:aws:sagemaker:us-east-1:{EXAMPLE_ACCOUNT}:training-plan/{ADOPTED}"
# Before the purchase example's window (2027-07-05 .. 2027-08-29).
NOW = datetime(2026, 12, 1, tzinfo=UTC)
OFFER_START = datetime(2027, 7, 11, tzinfo=UTC)
RERUN = "re-run the deploy, which describes the plan first and never buys it twice"


@dataclass(frozen=True)
class ExampleRoles:
    """What the capacity stack of one example gives a handler scenario."""

    on_event: Principal
    is_complete: Principal
    props: dict[str, Any]  # the custom resource's properties, intrinsics left as they are
    account: str


# The storage stack's values the capacity stack reads (Fn::GetStackOutput), as the fake
# world has them: the purchase ledger's table (created by the handlers' fixture) and a key.
def storage_outputs(account: str) -> dict[str, str]:
    return {
        "PublishOutputFnGetAttPurchaseLedgerArn": (
            f"arn:aws:dynamodb:{REGION}:{account}:table/{LEDGER_TABLE}"
        ),
        "PublishOutputRefPurchaseLedger": LEDGER_TABLE,
        "PublishOutputFnGetAttEncryptionKeyArn": (
            f"arn:aws:kms:{REGION}:{account}:key/11111111-2222-3333-4444-555555555555"
        ),
    }


def with_storage_outputs(template: dict[str, Any], account: str) -> dict[str, Any]:
    """The template with the storage stack's outputs it reads replaced by their values."""
    outputs = storage_outputs(account)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            reference = value.get("Fn::GetStackOutput")
            if isinstance(reference, dict):
                name = str(reference.get("OutputName", ""))
                for prefix, resolved in outputs.items():
                    if name.startswith(prefix):
                        return resolved
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    resolved: dict[str, Any] = walk(template)
    return resolved


def handler_roles(result: Synthesized) -> ExampleRoles:
    config = load_config(result.config_path)
    account = config.account or ACCOUNT
    template = with_storage_outputs(result.templates["capacity"], account)
    (resource_id, resource), *others = resources(template, "Custom::NovapodTrainingPlan").items()
    assert not others, "one training plan per example"
    functions = iam.provider_functions(template, resource_id)

    def principal(function_id: str) -> Principal:
        role = iam.function_role(template, function_id)
        statements = iam.role_statements(template, role, account=account, region=config.region)
        return Principal(role, statements)

    props = {k: v for k, v in resource["Properties"].items() if k != "ServiceToken"}
    return ExampleRoles(
        principal(functions["on_event"]), principal(functions["is_complete"]), props, account
    )


@pytest.fixture(scope="session")
def purchase_roles(synth: Callable[[Any], Synthesized]) -> ExampleRoles:
    return handler_roles(synth(PURCHASE_EXAMPLE))


@pytest.fixture(scope="session")
def adopt_roles(synth: Callable[[Any], Synthesized]) -> ExampleRoles:
    return handler_roles(synth(ADOPT_EXAMPLE))


def as_role(plane: FakeControlPlane, principal: Principal, handler: Handler) -> Handler:
    """The handler as its Lambda runs it: every AWS call made with its role."""

    def run(event: dict[str, Any], context: Any) -> Any:
        plane.act_as(principal)
        try:
            return handler(event, context)
        finally:
            plane.act_as(None)

    return run


def strict_stack(
    world: World, *, on_event: Principal, is_complete: Principal, account: str
) -> Stack:
    world.plane.account = account
    world.clock.moment = NOW
    driver = ProviderDriver(
        as_role(world.plane, on_event, index.on_event),
        as_role(world.plane, is_complete, index.is_complete),
        advance_clock=world.clock.advance,
        query_interval_seconds=POLL_SECONDS,
    )
    return Stack(driver)


def example_props(roles: ExampleRoles, **overrides: Any) -> dict[str, Any]:
    """The template's properties with our subnets for the cross-stack references."""
    props = copy.deepcopy(roles.props)
    props["SubnetIdsByZoneId"] = {
        zone: [f"subnet-{zone}"] for zone in sorted(props["SubnetIdsByZoneId"])
    }
    props.update(overrides)
    return props


def offer_lite(plane: FakeControlPlane) -> None:
    """What the purchase example asks for: 4 x p5 for 144 h in use1-az6, within its cap."""
    plane.add_offering(
        "tpo-lite",
        zones=["us-east-1b"],  # use1-az6 in the world's zones
        start=OFFER_START,
        fee="55000.00",
        duration_hours=144,
    )


def denied(role: Principal, action: str, resource: str) -> str:
    return (
        f"AccessDeniedException: User: arn:aws:sts::{EXAMPLE_ACCOUNT}:assumed-role/"
        f"{role.role_name}/handler is not authorized to perform: {action} on resource: "
        f"{resource} because no identity-based policy allows the {action} action"
    )


def purchase(
    world: World, roles: ExampleRoles, *, on_event: str = "", is_complete: str = "", **props: Any
) -> Outcome:
    """Create the purchase example's plan with its roles, less the named statements."""
    offer_lite(world.plane)
    stack = strict_stack(
        world,
        on_event=roles.on_event.without(on_event) if on_event else roles.on_event,
        is_complete=roles.is_complete.without(is_complete) if is_complete else roles.is_complete,
        account=roles.account,
    )
    return stack.create(example_props(roles, **props))


# --- the scenarios with the synthesized statements ---------------------------------------


def test_the_handler_roles_come_from_the_synthesized_template(
    purchase_roles: ExampleRoles, adopt_roles: ExampleRoles
) -> None:
    assert purchase_roles.on_event.sids() == [
        "",  # the log group's statement
        "PurchaseLedger",  # claims in the ledger, this environment's items only
        "PurchaseLedgerKey",
        "BuyOwnPlans",
        "TagOnPurchaseOnly",
        "DescribeOwnPlans",
        "SearchOfferingsAndZones",
    ]
    assert purchase_roles.is_complete.sids() == [
        "",
        "PurchaseLedger",  # settles what on_event left unsettled
        "PurchaseLedgerKey",
        "DescribeOwnAndAdoptedPlans",
        "MapZoneNamesToIds",
    ]
    assert adopt_roles.on_event.sids()[-1] == "DescribeAdoptedPlans"
    assert purchase_roles.props["PlanName"] == BOUGHT
    assert adopt_roles.props["ExistingArn"] == ADOPTED_ARN


def test_purchase_example_buys_and_waits_with_its_own_roles(
    world: World, purchase_roles: ExampleRoles
) -> None:
    world.plane.script_statuses(BOUGHT, ["Pending", "Pending", "Scheduled"])
    outcome = purchase(world, purchase_roles)
    assert outcome.ok, outcome.reason
    assert outcome.polls == 3
    assert outcome.data == {
        "PlanArn": BOUGHT_ARN,
        "PlanName": BOUGHT,
        "PurchasedAt": "2026-12-01T00:00:00Z",
        "Status": "Scheduled",
        "AvailabilityZone": "us-east-1b",
        "AvailabilityZoneId": "use1-az6",
        "SubnetIds": "subnet-use1-az6",
        "SubnetId": "subnet-use1-az6",
        "StartTime": "2027-07-11T00:00:00Z",
        "EndTime": "2027-07-17T00:00:00Z",
        "UpfrontFee": "55000.00",
        "CurrencyCode": "USD",
    }
    assert world.plane.create_counts() == {BOUGHT: 1}
    assert world.plane.tags[BOUGHT_ARN] == [
        {"Key": "novapod:environment", "Value": "nova-lite"},
        {"Key": "novapod:plan", "Value": "lite-sft"},
    ]


@pytest.mark.parametrize(
    ("sid", "action", "resource"),
    [
        ("BuyOwnPlans", "sagemaker:CreateTrainingPlan", BOUGHT_ARN),
        ("TagOnPurchaseOnly", "sagemaker:AddTags", BOUGHT_ARN),
    ],
)
def test_purchase_refused_without_a_purchase_statement_buys_nothing(
    world: World, purchase_roles: ExampleRoles, sid: str, action: str, resource: str
) -> None:
    outcome = purchase(world, purchase_roles, on_event=sid)
    detail = denied(purchase_roles.on_event, action, resource)
    assert outcome.reason == (
        f"CreateTrainingPlan for training plan {BOUGHT} was refused ({detail}), so nothing "
        "was bought; the handler's role may not buy this plan; fix its permissions, then "
        f"{RERUN}"
    )
    assert world.plane.create_counts() == {BOUGHT: 1}  # sent once, refused
    assert world.plane.plans == {}


def test_purchase_without_the_describe_statement_fails_before_buying(
    world: World, purchase_roles: ExampleRoles
) -> None:
    outcome = purchase(world, purchase_roles, on_event="DescribeOwnPlans")
    detail = denied(purchase_roles.on_event, "sagemaker:DescribeTrainingPlan", BOUGHT_ARN)
    assert outcome.reason == f"DescribeTrainingPlan for training plan {BOUGHT} failed ({detail})"
    assert "CreateTrainingPlan" not in world.plane.operations()
    assert world.plane.plans == {}


def test_purchase_without_the_search_statement_fails_before_buying(
    world: World, purchase_roles: ExampleRoles
) -> None:
    outcome = purchase(world, purchase_roles, on_event="SearchOfferingsAndZones")
    detail = denied(purchase_roles.on_event, "sagemaker:SearchTrainingPlanOfferings", "*")
    assert outcome.reason == f"searching offerings for training plan {BOUGHT} failed ({detail})"
    assert "CreateTrainingPlan" not in world.plane.operations()


@pytest.mark.parametrize(
    ("sid", "error"),
    [
        ("DescribeOwnAndAdoptedPlans", None),  # the is-complete role's AccessDenied
        (
            "MapZoneNamesToIds",
            "DescribeAvailabilityZones failed (UnauthorizedOperation: You are not authorized "
            "to perform this operation.)",
        ),
    ],
)
def test_waiting_without_an_is_complete_statement_never_completes(
    world: World, purchase_roles: ExampleRoles, sid: str, error: str | None
) -> None:
    outcome = purchase(world, purchase_roles, is_complete=sid, PendingTimeoutSeconds="300")
    last_error = error or denied(
        purchase_roles.is_complete, "sagemaker:DescribeTrainingPlan", BOUGHT_ARN
    )
    assert outcome.reason.startswith(f"training plan {BOUGHT} is bought, but ")
    assert f"until the pending timeout ({last_error}); pay the invoice" in outcome.reason
    assert world.plane.create_counts() == {BOUGHT: 1}  # bought once, by on_event


def adopt(world: World, roles: ExampleRoles, *, on_event: str = "") -> Outcome:
    """Create the adopt example's plan (8 x p5 in use1-az1, Active) with its roles."""
    world.plane.account = roles.account
    offering = world.plane.add_offering(
        "tpo-team", zones=["us-east-1c"], start=OFFER_START, fee="99000.00", instance_count=8
    )
    world.plane.add_plan(ADOPTED, offering, statuses=["Active"])
    stack = strict_stack(
        world,
        on_event=roles.on_event.without(on_event) if on_event else roles.on_event,
        is_complete=roles.is_complete,
        account=roles.account,
    )
    return stack.create(example_props(roles))


def test_adopt_example_adopts_with_its_own_roles(world: World, adopt_roles: ExampleRoles) -> None:
    outcome = adopt(world, adopt_roles)
    assert outcome.ok, outcome.reason
    assert (outcome.data["PlanArn"], outcome.data["Status"]) == (ADOPTED_ARN, "Active")
    assert outcome.data["SubnetId"] == "subnet-use1-az1"
    assert world.plane.create_counts() == {}


def test_adopt_without_the_adopted_plan_statement_fails(
    world: World, adopt_roles: ExampleRoles
) -> None:
    outcome = adopt(world, adopt_roles, on_event="DescribeAdoptedPlans")
    detail = denied(adopt_roles.on_event, "sagemaker:DescribeTrainingPlan", ADOPTED_ARN)
    assert outcome.reason == f"DescribeTrainingPlan for training plan {ADOPTED} failed ({detail})"
    assert world.plane.operations() == ["DescribeTrainingPlan"]


# --- describe and search refused on demand (without IAM) ------------------------------


@pytest.mark.parametrize(
    ("code", "status"), [("AccessDeniedException", 400), ("InternalFailure", 500)]
)
def test_a_describe_that_keeps_failing_before_a_purchase_buys_nothing(
    world: World, code: str, status: int
) -> None:
    # Three attempts: botocore retries a 5xx; a refusal is not retried.
    world.plane.error("DescribeTrainingPlan", code, status=status, times=3, message="no")
    outcome = world.stack().create(world.props())
    assert not outcome.ok
    assert outcome.reason.startswith("DescribeTrainingPlan for training plan ")
    assert f"failed ({code}: no)" in outcome.reason
    assert "CreateTrainingPlan" not in world.plane.operations()
    assert world.plane.plans == {}


def test_a_refused_search_buys_nothing(world: World) -> None:
    world.plane.error("SearchTrainingPlanOfferings", "AccessDeniedException", message="no")
    outcome = world.stack().create(world.props())
    assert outcome.reason.endswith("failed (AccessDeniedException: no)")
    assert "CreateTrainingPlan" not in world.plane.operations()


# --- the fake's answers to a refused call --------------------------------------------


def test_refusals_have_the_services_error_shapes(world: World) -> None:
    nobody = Principal("Nobody", ())
    world.plane.act_as(nobody)
    with pytest.raises(ClientError) as sagemaker_error:
        boto3.client("sagemaker").create_training_plan(
            TrainingPlanName="p", TrainingPlanOfferingId="tpo-cheap"
        )
    with pytest.raises(ClientError) as ec2_error:
        boto3.client("ec2").describe_availability_zones()
    world.plane.act_as(None)
    answers = [
        (e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"])
        for e in (sagemaker_error, ec2_error)
    ]
    assert answers == [("AccessDeniedException", 400), ("UnauthorizedOperation", 403)]
    assert sagemaker_error.value.response["Error"]["Message"] == (
        f"User: arn:aws:sts::{ACCOUNT}:assumed-role/Nobody/handler is not authorized to "
        f"perform: sagemaker:CreateTrainingPlan on resource: arn:aws:sagemaker:{REGION}:"
        f"{ACCOUNT}:training-plan/p because no identity-based policy allows the "
        "sagemaker:CreateTrainingPlan action"
    )
    assert world.plane.plans == {}  # a refused call is never worked


def test_a_purchase_asks_for_its_capacities_and_tags(world: World) -> None:
    plan = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/p"
    capacity = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/p-"
    asked = world.plane._authorizations(
        "sagemaker",
        "CreateTrainingPlan",
        {"TrainingPlanName": "p", "TrainingPlanOfferingId": "tpo-split", "Tags": [{"Key": "k"}]},
    )
    assert asked == [
        Request("sagemaker:CreateTrainingPlan", plan),
        Request("sagemaker:CreateReservedCapacity", capacity + "0"),
        Request("sagemaker:CreateReservedCapacity", capacity + "1"),
        Request("sagemaker:AddTags", plan, {"sagemaker:TaggingAction": "CreateTrainingPlan"}),
        Request(
            "sagemaker:AddTags",
            capacity + "0",
            {"sagemaker:TaggingAction": "CreateReservedCapacity"},
        ),
        Request(
            "sagemaker:AddTags",
            capacity + "1",
            {"sagemaker:TaggingAction": "CreateReservedCapacity"},
        ),
    ]


# --- the evaluator -----------------------------------------------------------------------


def allow(actions: str, resources: str, **conditions: dict[str, list[str]]) -> Statement:
    parsed = {op: {k: tuple(v) for k, v in keys.items()} for op, keys in conditions.items()}
    return Statement("Allow", (actions,), (resources,), parsed)


PLAN_ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-dev-main-1"


@pytest.mark.parametrize(
    ("statement", "request_", "decision"),
    [
        # Actions: wildcards, case-insensitive.
        (
            allow("sagemaker:Describe*", "*"),
            Request("sagemaker:DescribeTrainingPlan", "*"),
            "allowed",
        ),
        (
            allow("SageMaker:describetrainingplan", "*"),
            Request("sagemaker:DescribeTrainingPlan", "*"),
            "allowed",
        ),
        (
            allow("sagemaker:Describe*", "*"),
            Request("sagemaker:CreateTrainingPlan", "*"),
            "implicit_deny",
        ),
        (
            allow("sagemaker:DescribeTrainingPla?", "*"),
            Request("sagemaker:DescribeTrainingPlan", "*"),
            "allowed",
        ),
        # Resources: wildcards, case-sensitive, whole ARN.
        (
            allow(
                "sagemaker:*",
                "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-dev-*",
            ),
            Request("sagemaker:DescribeTrainingPlan", PLAN_ARN),
            "allowed",
        ),
        (
            allow(
                "sagemaker:*",
                "arn:aws:sagemaker:us-east-1:111122223333:training-plan/Novapod-dev-*",
            ),
            Request("sagemaker:DescribeTrainingPlan", PLAN_ARN),
            "implicit_deny",
        ),
        (
            allow(
                "sagemaker:*", "arn:aws:sagemaker:us-east-1:111122223333:training-plan/novapod-dev"
            ),
            Request("sagemaker:DescribeTrainingPlan", PLAN_ARN),
            "implicit_deny",
        ),
        (
            allow("sagemaker:*", "arn:aws:sagemaker:*:*:training-plan/*"),
            Request("sagemaker:DescribeTrainingPlan", PLAN_ARN),
            "allowed",
        ),
        # `[` is literal in IAM, not an fnmatch character class.
        (
            allow("sagemaker:*", "arn:aws:sagemaker:*:training-plan/[n]*"),
            Request("sagemaker:DescribeTrainingPlan", PLAN_ARN),
            "implicit_deny",
        ),
        # A specific ARN does not grant an action that is authorized on '*'.
        (
            allow("sagemaker:*", PLAN_ARN),
            Request("sagemaker:SearchTrainingPlanOfferings", "*"),
            "implicit_deny",
        ),
        # Conditions: StringEquals (values are alternatives), StringLike, a missing key.
        (
            allow(
                "sagemaker:AddTags",
                "*",
                StringEquals={
                    "sagemaker:TaggingAction": ["CreateTrainingPlan", "CreateReservedCapacity"]
                },
            ),
            Request(
                "sagemaker:AddTags", "x", {"sagemaker:TaggingAction": "CreateReservedCapacity"}
            ),
            "allowed",
        ),
        (
            allow(
                "sagemaker:AddTags",
                "*",
                StringEquals={"sagemaker:TaggingAction": ["CreateTrainingPlan"]},
            ),
            Request("sagemaker:AddTags", "x", {"sagemaker:TaggingAction": "createtrainingplan"}),
            "implicit_deny",
        ),
        (
            allow(
                "sagemaker:AddTags",
                "*",
                StringEquals={"sagemaker:TaggingAction": ["CreateTrainingPlan"]},
            ),
            Request("sagemaker:AddTags", "x"),
            "implicit_deny",
        ),
        (
            allow("sagemaker:AddTags", "*", StringLike={"sagemaker:TaggingAction": ["Create*"]}),
            Request("sagemaker:AddTags", "x", {"sagemaker:TaggingAction": "CreateTrainingPlan"}),
            "allowed",
        ),
        (
            allow("sagemaker:AddTags", "*", StringEquals={"a": ["1"], "b": ["2"]}),
            Request("sagemaker:AddTags", "x", {"a": "1", "b": "3"}),
            "implicit_deny",
        ),
        # An operator the fake does not evaluate never allows.
        (
            allow("sagemaker:AddTags", "*", StringNotEquals={"sagemaker:TaggingAction": ["Other"]}),
            Request("sagemaker:AddTags", "x", {"sagemaker:TaggingAction": "CreateTrainingPlan"}),
            "implicit_deny",
        ),
        (
            allow(
                "sagemaker:AddTags",
                "*",
                StringNotEqualsIfExists={"sagemaker:TaggingAction": ["Other"]},
            ),
            Request("sagemaker:AddTags", "x", {"sagemaker:TaggingAction": "CreateTrainingPlan"}),
            "implicit_deny",
        ),
        # StringEqualsIfExists: as StringEquals when the request has the key, else it holds.
        (
            allow(
                "sagemaker:DescribeCluster", "*", StringEqualsIfExists={"aws:ResourceTag/e": ["a"]}
            ),
            Request("sagemaker:DescribeCluster", "x", {"aws:ResourceTag/e": "a"}),
            "allowed",
        ),
        (
            allow(
                "sagemaker:DescribeCluster", "*", StringEqualsIfExists={"aws:ResourceTag/e": ["a"]}
            ),
            Request("sagemaker:DescribeCluster", "x", {"aws:ResourceTag/e": "b"}),
            "implicit_deny",
        ),
        (
            allow(
                "sagemaker:DescribeCluster", "*", StringEqualsIfExists={"aws:ResourceTag/e": ["a"]}
            ),
            Request("sagemaker:DescribeCluster", "x"),
            "allowed",
        ),
    ],
)
def test_one_statement(statement: Statement, request_: Request, decision: str) -> None:
    assert iam.authorize([statement], request_) == decision


def test_deny_by_default_and_an_explicit_deny_wins() -> None:
    request_ = Request("sagemaker:CreateTrainingPlan", PLAN_ARN)
    assert iam.authorize([], request_) == "implicit_deny"
    deny = Statement("Deny", ("sagemaker:Create*",), ("*",))
    assert iam.authorize([allow("sagemaker:*", "*"), deny], request_) == "explicit_deny"
    # A Deny whose condition the fake cannot evaluate applies (it refuses either way).
    unsure = Statement("Deny", ("sagemaker:*",), ("*",), {"ArnLike": {"aws:SourceArn": ("x",)}})
    assert iam.authorize([allow("sagemaker:*", "*"), unsure], request_) == "explicit_deny"


def test_statements_are_read_from_every_policy_of_the_role_and_resolved() -> None:
    arn = {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":sagemaker:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":training-plan/*",
            ],
        ]
    }
    template = {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "Policies": [
                        {
                            "PolicyDocument": {
                                "Statement": [
                                    {"Effect": "Allow", "Action": "a:Inline", "Resource": arn}
                                ]
                            }
                        }
                    ],
                    "ManagedPolicyArns": [{"Ref": "Managed"}],
                },
            },
            "Default": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "Roles": [{"Ref": "Role"}],
                    "PolicyDocument": {
                        "Statement": [
                            {
                                "Sid": "Logs",
                                "Effect": "Allow",
                                "Action": ["logs:PutLogEvents"],
                                "Resource": {"Fn::GetAtt": ["Logs", "Arn"]},
                            }
                        ]
                    },
                },
            },
            "Managed": {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {
                    "PolicyDocument": {
                        "Statement": {
                            "Effect": "Allow",
                            "Action": "a:Managed",
                            "Resource": {
                                "Fn::Sub": "arn:${AWS::Partition}:s3:::b-${AWS::AccountId}"
                            },
                        }
                    }
                },
            },
            "Other": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "Roles": [{"Ref": "OtherRole"}],
                    "PolicyDocument": {
                        "Statement": [{"Effect": "Allow", "Action": "a:Other", "Resource": "*"}]
                    },
                },
            },
        }
    }
    statements = iam.role_statements(template, "Role", account="444455556666", region="eu-west-1")
    assert [(s.actions, s.resources) for s in statements] == [
        (("a:Inline",), ("arn:aws:sagemaker:eu-west-1:444455556666:training-plan/*",)),
        (("logs:PutLogEvents",), ("<unresolved {'Fn::GetAtt': ['Logs', 'Arn']}>",)),
        (("a:Managed",), ("arn:aws:s3:::b-444455556666",)),
    ]
    # What cannot be resolved matches no request, not even one on '*'.
    assert iam.authorize(statements, Request("logs:PutLogEvents", "*")) == "implicit_deny"


def test_a_policy_the_fake_cannot_read_is_refused() -> None:
    template = {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {"ManagedPolicyArns": ["arn:aws:iam::aws:policy/ReadOnlyAccess"]},
            }
        }
    }
    with pytest.raises(ValueError, match="managed policy the fake cannot read"):
        iam.role_statements(template, "Role", account="1", region="r")
    with pytest.raises(ValueError, match="NotAction"):
        iam.parse_statement({"Effect": "Allow", "NotAction": "s3:*", "Resource": "*"})
