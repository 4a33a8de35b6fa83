"""What the jobs' pods may do on the environment's MLflow tracking server, from the
sagemaker-mlflow actions kept as data (novapod/data/mlflow_actions.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from novapod import yamlsafe

SOURCE = "novapod/data/mlflow_actions.yaml"
PREFIX = "sagemaker-mlflow"


@dataclass(frozen=True)
class MlflowActions:
    """The sagemaker-mlflow actions (names without the prefix)."""

    tracking_server_actions: tuple[str, ...]  # take the mlflow-tracking-server resource
    without_resource_level: tuple[str, ...]  # only Resource "*" grants them

    def run_actions(self) -> tuple[str, ...]:
        """What the restricted groups' nodes may do on the jobs' tracking server.

        AWS's Nova MLflow setup for HyperPod grants the cluster's execution role
        `sagemaker-mlflow:*` on the MLflow resource ("Nova Customization - MLFlow setup for
        SageMaker HyperPod", docs.aws.amazon.com/nova/latest/userguide/nova-model-monitor
        .html). Written out here instead of `*`, on the one server: every action that takes
        the tracking-server resource (all that `*` on its ARN grants) but those that
        delete, which logging a run never needs (experiments and runs outlive the jobs).
        """
        return tuple(
            f"{PREFIX}:{a}" for a in self.tracking_server_actions if not a.startswith("Delete")
        )


@cache
def mlflow_actions() -> MlflowActions:
    return parse_mlflow_actions(yamlsafe.load_packaged("novapod", "data/mlflow_actions.yaml"))


def parse_mlflow_actions(data: dict[str, Any]) -> MlflowActions:
    """Check and type novapod/data/mlflow_actions.yaml."""
    lists = {}
    for key in ("tracking_server_actions", "without_resource_level"):
        values = data.get(key)
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise ValueError(f"{SOURCE}: {key} must be a list of action names")
        lists[key] = tuple(values)
    both = set(lists["tracking_server_actions"]) & set(lists["without_resource_level"])
    if both:
        raise ValueError(f"{SOURCE}: {', '.join(sorted(both))} listed under both keys")
    return MlflowActions(**lists)
