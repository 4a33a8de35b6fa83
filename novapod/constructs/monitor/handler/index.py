"""Lambda entry point of the environment's scheduled check (EventBridge Scheduler invokes
`check` every few minutes with the settings the construct wrote as the schedule's input).

One run:

1. reads each plan (SageMaker DescribeTrainingPlan; ResourceNotFound: not bought, the
   error the API reference documents), the HyperPod cluster (DescribeCluster;
   ResourceNotFound: not deployed) and its nodes (ListClusterNodes, every page);
2. with jobs on the cluster, their runs: EKS DescribeCluster of the EKS cluster (its
   private endpoint and CA), then the PyTorchJobs and the pods of the jobs' namespace
   through the Kubernetes API (handler_core/kubernetes.py: a token presigned locally with
   the function's credentials, which the cluster maps through the check's own access
   entry to a Kubernetes group whose Role lists PyTorchJobs and pods in that namespace
   only);
3. puts the metrics of what it read (CloudWatch PutMetricData, in the settings'
   namespace, at most 1000 a request);
4. reads the state the last run left (DynamoDB GetItem, strongly consistent: the item
   of this environment in the monitor stack's table), decides the alerts it owes and
   the job events it saw (`decisions.decide`), records what it saw with a conditional
   PutItem on the item's `Sequence`, logs each job event once a write records the runs
   they come from (one JSON line, step "job-event": after this write, or after the last
   one when this one failed), then for each alert claims it (the state with that alert
   claimed, the same conditional write) and only then publishes it (SNS Publish, one
   sentence), and last records the outcome.

Runs do not overlap in a deployment: the function's reserved concurrency is 1, and Lambda
throttles an invocation beyond it (a synchronous one fails, an asynchronous one waits in
Lambda's queue; docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
The conditional writes still keep two runs that did overlap (the handler run outside
Lambda, or the concurrency changed by hand) from both sending an alert: a claim is
written only on the item its run last read or wrote, so one run claims an alert, and a
run whose write finds the item moved (another run wrote it) claims nothing more and
settles its own claims on the item the failed condition returned (ALL_OLD): those it
published recorded sent, the others released, another run's claims and the rest of the
item left as they are (`_Recorder.finish`, `decisions.settled`). Tested in every order of
two runs' DynamoDB calls, for two runs in the same second owing one alert and for two
runs 20 s apart owing two, each followed by a run after the lease (each alert once).

A claim records the alert claimed, not sent: the next write records it sent (or released,
when its Publish failed). What may still send one twice (none is lost to a write that
fails):

- SNS Publish is sent once, never retried by botocore (`PUBLISH_ATTEMPTS`): its
  standard retry mode retries a read timeout or a dropped connection
  (botocore/retries/standard.py, TransientRetryableChecker), and SNS may have accepted
  the message it never answered. A Publish that failed is released and owed to the next
  run, so one whose answer was lost arrives once more: a copy for each run whose Publish
  answer is lost, never a retry's; SNS standard topics deliver at least once anyway
  (docs.aws.amazon.com/sns/latest/dg/welcome-features.html);
- a claim whose outcome was not recorded (the write after its Publish failed, or the run
  stopped between them) stays in the item; no run sends it while it is younger than
  `Settings.claim_lease_seconds` (longer than the function's timeout, so its run is over
  by then), and the first run after sends it, published before or not: one more copy at
  most, one JSON line `unrecorded` names it (this run's claims the item holds as last
  written or found). A write that failed stops the run's claims, and its last write (the
  outcome) is still tried, even when it holds what the item held: the failed write may
  have landed, and the item its condition then finds with the run's own `Writer` mark
  is written on (the line `state-moved` says so);
- with two runs overlapping, a run's settling that cannot be written (it failed, or was
  refused `SETTLE_WRITES` times, or too little time was left) leaves its claims as an
  unrecorded outcome does (above);
- a run stops claiming when the Lambda context's remaining time
  (`context.get_remaining_time_in_millis()`, docs.aws.amazon.com/lambda/latest/dg/
  python-context.html) is under `stop_margin_seconds()`, the longest a Publish and two
  PutItems can take; what it did not claim is owed to the next run (one JSON line
  `deferred` names them);
- a claim whose answer was lost (botocore retries the PutItem, whose condition then
  fails on the item the first attempt wrote) is recognized as this run's own by the
  item the failed condition returns (ReturnValuesOnConditionCheckFailure) and the run's
  mark on it (`Writer`), not taken for another run's, nor another run's for its own.

Without the state (its read failed) a run sends nothing: it cannot know what was sent.
A read or call that fails leaves its part out and the others are still done; the run
then fails (one JSON line names each failed call), so the function's Errors metric
counts it, and the next run, minutes later, starts again: a Kubernetes API that does not
answer is such a failure, never a failed run. Nothing here changes the environment but
the metrics, the alerts and the state item.

Every AWS call has connect and read timeouts and botocore's standard retries
(`worst_case_seconds`; the construct's timeout is above the reads' worst case plus the
margin, tested).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from ...handler_core import aws, errors, kubernetes, values
from ...handler_core.values import log as _log
from ...handler_core.values import utc_now as _now
from . import decisions
from .decisions import ClusterSample, JobSettings, JobsSample, PlanSample, Samples, Settings, State

CONNECT_TIMEOUT_SECONDS: float = 3
READ_TIMEOUT_SECONDS: float = 5
MAX_ATTEMPTS = 3
# A Publish SNS accepted but did not answer in time would be sent again by a retry.
PUBLISH_ATTEMPTS = 1
MAX_BACKOFF_SECONDS = 20  # botocore standard mode: pause before retry n <= min(2**n, 20) s
NOT_FOUND = "ResourceNotFound"
CONDITION_FAILED = "ConditionalCheckFailedException"
EKS_NOT_FOUND = "ResourceNotFoundException"
# What a conditional write of the state came to.
WRITTEN, MOVED, FAILED = "written", "moved", "failed"
# The writes a run whose item moved makes at most to settle its claims on it: each one
# refused means another run wrote in between, and the settling is made on what it wrote.
SETTLE_WRITES = 3
# Each GET of the Kubernetes API, no retry (the next run reads again).
KUBERNETES_TIMEOUT_SECONDS: float = 5


class CheckError(Exception):
    """A run that could not read or record everything; its sentence names each call."""


def _client(service: str, attempts: int = MAX_ATTEMPTS) -> Any:
    return aws.client(
        service, aws.Settings(attempts, CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS)
    )


def worst_case_seconds(
    calls: int, attempts: int = MAX_ATTEMPTS, *, kubernetes_gets: int = 0
) -> float:
    """The longest a run of `calls` AWS calls and `kubernetes_gets` GETs of the Kubernetes
    API can take: each AWS call retried to its limit, each GET once (its timeout bounds
    the connect and the read)."""
    pauses = sum(min(2.0**n, MAX_BACKOFF_SECONDS) for n in range(1, attempts))
    aws_calls = calls * (attempts * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + pauses)
    return aws_calls + kubernetes_gets * 2 * KUBERNETES_TIMEOUT_SECONDS


def stop_margin_seconds() -> float:
    """The time a run keeps when it stops publishing: one more Publish, the PutItem that
    records it and one spare PutItem (the state of a run that sent nothing), plus a
    few seconds to log and return."""
    return worst_case_seconds(1, PUBLISH_ATTEMPTS) + worst_case_seconds(2) + 5


class _Deadline:
    """The Lambda context's remaining time (None: no context, no bound)."""

    def __init__(self, context: Any) -> None:
        self._remaining = getattr(context, "get_remaining_time_in_millis", None)

    def short_of(self, seconds: float) -> bool:
        if self._remaining is None:
            return False
        return float(self._remaining()) / 1000 < seconds

    def near(self) -> bool:
        return self.short_of(stop_margin_seconds())


def check(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    settings = decisions.parse_settings(event)
    now = _now()
    failures: list[str] = []
    samples = _sample(settings, _client("sagemaker"), failures)
    data = decisions.metric_data(samples, settings, now)
    cloudwatch = _client("cloudwatch")
    for batch in decisions.batches(data):
        try:
            cloudwatch.put_metric_data(Namespace=settings.namespace, MetricData=batch)
        except aws.ERRORS as exc:
            failures.append(errors.failed("CloudWatch PutMetricData", exc))
    sent, deferred = _alert(samples, settings, now, failures, _Deadline(context))
    summary = {
        "plans": {p.settings.name: p.status for p in samples.plans if p.error is None},
        "metrics": len(data),
        "alerts": sent,
        "deferred": deferred,
        "failures": failures,
        **(
            {"jobs": samples.jobs.error or f"{len(samples.jobs.pytorchjobs)} PyTorchJobs"}
            if samples.jobs is not None
            else {}
        ),
    }
    if failures:
        _log("fail", "; ".join(failures), environment=settings.environment, **summary)
        raise CheckError("; ".join(failures))
    _log(
        "sampled",
        f"{len(data)} metrics of {len(samples.plans)} plans"
        + (f" and cluster {settings.cluster}" if settings.cluster else "")
        + f", {len(sent)} alerts"
        + (f", {len(deferred)} left to the next run" if deferred else ""),
        environment=settings.environment,
        **summary,
    )
    return summary


class _Recorder:
    """Writes the state as the run goes: first what the run saw (no alert sent yet), then
    each alert it claims before publishing it (the one before recorded sent), and once at
    the end (`finish`: the last one sent, those whose Publish failed or that were not
    claimed released). Each write is conditional on the Sequence of the item the run read,
    then of its own last write. After a write that failed the run claims nothing more but
    still makes the last write (what it published is then recorded once, and no second
    copy comes after the lease). After one that found the item moved (the item the failed
    condition returned, `found`), it claims nothing more either, and its last write settles
    its own claims on that item (`decisions.settled`): published ones recorded sent, the
    others released; another run's claims and the rest of the item stay as they are."""

    def __init__(
        self,
        dynamodb: Any,
        settings: Settings,
        previous: State,
        now: datetime,
        deadline: _Deadline,
    ) -> None:
        self.dynamodb = dynamodb
        self.settings = settings
        self.now = now
        self.deadline = deadline
        self.sequence = previous.sequence
        self.written = previous.text() if previous.sequence else None
        # The claims of the item as last known (written by this run, or found).
        self.claims: dict[str, str] = dict(previous.claimed)
        # The alerts this run claimed, each by a write known to land, stamped with the
        # run's `now`. No two runs hold a claim of the same alert at once (a claim is a
        # conditional write on a state in which the alert is neither sent nor claimed,
        # and a run carries the claims it read), so one of these keys found with this
        # stamp in another run's item is this run's claim. A claim whose write was
        # refused or failed is not counted: another run's claim of the same alert in the
        # same second would look the same, and released by this run it would be sent
        # twice. Never published (the run claims nothing after it), such a claim, if it
        # landed after all, is sent once after its lease.
        self.mine: set[str] = set()
        self.stamp = values.iso(now)
        # This run's mark on each item it writes: two runs that saw the same thing in the
        # same second write the same State, and only the mark tells whose an item is.
        self.writer = uuid.uuid4().hex
        self.moved = False  # another run wrote the item: claim nothing more
        self.failed = False  # a write failed: claim nothing more
        self.found: State | None = None  # the item the refused write found (moved)

    @property
    def stopped(self) -> bool:
        return self.moved or self.failed

    def left(self) -> list[str]:
        """This run's claims the item still holds as last known: without an outcome."""
        return sorted(k for k in self.mine if self.claims.get(k) == self.stamp)

    def record(self, state: State, failures: list[str], *, last: bool = False) -> bool:
        """Write `state` unless it is what the item holds; False when it was not written.
        After a failed write only the `last` one is still made; after a moved one none
        (`finish` settles this run's claims instead)."""
        if self.moved or (self.failed and not last):
            return False
        # After a failed write the last one is made even when it holds what the item held
        # before: the failed one may have landed (a claim left without its outcome).
        if state.text() == self.written and not self.failed:
            return True
        outcome, found = self._put(state, failures)
        if outcome == MOVED and found is not None and found[1] == self.writer:
            # This run's own write, reported failed, had landed (its answer lost on every
            # attempt): no run wrote since, so this one writes on it.
            _log(
                "state-moved",
                "the check's state changed since this run's last write known to land: it "
                "is this run's own write, whose answer was lost; the run writes on it",
                environment=self.settings.environment,
            )
            self._landed(found[0])
            if state.text() == self.written:
                return True
            outcome, found = self._put(state, failures)
        if outcome == WRITTEN:
            self._landed(replace(state, sequence=self.sequence + 1))
            return True
        if outcome == MOVED:
            self.moved = True
            self.found = found[0] if found is not None else None
            if found is not None:
                self.claims = dict(found[0].claimed)
            _log(
                "state-moved",
                (
                    # A write reported failed may have landed, and another run may have
                    # written after it: the item cannot tell which.
                    "the check's state changed since this run's last write known to land "
                    "(perhaps its own write whose answer was lost)"
                    if self.failed
                    else "another run wrote the check's state first"
                )
                + "; this run claims nothing more and records on the item it found the "
                "alerts it claimed (sent, or released), and the other run or the next one "
                "takes the rest from there",
                environment=self.settings.environment,
            )
        else:
            self.failed = True
        return False

    def finish(self, state: State, sent: Sequence[str], failures: list[str]) -> bool:
        """The last write: `state` (this run's outcome), or after the item moved, this
        run's claims still in the item found settled on it (each refusal: another run
        wrote, and the settling is made again on what it wrote, `SETTLE_WRITES` times at
        most, while the time for a write is left). True when `state` was written."""
        if self.record(state, failures, last=True):
            return True
        for _ in range(SETTLE_WRITES):
            if not self.moved or self.found is None:
                break
            found = self.found
            settled = decisions.settled(found, self.mine, self.stamp, sent, self.now)
            if settled.text() == found.text():  # none of this run's claims in it
                break
            if self.deadline.short_of(worst_case_seconds(1) + 5):
                break
            outcome, moved = _write_state(
                self.dynamodb, self.settings, settled, self.now, failures, writer=self.writer
            )
            if outcome == WRITTEN:
                self.found = None
                self.claims = dict(settled.claimed)
                break
            self.found = moved[0] if moved is not None else None
            if moved is not None:
                self.claims = dict(moved[0].claimed)
        return False

    def _put(self, state: State, failures: list[str]) -> tuple[str, tuple[State, str] | None]:
        return _write_state(
            self.dynamodb,
            self.settings,
            replace(state, sequence=self.sequence),
            self.now,
            failures,
            writer=self.writer,
        )

    def _landed(self, state: State) -> None:
        """`state` is the item, written by this run (its `sequence` the item's)."""
        self.sequence = state.sequence
        self.written = state.text()
        self.claims = dict(state.claimed)
        # Only the claims this run still holds stay its own: one its own write released
        # (its Publish failed) may be claimed again by another run in the same second,
        # under the same stamp, and must not be settled as this run's (review 22e,
        # finding 7).
        self.mine = {k for k in self.mine if self.claims.get(k) == self.stamp}


def _alert(
    samples: Samples,
    settings: Settings,
    now: datetime,
    failures: list[str],
    deadline: _Deadline,
) -> tuple[list[str], list[str]]:
    """Record what the run saw, log the job events, then claim and publish each alert it
    owes; the keys of those sent and of those left to the next run (time ran short, or
    the state could not be written)."""
    dynamodb = _client("dynamodb")
    key = {decisions.STATE_KEY: {"S": settings.environment}}
    try:
        item = dynamodb.get_item(TableName=settings.state_table, Key=key, ConsistentRead=True)
    except aws.ERRORS as exc:
        failures.append(errors.failed("DynamoDB GetItem of the check's state", exc))
        return [], []
    previous = _state_of(item.get("Item") or {})
    decision = decisions.decide(samples, previous, now, settings)
    recorder = _Recorder(dynamodb, settings, previous, now, deadline)
    owed = [alert.key for alert in decision.alerts]
    sent: list[str] = []
    unsent: list[str] = []

    def stage(claim: str | None = None) -> decisions.State:
        return decisions.publishing(decision.state, owed, sent, claim, now)

    def log_events() -> None:
        for event in decision.events:
            _log("job-event", event.message, environment=settings.environment, **event.fields())

    # What the run saw, no alert sent yet: a run that finds the item moved sends nothing.
    # The job events are logged once a write records the runs they come from: this one,
    # or the last one when this one failed (the runs are then recorded there, and no
    # later run sees them change).
    events_logged = recorder.record(stage(), failures)
    if events_logged:
        log_events()
    sns = _client("sns", PUBLISH_ATTEMPTS)
    for alert in decision.alerts:
        if recorder.stopped or deadline.near():
            break
        # Claimed before it is published (the alerts sent so far recorded sent): a claim
        # not recorded afterwards as sent or released is owed again once its lease is out.
        if not recorder.record(stage(alert.key), failures):
            break
        recorder.mine.add(alert.key)
        try:
            sns.publish(TopicArn=settings.topic_arn, Subject=alert.subject, Message=alert.message)
        except aws.ERRORS as exc:
            failures.append(errors.failed(f"SNS Publish of {alert.key}", exc))
            unsent.append(alert.key)
            continue
        sent.append(alert.key)
        _log("alert", alert.message, key=alert.key, environment=settings.environment)
    deferred = [k for k in owed if k not in sent and k not in unsent]
    if deferred:
        _log(
            "deferred",
            f"{len(deferred)} alerts left to the next run: "
            + (
                "another run wrote the state first"
                if recorder.moved
                else "the state could not be recorded"
                if recorder.failed
                else "time ran short"
            ),
            keys=deferred,
            environment=settings.environment,
        )
    # Records the last Publish sent and releases those that failed: the next run owes them.
    if recorder.finish(stage(), sent, failures) and not events_logged:
        log_events()
    left = recorder.left()
    if left:
        _log(
            "unrecorded",
            "an alert's claim stays recorded without its outcome; the first run after its "
            f"lease ({settings.claim_lease_seconds} s) sends it again",
            keys=left,
            environment=settings.environment,
        )
    return sent, deferred


def _state_of(item: Mapping[str, Any]) -> State:
    """The state an item holds (none: a first run)."""
    return decisions.read_state(
        (item.get("State") or {}).get("S"), int((item.get("Sequence") or {}).get("N") or 0)
    )


def _is_ours(found: Mapping[str, Any], item: Mapping[str, Any]) -> bool:
    """Whether the item a failed condition found is the one this write puts: botocore
    retried a PutItem whose first attempt DynamoDB applied but whose answer was lost
    (the error's Item member: ReturnValuesOnConditionCheckFailure ALL_OLD,
    docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html): the same
    Sequence, State and the run's own Writer mark (another run's item may hold the same
    State: the same things seen in the same second)."""
    return all(found.get(k) == item[k] for k in ("Sequence", "State", "Writer"))


def _write_state(
    dynamodb: Any,
    settings: Settings,
    state: State,
    now: datetime,
    failures: list[str],
    *,
    writer: str,
) -> tuple[str, tuple[State, str] | None]:
    """The new state, if the item is still the one this run read (its Sequence): WRITTEN,
    MOVED (the item changed: with the state and the Writer mark of the item the failed
    condition returned, when it returned one) or FAILED."""
    if state.sequence:
        condition: dict[str, Any] = {
            "ConditionExpression": "#sequence = :sequence",
            "ExpressionAttributeNames": {"#sequence": "Sequence"},
            "ExpressionAttributeValues": {":sequence": {"N": str(state.sequence)}},
        }
    else:
        condition = {"ConditionExpression": f"attribute_not_exists({decisions.STATE_KEY})"}
    item = {
        decisions.STATE_KEY: {"S": settings.environment},
        "Sequence": {"N": str(state.sequence + 1)},
        "State": {"S": state.text()},
        "UpdatedAt": {"S": values.iso(now)},
        "Writer": {"S": writer},
    }
    try:
        dynamodb.put_item(
            TableName=settings.state_table,
            Item=item,
            # The item as it is when the condition fails: a retried write whose first
            # attempt landed (its answer lost) finds its own item, not another run's; a
            # write another run's came before finds that run's item to settle on.
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **condition,
        )
    except aws.ERRORS as exc:
        if errors.error_code(exc) == CONDITION_FAILED:
            # botocore's JSON parser merges the error's modelled members (Item) into
            # exc.response.
            found = getattr(exc, "response", {}).get("Item") or {}
            if _is_ours(found, item):
                return WRITTEN, None
            if not found:  # no item: nothing to settle on
                return MOVED, None
            return MOVED, (_state_of(found), (found.get("Writer") or {}).get("S", ""))
        failures.append(errors.failed("DynamoDB PutItem of the check's state", exc))
        return FAILED, None
    return WRITTEN, None


def _sample(settings: Settings, sagemaker: Any, failures: list[str]) -> Samples:
    plans = []
    for plan in settings.plans:
        try:
            described = _described(sagemaker.describe_training_plan, plan.plan_name)
            plans.append(PlanSample(plan, described))
        except aws.ERRORS as exc:
            failure = errors.failed(f"SageMaker DescribeTrainingPlan of {plan.plan_name}", exc)
            failures.append(failure)
            plans.append(PlanSample(plan, error=failure))
    cluster = None
    if settings.cluster is not None:
        cluster = _sample_cluster(settings.cluster, sagemaker, failures)
    jobs = _sample_jobs(settings.jobs, failures) if settings.jobs is not None else None
    return Samples(tuple(plans), cluster, jobs)


def _sample_jobs(jobs: JobSettings, failures: list[str]) -> JobsSample:
    """The PyTorchJobs and the pods of the jobs' namespace; what could not be read is a
    failure of the run (never a run's failure). Pods that could not be read leave the
    runs read (`JobsSample.pods` None: the nodes they hold are not known)."""
    name = jobs.eks_cluster
    try:
        described = _client("eks").describe_cluster(name=name)["cluster"]
    except aws.ERRORS as exc:
        if errors.error_code(exc) == EKS_NOT_FOUND:
            # Not deployed (the error EKS DescribeCluster documents): no run to read, and
            # what was known of the runs stays.
            return JobsSample(error=f"EKS cluster {name} is not deployed")
        failures.append(errors.failed(f"EKS DescribeCluster of {name}", exc))
        return JobsSample(error=failures[-1])
    api = f"Kubernetes API of EKS cluster {name}"
    what = f"{api}: list PyTorchJobs in {jobs.namespace}"
    items: list[dict[str, Any]] | None = None
    try:
        cluster = kubernetes.connect(described, _client("sts"))
        items = kubernetes.list_items(
            cluster,
            kubernetes.PYTORCHJOBS.format(namespace=jobs.namespace),
            timeout=KUBERNETES_TIMEOUT_SECONDS,
        )
        what = f"{api}: list pods in {jobs.namespace}"
        pods = kubernetes.list_items(
            cluster,
            kubernetes.PODS.format(namespace=jobs.namespace),
            timeout=KUBERNETES_TIMEOUT_SECONDS,
        )
    except kubernetes.Unreachable as exc:
        failures.append(f"{what} failed (no answer: {exc})")
    except kubernetes.Refused as exc:
        failures.append(f"{what} failed (refused: {exc})")
    except aws.ERRORS as exc:  # no credentials to sign the token with
        failures.append(errors.failed(what, exc))
    else:
        return JobsSample(tuple(items), tuple(pods))
    if items is not None:  # the PyTorchJobs were read, the pods not
        return JobsSample(tuple(items))
    return JobsSample(error=failures[-1])


def _sample_cluster(name: str, sagemaker: Any, failures: list[str]) -> ClusterSample:
    action = f"SageMaker DescribeCluster of {name}"
    try:
        described = _described(sagemaker.describe_cluster, name, key="ClusterName")
        nodes: tuple[Mapping[str, Any], ...] = ()
        if described is not None:
            action = f"SageMaker ListClusterNodes of {name}"
            pages = sagemaker.get_paginator("list_cluster_nodes")
            nodes = tuple(
                node
                for page in pages.paginate(ClusterName=name)
                for node in page.get("ClusterNodeSummaries", [])
            )
    except aws.ERRORS as exc:
        failures.append(errors.failed(action, exc))
        return ClusterSample(name, error=failures[-1])
    return ClusterSample(name, described, nodes)


def _described(call: Any, name: str, *, key: str = "TrainingPlanName") -> dict[str, Any] | None:
    """The answer, or None when SageMaker does not know the name."""
    try:
        return dict(call(**{key: name}))
    except aws.ERRORS as exc:
        if errors.error_code(exc) == NOT_FOUND:
            return None
        raise
