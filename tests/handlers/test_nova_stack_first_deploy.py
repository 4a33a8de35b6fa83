"""The first deploy of the nova stack of every environment config/pipeline.example.yaml
deploys (config/examples/nova-jobs.yaml among them), before any job has run: every custom
resource of the synthesized nova template, with its synthesized properties, is sent to
its own handler against the fake AWS and must succeed, or CloudFormation would roll the
whole stack back, the scientists' access and data grants included. Then, for nova-jobs,
a later deploy after lite-sft finished a run, with the model's `refresh` changed, imports
the checkpoint once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
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
ENVIRONMENTS = [d.path.resolve() for d in load_pipeline(PIPELINE).deployments]
ACCOUNT = "111122223333"
ARTIFACTS = f"novapod-artifacts-{ACCOUNT}"
IMPORT_ROLE = f"arn:aws:iam::{ACCOUNT}:role/novapod-bedrock-import"
CHECK_ROLE = f"arn:aws:iam::{ACCOUNT}:role/novapod-nova-environment"
CHECKPOINT = f"s3://customer-escrow-{ACCOUNT}-hp-abc123/lite-sft-aaaaa/outputs/checkpoints"
# What the nova template reads from the other stacks, as the fake world has them.
STACK_OUTPUTS = {
    "ArtifactsBucketName": ARTIFACTS,
    "PurchaseLedger": LEDGER_TABLE,
    "BedrockModelsImportRole": IMPORT_ROLE,
    "NovaEnvironmentHandlersIsCompleteRole": CHECK_ROLE,
}
ENVIRONMENT = "Custom::NovapodNovaEnvironment"
MODEL = "Custom::NovapodBedrockModel"
HANDLERS: dict[str, Any] = {ENVIRONMENT: environment_index, MODEL: bedrock_index}


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


def custom_resources(result: Synthesized) -> list[tuple[str, dict[str, Any]]]:
    """(type, resolved properties but the service token) of every custom resource in
    the nova template."""
    found = []
    for resource in result.templates["nova"]["Resources"].values():
        kind = resource["Type"]
        if kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource":
            properties = {k: v for k, v in resource["Properties"].items() if k != "ServiceToken"}
            found.append((kind, resolved(properties)))
    return found


@dataclass
class FirstDeploy:
    """The world a nova stack's first deploy meets, built from its NovaEnvironment's
    properties: the HyperPod cluster InService with its restricted groups on plans that
    have not started (no nodes yet), the namespace and CRDs in its EKS cluster (the eks
    stack's bootstrap), the storage stack's bucket and purchase ledger, no job ever run."""

    plane: FakeControlPlane
    clock: FakeClock
    servers: ExitStack
    stacks: dict[str, Stack] = field(default_factory=dict)

    def prepare(self, environment: dict[str, Any]) -> None:
        cluster, eks = environment["ClusterName"], environment["EksClusterName"]
        kube = self.servers.enter_context(
            FakeKubernetes(cluster_name=eks, secret_key=os.environ["AWS_SECRET_ACCESS_KEY"])
        )
        self.kube = kube
        groups = []
        for group in environment["RestrictedGroups"]:
            name = group["TrainingPlanArn"].rsplit("/", 1)[-1]
            offering = self.plane.add_offering(
                f"tpo-{name}", zones=["us-east-1a"], start=T0 + timedelta(days=30), fee="1.00"
            )
            arn = self.plane.add_plan(name, offering, statuses=["Scheduled"])
            groups.append(
                restricted_group(group["Name"], current=0, target=4, plan_arn=arn, account=ACCOUNT)
            )
        self.plane.hyperpod.add_cluster(
            cluster, statuses=["InService"], restricted_groups=groups, eks_cluster=eks
        )
        self.plane.hyperpod.add_eks_cluster(eks, endpoint=kube.endpoint, ca_pem=kube.ca_pem)
        kube.namespaces.add(environment["Namespace"])
        for crd in environment["RequiredCrds"]:
            kube.crds.add(crd)

    def deploy(self, found: list[tuple[str, dict[str, Any]]]) -> dict[str, Outcome]:
        """Create every custom resource, each through its own Provider driver."""
        (environment,) = [p for kind, p in found if kind == ENVIRONMENT]
        self.prepare(environment)
        outcomes = {}
        for kind, properties in found:
            module = HANDLERS[kind]
            driver = ProviderDriver(
                module.on_event,
                module.is_complete,
                advance_clock=self.clock.advance,
                query_interval_seconds=60,
                logical_id=kind,
            )
            self.stacks[kind] = Stack(driver)
            outcomes[kind] = self.stacks[kind].create(properties)
        return outcomes


@pytest.fixture
def first_deploy(
    control_plane: FakeControlPlane, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FirstDeploy]:
    control_plane.reset()
    control_plane.account = ACCOUNT
    clock = FakeClock(T0)
    for module in HANDLERS.values():
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
    with ExitStack() as servers:
        world = FirstDeploy(control_plane, clock, servers)
        yield world
        assert control_plane.violations == []
        assert world.kube.bad_tokens() == []


def test_the_pipeline_example_deploys_nova_jobs() -> None:
    assert EXAMPLE.resolve() in ENVIRONMENTS


@pytest.mark.parametrize("path", ENVIRONMENTS, ids=lambda p: Path(p).name)
def test_the_nova_stack_deploys_on_the_first_try_before_any_job_ran(
    synth: Callable[[Any], Synthesized], first_deploy: FirstDeploy, path: Path
) -> None:
    found = custom_resources(synth(path))
    # Every custom resource of the stack is driven here: a new kind needs its handler.
    assert {kind for kind, _ in found} <= set(HANDLERS)

    outcomes = first_deploy.deploy(found)

    assert {k: (o.status, o.reason) for k, o in outcomes.items()} == {
        kind: ("SUCCESS", "") for kind, _ in found
    }
    plans = {v for k, v in outcomes[ENVIRONMENT].data.items() if k.endswith(".PlanStatus")}
    assert plans == {"Scheduled"}
    bought = [op for op in first_deploy.plane.operations() if op.startswith("Create")]
    assert bought == [] and first_deploy.plane.dynamodb.items(LEDGER_TABLE) == []
    if path == EXAMPLE.resolve():
        model = outcomes[MODEL]
        assert model.physical_id == (
            "novapod:waiting-for-checkpoint:lite-sft-model:"
            f"s3://{ARTIFACTS}/nova/nova-jobs/lite-sft/"
        )
        assert model.data["Status"] == "WaitingForCheckpoint"
        # lite-sft-model has an on-demand deployment: both outputs say it is waiting.
        assert model.data["ModelArn"] == model.data["DeploymentArn"]
        assert model.data["ModelArn"].startswith(
            "none yet: waiting for a checkpoint of job lite-sft"
        )


def test_a_later_deploy_with_refresh_imports_the_run_once(
    synth: Callable[[Any], Synthesized], first_deploy: FirstDeploy
) -> None:
    found = custom_resources(synth(EXAMPLE))
    assert all(o.ok for o in first_deploy.deploy(found).values())
    plane = first_deploy.plane
    plane.put_object(
        ARTIFACTS,
        "nova/nova-jobs/lite-sft/lite-sft-aaaaa/manifest.json",
        json.dumps({"checkpoint_s3_bucket": CHECKPOINT}).encode(),
        T0,
    )
    (properties,) = [p for kind, p in found if kind == MODEL]
    stack = first_deploy.stacks[MODEL]

    later = stack.update({**properties, "Refresh": "1"})  # refresh: 1 in the entry

    assert later.ok and not stack.rolled_back, later.reason
    (create,) = plane.calls_to("CreateCustomModel")
    assert create["modelSourceConfig"] == {"s3DataSource": {"s3Uri": CHECKPOINT}}
    assert create["roleArn"] == IMPORT_ROLE
    assert len(plane.calls_to("CreateCustomModelDeployment")) == 1
    assert later.data["Status"] == "Active"
    assert later.physical_id == plane.bedrock.models[create["modelName"]]["modelArn"]
    # The placeholder's Delete (the physical ID changed) deleted nothing.
    assert [o.request_type for o in stack.history] == ["Create", "Update", "Delete"]
    assert not [op for op in plane.operations() if op.startswith("Delete")]
