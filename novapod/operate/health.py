"""`novapod health CONFIG --group G [--wait]`: HyperPod's on-demand deep health check on
the nodes of one instance group, and each node's result. It only starts the check
(SageMaker StartClusterHealthCheck) and reads (ListClusterNodes; for its refusal, the
jobs' pods through the cluster's Kubernetes API as `novapod status` reads them).

What AWS documents:

- StartClusterHealthCheck(ClusterName, DeepHealthCheckConfigurations[]) where each
  configuration names an InstanceGroupName, optionally up to 500 InstanceIds (none: the
  whole group) and 1 to 3 DeepHealthChecks of DeepHealthCheckType (botocore's sagemaker
  model: InstanceStress | InstanceConnectivity | MultiNodeTrainingValidation); it answers
  the cluster's ARN, and its only listed error is ResourceNotFound
  (docs.aws.amazon.com/sagemaker/latest/APIReference/API_StartClusterHealthCheck.html).
  "The unhealthy nodes will be automatically rebooted or replaced."
- The checks (docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-
  deep-health-checks.html, and the Slurm page sagemaker-hyperpod-resiliency-slurm-deep-
  health-checks.html that names the two types): InstanceStress runs the instance-level
  checks (GPU/NVLink counts, DCGM diagnostics level 4, Neuron sysfs and hardware checks,
  EFA loopback, a hardware stress test); InstanceConnectivity the cluster-level ones
  (NCCL tests across NVIDIA GPUs, NCCOM across Trainium), which need at least two nodes
  of a type that communicates across nodes. Every check is for GPU or Trainium instances:
  `SUPPORTED` below; a CPU group has none to run.
- Progress and result per node: DescribeClusterNode (and ListClusterNodes, which carries
  the same InstanceStatus) shows `DeepHealthCheckInProgress` while the node is checked;
  then `Running` when it passed, `Failure` (with a Message) when it failed, and a node
  HyperPod reboots or replaces (`NodeRecovery: Automatic`) goes Pending, ShuttingDown or
  leaves the list. In the EKS cluster the node carries the labels
  `sagemaker.amazonaws.com/deep-health-check-status` (InProgress | Passed | Failed) and
  `sagemaker.amazonaws.com/node-health-status` (Unschedulable while checked,
  UnschedulablePendingReboot / UnschedulablePendingReplacement after a failure)
  (sagemaker-hyperpod-eks-resiliency-node-labels.html); they are cluster-scoped Node
  objects the scientists' Role cannot read, so `health` goes by InstanceStatus: a node
  has a result once it was seen in progress and then is Running (passed), or is Failure,
  or was taken away (failed, being rebooted or replaced).
- Neither answer carries a check's result or time: botocore's ClusterNodeSummary
  (ListClusterNodes) has InstanceGroupName, InstanceId, NodeLogicalId, InstanceType,
  LaunchTime, LastSoftwareUpdateTime, InstanceStatus {Status, Message}, UltraServerInfo,
  PrivateDnsHostname, CurrentImageReleaseVersion and ImageVersionStatus, and
  ClusterNodeDetails (DescribeClusterNode) adds configuration (lifecycle, VPC, storage,
  placement, images, Kubernetes labels and taints), no LastHealthCheck of any kind. So
  `health` snapshots each node's status before the start: a node already in Failure is
  reported as such, not as this check's failure, unless it is then seen in progress. A
  node never seen in progress that is still Running (or still in its old Failure) after
  `SETTLE_POLLS` listings and `SETTLE_AFTER` since the start has no result `health` can
  see (`unknown`): the check may have finished between two listings, or not run on it;
  its `sagemaker.amazonaws.com/deep-health-check-status` label (Passed | Failed) tells,
  for a role that may read Nodes.
- StartClusterHealthCheck's API reference and botocore's model list only
  ResourceNotFound; what it answers while a check already runs is not documented. A
  ValidationException or ConflictException (the common client errors of SageMaker's
  JSON API) is reported as one sentence naming the call, with AWS's message (`refused`).

While a node is checked it "is not available for running workloads" (the labels page),
so `health` refuses a group that runs a job unless `--force`: a pending or running pod of
the jobs' namespace on one of its nodes (named `hyperpod-<instance id>` in the cluster),
or a run of a job of the config on that group still running. Only the jobs' namespace
is read (the scientists' Role reaches no other): pods of other namespaces never stop a
check, and the refusal says so; a config without jobs has nothing to look at (a note
says so). When the cluster's API cannot be read it cannot tell, and refuses too.

`--json` prints one document (`to_json`, or `refusal_json` for a check that did not
start), as docs/reference/health.schema.json describes it (`SCHEMA_VERSION`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from novapod.constructs.handler_core import health as health_rules
from novapod.constructs.handler_core.values import iso
from novapod.operate.status import collect, jobs
from novapod.operate.status.expected import expected

if TYPE_CHECKING:
    from novapod.config import NovapodConfig

DEFAULT_CHECKS = ("InstanceStress", "InstanceConnectivity")
# GPU (NVIDIA) and Trainium instance families HyperPod sells, the instances the deep
# health checks are for; InstanceConnectivity also needs the nodes to talk across (the
# p and trn families, with EFA).
SUPPORTED = re.compile(r"ml\.(p\d|g\d|gr\d|trn\d)[a-z0-9-]*\.\w+")
CONNECTED = re.compile(r"ml\.(p\d|trn\d)[a-z0-9-]*\.\w+")
IN_PROGRESS = "DeepHealthCheckInProgress"
PASSED_STATUS = "Running"
FAILED_STATUS = "Failure"
EXIT_STARTED = 0
EXIT_REFUSED = 2  # the CLI's exit for a HealthError (as for a config error)
EXIT_ATTENTION = 4
# A node not seen in progress by then has no result health can see (the module's doc).
SETTLE_POLLS = 3
SETTLE_AFTER = timedelta(minutes=10)
# Client errors with which StartClusterHealthCheck may refuse a start (not in its model).
REFUSAL_CODES = frozenset({"ValidationException", "ConflictException"})
NO_JOBS_NOTE = "not checked whether a job runs on the group: the config has no jobs"
# `--json`'s version (docs/reference/health.schema.json); a new key or value is a new one.
SCHEMA_VERSION = 1


class HealthError(Exception):
    """A check that cannot or must not start; the message is one sentence (exit 2)."""


@dataclass(frozen=True)
class Target:
    cluster: str
    group: str
    kind: str  # restricted | standard
    instance_type: str
    nodes: tuple[Mapping[str, Any], ...]  # ListClusterNodes' summaries of the group
    eks_cluster: str  # the EKS cluster it is orchestrated by


def group_names(config: NovapodConfig) -> list[str]:
    hyperpod = config.hyperpod
    if hyperpod is None:
        return []
    return [g.name for g in hyperpod.restricted_instance_groups] + [
        g.name for g in hyperpod.instance_groups
    ]


def check_group(config: NovapodConfig, group: str) -> None:
    """Refuse a group the config does not have (before any AWS call)."""
    names = group_names(config)
    if not names:
        raise HealthError("the config has no hyperpod section, so no instance group to check")
    if group not in names:
        raise HealthError(f"the config has no instance group {group}; its groups are: "
                          + ", ".join(names))  # fmt: skip


def target(config: NovapodConfig, sagemaker: Any, group: str) -> Target:
    """The deployed group and its nodes; a HealthError when there is nothing to check."""
    cluster = config.prefix
    try:
        described = sagemaker.describe_cluster(ClusterName=cluster)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == collect.NOT_FOUND:
            raise HealthError(
                f"the HyperPod cluster {cluster} is not deployed; deploy the hyperpod stack first"
            ) from None
        raise
    found = [
        (kind, g)
        for kind, key in (
            ("restricted", "RestrictedInstanceGroups"),
            ("standard", "InstanceGroups"),
        )
        for g in described.get(key) or []
        if g.get("InstanceGroupName") == group
    ]
    if not found:
        raise HealthError(
            f"instance group {group} is in the config but not in the cluster {cluster}; deploy "
            "the hyperpod stack first"
        )
    kind, details = found[0]
    nodes = group_nodes(sagemaker, cluster, group)
    if not nodes:
        raise HealthError(
            f"group {group} has no nodes to check ({details.get('CurrentCount', 0)} of "
            f"{details.get('TargetCount', 0)}: a restricted group has nodes only while its "
            "plan runs)"
        )
    eks_arn = str(((described.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn") or "")
    eks_cluster = eks_arn.rsplit("/", 1)[-1] if "/" in eks_arn else config.prefix
    return Target(cluster, group, kind, str(details.get("InstanceType")), tuple(nodes), eks_cluster)


def group_nodes(sagemaker: Any, cluster: str, group: str) -> list[Mapping[str, Any]]:
    """The group's nodes, every page (InstanceGroupNameContains matches parts of names:
    the exact name is kept)."""
    pages = sagemaker.get_paginator("list_cluster_nodes")
    return [
        node
        for page in pages.paginate(ClusterName=cluster, InstanceGroupNameContains=group)
        for node in page.get("ClusterNodeSummaries", [])
        if node.get("InstanceGroupName") == group
    ]


def checks_for(found: Target, asked: Sequence[str] | None) -> tuple[tuple[str, ...], list[str]]:
    """The checks to run and notes on those left out; a HealthError for a CPU group."""
    if not SUPPORTED.fullmatch(found.instance_type):
        raise HealthError(
            f"group {found.group} runs on {found.instance_type}, and HyperPod's deep health "
            "checks are for GPU and Trainium instances only"
        )
    if asked:
        return tuple(dict.fromkeys(asked)), []
    notes = []
    checks = ["InstanceStress"]
    if len(found.nodes) < 2:
        notes.append("InstanceConnectivity left out: it tests across nodes, the group has one")
    elif not CONNECTED.fullmatch(found.instance_type):
        notes.append(
            f"InstanceConnectivity left out: {found.instance_type} does not communicate across "
            "nodes (ask for it with --checks)"
        )
    else:
        checks.append("InstanceConnectivity")
    return tuple(checks), notes


def busy(
    config: NovapodConfig,
    found: Target,
    *,
    eks: Any,
    sts: Any,
    config_path: str,
) -> str | None:
    """Why the group must not be checked now (a job runs on it), or None; a HealthError
    when the cluster's API cannot tell."""
    wanted = expected(config)
    if not has_jobs(config):
        return None  # no job of novapod's can run there (NO_JOBS_NOTE)
    assert wanted.namespace is not None
    kubernetes = collect.kubernetes_facts(eks, sts, found.eks_cluster, wanted.namespace)
    if not kubernetes.read:
        raise HealthError(
            f"cannot tell whether group {found.group} runs a job ({kubernetes.note}); run "
            "novapod health where the cluster's API answers, or pass --force"
        )
    facts = collect.JobsFacts(outputs_uri="", outputs={}, kubernetes=kubernetes)
    ours = {str(n.get("InstanceId")) for n in found.nodes}
    held = {i: pods for i, pods in (jobs.busy_nodes(facts) or {}).items() if i in ours}
    running = [
        (job.name, run.name)
        for job in wanted.jobs
        if job.instance_group == found.group
        for run in jobs.runs_of(job, facts)
        if run.state == "running"
    ]
    if not held and not running:
        return None
    config_ = shlex.quote(config_path)
    only = f" (only the jobs' namespace {wanted.namespace} is looked at)"
    out_of_service = (
        "a deep health check takes the group's nodes out of service while it runs and would "
    )
    if running:
        job, run = running[0]
        where = (
            f"holds {len(held)} of its {len(found.nodes)} nodes" if held else "is starting on it"
        )
        return (
            f"group {found.group} runs a job: run {run} of job {job} {where}{only}; "
            f"{out_of_service}"
            f"stop the job: wait for it to finish, cancel it (novapod cancel {config_} {job} "
            f"--run {run}), or pass --force"
        )
    pods = sorted(p for held_pods in held.values() for p in held_pods)
    shown = ", ".join(pods[:3]) + (", ..." if len(pods) > 3 else "")
    return (
        f"group {found.group} runs a job: pods of namespace {wanted.namespace} ({shown}) hold "
        f"{len(held)} of its {len(found.nodes)} nodes (pods of other namespaces are not looked "
        f"at); {out_of_service}stop them: wait for them to finish, or pass --force"
    )


IN_PROGRESS = "DeepHealthCheckInProgress"


def already_checking(found: Target) -> str | None:
    """Why not to start a check on a group whose nodes already run one, or None. Results
    are read from the nodes' status alone (ListClusterNodes has no field for a check), so
    a second check would be credited with the first one's; and StartClusterHealthCheck's
    API reference does not say it refuses one."""
    busy_nodes = [
        str(n.get("InstanceId")) for n in found.nodes if health_rules.node_status(n) == IN_PROGRESS
    ]
    if not busy_nodes:
        return None
    return (
        f"group {found.group} already runs a deep health check on {len(busy_nodes)} of its "
        f"{len(found.nodes)} nodes ({IN_PROGRESS}: {', '.join(busy_nodes)}); wait until they "
        f"leave that status (aws sagemaker list-cluster-nodes --cluster-name {found.cluster} "
        f"--instance-group-name-contains {found.group}), then start another"
    )


def has_jobs(config: NovapodConfig) -> bool:
    """Whether the config has jobs whose pods `busy` can look for."""
    wanted = expected(config)
    return bool(wanted.jobs) and wanted.namespace is not None


def refused(found: Target, error: ClientError) -> str | None:
    """The sentence for StartClusterHealthCheck refusing to start (a check may already run
    on the group: the API does not document how it answers then), or None for another
    error."""
    details = error.response.get("Error", {})
    code = str(details.get("Code") or "")
    if code not in REFUSAL_CODES:
        return None
    return (
        f"StartClusterHealthCheck refused to start the check on group {found.group} "
        f"({code}: {details.get('Message') or 'no message'}); if a deep health check already "
        f"runs there, follow it with aws sagemaker list-cluster-nodes --cluster-name "
        f"{found.cluster} --instance-group-name-contains {found.group}"
    )


def start(sagemaker: Any, found: Target, checks: Sequence[str]) -> None:
    sagemaker.start_cluster_health_check(
        ClusterName=found.cluster,
        DeepHealthCheckConfigurations=[
            {"InstanceGroupName": found.group, "DeepHealthChecks": list(checks)}
        ],
    )


# --- results ------------------------------------------------------------------------------


@dataclass
class NodeResult:
    instance_id: str
    status: str | None  # its last InstanceStatus; None once it left the list
    message: str | None
    before: str | None = None  # its InstanceStatus before the start
    seen_in_progress: bool = False
    # pending | in-progress | passed | failed | replaced (this check's results);
    # already-failed (in Failure before the start, never seen in progress);
    # unknown (never seen in progress, Running once settled: no result to see)
    result: str = "pending"

    @property
    def final(self) -> bool:
        return self.result in ("passed", "failed", "replaced", "unknown")

    def json(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "status": self.status,
            "message": self.message,
            "result": self.result,
        }


@dataclass
class Tracker:
    """Each node's result from the listings after the start."""

    nodes: dict[str, NodeResult] = field(default_factory=dict)
    polls: int = 0
    started_at: datetime | None = None
    settled: bool = False  # SETTLE_POLLS listings and SETTLE_AFTER since the start

    @classmethod
    def of(cls, found: Target, started_at: datetime | None = None) -> Tracker:
        """The group's nodes as listed before the start (their status kept as `before`)."""
        nodes = {}
        for node in found.nodes:
            node_id = str(node["InstanceId"])
            shown = node.get("InstanceStatus") or {}
            before = str(shown["Status"]) if shown.get("Status") else None
            nodes[node_id] = NodeResult(node_id, before, shown.get("Message") or None, before)
        return cls(nodes, started_at=started_at)

    def observe(self, listed: Sequence[Mapping[str, Any]], now: datetime | None = None) -> None:
        self.polls += 1
        if self.started_at is not None and now is not None:
            self.settled = self.polls >= SETTLE_POLLS and now - self.started_at >= SETTLE_AFTER
        shown_now = {str(n.get("InstanceId")): n for n in listed}
        for node_id, node in self.nodes.items():
            if node.final:
                continue
            shown = shown_now.get(node_id)
            failing_before = node.before == FAILED_STATUS and not node.seen_in_progress
            if shown is None:  # taken away: being rebooted or replaced after failing
                node.status = None
                node.result = "already-failed" if failing_before else "replaced"
                continue
            status = (shown.get("InstanceStatus") or {}).get("Status")
            node.status = str(status) if status else None
            node.message = (shown.get("InstanceStatus") or {}).get("Message") or None
            if status == IN_PROGRESS:
                node.seen_in_progress = True
                node.result = "in-progress"
            elif status == FAILED_STATUS:
                node.result = "already-failed" if failing_before else "failed"
            elif status == PASSED_STATUS and node.seen_in_progress:
                node.result = "passed"
            elif node.seen_in_progress and status in ("Pending", "ShuttingDown", "NotFound"):
                node.result = "replaced"
            elif status == PASSED_STATUS and self.settled:
                node.result = "unknown"  # finished between two listings, or never checked
            else:
                node.result = "pending"

    @property
    def done(self) -> bool:
        """Every node has a result (one already failing before the start, once settled)."""
        return all(
            n.final or (n.result == "already-failed" and (self.settled or n.status is None))
            for n in self.nodes.values()
        )

    @property
    def failed(self) -> list[NodeResult]:
        """The nodes this check failed (or that HyperPod took away while it ran)."""
        return [n for n in self.nodes.values() if n.result in ("failed", "replaced")]

    @property
    def already_failed(self) -> list[NodeResult]:
        return [n for n in self.nodes.values() if n.result == "already-failed"]

    @property
    def unknown(self) -> list[NodeResult]:
        return [n for n in self.nodes.values() if n.result == "unknown"]


def exit_status(tracker: Tracker, *, waited: bool) -> int:
    """0: started (or, after --wait, every node passed); 4: a node failed or was failing
    before the start, or the wait ended before every node had a result it could see."""
    if tracker.failed or tracker.already_failed:
        return EXIT_ATTENTION
    if waited and not (tracker.done and not tracker.unknown):
        return EXIT_ATTENTION
    return EXIT_STARTED


def _node_list(nodes: Sequence[NodeResult]) -> str:
    return "; ".join(
        n.instance_id + (f" ({n.message})" if n.message else f" ({n.result})") for n in nodes
    )


def summary(tracker: Tracker, *, waited: bool, timed_out: bool, stopped: str | None = None) -> str:
    """One line: how many passed, failed, were failing before, have no result (and why
    the wait stopped: `timed_out`, or `stopped` saying what ended it)."""
    total = len(tracker.nodes)
    passed = sum(1 for n in tracker.nodes.values() if n.result == "passed")
    failed, before, unknown = tracker.failed, tracker.already_failed, tracker.unknown
    parts = [f"{passed} of {total} nodes passed"]
    if failed:
        parts.append(
            f"{len(failed)} failed: {_node_list(failed)} (HyperPod reboots or replaces them "
            "with node recovery Automatic)"
        )
    if before:
        parts.append(
            f"{len(before)} in Failure before the check started, not this check's result: "
            f"{_node_list(before)}"
        )
    if unknown:
        ids = " ".join(f"hyperpod-{n.instance_id}" for n in unknown)
        parts.append(
            f"{len(unknown)} with no result to see (Running, never seen "
            "DeepHealthCheckInProgress: the check finished between two polls, or did not run "
            f"there): {', '.join(n.instance_id for n in unknown)}; kubectl get node {ids} -L "
            "sagemaker.amazonaws.com/deep-health-check-status shows Passed or Failed"
        )
    left = total - passed - len(failed) - len(before) - len(unknown)
    if left:
        if stopped:
            when = f" when {stopped}"
        elif timed_out:
            when = " when the wait timed out"
        else:
            when = "" if waited else " yet"
        parts.append(f"{left} without a result{when}")
    return ", ".join(parts)


def render_text(
    found: Target,
    checks: Sequence[str],
    started_at: datetime,
    tracker: Tracker,
    notes: Sequence[str],
    *,
    waited: bool,
    timed_out: bool,
    stopped: str | None = None,
) -> str:
    """The table of nodes and the summary; `stopped`: what ended the wait early (a poll
    that failed), printed before the error."""
    lines = [
        f"novapod health: deep health check ({', '.join(checks)}) started on group "
        f"{found.group} of HyperPod cluster {found.cluster} at {iso(started_at)}",
        *(f"  note: {n}" for n in notes),
        "",
    ]
    rows = [["node", "status", "result", "message"]]
    rows += [
        [n.instance_id, n.status or "-", n.result, n.message or ""] for n in tracker.nodes.values()
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += [
        ("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))).rstrip()
        for r in rows
    ]
    lines += ["", summary(tracker, waited=waited, timed_out=timed_out, stopped=stopped)]
    if not waited or stopped:
        lines.append(
            f"follow it with: aws sagemaker list-cluster-nodes --cluster-name {found.cluster} "
            f"--instance-group-name-contains {found.group} (or novapod health ... --wait)"
        )
    return "\n".join(lines)


def to_json(
    found: Target,
    checks: Sequence[str],
    started_at: datetime,
    tracker: Tracker,
    notes: Sequence[str],
    *,
    waited: bool,
    timed_out: bool,
) -> str:
    """The check and each node's result, as docs/reference/health.schema.json describes:
    `state` started (no --wait), finished (--wait, every node has a result) or timed-out."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "state": "timed-out" if timed_out else "finished" if waited else "started",
        "cluster": found.cluster,
        "group": found.group,
        "instance_type": found.instance_type,
        "checks": list(checks),
        "started_at": iso(started_at),
        "waited": waited,
        "timed_out": timed_out,
        "done": tracker.done,
        "notes": list(notes),
        "nodes": [n.json() for n in tracker.nodes.values()],
        "summary": summary(tracker, waited=waited, timed_out=timed_out),
        "refusal": None,
        "exit_status": exit_status(tracker, waited=waited),
    }
    return json.dumps(document, indent=2, sort_keys=True)


def refusal_json(config: NovapodConfig, group: str, refusal: str, *, waited: bool) -> str:
    """A check that did not start (a HealthError: exit 2), in the same schema: `state`
    refused and the sentence that says why; nothing was started, no node has a result."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "state": "refused",
        "cluster": config.prefix if config.hyperpod is not None else None,
        "group": group,
        "instance_type": None,
        "checks": [],
        "started_at": None,
        "waited": waited,
        "timed_out": False,
        "done": False,
        "notes": [],
        "nodes": [],
        "summary": None,
        "refusal": refusal,
        "exit_status": EXIT_REFUSED,
    }
    return json.dumps(document, indent=2, sort_keys=True)
