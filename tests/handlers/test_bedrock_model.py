"""The BedrockModel handler against the fake AWS (S3 for the manifest, Bedrock for the
import), driven by CloudFormation events replayed like the CDK Provider framework."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from botocore.retries.standard import ExponentialBackoff

from novapod.constructs.bedrock_model.handler import index
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers.lifecycle import CREATE_FAILED_MARKER, ProviderDriver, Stack
from tests.handlers.world import T0, FakeClock

BUCKET = "novapod-dev-artifacts"
OUTPUT = f"s3://{BUCKET}/nova/dev/lite-sft/"
CHECKPOINT = "s3://customer-escrow-123456789012-hp-abc123/lite-sft-aaaaa/outputs/checkpoints"
NEWER = "s3://customer-escrow-123456789012-hp-abc123/lite-sft-bbbbb/outputs/checkpoints"
ROLE = "arn:aws:iam::123456789012:role/novapod-dev-bedrock-import"
POLL_SECONDS = 60.0
TOKEN = re.compile(r"novapod-[0-9a-f]{64}")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def bedrock_name(base: str, checkpoint: str = CHECKPOINT) -> str:
    return f"{base}-{sha(checkpoint)[:8]}"


MODEL = bedrock_name("lite-sft-model")


def manifest(checkpoint: str) -> bytes:
    return json.dumps({"checkpoint_s3_bucket": checkpoint}).encode()


def archive(checkpoint: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in (("model/config.json", b"{}"), ("manifest.json", manifest(checkpoint))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def props(**overrides: Any) -> dict[str, Any]:
    """Properties as CloudFormation passes them; an override of None removes one."""
    values: dict[str, Any] = {
        "ModelName": "lite-sft-model",
        "OutputPrefix": OUTPUT,
        "RoleArn": ROLE,
        "Deployment": "none",
        "Tags": [{"Key": "project", "Value": "novapod"}],
        "RetainOnDelete": "true",
    }
    values.update(overrides)
    return {k: v for k, v in values.items() if v is not None}


@dataclass
class Bed:
    plane: FakeControlPlane
    clock: FakeClock
    driver: ProviderDriver

    def stack(self) -> Stack:
        return Stack(self.driver)

    def finished_run(self, checkpoint: str = CHECKPOINT, *, run: str = "lite-sft-aaaaa") -> None:
        key = f"nova/dev/lite-sft/{run}/manifest.json"
        self.plane.put_object(BUCKET, key, manifest(checkpoint), T0 - timedelta(hours=1))

    def creates(self) -> list[dict[str, Any]]:
        return self.plane.calls_to("CreateCustomModel")


@pytest.fixture
def bed(control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bed]:
    control_plane.reset()
    clock = FakeClock(T0)
    monkeypatch.setattr(index, "_now", clock.now)
    monkeypatch.setattr(index, "CONNECT_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(index, "READ_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    driver = ProviderDriver(
        index.on_event,
        index.is_complete,
        advance_clock=clock.advance,
        query_interval_seconds=POLL_SECONDS,
        logical_id="LiteSftModel",
    )
    yield Bed(plane=control_plane, clock=clock, driver=driver)
    assert control_plane.violations == []


def test_create_imports_the_newest_checkpoint_once_and_waits_for_active(bed: Bed) -> None:
    bed.finished_run("s3://customer-escrow-123456789012-hp-abc123/old/outputs/checkpoints")
    bed.plane.put_object(
        BUCKET, "nova/dev/lite-sft/lite-sft-bbbbb/manifest.json", manifest(CHECKPOINT), T0
    )
    bed.plane.bedrock.script_model(MODEL, ["Creating", "Creating", "Creating", "Active"])

    outcome = bed.stack().create(props())

    assert outcome.ok, outcome.reason
    (create,) = bed.creates()
    assert {k: v for k, v in create.items() if k != "clientRequestToken"} == {
        "modelName": MODEL,
        "modelSourceConfig": {"s3DataSource": {"s3Uri": CHECKPOINT}},
        "roleArn": ROLE,
        "modelTags": [
            {"key": "project", "value": "novapod"},
            {"key": "novapod:checkpoint-sha256", "value": sha(CHECKPOINT)},
            {"key": "novapod:checkpoint", "value": CHECKPOINT},
        ],
    }
    assert TOKEN.fullmatch(create["clientRequestToken"])
    arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    assert outcome.physical_id == arn
    assert outcome.data == {
        "ModelArn": arn,
        "ModelName": MODEL,
        "CheckpointUri": CHECKPOINT,
        "DeploymentArn": "",
        "Status": "Active",
    }
    assert outcome.polls == 4
    assert "CreateCustomModelDeployment" not in bed.plane.operations()


def test_kms_key_is_passed_to_the_import(bed: Bed) -> None:
    bed.finished_run()
    key = "arn:aws:kms:us-east-1:123456789012:key/0123abcd-01ab-23cd-45ef-0123456789ab"
    assert bed.stack().create(props(KmsKeyArn=key)).ok
    assert bed.creates()[0]["modelKmsKeyArn"] == key


def test_a_repeated_create_event_imports_once(bed: Bed) -> None:
    bed.finished_run()
    event = bed.driver.event("Create", props())

    first = bed.driver.send(event)
    again = bed.driver.send(event)

    assert first.ok and again.ok, (first.reason, again.reason)
    assert first.physical_id == again.physical_id
    assert len(bed.creates()) == 1
    assert len(bed.plane.bedrock.models) == 1


@pytest.mark.parametrize("how", ["timeout", "drop", "server_error"])
def test_a_lost_create_answer_is_resent_with_the_same_token_and_imports_once(
    bed: Bed, how: str
) -> None:
    bed.finished_run()
    bed.plane.lose_response("CreateCustomModel", how=how, seconds=1.5)  # type: ignore[arg-type]

    outcome = bed.stack().create(props())

    assert outcome.ok, outcome.reason
    first, resent = bed.creates()
    assert first == resent
    assert list(bed.plane.bedrock.models) == [MODEL]
    assert outcome.physical_id == bed.plane.bedrock.models[MODEL]["modelArn"]


def test_throttled_reads_and_create_are_retried(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.throttle("GetCustomModel")
    bed.plane.throttle("CreateCustomModel")
    bed.plane.server_error("ListObjectsV2")

    assert bed.stack().create(props()).ok
    assert len(bed.plane.bedrock.models) == 1


def test_import_still_creating_past_the_time_limit_fails_and_a_later_deploy_adopts_it(
    bed: Bed,
) -> None:
    bed.finished_run()
    bed.plane.bedrock.script_model(MODEL, ["Creating"])
    stack = bed.stack()

    timed_out = stack.create(props(RetainOnDelete="false", WaitTimeoutSeconds="1800"))

    arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    assert not timed_out.ok
    assert timed_out.reason == (
        f"Bedrock model {MODEL} ({arn}) is not Active within the deploy's time limit: its "
        "import is still Creating; a later deploy resumes waiting: it adopts the model by "
        "name and does not import again"
    )
    assert timed_out.polls == 31  # 30 polls a minute apart, then the one past 1800 s
    # The rollback's Delete keeps an import in progress, even with RetainOnDelete false.
    assert stack.history[-1].request_type == "Delete" and stack.history[-1].ok
    assert "DeleteCustomModel" not in bed.plane.operations()

    bed.plane.bedrock.script_model(MODEL, ["Creating", "Active"])
    later = bed.stack().create(props())

    assert later.ok, later.reason
    assert later.physical_id == arn
    assert len(bed.creates()) == 1


def test_failed_import_fails_with_the_service_message(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.bedrock.script_model(
        MODEL, ["Creating", ("Failed", "The checkpoint is not a supported Nova model")]
    )

    outcome = bed.stack().create(props())

    assert not outcome.ok
    assert outcome.reason == (
        f"Bedrock import of model {MODEL} Failed (The checkpoint is not a supported Nova "
        f"model); delete it (aws bedrock delete-custom-model --model-identifier {MODEL}) and "
        "deploy again, or run the job again for a new checkpoint"
    )
    # A later deploy does not adopt the Failed model as a success.
    assert not bed.stack().create(props()).ok
    assert len(bed.creates()) == 1


def test_no_manifest_fails_before_any_bedrock_call(bed: Bed) -> None:
    bed.plane.add_bucket(BUCKET)

    outcome = bed.stack().create(props())

    assert not outcome.ok
    assert outcome.physical_id == CREATE_FAILED_MARKER
    assert outcome.reason == (
        f"job lite-sft has no finished run (no manifest.json under {OUTPUT}); run it before "
        "deploying Bedrock model lite-sft-model"
    )
    assert not [op for op in bed.plane.operations() if "Custom" in op]


def test_manifest_without_checkpoint_fails_with_a_sentence(bed: Bed) -> None:
    key = "nova/dev/lite-sft/lite-sft-aaaaa/manifest.json"
    bed.plane.put_object(BUCKET, key, b'{"checkpoint_s3_bucket": "checkpoints/step_100"}', T0)

    outcome = bed.stack().create(props())

    assert outcome.reason == (
        f"job lite-sft's manifest s3://{BUCKET}/{key} names no s3:// checkpoint_s3_bucket, "
        "so Bedrock model lite-sft-model has no checkpoint to import; run the job again"
    )


def test_checkpoint_from_an_output_tar_gz_layout(bed: Bed) -> None:
    key = "nova/dev/lite-sft/lite-sft-ccccc/output/output.tar.gz"
    bed.plane.put_object(BUCKET, key, archive(NEWER), T0)

    outcome = bed.stack().create(props())

    assert outcome.ok, outcome.reason
    assert bed.creates()[0]["modelSourceConfig"] == {"s3DataSource": {"s3Uri": NEWER}}
    assert outcome.data["ModelName"] == bedrock_name("lite-sft-model", NEWER)


def test_on_demand_deployment_is_created_once_and_waited_for(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.bedrock.script_model(MODEL, ["Creating", "Active"])
    deployment = bedrock_name("lite-sft")
    bed.plane.bedrock.script_deployment(deployment, ["Creating", "Creating", "Active"])
    event = bed.driver.event("Create", props(Deployment="on-demand", DeploymentName="lite-sft"))

    outcome = bed.driver.send(event)
    again = bed.driver.send(event)

    assert outcome.ok and again.ok, (outcome.reason, again.reason)
    model_arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    (create,) = bed.plane.calls_to("CreateCustomModelDeployment")
    assert {k: v for k, v in create.items() if k != "clientRequestToken"} == {
        "modelDeploymentName": deployment,
        "modelArn": model_arn,
        "tags": [{"key": "project", "value": "novapod"}],
    }
    assert TOKEN.fullmatch(create["clientRequestToken"])
    deployment_arn = bed.plane.bedrock.deployments[deployment]["customModelDeploymentArn"]
    assert outcome.data["DeploymentArn"] == deployment_arn == again.data["DeploymentArn"]
    assert outcome.data["Status"] == "Active"
    assert len(bed.creates()) == 1


def test_deployment_of_our_name_serving_another_model_fails(bed: Bed) -> None:
    bed.finished_run()
    other = bed.plane.bedrock.add_model("someone-elses", source=NEWER)
    bed.plane.bedrock.add_deployment(bedrock_name("lite-sft-model"), model_arn=other)

    outcome = bed.stack().create(props(Deployment="on-demand"))

    assert not outcome.ok
    assert outcome.reason.startswith(
        f"custom model deployment {bedrock_name('lite-sft-model')} exists but serves {other}, not "
    )
    assert not bed.plane.calls_to("CreateCustomModelDeployment")


def test_delete_keeps_the_model_when_retained(bed: Bed) -> None:
    bed.finished_run()
    stack = bed.stack()
    assert stack.create(props(Deployment="on-demand")).ok
    mark = bed.plane.mark()

    assert stack.delete().ok

    assert bed.plane.operations_since(mark) == []
    assert MODEL in bed.plane.bedrock.models and bed.plane.bedrock.deployments


def test_delete_removes_the_deployment_then_the_model(bed: Bed) -> None:
    bed.finished_run()
    stack = bed.stack()
    assert stack.create(props(Deployment="on-demand", RetainOnDelete="false")).ok
    model_arn = stack.physical_id
    mark = bed.plane.mark()

    assert stack.delete().ok

    deletes = [op for op in bed.plane.operations_since(mark) if op.startswith("Delete")]
    assert deletes == ["DeleteCustomModelDeployment", "DeleteCustomModel"]
    assert bed.plane.calls_to("DeleteCustomModel") == [{"modelIdentifier": model_arn}]
    assert not bed.plane.bedrock.models and not bed.plane.bedrock.deployments
    # A second Delete (a retried event) finds nothing and succeeds.
    again = bed.driver.send(
        bed.driver.event("Delete", props(RetainOnDelete="false"), physical_id=str(model_arn))
    )
    assert again.ok


def test_a_model_of_our_name_from_another_checkpoint_is_not_adopted(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.bedrock.add_model(
        MODEL, source=NEWER, tags=[{"key": "novapod:checkpoint-sha256", "value": sha(NEWER)}]
    )

    outcome = bed.stack().create(props())

    assert not outcome.ok
    assert outcome.reason == (
        f"Bedrock model {MODEL} exists but was imported from another checkpoint (sha256 "
        f"{sha(NEWER)}), not from {CHECKPOINT}; delete that model or choose another "
        "ModelName (bedrock_models[].name)"
    )
    assert bed.creates() == []


def test_a_model_of_our_name_without_our_tag_is_not_adopted(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.bedrock.add_model(MODEL, source=CHECKPOINT)

    outcome = bed.stack().create(props())

    assert "was imported by someone else (it has no novapod:checkpoint-sha256 tag)" in (
        outcome.reason
    )
    assert bed.creates() == []


def test_update_after_the_job_ran_again_imports_a_new_model_and_deletes_the_old(
    bed: Bed,
) -> None:
    bed.finished_run()
    stack = bed.stack()
    assert stack.create(props(RetainOnDelete="false")).ok
    old_arn = stack.physical_id
    bed.plane.put_object(
        BUCKET, "nova/dev/lite-sft/lite-sft-bbbbb/manifest.json", manifest(NEWER), T0
    )

    outcome = stack.update(props(RetainOnDelete="false", Tags=[]))

    new_name = bedrock_name("lite-sft-model", NEWER)
    assert outcome.ok, outcome.reason
    assert outcome.physical_id == bed.plane.bedrock.models[new_name]["modelArn"] != old_arn
    assert bed.plane.calls_to("DeleteCustomModel") == [{"modelIdentifier": old_arn}]
    assert list(bed.plane.bedrock.models) == [new_name]


def test_update_with_the_same_checkpoint_keeps_the_model(bed: Bed) -> None:
    bed.finished_run()
    stack = bed.stack()
    assert stack.create(props()).ok
    arn = stack.physical_id

    outcome = stack.update(props(Tags=[]))

    assert outcome.ok and outcome.physical_id == arn
    assert len(bed.creates()) == 1


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"ModelName": "x" * 55},
            f"ModelName {'x' * 55!r} must be 1-54 letters and digits, single - or _ between "
            "them (novapod appends -<8 hex of the checkpoint>)",
        ),
        (
            {"OutputPrefix": "s3://bucket/nova/dev/lite-sft"},
            "OutputPrefix 's3://bucket/nova/dev/lite-sft' must be an s3://bucket/prefix/ URI "
            "ending in /",
        ),
        ({"Deployment": "provisioned"}, "Deployment must be on-demand or none, not 'provisioned'"),
        ({"RoleArn": None}, "RoleArn is required and must be a non-empty string"),
    ],
)
def test_bad_properties_fail_with_a_sentence(
    bed: Bed, override: dict[str, Any], message: str
) -> None:
    bed.finished_run()
    outcome = bed.stack().create(props(**override))
    assert outcome.reason == message
    assert bed.plane.operations() == []
