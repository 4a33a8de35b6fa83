"""A deployed environment in the fake control plane for `novapod status` tests: a config
with a bought plan (extended by a day), an adopted plan, a HyperPod cluster with two
restricted groups and a standard group, the purchase ledger; each piece scriptable.

`StatusWorld.healthy()` builds the environment with nothing to report; tests then change
one thing (a plan's status or counts, a group, a node, a ledger item) and run the CLI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from novapod import cli
from novapod.config import load_config
from novapod.operate.status.expected import expected
from tests.conftest import ROOT
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.fakes.hyperpod import restricted_group, standard_group
from tests.handlers.ledger_rows import ledger_row

ACCOUNT = "123456789012"
TABLE = "novapod-dev-storage-PurchaseLedger-1A2B3C"
CLUSTER = "novapod-dev"
NOW = datetime(2027, 7, 10, 12, 0, tzinfo=UTC)
SCHEMA = json.loads((ROOT / "docs" / "reference" / "status.schema.json").read_text())
ADOPTED = "team-spare"
ADOPTED_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/{ADOPTED}"

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


@dataclass
class StatusWorld:
    plane: FakeControlPlane
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

    def put(self, item: dict[str, object]) -> None:
        self.plane.dynamodb.put_raw(TABLE, item, settled=True)

    def healthy(self) -> StatusWorld:
        """Every piece in place and working: `novapod status` exits 0."""
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
                hyperpod.add_nodes(CLUSTER, group["InstanceGroupName"], group["CurrentCount"])

    # --- running ------------------------------------------------------------------------

    def run(self, *args: str) -> tuple[int, str, str]:
        status = cli.main(["status", str(self.path), *args])
        out, err = self.capsys.readouterr()
        return status, out, err

    def json(self, *args: str) -> tuple[int, dict[str, Any]]:
        status, out, err = self.run("--json", *args)
        assert err == ""
        document = json.loads(out)
        jsonschema.validate(document, SCHEMA)
        assert document["exit_status"] == status
        return status, document

    def attention(self) -> list[tuple[str, str]]:
        _, document = self.json()
        return [(a["kind"], a["subject"]) for a in document["attention"]]


@pytest.fixture
def status_world(
    control_plane: FakeControlPlane,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> StatusWorld:
    control_plane.reset()
    control_plane.account = control_plane.hyperpod.account = ACCOUNT
    control_plane.now = lambda: NOW
    control_plane.add_stack("novapod-dev-storage", {"PurchaseLedgerTableName": TABLE})
    control_plane.dynamodb.create_table(TABLE, partition_key="Environment", sort_key="Purchase")
    path, plan, extension = write_config(tmp_path)
    world = StatusWorld(control_plane, path, plan, extension, capsys)
    monkeypatch.setattr(cli, "_status_now", lambda: NOW)
    monkeypatch.setattr(cli, "_status_sleep", world.slept.append)
    return world
