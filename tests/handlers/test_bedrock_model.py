"""The BedrockModel handler against the fake AWS (S3 for the manifest, Bedrock for the
import, DynamoDB for the purchase ledger), driven by CloudFormation events replayed like
the CDK Provider framework."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import re
import tarfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.retries.standard import ExponentialBackoff

from novapod.constructs.bedrock_model import construct
from novapod.constructs.bedrock_model.handler import index
from novapod.constructs.handler_core import ledger
from novapod.operate import purchases
from tests.conftest import ROOT, Synthesized, resources
from tests.fakes import iam
from tests.fakes.aws_control_plane import FakeControlPlane, Fault
from tests.handlers.lifecycle import ProviderDriver, Stack
from tests.handlers.test_fake_iam import EXAMPLE_ACCOUNT, as_role, with_storage_outputs
from tests.handlers.world import LEDGER_TABLE, T0, FakeClock

BUCKET = "novapod-dev-artifacts"
OUTPUT = f"s3://{BUCKET}/nova/dev/lite-sft/"
CHECKPOINT = "s3://customer-escrow-123456789012-hp-abc123/lite-sft-aaaaa/outputs/checkpoints"
NEWER = "s3://customer-escrow-123456789012-hp-abc123/lite-sft-bbbbb/outputs/checkpoints"
ROLE = "arn:aws:iam::123456789012:role/novapod-dev-bedrock-import"
POLL_SECONDS = 60.0
TOKEN = re.compile(r"novapod-[0-9a-f]{64}")
ENVIRONMENT = "dev"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def bedrock_name(base: str, checkpoint: str = CHECKPOINT) -> str:
    return f"{base}-{sha(checkpoint)[:8]}"


MODEL = bedrock_name("lite-sft-model")


def token(name: str, checkpoint: str, generation: int = 0) -> str:
    """CreateCustomModel's client token, written out: generation 0 is the token novapod
    sent before the purchase ledger (existing imports keep theirs)."""
    suffix = f"\ngeneration {generation}" if generation else ""
    return "novapod-" + sha(f"model\n{name}\n{checkpoint}{suffix}")


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
        "LedgerTable": LEDGER_TABLE,
        "Environment": ENVIRONMENT,
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

    def newer_run(self, checkpoint: str = NEWER, *, run: str = "lite-sft-bbbbb") -> None:
        """A later run of the job finishes: its manifest is the newest."""
        key = f"nova/dev/lite-sft/{run}/manifest.json"
        self.plane.put_object(BUCKET, key, manifest(checkpoint), T0)

    def creates(self) -> list[dict[str, Any]]:
        return self.plane.calls_to("CreateCustomModel")

    def tokens(self) -> list[str]:
        return [c["clientRequestToken"] for c in self.creates()]

    def ledger(self) -> dict[str, dict[str, Any]]:
        """The purchase ledger's items by their sort key (kind#name)."""
        return {i["Purchase"]: i for i in self.plane.dynamodb.items(LEDGER_TABLE)}


@pytest.fixture
def bed(control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bed]:
    control_plane.reset()
    clock = FakeClock(T0)
    monkeypatch.setattr(index, "_now", clock.now)
    monkeypatch.setattr(index, "_sleep", clock.advance)
    claimants = iter(range(1, 1000))  # ledger claimants: claimant-0001, claimant-0002, ...
    monkeypatch.setattr(index, "_claimant", lambda: f"claimant-{next(claimants):04d}")
    control_plane.dynamodb.create_table(
        LEDGER_TABLE, partition_key="Environment", sort_key="Purchase"
    )
    monkeypatch.setattr(index, "CONNECT_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(index, "READ_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(index, "LEDGER_CONNECT_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(index, "LEDGER_READ_TIMEOUT_SECONDS", 1.0)
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


# --- no checkpoint yet: waiting, then the import on a later deploy -------------------------

WAITING_ID = f"novapod:waiting-for-checkpoint:lite-sft-model:{OUTPUT}"
PLACEHOLDER = (
    "none yet: waiting for a checkpoint of job lite-sft; after a run finishes, change "
    "refresh in its nova.bedrock_models entry and deploy"
)


def waiting_data(deployment: bool = False) -> dict[str, str]:
    return {
        "ModelArn": PLACEHOLDER,
        "ModelName": "",
        "CheckpointUri": "",
        "DeploymentArn": PLACEHOLDER if deployment else "",
        "Status": "WaitingForCheckpoint",
    }


def waiting_stack(bed: Bed, **overrides: Any) -> Stack:
    """A stack whose model was created before its job ever ran."""
    bed.plane.add_bucket(BUCKET)
    stack = bed.stack()
    outcome = stack.create(props(**overrides))
    assert outcome.ok, outcome.reason
    assert outcome.physical_id == WAITING_ID
    return stack


def test_a_job_with_no_finished_run_succeeds_as_waiting_and_buys_nothing(
    bed: Bed, capsys: pytest.CaptureFixture[str]
) -> None:
    bed.plane.add_bucket(BUCKET)

    outcome = bed.stack().create(props(Deployment="on-demand"))

    assert outcome.ok, outcome.reason
    assert (outcome.physical_id, outcome.polls) == (WAITING_ID, 1)
    assert outcome.data == waiting_data(deployment=True)
    # The manifest listing is the only call: no import, no deployment, no claim.
    assert bed.plane.operations() == ["ListObjectsV2"]
    assert bed.creates() == [] and bed.ledger() == {}
    steps = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    waiting = [s for s in steps if s["step"] == "waiting"]
    assert [s["message"] for s in waiting] == [
        f"job lite-sft has no finished run yet (no manifest.json under {OUTPUT}), so "
        "Bedrock model lite-sft-model is waiting for a checkpoint and nothing was imported; "
        "after a run finishes, set refresh in its nova.bedrock_models entry to a new number "
        "and deploy again to import it"
    ]


def test_a_repeated_create_while_waiting_keeps_the_same_id(bed: Bed) -> None:
    bed.plane.add_bucket(BUCKET)
    event = bed.driver.event("Create", props())

    first, again = bed.driver.send(event), bed.driver.send(event)

    assert (first.physical_id, again.physical_id) == (WAITING_ID, WAITING_ID)
    assert first.ok and again.ok and bed.creates() == []


def test_an_update_that_still_finds_no_run_stays_waiting_under_the_same_id(bed: Bed) -> None:
    stack = waiting_stack(bed)
    mark = bed.plane.mark()

    outcome = stack.update(props(Refresh="1"))

    assert outcome.ok and not stack.rolled_back, outcome.reason
    assert (outcome.physical_id, outcome.data) == (WAITING_ID, waiting_data())
    assert bed.plane.operations_since(mark) == ["ListObjectsV2"]
    # Same physical ID: no replacement, so CloudFormation sends no Delete.
    assert [o.request_type for o in stack.history] == ["Create", "Update"]


def test_the_update_after_a_run_finished_imports_it_exactly_once(bed: Bed) -> None:
    stack = waiting_stack(bed, Deployment="on-demand")
    bed.finished_run()
    bed.plane.bedrock.script_model(MODEL, ["Creating", "Active"])

    imported = stack.update(props(Deployment="on-demand", Refresh="1"))

    assert imported.ok and not stack.rolled_back, imported.reason
    arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    assert imported.physical_id == arn
    assert imported.data["Status"] == "Active" and imported.data["CheckpointUri"] == CHECKPOINT
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    assert len(bed.plane.calls_to("CreateCustomModelDeployment")) == 1
    assert bed.ledger()[f"import#{MODEL}"]["State"] == "bought"
    # The new physical ID makes CloudFormation delete the placeholder: nothing to delete.
    (delete,) = [o for o in stack.history if o.request_type == "Delete"]
    assert (delete.ok, delete.physical_id) == (True, WAITING_ID)
    assert not [op for op in bed.plane.operations() if op.startswith("Delete")]

    # A later refresh with no newer run adopts the model: nothing is bought again.
    again = stack.update(props(Deployment="on-demand", Refresh="2"))

    assert again.ok and again.physical_id == arn
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    assert len(bed.plane.calls_to("CreateCustomModelDeployment")) == 1


def test_a_refused_first_import_rolls_back_to_waiting_without_calling_again(
    bed: Bed,
) -> None:
    stack = waiting_stack(bed)
    bed.finished_run()
    bed.plane.error("CreateCustomModel", "AccessDeniedException", status=403, message="no")

    rollback = stack.update(props(Refresh="1"))

    # The Update failed; CloudFormation's rollback (the old properties, Refresh absent)
    # returns to waiting instead of importing again, so the rollback itself succeeds.
    assert stack.rolled_back
    failed = stack.history[-2]
    assert (failed.request_type, failed.ok) == ("Update", False)
    assert failed.reason.startswith(f"CreateCustomModel for Bedrock model {MODEL} was refused")
    assert (rollback.ok, rollback.physical_id, rollback.data) == (True, WAITING_ID, waiting_data())
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Generation"]) == ("refused", 1)

    # Fixed, a higher refresh imports with the next generation's token.
    imported = stack.update(props(Refresh="2"))

    assert imported.ok and not stack.rolled_back, imported.reason
    assert bed.tokens() == [token(MODEL, CHECKPOINT), token(MODEL, CHECKPOINT, 1)]


def test_a_repeated_update_after_waiting_imports_once(bed: Bed) -> None:
    waiting_stack(bed)
    bed.finished_run()
    event = bed.driver.event(
        "Update", props(Refresh="1"), physical_id=WAITING_ID, old_props=props()
    )

    first, again = bed.driver.send(event), bed.driver.send(event)

    assert first.ok and again.ok, (first.reason, again.reason)
    assert first.physical_id == again.physical_id == bed.plane.bedrock.models[MODEL]["modelArn"]
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    assert list(bed.plane.bedrock.models) == [MODEL]


@pytest.mark.parametrize("operation", ["PutItem", "CreateCustomModel"])
def test_two_deliveries_of_the_update_after_waiting_import_once(
    bed: Bed, lanes: Lanes, operation: str
) -> None:
    """B, another delivery of the same Update, runs whole just before A claims the import
    (PutItem) or just before A calls it: one model, one client token."""
    waiting_stack(bed)
    bed.finished_run()
    event = bed.driver.event(
        "Update", props(Refresh="1"), physical_id=WAITING_ID, old_props=props()
    )
    answers: dict[str, Any] = {}

    def second_delivery() -> None:
        answers["B"] = lanes.run("B", lambda: bed.driver.on_event(copy.deepcopy(event), None))

    lanes.before("A", operation, second_delivery)
    answers["A"] = bed.driver.on_event(copy.deepcopy(event), None)

    arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    assert answers["A"]["PhysicalResourceId"] == answers["B"]["PhysicalResourceId"] == arn
    assert list(bed.plane.bedrock.models) == [MODEL]
    assert set(bed.tokens()) == {token(MODEL, CHECKPOINT)}
    assert bed.driver.complete(event, answers["A"]).ok


def test_an_imported_model_whose_job_shows_no_run_is_kept_and_the_update_fails(
    bed: Bed,
) -> None:
    bed.finished_run()
    stack = bed.stack()
    assert stack.create(props(RetainOnDelete="false")).ok
    arn = str(stack.physical_id)
    bed.plane.buckets[BUCKET].clear()  # the job's outputs are gone

    outcome = bed.driver.send(
        bed.driver.event(
            "Update",
            props(RetainOnDelete="false", Refresh="1"),
            physical_id=arn,
            old_props=props(RetainOnDelete="false"),
        )
    )

    assert not outcome.ok and outcome.physical_id == arn
    assert outcome.reason == (
        f"job lite-sft has no finished run (no manifest.json under {OUTPUT}), though "
        f"Bedrock model lite-sft-model was imported from it ({arn}, kept as it is); restore "
        "the job's outputs or run it again, then deploy"
    )
    assert MODEL in bed.plane.bedrock.models
    assert "DeleteCustomModel" not in bed.plane.operations()


def test_deleting_a_waiting_model_deletes_nothing(bed: Bed) -> None:
    stack = waiting_stack(bed, RetainOnDelete="false")
    mark = bed.plane.mark()

    outcome = stack.delete()

    assert outcome.ok and outcome.physical_id == WAITING_ID
    assert bed.plane.operations_since(mark) == [] and bed.ledger() == {}


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
    # Both ledger items move to their next generation.
    items = bed.ledger()
    for key in (f"import#{MODEL}", f"deployment#{MODEL}"):
        assert (items[key]["State"], items[key]["Fields"]["Generation"]) == ("released", 1)
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


# --- the purchase ledger (issue 18) -------------------------------------------------------

NEWER_MODEL = bedrock_name("lite-sft-model", NEWER)


def delete_by_hand(arn: str) -> None:
    boto3.client("bedrock").delete_custom_model(modelIdentifier=arn)


def test_the_import_is_claimed_called_and_recorded_in_the_ledger(bed: Bed) -> None:
    bed.finished_run()
    event = bed.driver.event("Create", props())

    outcome = bed.driver.send(event)

    assert outcome.ok, outcome.reason
    arn = outcome.physical_id
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    item = bed.ledger()[f"import#{MODEL}"]
    assert item["Environment"] == ENVIRONMENT
    assert (item["State"], item["Attempt"], item["RequestId"]) == (
        "bought",
        1,
        event["RequestId"],
    )
    fields = item["Fields"]
    assert fields["Arn"] == arn
    assert fields["Checkpoint"] == CHECKPOINT
    assert fields["BaseName"] == "lite-sft-model"
    assert fields["Generation"] == 0
    assert fields["CallingRequest"] == event["RequestId"]
    assert fields["ClientRequestToken"] == token(MODEL, CHECKPOINT)
    # claim, calling, bought: three conditional writes on the item's sequence
    assert item["Sequence"] == 3
    writes = bed.plane.calls_to("PutItem")
    assert [w["Item"]["State"]["S"] for w in writes] == ["claimed", "calling", "bought"]
    # `calling` is the write right before the one import call.
    operations = bed.plane.operations(ledger=True)
    assert operations[operations.index("CreateCustomModel") - 1] == "PutItem"


def test_delete_then_create_of_the_same_checkpoint_imports_again_with_a_new_token(
    bed: Bed,
) -> None:
    bed.finished_run()
    stack = bed.stack()
    assert stack.create(props(RetainOnDelete="false")).ok
    first = stack.physical_id
    assert stack.delete().ok
    deleted = bed.ledger()[f"import#{MODEL}"]
    assert deleted["State"] == "released"
    assert deleted["Fields"]["Generation"] == 1
    assert deleted["Fields"]["Deleted"] == first

    again = bed.stack().create(props(RetainOnDelete="false"))

    # Bedrock ignores a token it has seen (even of a deleted model): a new generation.
    assert again.ok, again.reason
    assert bed.tokens() == [token(MODEL, CHECKPOINT), token(MODEL, CHECKPOINT, 1)]
    assert again.physical_id == bed.plane.bedrock.models[MODEL]["modelArn"] != first
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Attempt"]) == ("bought", 2)
    assert item["Fields"]["Generation"] == 1
    assert item["Fields"]["Arn"] == again.physical_id
    (earlier,) = item["Attempts"]
    assert (earlier["Attempt"], earlier["State"], earlier["Deleted"]) == (1, "released", first)


def test_a_model_imported_before_the_ledger_keeps_its_token_until_deleted(bed: Bed) -> None:
    bed.finished_run()
    tags = [
        {"key": "novapod:checkpoint-sha256", "value": sha(CHECKPOINT)},
        {"key": "novapod:checkpoint", "value": CHECKPOINT},
    ]
    old = bed.plane.bedrock.add_model(MODEL, source=CHECKPOINT, tags=tags)
    stack = bed.stack()

    adopted = stack.create(props(RetainOnDelete="false"))

    assert adopted.ok and adopted.physical_id == old and bed.creates() == []
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Source"], item["Fields"]["Generation"]) == (
        "bought",
        "adopted",
        0,
    )
    assert stack.delete().ok
    assert bed.stack().create(props()).ok
    assert bed.tokens() == [token(MODEL, CHECKPOINT, 1)]


def test_a_delete_of_a_model_the_ledger_never_saw_records_its_next_generation(
    bed: Bed,
) -> None:
    tags = [{"key": "novapod:checkpoint-sha256", "value": sha(CHECKPOINT)}]
    arn = bed.plane.bedrock.add_model(MODEL, source=CHECKPOINT, tags=tags)

    deleted = bed.driver.send(
        bed.driver.event("Delete", props(RetainOnDelete="false"), physical_id=arn)
    )

    assert deleted.ok
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Generation"], item["Fields"]["Deleted"]) == (
        "released",
        1,
        arn,
    )


def release_by_hand(kind: str, name: str) -> None:
    """What `novapod purchases CONFIG --release KEY` writes (novapod.operate.purchases.release):
    written here directly, as release() does not accept a bought item yet (see
    test_novapod_purchases_releases_a_bought_import_whose_model_was_deleted_by_hand)."""
    book = ledger.Ledger(boto3.client("dynamodb"), LEDGER_TABLE, ENVIRONMENT)
    entry = book.read(kind, name)
    assert entry is not None
    book.advance(
        entry,
        ledger.RELEASED,
        claimant=purchases.RELEASER,
        Detail=f"released by hand from {entry.state} with novapod purchases --release",
    )


def missing_model(arn: str) -> str:
    return (
        f"the purchase ledger records Bedrock model {MODEL} as imported ({arn}), but Bedrock "
        "shows no model by that name or ARN, so this event imported nothing; if it was "
        f"deleted by hand, release the item with `novapod purchases CONFIG --release "
        f"import#{MODEL}` after checking with `aws bedrock get-custom-model "
        f"--model-identifier {arn}` that it is gone, then deploy again"
    )


def test_a_duplicate_delivery_whose_look_up_by_name_misses_finds_the_model_by_its_arn(
    bed: Bed,
) -> None:
    bed.finished_run()
    event = bed.driver.event("Create", props())
    first = bed.driver.send(event)
    assert first.ok, first.reason
    # Right after the import, GetCustomModel by name may not see it yet.
    bed.plane.bedrock.hide_names(models=3)

    again = bed.driver.send(event)

    # A new generation would be a new token, which Bedrock takes for a new import.
    assert again.ok, again.reason
    assert again.physical_id == first.physical_id
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Attempt"], item["Fields"]["Generation"]) == ("bought", 1, 0)
    assert item["Fields"]["Arn"] == first.physical_id


def test_a_model_deleted_by_hand_is_not_imported_again_until_its_item_is_released(
    bed: Bed,
) -> None:
    bed.finished_run()
    assert bed.stack().create(props()).ok
    arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    delete_by_hand(arn)

    refused = bed.stack().create(props())

    # The ledger says bought and Bedrock shows nothing: deleted, or not visible yet.
    assert not refused.ok
    assert refused.reason == missing_model(arn)
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Generation"], item["Fields"]["Arn"]) == (
        "bought",
        0,
        arn,
    )

    release_by_hand("import", MODEL)
    again = bed.stack().create(props())

    assert again.ok, again.reason
    assert bed.tokens() == [token(MODEL, CHECKPOINT), token(MODEL, CHECKPOINT, 1)]
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Attempt"], item["Fields"]["Generation"]) == ("bought", 2, 1)
    assert item["Fields"]["Arn"] == again.physical_id != arn


def test_novapod_purchases_releases_a_bought_import_whose_model_was_deleted_by_hand(
    bed: Bed,
) -> None:
    bed.finished_run()
    assert bed.stack().create(props()).ok
    book = ledger.Ledger(boto3.client("dynamodb"), LEDGER_TABLE, ENVIRONMENT)

    released = purchases.release(book, f"import#{MODEL}")

    assert released.state == ledger.RELEASED


def test_a_failed_import_is_recorded_and_its_next_import_sends_a_new_token(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.bedrock.script_model(MODEL, ["Creating", ("Failed", "unsupported checkpoint")])
    assert not bed.stack().create(props()).ok
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Generation"]) == ("failed", 1)
    assert item["Fields"]["Error"] == "unsupported checkpoint"
    delete_by_hand(MODEL)  # as the failure message says
    bed.plane.bedrock.script_model(MODEL, ["Creating", "Active"])

    again = bed.stack().create(props())

    assert again.ok, again.reason
    assert bed.tokens() == [token(MODEL, CHECKPOINT), token(MODEL, CHECKPOINT, 1)]


def test_a_duplicate_delivery_after_a_newer_manifest_imports_the_first_checkpoint(
    bed: Bed,
) -> None:
    bed.finished_run()
    event = bed.driver.event("Create", props())
    # The first delivery imports; the framework then sees its Invoke fail and invokes
    # on_event again, after another run of the job finished.
    first = bed.driver.on_event(copy.deepcopy(event), None)
    bed.newer_run()

    again = bed.driver.send(event)

    assert again.ok, again.reason
    assert again.physical_id == first["PhysicalResourceId"]
    assert again.data["CheckpointUri"] == CHECKPOINT
    assert [c["modelName"] for c in bed.creates()] == [MODEL]
    assert list(bed.plane.bedrock.models) == [MODEL]
    assert list(bed.ledger()) == [f"import#{MODEL}"]
    # The manifest was read once: the second delivery took the checkpoint from the ledger.
    assert bed.plane.operations().count("ListObjectsV2") == 1


def test_a_delivery_killed_before_its_import_call_is_resumed_with_the_same_checkpoint(
    bed: Bed, lanes: Lanes
) -> None:
    bed.finished_run()
    event = bed.driver.event("Create", props())

    def killed() -> None:
        raise SystemExit("the Lambda timed out")  # before the request is sent

    lanes.before("A", "CreateCustomModel", killed)
    with pytest.raises(SystemExit):
        bed.driver.on_event(copy.deepcopy(event), None)
    assert bed.ledger()[f"import#{MODEL}"]["State"] == "calling"
    bed.newer_run()

    again = bed.driver.send(event)

    assert again.ok, again.reason
    assert again.data["ModelName"] == MODEL
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    assert NEWER_MODEL not in bed.plane.bedrock.models
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Resends"]) == ("bought", 1)


def test_a_repeated_event_adopts_its_own_import_while_its_tags_are_not_visible(
    bed: Bed,
) -> None:
    bed.finished_run()
    bed.plane.bedrock.lag_tags(5)
    event = bed.driver.event("Create", props())
    first = bed.driver.on_event(copy.deepcopy(event), None)

    again = bed.driver.send(event)

    # Not "imported by someone else": the ledger records this stack's import of it.
    assert again.ok, again.reason
    assert again.physical_id == first["PhysicalResourceId"]
    assert len(bed.creates()) == 1
    assert bed.plane.calls_to("ListTagsForResource")  # read, and empty
    assert bed.plane.bedrock.tags[again.physical_id]  # there, not yet shown


def test_the_token_is_identical_across_repeated_events_of_one_import(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.server_error("CreateCustomModel", times=3)  # every attempt of deploy 1

    failed = bed.stack().create(props())

    assert failed.reason == (
        f"CreateCustomModel for Bedrock model {MODEL} failed (InternalServerException: An "
        "internal error occurred.) and it is not visible yet, so it may have been created; "
        f"the purchase ledger holds import#{MODEL} as ambiguous, and the next deploy looks "
        "it up by name and resends the same client token, so it is never created twice"
    )
    assert bed.ledger()[f"import#{MODEL}"]["State"] == "ambiguous"

    again = bed.stack().create(props())
    event = bed.driver.event("Create", props())
    repeated = bed.driver.send(event)

    assert again.ok and repeated.ok, (again.reason, repeated.reason)
    assert again.physical_id == repeated.physical_id
    # Deploy 1's three attempts, deploy 2's resend: one token; deploy 3 only adopts.
    assert bed.tokens() == [token(MODEL, CHECKPOINT)] * 4
    assert list(bed.plane.bedrock.models) == [MODEL]
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Source"]) == ("bought", "bought")
    assert event["RequestId"] in item["Fields"]["Requests"]


def test_a_refused_import_says_nothing_was_created_and_retries_with_a_new_token(
    bed: Bed,
) -> None:
    bed.finished_run()
    bed.plane.error("CreateCustomModel", "AccessDeniedException", status=403, message="not allowed")

    refused = bed.stack().create(props())

    assert refused.reason == (
        f"CreateCustomModel for Bedrock model {MODEL} was refused (AccessDeniedException: "
        "not allowed), so nothing was created; fix the cause and deploy again, which sends "
        "a new client token"
    )
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Fields"]["Generation"]) == ("refused", 1)
    assert bed.stack().create(props()).ok
    assert bed.tokens() == [token(MODEL, CHECKPOINT), token(MODEL, CHECKPOINT, 1)]


# --- the ledger failing: closed ------------------------------------------------------------


def unavailable(what: str, error: str) -> str:
    return (
        f"{what} was not bought by this event: "
        f"the purchase ledger could not be used ({error}), and "
        "novapod buys only under a claim in it; no purchase call was made, deploy again "
        "once the table answers"
    )


def test_a_ledger_that_cannot_be_read_calls_nothing(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.server_error("Query", times=3)

    outcome = bed.stack().create(props())

    assert outcome.reason == unavailable(
        "Bedrock model lite-sft-model",
        f"reading the purchase ledger {LEDGER_TABLE} failed (InternalServerError: Internal "
        "server error)",
    )
    assert bed.plane.operations() == []  # no S3, no Bedrock
    assert bed.ledger() == {}


def test_an_item_that_cannot_be_read_calls_no_import(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.server_error("GetItem", times=3)

    outcome = bed.stack().create(props())

    assert outcome.reason == unavailable(
        f"Bedrock model {MODEL}",
        f"reading purchase import#{MODEL} from the purchase ledger {LEDGER_TABLE} failed "
        "(InternalServerError: Internal server error)",
    )
    assert bed.plane.operations() == ["ListObjectsV2", "GetObject", "GetCustomModel"]


def test_a_refused_ledger_write_calls_no_import(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.error("PutItem", "AccessDeniedException", message="not allowed")

    outcome = bed.stack().create(props())

    assert outcome.reason == unavailable(
        f"Bedrock model {MODEL}",
        f"writing claimed for purchase import#{MODEL} to the purchase ledger {LEDGER_TABLE} "
        "failed (AccessDeniedException: not allowed)",
    )
    assert bed.creates() == [] and bed.ledger() == {}


def test_a_calling_write_that_cannot_be_made_calls_no_import(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.inject("PutItem", Fault("server_error", status=500), times=3, after=1)

    outcome = bed.stack().create(props())

    assert outcome.reason == unavailable(
        f"Bedrock model {MODEL}",
        f"writing calling for purchase import#{MODEL} to the purchase ledger {LEDGER_TABLE} "
        "failed (InternalServerError: Internal server error)",
    )
    assert bed.creates() == []
    assert bed.ledger()[f"import#{MODEL}"]["State"] == "claimed"


def test_throttled_ledger_writes_are_retried_and_import_once(bed: Bed) -> None:
    bed.finished_run()
    bed.plane.throttle("PutItem", times=2)
    bed.plane.throttle("Query")
    bed.plane.throttle("GetItem")

    outcome = bed.stack().create(props())

    assert outcome.ok, outcome.reason
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    assert bed.ledger()[f"import#{MODEL}"]["State"] == "bought"


@pytest.mark.parametrize("how", ["server_error", "drop"])
def test_a_lost_answer_to_a_ledger_write_is_settled_by_reading_it_back(bed: Bed, how: str) -> None:
    bed.finished_run()
    # The claim lands, its answer is lost; botocore resends it and the condition fails.
    bed.plane.inject("PutItem", Fault("lose_response", how=how))  # type: ignore[arg-type]

    outcome = bed.stack().create(props())

    assert outcome.ok, outcome.reason
    assert len(bed.creates()) == 1
    assert bed.ledger()[f"import#{MODEL}"]["State"] == "bought"


def test_a_claim_another_invocation_wrote_first_is_waited_for_then_taken_over(
    bed: Bed,
) -> None:
    bed.finished_run()
    rival = {
        "Environment": ENVIRONMENT,
        "Purchase": f"import#{MODEL}",
        "Kind": "import",
        "Name": MODEL,
        "State": "claimed",
        "Sequence": 1,
        "Attempt": 1,
        "RequestId": "a-crashed-request",
        "Claimant": "a-crashed-claimant",
        "UpdatedAt": "2030-01-01T00:00:00Z",
        "Fields": {"BaseName": "lite-sft-model", "Checkpoint": CHECKPOINT, "Generation": 0},
        "Attempts": [],
    }
    # The conditional write of our claim finds the item just written by another writer.
    bed.plane.dynamodb.rival_put("PutItem", LEDGER_TABLE, rival)

    outcome = bed.stack().create(props())

    assert outcome.ok, outcome.reason
    assert bed.tokens() == [token(MODEL, CHECKPOINT)]
    item = bed.ledger()[f"import#{MODEL}"]
    assert (item["State"], item["Attempt"]) == ("bought", 1)
    assert item["Claimant"] != "a-crashed-claimant"
    # It waited once (HOLDER_WAIT_SECONDS) before taking the claim over and calling.
    waited = timedelta(seconds=index.HOLDER_WAIT_SECONDS)
    assert item["Fields"]["CallingAt"] == (T0 + waited).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_without_a_ledger_nothing_is_imported_and_an_existing_model_is_adopted(
    bed: Bed,
) -> None:
    bed.finished_run()

    refused = bed.stack().create(props(LedgerTable=None))

    assert refused.reason == (
        f"Bedrock model {MODEL} was not imported: the resource names no purchase ledger "
        "(LedgerTable and Environment), and novapod calls Bedrock only under a claim in it; "
        "synthesize with this novapod version, whose storage stack holds the ledger"
    )
    assert bed.creates() == []
    # A rollback to a template from before the ledger still adopts its model.
    tags = [{"key": "novapod:checkpoint-sha256", "value": sha(CHECKPOINT)}]
    arn = bed.plane.bedrock.add_model(MODEL, source=CHECKPOINT, tags=tags)
    adopted = bed.stack().create(props(LedgerTable=None, Environment=None))
    assert adopted.ok and adopted.physical_id == arn


# --- two deliveries of one request at once ---------------------------------------------


class Lanes:
    """Runs an action right before the n-th call of an operation by one invocation (a
    lane: "A" unless told) is sent: the handlers' clients get a botocore before-call hook.

    The handler core reuses its clients beyond this test: each is hooked once, under an
    ID of its own, and `unhook` (the `lanes` fixture's teardown) takes the hooks off."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._actions: dict[tuple[str, str, int], Callable[[], None]] = {}
        self._hooked_clients: dict[int, Any] = {}
        self._unique_id = f"lanes-{id(self)}"
        for factory in ("_client", "_ledger_client"):
            monkeypatch.setattr(index, factory, self._hooked(getattr(index, factory)))

    def _hooked(self, factory: Callable[..., Any]) -> Callable[..., Any]:
        def make(*args: Any, **kwargs: Any) -> Any:
            client = factory(*args, **kwargs)
            with self._lock:
                if id(client) not in self._hooked_clients:
                    self._hooked_clients[id(client)] = client
                    client.meta.events.register(
                        "before-call", self._before, unique_id=self._unique_id
                    )
            return client

        return make

    def unhook(self) -> None:
        for client in self._hooked_clients.values():
            client.meta.events.unregister("before-call", unique_id=self._unique_id)
        self._hooked_clients.clear()

    @property
    def lane(self) -> str:
        return str(getattr(self._local, "lane", "A"))

    def before(
        self, lane: str, operation: str, action: Callable[[], None], *, nth: int = 1
    ) -> None:
        self._actions[(lane, operation, nth)] = action

    def run(self, lane: str, call: Callable[[], Any]) -> Any:
        previous = self.lane
        self._local.lane = lane
        try:
            return call()
        finally:
            self._local.lane = previous

    def _before(self, model: Any, **_: Any) -> None:
        with self._lock:
            key = (self.lane, model.name)
            self._counts[key] += 1
            action = self._actions.pop((*key, self._counts[key]), None)
        if action is not None:
            action()


@pytest.fixture
def lanes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Lanes]:
    made = Lanes(monkeypatch)
    yield made
    made.unhook()


def test_a_delivery_that_imports_first_is_followed_by_the_one_that_read_the_older_manifest(
    bed: Bed, lanes: Lanes
) -> None:
    bed.finished_run()
    event = bed.driver.event("Create", props())
    answers: dict[str, Any] = {}

    def second_delivery() -> None:
        # A has read the manifest (CHECKPOINT) and not claimed yet; a newer run finishes
        # and B, delivered meanwhile, reads it and imports before A goes on.
        bed.newer_run()
        answers["B"] = lanes.run("B", lambda: bed.driver.on_event(copy.deepcopy(event), None))

    lanes.before("A", "GetCustomModel", second_delivery)
    answers["A"] = bed.driver.on_event(copy.deepcopy(event), None)

    new_arn = bed.plane.bedrock.models[NEWER_MODEL]["modelArn"]
    assert answers["A"]["PhysicalResourceId"] == answers["B"]["PhysicalResourceId"] == new_arn
    assert [c["modelName"] for c in bed.creates()] == [NEWER_MODEL]
    assert list(bed.plane.bedrock.models) == [NEWER_MODEL]
    items = bed.ledger()
    assert items[f"import#{NEWER_MODEL}"]["State"] == "bought"
    given_up = items[f"import#{MODEL}"]
    assert given_up["State"] == "released"
    assert given_up["Fields"]["SupersededBy"] == f"import#{NEWER_MODEL}"
    assert "ClientRequestToken" not in given_up["Fields"]  # never called
    assert bed.driver.complete(event, answers["A"]).ok


def test_a_delivery_during_the_import_call_follows_it_with_the_same_token(
    bed: Bed, lanes: Lanes
) -> None:
    bed.finished_run()
    event = bed.driver.event("Create", props())
    answers: dict[str, Any] = {}

    def second_delivery() -> None:
        # A holds import#MODEL as calling and is about to send CreateCustomModel; a newer
        # run has finished. B finds A's checkpoint in the ledger, waits, then resends.
        bed.newer_run()
        answers["B"] = lanes.run("B", lambda: bed.driver.on_event(copy.deepcopy(event), None))

    lanes.before("A", "CreateCustomModel", second_delivery)
    answers["A"] = bed.driver.on_event(copy.deepcopy(event), None)

    arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    assert answers["A"]["PhysicalResourceId"] == answers["B"]["PhysicalResourceId"] == arn
    assert list(bed.plane.bedrock.models) == [MODEL]
    # B's resend and A's call: one token, one model (Bedrock ignores the repeat).
    assert bed.tokens() == [token(MODEL, CHECKPOINT)] * 2
    assert f"import#{NEWER_MODEL}" not in bed.ledger()


def test_two_deliveries_that_claimed_two_checkpoints_import_only_one(
    bed: Bed, lanes: Lanes
) -> None:
    """A claims the older checkpoint while B, which read the newer one, has claimed its
    own and decided to call: A (the older manifest) wins, gives B's claim up with a
    conditional write, and B's `calling` then fails its condition and B follows A."""
    bed.finished_run()
    event = bed.driver.event("Create", props())
    b_ready, b_resume = threading.Event(), threading.Event()
    answers: dict[str, Any] = {}

    def b_pauses_before_calling() -> None:
        b_ready.set()
        assert b_resume.wait(10)

    def b() -> None:
        answers["B"] = lanes.run("B", lambda: bed.driver.on_event(copy.deepcopy(event), None))

    thread = threading.Thread(target=b, name="delivery-B")

    def start_b() -> None:
        thread.start()
        assert b_ready.wait(10)

    lanes.before("A", "PutItem", start_b)  # right before A's claim
    lanes.before("B", "ListObjectsV2", bed.newer_run)
    lanes.before("B", "PutItem", b_pauses_before_calling, nth=2)  # B's `calling`
    answers["A"] = bed.driver.on_event(copy.deepcopy(event), None)
    b_resume.set()
    thread.join(10)

    arn = bed.plane.bedrock.models[MODEL]["modelArn"]
    assert answers["A"]["PhysicalResourceId"] == answers["B"]["PhysicalResourceId"] == arn
    assert [c["modelName"] for c in bed.creates()] == [MODEL]
    given_up = bed.ledger()[f"import#{NEWER_MODEL}"]
    assert given_up["State"] == "released"
    assert given_up["Fields"]["SupersededBy"] == f"import#{MODEL}"


# --- the deployment ------------------------------------------------------------------------


def test_the_deployment_is_claimed_and_recorded_in_the_ledger(bed: Bed) -> None:
    bed.finished_run()
    deployment = bedrock_name("lite-sft-model")

    outcome = bed.stack().create(props(Deployment="on-demand"))

    assert outcome.ok, outcome.reason
    item = bed.ledger()[f"deployment#{deployment}"]
    assert item["State"] == "bought"
    assert item["Fields"]["Arn"] == outcome.data["DeploymentArn"]
    assert item["Fields"]["Model"] == outcome.physical_id
    assert item["Fields"]["Generation"] == 0


def test_an_ambiguous_deployment_call_is_resent_with_the_same_token_on_the_next_poll(
    bed: Bed,
) -> None:
    bed.finished_run()
    bed.plane.server_error("CreateCustomModelDeployment", times=3)
    deployment = bedrock_name("lite-sft-model")

    outcome = bed.stack().create(props(Deployment="on-demand"))

    assert outcome.ok, outcome.reason
    calls = bed.plane.calls_to("CreateCustomModelDeployment")
    assert len(calls) == 4 and len({c["clientRequestToken"] for c in calls}) == 1
    assert list(bed.plane.bedrock.deployments) == [deployment]
    item = bed.ledger()[f"deployment#{deployment}"]
    assert (item["State"], item["Fields"]["Resends"]) == ("bought", 1)


def missing_deployment(name: str, arn: str) -> str:
    return (
        f"the purchase ledger records custom model deployment {name} as created ({arn}), but "
        "Bedrock shows no deployment by that name or ARN, so this poll created nothing; if it "
        f"was deleted by hand, release the item with `novapod purchases CONFIG --release "
        f"deployment#{name}` after checking with `aws bedrock get-custom-model-deployment "
        f"--custom-model-deployment-identifier {arn}` that it is gone, then deploy again"
    )


def test_a_duplicate_delivery_whose_deployment_look_up_by_name_misses_finds_it_by_its_arn(
    bed: Bed,
) -> None:
    bed.finished_run()
    deployment = bedrock_name("lite-sft-model")
    event = bed.driver.event("Create", props(Deployment="on-demand"))
    first = bed.driver.send(event)
    assert first.ok, first.reason
    bed.plane.bedrock.hide_names(deployments=3)

    again = bed.driver.send(event)

    assert again.ok, again.reason
    assert again.data["DeploymentArn"] == first.data["DeploymentArn"]
    assert len(bed.plane.calls_to("CreateCustomModelDeployment")) == 1
    item = bed.ledger()[f"deployment#{deployment}"]
    assert (item["State"], item["Attempt"], item["Fields"]["Generation"]) == ("bought", 1, 0)


def test_a_deployment_deleted_by_hand_is_not_created_again_until_its_item_is_released(
    bed: Bed,
) -> None:
    bed.finished_run()
    deployment = bedrock_name("lite-sft-model")
    first = bed.stack().create(props(Deployment="on-demand"))
    assert first.ok, first.reason
    arn = first.data["DeploymentArn"]
    boto3.client("bedrock").delete_custom_model_deployment(customModelDeploymentIdentifier=arn)

    refused = bed.stack().create(props(Deployment="on-demand"))

    assert not refused.ok
    assert refused.reason == missing_deployment(deployment, arn)
    assert len(bed.plane.calls_to("CreateCustomModelDeployment")) == 1
    assert bed.ledger()[f"deployment#{deployment}"]["State"] == "bought"

    release_by_hand("deployment", deployment)
    again = bed.stack().create(props(Deployment="on-demand"))

    assert again.ok, again.reason
    calls = bed.plane.calls_to("CreateCustomModelDeployment")
    assert len(calls) == 2 and calls[0]["clientRequestToken"] != calls[1]["clientRequestToken"]
    item = bed.ledger()[f"deployment#{deployment}"]
    assert (item["State"], item["Attempt"], item["Fields"]["Generation"]) == ("bought", 2, 1)
    assert item["Fields"]["Arn"] == again.data["DeploymentArn"] != arn


def test_a_deployment_the_ledger_cannot_record_is_not_created(bed: Bed) -> None:
    bed.finished_run()
    deployment = bedrock_name("lite-sft-model")
    # The import's three writes pass; every later write fails.
    bed.plane.inject("PutItem", Fault("server_error", status=500), times=300, after=3)

    outcome = bed.stack().create(props(Deployment="on-demand", WaitTimeoutSeconds="120"))

    assert not outcome.ok
    assert outcome.reason == unavailable(
        f"custom model deployment {deployment}",
        f"writing claimed for purchase deployment#{deployment} to the purchase ledger "
        f"{LEDGER_TABLE} failed (InternalServerError: Internal server error)",
    )
    assert bed.plane.calls_to("CreateCustomModelDeployment") == []


# --- the synthesized roles: their environment's items only ------------------------------

NOVA_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"
JOBS_OUTPUT = f"s3://{BUCKET}/nova/nova-jobs/lite-sft/"
STORAGE_KEY = f"arn:aws:kms:us-east-1:{EXAMPLE_ACCOUNT}:key/11111111-2222-3333-4444-555555555555"


@pytest.fixture(scope="module")
def roles(synth: Callable[[Any], Synthesized]) -> dict[str, iam.Principal]:
    """The nova-base stack's Bedrock handler roles, the storage outputs they read resolved
    as the fake world has them (this module's bucket, the ledger table, a key)."""
    named = {"ArtifactsBucketName": BUCKET, "KeyArn": STORAGE_KEY}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            reference = value.get("Fn::GetStackOutput")
            if isinstance(reference, dict) and reference.get("OutputName") in named:
                return named[reference["OutputName"]]
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    template = with_storage_outputs(walk(synth(NOVA_JOBS).templates["nova-base"]), EXAMPLE_ACCOUNT)
    found: dict[str, iam.Principal] = {}
    for function_id, function in resources(template, "AWS::Lambda::Function").items():
        handler = str(function["Properties"]["Handler"])
        if handler.startswith("novapod_lambda.bedrock_model."):
            role = iam.function_role(template, function_id)
            statements = iam.role_statements(
                template, role, account=EXAMPLE_ACCOUNT, region="us-east-1"
            )
            found[handler.rsplit(".", 1)[-1]] = iam.Principal(role, statements)
    assert sorted(found) == ["is_complete", "on_event"]
    return found


def role_stack(
    bed: Bed, on_event: iam.Principal, is_complete: iam.Principal, *, hyperpod_run: bool = True
) -> Stack:
    bed.plane.account = EXAMPLE_ACCOUNT  # the ledger table's ARN names it
    if hyperpod_run:
        bed.plane.put_object(
            BUCKET,
            "nova/nova-jobs/lite-sft/lite-sft-aaaaa/manifest.json",
            manifest(CHECKPOINT),
            T0 - timedelta(hours=1),
        )
    driver = ProviderDriver(
        as_role(bed.plane, on_event, index.on_event),
        as_role(bed.plane, is_complete, index.is_complete),
        advance_clock=bed.clock.advance,
        query_interval_seconds=POLL_SECONDS,
        logical_id="LiteSftModel",
    )
    return Stack(driver)


def test_the_synthesized_roles_import_and_deploy_under_their_environment(
    bed: Bed, roles: dict[str, iam.Principal]
) -> None:
    stack = role_stack(bed, roles["on_event"], roles["is_complete"])

    outcome = stack.create(
        props(OutputPrefix=JOBS_OUTPUT, Environment="nova-jobs", Deployment="on-demand")
    )

    assert outcome.ok, outcome.reason
    states = {i["Purchase"]: (i["Environment"], i["State"]) for i in bed.ledger().values()}
    assert states == {
        f"import#{MODEL}": ("nova-jobs", "bought"),
        f"deployment#{MODEL}": ("nova-jobs", "bought"),
    }


def test_the_synthesized_roles_may_not_touch_another_environments_items(
    bed: Bed, roles: dict[str, iam.Principal]
) -> None:
    stack = role_stack(bed, roles["on_event"], roles["is_complete"])

    outcome = stack.create(props(OutputPrefix=JOBS_OUTPUT, Environment="dev"))

    role = roles["on_event"].role_name
    table = f"arn:aws:dynamodb:us-east-1:{EXAMPLE_ACCOUNT}:table/{LEDGER_TABLE}"
    assert outcome.reason == unavailable(
        "Bedrock model lite-sft-model",
        f"reading the purchase ledger {LEDGER_TABLE} failed (AccessDeniedException: User: "
        f"arn:aws:sts::{EXAMPLE_ACCOUNT}:assumed-role/{role}/handler is not authorized to "
        f"perform: dynamodb:Query on resource: {table} because no identity-based policy "
        "allows the dynamodb:Query action)",
    )
    assert bed.plane.operations() == []


def test_without_the_ledger_statement_the_roles_import_nothing(
    bed: Bed, roles: dict[str, iam.Principal]
) -> None:
    stack = role_stack(bed, roles["on_event"].without("PurchaseLedger"), roles["is_complete"])

    outcome = stack.create(props(OutputPrefix=JOBS_OUTPUT, Environment="nova-jobs"))

    assert not outcome.ok
    assert "no purchase call was made" in outcome.reason
    assert bed.plane.operations() == [] and bed.ledger() == {}


# --- time ------------------------------------------------------------------------------


def test_on_event_worst_case_fits_its_timeout() -> None:
    # list and read the manifest, ask the ledger for the request, then one round; a
    # round after the first starts only while one more fits ON_EVENT_BUDGET_SECONDS.
    before_rounds = 2 * index.BEDROCK_CALL_SECONDS + index.LEDGER_CALL_SECONDS
    assert before_rounds + index.ROUND_SECONDS <= index.ON_EVENT_BUDGET_SECONDS
    assert construct.ON_EVENT_TIMEOUT.to_seconds() > index.ON_EVENT_BUDGET_SECONDS


def test_is_complete_worst_case_fits_its_timeout() -> None:
    # the model, the deployment, its item; claim, calling, the call, bought
    worst = (
        3 * index.BEDROCK_CALL_SECONDS + index.LEDGER_CALL_SECONDS + 3 * index.LEDGER_WRITE_SECONDS
    )
    assert worst < construct.IS_COMPLETE_TIMEOUT.to_seconds()


# --- a checkpoint trained on a SageMaker training job -----------------------------------


@pytest.fixture(scope="module")
def import_role(synth: Callable[[Any], Synthesized]) -> iam.Principal:
    """The nova-base stack's Bedrock import role (what Bedrock assumes to read the
    checkpoint), its statements resolved for the example's account."""
    template = synth(NOVA_JOBS).templates["nova-base"]
    roles = resources(template, "AWS::IAM::Role")
    (role,) = [r for r in roles if r.startswith("BedrockModelsImportRole")]
    return iam.Principal(
        role, iam.role_statements(template, role, account=EXAMPLE_ACCOUNT, region="us-east-1")
    )


def test_a_training_jobs_checkpoint_is_imported_from_its_output_tar_gz_manifest(
    bed: Bed, roles: dict[str, iam.Principal], import_role: iam.Principal
) -> None:
    """An SFT run as a SageMaker training job (the fake's CreateTrainingJob, completed):
    SageMaker writes <S3OutputPath>/<TrainingJobName>/output/output.tar.gz whose
    manifest.json names an -smtj- escrow URI (nova-iterative-training.html). The
    synthesized handler roles find it below the job's output prefix and import exactly
    that URI, and the synthesized import role may read that escrow bucket (and no other
    account's). Fails if the handler looked only for HyperPod's <run>/manifest.json, or
    if the import role's escrow grant did not cover customer-escrow-<account>-smtj-*."""
    stack = role_stack(bed, roles["on_event"], roles["is_complete"], hyperpod_run=False)
    jobs = bed.plane.training_jobs
    job_role = f"arn:aws:iam::{EXAMPLE_ACCOUNT}:role/novapod-nova-jobs-training-jobs"
    jobs.trust_role(job_role)
    name = "novapod-nova-jobs-lite-sft-1a2b3c4d-1"
    boto3.client("sagemaker").create_training_job(
        TrainingJobName=name,
        RoleArn=job_role,
        AlgorithmSpecification={
            "TrainingImage": "708977205387.dkr.ecr.us-east-1.amazonaws.com/"
            "nova-fine-tune-repo:SM-TJ-SFT-latest",
            "TrainingInputMode": "File",
        },
        OutputDataConfig={"S3OutputPath": JOBS_OUTPUT, "CompressionType": "GZIP"},
        ResourceConfig={"InstanceType": "ml.p5.48xlarge", "InstanceCount": 2},
        StoppingCondition={"MaxRuntimeInSeconds": 36000},
    )
    archive_uri = jobs.complete(name)
    escrow = jobs.escrow_checkpoint(name)
    assert archive_uri == f"{JOBS_OUTPUT}{name}/output/output.tar.gz"
    assert escrow.startswith(f"s3://customer-escrow-{EXAMPLE_ACCOUNT}-smtj-")

    outcome = stack.create(props(OutputPrefix=JOBS_OUTPUT, Environment="nova-jobs"))

    assert outcome.ok, outcome.reason
    (create,) = bed.creates()
    assert create["modelSourceConfig"] == {"s3DataSource": {"s3Uri": escrow}}
    assert outcome.data["ModelName"] == bedrock_name("lite-sft-model", escrow)
    bucket, _, key = escrow.removeprefix("s3://").partition("/")

    def decision(action: str, resource: str) -> str:
        return iam.authorize(import_role.statements, iam.Request(action, resource))

    for action, resource in (
        ("s3:ListBucket", f"arn:aws:s3:::{bucket}"),
        ("s3:GetBucketLocation", f"arn:aws:s3:::{bucket}"),
        ("s3:GetObject", f"arn:aws:s3:::{bucket}/{key}/model/config.json"),
    ):
        assert decision(action, resource) == "allowed", (action, resource)
    other = bucket.replace(EXAMPLE_ACCOUNT, "999999999999")
    assert decision("s3:GetObject", f"arn:aws:s3:::{other}/{key}/x") == "implicit_deny"
