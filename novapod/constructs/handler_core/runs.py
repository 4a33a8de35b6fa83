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

Whether a PyTorchJob holds nodes is its own condition, not its run's state: Running
("all sub-resources (e.g. services/pods) of this job have been successfully scheduled
and launched") and Restarting (pods that "reached phase failed but maybe restarted
according to its restart policy": the job keeps its nodes while they restart) do;
Created ("before pods being scheduled and launched") and Suspended (the operator deletes
the pods: CleanUpResources in pkg/controller.v1/common/job.go; Kueue keeps a job it has
not admitted suspended, kueue.sigs.k8s.io/docs/tasks/troubleshooting/
troubleshooting_jobs/, and the HyperPod CLI labels jobs with kueue.x-k8s.io/queue-name)
do not (common_types.go JobConditionType, pinned commit 855e096,
novapod/data/nova_upstream.yaml). Each replica is a pod that asks for all the node's GPUs
(`nvidia.com/gpu: devices`; `replicas: master_nodes` and `processed_worker_nodes` in
aws/sagemaker-hyperpod-recipes launcher/nova/k8s_templates/SFT/training.yaml), so its
replicas (`spec.pytorchReplicaSpecs.<type>.replicas`, which the operator's defaulting
sets to 1 when unset: pkg/apis/kubeflow.org/v1/defaulting_utils.go) are the nodes it uses.
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
# The conditions of a PyTorchJob whose pods are on nodes (see above).
USES_NODES = ("Running", "Restarting")

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


def uses_nodes(obj: Mapping[str, Any]) -> bool:
    """Whether the PyTorchJob's pods hold nodes: its last True condition is Running or
    Restarting (not Created, Suspended, Succeeded or Failed)."""
    return condition(obj)[0] in USES_NODES


def replicas(obj: Mapping[str, Any]) -> int | None:
    """The pods (nodes) a PyTorchJob asks for: the sum of `spec.pytorchReplicaSpecs.*.
    replicas`, or None when one is missing or not a whole number (a spec this rule
    cannot read: the operator's defaulting fills an unset one in)."""
    specs = (obj.get("spec") or {}).get("pytorchReplicaSpecs")
    if not isinstance(specs, Mapping) or not specs:
        return None
    total = 0
    for spec in specs.values():
        count = spec.get("replicas") if isinstance(spec, Mapping) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return None
        total += count
    return total


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
