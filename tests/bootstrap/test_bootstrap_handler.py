"""ClusterBootstrap handler: which build each CloudFormation event starts, and how a
finished build is reported. CodeBuild is botocore's Stubber on a real client, so the
request shapes are checked against the service model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from novapod.constructs.cluster_bootstrap.buildspec import access_variables, pin_variables
from novapod.constructs.cluster_bootstrap.handler import decisions, index
from novapod.constructs.cluster_bootstrap.handler.decisions import BootstrapError
from novapod.nova.kubernetes import nova_access
from novapod.pins import default_pins

PROJECT = "NovapodBootstrapProject"
CLUSTER = "novapod-dev-eks"
PHYSICAL_ID = f"{CLUSTER}-hyperpod-dependencies"
BUILD_ID = f"{PROJECT}:0b6f1a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
LOG_LINK = "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEvent:group=x"
PINS = default_pins()
PROPS: dict[str, Any] = {
    "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:framework",
    "ProjectName": PROJECT,
    "ClusterName": CLUSTER,
    "PinsSha256": PINS.digest(),
    "ScriptSha256": "b" * 64,
    "InstallRigDependencies": "true",
    "BuildEnvironment": pin_variables(PINS, mode="install", rig=True, region="us-east-1"),
}


@pytest.fixture
def codebuild(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    client = boto3.client(
        "codebuild",
        region_name="us-east-1",
        aws_access_key_id="AKIDFAKE",
        aws_secret_access_key="fake",
    )
    monkeypatch.setattr(index, "_client", lambda: client)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def event(request_type: str, props: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "RequestType": request_type,
        "RequestId": "5d4f3c2b-1a09-4876-9543-210fedcba987",
        "ResourceProperties": props or PROPS,
        **extra,
    }
    return body


def expect_start(
    stubber: Stubber,
    mode: str,
    *,
    cluster: str = CLUSTER,
    environment: dict[str, str] | None = None,
) -> None:
    """StartBuild with the event's pins as overrides, plus its mode and cluster."""
    variables = {
        **(environment or PROPS["BuildEnvironment"]),
        "BOOTSTRAP_MODE": mode,
        "CLUSTER_NAME": cluster,
    }
    stubber.add_response(
        "start_build",
        {"build": {"id": BUILD_ID, "buildStatus": "IN_PROGRESS"}},
        expected_params={
            "projectName": PROJECT,
            "environmentVariablesOverride": [
                {"name": k, "value": v, "type": "PLAINTEXT"} for k, v in sorted(variables.items())
            ],
            "idempotencyToken": "novapod-5d4f3c2b-1a09-4876-9543-210fedcba987",
        },
    )


def build_record(status: str, **fields: Any) -> dict[str, Any]:
    return {"builds": [{"id": BUILD_ID, "buildStatus": status, **fields}]}


# --- on_event ---------------------------------------------------------------------------


def test_create_starts_an_install_build(codebuild: Stubber) -> None:
    expect_start(codebuild, "install")
    result = index.on_event(event("Create"), None)
    assert result["PhysicalResourceId"] == PHYSICAL_ID
    assert result["BuildId"] == BUILD_ID
    assert result["Action"] == "install"
    assert result["Data"] == {"BuildId": BUILD_ID}


def test_update_with_nothing_changed_starts_no_build(codebuild: Stubber) -> None:
    changed_token = {**PROPS, "ServiceToken": "arn:aws:lambda:us-east-1:1:function:other"}
    result = index.on_event(
        event(
            "Update",
            changed_token,
            PhysicalResourceId=PHYSICAL_ID,
            OldResourceProperties=PROPS,
        ),
        None,
    )
    assert result == {"PhysicalResourceId": PHYSICAL_ID, "Data": {"BuildId": ""}}
    assert index.is_complete({**event("Update"), **result}, None) == {"IsComplete": True}


OLD_PINS = {
    "PinsSha256": "c" * 64,
    "BuildEnvironment": {**PROPS["BuildEnvironment"], "PINS_SHA256": "c" * 64},
}


@pytest.mark.parametrize(
    "old_change",
    [OLD_PINS, {"ScriptSha256": "d" * 64}, {"InstallRigDependencies": "false"}],
    ids=["pins", "script", "rig-flag"],
)
def test_update_that_changes_what_is_installed_starts_an_upgrade(
    codebuild: Stubber, old_change: dict[str, str]
) -> None:
    expect_start(codebuild, "install")
    result = index.on_event(
        event(
            "Update",
            PhysicalResourceId=PHYSICAL_ID,
            OldResourceProperties={**PROPS, **old_change},
        ),
        None,
    )
    assert result["PhysicalResourceId"] == PHYSICAL_ID
    assert result["BuildId"] == BUILD_ID


def test_update_to_another_cluster_installs_there_under_a_new_id(codebuild: Stubber) -> None:
    expect_start(codebuild, "install", cluster="novapod-new-eks")
    result = index.on_event(
        event(
            "Update",
            {**PROPS, "ClusterName": "novapod-new-eks"},
            PhysicalResourceId=PHYSICAL_ID,
            OldResourceProperties=PROPS,
        ),
        None,
    )
    assert result["PhysicalResourceId"] == "novapod-new-eks-hyperpod-dependencies"


def with_nova(namespace: str) -> dict[str, Any]:
    """PROPS of a config whose Nova jobs run in `namespace`, as the construct renders them."""
    variables = access_variables(nova_access(namespace))
    return {
        **PROPS,
        "KubernetesSha256": variables["NOVA_ACCESS_SHA256"],
        "BuildEnvironment": {**PROPS["BuildEnvironment"], **variables},
    }


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (with_nova("team-a"), with_nova("team-b")),  # the manifests changed
        (PROPS, with_nova("kubeflow")),  # jobs added (or a resource from before them)
        (with_nova("kubeflow"), PROPS),  # jobs removed: the build deletes the objects
    ],
    ids=["namespace-changed", "jobs-added", "jobs-removed"],
)
def test_update_that_changes_the_kubernetes_manifests_starts_a_build_with_the_new_ones(
    codebuild: Stubber, old: dict[str, Any], new: dict[str, Any]
) -> None:
    expect_start(codebuild, "install", environment=new["BuildEnvironment"])
    result = index.on_event(
        event("Update", new, PhysicalResourceId=PHYSICAL_ID, OldResourceProperties=old), None
    )
    assert result["BuildId"] == BUILD_ID
    assert result["Action"] == "install"


def test_only_a_change_of_the_kubernetes_manifests_starts_a_build() -> None:
    team_a = decisions.parse_properties(with_nova("team-a"))
    again = decisions.parse_properties({**with_nova("team-a"), "ServiceToken": "other"})
    team_b = decisions.parse_properties(with_nova("team-b"))
    assert team_a.kubernetes_sha256 == with_nova("team-a")["KubernetesSha256"]
    assert decisions.decide("Update", again, team_a) == "none"
    assert decisions.decide("Update", team_b, team_a) == "install"
    # A resource from before the manifests (or without jobs) has none.
    assert decisions.parse_properties(PROPS).kubernetes_sha256 == ""


def test_manifests_that_do_not_match_their_digest_are_refused(codebuild: Stubber) -> None:
    props = with_nova("kubeflow")
    stale = {**props, "KubernetesSha256": "e" * 64}
    with pytest.raises(decisions.PropertyError, match="does not carry KubernetesSha256"):
        index.on_event(event("Create", stale), None)
    with pytest.raises(decisions.PropertyError, match="KubernetesSha256 must be a string"):
        index.on_event(event("Create", {**props, "KubernetesSha256": 1}), None)


def test_delete_starts_an_uninstall_build(codebuild: Stubber) -> None:
    expect_start(codebuild, "delete")
    result = index.on_event(event("Delete", PhysicalResourceId=PHYSICAL_ID), None)
    assert result["PhysicalResourceId"] == PHYSICAL_ID
    assert result["Action"] == "delete"


def test_each_build_gets_the_pins_of_its_own_event(codebuild: Stubber) -> None:
    """A rollback (Update back to older pins) and the Delete of a resource carrying
    older pins build with those pins, whatever the project's buildspec holds now."""
    older = {**PROPS, **OLD_PINS}
    expect_start(codebuild, "install", environment=OLD_PINS["BuildEnvironment"])
    index.on_event(
        event("Update", older, PhysicalResourceId=PHYSICAL_ID, OldResourceProperties=PROPS),
        None,
    )
    expect_start(codebuild, "delete", environment=OLD_PINS["BuildEnvironment"])
    index.on_event(event("Delete", older, PhysicalResourceId=PHYSICAL_ID), None)


def test_delete_with_unreadable_properties_does_not_block_deletion(codebuild: Stubber) -> None:
    broken = {**PROPS, "BuildEnvironment": "not a mapping"}
    result = index.on_event(event("Delete", broken, PhysicalResourceId=PHYSICAL_ID), None)
    assert result == {"PhysicalResourceId": PHYSICAL_ID, "Data": {"BuildId": ""}}


def test_delete_after_a_create_that_never_started_removes_nothing(codebuild: Stubber) -> None:
    foreign = "5d4f3c2b-1a09-4876-9543-210fedcba987"  # the framework's ID of a failed Create
    result = index.on_event(event("Delete", PhysicalResourceId=foreign), None)
    assert result == {"PhysicalResourceId": foreign, "Data": {"BuildId": ""}}


def test_delete_whose_build_cannot_start_does_not_fail(codebuild: Stubber) -> None:
    codebuild.add_client_error("start_build", "ResourceNotFoundException", "no such project")
    result = index.on_event(event("Delete", PhysicalResourceId=PHYSICAL_ID), None)
    assert result == {"PhysicalResourceId": PHYSICAL_ID, "Data": {"BuildId": ""}}


def test_create_whose_build_cannot_start_fails_clearly(codebuild: Stubber) -> None:
    codebuild.add_client_error("start_build", "AccountLimitExceededException", "too many builds")
    with pytest.raises(BootstrapError) as error:
        index.on_event(event("Create"), None)
    assert str(error.value) == (
        f"could not start the HyperPod dependencies install build in CodeBuild project {PROJECT} "
        "(AccountLimitExceededException: too many builds)"
    )


def test_invalid_properties_are_named(codebuild: Stubber) -> None:
    with pytest.raises(decisions.PropertyError, match="InstallRigDependencies must be"):
        index.on_event(event("Create", {**PROPS, "InstallRigDependencies": "yes"}), None)
    with pytest.raises(decisions.PropertyError, match="ClusterName must be a non-empty"):
        index.on_event(event("Create", {**PROPS, "ClusterName": ""}), None)
    with pytest.raises(decisions.PropertyError, match="BuildEnvironment must map names"):
        index.on_event(event("Create", {**PROPS, "BuildEnvironment": {"A": 1}}), None)
    with pytest.raises(decisions.PropertyError, match="does not carry PinsSha256"):
        index.on_event(event("Create", {**PROPS, "PinsSha256": "f" * 64}), None)


# --- is_complete ------------------------------------------------------------------------


def started(action: str = "install", request_type: str = "Create") -> dict[str, Any]:
    return {**event(request_type), "BuildId": BUILD_ID, "Action": action}


def test_a_running_build_is_not_complete(codebuild: Stubber) -> None:
    codebuild.add_response(
        "batch_get_builds",
        build_record("IN_PROGRESS", currentPhase="BUILD"),
        expected_params={"ids": [BUILD_ID]},
    )
    assert index.is_complete(started(), None) == {"IsComplete": False}


def test_a_succeeded_build_is_complete(codebuild: Stubber) -> None:
    codebuild.add_response("batch_get_builds", build_record("SUCCEEDED"), {"ids": [BUILD_ID]})
    assert index.is_complete(started(), None) == {"IsComplete": True}


@pytest.mark.parametrize("status", ["FAILED", "FAULT", "STOPPED", "TIMED_OUT"])
def test_a_failed_install_build_raises_with_its_id_and_log(codebuild: Stubber, status: str) -> None:
    codebuild.add_response(
        "batch_get_builds",
        build_record(
            status,
            currentPhase="COMPLETED",
            phases=[
                {"phaseType": "INSTALL", "phaseStatus": "SUCCEEDED"},
                {
                    "phaseType": "BUILD",
                    "phaseStatus": status,
                    "contexts": [
                        {
                            "statusCode": "COMMAND_EXECUTION_ERROR",
                            "message": "Error while executing command: bash bootstrap.sh. "
                            "Reason: exit status 1",
                        }
                    ],
                },
            ],
            logs={"groupName": "/novapod/bootstrap", "streamName": "s", "deepLink": LOG_LINK},
        ),
        {"ids": [BUILD_ID]},
    )
    with pytest.raises(BootstrapError) as error:
        index.is_complete(started(), None)
    message = str(error.value)
    assert message.startswith(f"HyperPod dependencies install build {BUILD_ID} ended {status}")
    assert "BUILD: Error while executing command: bash bootstrap.sh" in message
    assert message.endswith(f"see its log: {LOG_LINK}")


def test_failure_message_without_a_deep_link_names_the_log_group() -> None:
    message = decisions.failure_message(
        {"id": BUILD_ID, "buildStatus": "FAULT", "logs": {"groupName": "/g", "streamName": "s"}},
        "install",
    )
    assert message.endswith("see its log: log group /g, stream s")


def test_a_failed_uninstall_is_logged_and_the_delete_goes_on(
    codebuild: Stubber, capsys: pytest.CaptureFixture[str]
) -> None:
    codebuild.add_response(
        "batch_get_builds",
        build_record("FAILED", logs={"deepLink": LOG_LINK}),
        {"ids": [BUILD_ID]},
    )
    assert index.is_complete(started("delete", "Delete"), None) == {"IsComplete": True}
    assert '"decision": "uninstall-failed"' in capsys.readouterr().out


def test_an_unknown_build_fails_an_install_but_not_a_delete(codebuild: Stubber) -> None:
    codebuild.add_response("batch_get_builds", {"builds": []}, {"ids": [BUILD_ID]})
    with pytest.raises(BootstrapError, match="has no record of HyperPod dependencies build"):
        index.is_complete(started(), None)
    codebuild.add_response("batch_get_builds", {"builds": []}, {"ids": [BUILD_ID]})
    assert index.is_complete(started("delete", "Delete"), None) == {"IsComplete": True}


def test_create_then_poll_until_success(codebuild: Stubber) -> None:
    """The Provider's sequence: on_event once, is_complete until complete."""
    expect_start(codebuild, "install")
    for status in ("IN_PROGRESS", "IN_PROGRESS", "SUCCEEDED"):
        codebuild.add_response("batch_get_builds", build_record(status), {"ids": ANY})
    request = event("Create")
    state = {**request, **index.on_event(request, None)}
    polls = 0
    while not index.is_complete(state, None)["IsComplete"]:
        polls += 1
    assert polls == 2


def test_progress_is_logged_at_start_and_at_every_poll(
    codebuild: Stubber, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a cdk deploy user reads in the handlers' log groups (the EKS stack's
    BootstrapStartLogGroup and BootstrapProgressLogGroup outputs)."""
    from datetime import UTC, datetime

    expect_start(codebuild, "install")
    started_at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    logs = {"groupName": "/novapod/bootstrap", "streamName": "s", "deepLink": LOG_LINK}
    for status, phase, end in (
        ("IN_PROGRESS", "PROVISIONING", None),
        ("IN_PROGRESS", "BUILD", None),
        ("SUCCEEDED", "COMPLETED", datetime(2026, 11, 30, 12, 5, 7, tzinfo=UTC)),
    ):
        record = build_record(status, currentPhase=phase, startTime=started_at, logs=logs)
        if end:
            record["builds"][0]["endTime"] = end
        codebuild.add_response("batch_get_builds", record, {"ids": [BUILD_ID]})
    request = event("Create")
    state = {**request, **index.on_event(request, None)}
    while not index.is_complete(state, None)["IsComplete"]:
        pass
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_decision = [(line["decision"], line.get("status"), line.get("phase")) for line in lines]
    assert by_decision[1:] == [
        ("build-started", None, None),
        ("wait", "IN_PROGRESS", "PROVISIONING"),
        ("wait", "IN_PROGRESS", "BUILD"),
        ("build-succeeded", "SUCCEEDED", "COMPLETED"),
    ]
    assert lines[1]["build_id"] == BUILD_ID and lines[1]["cluster"] == CLUSTER
    assert all(line["log"] == LOG_LINK for line in lines[2:])
    assert lines[-1]["elapsed_seconds"] == 307


# --- decisions --------------------------------------------------------------------------


def test_decide_covers_every_request_type() -> None:
    props = decisions.parse_properties(PROPS)
    other = decisions.parse_properties({**PROPS, **OLD_PINS})
    assert decisions.decide("Create", props, None) == "install"
    assert decisions.decide("Update", props, props) == "none"
    assert decisions.decide("Update", props, other) == "install"
    assert decisions.decide("Delete", props, None, physical_resource_id=PHYSICAL_ID) == "delete"
    assert decisions.decide("Delete", props, None, physical_resource_id="other") == "none"
    with pytest.raises(BootstrapError, match="unknown CloudFormation request type"):
        decisions.decide("Replace", props, None)


def test_verdicts() -> None:
    assert decisions.verdict({"buildStatus": "IN_PROGRESS"}) == "running"
    assert decisions.verdict({}) == "running"
    assert decisions.verdict({"buildStatus": "SUCCEEDED"}) == "succeeded"
    for status in ("FAILED", "FAULT", "STOPPED", "TIMED_OUT"):
        assert decisions.verdict({"buildStatus": status}) == "failed"


def test_idempotency_token_is_bounded_and_stable() -> None:
    token = decisions.idempotency_token("x" * 100)
    assert len(token) == 64
    assert token == decisions.idempotency_token("x" * 100)
