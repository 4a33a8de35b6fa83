"""`novapod pipeline-check`, the pipeline's post-deploy step, against the fake control plane:
the command the synthesized step runs, under the role the synthesized step has."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from novapod.cli import main
from novapod.operate.pipeline_check import check_resource_problem, cluster_problem, stack_problem
from tests.fakes import iam
from tests.fakes.aws_control_plane import FakeControlPlane, StackResource
from tests.pipeline_synth import SynthesizedPipeline, synthesize_pipeline

ACCOUNT = "111122223333"  # the example pipeline's
STAGE = "mixed"
CLUSTER = "novapod-mixed"
NOVA_STACK = "novapod-mixed-nova"
CHECK_TYPE = "Custom::NovapodNovaEnvironment"


@pytest.fixture(scope="module")
def synthesized() -> SynthesizedPipeline:
    return synthesize_pipeline()


@pytest.fixture(scope="module")
def step(synthesized: SynthesizedPipeline) -> tuple[list[str], iam.Principal]:
    """The check step of stage `mixed`: its command line and its role."""
    (action,) = [a for a in synthesized.actions(STAGE) if a["Name"] == "CheckMixed"]
    (command,) = synthesized.buildspec(action)["phases"]["build"]["commands"]
    role = synthesized.role_of(action)
    statements = iam.role_statements(
        synthesized.template, role, account=ACCOUNT, region="us-east-1"
    )
    return shlex.split(command), iam.Principal(role, statements)


@pytest.fixture
def plane(control_plane: FakeControlPlane) -> Iterator[FakeControlPlane]:
    control_plane.reset()
    control_plane.account = control_plane.hyperpod.account = ACCOUNT
    yield control_plane
    control_plane.act_as(None)
    assert control_plane.violations == []


def check_id(synthesized: SynthesizedPipeline) -> str:
    nova = synthesized.stages[STAGE][NOVA_STACK]
    (logical_id,) = [k for k, r in nova["Resources"].items() if r["Type"] == CHECK_TYPE]
    return logical_id


def deployed(
    plane: FakeControlPlane,
    synthesized: SynthesizedPipeline,
    *,
    cluster: tuple[str | tuple[str, str], ...] = ("InService",),
    stack_status: str = "UPDATE_COMPLETE",
    check: StackResource | None = None,
) -> None:
    plane.hyperpod.add_cluster(CLUSTER, statuses=cluster)
    plane.add_stack(
        NOVA_STACK,
        status=stack_status,
        resources={check_id(synthesized): check or StackResource(CHECK_TYPE, "UPDATE_COMPLETE")},
    )


def run_step(plane: FakeControlPlane, step: tuple[list[str], iam.Principal]) -> int:
    """The step's command, as its CodeBuild role runs it."""
    argv, role = step
    assert argv[0] == "novapod"
    plane.act_as(role)
    try:
        return main(argv[1:])
    finally:
        plane.act_as(None)


def test_the_synthesized_step_passes_when_the_cluster_and_check_are_good(
    plane, synthesized, step, capsys
) -> None:
    deployed(plane, synthesized)
    assert run_step(plane, step) == 0
    out = capsys.readouterr().out
    assert f"ok: HyperPod cluster {CLUSTER} is InService" in out
    assert "ok: Nova environment check passed (UPDATE_COMPLETE at 2030-01-01" in out
    # Exactly these calls, with the names the step was synthesized with: the role's
    # statements allowed each (the fake authorizes them against the role).
    assert plane.calls_to("DescribeCluster") == [{"ClusterName": CLUSTER}]
    assert plane.calls_to("DescribeStacks") == [{"StackName": NOVA_STACK}]
    assert plane.calls_to("DescribeStackResource") == [
        {"StackName": NOVA_STACK, "LogicalResourceId": check_id(synthesized)}
    ]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("Updating", f"HyperPod cluster {CLUSTER} is Updating, not InService"),
        (
            ("Failed", "Lifecycle script failed on node i-0abc"),
            f"HyperPod cluster {CLUSTER} is Failed, not InService: Lifecycle script failed "
            "on node i-0abc",
        ),
    ],
)
def test_a_cluster_not_in_service_fails_the_step(  # noqa: PLR0917 - fixtures and parameters
    plane, synthesized, step, capsys, status, expected
) -> None:
    deployed(plane, synthesized, cluster=(status,))
    assert run_step(plane, step) == 1
    assert capsys.readouterr().err.splitlines() == [f"novapod pipeline-check: {expected}"]


def test_a_failed_check_resource_fails_the_step_with_its_reason(
    plane, synthesized, step, capsys
) -> None:
    failed = StackResource(
        CHECK_TYPE,
        "UPDATE_FAILED",
        reason="namespace nova-jobs is missing in EKS cluster novapod-mixed",
    )
    deployed(plane, synthesized, stack_status="UPDATE_ROLLBACK_COMPLETE", check=failed)
    assert run_step(plane, step) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"novapod pipeline-check: stack {NOVA_STACK} is UPDATE_ROLLBACK_COMPLETE, so its last "
        "deploy failed",
        f"novapod pipeline-check: the Nova environment check {check_id(synthesized)} is "
        "UPDATE_FAILED: namespace nova-jobs is missing in EKS cluster novapod-mixed (its log "
        "group is the NovaEnvironmentLogGroup output)",
    ]


def test_the_role_may_not_describe_another_stack(plane, synthesized, step, capsys) -> None:
    deployed(plane, synthesized)
    plane.add_stack("novapod-mixed-storage")
    argv, role = step
    other = [*argv[:-4], "--nova-stack", "novapod-mixed-storage", *argv[-2:]]
    assert run_step(plane, (other, role)) == 1
    err = capsys.readouterr().err
    assert "novapod pipeline-check: an AWS call failed: An error occurred (AccessDenied)" in err
    assert "cloudformation:DescribeStacks" in err


@pytest.mark.parametrize(
    ("sid", "action"),
    [("DescribeHyperPodCluster", "sagemaker:DescribeCluster"),
     ("DescribeNovaStack", "cloudformation:DescribeStacks")],
)  # fmt: skip
def test_each_statement_is_needed(  # noqa: PLR0917 - fixtures and parameters
    plane, synthesized, step, capsys, sid, action
) -> None:
    """The fake authorizes like IAM: without one statement the step is refused, so the
    passing test above proves the role's statements suffice."""
    deployed(plane, synthesized)
    argv, role = step
    assert run_step(plane, (argv, role.without(sid))) == 1
    err = capsys.readouterr().err
    assert "novapod pipeline-check: an AWS call failed" in err and action in err


def test_an_unknown_check_resource_is_the_services_validation_error(
    plane, synthesized, capsys
) -> None:
    deployed(plane, synthesized)
    code = main(
        ["pipeline-check", "--region", "us-east-1", "--cluster", CLUSTER,
         "--nova-stack", NOVA_STACK, "--check-resource", "Missing"]
    )  # fmt: skip
    assert code == 1
    assert f"Resource Missing does not exist for stack {NOVA_STACK}" in capsys.readouterr().err


def test_without_a_nova_stack_only_the_cluster_is_checked(plane, synthesized, capsys) -> None:
    deployed(plane, synthesized)
    assert main(["pipeline-check", "--region", "us-east-1", "--cluster", CLUSTER]) == 0
    assert plane.operations() == ["DescribeCluster"]


def test_nova_stack_and_check_resource_go_together(capsys) -> None:
    code = main(["pipeline-check", "--region", "us-east-1", "--cluster", CLUSTER,
                 "--nova-stack", NOVA_STACK])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (
        "novapod pipeline-check: --nova-stack and --check-resource go together; give both "
        "or neither\n"
    )


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"ClusterName": "c", "ClusterStatus": "InService"}, None),
        ({"ClusterName": "c", "ClusterStatus": "RollingBack"}, "HyperPod cluster c is "
         "RollingBack, not InService"),
    ],
)  # fmt: skip
def test_cluster_problem(answer: dict[str, Any], expected: str | None) -> None:
    assert cluster_problem(answer) == expected


@pytest.mark.parametrize(
    ("status", "ok"),
    [("CREATE_COMPLETE", True), ("UPDATE_COMPLETE", True), ("UPDATE_IN_PROGRESS", False),
     ("ROLLBACK_COMPLETE", False), ("UPDATE_ROLLBACK_COMPLETE", False)],
)  # fmt: skip
def test_stack_and_resource_statuses(status: str, ok: bool) -> None:
    assert (stack_problem({"StackName": "s", "StackStatus": status}) is None) is ok
    resource = {"LogicalResourceId": "R", "ResourceStatus": status}
    assert (check_resource_problem(resource) is None) is ok
