"""What one run of the environment's check concludes: the metrics of what it read, the
alerts it owes, and the state it leaves for the next run. Pure: samples, the previous
state and a time in; `index.py` makes the calls.

Settings come as the schedule's input (the construct writes them at synth): the
environment, the metric namespace, the plans (the config's name, SageMaker's name, the
jobs that run on it), the HyperPod cluster's name, the jobs that run on it (their EKS
cluster and namespace), the alert thresholds, the topic, the state table and the
schedule's interval (`every_minutes`).

Metrics (PutMetricData, dimensions Environment and Plan, or Environment and
InstanceGroup): each plan DescribeTrainingPlan finds, its TotalInstanceCount,
AvailableInstanceCount, InUseInstanceCount and UnhealthyInstanceCount (botocore's
DescribeTrainingPlanResponse; the last is optional there) and IdleInstances, the available
ones while the plan is Active (paid for, unused); the in-use count times the seconds the
sample stands for (the schedule's `every_minutes` at this run), InUseInstanceSeconds, and
while Active those seconds, SampledSeconds, which `novapod status` sums into the plan's
instance-hours in use and the hours sampled; each instance group of DescribeCluster,
its TargetCount and CurrentCount (ClusterInstanceGroupDetails and
ClusterRestrictedInstanceGroupDetails) and the nodes ListClusterNodes shows unhealthy.

Alerts, each owed once per occurrence (its `key`; `index.py` publishes it at least once,
a second copy is rare; a key claimed by a run, `State.claimed`, is that run's until its
lease is out, then owed again): SageMaker publishes no training plan
event to EventBridge (the "Amazon SageMaker AI events" list of the EventBridge events
reference names HyperPod's cluster, node health and cluster events, no plan), so the
check alerts on what it sees:

- a plan turned Active, Expired or Failed (a status seen since an earlier run: a plan
  found in that status at the first look is not news);
- an Active plan with reserved instances unused for `idle_alert_minutes`: not held by
  any group (AvailableInstanceCount), or held by its instance groups (the sum of their
  CurrentCount, `plan_nodes`) and more than the nodes of those groups a pod of the jobs'
  namespace is on (Running, or Pending on it: handler_core/runs.py busy_nodes, the rule
  `novapod status` counts with), "N of M held nodes unused" (only where the check reads
  every job of the plan, the cluster, its nodes and the namespace's pods; otherwise it
  waits, keeping the alert sent);
- an Active plan ending within `ending_alert_days` with jobs not finished (fewer
  succeeded runs than the config's `runs`, or one running), each named; none when they
  are all done. Runs are the PyTorchJobs of the jobs' namespace plus those the state saw
  before (a succeeded one still counts; one seen running and gone since makes the job
  "cannot tell" when it would make up the runs wanted: `JobProgress`). Where the check
  cannot judge the jobs (`plan_progress` None) of an end date no run has judged, it
  alerts and says so (one that was judged keeps what was sent); either way the
  sentence sends `novapod status CONFIG`, which marks a job at risk of outliving the
  plan and gives the extension command for it, rather than telling anyone to extend
  (docs/operations.md, "Alerts"). The `idle` and `unused` alerts name the plan's first
  job with a run still to start whose predecessors have a finished run, as `novapod
  launch` requires (`next_launch`);
- an instance group Failed, Degraded or Deleting, a node in Failure or NotFound
  (DescribeCluster's and ListClusterNodes' statuses; HyperPod's own cluster state, node
  health and cluster events go to the topic through EventBridge rules);
- a failed job run: a run of the config's jobs whose PyTorchJobs in the jobs' namespace
  say Failed (handler_core/runs.py, the rule `novapod status` judges runs with).
  SageMaker publishes no event for a job on a HyperPod EKS cluster (the same list names
  none), so the check reads the PyTorchJobs. A failed run found at the check's first
  look alerts too: unlike a plan's status, it is not the expected state, and someone has
  to read its logs.

Job events: each run whose state (running, succeeded, failed) differs from what the
last run saw, a run first seen included, is an event (`JobEvent`: started, succeeded,
failed), which `index` logs as one JSON line for the dashboard.

The state holds the plans seen, when each started idling, the runs in the namespace and
their state, the runs gone from it counted per job (so it stays as small as the
namespace: `State`), the end dates judged, and the keys of the alerts sent whose
condition still holds; a key whose condition is over is dropped, so the next occurrence
alerts again. What a failed read leaves unknown keeps its state as it was, and so does an
alert whose condition it leaves unjudged (a plan's `unused` key while the runs, the
cluster or the pods cannot be read, its `ending` key while the jobs of an end date judged
before cannot be: `_PlansSeen.kept`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from ...handler_core import health, runs, values

# The metrics' namespace, and their dimensions (`novapod status` reads them back).
NAMESPACE = "novapod"
ENVIRONMENT_DIMENSION = "Environment"
PLAN_DIMENSION = "Plan"
# The in-use count of a plan, sampled each run (the dashboard draws it).
IN_USE_METRIC = "InUseInstances"
# What one sample stands for, weighted by the interval it covers (the schedule's
# every_minutes when the run was made): a plan's in-use count times that interval, and
# the interval itself while the plan is Active. `status` sums both into instance-hours,
# so a plan sampled at 5 minutes, then at 15, counts each sample for its own interval.
# In seconds: PutMetricData's StandardUnit has Seconds and no Minutes (botocore's
# cloudwatch model; MetricDatum.Unit in API_PutMetricData.html), and a duration put as
# Count or None would say it is no time at all.
IN_USE_SECONDS_METRIC = "InUseInstanceSeconds"
SAMPLED_SECONDS_METRIC = "SampledSeconds"
SECONDS = "Seconds"
COUNT = "Count"
# PutMetricData takes at most 1000 metrics a request (API_PutMetricData.html).
MAX_DATUMS = 1000
# SNS Publish's Subject: fewer than 100 characters (API_Publish.html).
MAX_SUBJECT = 99
# Statuses a plan turns into that are news (alerted once, when seen to change).
TRANSITIONS = ("Active", "Expired", "Failed")
NOT_BOUGHT = "NotBought"
# The state's version: a state of another version is read as no state.
STATE_VERSION = 1
# What the state counts of a job's runs gone from the namespace (State.gone).
GONE_KINDS = ("succeeded", "running")
# The state item's key attribute: one item per environment, keyed by its name.
STATE_KEY = "Environment"
# HyperPod's log groups, where the jobs log: /aws/sagemaker/Clusters/<name>/<cluster id>
# (novapod/nova/access.py HYPERPOD_LOG_GROUP_PREFIX, which a test holds to this).
HYPERPOD_LOG_GROUPS = "/aws/sagemaker/Clusters/"


class SettingsError(Exception):
    """The schedule's input is not what the construct writes."""


# --- settings -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSettings:
    name: str  # capacity.training_plans[].name
    plan_name: str  # the SageMaker training plan's name
    jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobSettings:
    """The config's jobs that run on the HyperPod cluster, and where their runs show."""

    eks_cluster: str  # the EKS cluster that orchestrates the HyperPod cluster
    namespace: str  # nova.namespace: where their PyTorchJobs are
    names: tuple[str, ...]
    region: str  # for the logs command of an alert
    # How many runs the config asks of each job (jobs[].runs): a job with fewer succeeded
    # runs is not finished.
    runs: Mapping[str, int] = field(default_factory=dict)
    # The jobs each must wait for (Job.predecessors: `after:` and `from: job:`), which
    # `novapod launch` refuses to start a job before: the alerts name no such job.
    predecessors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    environment: str
    namespace: str
    plans: tuple[PlanSettings, ...]
    cluster: str | None
    idle_alert_minutes: int
    ending_alert_days: int
    topic_arn: str
    state_table: str
    # How long an alert claimed by a run stays that run's: longer than the function's
    # timeout, so a run that claims it is over, published or not (index.py).
    claim_lease_seconds: int
    # The schedule's interval (monitoring.every_minutes): what one run's sample stands for.
    every_minutes: int
    jobs: JobSettings | None = None


def parse_settings(raw: Mapping[str, Any]) -> Settings:
    def text(key: str) -> str:
        return values.required_str(raw, key, SettingsError)

    def number(key: str, low: int, high: int) -> int:
        found = values.whole_number(raw, key, low, high, SettingsError, required=True)
        assert found is not None
        return found

    def interval(key: str) -> int:
        """Minutes as the construct writes them (monitoring.every_minutes: 1 to 60): an
        integer, not a string, a bool or a fraction, since each sample is weighted by it."""
        found = number(key, 1, 60)
        if isinstance(raw[key], bool) or not isinstance(raw[key], int):
            raise SettingsError(f"{key} must be a whole number of minutes, not {raw[key]!r}")
        return found

    plans = raw.get("plans")
    if not isinstance(plans, list):
        raise SettingsError("plans must be a list")
    parsed = []
    for plan in plans:
        if not isinstance(plan, Mapping):
            raise SettingsError("each plan must be an object")
        jobs = plan.get("jobs") or []
        if not isinstance(jobs, list) or not all(isinstance(j, str) for j in jobs):
            raise SettingsError("a plan's jobs must be a list of names")
        parsed.append(
            PlanSettings(
                name=values.required_str(plan, "name", SettingsError),
                plan_name=values.required_str(plan, "plan_name", SettingsError),
                jobs=tuple(jobs),
            )
        )
    jobs = None
    raw_jobs = raw.get("jobs")
    if raw_jobs is not None:
        if not isinstance(raw_jobs, Mapping):
            raise SettingsError("jobs must be an object")
        names = raw_jobs.get("names")
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise SettingsError("jobs.names must be a list of job names")
        wanted = raw_jobs.get("runs")
        jobs = JobSettings(
            eks_cluster=values.required_str(raw_jobs, "eks_cluster", SettingsError),
            namespace=values.required_str(raw_jobs, "namespace", SettingsError),
            names=tuple(names),
            region=values.required_str(raw_jobs, "region", SettingsError),
            runs=_runs_wanted(wanted, names),
            predecessors=_predecessors(raw_jobs.get("predecessors"), names),
        )
    return Settings(
        environment=text("environment"),
        namespace=text("namespace"),
        plans=tuple(parsed),
        cluster=values.optional_str(raw, "cluster", SettingsError),
        idle_alert_minutes=number("idle_alert_minutes", 1, 10**6),
        every_minutes=interval("every_minutes"),
        ending_alert_days=number("ending_alert_days", 1, 10**4),
        topic_arn=text("topic_arn"),
        state_table=text("state_table"),
        claim_lease_seconds=number("claim_lease_seconds", 60, 3600),
        jobs=jobs,
    )


def _predecessors(raw: object, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping) or set(raw) != set(names):
        raise SettingsError("jobs.predecessors must give the jobs each of jobs.names waits for")
    out = {}
    for name in names:
        found = raw[name]
        if not isinstance(found, list) or not all(isinstance(j, str) and j for j in found):
            raise SettingsError(f"jobs.predecessors.{name} must be a list of job names")
        out[name] = tuple(found)
    return out


def _runs_wanted(wanted: object, names: Sequence[str]) -> dict[str, int]:
    if not isinstance(wanted, Mapping) or set(wanted) != set(names):
        raise SettingsError("jobs.runs must give the runs of each of jobs.names")
    out = {}
    for name in names:
        count = values.whole_number(wanted, name, 1, 1000, SettingsError, required=True)
        assert count is not None
        out[name] = count
    return out


# --- what one run read ----------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSample:
    """DescribeTrainingPlan of one plan: `described` (None: SageMaker does not know it),
    or `error` when the read failed (nothing is known of it this run)."""

    settings: PlanSettings
    described: Mapping[str, Any] | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        return str((self.described or {}).get("Status") or NOT_BOUGHT)

    def count(self, member: str) -> int | None:
        value = (self.described or {}).get(member)
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ClusterSample:
    """DescribeCluster and ListClusterNodes of the HyperPod cluster (`described` None:
    not deployed), or `error` when a read failed."""

    name: str
    described: Mapping[str, Any] | None = None
    nodes: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None

    def groups(self) -> list[Mapping[str, Any]]:
        cluster = self.described or {}
        return [
            *(cluster.get("RestrictedInstanceGroups") or []),
            *(cluster.get("InstanceGroups") or []),
        ]

    def nodes_of(self, group: str) -> list[Mapping[str, Any]]:
        return [n for n in self.nodes if n.get("InstanceGroupName") == group]


@dataclass(frozen=True)
class JobsSample:
    """The PyTorchJobs and the pods of the jobs' namespace, or `error` when the
    Kubernetes API (or EKS DescribeCluster) could not be read: nothing is known of the
    runs this run. `pods` None: the PyTorchJobs were read, the pods not (the nodes they
    hold are not known)."""

    pytorchjobs: tuple[Mapping[str, Any], ...] = ()
    pods: tuple[Mapping[str, Any], ...] | None = None
    error: str | None = None


@dataclass(frozen=True)
class Samples:
    plans: tuple[PlanSample, ...]
    cluster: ClusterSample | None
    jobs: JobsSample | None = None


# --- metrics --------------------------------------------------------------------------------


def _datum(
    name: str,
    value: int,
    dimensions: Sequence[tuple[str, str]],
    now: datetime,
    unit: str = COUNT,
) -> dict[str, Any]:
    return {
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions],
        "Timestamp": now,
        "Value": float(value),
        "Unit": unit,
    }


PLAN_METRICS = (
    ("TotalInstances", "TotalInstanceCount"),
    ("AvailableInstances", "AvailableInstanceCount"),
    (IN_USE_METRIC, "InUseInstanceCount"),
    ("UnhealthyInstances", "UnhealthyInstanceCount"),
)
GROUP_METRICS = ("DesiredNodes", "CurrentNodes", "UnhealthyNodes")


def metric_data(samples: Samples, settings: Settings, now: datetime) -> list[dict[str, Any]]:
    """The datums of one run: what was read, nothing of what a read could not find."""
    data = []
    for plan in samples.plans:
        if plan.described is None:
            continue
        dims = (
            (ENVIRONMENT_DIMENSION, settings.environment),
            (PLAN_DIMENSION, plan.settings.name),
        )
        for metric, member in PLAN_METRICS:
            count = plan.count(member)
            if count is not None:
                data.append(_datum(metric, count, dims, now))
        available = plan.count("AvailableInstanceCount") or 0
        active = plan.status == health.PLAN_ACTIVE
        idle = available if active else 0
        data.append(_datum("IdleInstances", idle, dims, now))
        # The sample weighted by the interval it stands for (IN_USE_SECONDS_METRIC); a
        # plan whose in-use count SageMaker did not give is no sample of its use.
        in_use = plan.count("InUseInstanceCount")
        if in_use is not None:
            seconds = settings.every_minutes * 60
            data.append(_datum(IN_USE_SECONDS_METRIC, in_use * seconds, dims, now, SECONDS))
            if active:
                data.append(_datum(SAMPLED_SECONDS_METRIC, seconds, dims, now, SECONDS))
    cluster = samples.cluster
    if cluster is not None and cluster.described is not None:
        for group in cluster.groups():
            name = str(group.get("InstanceGroupName"))
            dims = (("Environment", settings.environment), ("InstanceGroup", name))
            figures = (
                group.get("TargetCount"),
                group.get("CurrentCount"),
                len(health.unhealthy(cluster.nodes_of(name))),
            )
            for metric, figure in zip(GROUP_METRICS, figures, strict=True):
                if isinstance(figure, int):
                    data.append(_datum(metric, figure, dims, now))
    return data


def batches(data: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(data), MAX_DATUMS):
        yield list(data[start : start + MAX_DATUMS])


# --- state ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """What a run leaves for the next: the plans seen (their status), when each plan began
    to idle (instances not held by any group) and when each began to have held nodes no
    run of its jobs uses, the alerts sent whose condition still holds (key -> when), the alerts
    claimed by a run whose Publish is not recorded yet (key -> when claimed), the job runs
    seen (`<job>/<run>` -> running, succeeded or failed: those in the namespace when it
    was last read, and those gone since that last read), the runs gone from the namespace
    before that, counted per job (`<job>` -> {"succeeded": n, "running": n}: a failed one
    gone counts for nothing and is dropped), so the item stays as small as the namespace
    (DynamoDB's item limit is 400 KB, Constraints.html), the end date of each plan whose
    jobs a run has judged (`plan` -> the end date, `ending_judged`), and the item's
    sequence (the conditional write's guard; 0: no item yet)."""

    seen: Mapping[str, str] = field(default_factory=dict)
    idle_since: Mapping[str, str] = field(default_factory=dict)
    sent: Mapping[str, str] = field(default_factory=dict)
    sequence: int = 0
    runs: Mapping[str, str] = field(default_factory=dict)
    claimed: Mapping[str, str] = field(default_factory=dict)
    held_since: Mapping[str, str] = field(default_factory=dict)
    gone: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    ending_judged: Mapping[str, str] = field(default_factory=dict)

    def text(self) -> str:
        return json.dumps(
            {
                "version": STATE_VERSION,
                "seen": dict(sorted(self.seen.items())),
                "idle_since": dict(sorted(self.idle_since.items())),
                "sent": dict(sorted(self.sent.items())),
                "runs": dict(sorted(self.runs.items())),
                "claimed": dict(sorted(self.claimed.items())),
                "held_since": dict(sorted(self.held_since.items())),
                "gone": {k: dict(sorted(v.items())) for k, v in sorted(self.gone.items())},
                "ending_judged": dict(sorted(self.ending_judged.items())),
            },
            separators=(",", ":"),
        )


def read_state(text: str | None, sequence: int) -> State:
    """The stored state; none (a first run) when there is none or it cannot be read."""
    try:
        raw = json.loads(text) if text else {}
    except json.JSONDecodeError:
        raw = {}
    if not isinstance(raw, dict) or raw.get("version") != STATE_VERSION:
        return State(sequence=sequence)

    def strings(key: str) -> dict[str, str]:
        found = raw.get(key)
        if not isinstance(found, dict):
            return {}
        return {str(k): str(v) for k, v in found.items()}

    def counts() -> dict[str, dict[str, int]]:
        found = raw.get("gone")
        out: dict[str, dict[str, int]] = {}
        for job, kinds in found.items() if isinstance(found, dict) else ():
            if isinstance(kinds, dict):
                out[str(job)] = {
                    kind: n
                    for kind, n in kinds.items()
                    if kind in GONE_KINDS and isinstance(n, int) and not isinstance(n, bool)
                    and n > 0
                }  # fmt: skip
        return out

    # claimed, held_since, gone and ending_judged came later in version 1: a state
    # without them has none.
    return State(
        strings("seen"),
        strings("idle_since"),
        strings("sent"),
        sequence,
        strings("runs"),
        strings("claimed"),
        strings("held_since"),
        counts(),
        strings("ending_judged"),
    )


# --- alerts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    key: str  # the occurrence: sent once while it lasts
    subject: str  # the email's subject
    message: str  # one sentence: the environment, the plan or group, the figure, the command


@dataclass(frozen=True)
class JobEvent:
    """A run seen to change: started (first seen running), succeeded or failed."""

    job: str
    run: str
    event: str  # started | succeeded | failed
    phase: str  # the operator's condition (Running, Restarting, Succeeded, Failed, ...)
    at: datetime | None  # when it started, succeeded or failed
    message: str  # one sentence, for the log line

    def fields(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "run": self.run,
            "event": self.event,
            "phase": self.phase,
            "at": values.iso(self.at) or None,
        }


# A run's state -> the event of turning into it.
EVENTS = {"running": "started", "succeeded": "succeeded", "failed": "failed"}


@dataclass(frozen=True)
class Decision:
    alerts: tuple[Alert, ...]
    # The state if every alert is sent; `index` leaves out the keys it could not send.
    state: State
    events: tuple[JobEvent, ...] = ()


def _plan_key(name: str, *parts: str) -> str:
    return "/".join(("plan", name, *parts))


def _owner(key: str) -> str:
    """The subject a key belongs to: `plan/<name>`, `jobs` (runs) or `cluster` (groups
    and nodes)."""
    kind, _, rest = key.partition("/")
    if kind == "plan":
        return f"plan/{rest.split('/', 1)[0]}"
    return "jobs" if kind == "run" else "cluster"


def run_key(job: str, run: str) -> str:
    return f"{job}/{run}"


class _Messages:
    """The sentences of one environment's alerts."""

    def __init__(self, environment: str) -> None:
        self.env = f"novapod {environment}"

    def status(self) -> str:
        return "novapod status CONFIG"

    def launch(self, plan: PlanSettings) -> str:
        return f"novapod launch CONFIG {plan.jobs[0]}" if plan.jobs else self.status()

    def plan(self, sample: PlanSample) -> str:
        return f"plan {sample.settings.name} ({sample.settings.plan_name})"

    def alert(self, key: str, what: str, sentence: str, command: str) -> Alert:
        subject = f"{self.env}: {what}"[:MAX_SUBJECT]
        return Alert(key, subject, f"{self.env}: {sentence}; next: {command}")


@dataclass(frozen=True)
class JobProgress:
    """One job as the check sees its runs: the runs the config asks for (jobs[].runs),
    those that succeeded and those running among its PyTorchJobs in the namespace, plus
    the runs the state saw before whose PyTorchJobs are gone (`novapod cancel`, `helm
    uninstall`, a clean-up: `novapod status` reads S3 for those; by name in
    `State.runs` until the next read, then counted in `State.gone`): one last seen
    succeeded still counts as succeeded (Succeeded is final), one last seen running is
    `gone`, its end unseen. Failed runs count for nothing."""

    job: str
    wanted: int
    succeeded: int
    running: int
    gone: int = 0

    @property
    def finished(self) -> bool:
        return self.succeeded >= self.wanted and not self.running

    @property
    def known(self) -> bool:
        """Whether the check can tell if the job is finished: not while runs it saw are
        gone unseen and would make up the runs wanted had they succeeded."""
        return self.finished or bool(self.running) or self.succeeded + self.gone < self.wanted

    @property
    def left(self) -> int:
        """Runs still to start for certain (none of the gone ones counted as to do)."""
        return self.wanted - self.succeeded - self.running - self.gone

    def text(self) -> str:
        return (
            f"{self.job} ({self.succeeded} of {self.wanted} runs succeeded"
            + (f", {self.running} running" if self.running else "")
            + (
                f", {self.gone} gone from the namespace before this check saw "
                f"{'it' if self.gone == 1 else 'them'} end"
                if self.gone
                else ""
            )
            + ")"
        )


def _job_of(key: str) -> str:
    """The job of a run key (`<job>/<run>`: a run's name has no slash)."""
    return key.rpartition("/")[0]


def job_progress(
    job: str,
    wanted: int,
    phases: Mapping[tuple[str, str], runs.RunPhase],
    previous: State,
) -> JobProgress:
    """`job`'s runs in the namespace (`phases`), those the state saw (`previous.runs`,
    run key -> state) that are no longer there, and those it counted gone before
    (`previous.gone`)."""
    visible = {run: phase.state for (name, run), phase in phases.items() if name == job}
    remembered = [
        state
        for key, state in previous.runs.items()
        if _job_of(key) == job and key.rpartition("/")[2] not in visible
    ]
    states = list(visible.values())
    counted = previous.gone.get(job) or {}
    return JobProgress(
        job,
        wanted,
        states.count("succeeded") + remembered.count("succeeded") + counted.get("succeeded", 0),
        states.count("running"),
        remembered.count("running") + counted.get("running", 0),
    )


def plan_progress(
    plan: PlanSettings,
    jobs: JobSettings | None,
    phases: Mapping[tuple[str, str], runs.RunPhase] | None,
    previous: State | None = None,
) -> tuple[JobProgress, ...] | None:
    """The progress of each job of `plan`, or None when the check cannot judge it: the plan
    has no job in the config (it may run work novapod does not launch), a job of it is
    not read by the check (not on the cluster), or the runs could not be read."""
    if jobs is None or phases is None or not plan.jobs:
        return None
    if any(job not in jobs.names for job in plan.jobs):
        return None
    return tuple(
        job_progress(job, jobs.runs.get(job, 1), phases, previous or State()) for job in plan.jobs
    )


def next_launch(
    progress: Sequence[JobProgress],
    jobs: JobSettings,
    phases: Mapping[tuple[str, str], runs.RunPhase],
    previous: State,
) -> str | None:
    """The first job of the plan with a run still to start whose predecessors (`after:`
    and `from: job:`, Job.predecessors, which the construct writes as jobs.predecessors)
    each have a finished run: `novapod launch` refuses a job otherwise (novapod/nova/
    launch.py prepare), and a succeeded PyTorchJob is the check's sign of one. A
    predecessor the check does not read (not on the cluster) cannot be judged: that job
    is not named. None: no such job."""

    def has_finished_run(job: str) -> bool:
        if job not in jobs.names:
            return False
        return job_progress(job, 1, phases, previous).succeeded > 0

    for p in progress:
        if p.left > 0 and all(has_finished_run(j) for j in jobs.predecessors.get(p.job, ())):
            return p.job
    return None


@dataclass(frozen=True)
class PlanNodes:
    """What the `unused` alert compares, each None where the check cannot tell: `held`,
    the nodes the plan's instance groups have (the sum of CurrentCount over DescribeCluster's
    RestrictedInstanceGroups and InstanceGroups whose TrainingPlanArn is the plan's: both
    ClusterRestrictedInstanceGroupDetails and ClusterInstanceGroupDetails carry the two in
    botocore's sagemaker model, and config/hyperpod.py lets a standard group name a plan;
    the plan's ARN from DescribeTrainingPlan's TrainingPlanArn), and `used`, how many
    of those groups' nodes (ListClusterNodes: InstanceGroupName, InstanceId) hold a pod
    of the jobs' namespace, Running or Pending on it (handler_core/runs.py busy_nodes,
    the rule `novapod status` counts a plan's instances running a job with)."""

    held: int | None
    used: int | None


def plan_nodes(
    sample: PlanSample, cluster: ClusterSample | None, jobs: JobsSample | None
) -> PlanNodes:
    arn = (sample.described or {}).get("TrainingPlanArn")
    if cluster is None or cluster.error is not None or not arn:
        return PlanNodes(None, None)
    held: int | None = 0
    groups = set()
    for group in cluster.groups():
        if group.get("TrainingPlanArn") != arn:
            continue
        groups.add(group.get("InstanceGroupName"))
        count = group.get("CurrentCount")
        if held is None or not isinstance(count, int) or isinstance(count, bool):
            held = None  # a group on the plan whose count is not given
            continue
        held += count
    used: int | None = None
    if jobs is not None and jobs.error is None and jobs.pods is not None:
        busy = runs.busy_nodes(jobs.pods)
        used = len({
            str(node.get("InstanceId"))
            for node in cluster.nodes
            if node.get("InstanceGroupName") in groups and str(node.get("InstanceId")) in busy
        })  # fmt: skip
    return PlanNodes(held, used)


@dataclass
class _PlanOutcome:
    """What one plan's sample concludes: the alerts it owes, when it began idling and
    when it began to be held with fewer nodes used than held (None: it is not), the end
    date whose jobs a run has judged (`State.ending_judged`), and the keys of alerts whose
    condition this run cannot judge (kept as sent)."""

    alerts: list[Alert] = field(default_factory=list)
    idle_since: str | None = None
    held_since: str | None = None
    ending_judged: str | None = None
    kept: set[str] = field(default_factory=set)


def _plan_alerts(
    sample: PlanSample,
    previous: State,
    now: datetime,
    settings: Settings,
    say: _Messages,
    *,
    progress: Sequence[JobProgress] | None,
    nodes: PlanNodes,
    launch_job: str | None,
) -> _PlanOutcome:
    """The alerts one plan owes, when it began idling and when its held nodes began to
    be used less than held."""
    name, status = sample.settings.name, sample.status
    described = sample.described or {}
    total = sample.count("TotalInstanceCount") or 0
    available = sample.count("AvailableInstanceCount") or 0
    in_use = sample.count("InUseInstanceCount") or 0
    end = values.as_utc(described.get("EndTime"))
    out = _PlanOutcome()
    # A status seen at the first look is no transition (it is recorded as sent).
    if status in TRANSITIONS and name in previous.seen:
        out.alerts.append(_status_alert(sample, status, total, end, say))
    if status != health.PLAN_ACTIVE:
        return out
    waited = timedelta(minutes=settings.idle_alert_minutes)
    launch = f"novapod launch CONFIG {launch_job}" if launch_job else say.status()
    if available > 0:
        out.idle_since = previous.idle_since.get(name) or values.iso(now)
        began = values.as_utc(out.idle_since) or now
        if now - began >= waited:
            sentence = (
                f"{say.plan(sample)} has had {available} of {total} reserved instances "
                f"unused for {health.span(now - began)} while Active ({in_use} in use); "
                "they are paid for whether or not a job runs"
            )
            out.alerts.append(
                say.alert(
                    _plan_key(name, "idle", out.idle_since),
                    f"plan {name} idle",
                    sentence,
                    launch if progress is not None else say.launch(sample.settings),
                )
            )
    # Nodes its groups hold (CurrentCount, PlanNodes) that no pod of the jobs' namespace
    # is on: as paid for and as unused. Judged only where the check reads every job of
    # the plan, the cluster's groups and nodes, and the namespace's pods; otherwise it
    # waits (no guess: InUseInstanceCount is documented only as "in use from this
    # training plan"), keeping when the spell began and the alert sent for it.
    held, used = nodes.held, nodes.used
    if progress is None or held is None or used is None:
        out.held_since = previous.held_since.get(name)
        if out.held_since is not None:
            out.kept.add(_plan_key(name, "unused", out.held_since))
    elif used < held:
        out.held_since = previous.held_since.get(name) or values.iso(now)
        began = values.as_utc(out.held_since) or now
        if now - began >= waited:
            done = "; all its jobs are done" if all(p.finished for p in progress) else ""
            jobs = ", ".join(p.job for p in progress)
            namespace = settings.jobs.namespace if settings.jobs else ""
            on = "none" if used == 0 else str(used)
            sentence = (
                f"{say.plan(sample)} has {held - used} of {held} held nodes unused: its "
                f"instance groups hold {held} and pods of namespace {namespace} (its jobs "
                f"{jobs}) are on {on}, for {health.span(now - began)} while "
                f"Active{done}; they are paid for whether or not a job runs"
            )
            out.alerts.append(
                say.alert(
                    _plan_key(name, "unused", out.held_since),
                    f"plan {name} unused",
                    sentence,
                    launch,
                )
            )
    if end is not None and end - now <= timedelta(days=settings.ending_alert_days):
        _ending(sample, previous, end, now, progress, say, out)
    return out


def _ending(  # noqa: PLR0917 - one plan's sample and what the run concluded of it
    sample: PlanSample,
    previous: State,
    end: datetime,
    now: datetime,
    progress: Sequence[JobProgress] | None,
    say: _Messages,
    out: _PlanOutcome,
) -> None:
    """The `ending` alert a plan within `ending_alert_days` of `end` owes, and whether
    its jobs were judged for that end date (`State.ending_judged`)."""
    name, date = sample.settings.name, values.iso(end)
    if progress is None and previous.ending_judged.get(name) == date:
        # A run judged this end date's jobs: this one, which cannot, owes nothing new
        # ("cannot tell" is for an end date never judged) and keeps what was sent.
        out.ending_judged = date
        out.kept.add(_plan_key(name, "ending", date))
        return
    if progress is not None:
        out.ending_judged = date
    ending = _ending_alert(sample, end, now, progress, say)
    if ending is not None:
        out.alerts.append(ending)


def _status_alert(
    sample: PlanSample, status: str, total: int, end: datetime | None, say: _Messages
) -> Alert:
    name = sample.settings.name
    key = _plan_key(name, "status", status)
    if status == "Active":
        sentence = (
            f"{say.plan(sample)} is now Active: {total} reserved instances"
            + (f" until {values.iso(end)}" if end else "")
            + ", paid for whether or not a job runs"
        )
        return say.alert(key, f"plan {name} Active", sentence, say.launch(sample.settings))
    if status == "Expired":
        sentence = (
            f"{say.plan(sample)} has Expired"
            + (f" ({values.iso(end)})" if end else "")
            + f": its {total} instances are reclaimed and groups on it get no nodes"
        )
        return say.alert(key, f"plan {name} Expired", sentence, say.status())
    reason = str((sample.described or {}).get("StatusMessage") or "no status message")
    sentence = f"{say.plan(sample)} is Failed ({reason}) and reserves no capacity"
    return say.alert(key, f"plan {name} Failed", sentence, say.status())


def _ending_alert(
    sample: PlanSample,
    end: datetime,
    now: datetime,
    progress: Sequence[JobProgress] | None,
    say: _Messages,
) -> Alert | None:
    """A plan ending within `ending_alert_days` with jobs not finished; with every job of
    it finished, none. Where the check cannot judge its jobs (`plan_progress` None) and
    no run has judged this end date (`State.ending_judged`), or
    cannot tell whether a job is done (`JobProgress.known`: runs gone from the namespace
    before it saw them end), the sentence says so and sends `novapod status CONFIG`,
    which reads the runs' outputs in S3 and marks a job at risk."""
    name = sample.settings.name
    total = sample.count("TotalInstanceCount") or 0
    in_use = sample.count("InUseInstanceCount") or 0
    when = f"ends in {health.span(end - now)} ({values.iso(end)})"
    if progress is None:
        sentence = (
            f"{say.plan(sample)} {when} with {in_use} of {total} instances in use; jobs "
            "still running then are stopped; this check cannot tell whether its jobs are "
            "done, so extend it only if status shows a job at risk (with the extension command), "
            "and let it end if they are done"
        )
    else:
        unfinished = [p for p in progress if p.known and not p.finished]
        unknown = [p for p in progress if not p.known]
        if not unfinished and not unknown:
            return None
        sentence = f"{say.plan(sample)} {when}"
        if unfinished:
            sentence += " with jobs not finished: " + ", ".join(p.text() for p in unfinished)
        if unknown:
            sentence += (
                "; this check cannot tell whether "
                + ", ".join(p.text() for p in unknown)
                + (" is" if len(unknown) == 1 else " are")
                + " done"
            )
        sentence += (
            "; runs still going then are stopped; status says whether they fit before "
            "the end and gives the extension command if not"
        )
    return say.alert(
        _plan_key(name, "ending", values.iso(end)), f"plan {name} ending", sentence, say.status()
    )


def _cluster_alerts(cluster: ClusterSample, say: _Messages) -> list[Alert]:
    if cluster.described is None:
        return []
    recovery = cluster.described.get("NodeRecovery")
    alerts = []
    for group in cluster.groups():
        name = str(group.get("InstanceGroupName"))
        status = str(group.get("Status") or "")
        nodes = cluster.nodes_of(name)
        if status in health.GROUP_FAILED:
            sentence = (
                f"instance group {name} of HyperPod cluster {cluster.name} is {status} "
                f"({group.get('CurrentCount', 0)} of {group.get('TargetCount', 0)} nodes)"
            )
            alerts.append(
                say.alert(
                    f"group/{name}/status/{status}",
                    f"group {name} {status}",
                    sentence,
                    f"aws sagemaker describe-cluster --cluster-name {cluster.name}",
                )
            )
        bad = health.unhealthy(nodes)
        for node in bad:
            node_id = str(node.get("InstanceId"))
            node_status = health.node_status(node)
            detail = (node.get("InstanceStatus") or {}).get("Message")
            automatic = recovery == health.AUTOMATIC_RECOVERY
            sentence = (
                f"node {node_id} of instance group {name} is {node_status}"
                + (f" ({detail})" if detail else "")
                + f", {len(bad)} of {len(nodes)} nodes of the group unhealthy"
                + ("; node recovery is Automatic, HyperPod replaces it" if automatic else "")
            )
            alerts.append(
                say.alert(
                    f"node/{node_id}/{node_status}",
                    f"node {node_id} {node_status}",
                    sentence,
                    health.node_command(cluster.name, recovery, [node_id]),
                )
            )
    return alerts


def logs_command(cluster: ClusterSample | None, run: str, region: str) -> str | None:
    """Where a run's lines are: the HyperPod cluster's log group, /aws/sagemaker/Clusters/
    <name>/<cluster id> (the ID ends its ARN), one stream per node, filtered for the run's
    name (docs/scientists.md, "Where the logs are"); None while the cluster is unknown."""
    arn = str(((cluster.described if cluster else None) or {}).get("ClusterArn") or "")
    if cluster is None or "/" not in arn:
        return None
    group = f"{HYPERPOD_LOG_GROUPS}{cluster.name}/{arn.rsplit('/', 1)[-1]}"
    return (
        f"aws logs filter-log-events --log-group-name {group} --filter-pattern "
        f"'\"{run}\"' --region {region}"
    )


def job_runs(jobs: JobSettings, sample: JobsSample) -> dict[tuple[str, str], runs.RunPhase]:
    """(job, run) -> the run's phase, for each run of the config's jobs in the namespace."""
    out: dict[tuple[str, str], runs.RunPhase] = {}
    for job in jobs.names:
        for run, objects in runs.runs_by_name(job, sample.pytorchjobs).items():
            out[(job, run)] = runs.run_phase(objects)
    return out


def _job_decisions(
    samples: Samples, previous: State, settings: Settings, say: _Messages
) -> tuple[list[Alert], list[JobEvent], dict[str, str], dict[str, dict[str, int]]]:
    """The failed runs' alerts, the runs' events, the runs seen (key -> state): those in
    the namespace, and the runs gone from it counted per job (`State.gone`)."""
    jobs, sample = settings.jobs, samples.jobs
    assert jobs is not None and sample is not None and sample.error is None
    alerts: list[Alert] = []
    events: list[JobEvent] = []
    seen: dict[str, str] = {}
    for (job, run), phase in sorted(job_runs(jobs, sample).items()):
        key = run_key(job, run)
        seen[key] = phase.state
        moment = phase.start if phase.state == "running" else phase.end
        if previous.runs.get(key) != phase.state:
            events.append(
                JobEvent(
                    job,
                    run,
                    EVENTS[phase.state],
                    phase.phase,
                    moment,
                    f"run {run} of job {job} {EVENTS[phase.state]}"
                    + (f" at {values.iso(moment)}" if moment else "")
                    + (f": {phase.message}" if phase.message else ""),
                )
            )
        if phase.state != "failed":
            continue
        took = (
            f" after {health.span(phase.end - phase.start)}"
            if phase.end is not None and phase.start is not None
            else ""
        )
        sentence = (
            f"run {run} of job {job} failed"
            + (f" at {values.iso(phase.end)}" if phase.end else "")
            + took
            + f" ({phase.message or 'the training operator gives no reason'})"
        )
        relaunch = f"novapod launch CONFIG {job} to run it again"
        logs = logs_command(samples.cluster, run, jobs.region)
        command = f"{logs}, then {relaunch}" if logs else f"{say.status()}, then {relaunch}"
        alerts.append(say.alert(f"run/{key}/failed", f"job {job} run failed", sentence, command))
    # A run seen before whose PyTorchJobs are gone is counted as last seen (JobProgress:
    # a succeeded one still counts, one seen running is a run the check saw no end of; a
    # failed one counts for nothing and is dropped). Counted, not kept by name, the state
    # stays as small as the namespace however many runs come and go; a name that comes
    # back (1 in 36^5 for each pair of runs of a job) counts twice.
    gone = {job: dict(found) for job, found in previous.gone.items() if job in jobs.names}
    for key, state in previous.runs.items():
        job = _job_of(key)
        if key in seen or job not in jobs.names or state not in GONE_KINDS:
            continue
        counts = gone.setdefault(job, {})
        counts[state] = counts.get(state, 0) + 1
    return alerts, events, seen, gone


@dataclass
class _PlansSeen:
    """What a run concludes of the plans: alerts owed, statuses seen, idling and held-idle
    times, and the subjects it could not read."""

    owed: list[Alert]
    seen: dict[str, str]
    idle: dict[str, str] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)
    judged: dict[str, str] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)
    # Alerts sent whose condition this run cannot judge (a plan's `unused` while its
    # jobs, its groups and nodes or the namespace's pods cannot be read; its `ending`
    # while the jobs of an end date judged before cannot be): kept as sent.
    kept: set[str] = field(default_factory=set)


def _plans(
    samples: Samples,
    previous: State,
    now: datetime,
    settings: Settings,
    say: _Messages,
) -> _PlansSeen:
    phases = None
    if settings.jobs is not None and samples.jobs is not None and samples.jobs.error is None:
        phases = job_runs(settings.jobs, samples.jobs)
    out = _PlansSeen(owed=[], seen=dict(previous.seen))
    for sample in samples.plans:
        name = sample.settings.name
        if sample.error is not None:
            out.unknown.add(f"plan/{name}")
            for kept, since in (
                (out.idle, previous.idle_since),
                (out.held, previous.held_since),
                (out.judged, previous.ending_judged),
            ):
                if name in since:
                    kept[name] = since[name]
            continue
        progress = plan_progress(sample.settings, settings.jobs, phases, previous)
        launch_job = None
        if progress is not None and settings.jobs is not None and phases is not None:
            launch_job = next_launch(progress, settings.jobs, phases, previous)
        found = _plan_alerts(
            sample,
            previous,
            now,
            settings,
            say,
            progress=progress,
            nodes=plan_nodes(sample, samples.cluster, samples.jobs),
            launch_job=launch_job,
        )
        out.owed += found.alerts
        out.kept |= found.kept
        if found.idle_since is not None:
            out.idle[name] = found.idle_since
        if found.held_since is not None:
            out.held[name] = found.held_since
        if found.ending_judged is not None:
            out.judged[name] = found.ending_judged
        out.seen[name] = sample.status
    return out


def decide(samples: Samples, previous: State, now: datetime, settings: Settings) -> Decision:
    """The alerts this run owes and the state it leaves if they are all sent."""
    say = _Messages(settings.environment)
    plans = _plans(samples, previous, now, settings, say)
    owed, unknown = plans.owed, plans.unknown
    if samples.cluster is not None:
        if samples.cluster.error is not None:
            unknown.add("cluster")
        else:
            owed += _cluster_alerts(samples.cluster, say)
    events: list[JobEvent] = []
    runs_seen = dict(previous.runs)
    gone = {job: dict(counts) for job, counts in previous.gone.items()}
    if settings.jobs is not None and samples.jobs is not None:
        if samples.jobs.error is not None:
            unknown.add("jobs")
        else:
            found, events, runs_seen, gone = _job_decisions(samples, previous, settings, say)
            owed += found
    # First looks: a plan's status is recorded, not alerted.
    first_looks = {
        _plan_key(s.settings.name, "status", s.status): values.iso(now)
        for s in samples.plans
        if s.error is None and s.settings.name not in previous.seen and s.status in TRANSITIONS
    }
    holding = {a.key for a in owed} | set(first_looks) | plans.kept

    def holds(key: str) -> bool:
        return key in holding or _owner(key) in unknown

    sent = {key: when for key, when in previous.sent.items() if holds(key)}
    sent.update(first_looks)
    # A claim younger than the lease is a run's that may still publish it; an older one's
    # run is over (the function's timeout is shorter) without recording its Publish:
    # owed again, published or not (index.py: a second copy, never a lost alert).
    lease = timedelta(seconds=settings.claim_lease_seconds)
    claimed = {
        key: when
        for key, when in previous.claimed.items()
        if holds(key) and key not in sent and now - (values.as_utc(when) or now - lease) < lease
    }
    alerts = tuple(a for a in owed if a.key not in sent and a.key not in claimed)
    for alert in alerts:
        sent[alert.key] = values.iso(now)
    state = State(
        seen=plans.seen,
        idle_since=plans.idle,
        sent=sent,
        sequence=previous.sequence,
        runs=runs_seen,
        claimed=claimed,
        held_since=plans.held,
        gone=gone,
        ending_judged=plans.judged,
    )
    return Decision(alerts=alerts, state=state, events=tuple(events))


def publishing(
    state: State,
    owed: Sequence[str],
    sent: Collection[str],
    claim: str | None = None,
    at: datetime | None = None,
) -> State:
    """`state` (the decision's, every owed alert sent) as it stands while a run publishes
    the alerts `owed`: those in `sent` recorded sent, `claim` claimed at `at` (its Publish
    about to be sent), the others neither sent nor claimed (owed to the next run)."""
    pending = set(owed) - set(sent)
    claims = {k: v for k, v in state.claimed.items() if k not in owed}
    if claim is not None:
        claims[claim] = values.iso(at)
    return replace(
        state,
        sent={k: v for k, v in state.sent.items() if k not in pending},
        claimed=claims,
    )


def settled(
    found: State,
    mine: Collection[str],
    stamp: str,
    sent: Collection[str],
    at: datetime,
) -> State:
    """`found` (the item another run wrote after this run's last write) with this run's
    claims still in it settled: an alert of `mine` claimed there at `stamp` (this run's)
    recorded sent at `at` when it is in `sent`, released otherwise (its Publish failed or
    was never made: owed to the next run). Another run's claims, the alerts it recorded
    and what it saw stay as they are; a claim of this run's that it dropped (its alert's
    condition over) is not brought back."""
    ours = {k for k in mine if found.claimed.get(k) == stamp}
    return replace(
        found,
        sent={**found.sent, **{k: values.iso(at) for k in sorted(ours) if k in sent}},
        claimed={k: v for k, v in found.claimed.items() if k not in ours},
    )
