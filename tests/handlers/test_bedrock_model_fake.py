"""The fake Bedrock control plane answers like the service: REST routes from botocore's
model, model validation, client-token idempotency, unique names, scripted statuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.fakes.aws_control_plane import FakeControlPlane

SOURCE = "s3://customer-escrow-123456789012-hp-abc123/run-aaaaa/outputs/checkpoints"
ROLE = "arn:aws:iam::123456789012:role/import"


@pytest.fixture
def bedrock(control_plane: FakeControlPlane) -> Iterator[Any]:
    control_plane.reset()
    yield boto3.client("bedrock")
    assert control_plane.violations == []


def create(bedrock: Any, name: str = "m-1", token: str = "t-1", source: str = SOURCE) -> str:
    answer = bedrock.create_custom_model(
        modelName=name,
        modelSourceConfig={"s3DataSource": {"s3Uri": source}},
        roleArn=ROLE,
        clientRequestToken=token,
    )
    return str(answer["modelArn"])


def code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_same_token_and_parameters_answer_the_first_model(
    bedrock: Any, control_plane: FakeControlPlane
) -> None:
    first = create(bedrock)
    assert create(bedrock) == first
    assert first.startswith("arn:aws:bedrock:us-east-1:123456789012:custom-model/imported/")
    assert list(control_plane.bedrock.models) == ["m-1"]


def test_same_token_with_other_parameters_is_a_conflict(bedrock: Any) -> None:
    create(bedrock)
    with pytest.raises(ClientError) as error:
        create(bedrock, source=SOURCE + "/step_2")
    assert code(error) == "ConflictException"


def test_a_taken_name_is_a_conflict(bedrock: Any) -> None:
    create(bedrock)
    with pytest.raises(ClientError) as error:
        create(bedrock, token="t-2")
    assert code(error) == "ConflictException"


def test_requests_are_validated_against_the_model(bedrock: Any) -> None:
    with pytest.raises(ClientError) as error:
        create(bedrock, name="bad--name")
    assert code(error) == "ValidationException"
    assert "at 'modelName' failed to satisfy constraint" in str(error.value)


def test_statuses_follow_the_script_and_names_or_arns_identify(
    bedrock: Any, control_plane: FakeControlPlane
) -> None:
    control_plane.bedrock.script_model("m-1", ["Creating", ("Failed", "bad checkpoint")])
    arn = create(bedrock)
    assert bedrock.get_custom_model(modelIdentifier="m-1")["modelStatus"] == "Creating"
    failed = bedrock.get_custom_model(modelIdentifier=arn)
    assert (failed["modelStatus"], failed["failureMessage"]) == ("Failed", "bad checkpoint")
    listed = bedrock.list_custom_models(nameContains="m-")["modelSummaries"]
    assert [m["modelArn"] for m in listed] == [arn]


def test_unknown_model_is_not_found_with_404(bedrock: Any) -> None:
    with pytest.raises(ClientError) as error:
        bedrock.get_custom_model(modelIdentifier="nothing")
    assert code(error) == "ResourceNotFoundException"
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_deployments_need_an_active_model_and_block_its_deletion(
    bedrock: Any, control_plane: FakeControlPlane
) -> None:
    control_plane.bedrock.script_model("m-1", ["Creating", "Active"])
    arn = create(bedrock)
    with pytest.raises(ClientError) as error:
        bedrock.create_custom_model_deployment(modelDeploymentName="d-1", modelArn=arn)
    assert code(error) == "ValidationException"
    statuses = [bedrock.get_custom_model(modelIdentifier=arn)["modelStatus"] for _ in "ab"]
    assert statuses == ["Creating", "Active"]
    deployment = bedrock.create_custom_model_deployment(modelDeploymentName="d-1", modelArn=arn)
    listed = bedrock.list_custom_model_deployments(modelArnEquals=arn)
    assert [d["customModelDeploymentName"] for d in listed["modelDeploymentSummaries"]] == ["d-1"]
    with pytest.raises(ClientError) as error:
        bedrock.delete_custom_model(modelIdentifier=arn)
    assert code(error) == "ConflictException"
    bedrock.delete_custom_model_deployment(
        customModelDeploymentIdentifier=deployment["customModelDeploymentArn"]
    )
    bedrock.delete_custom_model(modelIdentifier=arn)
    assert control_plane.bedrock.models == {}


def test_faults_are_injected_per_operation(bedrock: Any, control_plane: FakeControlPlane) -> None:
    control_plane.error("GetCustomModel", "AccessDeniedException", status=403)
    with pytest.raises(ClientError) as error:
        bedrock.get_custom_model(modelIdentifier="m-1")
    assert code(error) == "AccessDeniedException"


def test_a_token_stays_remembered_after_its_model_is_deleted(
    bedrock: Any, control_plane: FakeControlPlane
) -> None:
    first = create(bedrock)
    bedrock.delete_custom_model(modelIdentifier=first)
    # The same token is ignored: the deleted model's ARN, nothing imported.
    assert create(bedrock) == first
    assert control_plane.bedrock.models == {}
    again = create(bedrock, token="t-2")
    assert again != first and list(control_plane.bedrock.models) == ["m-1"]


def test_tags_of_an_import_may_lag_behind_it(bedrock: Any, control_plane: FakeControlPlane) -> None:
    control_plane.bedrock.lag_tags(2)
    arn = bedrock.create_custom_model(
        modelName="m-1",
        modelSourceConfig={"s3DataSource": {"s3Uri": SOURCE}},
        roleArn=ROLE,
        modelTags=[{"key": "k", "value": "v"}],
        clientRequestToken="t-1",
    )["modelArn"]
    reads = [bedrock.list_tags_for_resource(resourceARN=arn)["tags"] for _ in range(3)]
    assert reads == [[], [], [{"key": "k", "value": "v"}]]


def test_look_ups_by_name_may_miss_while_the_arn_finds_the_resource(
    bedrock: Any, control_plane: FakeControlPlane
) -> None:
    arn = create(bedrock)
    control_plane.bedrock.hide_names(models=1)
    with pytest.raises(ClientError) as error:
        bedrock.get_custom_model(modelIdentifier="m-1")
    assert code(error) == "ResourceNotFoundException"
    assert bedrock.get_custom_model(modelIdentifier=arn)["modelName"] == "m-1"
    assert bedrock.get_custom_model(modelIdentifier="m-1")["modelArn"] == arn
