"""A deployed environment in the fake control plane for `novapod status` tests: a config
with a bought plan (extended by a day), an adopted plan, a HyperPod cluster with two
restricted groups and a standard group, the purchase ledger, the job `sft` (two runs of
24 h on nova-lite, the plan's first two days) with its outputs in the artifacts bucket
and its runs in the fake Kubernetes API, read with the scientists' Role (which may not
read kube-system: the bootstrap's marker is a 403 unless `as_admin()`), the EKS cluster
at the config's Kubernetes version and the hyperpod stack; each piece scriptable.

`StatusWorld.healthy()` builds the environment with nothing to report (a day into the
plan, sft's first run done, its second running on the four nova-lite nodes, the
scheduled check's samples of both plans in CloudWatch, every instance in use); tests then
change one thing (a plan's status or counts, a group, a node, a ledger item, a run) and
run the CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from novapod import cli
from novapod.config import load_config
from novapod.constructs.handler_core.values import iso
from novapod.nova.kubernetes import scientist_rules
from novapod.operate import cluster_api
from novapod.operate.status import assess as status_assess
from novapod.operate.status import render as status_render
from novapod.operate.status.expected import expected
from tests import json_schemas
from tests.conftest import ROOT
from tests.fakes.aws_control_plane import FakeControlPlane, StackResource
from tests.fakes.hyperpod import restricted_group, standard_group
from tests.fakes.kubernetes import FakeKubernetes
from tests.handlers.ledger_rows import ledger_row

ACCOUNT = "123456789012"
TABLE = "novapod-dev-storage-PurchaseLedger-1A2B3C"
CLUSTER = "novapod-dev"
NOW = datetime(2027, 7, 10, 12, 0, tzinfo=UTC)
SCHEMA = json.loads((ROOT / "docs" / "reference" / "status.schema.json").read_text())
ADOPTED = "team-spare"
ADOPTED_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/{ADOPTED}"
ARTIFACTS = "novapod-dev-storage-artifacts-4d5e6f"
NAMESPACE = "nova-jobs"
OUTPUTS = "nova/dev/"
PLAN_START = NOW - timedelta(days=1)  # the healthy world's plans started a day ago
RUN_1, RUN_2 = "sft-a1b2c", "sft-d3e4f"
SAMPLE_MINUTES = 5  # monitoring.every_minutes's default
# The hyperpod stack last updated the cluster two days before the plans started: its
# standard group's nodes came then, the restricted groups' with their plans.
STACK_UPDATED = PLAN_START - timedelta(days=2)
MARKER_PATH = "/api/v1/namespaces/kube-system/configmaps/novapod-hyperpod-dependencies"

CONFIG = """\
name: dev
account: "123456789012"
region: us-east-1
network:
  vpc:
    zone_ids: [use1-az4, use1-az6]
jobs:
  - name: sft
    model: lite
    technique: sft-lora
    runs: 2
    hours_per_run: 24
    instance_group: nova-lite
    data: {train: sft/train.jsonl}
capacity:
  training_plans:
    - name: main
      instance_type: ml.p5.48xlarge
      instance_count: 4
      duration_hours: 144
      start_after: 2027-07-01T00:00:00Z
      end_before: 2027-08-30T00:00:00Z
      purchase: {approve: APPROVE, max_upfront_fee: 90000}
      extend: {duration_hours: 24, approve: EXTEND, max_upfront_fee: 20000}
    - name: spare
      existing_arn: arn:aws:sagemaker:us-east-1:123456789012:training-plan/team-spare
      instance_type: ml.p5.48xlarge
      instance_count: 2
eks: {}
hyperpod:
  restricted_instance_groups:
    - {name: nova-lite, training_plan: main}
    - {name: spare-rig, training_plan: spare}
  instance_groups:
    - {name: system, instance_type: ml.m5.2xlarge, instance_count: 1}
"""


def write_config(tmp_path: Path, text: str = CONFIG) -> tuple[Path, str, str]:
    """The config with its approvals filled in; (path, plan name, extension name)."""
    path = tmp_path / "dev.yaml"
    path.write_text(text.replace("approve: APPROVE, ", "").replace("approve: EXTEND, ", ""))
    plan = expected(load_config(path, approvals=False)).plans[0]
    assert plan.extension_name is not None
    path.write_text(text.replace("APPROVE", plan.plan_name).replace("EXTEND", plan.extension_name))
    load_config(path)  # approved: valid as validate sees it
    return path, plan.plan_name, plan.extension_name


def ledger_item(purchase: str, state: str, **fields: object) -> dict[str, object]:
    return ledger_row(purchase, state, updated_at="2027-06-20T08:00:00Z", **fields)


def pytorchjob(
    name: str,
    phase: str,
    *,
    start: datetime,
    end: datetime | None = None,
    message: str = "",
) -> dict[str, Any]:
    """A PyTorchJob as the training operator shows it: its conditions in the order it
    appended them (Created, Running, then Succeeded or Failed), each with its time."""
    conditions = [
        {"type": "Created", "status": "True", "lastTransitionTime": iso(start)},
    ]
    if phase != "Created":
        conditions[0]["status"] = "False"
        conditions.append({"type": "Running", "status": "True", "lastTransitionTime": iso(start)})
    if phase in ("Succeeded", "Failed", "Restarting", "Suspended"):
        assert phase in ("Restarting", "Suspended") or end is not None
        conditions[-1]["status"] = "False"
        final = {"type": phase, "status": "True", "lastTransitionTime": iso(end or start)}
        if message:
            final["message"] = message
        conditions.append(final)
    status: dict[str, Any] = {"conditions": conditions, "startTime": iso(start)}
    if phase == "Succeeded":
        status["completionTime"] = iso(end)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "creationTimestamp": iso(start),
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
        },
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}}},
        "status": status,
    }


def pod(name: str, instance_id: str, phase: str = "Running", *, job: str = "") -> dict[str, Any]:
    """A pod on a HyperPod node (named hyperpod-<instance id> in the cluster)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"training.kubeflow.org/job-name": job or name.rsplit("-", 2)[0]},
        },
        "spec": {"nodeName": f"hyperpod-{instance_id}"},
        "status": {"phase": phase},
    }


@dataclass
class StatusWorld:
    plane: FakeControlPlane
    kube: FakeKubernetes
    path: Path
    plan: str  # the bought plan's SageMaker name
    extension: str  # its extension's approval name
    capsys: pytest.CaptureFixture[str]
    slept: list[float] = field(default_factory=list)

    @property
    def plan_arn(self) -> str:
        return f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/{self.plan}"

    # --- scripting ----------------------------------------------------------------------

    def buy(
        self,
        name: str,
        *,
        status: str,
        start: datetime,
        hours: int,
        count: int,
        fee: str,
        in_use: int | None = None,
        message: str = "",
    ) -> None:
        offering = self.plane.add_offering(
            f"tpo-{name}",
            zones=["us-east-1a"],
            start=start,
            fee=fee,
            instance_count=count,
            duration_hours=hours,
        )
        self.plane.add_plan(name, offering, statuses=[(status, message)])
        used = count if in_use is None else in_use
        self.plane.set_plan_counts(name, available=count - used, in_use=used, unhealthy=0)

    def sampled(
        self,
        plan: str,
        in_use: int | Callable[[datetime], int],
        *,
        since: datetime = PLAN_START,
        until: datetime = NOW,
        every_minutes: int = SAMPLE_MINUTES,
    ) -> int:
        """What the scheduled check put of the config's Active plan `plan` every
        `every_minutes` from `since` to before `until`, as decisions.metric_data puts it:
        its InUseInstances (a count, or one per sample time), that count times the
        sample's seconds (InUseInstanceSeconds) and those seconds (SampledSeconds); the
        number of samples."""
        count = 0
        when = since
        dimensions = {"Environment": "dev", "Plan": plan}
        seconds = every_minutes * 60
        monitoring = self.plane.monitoring
        while when < until:
            value = in_use(when) if callable(in_use) else in_use
            monitoring.put_datum("novapod", "InUseInstances", dimensions, at=when, value=value)
            monitoring.put_datum(
                "novapod",
                "InUseInstanceSeconds",
                dimensions,
                at=when,
                value=value * seconds,
                unit="Seconds",
            )
            monitoring.put_datum(
                "novapod", "SampledSeconds", dimensions, at=when, value=seconds, unit="Seconds"
            )
            count += 1
            when += timedelta(minutes=every_minutes)
        return count

    def put(self, item: dict[str, object]) -> None:
        self.plane.dynamodb.put_raw(TABLE, item, settled=True)

    def output(self, job: str, run: str, path: str, written: datetime) -> None:
        """An object a run wrote under its job's output prefix."""
        self.plane.put_object(ARTIFACTS, f"{OUTPUTS}{job}/{run}/{path}", b"{}", written)

    def finished(self, job: str, run: str, *, start: datetime, end: datetime) -> None:
        """What a finished training run leaves in S3: TensorBoard logs, then manifest.json."""
        self.output(job, run, "tensorboard/events.out.tfevents", start + timedelta(minutes=5))
        self.output(job, run, "manifest.json", end)

    def nodes_of(self, group: str) -> list[str]:
        return [
            n["InstanceId"]
            for n in self.plane.hyperpod.nodes[CLUSTER]
            if n["InstanceGroupName"] == group
        ]

    def running(self, run: str, *, start: datetime, nodes: list[str]) -> None:
        """A run whose PyTorchJob is Running, a pod on each of `nodes`."""
        self.kube.add_object(pytorchjob(run, "Running", start=start))
        for index, node in enumerate(nodes):
            self.kube.add_object(pod(f"{run}-worker-{index}", node, job=run))
        self.output("sft", run, "tensorboard/events.out.tfevents", start + timedelta(minutes=5))

    def drop_pods(self, run: str, *, keep: int = 0) -> None:
        """Remove the run's pods but the first `keep` (they finished, or were evicted)."""
        pods = sorted(
            key for key in self.kube.objects if key[1] == "pods" and key[3].startswith(f"{run}-")
        )
        for key in pods[keep:]:
            del self.kube.objects[key]

    def sft_done(self, start: datetime) -> None:
        """Both of sft's runs finished (their PyTorchJobs cleaned up, their manifests in S3),
        one after the other from `start`."""
        for index, run in enumerate((RUN_1, RUN_2)):
            begin = start + timedelta(hours=24 * index)
            self.finished("sft", run, start=begin, end=begin + timedelta(hours=23))

    def sft_runs(self) -> None:
        """sft's first run done (its PyTorchJob Succeeded, its manifest written), its
        second running since the plan's 24th hour on the four nova-lite nodes."""
        done = PLAN_START + timedelta(hours=23, minutes=50)
        self.kube.add_object(
            pytorchjob(RUN_1, "Succeeded", start=PLAN_START + timedelta(minutes=10), end=done)
        )
        self.finished("sft", RUN_1, start=PLAN_START + timedelta(minutes=10), end=done)
        self.running(
            RUN_2, start=PLAN_START + timedelta(hours=24), nodes=self.nodes_of("nova-lite")
        )

    def healthy(self, *, runs: bool = True) -> StatusWorld:
        """Every piece in place and working: `novapod status` exits 0 (without `runs`,
        sft has no run yet)."""
        start = NOW - timedelta(days=1)
        self.buy(self.plan, status="Active", start=start, hours=144, count=4, fee="55000.00")
        self.plane.add_extension(self.plan, 24)
        self.buy(ADOPTED, status="Active", start=start, hours=336, count=2, fee="30000.00")
        self.put(
            ledger_item(
                f"plan#{self.plan}",
                "bought",
                Arn=self.plan_arn,
                UpfrontFee="55000.00",
                Currency="USD",
                BoughtAt="2027-06-20T08:00:00Z",
                OfferingId=f"tpo-{self.plan}",
                Approval=self.plan,
            )
        )
        self.put(
            ledger_item(
                f"extension#{self.extension}",
                "bought",
                UpfrontFee="9000.00",
                Currency="USD",
                Hours=24,
                Plan=self.plan,
            )
        )
        self.cluster()
        self.sampled("main", 4)  # the check saw every reserved instance in use
        self.sampled("spare", 2)
        if runs:
            self.sft_runs()
        return self

    def cluster(
        self,
        *,
        statuses: tuple[str | tuple[str, str], ...] = ("InService",),
        lite: dict[str, Any] | None = None,
        spare: dict[str, Any] | None = None,
        system: dict[str, Any] | None = None,
        node_recovery: str = "Automatic",
    ) -> None:
        """The cluster, its groups (each overridable by keyword) and a Running node per
        instance each group has."""
        hyperpod = self.plane.hyperpod
        groups = [
            restricted_group(
                "nova-lite", current=4, target=4, plan_arn=self.plan_arn, account=ACCOUNT
            )
            | (lite or {}),
            restricted_group("spare-rig", current=2, target=2, plan_arn=ADOPTED_ARN)
            | (spare or {}),
        ]
        standard = [standard_group("system", current=1, target=1) | (system or {})]
        hyperpod.add_cluster(
            CLUSTER,
            statuses=statuses,
            restricted_groups=[g for g in groups if g.get("InstanceGroupName")],
            instance_groups=[g for g in standard if g.get("InstanceGroupName")],
        )
        hyperpod.clusters[CLUSTER]["NodeRecovery"] = node_recovery
        for group in [*groups, *standard]:
            if group.get("InstanceGroupName"):
                # Nodes of a group on a plan launch when its plan starts; others at the deploy.
                launched = (
                    PLAN_START + timedelta(minutes=10)
                    if group.get("TrainingPlanArn")
                    else STACK_UPDATED - timedelta(minutes=20)
                )
                hyperpod.add_nodes(
                    CLUSTER, group["InstanceGroupName"], group["CurrentCount"], launched=launched
                )

    def marker(self, **recorded: str) -> dict[str, str]:
        """The bootstrap's marker ConfigMap in kube-system, as a build with the config's pins
        writes it, keys overridden by `recorded` (an empty value: the key absent)."""
        wanted = expected(load_config(self.path, approvals=False)).eks
        assert wanted is not None
        data = {
            **wanted.marker,
            "nova_access_objects": "nova-jobs/Role/novapod-scientists",
            "nova_namespace": NAMESPACE,
            "pins_sha256": "0" * 64,
            "written_by": "novapod-cluster-bootstrap",
        } | recorded
        data = {k: v for k, v in data.items() if v}
        self.kube.add_object(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": wanted.marker_name, "namespace": wanted.marker_namespace},
                "data": data,
            }
        )
        return data

    def as_admin(self) -> None:
        """The caller is a cluster admin (eks.admin_principals): RBAC lets it read anything."""
        self.kube.allow_all()

    # --- running ------------------------------------------------------------------------

    def run(self, *args: str) -> tuple[int, str, str]:
        status = cli.main(["status", str(self.path), *args])
        out, err = self.capsys.readouterr()
        return status, out, err

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        status, out, err = self.run("--json", *args)
        assert err == ""
        document = json.loads(out)
        json_schemas.validate(document, SCHEMA)
        assert document["exit_status"] == status
        return status, document

    def _judged(self, *args: str) -> tuple[int, str, status_assess.Report]:
        """One round of `novapod status` through the CLI (exit status, stdout) and the
        report it judged; stderr must be empty."""
        reports: list[status_assess.Report] = []
        judge = status_assess.assess

        def kept(*given: Any, **named: Any) -> status_assess.Report:
            reports.append(judge(*given, **named))
            return reports[-1]

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(status_assess, "assess", kept)
            status, out, err = self.run(*args)
        assert err == ""
        (report,) = reports  # one round
        assert report.exit_status == status
        return status, out, report

    def text_and_json(self, *args: str) -> tuple[int, str, dict[str, Any]]:
        """One round of `novapod status` through the CLI, as text (exit status, stdout),
        and the JSON document of that same round: the report the CLI judged, rendered as
        `--json` renders it (cli._status: to_json, not compact without --watch), checked
        as json() checks it. One collection serves both forms; the `--json` path through
        cli.main is tested on its own in every state (test_status_cli.py)."""
        status, out, report = self._judged(*args)
        document = json.loads(status_render.to_json(report))
        json_schemas.validate(document, SCHEMA)
        assert document["exit_status"] == status
        return status, out, document

    def json_and_text(self, *args: str) -> tuple[int, dict[str, Any], str]:
        """json(), and the text of that same round: the report the CLI judged, printed as
        `novapod status` without --json prints it (cli._status: print(to_text)). The
        text path through cli.main is tested on its own in every state
        (test_status_states_text.py)."""
        status, out, report = self._judged("--json", *args)
        document = json.loads(out)
        json_schemas.validate(document, SCHEMA)
        assert document["exit_status"] == status
        return status, document, status_render.to_text(report) + "\n"

    def attention(self) -> list[tuple[str, str]]:
        _, document = self.json()
        return [(a["kind"], a["subject"]) for a in document["attention"]]


@pytest.fixture(scope="module")
def status_kube(control_plane: FakeControlPlane) -> Iterator[FakeKubernetes]:
    """The EKS cluster's API server; it checks tokens against the test's credentials."""
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    with FakeKubernetes(cluster_name=CLUSTER, secret_key=secret) as server:
        yield server


@pytest.fixture
def status_world(
    control_plane: FakeControlPlane,
    status_kube: FakeKubernetes,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> StatusWorld:
    control_plane.reset()
    control_plane.account = control_plane.hyperpod.account = ACCOUNT
    control_plane.now = lambda: NOW
    control_plane.add_stack(
        "novapod-dev-storage",
        {"PurchaseLedgerTableName": TABLE, "ArtifactsBucketName": ARTIFACTS},
    )
    control_plane.add_bucket(ARTIFACTS)
    control_plane.dynamodb.create_table(TABLE, partition_key="Environment", sort_key="Purchase")
    # The EKS cluster (novapod-<env>, as the HyperPod cluster's orchestrator names it),
    # whose API authorizes as the scientists' Role in the jobs' namespace.
    status_kube.reset()
    status_kube.namespaces.add(NAMESPACE)
    status_kube.bind_role(NAMESPACE, scientist_rules())
    path, plan, extension = write_config(tmp_path)
    eks = expected(load_config(path, approvals=False)).eks
    assert eks is not None
    control_plane.hyperpod.add_eks_cluster(
        CLUSTER,
        endpoint=status_kube.endpoint,
        ca_pem=status_kube.ca_pem,
        version=eks.kubernetes_version,
    )
    # The hyperpod stack, whose cluster resource CloudFormation last updated STACK_UPDATED.
    control_plane.add_stack(
        "novapod-dev-hyperpod",
        resources={
            "HyperPodCluster": StackResource(
                "AWS::SageMaker::Cluster", status="UPDATE_COMPLETE", updated=STACK_UPDATED
            )
        },
        created=STACK_UPDATED - timedelta(days=5),
    )
    world = StatusWorld(control_plane, status_kube, path, plan, extension, capsys)
    monkeypatch.setattr(cli, "_status_now", lambda: NOW)
    monkeypatch.setattr(cli, "_status_sleep", world.slept.append)
    monkeypatch.setattr(cluster_api, "TIMEOUT_SECONDS", 2.0)
    return world
