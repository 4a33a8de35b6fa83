"""The first deploy of config/examples/nova-jobs.yaml's nova stack (also the pipeline
example's production stage), before any job has run: every custom resource of the
synthesized nova template, with its synthesized properties, is sent to its own handler
against the fake AWS and must succeed, or CloudFormation would roll the whole stack back,
the scientists' access and data grants included. Then a later deploy, once lite-sft has
finished a run and the model's `refresh` changed, imports the checkpoint once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from botocore.retries.standard import ExponentialBackoff

from novapod.config import load_pipeline
from novapod.constructs.bedrock_model.handler import index as bedrock_index
from novapod.constructs.nova_environment.handler import index as environment_index
from tests.conftest import ROOT, Synthesized
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.fakes.hyperpod import restricted_group
from tests.fakes.kubernetes import FakeKubernetes
from tests.handlers.lifecycle import Outcome, ProviderDriver, Stack
from tests.handlers.world import LEDGER_TABLE, T0, FakeClock

EXAMPLE = ROOT / "config" / "examples" / "nova-jobs.yaml"
PIPELINE = ROOT / "config" / "pipeline.example.yaml"
ACCOUNT = "111122223333"
CLUSTER = "novapod-nova-jobs"  # the HyperPod cluster and the EKS cluster
ARTIFACTS = f"novapod-nova-jobs-artifacts-{ACCOUNT}"
IMPORT_ROLE = f"arn:aws:iam::{ACCOUNT}:role/novapod-nova-jobs-bedrock-import"
CHECK_ROLE = f"arn:aws:iam::{ACCOUNT}:role/novapod-nova-jobs-nova-environment"
CHECKPOINT = f"s3://customer-escrow-{ACCOUNT}-hp-abc123/lite-sft-aaaaa/outputs/checkpoints"
# What the nova template reads from the other stacks, as the fake world has it.
STACK_OUTPUTS = {
    "ArtifactsBucketName": ARTIFACTS,
    "PurchaseLedger": LEDGER_TABLE,
    "BedrockModelsImportRole": IMPORT_ROLE,
    "NovaEnvironmentHandlersIsCompleteRole": CHECK_ROLE,
}
HANDLERS: dict[str, Any] = {
    "Custom::NovapodNovaEnvironment": environment_index,
    "Custom::NovapodBedrockModel": bedrock_index,
}


def resolved(value: Any) -> Any:
    """A property with the other stacks' outputs (Fn::GetStackOutput) as the fake world
    has them; any other intrinsic is a reference this test does not know: it fails."""
    if isinstance(value, list):
        return [resolved(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::GetStackOutput" in value:
        name = value["Fn::GetStackOutput"]["OutputName"]
        known = [v for k, v in STACK_OUTPUTS.items() if k in name]
        assert len(known) == 1, f"no fake value for stack output {name}"
        return known[0]
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolved(p)) for p in parts)
    assert not any(k.startswith(("Fn::", "Ref")) for k in value), f"unresolved {value}"
    return {k: resolved(v) for k, v in value.items()}


def custom_resources(result: Synthesized) -> dict[str, tuple[str, dict[str, Any]]]:
    """Logical ID -> (type, resolved properties but the service token) of every custom
    resource in the nova template."""
    found = {}
    for logical_id, resource in result.templates["nova"]["Resources"].items():
        kind = resource["Type"]
        if kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource":
            properties = {k: v for k, v in resource["Properties"].items() if k != "ServiceToken"}
            found[logical_id] = (kind, resolved(properties))
    return found


@pytest.fixture(scope="module")
def kube(control_plane: FakeControlPlane) -> Iterator[FakeKubernetes]:
    # The control_plane fixture sets the dummy credentials the handler signs with.
    with FakeKubernetes(
        cluster_name=CLUSTER, secret_key=os.environ["AWS_SECRET_ACCESS_KEY"]
    ) as server:
        yield server


@pytest.fixture
def first_deploy(
    control_plane: FakeControlPlane, kube: FakeKubernetes, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[dict[str, Any]], ProviderDriver]]:
    """The world the nova stack's first deploy meets: the HyperPod cluster InService with
    its two restricted groups on plans that have not started, the namespace and the
    PyTorchJob CRD in EKS (the eks stack's bootstrap), the storage stack's buckets and
    purchase ledger, and no job ever run. Yields a driver per handler module."""
    control_plane.reset()
    kube.reset()
    control_plane.account = ACCOUNT
    clock = FakeClock(T0)
    for module in (bedrock_index, environment_index):
        monkeypatch.setattr(module, "_now", clock.now)
        monkeypatch.setattr(module, "CONNECT_TIMEOUT_SECONDS", 2.0)
        monkeypatch.setattr(module, "READ_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(bedrock_index, "_sleep", clock.advance)
    monkeypatch.setattr(environment_index, "KUBERNETES_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    control_plane.dynamodb.create_table(
        LEDGER_TABLE, partition_key="Environment", sort_key="Purchase"
    )
    control_plane.add_bucket(ARTIFACTS)
    groups = []
    for group, plan in (("rig-tune", "tune-3c2b60dc"), ("rig-rl", "rl-dac943c0")):
        name = f"novapod-nova-jobs-{plan}"
        offering = control_plane.add_offering(
            f"tpo-{name}", zones=["us-east-1a"], start=T0 + timedelta(days=30), fee="60000.00"
        )
        arn = control_plane.add_plan(name, offering, statuses=["Scheduled"])
        groups.append(restricted_group(group, current=0, target=4, plan_arn=arn, account=ACCOUNT))
    control_plane.hyperpod.add_cluster(
        CLUSTER, statuses=["InService"], restricted_groups=groups, eks_cluster=CLUSTER
    )
    control_plane.hyperpod.add_eks_cluster(CLUSTER, endpoint=kube.endpoint, ca_pem=kube.ca_pem)
    kube.namespaces.add("kubeflow")
    kube.crds.add("pytorchjobs.kubeflow.org")

    def driver(module: Any) -> ProviderDriver:
        return ProviderDriver(
            module.on_event,
            module.is_complete,
            advance_clock=clock.advance,
            query_interval_seconds=60,
            logical_id=module.__name__,
        )

    yield driver
    assert control_plane.violations == []
    assert kube.bad_tokens() == []


def test_the_pipeline_example_deploys_this_file() -> None:
    deployed = [d.path.resolve() for d in load_pipeline(PIPELINE).deployments]
    assert EXAMPLE.resolve() in deployed


def test_the_nova_stack_deploys_on_the_first_try_before_any_job_ran(
    synth: Callable[[Any], Synthesized],
    first_deploy: Callable[[Any], ProviderDriver],
    control_plane: FakeControlPlane,
) -> None:
    found = custom_resources(synth(EXAMPLE))
    # Every custom resource of the stack is driven here: a new one needs its handler above.
    assert sorted(kind for kind, _ in found.values()) == sorted(HANDLERS)

    outcomes: dict[str, Outcome] = {}
    stacks: dict[str, Stack] = {}
    for kind, properties in found.values():
        stacks[kind] = Stack(first_deploy(HANDLERS[kind]))
        outcomes[kind] = stacks[kind].create(properties)

    assert {k: (o.status, o.reason) for k, o in outcomes.items()} == {
        k: ("SUCCESS", "") for k in HANDLERS
    }
    environment = outcomes["Custom::NovapodNovaEnvironment"].data
    assert environment["rig-tune.PlanStatus"] == environment["rig-rl.PlanStatus"] == "Scheduled"
    model = outcomes["Custom::NovapodBedrockModel"]
    assert model.physical_id == (
        f"novapod:waiting-for-checkpoint:lite-sft-model:s3://{ARTIFACTS}/nova/nova-jobs/lite-sft/"
    )
    assert model.data["Status"] == "WaitingForCheckpoint"
    # lite-sft-model has an on-demand deployment: both outputs say it is waiting.
    assert model.data["ModelArn"] == model.data["DeploymentArn"]
    assert model.data["ModelArn"].startswith("none yet: waiting for a checkpoint of job lite-sft")
    bought = [op for op in control_plane.operations() if op.startswith("Create")]
    assert bought == [] and control_plane.dynamodb.items(LEDGER_TABLE) == []

    # A later deploy: lite-sft finished a run, and the entry's refresh changed (1).
    control_plane.put_object(
        ARTIFACTS,
        "nova/nova-jobs/lite-sft/lite-sft-aaaaa/manifest.json",
        json.dumps({"checkpoint_s3_bucket": CHECKPOINT}).encode(),
        T0,
    )
    (_, properties) = next(v for v in found.values() if v[0] == "Custom::NovapodBedrockModel")
    later = stacks["Custom::NovapodBedrockModel"].update({**properties, "Refresh": "1"})

    assert later.ok and not stacks["Custom::NovapodBedrockModel"].rolled_back, later.reason
    (create,) = control_plane.calls_to("CreateCustomModel")
    assert create["modelSourceConfig"] == {"s3DataSource": {"s3Uri": CHECKPOINT}}
    assert create["roleArn"] == IMPORT_ROLE
    assert len(control_plane.calls_to("CreateCustomModelDeployment")) == 1
    assert later.data["Status"] == "Active" and later.physical_id.startswith(
        "arn:aws:bedrock:us-east-1:"
    )
    assert [o.request_type for o in stacks["Custom::NovapodBedrockModel"].history] == [
        "Create",
        "Update",
        "Delete",  # of the placeholder: nothing to delete
    ]
