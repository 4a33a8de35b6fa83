"""`novapod status` and the config's jobs: their runs from the fake Kubernetes API (read
with the scientists' Role) and from the artifacts bucket, every run state, a failed run,
jobs late for their plan's schedule or at risk of outliving the plan, predecessors that
push their successors, and a cluster that cannot be read (the runs then come from S3)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.handlers.status_world import (
    CLUSTER,
    CONFIG,
    MARKER_PATH,
    NOW,
    RUN_1,
    RUN_2,
    StatusWorld,
    pod,
    pytorchjob,
    status_kube,
    status_world,
    write_config,
)

__all__ = ["status_kube", "status_world"]  # fixtures

START = NOW - timedelta(days=1)  # the healthy world's plan start


@pytest.fixture(autouse=True)
def _answers_fit_the_model(status_world: StatusWorld) -> Any:
    yield
    assert status_world.plane.violations == []


def sft(document: dict[str, Any]) -> dict[str, Any]:
    (job,) = [j for j in document["jobs"]["items"] if j["name"] == "sft"]
    return job


# --- every run state ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "state"),
    [
        ("Created", "running"),  # accepted, pods not scheduled yet
        ("Running", "running"),
        ("Restarting", "running"),  # a replica failed, the restart policy restarts it
        ("Suspended", "running"),
        ("Succeeded", "succeeded"),
        ("Failed", "failed"),
    ],
)
def test_every_pytorchjob_condition(status_world, phase, state) -> None:
    world = status_world.healthy(runs=False)
    end = START + timedelta(hours=20) if phase in ("Succeeded", "Failed") else None
    world.kube.add_object(pytorchjob(RUN_1, phase, start=START, end=end, message="replica 0"))
    _, document = world.json()
    (run,) = sft(document)["runs"]
    assert (run["name"], run["state"], run["phase"]) == (RUN_1, state, phase)
    assert run["start"] == "2027-07-09T12:00:00Z"
    assert run["end"] == ("2027-07-10T08:00:00Z" if end else None)
    assert sft(document)["state"] == {"running": "running", "succeeded": "waiting"}.get(
        state, state
    )


def test_a_run_only_s3_knows_is_done_by_its_manifest_else_stopped(status_world) -> None:
    """Runs whose PyTorchJobs are gone (cancelled, cleaned up): the manifest says one
    finished; the other stopped without finishing, since the cluster was read."""
    world = status_world.healthy(runs=False)
    world.finished("sft", RUN_1, start=START, end=START + timedelta(hours=23))
    world.output("sft", RUN_2, "tensorboard/events.out.tfevents", START + timedelta(hours=24))
    _, document = world.json()
    first, second = sft(document)["runs"]
    assert (first["state"], first["phase"], first["start"], first["end"]) == (
        "succeeded",
        None,
        None,
        "2027-07-10T11:00:00Z",
    )
    assert (second["state"], second["message"]) == (
        "failed",
        "not in the cluster and no manifest.json in S3: it stopped without finishing "
        "(cancelled, or failed and removed)",
    )
    assert sft(document)["counts"] == {
        "succeeded": 1,
        "running": 0,
        "failed": 1,
        "unknown": 0,
        "not_started": 1,
    }


def test_ppo_s_four_pytorchjobs_are_one_run_and_other_names_are_not_the_jobs(
    status_world,
) -> None:
    world = status_world.healthy(runs=False)
    for part in ("rm", "cm", "am"):
        world.kube.add_object(pytorchjob(f"{RUN_1}-{part}", "Running", start=START))
    world.kube.add_object(pytorchjob(f"{RUN_1}-at", "Running", start=START + timedelta(minutes=3)))
    world.kube.add_object(pytorchjob("sft-by-hand", "Running", start=START))  # not a run name
    world.kube.add_object(pytorchjob("other-a1b2c", "Failed", start=START, end=START))
    world.output("sft", "notes", "readme.txt", START)  # a folder written by hand: no run
    world.output("other", "other-a1b2c", "manifest.json", START)  # no job of the config
    _, document = world.json()
    (run,) = sft(document)["runs"]
    assert (run["name"], run["state"], run["start"]) == (RUN_1, "running", "2027-07-09T12:00:00Z")


# --- a failed run ---------------------------------------------------------------------------


def test_a_failed_run_needs_attention_until_a_later_run_starts(status_world) -> None:
    world = status_world.healthy(runs=False)
    message = f"PyTorchJob {RUN_1} is failed because 1 Master replica(s) failed."
    world.kube.add_object(
        pytorchjob(RUN_1, "Failed", start=START, end=START + timedelta(hours=6), message=message)
    )
    for index, node in enumerate(world.nodes_of("nova-lite")):  # a job launched by hand
        world.kube.add_object(pod(f"by-hand-worker-{index}", node))
    code, document = world.json()
    assert code == 4
    failed = [a for a in document["attention"] if a["kind"] == "run-failed"]
    assert failed == [
        {
            "kind": "run-failed",
            "subject": "job sft",
            "message": f"run {RUN_1} failed at 2027-07-09T18:00:00Z: {message}; 0 of 2 runs "
            "done; launch it again",
            "command": f"novapod launch {world.path} sft",
        }
    ]
    assert sft(document)["state"] == "failed"
    _, out, _ = world.run()
    assert f"  1. job sft: run {RUN_1} failed at 2027-07-09T18:00:00Z" in out
    # Launched again: the failure is history.
    world.running(RUN_2, start=NOW - timedelta(hours=1), nodes=world.nodes_of("nova-lite"))
    _, document = world.json()
    assert [a["kind"] for a in document["attention"] if a["subject"] == "job sft"] == ["job-late"]


# --- the schedule ---------------------------------------------------------------------------


def test_a_job_behind_its_slot_is_late(status_world) -> None:
    """sft's first run failed and its second started at hour 20: at this pace its last
    run ends at hour 68, 20 h past its slot (0 to 48 h)."""
    world = status_world.healthy(runs=False)
    world.kube.add_object(pytorchjob(RUN_1, "Failed", start=START, end=START + timedelta(hours=2)))
    world.running(RUN_2, start=START + timedelta(hours=20), nodes=world.nodes_of("nova-lite"))
    code, document = world.json()
    assert code == 4
    (late,) = document["attention"]
    assert late == {
        "kind": "job-late",
        "subject": "job sft",
        "message": "20h 0m behind the plan's schedule: planned to end 2027-07-11T12:00:00Z, at "
        "this pace it ends 2027-07-12T08:00:00Z; 2 of 2 runs left",
        "command": None,  # it runs: nothing to launch
    }
    assert sft(document)["schedule"] == {
        "verdict": "late",
        "planned_start": "2027-07-09T12:00:00Z",
        "planned_end": "2027-07-11T12:00:00Z",
        "projected_end": "2027-07-12T08:00:00Z",
        "plan_end": "2027-07-16T12:00:00Z",
        "hours_late": 20,
    }


def test_an_hour_behind_is_on_time(status_world) -> None:
    world = status_world.healthy(runs=False)
    world.finished("sft", RUN_1, start=START, end=START + timedelta(hours=24, minutes=50))
    world.kube.add_object(pytorchjob(RUN_1, "Succeeded", start=START, end=NOW))
    world.running(RUN_2, start=START + timedelta(hours=25), nodes=world.nodes_of("nova-lite"))
    world.plane.set_plan_counts(world.plan, available=0, in_use=4)
    _, document = world.json()
    assert sft(document)["schedule"]["verdict"] == "on-time"
    assert document["attention"] == []


def test_a_job_not_started_past_its_slot_is_late_and_says_what_to_launch(status_world) -> None:
    world = status_world.healthy(runs=False)
    for index, node in enumerate(world.nodes_of("nova-lite")):  # someone else's run
        world.kube.add_object(pod(f"by-hand-worker-{index}", node))
    _, document = world.json()
    (late,) = document["attention"]
    assert (late["kind"], late["command"]) == ("job-late", f"novapod launch {world.path} sft")
    assert late["message"].endswith("; 2 of 2 runs left; none is running")
    assert sft(document)["state"] == "not-started"


def test_a_job_that_would_outlive_its_plan_is_at_risk(status_world) -> None:
    """The plan ends a day from now (24 h bought, 24 h extended); sft's second run
    started two hours ago after the first failed: its last run would end 22 h after the
    plan, whose instances are taken back then."""
    world = status_world
    world.buy(world.plan, status="Active", start=START, hours=24, count=4, fee="55000.00")
    world.plane.add_extension(world.plan, 24)
    world.buy("team-spare", status="Active", start=START, hours=336, count=2, fee="30000.00")
    world.cluster()
    world.kube.add_object(pytorchjob(RUN_1, "Failed", start=START, end=START + timedelta(hours=2)))
    world.running(RUN_2, start=NOW - timedelta(hours=2), nodes=world.nodes_of("nova-lite"))
    code, document = world.json()
    assert code == 4
    risk = [a for a in document["attention"] if a["kind"] == "job-at-risk"]
    assert risk == [
        {
            "kind": "job-at-risk",
            "subject": "job sft",
            "message": "at this pace its last run ends 2027-07-12T10:00:00Z, 22h 0m after plan "
            "main ends (2027-07-11T12:00:00Z); 2 of 2 runs left: extend the plan or shorten its "
            "runs",
            "command": "aws sagemaker search-training-plan-offerings --training-plan-arn "
            f"{world.plan_arn} --duration-hours 24",
        }
    ]
    # More urgent than the plan ending within 72 h and anything but broken capacity.
    assert [a["kind"] for a in document["attention"]][:2] == ["plan-ending", "job-at-risk"]
    assert sft(document)["schedule"]["verdict"] == "at-risk"


def test_a_plan_that_ended_with_runs_left_leaves_its_job_at_risk(status_world) -> None:
    world = status_world
    world.buy(world.plan, status="Expired", start=NOW - timedelta(days=10), hours=144, count=4,
              fee="55000.00", in_use=0)  # fmt: skip
    world.plane.add_extension(world.plan, 24)
    world.buy("team-spare", status="Active", start=START, hours=336, count=2, fee="30000.00")
    world.cluster(lite={"CurrentCount": 0, "TrainingPlanStatus": "Expired"})
    world.finished("sft", RUN_1, start=NOW - timedelta(days=10), end=NOW - timedelta(days=9))
    _, document = world.json()
    (risk,) = [a for a in document["attention"] if a["kind"] == "job-at-risk"]
    assert risk["message"] == "plan main has ended (2027-07-07T12:00:00Z) with 1 of 2 runs left"
    assert risk["command"] is None


CHAINED = CONFIG.replace(
    "    data: {train: sft/train.jsonl}\n",
    "    data: {train: sft/train.jsonl}\n"
    "  - name: sft-eval\n"
    "    model: lite\n"
    "    technique: evaluation\n"
    "    runs: 1\n"
    "    hours_per_run: 4\n"
    "    instance_group: nova-lite\n"
    "    from: job:sft\n"
    "    evaluation: {task: general-text}\n",
)


def test_a_late_job_pushes_the_jobs_that_wait_for_it(status_world, tmp_path) -> None:
    """sft-eval starts from sft's checkpoint, in the plan's hours 48 to 52: sft running
    20 h behind pushes it 20 h too, and it says what it waits for."""
    world = status_world
    world.path, world.plan, world.extension = write_config(tmp_path, CHAINED)
    world.healthy(runs=False)
    world.kube.add_object(pytorchjob(RUN_1, "Failed", start=START, end=START + timedelta(hours=2)))
    world.running(RUN_2, start=START + timedelta(hours=20), nodes=world.nodes_of("nova-lite"))
    _, document = world.json()
    (evaluation,) = [j for j in document["jobs"]["items"] if j["name"] == "sft-eval"]
    assert evaluation["schedule"]["planned_start"] == "2027-07-11T12:00:00Z"  # hour 48
    assert evaluation["schedule"]["projected_end"] == "2027-07-12T12:00:00Z"  # 68 h + 4 h
    (late,) = [a for a in document["attention"] if a["subject"] == "job sft-eval"]
    assert late["message"].endswith("; 1 of 1 runs left; it waits for sft")
    assert late["command"] is None


# --- the cluster not read -------------------------------------------------------------------


def test_an_unreachable_cluster_reads_the_runs_from_s3_and_says_so(status_world) -> None:
    """From outside the VPC a private endpoint does not answer: not an error, the runs
    come from S3 (a run without its manifest is then of unknown state)."""
    world = status_world.healthy()
    world.plane.hyperpod.add_eks_cluster(
        CLUSTER, endpoint="https://127.0.0.1:9", ca_pem=world.kube.ca_pem, version="1.34"
    )
    code, document = world.json()
    assert code == 0
    jobs = document["jobs"]
    assert jobs["kubernetes_read"] is False
    assert jobs["note"].startswith(f"the Kubernetes API of EKS cluster {CLUSTER} does not answer (")
    assert jobs["note"].endswith(
        "); with a private endpoint run novapod from inside the VPC or from a network in "
        "eks.private_access_cidrs"
    )
    first, second = sft(document)["runs"]
    assert (first["state"], second["state"]) == ("succeeded", "unknown")
    assert second["message"] == "in S3 without manifest.json; the cluster was not read"
    assert sft(document)["schedule"]["verdict"] == "on-time"
    _, out, _ = world.run()
    assert "Jobs in namespace nova-jobs (runs from S3 only)" in out
    assert f"  the cluster was not read: {jobs['note']}" in out


@pytest.mark.parametrize(
    ("script", "why"),
    [
        (
            lambda kube: kube.refuse(401),
            "HTTP 401, your role has no access entry in the cluster (the roles in "
            "nova.scientists have one)",
        ),
        (
            lambda kube: kube.bind_role("other-team", ()),
            "HTTP 403, RBAC does not let your role list PyTorchJobs and pods in namespace "
            'nova-jobs (pytorchjobs.kubeflow.org is forbidden: User "novapod-scientist" cannot '
            'list resource "pytorchjobs" in API group "kubeflow.org" in the namespace '
            '"nova-jobs")',
        ),
    ],
)
def test_a_cluster_that_refuses_the_caller_is_named(status_world, script, why) -> None:
    world = status_world.healthy()
    script(world.kube)
    code, document = world.json()
    assert code == 0
    assert document["jobs"]["note"] == (
        f"the Kubernetes API of EKS cluster {CLUSTER} refused the read: {why}"
    )


def test_an_eks_cluster_not_deployed_is_a_note(status_world) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.eks_clusters.clear()
    code, document = world.json()
    assert document["jobs"]["note"] == f"EKS cluster {CLUSTER} is not deployed"
    # For the runs a note; for the environment, drift (tests/handlers/test_status_drift.py).
    assert [a["kind"] for a in document["attention"]] == ["drift"] and code == 4
    assert world.kube.requests == []


def test_a_config_without_jobs_has_no_jobs_section(status_world, tmp_path) -> None:
    text = CONFIG[: CONFIG.index("jobs:")] + CONFIG[CONFIG.index("capacity:") :]
    text = text.replace(
        "      duration_hours: 144\n",
        "      duration_hours: 144\n",
    )
    world = status_world
    path = tmp_path / "nojobs.yaml"
    path.write_text(text.replace("approve: APPROVE, ", "").replace("approve: EXTEND, ", ""))
    world.path = path
    _, document = world.json()
    assert document["jobs"] is None
    assert "ListObjectsV2" not in world.plane.operations()
    # The bootstrap's marker only: nothing of a jobs' namespace.
    assert [r.path for r in world.kube.requests] == [MARKER_PATH]
