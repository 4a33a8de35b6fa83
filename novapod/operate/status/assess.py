"""What the facts of one round say: each plan's and instance group's state, the drift
between the deployed environment and the config, and what needs a human (an *attention*
finding, each with the command that deals with it). Pure: facts and a time in, a report
out; `render` prints it.

Plan statuses are those of DescribeTrainingPlan (Pending until paid and fulfilled, then
Scheduled, Active from the start, Expired after the end, Failed when the purchase fails:
docs.aws.amazon.com/sagemaker/latest/dg/training-plan-details-using-api-cli-sdk.html),
plus `NotBought` for a plan DescribeTrainingPlan does not find. A plan needs attention
when it is Failed, when it is Active with instances that run no job (paid for, idle),
with unhealthy instances, or when it ends within `ending_within`. Idle: of a plan the
config's jobs run on, when the cluster's API was read, the reserved instances that hold
no pending or running pod of the jobs' namespace (`jobs.busy_nodes`); otherwise those no
instance group uses (AvailableInstanceCount).

Jobs (`jobs.py`): a job's newest run failed, or the job is late for its slot in the
plan's schedule or at risk of outliving the plan.

Instance groups: a group needs attention when its Status is Failed or Degraded (the
model's InstanceGroupStatus), when a node is in Failure or NotFound (ClusterInstanceStatus),
when it has fewer nodes than desired although it is InService and its plan (if any) is
Active, or when it is bound to a plan that has expired. Drift: a group missing, extra, of
another type or count, or on another plan than the config says; the cluster not deployed;
a plan the config approves but SageMaker does not know; an extension the config asks for
that the plan does not have.

Each plan's `utilization` (`utilization.py`): the instance-hours reserved so far and, of an
Active plan with the monitor stack, the share of them the scheduled check saw in use.

The EKS cluster (with a HyperPod cluster): drift when it is not deployed, when its
Kubernetes version (DescribeCluster's `version`, judged while it is ACTIVE) is not
`eks.kubernetes_version`, and when the bootstrap's marker ConfigMap does not record what
the pins and the config install (the chart's and the RIG script's revisions, the Nova
access objects' digest), or is missing. A marker the caller may not read is a note.

Nodes launched after CloudFormation last updated the cluster (`replaced_nodes` of each
group) are information, not attention: HyperPod replaces nodes itself (node recovery),
and a group's count that differs from the config is drift already.

Every purchase the ledger holds in a state a human must settle (`purchases.attention`:
ambiguous, calling, claimed, failed, released by hand from an unsettled state) needs
attention too: `novapod purchases` shows it and how to release it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from novapod.capacity.extension import SEARCH_COMMAND
from novapod.constructs.cluster_bootstrap import buildspec
from novapod.constructs.handler_core import health, ledger
from novapod.constructs.handler_core.values import as_utc, iso
from novapod.constructs.training_plan.handler.extension import counted, extended_hours
from novapod.operate import purchases
from novapod.operate.status import jobs as status_jobs
from novapod.operate.status.collect import ClusterFacts, EksFacts, Facts, PlanFacts
from novapod.operate.status.expected import ExpectedEks, ExpectedGroup, ExpectedPlan
from novapod.operate.status.utilization import utilization

# 2: the jobs (`jobs`; attention run-failed, job-at-risk, job-late), the instances that
# run a job (plans' instances.running_jobs and idle) and plan-idle judged by them.
# 3: each plan's `utilization` (instance-hours reserved so far, and in use as the
# scheduled check sampled them).
# 4: `eks` (the Kubernetes version and the bootstrap's marker), the drift fields
# kubernetes_version, chart_revision, rig_revision, nova_access and marker, the
# cluster's stack_updated_at and each group's replaced_nodes.
# 5: each job's `runs_on` and each run's `training_job` (a SageMaker training job's status,
# secondary status, plan ARN, instances and billable seconds).
SCHEMA_VERSION = 5
EXIT_HEALTHY = 0
EXIT_ATTENTION = 4
DEFAULT_ENDING_WITHIN = timedelta(hours=72)
NOT_BOUGHT = "NotBought"

# The kinds of attention, most urgent first: the order of the Attention table. Work
# that stops comes first (a failed cluster or group, failing nodes, a failed plan), then
# capacity about to end, purchases whose outcome is unknown, nodes that do not come,
# capacity paid for and idle, and last what differs from the config.
AttentionKind = Literal[
    "cluster-failed",
    "group-failed",
    "unhealthy-nodes",
    "plan-failed",
    "run-failed",
    "plan-unhealthy",
    "plan-ending",
    "job-at-risk",
    "purchase-unsettled",
    "job-late",
    "missing-nodes",
    "plan-expired-in-use",
    "plan-idle",
    "drift",
]
# The Literal lists the kinds in that order.
URGENCY: tuple[AttentionKind, ...] = get_args(AttentionKind)
# ClusterStatus in which the groups are not (yet) what CloudFormation asked for.
CLUSTER_UNSETTLED = frozenset({"Creating", "Deleting"})

DriftField = Literal["cluster", "group", "kind", "instance_type", "instance_count",
                     "training_plan", "plan", "extension", "kubernetes_version",
                     "chart_revision", "rig_revision", "nova_access", "marker"]  # fmt: skip
# The marker's keys and the drift field each is judged as.
MARKER_FIELDS: dict[str, DriftField] = {
    buildspec.CHART_REVISION_KEY: "chart_revision",
    buildspec.RIG_REVISION_KEY: "rig_revision",
    buildspec.NOVA_ACCESS_KEY: "nova_access",
}
# A restricted group gets its nodes when its plan's reserved capacity starts, whenever
# the deploy was: nodes launched within this time of the plan's start came with it (an
# assumption: HyperPod documents no provisioning time; they are information only).
PLAN_START_GRACE = timedelta(hours=1)
EKS_SETTLED = "ACTIVE"  # EKS ClusterStatus in which its version is what it runs


@dataclass(frozen=True)
class Attention:
    kind: AttentionKind
    subject: str  # "plan lite-sft", "group nova-lite", "purchase plan#..."
    message: str
    command: str | None

    def json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "message": self.message,
            "command": self.command,
        }


@dataclass(frozen=True)
class Drift:
    subject: str
    field: DriftField
    config: str | int | None
    deployed: str | int | None
    message: str
    command: str

    def json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "field": self.field,
            "config": self.config,
            "deployed": self.deployed,
            "message": self.message,
            "command": self.command,
        }


@dataclass
class Report:
    """One round's verdict; `json()` is the contract (docs/reference/status.schema.json)."""

    environment: str
    region: str
    observed_at: datetime
    config_path: str
    ledger_table: str
    plans: list[dict[str, Any]]
    cluster: dict[str, Any] | None
    groups: list[dict[str, Any]]
    drift: list[Drift]
    purchases: list[dict[str, Any]]
    attention: list[Attention] = field(default_factory=list)
    jobs: dict[str, Any] | None = None
    eks: dict[str, Any] | None = None

    @property
    def exit_status(self) -> int:
        return EXIT_ATTENTION if self.attention else EXIT_HEALTHY

    def json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "environment": self.environment,
            "region": self.region,
            "observed_at": iso(self.observed_at),
            "config": self.config_path,
            "ledger_table": self.ledger_table,
            "healthy": not self.attention,
            "exit_status": self.exit_status,
            "attention": [a.json() for a in self.attention],
            "plans": self.plans,
            "cluster": self.cluster,
            "groups": self.groups,
            "drift": [d.json() for d in self.drift],
            "purchases": self.purchases,
            "jobs": self.jobs,
            "eks": self.eks,
        }


class _Commands:
    """The commands a finding names, for this config file and environment."""

    def __init__(self, facts: Facts) -> None:
        self.config = shlex.quote(facts.config_path)
        self.expected = facts.expected
        self.cluster = facts.expected.cluster_name or ""

    def deploy(self, part: str) -> str:
        return f"npx cdk deploy -c config={self.config} {self.expected.stack(part)}"

    def purchases(self) -> str:
        return f"novapod purchases {self.config}"

    def plan(self) -> str:
        return f"novapod plan {self.config}"

    def describe_cluster(self) -> str:
        return f"aws sagemaker describe-cluster --cluster-name {self.cluster}"

    def list_nodes(self, group: str) -> str:
        return (
            f"aws sagemaker list-cluster-nodes --cluster-name {self.cluster} "
            f"--instance-group-name-contains {group}"
        )


def assess(facts: Facts, *, ending_within: timedelta = DEFAULT_ENDING_WITHIN) -> Report:
    commands = _Commands(facts)
    attention: list[Attention] = []
    drift: list[Drift] = []
    verdicts = (
        status_jobs.assess_jobs(
            facts.expected,
            facts.jobs,
            _plan_windows(facts),
            facts.observed_at,
            config_path=facts.config_path,
        )
        if facts.jobs is not None
        else []
    )
    busy = _running_jobs(facts)
    plans = [
        _plan(
            facts,
            p,
            facts.expected.plan(p.name),
            ending_within,
            commands,
            attention,
            drift,
            _PlanJobs(busy.get(p.name) if busy is not None else None, verdicts),
        )
        for p in facts.plans
    ]
    cluster, groups = _cluster(facts, plans, commands, attention, drift)
    eks = _eks(facts, commands, drift)
    unsettled = []
    for entry in facts.ledger:
        why = purchases.attention(entry)
        if why is None:
            continue
        detail = entry.get("Error") or entry.get("Detail")
        unsettled.append(
            {
                "key": entry.key,
                "state": entry.state,
                "attention": why,
                "updated_at": entry.updated_at or None,
                "detail": str(detail) if detail else None,
            }
        )
        attention.append(
            Attention(
                "purchase-unsettled",
                f"purchase {entry.key}",
                f"{entry.state}: {why}" + (f" ({detail})" if detail else ""),
                commands.purchases(),
            )
        )
    for verdict in verdicts:
        for kind, message, command in verdict.attention:
            attention.append(Attention(kind, f"job {verdict.job.name}", message, command))
    rows = {f"plan {p['name']}": p for p in plans} | {f"group {g['name']}": g for g in groups}
    for item in drift:
        attention.append(Attention("drift", item.subject, item.message, item.command))
        row = rows.get(item.subject)
        if row is not None and "drift" not in row["attention"]:
            row["attention"].append("drift")
    rank = {kind: i for i, kind in enumerate(URGENCY)}
    attention.sort(key=lambda a: rank[a.kind])  # stable: within a kind, config order
    return Report(
        environment=facts.expected.environment,
        region=facts.expected.region,
        observed_at=facts.observed_at,
        config_path=facts.config_path,
        ledger_table=facts.ledger_table,
        plans=plans,
        cluster=cluster,
        groups=groups,
        drift=drift,
        purchases=unsettled,
        attention=attention,
        jobs=_jobs_section(facts, verdicts),
        eks=eks,
    )


def _jobs_section(
    facts: Facts, verdicts: Sequence[status_jobs.JobVerdict]
) -> dict[str, Any] | None:
    found = facts.jobs
    if found is None:
        return None
    kubernetes = found.kubernetes
    return {
        "namespace": kubernetes.namespace,
        "eks_cluster": kubernetes.eks_cluster,
        "outputs": found.outputs_uri,
        "kubernetes_read": kubernetes.read,
        "note": kubernetes.note,
        "items": [status_jobs.job_json(v) for v in verdicts],
    }


def _plan_windows(facts: Facts) -> dict[str, status_jobs.PlanWindow]:
    """Each plan's status and window as DescribeTrainingPlan shows it (extensions included)."""
    out = {}
    for found in facts.plans:
        plan = found.described or {}
        out[found.name] = status_jobs.PlanWindow(
            name=found.name,
            status=str(plan.get("Status") or NOT_BOUGHT),
            start=as_utc(plan.get("StartTime")),
            end=as_utc(plan.get("EndTime")),
            arn=plan.get("TrainingPlanArn"),
        )
    return out


def _running_jobs(facts: Facts) -> dict[str, int] | None:
    """Plan entry -> how many of its instances hold a pod of the jobs' namespace (a node of
    a group on that plan), for the plans the config's jobs run on; None when the cluster's
    API was not read. A plan no job of the config runs on is left out: what runs on it
    (in another namespace, for another team) cannot be seen with the scientists' rights."""
    busy = status_jobs.busy_nodes(facts.jobs)
    if busy is None or facts.cluster is None:
        return None
    plan_of = {g.name: g.plan for g in facts.expected.groups}
    out: dict[str, int] = {}
    for node in facts.cluster.nodes:
        plan = plan_of.get(str(node.get("InstanceGroupName")))
        if plan is not None and str(node.get("InstanceId")) in busy:
            out[plan] = out.get(plan, 0) + 1
    # A training job on a plan holds its InstanceCount of the plan's instances while it
    # runs past Pending (Pending: it waits for the plan's capacity, holding none).
    entry_of = {
        str(p.described["TrainingPlanArn"]): p.name
        for p in facts.plans
        if p.described is not None and p.described.get("TrainingPlanArn")
    }
    assert facts.jobs is not None
    for described_runs in facts.jobs.training_jobs.values():
        for described in described_runs:
            run = status_jobs.training_job_facts(described)
            plan = entry_of.get(str(run["plan_arn"]))
            if (
                plan is not None
                and run["status"] in ("InProgress", "Stopping")
                and run["secondary_status"] != "Pending"
            ):
                out[plan] = out.get(plan, 0) + int(run["instance_count"] or 0)
    return {p.name: out.get(p.name, 0) for p in facts.expected.plans if p.jobs}


@dataclass(frozen=True)
class _PlanJobs:
    """What the jobs say of a plan: instances running a job (None: not known), verdicts."""

    running: int | None
    verdicts: Sequence[status_jobs.JobVerdict]

    def next_launch(self, plan: str) -> str | None:
        """The first of the plan's jobs that has runs left, none running and every
        predecessor done: what to launch on idle capacity."""
        done = {v.job.name for v in self.verdicts if v.remaining == 0}
        for v in self.verdicts:
            if v.job.plan != plan or not v.remaining or v.running or not v.job.launchable:
                continue
            if all(p in done for p in v.job.predecessors):
                return v.job.name
        return None

    def all_done(self, plan: str) -> bool:
        mine = [v for v in self.verdicts if v.job.plan == plan]
        return bool(mine) and all(v.remaining == 0 for v in mine)


# --- plans -------------------------------------------------------------------------------


def _hours(delta: timedelta) -> int:
    """Whole hours, rounded towards minus infinity (an hour short shows as the hour before)."""
    return int(delta.total_seconds() // 3600)


def _plan(  # noqa: PLR0917 - one plan's verdict reads all of these
    facts: Facts,
    found: PlanFacts,
    wanted: ExpectedPlan | None,
    ending_within: timedelta,
    commands: _Commands,
    attention: list[Attention],
    drift: list[Drift],
    jobs: _PlanJobs | None = None,
) -> dict[str, Any]:
    assert wanted is not None
    now = facts.observed_at
    plan = found.described or {}
    status = str(plan.get("Status") or NOT_BOUGHT)
    start, end = as_utc(plan.get("StartTime")), as_utc(plan.get("EndTime"))
    subject = f"plan {wanted.name}"
    kinds: list[AttentionKind] = []

    def flag(kind: AttentionKind, message: str, command: str | None) -> None:
        kinds.append(kind)
        attention.append(Attention(kind, subject, message, command))

    bought_item = next((e for e in found.ledger if e.kind == "plan"), None)
    history = list(found.history)
    seen_hours = _extended(plan, history, wanted) if found.described else 0
    note = None
    if found.described is None:
        note = _not_bought_note(wanted, bought_item, commands)
        missing = _not_bought_drift(subject, wanted, bought_item, commands)
        if missing is not None:
            drift.append(missing)
    elif status == "Failed":
        flag(
            "plan-failed",
            f"{wanted.plan_name} is Failed ({plan.get('StatusMessage') or 'no status message'})"
            f" and reserves no capacity; set retry: 1 (or one more) on "
            f"capacity.training_plans[{wanted.index}] and approve the new name",
            commands.plan(),
        )
    elif status == "Pending":
        note = "bought, waiting to be paid and fulfilled" + (
            f": {plan['StatusMessage']}" if plan.get("StatusMessage") else ""
        )
    elif status == "Scheduled" and start is not None:
        note = f"starts in {_span(start - now)}"
    elif status == "Expired":
        note = f"ended {_span(now - end)} ago" if end is not None else "ended"
    available = _int(plan.get("AvailableInstanceCount"))
    total = _int(plan.get("TotalInstanceCount"))
    in_use = _int(plan.get("InUseInstanceCount"))
    unhealthy = _int(plan.get("UnhealthyInstanceCount"))
    if status == "Active":
        if unhealthy:
            flag(
                "plan-unhealthy",
                f"{unhealthy} of {total} reserved instances are unhealthy",
                commands.describe_cluster() if facts.expected.cluster_name else None,
            )
        if end is not None and end - now <= ending_within:
            flag(
                "plan-ending",
                f"ends in {_span(end - now)} ({iso(end)}); jobs still running then are "
                "stopped: extend it with an extend block on its entry (docs/operations.md)",
                SEARCH_COMMAND.format(hours=24).replace("ARN", str(plan["TrainingPlanArn"])),
            )
        idle = _idle_finding(wanted, total, available, in_use, jobs, commands)
        if idle is not None:
            flag("plan-idle", *idle)
    extensions = [_extension(e) for e in history]
    ext_items = [e for e in found.ledger if e.kind == "extension"]
    if found.described is not None and seen_hours < wanted.extend_hours:
        unsettled = any(e.state in ledger.UNSETTLED for e in ext_items)
        if not unsettled:
            drift.append(
                Drift(
                    subject,
                    "extension",
                    wanted.extend_hours,
                    seen_hours,
                    f"the config extends {wanted.plan_name} by {wanted.extend_hours} h, the "
                    f"plan has {seen_hours} h of extensions; a deploy of the capacity stack "
                    "buys the difference",
                    commands.deploy("capacity"),
                )
            )
    return {
        "name": wanted.name,
        "plan_name": wanted.plan_name,
        "arn": plan.get("TrainingPlanArn"),
        "adopted": wanted.adopted,
        "status": status,
        "status_message": plan.get("StatusMessage") or None,
        "start": iso(start) or None,
        "end": iso(end) or None,
        "hours_to_start": _hours(start - now) if start is not None and start > now else None,
        "hours_to_end": _hours(end - now) if end is not None else None,
        "instances": {
            "total": total,
            "available": available,
            "in_use": in_use,
            "unhealthy": unhealthy,
            "running_jobs": jobs.running if jobs is not None else None,
            "idle": _idle(status, total, available, jobs.running if jobs is not None else None),
        },
        "fee": _fee(plan, bought_item),
        "extensions": {
            "hours": seen_hours,
            "wanted_hours": wanted.extend_hours,
            "counted": len(counted(history)),
            "bought": extensions,
            "paid": _paid_extensions(ext_items),
        },
        "purchases": [
            {"key": e.key, "state": e.state, "attention": purchases.attention(e)}
            for e in found.ledger
        ],
        "utilization": utilization(
            found.described,
            found.usage,
            now,
            facts.expected.sample_minutes is not None,
            commands.deploy("monitor"),
        ),
        "attention": kinds,
        "note": note,
    }


def _idle_finding(  # noqa: PLR0917 - what an Active plan's idleness reads
    wanted: ExpectedPlan,
    total: int | None,
    available: int | None,
    in_use: int | None,
    jobs: _PlanJobs | None,
    commands: _Commands,
) -> tuple[str, str | None] | None:
    """plan-idle's message and command for an Active plan, or None when nothing is idle:
    instances that run no job when the cluster's jobs are known, else the available ones."""
    running = jobs.running if jobs is not None else None
    names = ", ".join(wanted.jobs)
    if running is None:
        if not available:
            return None
        # The cluster's jobs not known: idle is what no instance group uses.
        return (
            f"{available} of {total} reserved instances are unused while the plan is "
            f"Active ({in_use or 0} in use); they are paid for whether or not a job runs"
            + (f"; its jobs: {names}" if names else ""),
            f"novapod launch {commands.config} {wanted.jobs[0]}" if wanted.jobs else None,
        )
    if total is None or total <= running:
        return None
    assert jobs is not None
    next_job = jobs.next_launch(wanted.name)
    return (
        f"{total - running} of {total} reserved instances run no job while the plan "
        f"is Active ({in_use or 0} in its instance groups, {running} running a job); "
        "they are paid for whether or not a job runs"
        + (f"; its jobs: {names}" if names else "")
        + ("; every one of them is done" if jobs.all_done(wanted.name) else ""),
        f"novapod launch {commands.config} {next_job}" if next_job else None,
    )


def _idle(status: str, total: int | None, available: int | None, running: int | None) -> int | None:
    """Reserved instances that run no job while the plan is Active (without the cluster's
    jobs, those no instance group uses); None when it is not Active or not known."""
    if status != "Active":
        return None
    if running is None:
        return available
    return max(0, total - running) if total is not None else None


def _extended(
    plan: Mapping[str, Any], history: Sequence[Mapping[str, Any]], wanted: ExpectedPlan
) -> int:
    """Hours of extensions the plan has, read as the plan's handler reads them (the
    history, and its end past start + bought hours). Of a plan adopted without its bought
    hours in the config, the history alone tells."""
    if wanted.duration_hours:
        return extended_hours(plan, history, wanted.duration_hours)
    return sum(int(e.get("DurationHours") or 0) for e in counted(history))


def _paid_extensions(items: Sequence[ledger.Entry]) -> list[dict[str, Any]]:
    """The extensions the ledger records as bought, with their fees."""
    return [
        {
            "name": e.name,
            "hours": e.get("Hours") if isinstance(e.get("Hours"), int) else None,
            "amount": str(e.get("UpfrontFee")) if e.get("UpfrontFee") else None,
            "currency": e.get("Currency"),
        }
        for e in items
        if e.state == ledger.BOUGHT
    ]


def _not_bought_drift(
    subject: str, wanted: ExpectedPlan, item: ledger.Entry | None, commands: _Commands
) -> Drift | None:
    """The drift of a plan DescribeTrainingPlan does not find: an adopted plan's ARN to
    correct (a deploy adopts, never buys), or an approved plan a deploy buys (unless its
    purchase is unsettled in the ledger); None for a plan not approved."""
    if wanted.adopted:
        return Drift(
            subject,
            "plan",
            wanted.plan_name,
            None,
            f"the adopted plan {wanted.existing_arn} does not exist in this account and "
            f"region; correct existing_arn on capacity.training_plans[{wanted.index}] (the "
            "plans that exist are listed by the command)",
            "aws sagemaker list-training-plans",
        )
    if not wanted.approved or (item is not None and item.state in ledger.UNSETTLED):
        return None
    return Drift(
        subject,
        "plan",
        wanted.plan_name,
        None,
        f"{wanted.plan_name} is approved in the config but not bought"
        + (f" (the ledger says {item.state})" if item else "")
        + "; a deploy of the capacity stack buys it",
        commands.deploy("capacity"),
    )


def _not_bought_note(wanted: ExpectedPlan, item: ledger.Entry | None, commands: _Commands) -> str:
    if wanted.adopted:
        return f"{wanted.existing_arn} is not found: the adopted plan does not exist here"
    if item is not None and item.state in ledger.UNSETTLED:
        return f"not found in SageMaker, and its purchase is {item.state} in the ledger"
    if wanted.approved:
        return "approved, not bought yet"
    return (
        f"not bought yet: approve it with purchase.approve: {wanted.plan_name} "
        f"({commands.plan()} shows the price), then deploy"
    )


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


def _fee(plan: Mapping[str, Any], item: ledger.Entry | None) -> dict[str, Any]:
    """The plan's fee: the ledger's record of the purchase, else what SageMaker shows (an
    adopted plan, or one bought before the ledger)."""
    if item is not None and item.state == ledger.BOUGHT and item.get("UpfrontFee"):
        return {
            "amount": str(item.get("UpfrontFee")),
            "currency": item.get("Currency"),
            "source": "ledger",
        }
    if plan.get("UpfrontFee"):
        return {
            "amount": str(plan["UpfrontFee"]),
            "currency": plan.get("CurrencyCode"),
            "source": "sagemaker",
        }
    return {"amount": None, "currency": None, "source": None}


def _extension(entry: Mapping[str, Any]) -> dict[str, Any]:
    hours = entry.get("DurationHours")
    return {
        "offering_id": entry.get("TrainingPlanExtensionOfferingId"),
        "status": entry.get("Status"),
        "payment_status": entry.get("PaymentStatus"),
        "hours": hours if isinstance(hours, int) else None,
        "start": iso(entry.get("StartDate")) or None,
        "end": iso(entry.get("EndDate")) or None,
        "extended_at": iso(entry.get("ExtendedAt")) or None,
        "upfront_fee": entry.get("UpfrontFee"),
        "currency": entry.get("CurrencyCode"),
    }


_span = health.span


# --- the cluster and its groups ---------------------------------------------------------


def _cluster(
    facts: Facts,
    plans: Sequence[dict[str, Any]],
    commands: _Commands,
    attention: list[Attention],
    drift: list[Drift],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    found = facts.cluster
    if found is None:
        return None, []
    cluster = found.described
    if cluster is None:
        drift.append(
            Drift(
                f"cluster {found.name}",
                "cluster",
                found.name,
                None,
                f"the HyperPod cluster {found.name} is not deployed",
                commands.deploy("hyperpod"),
            )
        )
        groups = [_group_row(g, None, (), None, None, None) for g in facts.expected.groups]
        return {"name": found.name, "deployed": False, "status": None, "failure": None}, groups
    status = str(cluster.get("ClusterStatus"))
    if status in health.CLUSTER_FAILED:
        attention.append(
            Attention(
                "cluster-failed",
                f"cluster {found.name}",
                f"the HyperPod cluster is {status}"
                + (f": {cluster['FailureMessage']}" if cluster.get("FailureMessage") else ""),
                commands.describe_cluster(),
            )
        )
    by_arn = {p["arn"]: p for p in plans if p["arn"]}
    deployed = _deployed_groups(cluster)
    rows = []
    for wanted in facts.expected.groups:
        group, kind = deployed.pop(wanted.name, (None, None))
        nodes = [n for n in found.nodes if n.get("InstanceGroupName") == wanted.name]
        rows.append(_group(found, wanted, group, kind, nodes, by_arn, commands, attention, drift))
    for name, (group, kind) in deployed.items():  # in the cluster, not in the config
        nodes = [n for n in found.nodes if n.get("InstanceGroupName") == name]
        rows.append(_group_row(None, group, nodes, kind, by_arn, found.stack_updated_at))
        if status not in CLUSTER_UNSETTLED:
            removal = " (and deletes its FSx for Lustre)" if kind == "restricted" else ""
            drift.append(
                Drift(
                    f"group {name}",
                    "group",
                    None,
                    name,
                    f"{kind} group {name} is in the cluster but not in the config; a deploy "
                    f"of the hyperpod stack removes it{removal}",
                    commands.deploy("hyperpod"),
                )
            )
    summary = {
        "name": found.name,
        "deployed": True,
        "status": status,
        "failure": cluster.get("FailureMessage") or None,
        "node_recovery": cluster.get("NodeRecovery"),
        "stack_updated_at": iso(found.stack_updated_at) or None,
    }
    return summary, rows


def _deployed_groups(cluster: Mapping[str, Any]) -> dict[str, tuple[Mapping[str, Any], str]]:
    out: dict[str, tuple[Mapping[str, Any], str]] = {}
    for kind, key in (("restricted", "RestrictedInstanceGroups"), ("standard", "InstanceGroups")):
        for group in cluster.get(key) or []:
            out[str(group.get("InstanceGroupName"))] = (group, kind)
    return out


def _plan_name(arn: str | None) -> str | None:
    return arn.rsplit("/", 1)[-1] if arn else None


def _group(  # noqa: PLR0917 - one group's verdict reads all of these
    found: ClusterFacts,
    wanted: ExpectedGroup,
    group: Mapping[str, Any] | None,
    kind: str | None,
    nodes: Sequence[Mapping[str, Any]],
    by_arn: Mapping[str, dict[str, Any]],
    commands: _Commands,
    attention: list[Attention],
    drift: list[Drift],
) -> dict[str, Any]:
    row = _group_row(wanted, group, nodes, kind, by_arn, found.stack_updated_at)
    settled = (found.described or {}).get("ClusterStatus") not in CLUSTER_UNSETTLED
    if group is None:
        if settled:
            drift.append(
                Drift(
                    f"group {wanted.name}",
                    "group",
                    wanted.name,
                    None,
                    f"{wanted.kind} group {wanted.name} is in the config but not in the cluster",
                    commands.deploy("hyperpod"),
                )
            )
        return row
    for kind_, message, command in _group_health(
        found, wanted, group, nodes, row, by_arn, commands
    ):
        row["attention"].append(kind_)
        attention.append(Attention(kind_, f"group {wanted.name}", message, command))
    if settled:
        drift += _group_drift(wanted, group, kind, commands)
    return row


def _group_health(  # noqa: PLR0917 - one group's health reads all of these
    found: ClusterFacts,
    wanted: ExpectedGroup,
    group: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    row: Mapping[str, Any],
    by_arn: Mapping[str, dict[str, Any]],
    commands: _Commands,
) -> list[tuple[AttentionKind, str, str | None]]:
    """What needs attention in a deployed group: its status, its nodes, its plan."""
    found_: list[tuple[AttentionKind, str, str | None]] = []
    status = str(group.get("Status") or "")
    if status in health.GROUP_FAILED:
        found_.append(("group-failed", f"the group is {status}", commands.describe_cluster()))
    bad = health.unhealthy(nodes)
    if bad:
        what = "; ".join(
            f"{n.get('InstanceId')} {health.node_status(n)}"
            + (f" ({n['InstanceStatus']['Message']})" if n["InstanceStatus"].get("Message") else "")
            for n in bad
        )
        recovery = (found.described or {}).get("NodeRecovery")
        automatic = recovery == health.AUTOMATIC_RECOVERY
        command = health.node_command(found.name, recovery, [str(n.get("InstanceId")) for n in bad])
        found_.append(
            (
                "unhealthy-nodes",
                f"{len(bad)} of {len(nodes)} nodes unhealthy: {what}"
                + ("; node recovery is Automatic, HyperPod replaces them" if automatic else ""),
                command,
            )
        )
    current, desired = row["current"] or 0, row["desired"] or 0
    if current < desired and status == "InService" and row["plan_active"] is not False:
        found_.append(
            (
                "missing-nodes",
                f"{current} of {desired} nodes although the group is InService"
                + (" and its plan Active" if row["plan_active"] else ""),
                commands.list_nodes(wanted.name),
            )
        )
    plan_row = by_arn.get(row["plan_arn"] or "")
    if plan_row is not None and plan_row["status"] == "Expired":
        found_.append(
            (
                "plan-expired-in-use",
                f"runs on plan {plan_row['name']}, which expired: it gets no nodes; buy or "
                "adopt another plan for it",
                commands.plan(),
            )
        )
    return found_


def _group_drift(
    wanted: ExpectedGroup, group: Mapping[str, Any], kind: str | None, commands: _Commands
) -> list[Drift]:
    """How a deployed group differs from the config's."""
    subject, command = f"group {wanted.name}", commands.deploy("hyperpod")
    out: list[Drift] = []
    if kind != wanted.kind:
        out.append(
            Drift(
                subject,
                "kind",
                wanted.kind,
                kind,
                f"the config has {wanted.name} as a {wanted.kind} group, the cluster as {kind}",
                command,
            )
        )
    if group.get("InstanceType") != wanted.instance_type:
        out.append(
            Drift(
                subject,
                "instance_type",
                wanted.instance_type,
                group.get("InstanceType"),
                f"instance type {group.get('InstanceType')} in the cluster, "
                f"{wanted.instance_type} in the config (changing it replaces the group's nodes)",
                command,
            )
        )
    if group.get("TargetCount") != wanted.instance_count:
        out.append(
            Drift(
                subject,
                "instance_count",
                wanted.instance_count,
                group.get("TargetCount"),
                f"{group.get('TargetCount')} instances desired in the cluster, "
                f"{wanted.instance_count} in the config",
                command,
            )
        )
    arn = group.get("TrainingPlanArn")
    if wanted.plan_arn is not None:
        same_plan = arn == wanted.plan_arn
    else:
        same_plan = _plan_name(arn) == wanted.plan_name
    if not same_plan:
        out.append(
            Drift(
                subject,
                "training_plan",
                wanted.plan_arn or wanted.plan_name,
                arn,
                f"the group runs on {_plan_name(arn) or 'no plan'}, the config puts it on "
                f"{wanted.plan_name or 'none'}",
                command,
            )
        )
    return out


def _group_row(  # noqa: PLR0917 - one group's row reads all of these
    wanted: ExpectedGroup | None,
    group: Mapping[str, Any] | None,
    nodes: Sequence[Mapping[str, Any]],
    kind: str | None,
    by_arn: Mapping[str, dict[str, Any]] | None,
    since: datetime | None,
) -> dict[str, Any]:
    group = group or {}
    arn = group.get("TrainingPlanArn")
    plan_row = (by_arn or {}).get(arn or "")
    # The plan's own status when it is one of ours, else what the group says of it.
    plan_status = plan_row["status"] if plan_row else group.get("TrainingPlanStatus")
    counts = health.node_counts(nodes)
    return {
        "name": wanted.name if wanted else group.get("InstanceGroupName"),
        "kind": wanted.kind if wanted else kind,
        "in_config": wanted is not None,
        "deployed": bool(group),
        "status": group.get("Status"),
        "instance_type": group.get("InstanceType"),
        "desired": group.get("TargetCount"),
        "current": group.get("CurrentCount"),
        "nodes": counts,
        "unhealthy_nodes": [
            {
                "instance_id": n.get("InstanceId"),
                "status": health.node_status(n),
                "message": (n.get("InstanceStatus") or {}).get("Message"),
            }
            for n in health.unhealthy(nodes)
        ],
        "plan": wanted.plan if wanted else (plan_row["name"] if plan_row else None),
        "plan_arn": arn,
        "plan_status": plan_status,
        "plan_active": (plan_status == "Active") if arn else None,
        "replaced_nodes": replaced_nodes(nodes, _launched_by_stack_until(since, plan_row)),
        "attention": [],
    }


def _launched_by_stack_until(
    since: datetime | None, plan_row: Mapping[str, Any] | None
) -> datetime | None:
    """Until when a group's nodes came from the deploy: the cluster's last update by
    CloudFormation, or, for a group whose plan started later (its nodes come with the
    plan's capacity), PLAN_START_GRACE after the plan's start."""
    start = as_utc(plan_row.get("start")) if plan_row else None
    updated = as_utc(since)
    if updated is None or start is None or start <= updated:
        return updated
    return start + PLAN_START_GRACE


def replaced_nodes(
    nodes: Sequence[Mapping[str, Any]], since: datetime | None
) -> list[dict[str, Any]]:
    """The nodes launched after CloudFormation last updated the cluster (`since`), oldest
    first: not launched by the stack (see collect.py). None known without `since`."""
    cutoff = as_utc(since)
    if cutoff is None:
        return []
    later = [
        (launched, n)
        for n in nodes
        if (launched := as_utc(n.get("LaunchTime"))) is not None and launched > cutoff
    ]
    later.sort(key=lambda pair: pair[0])
    return [
        {
            "instance_id": n.get("InstanceId"),
            "launch_time": iso(launched),
            "status": health.node_status(n),
        }
        for launched, n in later
    ]


# --- the EKS cluster and its bootstrap -------------------------------------------------


def _eks(facts: Facts, commands: _Commands, drift: list[Drift]) -> dict[str, Any] | None:
    wanted, found = facts.expected.eks, facts.eks
    if wanted is None or found is None:
        return None
    subject, command = f"eks cluster {found.name}", commands.deploy("eks")
    described = found.described
    section: dict[str, Any] = {
        "name": found.name,
        "deployed": described is not None,
        "status": None,
        "kubernetes_version": None,
        "config_kubernetes_version": wanted.kubernetes_version,
        "marker": None,
    }
    if described is None:
        drift.append(
            Drift(
                subject,
                "cluster",
                found.name,
                None,
                f"the EKS cluster {found.name} is not deployed",
                command,
            )
        )
        return section
    status, version = described.get("status"), described.get("version")
    section |= {"status": status, "kubernetes_version": version}
    settled = status == EKS_SETTLED
    if settled and version and version != wanted.kubernetes_version:
        drift.append(
            Drift(
                subject,
                "kubernetes_version",
                wanted.kubernetes_version,
                str(version),
                version_message(str(version), wanted.kubernetes_version),
                command,
            )
        )
    if found.marker is not None:
        section["marker"] = _marker_section(found, wanted)
        if settled:
            drift += _marker_drift(found, wanted, subject, command)
    return section


def _minor(version: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return None


def version_message(deployed: str, wanted: str) -> str:
    """What a Kubernetes version other than the config's means, and the way back: EKS
    upgrades one minor version at a time and never downgrades (docs.aws.amazon.com/eks/
    latest/userguide/update-cluster.html); at the end of extended support EKS upgrades a
    cluster itself (kubernetes-versions.html)."""
    have, want = _minor(deployed), _minor(wanted)
    base = f"Kubernetes {deployed} in the cluster, {wanted} in the config"
    if have is None or want is None or len(have) != 2 or len(want) != 2 or have[0] != want[0]:
        return f"{base}; a deploy of the eks stack sets the config's version"
    if have < want:
        step = f"{have[0]}.{have[1] + 1}"
        if step == wanted:
            return f"{base}; a deploy of the eks stack upgrades it in place"
        return (
            f"{base}; EKS upgrades one minor version at a time: set eks.kubernetes_version "
            f'to "{step}", deploy the eks stack, and repeat (docs/operations.md, Upgrading '
            "Kubernetes)"
        )
    return (
        f"{base}: it was upgraded outside CloudFormation (by hand, or by EKS at the end of "
        f'extended support) and EKS cannot downgrade; set eks.kubernetes_version: "{deployed}" '
        "in the config, then deploy the eks stack"
    )


def _marker_section(found: EksFacts, wanted: ExpectedEks) -> dict[str, Any]:
    marker = found.marker
    assert marker is not None
    data = marker.data
    return {
        "namespace": marker.namespace,
        "name": marker.name,
        "read": marker.read,
        "found": (data is not None) if marker.read else None,
        "note": marker.note,
        "recorded": {k: data.get(k) for k in MARKER_FIELDS} if data is not None else None,
        "expected": dict(wanted.marker),
    }


def _marker_drift(found: EksFacts, wanted: ExpectedEks, subject: str, command: str) -> list[Drift]:
    """How the bootstrap's record differs from what the pins and the config install."""
    marker = found.marker
    if marker is None or not marker.read:
        return []
    where = f"{marker.namespace}/{marker.name}"
    if marker.data is None:
        return [
            Drift(
                subject,
                "marker",
                where,
                None,
                f"ConfigMap {where} is missing: the HyperPod dependencies bootstrap never "
                "finished (or the marker was deleted); a deploy of the eks stack runs it when "
                "its pins changed, otherwise start its HyperPodDependencies build "
                "(docs/operations.md, Upgrading Kubernetes)",
                command,
            )
        ]
    out = []
    for key, expected_value in wanted.marker.items():
        recorded = marker.data.get(key, "")
        if recorded == expected_value:
            continue
        field_ = MARKER_FIELDS[key]
        out.append(
            Drift(
                subject,
                field_,
                expected_value or None,
                recorded or None,
                _marker_message(field_, recorded, expected_value),
                command,
            )
        )
    return out


def _marker_message(field_: DriftField, recorded: str, wanted: str) -> str:
    if field_ == "chart_revision":
        return (
            f"the HyperPod dependencies chart is at {recorded or 'no recorded revision'}, the "
            f"pins say {wanted}; a deploy of the eks stack installs the pinned revision"
        )
    if field_ == "rig_revision":
        return (
            f"the RIG dependencies are at {recorded or 'no recorded revision'}, the pins say "
            f"{wanted}; a deploy of the eks stack installs them where none are, and refuses "
            "over another revision (uninstall it first: docs/operations.md, Upgrading "
            "Kubernetes)"
        )
    if not wanted:
        return (
            "the cluster still holds the Nova access objects of an earlier config (its jobs' "
            "namespace and RBAC); a deploy of the eks stack removes them"
        )
    return (
        "the Nova jobs' namespace and access objects in the cluster are not the config's "
        f"(digest {recorded[:12] or 'none'}, the config's {wanted[:12]}); a deploy of the "
        "eks stack applies them"
    )
