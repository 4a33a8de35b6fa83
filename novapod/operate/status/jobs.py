"""The config's jobs, their runs and where they stand against their plan's schedule, for
`novapod status` (and `novapod health`, which refuses a group that runs one). Pure: the
facts `collect` gathered and a time in, rows and findings out.

A run is the Helm release `novapod launch --run` starts, named `<job[:34]>-<5 [a-z0-9]>`
(novapod/nova/cancel.py, run_pattern). It shows in the cluster as a PyTorchJob of that
name (PPO: four, `<run>-rm`, `-cm`, `-am`, `-at`), and in S3 as the folder
`<outputs>/<job>/<run>/`. Its state:

- from its PyTorchJobs, when the cluster's API was read: the rule of
  novapod/constructs/handler_core/runs.py, which the environment's scheduled check
  alerts with too (the last condition whose status is "True"; failed if one of its
  PyTorchJobs failed, succeeded once all succeeded, otherwise running), its start and
  end from the same objects;
- from S3 alone (its PyTorchJobs are gone: `novapod cancel`, `helm uninstall`, or a
  clean-up): succeeded when it wrote what a finished run writes (`manifest.json` or
  `output/output.tar.gz`; an evaluation's results file), ending then; otherwise failed
  (it stopped without finishing) when the cluster was read, and `unknown` when it was not.

A job on SageMaker training jobs (`runs_on: training-job`) has a training job per run
(`<prefix>--<job>-<run>`, novapod/nova/training_jobs.py), as ListTrainingJobs
listed and DescribeTrainingJob described it (collect.training_job_runs): running while
InProgress (SecondaryStatus Pending while it waits for its plan's capacity) or Stopping,
succeeded once Completed, failed when Failed or Stopped; its start and end are
TrainingStartTime and TrainingEndTime, its message the FailureReason, and the report
shows its status pair, the plan it runs on (ResourceConfig.TrainingPlanArn; none on
demand), its instances and the seconds billed. What SageMaker listed is a report, not a
claim: the list may not show a job started seconds ago.

A job needs `runs` succeeded runs, one after another of `hours_per_run` each, in its slot
of the plan's schedule (`novapod plan --json`: `start_hour` to `end_hour` from the plan's
start). At the pace it goes, its end is projected: a running run ends `hours_per_run`
after its start (or now, when it overran), and each run still to go takes
`hours_per_run` after that, or after the later of now, its slot's start and its
predecessors' projected ends when none runs. Then it is:

- `done`: every run succeeded;
- `at-risk`: its projected end is after the plan's end (the plan's instances are taken
  back then: extend the plan), or the plan has ended with runs left;
- `late`: its projected end is more than `LATE_AFTER` past its slot's end;
- `on-time`: otherwise; `unscheduled` when it has no slot (no plan, or the plan has no
  start yet).

A failed run needs attention while it is the job's newest (no later run has started);
so does a job at risk or late. The jobs also say which instances run a job: the nodes
(`hyperpod-<instance id>`, the name HyperPod gives a node in the EKS cluster) that hold a
pending or running pod of the jobs' namespace.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from novapod.capacity.extension import SEARCH_COMMAND
from novapod.constructs.handler_core import health
from novapod.constructs.handler_core import runs as run_rules
from novapod.constructs.handler_core.values import as_utc, iso
from novapod.operate.status.collect import JobsFacts, RunOutput
from novapod.operate.status.expected import Expected, ExpectedJob

RunState = Literal["running", "succeeded", "failed", "unknown"]
JobState = Literal["not-started", "running", "waiting", "failed", "succeeded", "unknown"]
Verdict = Literal["done", "at-risk", "late", "on-time", "unscheduled"]
JobAttention = Literal["run-failed", "job-at-risk", "job-late"]
# A job whose projected end is at most this past its slot is on time: launching a run
# some minutes after the schedule says is not lateness.
LATE_AFTER = timedelta(hours=1)
PPO_PARTS = run_rules.PPO_PARTS
DAY = timedelta(hours=24)


@dataclass(frozen=True)
class PlanWindow:
    """What a job's plan says: its status, start and end (extensions included), ARN."""

    name: str
    status: str
    start: datetime | None
    end: datetime | None
    arn: str | None


@dataclass(frozen=True)
class Run:
    name: str
    state: RunState
    phase: str | None  # the PyTorchJob condition, None when only S3 knows the run
    start: datetime | None
    end: datetime | None
    message: str | None
    finished_uri: str | None
    first_written: datetime | None
    # A training job's run: what DescribeTrainingJob said (training_job_facts); None on
    # HyperPod
    training_job: Mapping[str, Any] | None = None

    @property
    def order(self) -> tuple[datetime, str]:
        moment = self.start or self.first_written or self.end
        return (moment or datetime.min.replace(tzinfo=UTC), self.name)

    def json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "phase": self.phase,
            "start": iso(self.start) or None,
            "end": iso(self.end) or None,
            "output": self.finished_uri,
            "message": self.message,
            "training_job": dict(self.training_job) if self.training_job is not None else None,
        }


@dataclass
class JobVerdict:
    job: ExpectedJob
    runs: list[Run]
    succeeded: int
    running: list[Run]
    state: JobState
    verdict: Verdict
    planned_start: datetime | None
    planned_end: datetime | None
    projected_end: datetime | None
    plan: PlanWindow | None
    attention: list[tuple[JobAttention, str, str | None]] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return max(0, self.job.runs - self.succeeded)


# --- runs -------------------------------------------------------------------------------


run_name = run_rules.run_name
condition = run_rules.condition


# TrainingJobStatus (botocore's model) -> the run's state: a Stopping job still holds its
# instances; Stopped (by someone, or at MaxRuntimeInSeconds) did not finish.
TRAINING_JOB_STATES: Mapping[str, RunState] = {
    "InProgress": "running",
    "Stopping": "running",
    "Completed": "succeeded",
    "Failed": "failed",
    "Stopped": "failed",
}


def runs_of(job: ExpectedJob, facts: JobsFacts) -> list[Run]:
    """The job's runs, oldest first, from its PyTorchJobs and its S3 folders (a
    training-job job's from SageMaker's training jobs)."""
    if job.runs_on == "training-job":
        outputs = {o.run: o for o in facts.outputs.get(job.name, ())}
        runs = [
            _training_job_run(described, outputs.get(str(described.get("TrainingJobName"))))
            for described in facts.training_jobs.get(job.name, ())
        ]
        return sorted(runs, key=lambda r: r.order)
    objects = (
        run_rules.runs_by_name(job.name, facts.kubernetes.pytorchjobs)
        if facts.kubernetes.read
        else {}
    )
    # Folders named as the launcher names runs only (a folder written by hand is no run).
    outputs = {o.run: o for o in facts.outputs.get(job.name, ()) if run_name(job.name, o.run)}
    runs = [
        _run(name, objects.get(name, []), outputs.get(name), facts.kubernetes.read, job)
        for name in sorted(set(objects) | set(outputs))
    ]
    return sorted(runs, key=lambda r: r.order)


def training_job_facts(described: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's DescribeTrainingJob says, as the report shows it: the status pair, the
    plan it runs on (ResourceConfig.TrainingPlanArn; None on demand), its instances and
    the seconds billed (BillableTimeInSeconds, once SageMaker counted them)."""
    resources = described.get("ResourceConfig") or {}
    billable = described.get("BillableTimeInSeconds")
    return {
        "status": str(described.get("TrainingJobStatus") or ""),
        "secondary_status": described.get("SecondaryStatus"),
        "plan_arn": resources.get("TrainingPlanArn"),
        "instance_type": resources.get("InstanceType"),
        "instance_count": resources.get("InstanceCount"),
        "billable_seconds": int(billable) if billable is not None else None,
    }


def _training_job_run(described: Mapping[str, Any], output: RunOutput | None) -> Run:
    facts = training_job_facts(described)
    state = TRAINING_JOB_STATES.get(facts["status"], "unknown")
    end = as_utc(described.get("TrainingEndTime"))
    if state == "running":
        end = None
    reason = described.get("FailureReason")
    return Run(
        name=str(described.get("TrainingJobName")),
        state=state,
        phase=facts["secondary_status"],
        start=as_utc(described.get("TrainingStartTime")),
        end=end,
        message=str(reason) if reason and state != "succeeded" else None,
        finished_uri=output.finished_uri if output else None,
        first_written=as_utc(described.get("CreationTime")),
        training_job=facts,
    )


def _run(
    name: str,
    objects: Sequence[Mapping[str, Any]],
    output: RunOutput | None,
    read: bool,
    job: ExpectedJob,
) -> Run:
    finished = output.finished if output else None
    uri = output.finished_uri if output else None
    first = output.first_written if output else None
    if not objects:
        sign = "results" if job.technique == "evaluation" else "manifest.json"
        if finished is not None:
            return Run(name, "succeeded", None, None, finished, None, uri, first)
        if read:
            message = (
                f"not in the cluster and no {sign} in S3: it stopped without finishing "
                "(cancelled, or failed and removed)"
            )
            return Run(name, "failed", None, None, output.last_written if output else None,
                       message, None, first)  # fmt: skip
        message = f"in S3 without {sign}; the cluster was not read"
        return Run(name, "unknown", None, None, None, message, None, first)
    found = run_rules.run_phase(objects)
    end = found.end or (finished if found.state == "succeeded" else None)
    note = found.message if found.state != "succeeded" else None
    return Run(name, found.state, found.phase, found.start, end, note, uri, first)


# --- the schedule -----------------------------------------------------------------------


def assess_jobs(
    wanted: Expected,
    facts: JobsFacts,
    plans: Mapping[str, PlanWindow],
    now: datetime,
    *,
    config_path: str,
) -> list[JobVerdict]:
    """Every job's runs and verdict, in config order."""
    config = shlex.quote(config_path)
    verdicts: dict[str, JobVerdict] = {}

    def projected(name: str) -> datetime | None:
        if name not in verdicts:
            job = wanted.job(name)
            if job is None:
                return None
            verdicts[name] = _verdict(job, facts, plans, now, projected)
        found = verdicts[name]
        return found.projected_end

    for job in wanted.jobs:
        projected(job.name)
    out = [verdicts[job.name] for job in wanted.jobs]
    for verdict in out:
        verdict.attention = _attention(verdict, verdicts, now, config)
    return out


def _verdict(
    job: ExpectedJob,
    facts: JobsFacts,
    plans: Mapping[str, PlanWindow],
    now: datetime,
    projected: Callable[[str], datetime | None],
) -> JobVerdict:
    runs = runs_of(job, facts)
    succeeded = sum(1 for r in runs if r.state == "succeeded")
    running = [r for r in runs if r.state == "running"]
    unknown = [r for r in runs if r.state == "unknown"]
    plan = plans.get(job.plan or "")
    planned_start = planned_end = None
    if plan is not None and plan.start is not None and job.start_hour is not None:
        planned_start = plan.start + timedelta(hours=job.start_hour)
        planned_end = plan.start + timedelta(hours=job.end_hour or job.start_hour)
    hours = timedelta(hours=job.hours_per_run)
    remaining = max(0, job.runs - succeeded)
    if remaining == 0:
        ends = [r.end for r in runs if r.state == "succeeded" and r.end is not None]
        end = max(ends, default=None)
    elif running or unknown:
        current = (running or unknown)[-1]
        started = current.start or current.first_written or now
        end = max(started + hours, now) + hours * (remaining - 1)
    else:
        begin = max(now, planned_start) if planned_start is not None else now
        for predecessor in job.predecessors:
            before = projected(predecessor)
            if before is not None:
                begin = max(begin, before)
        end = begin + hours * remaining
    verdict: Verdict
    if remaining == 0 or end is None:
        verdict = "done"
    elif plan is not None and (
        plan.status == "Expired" or (plan.end is not None and end > plan.end)
    ):
        verdict = "at-risk"
    elif planned_end is not None and end > planned_end + LATE_AFTER:
        verdict = "late"
    elif planned_end is not None:
        verdict = "on-time"
    else:
        verdict = "unscheduled"
    return JobVerdict(
        job=job,
        runs=runs,
        succeeded=succeeded,
        running=running,
        state=_state(job, runs, succeeded, running),
        verdict=verdict,
        planned_start=planned_start,
        planned_end=planned_end,
        projected_end=end,
        plan=plan,
    )


def _state(
    job: ExpectedJob, runs: Sequence[Run], succeeded: int, running: Sequence[Run]
) -> JobState:
    if succeeded >= job.runs:
        return "succeeded"
    if running:
        return "running"
    if not runs:
        return "not-started"
    newest = runs[-1].state
    if newest == "failed":
        return "failed"
    if newest == "unknown":
        return "unknown"
    return "waiting"


def _attention(
    found: JobVerdict, verdicts: Mapping[str, JobVerdict], now: datetime, config: str
) -> list[tuple[JobAttention, str, str | None]]:
    job = found.job
    out: list[tuple[JobAttention, str, str | None]] = []
    runs_left = f"{found.remaining} of {job.runs} runs left"
    # A run only S3 knows, the cluster not read, may be running: nothing to launch then.
    unknown = [r.name for r in found.runs if r.state == "unknown"]
    ready = (
        not found.running
        and not unknown
        and all(verdicts[p].remaining == 0 for p in job.predecessors if p in verdicts)
    )
    launch = f"novapod launch {config} {job.name}" if job.launchable else None
    newest = found.runs[-1] if found.runs else None
    if newest is not None and newest.state == "failed" and found.remaining:
        when = f" at {iso(newest.end)}" if newest.end else ""
        out.append(
            (
                "run-failed",
                f"run {newest.name} failed{when}"
                + (f": {newest.message}" if newest.message else "")
                + f"; {found.succeeded} of {job.runs} runs done; launch it again",
                launch if ready else None,
            )
        )
    end, plan = found.projected_end, found.plan
    if found.verdict == "at-risk" and plan is not None:
        if plan.status == "Expired" or (plan.end is not None and plan.end <= now):
            message = f"plan {plan.name} has ended ({iso(plan.end)}) with {runs_left}"
            command = None
        else:
            assert end is not None and plan.end is not None
            over = end - plan.end
            message = (
                f"at this pace its last run ends {iso(end)}, {health.span(over)} after plan "
                f"{plan.name} ends ({iso(plan.end)}); {runs_left}: extend the plan or "
                "shorten its runs"
            )
            days = max(1, math.ceil(over / DAY))
            command = (
                SEARCH_COMMAND.format(hours=days * 24).replace("ARN", plan.arn)
                if plan.arn
                else None
            )
        out.append(("job-at-risk", message, command))
    elif found.verdict == "late":
        assert end is not None and found.planned_end is not None
        waiting = [p for p in job.predecessors if p in verdicts and verdicts[p].remaining]
        if waiting:
            why = f"; it waits for {', '.join(waiting)}"
        elif found.running:
            why = ""
        elif unknown:
            why = f"; run {unknown[-1]} may be running (the cluster was not read)"
        else:
            why = "; none is running"
        out.append(
            (
                "job-late",
                f"{health.span(end - found.planned_end)} behind the plan's schedule: "
                f"planned to end "
                f"{iso(found.planned_end)}, at this pace it ends {iso(end)}; {runs_left}{why}",
                launch if ready else None,
            )
        )
    return out


# --- what the jobs' pods hold ---------------------------------------------------------


def busy_nodes(facts: JobsFacts | None) -> dict[str, list[str]] | None:
    """Instance ID -> the pods of the jobs' namespace it holds (pending on it or running),
    or None when the cluster's API was not read: handler_core/runs.py busy_nodes, the
    rule the environment's scheduled check counts a plan's used nodes with."""
    if facts is None or not facts.kubernetes.read:
        return None
    return run_rules.busy_nodes(facts.kubernetes.pods)


def job_json(found: JobVerdict) -> dict[str, Any]:
    job = found.job
    counts = {
        "succeeded": found.succeeded,
        "running": len(found.running),
        "failed": sum(1 for r in found.runs if r.state == "failed"),
        "unknown": sum(1 for r in found.runs if r.state == "unknown"),
    }
    counts["not_started"] = max(
        0, job.runs - counts["succeeded"] - counts["running"] - counts["unknown"]
    )
    late = None
    if found.verdict == "late" and found.projected_end and found.planned_end:
        late = int((found.projected_end - found.planned_end).total_seconds() // 3600)
    return {
        "name": job.name,
        "technique": job.technique,
        "runs_on": job.runs_on,
        "plan": job.plan,
        "instance_group": job.instance_group,
        "instance_count": job.instance_count,
        "runs_planned": job.runs,
        "hours_per_run": job.hours_per_run,
        "state": found.state,
        "counts": counts,
        "schedule": {
            "verdict": found.verdict,
            "planned_start": iso(found.planned_start) or None,
            "planned_end": iso(found.planned_end) or None,
            "projected_end": iso(found.projected_end) or None,
            "plan_end": iso(found.plan.end) if found.plan and found.plan.end else None,
            "hours_late": late,
        },
        "runs": [run.json() for run in found.runs],
        "attention": [kind for kind, _, _ in found.attention],
        "note": None
        if job.launchable
        else f"{job.technique} runs as a SageMaker training job, not on the cluster",
    }
