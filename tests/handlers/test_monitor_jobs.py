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
from dataclasses import replace
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
    GROUP,
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


def pod(name: str, phase: str = "Running", *, node: str | None = None) -> dict[str, Any]:
    """A pod of the jobs' namespace, `node` the instance ID of the HyperPod node it is on
    (the node named hyperpod-<instance id> in the EKS cluster; None: not scheduled, no
    `spec.nodeName`). Its phase is one of the pod-lifecycle's (Pending, Running,
    Succeeded, Failed, Unknown)."""
    assert phase in ("Pending", "Running", "Succeeded", "Failed", "Unknown"), phase
    spec: dict[str, Any] = {"containers": [{"name": "pytorch", "image": "training"}]}
    if node is not None:
        spec["nodeName"] = f"hyperpod-{node}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "creationTimestamp": iso(NOW)},
        "spec": spec,
        "status": {"phase": phase},
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

    def nodes(self, group: str = GROUP) -> list[str]:
        """The instance IDs of the group's nodes, as ListClusterNodes lists them."""
        return [
            str(n["InstanceId"])
            for n in self.plane.hyperpod.nodes[CLUSTER]
            if n["InstanceGroupName"] == group
        ]

    def on_nodes(self, run: str, count: int, *, phase: str = "Running") -> None:
        """The pods of a run's Master and Workers, one on each of the group's first
        `count` nodes (the operator names them <PyTorchJob>-master-0, -worker-<n>)."""
        for n, node in enumerate(self.nodes()[:count]):
            name = f"{run}-master-0" if n == 0 else f"{run}-worker-{n - 1}"
            self.put(pod(name, phase, node=node))

    def clear_pods(self) -> None:
        for key in [k for k in self.kube.objects if k[:2] == ("", "pods")]:
            del self.kube.objects[key]

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
    # RBAC as the cluster bootstrap binds the check's group: list PyTorchJobs and pods,
    # there only.
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


def test_the_check_s_group_lists_pytorchjobs_and_pods_and_reads_nothing_else(jobs) -> None:
    jobs.put(pytorchjob(RUN, "Running", start=STARTED))
    jobs.run()
    requests = [(r.method, r.path) for r in jobs.kube.requests]
    assert requests == [
        ("GET", f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/pytorchjobs"),
        ("GET", f"/api/v1/namespaces/{NAMESPACE}/pods"),
    ]


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


NONE_USED = "pods of namespace nova-jobs (its jobs sft-lora, eval) are on none, for 1h 0m"


def test_a_plan_held_by_its_groups_with_no_run_of_its_jobs_alerts_once_a_spell(jobs) -> None:
    """The plan's restricted group holds 4 nodes (its CurrentCount) while no pod of the
    jobs' namespace is on one: after monitoring.idle_alert_minutes (60) that is one
    alert; a run whose pods are on all four nodes ends the spell, and a spell after it
    (its pods Succeeded, on no node any more) alerts again."""
    assert jobs.new_alerts() == []  # 00:05: the spell begins
    assert jobs.new_alerts(minutes=55) == []  # 00:60: 55 minutes
    (alert,) = jobs.new_alerts()  # 01:05: an hour
    assert alert == (
        f"novapod nova-lite: plan lite-sft ({PLAN}) has 4 of 4 held nodes unused: its "
        f"instance groups hold 4 and {NONE_USED} while Active; they are paid for whether "
        "or not a job runs; next: novapod launch CONFIG sft-lora"
    )
    assert jobs.plane.monitoring.published[-1].subject == "novapod nova-lite: plan lite-sft unused"
    assert jobs.new_alerts(minutes=30) == []  # once a spell
    began = NOW + timedelta(hours=1, minutes=40)
    jobs.put(pytorchjob(RUN, "Running", start=began, replicas=FOUR))
    jobs.on_nodes(RUN, 4)
    assert jobs.new_alerts() == []
    assert jobs.state()["held_since"] == {}
    assert jobs.new_alerts(minutes=120) == []  # a run runs: never unused
    done = NOW + timedelta(hours=4)
    jobs.put(pytorchjob(RUN, "Succeeded", start=began, end=done, replicas=FOUR))
    jobs.on_nodes(RUN, 4, phase="Succeeded")
    assert jobs.new_alerts(minutes=5) == []  # 04:50: a new spell begins
    (again,) = jobs.new_alerts(minutes=60)
    assert NONE_USED in again


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


def failing_run(jobs: Jobs, match: str, *, minutes: float = 5) -> list[str]:
    """A run of the check that fails (CheckError naming `match`): the alerts it sent."""
    before = len(jobs.world.published())
    with pytest.raises(index.CheckError, match=match):
        jobs.run(minutes=minutes)
    return jobs.world.published()[before:]


def test_an_unused_plan_waits_while_the_cluster_cannot_be_read(jobs) -> None:
    """Without DescribeCluster the nodes the groups hold are not known: the check sends
    no `unused` alert on a guess (InUseInstanceCount is documented as "in use from this
    training plan", nothing more; here SageMaker counts all 4 in use) and keeps the one
    it sent; a spell it has not alerted on yet waits for a run that reads the cluster,
    which then alerts once (review 22d, finding 5)."""
    jobs.world.plan_counts(available=0, in_use=4)
    assert jobs.new_alerts() == []  # 00:05: the spell begins
    assert jobs.new_alerts(minutes=25) == []  # 00:30
    jobs.plane.act_as(principal(jobs.result).without("DescribeHyperPodCluster"))
    for _ in range(12):  # 00:35 to 01:30: the cluster cannot be read
        assert failing_run(jobs, "SageMaker DescribeCluster of novapod-nova-lite") == []
    assert jobs.state()["held_since"] == {"lite-sft": iso(NOW + timedelta(minutes=5))}
    jobs.plane.act_as(principal(jobs.result))
    (alert,) = jobs.new_alerts()  # 01:35: read again, the spell is 1h 30m old
    assert "has 4 of 4 held nodes unused: its instance groups hold 4 and pods of " in alert
    assert "are on none, for 1h 30m while Active" in alert
    jobs.plane.act_as(principal(jobs.result).without("DescribeHyperPodCluster"))
    failing_run(jobs, "SageMaker DescribeCluster of novapod-nova-lite", minutes=60)
    jobs.plane.act_as(principal(jobs.result))
    assert jobs.new_alerts() == []  # the same spell: sent once
    assert unused_sent(jobs) == [alert]


@pytest.mark.parametrize("phase", ["Created", "Suspended"])
def test_a_run_whose_pods_hold_no_node_leaves_the_plan_unused(jobs, phase) -> None:
    """Catches finding 6 (review 22c): a run counted as running stopped the `unused`
    alert, though a Created PyTorchJob's pods are not scheduled (Pending, no nodeName)
    and a Suspended one (Kueue holds it) has none: the held nodes are paid for and idle
    all the same."""
    jobs.put(pytorchjob(RUN, phase, start=NOW, replicas=FOUR))
    if phase == "Created":
        for name in (f"{RUN}-master-0", *(f"{RUN}-worker-{n}" for n in range(3))):
            jobs.put(pod(name, "Pending"))
    (alert,) = spell(jobs)
    assert alert.startswith(
        f"novapod nova-lite: plan lite-sft ({PLAN}) has 4 of 4 held nodes unused: its "
        f"instance groups hold 4 and {NONE_USED}"
    )


def test_a_run_on_two_of_four_held_nodes_leaves_two_unused(jobs) -> None:
    """Catches finding 6 (review 22c): the alert was all or nothing, so a 2-node job on a
    4-node group never alerted. The figure is the held nodes no pod of the namespace is
    on: a Running pod and a Pending one the scheduler bound to its node (nodeName) each
    hold one, a pod that Succeeded or Failed holds none (status's rule)."""
    two = {"Master": {"replicas": 1}, "Worker": {"replicas": 1}}
    jobs.put(pytorchjob(RUN, "Running", start=NOW, replicas=two))
    first, second, third, fourth = jobs.nodes()
    jobs.put(pod(f"{RUN}-master-0", "Running", node=first))
    jobs.put(pod(f"{RUN}-worker-0", "Pending", node=second))
    jobs.put(pod("sft-lora-old01-master-0", "Succeeded", node=third))
    jobs.put(pod("sft-lora-old02-master-0", "Failed", node=fourth))
    (alert,) = spell(jobs)
    assert alert == (
        f"novapod nova-lite: plan lite-sft ({PLAN}) has 2 of 4 held nodes unused: its "
        "instance groups hold 4 and pods of namespace nova-jobs (its jobs sft-lora, eval) "
        "are on 2, for 1h 0m while Active; they are paid for whether or not a job runs; "
        "next: novapod launch CONFIG sft-lora"
    )


def test_pods_sharing_a_node_hold_that_one_node(jobs) -> None:
    """Review 22e, finding 2: the figure counts nodes, not pods. Three pods of the run on
    one node (a Running master, a Pending pod bound there, a sidecar) and one on a
    second hold 2 of the 4 held nodes, and a pod on a node of a group on another plan
    holds none of this plan's."""
    from tests.fakes.hyperpod import restricted_group
    from tests.handlers.monitor_world import EXAMPLE_ACCOUNT, GROUP, PLAN_ARN

    jobs.plane.hyperpod.set_restricted_groups(CLUSTER, [
        restricted_group(GROUP, current=4, target=4, plan_arn=PLAN_ARN, account=EXAMPLE_ACCOUNT),
        restricted_group("other", current=1, target=1, plan_arn=PLAN_ARN + "-other",
                         account=EXAMPLE_ACCOUNT),
    ])  # fmt: skip
    (elsewhere,) = jobs.plane.hyperpod.add_nodes(CLUSTER, "other", 1)
    two = {"Master": {"replicas": 1}, "Worker": {"replicas": 1}}
    jobs.put(pytorchjob(RUN, "Running", start=NOW, replicas=two))
    first, second, _, _ = jobs.nodes()
    jobs.put(pod(f"{RUN}-master-0", "Running", node=first))
    jobs.put(pod(f"{RUN}-worker-0", "Pending", node=first))
    jobs.put(pod(f"{RUN}-logs", "Running", node=first))
    jobs.put(pod(f"{RUN}-worker-1", "Running", node=second))
    jobs.put(pod("another-plan-s-run-master-0", "Running", node=elsewhere))
    alerts = spell(jobs)
    (unused,) = [a for a in alerts if "held nodes" in a]
    assert "has 2 of 4 held nodes unused: its instance groups hold 4 and pods" in unused
    assert "are on 2, for 1h 0m while Active" in unused


@pytest.mark.parametrize("phase", ["Running", "Restarting"])
def test_a_run_on_every_held_node_is_no_unused_plan(jobs, phase) -> None:
    """A Running PyTorchJob and a Restarting one (its pods restarted in place) whose pods
    are on all four nodes: there is no spell at all."""
    jobs.put(pytorchjob(RUN, phase, start=NOW, replicas=FOUR))
    jobs.on_nodes(RUN, 4)
    assert spell(jobs) + jobs.new_alerts(minutes=120) == []
    assert jobs.state()["held_since"] == {}


def test_a_running_run_whose_workers_have_no_node_leaves_them_unused(jobs) -> None:
    """Catches finding 2 (review 22d): Running says only that the Master has a Running pod
    (pytorchjob_controller.go UpdateJobStatus), so a 1 + 3 run whose Workers are Pending
    with no node (tainted nodes, GPUs taken, a node being replaced) counted 4 replicas on
    4 nodes and never alerted: a stuck run on paid-for nodes. Its Master holds one."""
    jobs.put(pytorchjob(RUN, "Running", start=NOW, replicas=FOUR))
    jobs.on_nodes(RUN, 1)
    for n in range(3):
        jobs.put(pod(f"{RUN}-worker-{n}", "Pending"))
    (alert,) = spell(jobs)
    assert "has 3 of 4 held nodes unused: its instance groups hold 4 and pods of " in alert
    assert "are on 1, for 1h 0m while Active" in alert


def test_a_ppo_run_on_every_node_is_no_unused_plan(jobs) -> None:
    """Catches finding 1 (review 22d): only PyTorchJobs' replicas counted, so a PPO run
    (four PyTorchJobs, <run>-rm, -cm, -am, -at, plus the StatefulSet <run>-ag whose pods
    ask for a node's GPUs each: launcher/nova/k8s_templates/PPO upstream, the recipe's
    defaults rm 1, cm 1, am 1, at 2, ag 2) on a 7-node group was "2 of 7 held nodes
    unused". Every node holds one of its pods: no spell at all."""
    from tests.fakes.hyperpod import restricted_group
    from tests.handlers.monitor_world import EXAMPLE_ACCOUNT, PLAN_ARN

    jobs.plane.hyperpod.set_restricted_groups(CLUSTER, [
        restricted_group(GROUP, current=7, target=7, plan_arn=PLAN_ARN, account=EXAMPLE_ACCOUNT)
    ])  # fmt: skip
    jobs.plane.hyperpod.add_nodes(CLUSTER, GROUP, 3)
    jobs.world.plan_counts(available=0, in_use=7)
    for part in ("rm", "cm", "am"):
        jobs.put(pytorchjob(f"{RUN}-{part}", "Running", start=NOW))
    two = {"Master": {"replicas": 1}, "Worker": {"replicas": 1}}
    jobs.put(pytorchjob(f"{RUN}-at", "Running", start=NOW, replicas=two))
    pods = [f"{RUN}-{part}-master-0" for part in ("rm", "cm", "am", "at")]
    pods += [f"{RUN}-at-worker-0", f"{RUN}-ag-0", f"{RUN}-ag-1"]
    nodes = jobs.nodes()
    assert len(nodes) == 7
    for name, node in zip(pods, nodes, strict=True):
        jobs.put(pod(name, "Running", node=node))
    assert spell(jobs) + jobs.new_alerts(minutes=120) == []
    assert jobs.state()["held_since"] == {}


def test_pods_that_cannot_be_read_are_no_guess(jobs) -> None:
    """Pods the check may not list (the Role as an older bootstrap applied it: PyTorchJobs
    only) leave the nodes used unknown: the check neither alerts nor ends the spell, and
    fails, naming the read; the runs are still read (a failed run alerts). Once it lists
    the pods it alerts once; pods unreadable again after that send no second copy
    (review 22d, finding 5)."""
    jobs_only = tuple(r for r in MONITOR_RULES if "pods" not in r[1])
    assert jobs_only == ((("kubeflow.org",), ("pytorchjobs",), ("list",)),)
    refused = r"list pods in nova-jobs failed \(refused: HTTP 403"
    assert jobs.new_alerts() == []  # 00:05: the spell begins
    jobs.kube.bind_role(NAMESPACE, jobs_only)
    jobs.put(pytorchjob(RUN, "Failed", start=STARTED, end=FAILED_AT, message=REASON))
    assert failing_run(jobs, refused, minutes=30) == [expected_alert(jobs.world)]
    for _ in range(12):  # to 01:35
        assert failing_run(jobs, refused) == []
    assert jobs.state()["held_since"] == {"lite-sft": iso(NOW + timedelta(minutes=5))}
    jobs.kube.bind_role(NAMESPACE, MONITOR_RULES)
    (alert,) = jobs.new_alerts()
    assert "has 4 of 4 held nodes unused" in alert and "for 1h 35m while Active" in alert
    jobs.kube.bind_role(NAMESPACE, jobs_only)
    assert failing_run(jobs, refused, minutes=30) == []
    jobs.kube.bind_role(NAMESPACE, MONITOR_RULES)
    assert jobs.new_alerts() == []
    assert unused_sent(jobs) == [alert]


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
    assert "has 2 of 2 held nodes unused: its instance groups hold 2 and pods" in unused


def test_a_standard_group_on_the_plan_counts_among_the_held_nodes(jobs) -> None:
    """Catches finding 6 (review 22d): only RestrictedInstanceGroups were summed, though
    ClusterInstanceGroupDetails has TrainingPlanArn and CurrentCount too (botocore's
    sagemaker model) and a standard group may name a plan (config/hyperpod.py). The run
    on the restricted group's 4 nodes leaves the standard group's 2 unused."""
    from tests.fakes.hyperpod import standard_group
    from tests.handlers.monitor_world import EXAMPLE_ACCOUNT, PLAN_ARN

    jobs.plane.hyperpod.set_instance_groups(CLUSTER, [
        standard_group("cpu", current=2, target=2, plan_arn=PLAN_ARN, account=EXAMPLE_ACCOUNT),
        standard_group("system", current=1, target=1, account=EXAMPLE_ACCOUNT),
    ])  # fmt: skip
    jobs.plane.hyperpod.add_nodes(CLUSTER, "cpu", 2)
    (system,) = jobs.plane.hyperpod.add_nodes(CLUSTER, "system", 1)
    jobs.put(pytorchjob(RUN, "Running", start=NOW, replicas=FOUR))
    jobs.on_nodes(RUN, 4)
    jobs.put(pod("someone-on-the-system-node", "Running", node=system))
    alerts = spell(jobs)
    (unused,) = [a for a in alerts if "held nodes" in a]
    assert "has 2 of 6 held nodes unused: its instance groups hold 6 and pods" in unused
    assert "are on 4, for 1h 0m" in unused


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
    # Gone from the namespace, they are counted, not kept by name (review 22d, finding 4).
    assert jobs.state()["runs"] == {}
    assert jobs.state()["gone"] == {"sft-lora": {"running": 1, "succeeded": 3}}
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
    jobs.run()  # the state counts them as last seen, run after run
    assert jobs.state()["runs"] == {}
    assert jobs.state()["gone"] == {"sft-lora": {"succeeded": 4}}
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


def ending_sent(jobs: Jobs) -> list[str]:
    return [
        m.message
        for m in jobs.plane.monitoring.published
        if m.subject == "novapod nova-lite: plan lite-sft ending"
    ]


def test_a_done_plan_ending_sends_no_guess_for_each_kubernetes_failure(jobs) -> None:
    """Catches finding 3 (review 22d): a run that could not read the PyTorchJobs owed the
    "cannot tell" sentence for a plan whose jobs a run had judged done, and the next good
    run dropped its key again, so an API failing every other run in the plan's last days
    sent it each time. "Cannot tell" is owed only for an end date no run has judged: here
    the first look, which cannot read the runs, sends it once, and nothing after."""
    for job in ("sft-lora", "eval"):
        for n in range(4):
            jobs.put(pytorchjob(f"{job}-done{n}", "Succeeded", start=STARTED, end=FAILED_AT))
    end = iso(NOW + timedelta(days=5))
    jobs.kube.fail_next(503)
    failing_run(jobs, "list PyTorchJobs in nova-jobs failed", minutes=(2 * 24 + 1) * 60)
    (cannot,) = ending_sent(jobs)
    assert f"ends in 2d 23h ({end}) with 4 of 4 instances in use" in cannot
    assert "this check cannot tell whether its jobs are done" in cannot
    jobs.run()
    assert jobs.state()["ending_judged"] == {"lite-sft": end}
    for _ in range(3):  # the API fails on every other run
        jobs.kube.fail_next(503)
        failing_run(jobs, "list PyTorchJobs in nova-jobs failed")
        jobs.run()
    assert ending_sent(jobs) == [cannot]
    assert not [k for k in jobs.state()["sent"] if "/ending/" in k]


def test_an_ending_alert_sent_stays_sent_while_the_runs_cannot_be_read(jobs) -> None:
    """A plan ending with jobs not finished alerts once; a run that cannot read the runs
    of an end date judged before owes nothing and keeps the key, so the next good run,
    the jobs still not finished, does not send it again."""
    jobs.put(pytorchjob("sft-lora-aaaa1", "Running", start=FAILED_AT))
    (alert,) = [a for a in jobs.new_alerts(minutes=(2 * 24 + 1) * 60) if " ends in " in a]
    key = f"plan/lite-sft/ending/{iso(NOW + timedelta(days=5))}"
    jobs.kube.fail_next(503)
    failing_run(jobs, "list PyTorchJobs in nova-jobs failed")
    assert key in jobs.state()["sent"]
    jobs.run()
    assert ending_sent(jobs) == [alert]


def test_the_state_stays_as_small_as_the_namespace_over_10000_runs(synthesized) -> None:
    """Catches finding 4 (review 22d): every run ever seen of the config's jobs was kept by
    name in the state, one DynamoDB item (400 KB at most: Constraints.html, Items), which
    grew to 450 KB over 5,000 runs of a 34-character job, and then every PutItem failed.
    Now the runs gone from the namespace are counts per job (a failed one, which counts
    for nothing, dropped): 10,000 runs, 10 in the namespace at a time (6 succeeded, 2
    failed, 2 running), keep `State.text()` under 4 KB, and each job still counts its
    succeeded runs and the running ones whose end it never saw."""
    config = decisions.parse_settings(settings(synthesized))
    state = decisions.State()
    largest = 0
    for batch in range(1000):
        job = ("sft-lora", "eval")[batch % 2]
        objects = []
        for k in range(10):
            name = f"{job}-{batch * 10 + k:05d}"
            phase = "Succeeded" if k < 6 else "Failed" if k < 8 else "Running"
            end = FAILED_AT if phase != "Running" else None
            objects.append(pytorchjob(name, phase, start=STARTED, end=end))
        samples = decisions.Samples((), None, decisions.JobsSample(tuple(objects), ()))
        moment = NOW + timedelta(minutes=5 * batch)
        state = decisions.decide(samples, state, moment, config).state
        largest = max(largest, len(state.text()))
    assert largest < 4096, largest
    final = decisions.decide(
        decisions.Samples((), None, decisions.JobsSample((), ())), state, NOW, config
    ).state
    assert final.runs == {}
    assert final.gone == {
        "sft-lora": {"succeeded": 3000, "running": 1000},
        "eval": {"succeeded": 3000, "running": 1000},
    }
    assert decisions.read_state(final.text(), 1) == replace(final, sequence=1)
    progress = decisions.job_progress("eval", 4, {}, final)
    assert (progress.succeeded, progress.running, progress.gone) == (3000, 0, 1000)
