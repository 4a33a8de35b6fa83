"""What one run of the environment's check concludes: the metrics of what it read, the
alerts it owes, and the state it leaves for the next run. Pure: samples, the previous
state and a time in; `index.py` makes the calls.

Settings come as the schedule's input (the construct writes them at synth): the
environment, the metric namespace, the plans (the config's name, SageMaker's name, the
jobs that run on it), the HyperPod cluster's name, the alert thresholds, the topic and
the state table.

Metrics (PutMetricData, dimensions Environment and Plan, or Environment and
InstanceGroup): each plan DescribeTrainingPlan finds, its TotalInstanceCount,
AvailableInstanceCount, InUseInstanceCount and UnhealthyInstanceCount (botocore's
DescribeTrainingPlanResponse; the last is optional there) and IdleInstances, the available
ones while the plan is Active (paid for, unused); each instance group of DescribeCluster,
its TargetCount and CurrentCount (ClusterInstanceGroupDetails and
ClusterRestrictedInstanceGroupDetails) and the nodes ListClusterNodes shows unhealthy.

Alerts, each owed once per occurrence (its `key`; `index.py` publishes it at least once,
a second copy is rare): SageMaker publishes no training plan
event to EventBridge (the "Amazon SageMaker AI events" list of the EventBridge events
reference names HyperPod's cluster, node health and cluster events, no plan), so the
check alerts on what it sees:

- a plan turned Active, Expired or Failed (a status seen since an earlier run: a plan
  found in that status at the first look is not news);
- an Active plan with reserved instances unused for `idle_alert_minutes`;
- an Active plan ending within `ending_alert_days`. The check has no view of the jobs
  (their runs are in the cluster's Kubernetes API and the outputs bucket, which it does
  not read), so the sentence does not tell anyone to extend the plan: it says that
  jobs still running at the end are stopped and sends `novapod status CONFIG`, which
  marks a job at risk of outliving the plan and gives the extension command for it
  (docs/operations.md, "Alerts");
- an instance group Failed, Degraded or Deleting, a node in Failure or NotFound
  (DescribeCluster's and ListClusterNodes' statuses; HyperPod's own cluster state, node
  health and cluster events go to the topic through EventBridge rules).

The state holds the plans seen, when each started idling, and the keys of the alerts
sent whose condition still holds; a key whose condition is over is dropped, so the next
occurrence alerts again. What a failed read leaves unknown keeps its state as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ...handler_core import health, values

# The metrics' namespace, and their dimensions (`novapod status` reads them back).
NAMESPACE = "novapod"
ENVIRONMENT_DIMENSION = "Environment"
PLAN_DIMENSION = "Plan"
# The in-use count of a plan, sampled each run: `status` sums it into instance-hours.
IN_USE_METRIC = "InUseInstances"
# PutMetricData takes at most 1000 metrics a request (API_PutMetricData.html).
MAX_DATUMS = 1000
# SNS Publish's Subject: fewer than 100 characters (API_Publish.html).
MAX_SUBJECT = 99
# Statuses a plan turns into that are news (alerted once, when seen to change).
TRANSITIONS = ("Active", "Expired", "Failed")
NOT_BOUGHT = "NotBought"
# The state's version: a state of another version is read as no state.
STATE_VERSION = 1
# The state item's key attribute: one item per environment, keyed by its name.
STATE_KEY = "Environment"


class SettingsError(Exception):
    """The schedule's input is not what the construct writes."""


# --- settings -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSettings:
    name: str  # capacity.training_plans[].name
    plan_name: str  # the SageMaker training plan's name
    jobs: tuple[str, ...] = ()


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


def parse_settings(raw: Mapping[str, Any]) -> Settings:
    def text(key: str) -> str:
        return values.required_str(raw, key, SettingsError)

    def number(key: str, low: int, high: int) -> int:
        found = values.whole_number(raw, key, low, high, SettingsError, required=True)
        assert found is not None
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
    return Settings(
        environment=text("environment"),
        namespace=text("namespace"),
        plans=tuple(parsed),
        cluster=values.optional_str(raw, "cluster", SettingsError),
        idle_alert_minutes=number("idle_alert_minutes", 1, 10**6),
        ending_alert_days=number("ending_alert_days", 1, 10**4),
        topic_arn=text("topic_arn"),
        state_table=text("state_table"),
    )


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
class Samples:
    plans: tuple[PlanSample, ...]
    cluster: ClusterSample | None


# --- metrics --------------------------------------------------------------------------------


def _datum(
    name: str, value: int, dimensions: Sequence[tuple[str, str]], now: datetime
) -> dict[str, Any]:
    return {
        "MetricName": name,
        "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions],
        "Timestamp": now,
        "Value": float(value),
        "Unit": "Count",
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
        idle = available if plan.status == health.PLAN_ACTIVE else 0
        data.append(_datum("IdleInstances", idle, dims, now))
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
    to idle, the alerts sent whose condition still holds (key -> when), and the item's
    sequence (the conditional write's guard; 0: no item yet)."""

    seen: Mapping[str, str] = field(default_factory=dict)
    idle_since: Mapping[str, str] = field(default_factory=dict)
    sent: Mapping[str, str] = field(default_factory=dict)
    sequence: int = 0

    def text(self) -> str:
        return json.dumps(
            {
                "version": STATE_VERSION,
                "seen": dict(sorted(self.seen.items())),
                "idle_since": dict(sorted(self.idle_since.items())),
                "sent": dict(sorted(self.sent.items())),
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

    return State(strings("seen"), strings("idle_since"), strings("sent"), sequence)


# --- alerts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    key: str  # the occurrence: sent once while it lasts
    subject: str  # the email's subject
    message: str  # one sentence: the environment, the plan or group, the figure, the command


@dataclass(frozen=True)
class Decision:
    alerts: tuple[Alert, ...]
    # The state if every alert is sent; `index` leaves out the keys it could not send.
    state: State


def _plan_key(name: str, *parts: str) -> str:
    return "/".join(("plan", name, *parts))


def _owner(key: str) -> str:
    """The subject a key belongs to: `plan/<name>` or `cluster` (groups and nodes)."""
    kind, _, rest = key.partition("/")
    return f"plan/{rest.split('/', 1)[0]}" if kind == "plan" else "cluster"


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


def _plan_alerts(
    sample: PlanSample, previous: State, now: datetime, settings: Settings, say: _Messages
) -> tuple[list[Alert], str | None]:
    """The alerts one plan owes, and when it began idling (None: it does not idle)."""
    name, status = sample.settings.name, sample.status
    described = sample.described or {}
    total = sample.count("TotalInstanceCount") or 0
    available = sample.count("AvailableInstanceCount") or 0
    in_use = sample.count("InUseInstanceCount") or 0
    end = values.as_utc(described.get("EndTime"))
    alerts: list[Alert] = []
    # A status seen at the first look is no transition (it is recorded as sent).
    if status in TRANSITIONS and name in previous.seen:
        key = _plan_key(name, "status", status)
        if status == "Active":
            sentence = (
                f"{say.plan(sample)} is now Active: {total} reserved instances"
                + (f" until {values.iso(end)}" if end else "")
                + ", paid for whether or not a job runs"
            )
            alerts.append(
                say.alert(key, f"plan {name} Active", sentence, say.launch(sample.settings))
            )
        elif status == "Expired":
            sentence = (
                f"{say.plan(sample)} has Expired"
                + (f" ({values.iso(end)})" if end else "")
                + f": its {total} instances are reclaimed and groups on it get no nodes"
            )
            alerts.append(say.alert(key, f"plan {name} Expired", sentence, say.status()))
        else:
            reason = str(described.get("StatusMessage") or "no status message")
            sentence = f"{say.plan(sample)} is Failed ({reason}) and reserves no capacity"
            alerts.append(say.alert(key, f"plan {name} Failed", sentence, say.status()))
    idle_since = None
    if status == health.PLAN_ACTIVE:
        if available > 0:
            idle_since = previous.idle_since.get(name) or values.iso(now)
            began = values.as_utc(idle_since) or now
            if now - began >= timedelta(minutes=settings.idle_alert_minutes):
                sentence = (
                    f"{say.plan(sample)} has had {available} of {total} reserved instances "
                    f"unused for {health.span(now - began)} while Active ({in_use} in use); "
                    "they are paid for whether or not a job runs"
                )
                alerts.append(
                    say.alert(
                        _plan_key(name, "idle", idle_since),
                        f"plan {name} idle",
                        sentence,
                        say.launch(sample.settings),
                    )
                )
        if end is not None and end - now <= timedelta(days=settings.ending_alert_days):
            # Not seen here: whether its jobs have runs left. `status` knows (job-at-risk).
            sentence = (
                f"{say.plan(sample)} ends in {health.span(end - now)} ({values.iso(end)}) "
                f"with {in_use} of {total} instances in use; jobs still running then are "
                "stopped; this check does not see the jobs, so extend it only if status "
                "shows a job at risk (with the extension command), and let it end if they "
                "are done"
            )
            alerts.append(
                say.alert(
                    _plan_key(name, "ending", values.iso(end)),
                    f"plan {name} ending",
                    sentence,
                    say.status(),
                )
            )
    return alerts, idle_since


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


def decide(samples: Samples, previous: State, now: datetime, settings: Settings) -> Decision:
    """The alerts this run owes and the state it leaves if they are all sent."""
    say = _Messages(settings.environment)
    owed: list[Alert] = []
    seen = dict(previous.seen)
    idle: dict[str, str] = {}
    unknown: set[str] = set()
    for sample in samples.plans:
        name = sample.settings.name
        if sample.error is not None:
            unknown.add(f"plan/{name}")
            if name in previous.idle_since:
                idle[name] = previous.idle_since[name]
            continue
        found, idle_since = _plan_alerts(sample, previous, now, settings, say)
        owed += found
        if idle_since is not None:
            idle[name] = idle_since
        seen[name] = sample.status
    if samples.cluster is not None:
        if samples.cluster.error is not None:
            unknown.add("cluster")
        else:
            owed += _cluster_alerts(samples.cluster, say)
    # First looks: a plan's status is recorded, not alerted.
    first_looks = {
        _plan_key(s.settings.name, "status", s.status): values.iso(now)
        for s in samples.plans
        if s.error is None and s.settings.name not in previous.seen and s.status in TRANSITIONS
    }
    holding = {a.key for a in owed} | set(first_looks)
    sent = {
        key: when for key, when in previous.sent.items() if key in holding or _owner(key) in unknown
    }
    sent.update(first_looks)
    alerts = tuple(a for a in owed if a.key not in sent)
    for alert in alerts:
        sent[alert.key] = values.iso(now)
    state = State(seen=seen, idle_since=idle, sent=sent, sequence=previous.sequence)
    return Decision(alerts=alerts, state=state)


def without(state: State, unsent: Sequence[str]) -> State:
    """The state with these alerts not sent: the next run owes them again."""
    sent = {k: v for k, v in state.sent.items() if k not in set(unsent)}
    return State(state.seen, state.idle_since, sent, state.sequence)
