"""What a job's run is from its PyTorchJobs: the rule `novapod status` (novapod/operate/
status/jobs.py) and the environment's scheduled check (the monitor handler, which can
import only what its Lambda asset holds) both judge runs with. Pure: the standard
library only.

A run is the Helm release `novapod launch --run` starts, named `<job[:34]>-<5 [a-z0-9]>`
(the recipes launcher's main.py, valid_run_name; novapod/nova/cancel.py). It shows in the
cluster as a PyTorchJob of that name (PPO: four, `<run>-rm`, `-cm`, `-am`, `-at`).

A PyTorchJob's state is the last condition whose status is "True" of
`status.conditions` (the Kubeflow training operator's JobConditionType: Created,
Running, Restarting, Suspended, Succeeded, Failed; kubeflow/training-operator
pkg/apis/kubeflow.org/v1/common_types.go; the operator appends them as the job moves
on). A run is failed if one of its PyTorchJobs failed, succeeded once all succeeded,
otherwise running (Created, Running, Restarting and Suspended are all on their way). Its
start is `status.startTime` (or the object's creation), its end `status.completionTime`
(or the Succeeded or Failed condition's time).

Which nodes a run holds is not read from its PyTorchJobs: their conditions and replicas
do not say it. The operator sets Running once the Master replica has one pod in phase
Running (`PyTorchJobReconciler.UpdateJobStatus`, pkg/controller.v1/pytorch/
pytorchjob_controller.go; `Active` counts Running pods, pkg/core/status.go
UpdateJobReplicaStatuses), so a Running job's Workers may still be Pending with no node;
an unset `replicas` is filled in only in the operator's memory (`Scheme.Default` in
Reconcile), not in the object; and a run's other GPU workloads are no PyTorchJobs (PPO's
`<run>-ag` StatefulSet, RFT's generation StatefulSet and its Deployments). The nodes are
read from the pods instead, as `novapod status` counts them (`busy_nodes`): a node holds
a pod of the jobs' namespace when the pod is Running, or Pending with a `nodeName` (the
scheduler bound it there; kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/
#pod-phase). HyperPod names a node in the EKS cluster `hyperpod-<instance id>`, the
instance ID ListClusterNodes gives it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .values import as_utc

# main.py valid_run_name: run_name[:34] + "-" + 5 of [a-z0-9].
RUN_NAME_PREFIX_CHARS = 34
RUN_SUFFIX = "-[a-z0-9]{5}"
# PPO's PyTorchJobs of a run (k8s_templates/PPO/training.yaml upstream, cancel.py).
PPO_PARTS = ("rm", "cm", "am", "at")
FAILED = "Failed"
SUCCEEDED = "Succeeded"
CREATED = "Created"
# The name HyperPod gives a node in the EKS cluster: hyperpod-<instance id>.
NODE_PREFIX = "hyperpod-"
# Pod phases of a pod that holds its node (kubernetes.io/docs/concepts/workloads/pods/
# pod-lifecycle/#pod-phase): Pending once scheduled (it has a nodeName), Running.
HOLDING_PHASES = frozenset({"Pending", "Running"})

RunState = Literal["running", "succeeded", "failed"]


def run_name(job: str, object_name: str) -> str | None:
    """The run of `job` a PyTorchJob named `object_name` belongs to, or None."""
    prefix = re.escape(job[:RUN_NAME_PREFIX_CHARS])
    match = re.fullmatch(rf"({prefix}{RUN_SUFFIX})(?:-(?:{'|'.join(PPO_PARTS)}))?", object_name)
    return match.group(1) if match else None


def kubernetes_time(value: Any) -> datetime | None:
    """A Kubernetes timestamp (RFC 3339, `2027-07-09T12:10:00Z`)."""
    return as_utc(value.replace("Z", "+00:00")) if isinstance(value, str) else None


def condition(obj: Mapping[str, Any]) -> tuple[str | None, datetime | None, str | None]:
    """(type, when, message) of a PyTorchJob's last condition whose status is True."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    true = [c for c in conditions if isinstance(c, dict) and c.get("status") == "True"]
    if not true:
        return None, None, None
    last = true[-1]
    when = kubernetes_time(last.get("lastTransitionTime")) or kubernetes_time(
        last.get("lastUpdateTime")
    )
    return str(last.get("type")), when, (str(last["message"]) if last.get("message") else None)


@dataclass(frozen=True)
class RunPhase:
    """A run as its PyTorchJobs show it."""

    state: RunState
    phase: str  # the operator's condition: Failed, Succeeded, Running, Created, ...
    start: datetime | None
    end: datetime | None  # when it failed or succeeded; None while it runs
    message: str | None  # the Failed condition's message, or the running phase's


def run_phase(objects: Sequence[Mapping[str, Any]]) -> RunPhase:
    """The state of the run whose PyTorchJobs are `objects` (at least one)."""
    seen = [condition(o) for o in objects]
    starts = [
        kubernetes_time((o.get("status") or {}).get("startTime"))
        or kubernetes_time((o.get("metadata") or {}).get("creationTimestamp"))
        for o in objects
    ]
    start = min((s for s in starts if s is not None), default=None)
    failed = [(when, why) for kind, when, why in seen if kind == FAILED]
    if failed:
        failed_at, reason = failed[0]
        return RunPhase("failed", FAILED, start, failed_at, reason)
    if all(kind == SUCCEEDED for kind, _, _ in seen):
        ends = [
            kubernetes_time((o.get("status") or {}).get("completionTime")) or when
            for o, (_, when, _) in zip(objects, seen, strict=True)
        ]
        end = max((e for e in ends if e is not None), default=None)
        return RunPhase("succeeded", SUCCEEDED, start, end, None)
    phases = [kind for kind, _, _ in seen if kind is not None and kind != SUCCEEDED]
    phase = phases[-1] if phases else CREATED
    note = next((m for kind, _, m in seen if kind == phase and m), None)
    return RunPhase("running", phase, start, None, note)


def busy_nodes(pods: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Instance ID -> the names of the pods (of those listed) it holds: each pod Running,
    or Pending with a `nodeName`, on a HyperPod node (`hyperpod-<instance id>`)."""
    out: dict[str, list[str]] = {}
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        phase = (pod.get("status") or {}).get("phase")
        if node.startswith(NODE_PREFIX) and phase in HOLDING_PHASES:
            name = str((pod.get("metadata") or {}).get("name") or "?")
            out.setdefault(node.removeprefix(NODE_PREFIX), []).append(name)
    return out


def runs_by_name(
    job: str, pytorchjobs: Sequence[Mapping[str, Any]]
) -> dict[str, list[Mapping[str, Any]]]:
    """The job's runs among the namespace's PyTorchJobs: run name -> its PyTorchJobs."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for obj in pytorchjobs:
        name = run_name(job, str((obj.get("metadata") or {}).get("name") or ""))
        if name is not None:
            out.setdefault(name, []).append(obj)
    return out
