"""The scheduled check and the config's job runs, against the fake control plane and the
fake Kubernetes API of the EKS cluster, as the role and with the settings of the
synthesized single-rig-purchase.yaml (jobs sft-lora and eval in namespace nova-jobs): a
failed run alerts once, whatever runs of the check see it; a succeeded one does not; a
cluster that cannot be read is a failed run of the check, never a failed job run; every
run seen to change is one JSON line for the dashboard."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.retries.standard import ExponentialBackoff

from novapod.constructs.handler_core.values import iso
from novapod.constructs.monitor.handler import decisions, index
from novapod.nova.access import HYPERPOD_LOG_GROUP_PREFIX
from novapod.nova.kubernetes import MONITOR_RULES
from tests.conftest import Synthesized
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.fakes.kubernetes import FakeKubernetes
from tests.handlers.monitor_world import (
    CLUSTER,
    LITE,
    NOW,
    PLAN,
    Deployed,
    deploy,
    principal,
    settings,
)
from tests.handlers.world import FakeClock

NAMESPACE = "nova-jobs"  # single-rig-purchase.yaml's nova.namespace (the default)
# A run on the four nodes of the example's group: a Master and three Workers.
FOUR = {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}
RUN = "sft-lora-x7k2p"
STARTED = NOW - timedelta(hours=3)
FAILED_AT = NOW - timedelta(minutes=50)
REASON = "PyTorchJob sft-lora-x7k2p is failed because 1 Master replica(s) failed."


def pytorchjob(name: str, phase: str, *, start: datetime, end: datetime | None = None,
               message: str = "", replicas: dict[str, Any] | None = None
               ) -> dict[str, Any]:  # fmt: skip
    """A PyTorchJob as the training operator shows it: its conditions in the order it
    appended them (Created, Running, then Succeeded or Failed; Created alone while its
    pods are not all scheduled; Running turned False and Suspended True when suspended,
    pkg/controller.v1/common/job.go; Restarting in Running's place when a pod restarts), its
    replicas `{"Master": {"replicas": 1}}` unless given."""
    conditions: list[dict[str, Any]] = [
        {"type": "Created", "status": "False", "lastTransitionTime": iso(start)},
        {"type": "Running", "status": "True", "lastTransitionTime": iso(start)},
    ]
    if phase == "Created":
        conditions = [{"type": "Created", "status": "True", "lastTransitionTime": iso(start)}]
    elif phase == "Suspended":
        conditions[-1]["status"] = "False"
        conditions.append({"type": phase, "status": "True", "lastTransitionTime": iso(start)})
    elif phase == "Restarting":  # it takes Running's place (pkg/util/status.go filterOutCondition)
        conditions[-1] = {"type": phase, "status": "True", "lastTransitionTime": iso(start)}
    status: dict[str, Any] = {"conditions": conditions, "startTime": iso(start)}
    if phase in ("Succeeded", "Failed"):
        assert end is not None
        conditions[-1]["status"] = "False"
        final = {"type": phase, "status": "True", "lastTransitionTime": iso(end)}
        if message:
            final["message"] = message
        conditions.append(final)
        if phase == "Succeeded":
            status["completionTime"] = iso(end)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE, "creationTimestamp": iso(start)},
        "spec": {"pytorchReplicaSpecs": replicas or {"Master": {"replicas": 1}}},
        "status": status,
    }


@pytest.fixture(scope="module")
def synthesized(synth: Callable[[Path], Synthesized]) -> Synthesized:
    return synth(LITE)


@pytest.fixture(scope="module")
def kube() -> Iterator[FakeKubernetes]:
    """The EKS cluster's API server (named as the HyperPod cluster, novapod-<env>)."""
    with FakeKubernetes(cluster_name=CLUSTER, secret_key=os.environ["AWS_SECRET_ACCESS_KEY"]) as s:
        yield s


class Jobs:
    """The deployed example with its EKS cluster, a clock, and runs of the check."""

    def __init__(self, world: Deployed, kube: FakeKubernetes, result: Synthesized,
                 clock: FakeClock) -> None:  # fmt: skip
        self.world, self.kube, self.result, self.clock = world, kube, result, clock
        self.plane = world.plane
        self.plane.act_as(principal(result))
        # The schedule's input the runs get: the synthesized one unless a test edits it.
        self.settings = settings(result)

    def run(self, *, minutes: float = 5) -> dict[str, Any]:
        self.clock.advance(minutes * 60)
        return index.check(self.settings)

    def new_alerts(self, *, minutes: float = 5) -> list[str]:
        before = len(self.world.published())
        self.run(minutes=minutes)
        return self.world.published()[before:]

    def put(self, obj: dict[str, Any]) -> None:
        self.kube.add_object(obj)

    def remove(self, name: str) -> None:
        """A PyTorchJob deleted (`novapod cancel`, `helm uninstall`, a clean-up)."""
        del self.kube.objects[("kubeflow.org", "pytorchjobs", NAMESPACE, name)]

    def state(self) -> dict[str, Any]:
        item = self.world.state()
        assert item is not None
        found: dict[str, Any] = json.loads(item["State"])
        return found


@pytest.fixture
def jobs(
    synthesized: Synthesized,
    control_plane: FakeControlPlane,
    kube: FakeKubernetes,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Jobs]:
    world = deploy(control_plane)
    kube.reset()
    kube.namespaces.add(NAMESPACE)
    # RBAC as the cluster bootstrap binds the check's group: list PyTorchJobs, there only.
    kube.bind_role(NAMESPACE, MONITOR_RULES)
    control_plane.hyperpod.add_eks_cluster(CLUSTER, endpoint=kube.endpoint, ca_pem=kube.ca_pem)
    clock = FakeClock(NOW)
    monkeypatch.setattr(index, "_now", clock.now)
    monkeypatch.setattr(index, "CONNECT_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(index, "READ_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(index, "KUBERNETES_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    yield Jobs(world, kube, synthesized, clock)
    control_plane.act_as(None)
    assert control_plane.violations == []


def expected_alert(world: Deployed) -> str:
    cluster_id = world.cluster_arn.rsplit("/", 1)[-1]
    return (
        f"novapod nova-lite: run {RUN} of job sft-lora failed at {iso(FAILED_AT)} after "
        f"2h 10m ({REASON}); next: aws logs filter-log-events --log-group-name "
        f"/aws/sagemaker/Clusters/{CLUSTER}/{cluster_id} --filter-pattern '\"{RUN}\"' "
        "--region us-east-1, then novapod launch CONFIG sft-lora to run it again"
    )


def test_a_failed_run_alerts_once_in_one_sentence(jobs) -> None:
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    assert jobs.new_alerts() == []
    jobs.put(pytorchjob(RUN, "Failed", start=STARTED, end=FAILED_AT, message=REASON))
    assert jobs.new_alerts() == [expected_alert(jobs.world)]
    (message,) = jobs.plane.monitoring.published[-1:]
    assert message.subject == "novapod nova-lite: job sft-lora run failed"
    for _ in range(3):  # run after run: never again while the run stays failed
        assert jobs.new_alerts() == []
    assert jobs.state()["sent"][f"run/sft-lora/{RUN}/failed"] == iso(NOW + timedelta(minutes=10))
    assert jobs.state()["runs"] == {f"sft-lora/{RUN}": "failed"}


def test_a_failed_run_found_at_the_first_look_alerts_too(jobs) -> None:
    jobs.put(pytorchjob(RUN, "Failed", start=STARTED, end=FAILED_AT, message=REASON))
    assert jobs.new_alerts() == [expected_alert(jobs.world)]
    assert jobs.new_alerts() == []


def test_a_succeeded_run_and_a_running_one_do_not_alert(jobs) -> None:
    jobs.put(pytorchjob("sft-lora-aaaaa", "Succeeded", start=STARTED, end=FAILED_AT))
    jobs.put(pytorchjob("eval-bbbbb", "Running", start=FAILED_AT))
    # Another job's run and no run at all are not the config's jobs' runs.
    jobs.put(pytorchjob("someone-elses-ccccc", "Failed", start=STARTED, end=FAILED_AT))
    jobs.put(pytorchjob("sft-lora", "Failed", start=STARTED, end=FAILED_AT))
    assert jobs.new_alerts() == []
    assert jobs.new_alerts() == []
    assert jobs.state()["runs"] == {
        "eval/eval-bbbbb": "running",
        "sft-lora/sft-lora-aaaaa": "succeeded",
    }


def test_one_failed_pytorchjob_of_a_ppo_run_fails_the_run(jobs) -> None:
    for part in ("rm", "cm", "am"):
        jobs.put(pytorchjob(f"{RUN}-{part}", "Running", start=STARTED))
    jobs.put(pytorchjob(f"{RUN}-at", "Failed", start=STARTED, end=FAILED_AT, message=REASON))
    assert jobs.new_alerts() == [expected_alert(jobs.world)]


def test_the_next_run_of_the_same_job_failing_alerts_again(jobs) -> None:
    jobs.put(pytorchjob(RUN, "Failed", start=STARTED, end=FAILED_AT, message=REASON))
    assert len(jobs.new_alerts()) == 1
    again = "sft-lora-z9z9z"
    jobs.put(pytorchjob(again, "Failed", start=FAILED_AT, end=NOW, message="OOM"))
    (alert,) = jobs.new_alerts()
    assert f"run {again} of job sft-lora failed at {iso(NOW)} after 50m (OOM)" in alert


def test_concurrent_runs_of_the_check_alert_once(jobs, capsys, monkeypatch) -> None:
    """Two runs read the same state; the one that claims it first sends, the other
    (its claim refused by the conditional write) sends nothing."""
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    jobs.run()
    jobs.put(pytorchjob(RUN, "Failed", start=STARTED, end=FAILED_AT, message=REASON))
    rival: dict[str, Any] = {}
    done = threading.Event()
    real = index._write_state

    def claim(*args: Any, **kwargs: Any) -> Any:
        # Between this run's read of the state and its claim, the other run does all.
        if not done.is_set():
            done.set()
            rival["summary"] = index.check(settings(jobs.result))
        return real(*args, **kwargs)

    monkeypatch.setattr(index, "_write_state", claim)
    first = jobs.run()
    assert done.is_set()
    sent = [m.message for m in jobs.plane.monitoring.published]
    assert sent == [expected_alert(jobs.world)]  # once, by the run that claimed first
    assert rival["summary"]["alerts"] == [f"run/sft-lora/{RUN}/failed"]
    assert first["alerts"] == [] and first["failures"] == []
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["step"] for x in lines].count("state-moved") == 1
    assert [x for x in lines if x["step"] == "job-event" and x["event"] == "failed"] == [
        {
            "step": "job-event",
            "message": f"run {RUN} of job sft-lora failed at {iso(FAILED_AT)}: {REASON}",
            "at": iso(FAILED_AT),
            "environment": "nova-lite",
            "event": "failed",
            "job": "sft-lora",
            "phase": "Failed",
            "run": RUN,
        }
    ]
    assert jobs.new_alerts() == []


def test_an_unreachable_cluster_is_a_failed_check_not_a_failed_run(jobs, capsys) -> None:
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    jobs.run()
    sent_before = jobs.state()["sent"]
    jobs.plane.hyperpod.add_eks_cluster(
        CLUSTER, endpoint="https://127.0.0.1:9", ca_pem=jobs.kube.ca_pem
    )
    capsys.readouterr()
    with pytest.raises(index.CheckError, match=(
        r"Kubernetes API of EKS cluster novapod-nova-lite: list PyTorchJobs in nova-jobs "
        r"failed \(no answer: ConnectionRefusedError"
    )):  # fmt: skip
        jobs.run()
    assert jobs.world.published() == []
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (failed,) = [x for x in lines if x["step"] == "fail"]
    assert "list PyTorchJobs in nova-jobs failed" in failed["message"]
    assert not [x for x in lines if x["step"] == "job-event"]
    # What it knew of the runs stays; the plans and the cluster were still sampled.
    assert jobs.state()["runs"] == {f"sft-lora/{RUN}": "running"}
    assert jobs.state()["sent"] == sent_before
    assert jobs.plane.monitoring.metric_values(
        "TotalInstances", Environment="nova-lite", Plan="lite-sft"
    )


@pytest.mark.parametrize(
    ("status", "said"),
    [(401, r"refused: HTTP 401"), (403, r"refused: HTTP 403")],
)
def test_a_cluster_that_refuses_the_check_is_a_failed_check(jobs, status, said) -> None:
    jobs.put(pytorchjob(RUN, "Failed", start=STARTED, end=FAILED_AT, message=REASON))
    jobs.kube.refuse(status, "denied")
    with pytest.raises(index.CheckError, match=said):
        jobs.run()
    assert jobs.world.published() == []
    jobs.kube.refusal = None
    assert jobs.new_alerts() == [expected_alert(jobs.world)]  # once it can read, it tells


def test_the_check_s_group_lists_pytorchjobs_and_reads_nothing_else(jobs) -> None:
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    jobs.run()
    requests = [(r.method, r.path) for r in jobs.kube.requests]
    assert requests == [("GET", f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/pytorchjobs")]


def test_without_describe_eks_cluster_the_jobs_are_not_read(jobs) -> None:
    jobs.plane.act_as(principal(jobs.result).without("DescribeEksCluster"))
    with pytest.raises(
        index.CheckError,
        match=r"EKS DescribeCluster of novapod-nova-lite failed \(AccessDeniedException",
    ):
        jobs.run()


def test_each_run_seen_to_change_is_one_json_line(jobs, capsys) -> None:
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    jobs.run()
    jobs.run()  # nothing changed: no line
    jobs.put(pytorchjob(RUN, "Succeeded", start=STARTED, end=FAILED_AT))
    jobs.run()
    events = [
        (x["event"], x["run"], x["at"], x["message"])
        for x in map(json.loads, capsys.readouterr().out.splitlines())
        if x["step"] == "job-event"
    ]
    assert events == [
        ("started", RUN, iso(STARTED), f"run {RUN} of job sft-lora started at {iso(STARTED)}"),
        ("succeeded", RUN, iso(FAILED_AT), f"run {RUN} of job sft-lora succeeded at {iso(FAILED_AT)}"),
    ]  # fmt: skip
    assert jobs.world.published() == []


def test_job_events_are_logged_when_the_last_write_records_the_runs(jobs, capsys) -> None:
    """The run's first write (what it saw) failed on every attempt; its last write records
    the runs, so it logs their events then: no later run sees them change, and a line
    left out would be missing from the dashboard for good (review 22c, finding 4)."""
    jobs.run()
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    jobs.plane.server_error("PutItem", times=3)  # botocore's three attempts
    capsys.readouterr()
    with pytest.raises(index.CheckError, match="DynamoDB PutItem of the check's state failed"):
        jobs.run()
    assert jobs.state()["runs"] == {f"sft-lora/{RUN}": "running"}
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    events = [(x["event"], x["run"]) for x in lines if x["step"] == "job-event"]
    assert events == [("started", RUN)]
    jobs.run()
    assert not [
        x for x in map(json.loads, capsys.readouterr().out.splitlines()) if x["step"] == "job-event"
    ]


def test_the_logs_command_names_the_jobs_log_group() -> None:
    assert decisions.HYPERPOD_LOG_GROUPS == HYPERPOD_LOG_GROUP_PREFIX
    unknown = decisions.ClusterSample(CLUSTER, error="x")
    assert decisions.logs_command(unknown, RUN, "us-east-1") is None


def test_a_state_written_before_runs_were_recorded_reads_with_none() -> None:
    old = '{"version":1,"seen":{"lite-sft":"Active"},"idle_since":{},"sent":{}}'
    assert decisions.read_state(old, 3) == decisions.State(seen={"lite-sft": "Active"}, sequence=3)
    state = decisions.State(runs={f"sft-lora/{RUN}": "failed"}, sequence=2)
    assert decisions.read_state(state.text(), 2) == state


@pytest.mark.parametrize(
    ("jobs_setting", "said"),
    [
        ("nova-jobs", "jobs must be an object"),
        ({"eks_cluster": "c", "namespace": "n", "names": "sft", "region": "r"}, "jobs.names"),
        ({"namespace": "n", "names": ["sft"], "region": "r", "runs": {"sft": 1}}, "eks_cluster"),
        ({"eks_cluster": "c", "namespace": "n", "names": ["sft"], "region": "r"}, "jobs.runs"),
        (
            {
                "eks_cluster": "c",
                "namespace": "n",
                "names": ["sft"],
                "region": "r",
                "runs": {"x": 1},
            },
            "jobs.runs must give the runs of each of jobs.names",
        ),
        (
            {
                "eks_cluster": "c",
                "namespace": "n",
                "names": ["sft"],
                "region": "r",
                "runs": {"sft": 0},
            },
            "sft must be between 1 and 1000, not 0",
        ),
        (
            {
                "eks_cluster": "c",
                "namespace": "n",
                "names": ["sft"],
                "region": "r",
                "runs": {"sft": 1},
            },
            "jobs.predecessors must give the jobs each of jobs.names waits for",
        ),
        (
            {
                "eks_cluster": "c",
                "namespace": "n",
                "names": ["sft"],
                "region": "r",
                "runs": {"sft": 1},
                "predecessors": {"sft": "base"},
            },
            "jobs.predecessors.sft must be a list of job names",
        ),
    ],
)
def test_the_jobs_settings_are_what_the_construct_writes(synthesized, jobs_setting, said) -> None:
    raw = settings(synthesized) | {"jobs": jobs_setting}
    with pytest.raises(decisions.SettingsError, match=said):
        decisions.parse_settings(raw)
    parsed = decisions.parse_settings(settings(synthesized))
    assert parsed.jobs == decisions.JobSettings(
        "novapod-nova-lite",
        NAMESPACE,
        ("sft-lora", "eval"),
        "us-east-1",
        {"sft-lora": 4, "eval": 4},
        {"sft-lora": (), "eval": ("sft-lora",)},  # eval's from: job:sft-lora
    )
    assert parsed.claim_lease_seconds == 420


def test_an_eks_cluster_not_deployed_is_no_failure_and_forgets_nothing(jobs) -> None:
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    jobs.run()
    del jobs.plane.hyperpod.eks_clusters[CLUSTER]
    summary = jobs.run()
    assert summary["failures"] == []
    assert summary["jobs"] == "EKS cluster novapod-nova-lite is not deployed"
    assert jobs.state()["runs"] == {f"sft-lora/{RUN}": "running"}


def test_the_operations_page_says_what_the_alert_means_and_what_to_do() -> None:
    from tests.conftest import ROOT

    page = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| `job J run failed` |")]
    assert "aws logs filter-log-events" in row and "novapod launch CONFIG J" in row
    assert "the scheduled check has failed its last 3 runs" in page


def test_a_plan_held_by_its_groups_with_no_run_of_its_jobs_alerts_once_a_spell(jobs) -> None:
    """The plan's restricted group holds 4 nodes (its CurrentCount) while no run of its
    jobs runs: after monitoring.idle_alert_minutes (60) that is one alert; a run on all
    four nodes ends the spell, and a spell after it alerts again."""
    assert jobs.new_alerts() == []  # 00:05: the spell begins
    assert jobs.new_alerts(minutes=55) == []  # 00:60: 55 minutes
    (alert,) = jobs.new_alerts()  # 01:05: an hour
    assert alert == (
        f"novapod nova-lite: plan lite-sft ({PLAN}) has 4 of 4 held nodes unused: its "
        "instance groups hold 4 and no run of its jobs (sft-lora, eval) uses one, for 1h 0m "
        "while Active; they are paid for whether or not a job runs; next: novapod launch "
        "CONFIG sft-lora"
    )
    assert jobs.plane.monitoring.published[-1].subject == "novapod nova-lite: plan lite-sft unused"
    assert jobs.new_alerts(minutes=30) == []  # once a spell
    began = NOW + timedelta(hours=1, minutes=40)
    jobs.put(pytorchjob(RUN, "Running", start=began, replicas=FOUR))
    assert jobs.new_alerts() == []
    assert jobs.state()["held_since"] == {}
    assert jobs.new_alerts(minutes=120) == []  # a run runs: never unused
    done = NOW + timedelta(hours=4)
    jobs.put(pytorchjob(RUN, "Succeeded", start=began, end=done, replicas=FOUR))
    assert jobs.new_alerts(minutes=5) == []  # 04:50: a new spell begins
    (again,) = jobs.new_alerts(minutes=60)
    assert "no run of its jobs (sft-lora, eval) uses one, for 1h 0m" in again


def test_a_plan_held_idle_is_not_judged_while_the_runs_cannot_be_read(jobs) -> None:
    """Without the runs the check cannot tell a held plan from a busy one: it keeps when
    the spell began and alerts on none of it until it reads the runs again."""
    assert jobs.new_alerts() == []
    began = jobs.state()["held_since"]
    assert began == {"lite-sft": iso(NOW + timedelta(minutes=5))}
    del jobs.plane.hyperpod.eks_clusters[CLUSTER]
    assert jobs.new_alerts(minutes=120) == []
    assert jobs.state()["held_since"] == began


def test_a_plan_ending_with_jobs_not_finished_names_them(jobs) -> None:
    """Within monitoring.ending_alert_days (3) of its end the plan alerts once, naming each
    of its jobs whose runs are not all done (jobs[].runs: 4 each); a plan whose jobs are
    all done does not (it is left to end)."""
    end = NOW + timedelta(days=5)
    jobs.put(pytorchjob("sft-lora-aaaa1", "Succeeded", start=STARTED, end=FAILED_AT))
    jobs.put(pytorchjob("sft-lora-aaaa2", "Running", start=FAILED_AT))
    (alert,) = jobs.new_alerts(minutes=(2 * 24 + 1) * 60)
    assert alert == (
        f"novapod nova-lite: plan lite-sft ({PLAN}) ends in 2d 23h ({iso(end)}) with jobs "
        "not finished: sft-lora (1 of 4 runs succeeded, 1 running), eval (0 of 4 runs "
        "succeeded); runs still going then are stopped; status says whether they fit before "
        "the end and gives the extension command if not; next: novapod status CONFIG"
    )
    assert jobs.new_alerts() == []


def test_a_plan_ending_whose_jobs_are_all_done_does_not_alert(jobs) -> None:
    for job in ("sft-lora", "eval"):
        for n in range(4):
            jobs.put(pytorchjob(f"{job}-done{n}", "Succeeded", start=STARTED, end=FAILED_AT))
    assert jobs.new_alerts(minutes=(2 * 24 + 1) * 60) == []
    assert not [k for k in jobs.state()["sent"] if "/ending/" in k]
    # One more run of a job that has its 4 fails: its alert only (the job is done).
    jobs.put(pytorchjob("eval-again", "Failed", start=FAILED_AT, end=NOW, message="OOM"))
    alerts = jobs.new_alerts()
    assert len(alerts) == 1 and "run eval-again of job eval failed" in alerts[0]


def unused_sent(jobs: Jobs) -> list[str]:
    """The `plan lite-sft unused` alerts published so far."""
    return [
        m.message
        for m in jobs.plane.monitoring.published
        if m.subject == "novapod nova-lite: plan lite-sft unused"
    ]


def spell(jobs: Jobs) -> list[str]:
    """The alerts of the runs from 00:05 to 01:05, the hour monitoring.idle_alert_minutes
    (60) asks of a spell."""
    return jobs.new_alerts() + jobs.new_alerts(minutes=55) + jobs.new_alerts()


def test_an_unused_plan_is_sent_once_across_a_kubernetes_api_that_failed(jobs) -> None:
    """Catches finding 2 (review 22c): a run that could not read the PyTorchJobs dropped
    the `plan/P/unused/<since>` key from the sent alerts (its owner, the plan, was read),
    and the next good run, with the same spell, sent the same alert again."""
    (alert,) = spell(jobs)
    assert "has 4 of 4 held nodes unused" in alert
    key = f"plan/lite-sft/unused/{iso(NOW + timedelta(minutes=5))}"
    jobs.kube.fail_next(503)
    with pytest.raises(index.CheckError, match="list PyTorchJobs in nova-jobs failed"):
        jobs.run()
    assert key in jobs.state()["sent"]
    assert jobs.new_alerts() == []
    assert jobs.new_alerts(minutes=60) == []
    assert unused_sent(jobs) == [alert]


def test_an_unused_plan_waits_while_the_cluster_cannot_be_read(jobs) -> None:
    """Without DescribeCluster the nodes the groups hold are not known: the check sends
    no `unused` alert on a guess (InUseInstanceCount is documented as "in use from this
    training plan", nothing more) and keeps the one it sent; a spell it has not alerted
    on yet waits for a run that reads the cluster."""
    (alert,) = spell(jobs)
    jobs.plane.act_as(principal(jobs.result).without("DescribeHyperPodCluster"))
    with pytest.raises(index.CheckError, match="SageMaker DescribeCluster of novapod-nova-lite"):
        jobs.run(minutes=60)
    jobs.plane.act_as(principal(jobs.result))
    assert jobs.new_alerts() == []  # the same spell: sent once
    assert unused_sent(jobs) == [alert]


@pytest.mark.parametrize("phase", ["Created", "Suspended"])
def test_a_run_whose_pods_hold_no_node_leaves_the_plan_unused(jobs, phase) -> None:
    """Catches finding 6 (review 22c): a run counted as running stopped the `unused`
    alert, though a Created PyTorchJob's pods are not all scheduled and a Suspended one
    (Kueue holds it) has none: the held nodes are paid for and idle all the same."""
    jobs.put(pytorchjob(RUN, phase, start=NOW, replicas=FOUR))
    (alert,) = spell(jobs)
    assert alert.startswith(
        f"novapod nova-lite: plan lite-sft ({PLAN}) has 4 of 4 held nodes unused: its "
        "instance groups hold 4 and no run of its jobs (sft-lora, eval) uses one, for 1h 0m"
    )


def test_a_run_on_two_of_four_held_nodes_leaves_two_unused(jobs) -> None:
    """Catches finding 6 (review 22c): the alert was all or nothing, so a 2-replica job on
    a 4-node group never alerted; the figure is the held nodes its running PyTorchJobs'
    replicas leave (spec.pytorchReplicaSpecs.*.replicas)."""
    two = {"Master": {"replicas": 1}, "Worker": {"replicas": 1}}
    jobs.put(pytorchjob(RUN, "Running", start=NOW, replicas=two))
    (alert,) = spell(jobs)
    assert alert == (
        f"novapod nova-lite: plan lite-sft ({PLAN}) has 2 of 4 held nodes unused: its "
        "instance groups hold 4 and the runs of its jobs (sft-lora, eval) use 2, fewer than "
        "held for 1h 0m while Active; they are paid for whether or not a job runs; next: "
        "novapod launch CONFIG sft-lora"
    )


@pytest.mark.parametrize("phase", ["Running", "Restarting"])
def test_a_run_on_every_held_node_is_no_unused_plan(jobs, phase) -> None:
    """A Running PyTorchJob and a Restarting one (its pods restarted in place) hold their
    nodes: with replicas for all four there is no spell at all."""
    jobs.put(pytorchjob(RUN, phase, start=NOW, replicas=FOUR))
    assert spell(jobs) + jobs.new_alerts(minutes=120) == []
    assert jobs.state()["held_since"] == {}


def test_replicas_that_cannot_be_read_are_no_guess(jobs) -> None:
    """A running PyTorchJob whose replicas are not a number leaves the nodes used unknown:
    the check neither alerts nor ends the spell (the operator's defaulting writes them,
    so this is a spec it does not understand)."""
    assert jobs.new_alerts() == []  # 00:05: the spell begins
    jobs.put(pytorchjob(RUN, "Running", start=NOW, replicas={"Master": {"replicas": "one"}}))
    assert jobs.new_alerts(minutes=120) == []
    assert jobs.state()["held_since"] == {"lite-sft": iso(NOW + timedelta(minutes=5))}


def test_the_held_nodes_are_the_current_count_of_the_plan_s_groups(jobs) -> None:
    """Catches finding 7 (review 22c): `held` was InUseInstanceCount, which SageMaker
    documents only as "in use from this training plan". It is now the CurrentCount of
    the restricted groups whose TrainingPlanArn is the plan's: a plan SageMaker counts 0
    in use still alerts on the 2 nodes its group holds, and a group on another plan is
    not counted."""
    from tests.fakes.hyperpod import restricted_group
    from tests.handlers.monitor_world import EXAMPLE_ACCOUNT, GROUP, PLAN_ARN

    jobs.world.plan_counts(available=2, in_use=0)
    jobs.plane.hyperpod.set_restricted_groups(CLUSTER, [
        restricted_group(GROUP, current=2, target=4, plan_arn=PLAN_ARN, account=EXAMPLE_ACCOUNT),
        restricted_group("other", current=3, target=3, plan_arn=PLAN_ARN + "-other",
                         account=EXAMPLE_ACCOUNT),
    ])  # fmt: skip
    alerts = spell(jobs)
    (unused,) = [a for a in alerts if "held nodes" in a]
    assert "has 2 of 2 held nodes unused: its instance groups hold 2 and no run" in unused


def test_a_run_gone_before_its_end_was_seen_is_not_counted_as_unfinished(jobs) -> None:
    """Catches finding 8 (review 22c): progress was judged only from the PyTorchJobs still
    in the namespace, so a run removed after it was seen (`novapod cancel`, `helm
    uninstall`, a clean-up) counted for nothing: "sft-lora (3 of 4 runs succeeded)" and
    "next: novapod launch CONFIG sft-lora", a rerun of what may be done. A succeeded run
    seen before still counts; a run seen running whose end was not seen, which would
    make up the runs wanted, is "cannot tell"; the command names eval, whose from:
    job:sft-lora has a finished run."""
    for n in range(1, 4):
        jobs.put(pytorchjob(f"sft-lora-done{n}", "Succeeded", start=STARTED, end=FAILED_AT))
    jobs.put(pytorchjob("sft-lora-going", "Running", start=FAILED_AT, replicas=FOUR))
    jobs.run()
    for n in range(1, 4):
        jobs.remove(f"sft-lora-done{n}")
    jobs.remove("sft-lora-going")
    (unused,) = spell(jobs)
    assert unused.endswith("; next: novapod launch CONFIG eval")
    assert "all its jobs are done" not in unused
    assert jobs.state()["runs"] == {
        **{f"sft-lora/sft-lora-done{n}": "succeeded" for n in range(1, 4)},
        "sft-lora/sft-lora-going": "running",
    }
    end = NOW + timedelta(days=5)
    (ending,) = jobs.new_alerts(minutes=(2 * 24) * 60)
    assert ending.startswith(
        f"novapod nova-lite: plan lite-sft ({PLAN}) ends in 2d 22h ({iso(end)}) with jobs "
        "not finished: eval (0 of 4 runs succeeded); this check cannot tell whether "
        "sft-lora (3 of 4 runs succeeded, 1 gone from the namespace before this check saw "
        "it end) is done; runs still going then are stopped"
    )


def test_succeeded_runs_gone_from_the_namespace_still_count(jobs) -> None:
    """Catches finding 8 (review 22c): four succeeded runs of sft-lora removed after the
    check saw them were "0 of 4 runs succeeded" in the ending alert, and the `unused`
    alert named sft-lora to launch again; eval, which starts from it, is next."""
    for n in range(4):
        jobs.put(pytorchjob(f"sft-lora-done{n}", "Succeeded", start=STARTED, end=FAILED_AT))
    jobs.run()
    for n in range(4):
        jobs.remove(f"sft-lora-done{n}")
    jobs.run()  # the state keeps them as last seen, run after run
    assert jobs.state()["runs"] == {f"sft-lora/sft-lora-done{n}": "succeeded" for n in range(4)}
    unused, ending = jobs.new_alerts(minutes=(2 * 24 + 1) * 60)
    assert "with jobs not finished: eval (0 of 4 runs succeeded); runs still going" in ending
    assert unused.endswith("; next: novapod launch CONFIG eval")


def test_the_launch_named_waits_for_its_predecessors(jobs) -> None:
    """Catches finding 8's launch command (review 22c): it named the plan's first job not
    finished, though `novapod launch` refuses a job while one it starts from (from:
    job:X) or waits for (after:) has no finished run. With eval listed first, eval is
    not finished but sft-lora, which it starts from, has no run: the command names
    sft-lora."""
    jobs.settings["plans"][0]["jobs"] = ["eval", "sft-lora"]
    (unused,) = spell(jobs)
    assert unused.endswith("; next: novapod launch CONFIG sft-lora")
