"""Real pairs of synthesized configs for the review tests: the single-RIG example and
small edits of it, each synthesized once per session through the `synth` fixture.

No hand-written templates: every pair is what `cdk synth` writes for two configs, or
(`template_edit`, `plan_edit`) a copy of a synthesized cloud assembly with one template
edited as JSON, for a change that only moves values the handler reads (a fee cap) or
one no config makes (an action added to a policy statement).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from novapod import yamlsafe
from tests.conftest import ROOT, Synthesized

BASE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
# Variant files are named review-<edit>.yaml, so no stem meets another config's cdk.out.
PREFIX = "review-"


def _rig(data: dict[str, Any]) -> dict[str, Any]:
    group: dict[str, Any] = data["hyperpod"]["restricted_instance_groups"][0]
    return group


def _plan(data: dict[str, Any]) -> dict[str, Any]:
    plan: dict[str, Any] = data["capacity"]["training_plans"][0]
    return plan


def _fewer_instances(data: dict[str, Any]) -> None:
    _rig(data)["instance_count"] = 2
    # The SFT job needs all 4 instances, so only the evaluation (1 instance) stays, and
    # the plan keeps its size explicitly: the same purchase under the same name.
    data["jobs"] = [
        {k: v for k, v in job.items() if k != "from"}
        for job in data["jobs"]
        if job["technique"] == "evaluation"
    ]
    _plan(data).update(instance_count=4, duration_hours=144)


def _extra_purchases(data: dict[str, Any]) -> None:
    # A second plan with a second restricted group on it, and a Bedrock import.
    data["nova"] = {
        "bedrock_models": [{"name": "lite-sft-model", "job": "sft-lora", "deployment": "on-demand"}]
    }
    data["capacity"]["training_plans"].append(
        {
            "name": "spare",
            "instance_type": "ml.p5.48xlarge",
            "instance_count": 2,
            "duration_hours": 48,
            "start_after": "2027-01-04T00:00:00Z",
            "end_before": "2027-02-28T00:00:00Z",
            "purchase": {"approve": "set-below", "max_upfront_fee": 20000},
        }
    )
    data["hyperpod"]["restricted_instance_groups"].append(
        {"name": "spare", "training_plan": "spare", "fsx_size_gib": 1200, "fsx_throughput": 250}
    )


ENDPOINTS = [
    "s3", "ecr.api", "ecr.dkr", "sts", "logs", "monitoring", "eks", "eks-auth",
    "ssm", "ssmmessages", "ec2messages", "lambda", "sqs",
]  # fmt: skip

EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "same": lambda data: None,  # the base, byte for byte, synthesized on its own
    "node-recovery": lambda data: data["hyperpod"].update(node_recovery="None"),
    "fewer-instances": _fewer_instances,
    "health-checks": lambda data: _rig(data).update(deep_health_checks=["InstanceStress"]),
    "fsx-throughput": lambda data: _rig(data).update(fsx_throughput=500),
    "eks-admins": lambda data: data["eks"]["admin_principals"].append(
        "arn:aws:iam::111122223333:role/Other"
    ),
    # The default (S3 + the RIG set) plus two more interface endpoints.
    "endpoint-set": lambda data: data["network"].update(endpoints=ENDPOINTS),
    "log-retention": lambda data: (
        data["eks"].update(log_retention_days=90),
        data["network"].update(flow_logs={"retention_days": 30}),
    ),
    "add-zone": lambda data: data["network"]["vpc"]["zone_ids"].append("use1-az1"),
    # Twice the instances: what is bought changes, so the plan's name does; the
    # restricted group follows the plan's count (its default).
    "plan-count": lambda data: _plan(data).update(instance_count=8, duration_hours=144),
    "extra-purchases": _extra_purchases,
    "rename-environment": lambda data: data.update(name="renamed"),
    "mlflow": lambda data: data.update(nova={"mlflow": {"enabled": True}}),
}


def edit(data: dict[str, Any], change: str) -> dict[str, Any]:
    """The single-RIG example with one edit (approvals are fixed up by `approved`)."""
    data = copy.deepcopy(data)
    EDITS[change](data)
    return data


# Validation names the plan a config buys when its approval no longer matches; the test
# approves exactly that name, as a user would after reading the message.
_APPROVAL = re.compile(
    r"capacity\.training_plans\[(\d+)\]\.purchase\.approve: .*?set approve: (\S+) to buy"
)


def approved(data: dict[str, Any], path: Path) -> None:
    """Write `data` to `path`, approving the names of the plans it buys."""
    from novapod.config import ConfigError, load_config

    for _ in range(3):
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        try:
            load_config(path)
            return
        except ConfigError as error:
            found = _APPROVAL.findall(error.render())
            if not found:
                raise
            for index, name in found:
                data["capacity"]["training_plans"][int(index)]["purchase"]["approve"] = name
    raise AssertionError(f"{path}: approvals did not settle")


@pytest.fixture(scope="session")
def variant_path(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """variant_path(edit) -> the edited config's file (written once per session)."""
    folder = tmp_path_factory.mktemp("review-configs")
    base = yamlsafe.load(BASE.read_text())
    written: dict[str, Path] = {}

    def make(change: str) -> Path:
        if change not in written:
            path = folder / f"{PREFIX}{change}.yaml"
            approved(edit(base, change), path)
            written[change] = path
        return written[change]

    return make


@pytest.fixture(scope="session")
def variant(
    synth: Callable[[Path], Synthesized], variant_path: Callable[[str], Path]
) -> Callable[[str], Synthesized]:
    """variant(edit) -> the edited config synthesized (once per session); "base" too."""

    def make(change: str) -> Synthesized:
        return synth(BASE if change == "base" else variant_path(change))

    return make


@pytest.fixture(scope="session")
def review_of(variant: Callable[[str], Synthesized]) -> Callable[[str, str], dict[str, Any]]:
    """review_of(base edit, head edit) -> the review's JSON document (cached)."""
    from novapod import review

    cache: dict[tuple[str, str], dict[str, Any]] = {}

    def make(base: str, head: str) -> dict[str, Any]:
        if (base, head) not in cache:
            cache[base, head] = review.build(variant(base).outdir, variant(head).outdir)
        return cache[base, head]

    return make


TRAINING_PLAN = "Custom::NovapodTrainingPlan"


def plan_properties(template: dict[str, Any]) -> dict[str, Any]:
    """The properties of a template's one training plan (edited in place)."""
    (plan,) = [r for r in template["Resources"].values() if r["Type"] == TRAINING_PLAN]
    properties: dict[str, Any] = plan["Properties"]
    return properties


TemplateEdit = Callable[[str, str, str, Callable[[dict[str, Any]], None]], Path]


@pytest.fixture(scope="session")
def template_edit(
    variant: Callable[[str], Synthesized], tmp_path_factory: pytest.TempPathFactory
) -> TemplateEdit:
    """template_edit(label, variant, kind, edit) -> a copy of the variant's cdk.out (asset
    folders left out) in which `edit` changed the template of stack `kind` (capacity,
    nova-base, ...) in place; no synthesis."""
    folder = tmp_path_factory.mktemp("review-template-edits")
    written: dict[str, Path] = {}

    def make(label: str, change: str, kind: str, edit: Callable[[dict[str, Any]], None]) -> Path:
        if label not in written:
            source = variant(change)
            outdir = folder / label
            shutil.copytree(source.outdir, outdir, ignore=shutil.ignore_patterns("asset.*"))
            path = outdir / f"{source.stack_names[kind]}.template.json"
            template = json.loads(path.read_text())
            edit(template)
            path.write_text(json.dumps(template, indent=1))
            written[label] = outdir
        return written[label]

    return make


@pytest.fixture(scope="session")
def plan_edit(
    template_edit: TemplateEdit,
) -> Callable[[str, Callable[[dict[str, Any]], None]], Path]:
    """plan_edit(label, edit) -> a copy of the base's cdk.out (asset folders left out) in
    which `edit` changed the capacity stack's training-plan properties; no synthesis."""

    def make(label: str, change: Callable[[dict[str, Any]], None]) -> Path:
        return template_edit(
            f"plan-{label}", "base", "capacity", lambda template: change(plan_properties(template))
        )

    return make
