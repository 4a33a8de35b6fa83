"""`novapod health CONFIG --group G [--wait]`: HyperPod's deep health check started on a
group's nodes in the fake control plane (StartClusterHealthCheck checked against
botocore's model), each node's result, the wait on an injected clock, and the refusals:
a job running on the group (from the jobs' pods and runs in the fake Kubernetes API),
an unknown group, a CPU group, a cluster that cannot tell."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from novapod import cli
from novapod.operate import health as health_module
from tests import json_schemas
from tests.conftest import ROOT
from tests.fakes.aws_control_plane import Fault
from tests.fakes.service_model import service_model
from tests.handlers.status_world import (
    CLUSTER,
    CONFIG,
    NOW,
    RUN_2,
    StatusWorld,
    pod,
    status_kube,
    status_world,
    write_config,
)
from tests.json_schemas import assert_closed

__all__ = ["status_kube", "status_world"]  # fixtures

SCHEMA = json.loads((ROOT / "docs" / "reference" / "health.schema.json").read_text())
MODEL = service_model("sagemaker")


@pytest.fixture(autouse=True)
def _answers_fit_the_model(status_world: StatusWorld) -> Any:
    yield
    assert status_world.plane.violations == []


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """`health --wait` on a fake clock: each sleep moves it on; the sleeps are kept."""
    slept: list[float] = []
    monkeypatch.setattr(cli, "_health_now", lambda: NOW + timedelta(seconds=sum(slept)))
    monkeypatch.setattr(cli, "_health_sleep", slept.append)
    return slept


def health(world: StatusWorld, *args: str) -> tuple[int, str, str]:
    """The command's exit status, stdout and stderr; with --json, stdout is checked
    against docs/reference/health.schema.json (and its exit_status against the exit)."""
    status = cli.main(["health", str(world.path), *args])
    out, err = world.capsys.readouterr()
    if "--json" in args and status in (0, 2, 4):
        document = json.loads(out)
        json_schemas.validate(document, SCHEMA)
        assert document["exit_status"] == status
    return status, out, err


def spare_nodes(world: StatusWorld) -> list[str]:
    return world.nodes_of("spare-rig")


# --- started, and each node's result --------------------------------------------------------


def test_the_check_starts_on_the_whole_group_and_shows_each_node(status_world, clock) -> None:
    world = status_world.healthy()
    status, out, err = health(world, "--group", "spare-rig")
    assert (status, err) == (0, "")
    assert world.plane.calls_to("StartClusterHealthCheck") == [
        {
            "ClusterName": CLUSTER,
            "DeepHealthCheckConfigurations": [
                {
                    "InstanceGroupName": "spare-rig",
                    "DeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
                }
            ],
        }
    ]
    first, second = spare_nodes(world)
    assert out.splitlines() == [
        "novapod health: deep health check (InstanceStress, InstanceConnectivity) started on "
        f"group spare-rig of HyperPod cluster {CLUSTER} at 2027-07-10T12:00:00Z",
        "",
        "  node                 status                     result       message",
        f"  {first}  DeepHealthCheckInProgress  in-progress",
        f"  {second}  DeepHealthCheckInProgress  in-progress",
        "",
        "0 of 2 nodes passed, 2 without a result yet",
        f"follow it with: aws sagemaker list-cluster-nodes --cluster-name {CLUSTER} "
        "--instance-group-name-contains spare-rig (or novapod health ... --wait)",
    ]
    assert clock == []  # no --wait: no waiting


def test_wait_polls_until_every_node_passed(status_world, clock) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 3
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--interval", "30")
    assert status == 0
    assert clock == [30.0, 30.0]  # in progress twice, then Running
    assert out.splitlines()[-1] == "2 of 2 nodes passed"
    assert [line.split()[1:3] for line in out.splitlines()[3:5]] == [["Running", "passed"]] * 2


def test_a_node_that_fails_needs_attention(status_world, clock) -> None:
    world = status_world.healthy()
    first, second = spare_nodes(world)
    world.plane.hyperpod.health_outcome(second, "Failure", "DCGM diagnostics level 4 failed")
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--json")
    assert status == 4
    document = json.loads(out)
    assert document["nodes"] == [
        {"instance_id": first, "status": "Running", "message": None, "result": "passed"},
        {
            "instance_id": second,
            "status": "Failure",
            "message": "DCGM diagnostics level 4 failed",
            "result": "failed",
        },
    ]
    assert (document["done"], document["timed_out"], document["exit_status"]) == (True, False, 4)
    status, out, _ = health(world, "--group", "spare-rig", "--wait")
    assert out.splitlines()[-1] == (
        f"1 of 2 nodes passed, 1 failed: {second} (DCGM diagnostics level 4 failed) (HyperPod "
        "reboots or replaces them with node recovery Automatic)"
    )


def test_a_node_replaced_after_failing_is_a_failure(status_world, clock) -> None:
    world = status_world.healthy()
    first, _ = spare_nodes(world)
    world.plane.hyperpod.health_outcome(first, "replaced")
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--json")
    assert status == 4
    results = {n["instance_id"]: (n["status"], n["result"]) for n in json.loads(out)["nodes"]}
    assert results[first] == (None, "replaced")
    assert len(results) == 2  # the node that came up in its place was not checked here


def test_the_wait_ends_at_its_timeout(status_world, clock) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 1000
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--timeout", "3")
    assert status == 4
    assert clock == [60.0, 60.0, 60.0]
    assert out.splitlines()[-1] == "0 of 2 nodes passed, 2 without a result when the wait timed out"


def test_checks_can_be_named_and_a_single_node_is_not_checked_across_nodes(
    status_world, clock
) -> None:
    world = status_world
    world.healthy()
    lite, spare = world.plane.hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"]
    world.plane.hyperpod.set_restricted_groups(CLUSTER, [lite, {**spare, "CurrentCount": 1}])
    world.plane.hyperpod.nodes[CLUSTER] = [
        n for n in world.plane.hyperpod.nodes[CLUSTER] if n["InstanceId"] != spare_nodes(world)[1]
    ]
    status, out, _ = health(world, "--group", "spare-rig")
    assert status == 0
    assert out.splitlines()[1] == (
        "  note: InstanceConnectivity left out: it tests across nodes, the group has one"
    )
    (request,) = world.plane.calls_to("StartClusterHealthCheck")
    assert request["DeepHealthCheckConfigurations"][0]["DeepHealthChecks"] == ["InstanceStress"]
    health(world, "--group", "spare-rig", "--checks", "InstanceConnectivity,InstanceStress")
    request = world.plane.calls_to("StartClusterHealthCheck")[-1]
    assert request["DeepHealthCheckConfigurations"][0]["DeepHealthChecks"] == [
        "InstanceConnectivity",
        "InstanceStress",
    ]


# --- the JSON and its schema -----------------------------------------------------------------


def test_started_without_waiting_is_the_first_listing(status_world, clock) -> None:
    world = status_world.healthy()
    status, out, _ = health(world, "--group", "spare-rig", "--json")
    document = json.loads(out)
    first, second = spare_nodes(world)
    assert status == 0
    assert document == {
        "schema_version": 1,
        "state": "started",
        "cluster": CLUSTER,
        "group": "spare-rig",
        "instance_type": "ml.p5.48xlarge",
        "checks": ["InstanceStress", "InstanceConnectivity"],
        "started_at": "2027-07-10T12:00:00Z",
        "waited": False,
        "timed_out": False,
        "done": False,
        "notes": [],
        "nodes": [
            {
                "instance_id": node,
                "status": "DeepHealthCheckInProgress",
                "message": None,
                "result": "in-progress",
            }
            for node in (first, second)
        ],
        "summary": "0 of 2 nodes passed, 2 without a result yet",
        "refusal": None,
        "exit_status": 0,
    }


def test_waited_until_every_node_passed_is_finished(status_world, clock) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 2
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--json")
    document = json.loads(out)
    assert (status, document["state"], document["done"]) == (0, "finished", True)
    assert [n["result"] for n in document["nodes"]] == ["passed", "passed"]
    assert document["summary"] == "2 of 2 nodes passed"


def test_a_wait_that_timed_out_says_so(status_world, clock) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 1000
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--timeout", "2", "--json")
    document = json.loads(out)
    assert status == 4
    assert (document["state"], document["timed_out"], document["done"]) == (
        "timed-out",
        True,
        False,
    )
    assert document["summary"] == "0 of 2 nodes passed, 2 without a result when the wait timed out"


def _as_is(world: StatusWorld) -> None:
    """The healthy world: sft's second run on nova-lite, system of CPU instances."""


def _no_cluster(world: StatusWorld) -> None:
    world.plane.hyperpod.clusters.clear()


def _cannot_tell(world: StatusWorld) -> None:
    world.kube.refuse(401)


@pytest.mark.parametrize(
    ("args", "prepare", "refusal"),
    [
        (["--group", "nova-lite"], _as_is, "group nova-lite runs a job: run sft-"),
        (["--group", "system"], _as_is, "group system runs on ml.m5.2xlarge"),
        (["--group", "nova-pro"], _as_is, "the config has no instance group nova-pro"),
        (["--group", "spare-rig", "--checks", "Gpu"], _as_is, "--checks: Gpu is not a deep"),
        (["--group", "spare-rig"], _no_cluster, f"the HyperPod cluster {CLUSTER} is not deployed"),
        (["--group", "spare-rig", "--wait"], _cannot_tell, "cannot tell whether group spare-rig"),
    ],
)
def test_a_refusal_is_a_document_too(status_world, clock, args, prepare, refusal) -> None:
    """With --json a refusal prints the document (state refused) and, as without it, its
    sentence on stderr; exit 2, nothing started."""
    world = status_world.healthy()
    prepare(world)
    status, out, err = health(world, *args, "--json")
    document = json.loads(out)
    assert status == 2
    assert document["state"] == "refused" and document["refusal"].startswith(refusal)
    assert err == f"novapod health: {document['refusal']}\n"
    assert (document["cluster"], document["group"], document["waited"]) == (
        CLUSTER,
        args[1],
        "--wait" in args,
    )
    assert (document["nodes"], document["checks"], document["started_at"]) == ([], [], None)
    assert "StartClusterHealthCheck" not in world.plane.operations()


def test_the_health_schema_is_closed_and_names_the_models_values() -> None:
    assert_closed(SCHEMA, every_key_required=True)
    assert SCHEMA["properties"]["schema_version"]["const"] == health_module.SCHEMA_VERSION
    checks = SCHEMA["properties"]["checks"]["items"]["enum"]
    assert checks == MODEL.shape_for("DeepHealthCheckType").enum == list(cli.HEALTH_CHECKS)
    node = SCHEMA["properties"]["nodes"]["items"]["properties"]
    assert node["status"]["enum"] == [*MODEL.shape_for("ClusterInstanceStatus").enum, None]


# --- refusals -------------------------------------------------------------------------------


def test_it_refuses_a_group_that_runs_a_job(status_world, clock) -> None:
    world = status_world.healthy()  # sft's second run holds the four nova-lite nodes
    status, out, err = health(world, "--group", "nova-lite")
    assert (status, out) == (2, "")
    assert err == (
        f"novapod health: group nova-lite runs a job: run {RUN_2} of job sft holds 4 of its 4 "
        "nodes (only the jobs' namespace nova-jobs is looked at); a deep health check takes "
        "the group's nodes out of service while it runs and would stop the job: wait for it "
        "to finish, cancel it (novapod cancel "
        f"{world.path} sft --run {RUN_2}), or pass --force\n"
    )
    assert "StartClusterHealthCheck" not in world.plane.operations()


def test_pods_of_the_jobs_namespace_on_the_group_are_a_job_too(status_world, clock) -> None:
    world = status_world.healthy()
    for index, node in enumerate(spare_nodes(world)):
        world.kube.add_object(pod(f"by-hand-worker-{index}", node))
    status, _, err = health(world, "--group", "spare-rig")
    assert status == 2
    assert err == (
        "novapod health: group spare-rig runs a job: pods of namespace nova-jobs "
        "(by-hand-worker-0, by-hand-worker-1) hold 2 of its 2 nodes (pods of other namespaces "
        "are not looked at); a deep health check takes the group's nodes out of service while "
        "it runs and would stop them: wait for them to finish, or pass --force\n"
    )


def test_force_starts_it_all_the_same(status_world, clock) -> None:
    world = status_world.healthy()
    status, out, err = health(world, "--group", "nova-lite", "--force")
    assert (status, err) == (0, "")
    assert "  note: --force: not checked whether a job runs on the group" in out.splitlines()
    assert len(world.plane.calls_to("StartClusterHealthCheck")) == 1
    assert world.kube.requests == []  # --force reads no jobs


def test_a_cluster_that_cannot_tell_is_a_refusal(status_world, clock) -> None:
    world = status_world.healthy()
    world.kube.refuse(401)
    status, _, err = health(world, "--group", "spare-rig")
    assert status == 2
    assert err.startswith(
        "novapod health: cannot tell whether group spare-rig runs a job (the Kubernetes API of "
        f"EKS cluster {CLUSTER} refused the read: HTTP 401, your role has no access entry"
    )
    assert err.endswith("run novapod health where the cluster's API answers, or pass --force\n")
    assert "StartClusterHealthCheck" not in world.plane.operations()


def test_an_unknown_group_lists_the_config_s_groups(status_world, clock) -> None:
    world = status_world.healthy()
    mark = world.plane.mark()
    status, out, err = health(world, "--group", "nova-pro")
    assert (status, out) == (2, "")
    assert err == (
        "novapod health: the config has no instance group nova-pro; its groups are: "
        "nova-lite, spare-rig, system\n"
    )
    assert world.plane.operations_since(mark, ledger=True) == []


def test_a_cpu_group_has_no_deep_health_checks(status_world, clock) -> None:
    world = status_world.healthy()
    status, _, err = health(world, "--group", "system")
    assert status == 2
    assert err == (
        "novapod health: group system runs on ml.m5.2xlarge, and HyperPod's deep health checks "
        "are for GPU and Trainium instances only\n"
    )


def test_a_cluster_not_deployed_is_named(status_world, clock) -> None:
    world = status_world
    world.healthy()
    world.plane.hyperpod.clusters.clear()
    status, _, err = health(world, "--group", "spare-rig")
    assert (status, err) == (
        2,
        f"novapod health: the HyperPod cluster {CLUSTER} is not deployed; deploy the hyperpod "
        "stack first\n",
    )


def test_a_group_without_nodes_has_nothing_to_check(status_world, clock) -> None:
    world = status_world
    world.healthy()
    lite, spare = world.plane.hyperpod.clusters[CLUSTER]["RestrictedInstanceGroups"]
    world.plane.hyperpod.set_restricted_groups(CLUSTER, [lite, {**spare, "CurrentCount": 0}])
    world.plane.hyperpod.nodes[CLUSTER] = [
        n for n in world.plane.hyperpod.nodes[CLUSTER] if n["InstanceGroupName"] != "spare-rig"
    ]
    status, _, err = health(world, "--group", "spare-rig")
    assert (status, err) == (
        2,
        "novapod health: group spare-rig has no nodes to check (0 of 2: a restricted group has "
        "nodes only while its plan runs)\n",
    )


def test_an_unknown_check_is_refused(status_world, clock) -> None:
    status, _, err = health(status_world.healthy(), "--group", "spare-rig", "--checks", "Gpu")
    assert (status, err) == (
        2,
        "novapod health: --checks: Gpu is not a deep health check; choose from InstanceStress, "
        "InstanceConnectivity, MultiNodeTrainingValidation\n",
    )


def test_without_credentials_the_first_call_is_named(status_world, clock, monkeypatch) -> None:
    world = status_world.healthy()
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    mark = world.plane.mark()
    status, out, err = health(world, "--group", "spare-rig")
    assert (status, out) == (1, "")
    assert err.startswith(
        "novapod health: DescribeCluster (which needs sagemaker:DescribeCluster) has no usable "
        "AWS credentials (Unable to locate credentials); provide credentials"
    )
    assert world.plane.operations_since(mark) == []


def test_an_aws_error_names_the_call(status_world, clock) -> None:
    world = status_world.healthy()
    world.plane.error("StartClusterHealthCheck", "AccessDeniedException", message="not allowed")
    status, _, err = health(world, "--group", "spare-rig")
    assert (status, err) == (
        1,
        "novapod health: an AWS call failed: An error occurred (AccessDeniedException) when "
        "calling the StartClusterHealthCheck operation: not allowed\n",
    )


# --- the example in docs/operations.md ------------------------------------------------------

EXAMPLE_START = (
    "<!-- health example: the output of docs_example() in tests/handlers/test_health_cli.py -->"
)


def docs_example(world: StatusWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> str:
    """The operations page's example: spare-rig checked and waited for, one node failing
    DCGM's diagnostics; then nova-lite refused while sft runs there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "dev.yaml").write_text(world.path.read_text())
    world.path = tmp_path / "config" / "dev.yaml"
    world.healthy()
    _, second = spare_nodes(world)
    world.plane.hyperpod.health_outcome(
        second, "Failure", "DCGM diagnostics level 4: GPU 3 memory errors"
    )
    argv = ["health", "config/dev.yaml", "--group", "spare-rig", "--wait"]
    status = cli.main(argv)
    out, err = world.capsys.readouterr()
    assert (status, err) == (4, "")
    refused = cli.main(["health", "config/dev.yaml", "--group", "nova-lite"])
    refusal = world.capsys.readouterr()
    assert (refused, refusal.out) == (2, "")
    return (
        f"$ novapod health config/dev.yaml --group spare-rig --wait\n{out}$ echo $?\n4\n"
        f"$ novapod health config/dev.yaml --group nova-lite\n{refusal.err}$ echo $?\n2\n"
    )


def test_the_operations_page_shows_the_real_output(status_world, clock, monkeypatch, tmp_path):
    from tests.conftest import ROOT

    shown = docs_example(status_world, monkeypatch, tmp_path)
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    start = text.index(EXAMPLE_START)
    block = text[text.index("```text\n", start) + len("```text\n") :]
    assert block[: block.index("```\n")] == shown, f"docs/operations.md should show:\n{shown}"


# --- review of issue 22, finding 12: the CLI's texts ------------------------------------------


def test_the_checks_help_says_what_the_default_is(capsys) -> None:
    parser = cli._parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["health", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    assert (
        "--checks CHECKS comma-separated checks to run; choose from InstanceStress, "
        "InstanceConnectivity, MultiNodeTrainingValidation; default InstanceStress (and "
        "InstanceConnectivity on p/trn groups of two or more nodes)"
    ) in text


@pytest.mark.parametrize(("option", "unit"), [("--timeout", "minutes"), ("--interval", "seconds")])
def test_a_bad_duration_names_its_unit(status_world, clock, option, unit) -> None:
    world = status_world
    with pytest.raises(SystemExit) as exit_:
        health(world, "--group", "spare-rig", "--wait", option, "0")
    assert exit_.value.code == 2
    assert f"argument {option}: '0' is not a positive number of {unit}" in (
        world.capsys.readouterr().err
    )


# --- review of issue 22, finding 13: what health can and cannot see ---------------------------


def test_a_node_in_failure_before_the_start_is_not_this_check_s_failure(
    status_world, clock
) -> None:
    """The second node was in Failure before the check and the check leaves it be: it is
    reported apart, and the wait ends once the listings settled (3 polls, 10 minutes)."""
    world = status_world.healthy()
    first, second = spare_nodes(world)
    node = next(n for n in world.plane.hyperpod.nodes[CLUSTER] if n["InstanceId"] == second)
    node["InstanceStatus"] = {"Status": "Failure", "Message": "EFA loopback failed"}
    world.plane.hyperpod.health_check_skips.add(second)
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--interval", "300")
    assert status == 4
    assert clock == [300.0, 300.0]  # settled at the third poll, ten minutes in
    lines = out.splitlines()
    assert lines[3:5] == [
        f"  {first}  Running  passed",
        f"  {second}  Failure  already-failed  EFA loopback failed",
    ]
    assert lines[-1] == (
        f"1 of 2 nodes passed, 1 in Failure before the check started, not this check's "
        f"result: {second} (EFA loopback failed)"
    )
    status, out, _ = health(world, "--group", "spare-rig", "--wait", "--json")
    document = json.loads(out)
    assert [n["result"] for n in document["nodes"]] == ["passed", "already-failed"]
    assert (status, document["done"], document["exit_status"]) == (4, True, 4)


def test_a_node_in_failure_before_that_the_check_takes_is_its_result(status_world, clock):
    world = status_world.healthy()
    _, second = spare_nodes(world)
    node = next(n for n in world.plane.hyperpod.nodes[CLUSTER] if n["InstanceId"] == second)
    node["InstanceStatus"] = {"Status": "Failure", "Message": "EFA loopback failed"}
    status, out, _ = health(world, "--group", "spare-rig", "--wait")
    assert status == 0  # seen in progress, then Running: this check passed it
    assert out.splitlines()[-1] == "2 of 2 nodes passed"


def test_a_node_whose_check_finished_between_polls_is_unknown_not_pending(
    status_world, clock
) -> None:
    """The check's outcome shows at the first listing: no node was seen in progress. The
    wait ends once settled instead of waiting out --timeout (240 minutes)."""
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 1
    first, second = spare_nodes(world)
    status, out, _ = health(world, "--group", "spare-rig", "--wait")
    assert status == 4
    assert clock == [60.0] * 10  # 11 polls: the last one ten minutes after the start
    assert [line.split()[1:3] for line in out.splitlines()[3:5]] == [["Running", "unknown"]] * 2
    assert out.splitlines()[-1] == (
        "0 of 2 nodes passed, 2 with no result to see (Running, never seen "
        "DeepHealthCheckInProgress: the check finished between two polls, or did not run "
        f"there): {first}, {second}; kubectl get node hyperpod-{first} hyperpod-{second} -L "
        "sagemaker.amazonaws.com/deep-health-check-status shows Passed or Failed"
    )


def test_without_wait_a_node_not_yet_in_progress_is_pending(status_world, clock) -> None:
    world = status_world.healthy()
    first, _ = spare_nodes(world)
    world.plane.hyperpod.health_check_skips.add(first)
    status, out, _ = health(world, "--group", "spare-rig")
    assert status == 0
    assert out.splitlines()[3].split() == [first, "Running", "pending"]


def test_a_group_whose_nodes_run_a_check_already_is_refused_before_the_start(
    status_world, clock
) -> None:
    """Results are read from the nodes' status alone: a second check would be credited
    with the first one's, so it is refused before StartClusterHealthCheck, --force or not."""
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 5  # in progress for both attempts below
    first, second = spare_nodes(world)
    assert health(world, "--group", "spare-rig")[0] == 0
    for force in ((), ("--force",)):
        status, out, err = health(world, "--group", "spare-rig", *force)
        assert (status, out) == (2, "")
        assert err == (
            "novapod health: group spare-rig already runs a deep health check on 2 of its 2 "
            f"nodes (DeepHealthCheckInProgress: {first}, {second}); wait until they leave "
            f"that status (aws sagemaker list-cluster-nodes --cluster-name {CLUSTER} "
            "--instance-group-name-contains spare-rig), then start another\n"
        )
    assert len(world.plane.calls_to("StartClusterHealthCheck")) == 1


def test_a_conflict_from_the_start_is_one_sentence_too(status_world, clock) -> None:
    world = status_world.healthy()
    world.plane.error(
        "StartClusterHealthCheck", "ConflictException", message="Cluster is being updated."
    )
    status, _, err = health(world, "--group", "spare-rig")
    assert (status, err) == (
        1,
        "novapod health: StartClusterHealthCheck refused to start the check on group "
        "spare-rig (ConflictException: Cluster is being updated.); if a deep health check "
        f"already runs there, follow it with aws sagemaker list-cluster-nodes --cluster-name "
        f"{CLUSTER} --instance-group-name-contains spare-rig\n",
    )


def _expire_after(world: StatusWorld, calls: int) -> None:
    """ListClusterNodes fails after `calls` that pass, as when the caller's session expires
    during a long --wait (ExpiredTokenException: botocore does not retry it)."""
    fault = Fault("error", code="ExpiredTokenException", status=400, message="token expired")
    world.plane.inject("ListClusterNodes", fault, after=calls)


def test_a_poll_that_fails_during_wait_prints_what_was_seen(status_world, clock) -> None:
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 1000
    first, second = spare_nodes(world)
    _expire_after(world, 2)  # the group's listing, the poll right after the start
    status, out, err = health(world, "--group", "spare-rig", "--wait")
    assert status == 1
    assert out.splitlines()[3:] == [
        f"  {first}  DeepHealthCheckInProgress  in-progress",
        f"  {second}  DeepHealthCheckInProgress  in-progress",
        "",
        "0 of 2 nodes passed, 2 without a result when reading the nodes failed",
        f"follow it with: aws sagemaker list-cluster-nodes --cluster-name {CLUSTER} "
        "--instance-group-name-contains spare-rig (or novapod health ... --wait)",
    ]
    assert err == (
        "novapod health: the check started at 2027-07-10T12:00:00Z, but reading its progress "
        "failed: An error occurred (ExpiredTokenException) when calling the ListClusterNodes "
        "operation: token expired\n"
    )
    assert clock == [60.0]


def test_a_poll_that_fails_with_json_says_what_was_seen_in_its_sentence(status_world, clock):
    world = status_world.healthy()
    world.plane.hyperpod.health_check_polls = 1000
    _expire_after(world, 2)
    status, out, err = health(world, "--group", "spare-rig", "--wait", "--json")
    assert (status, out) == (1, "")  # no document: its exit_status would not be 1
    assert err.startswith(
        "novapod health: the check started at 2027-07-10T12:00:00Z, but reading its progress "
        "failed (so far: 0 of 2 nodes passed, 2 without a result when it failed): An error "
        "occurred (ExpiredTokenException)"
    )


def test_a_config_without_jobs_says_nothing_was_looked_at(status_world, clock, tmp_path):
    text = CONFIG[: CONFIG.index("jobs:")] + CONFIG[CONFIG.index("capacity:") :]
    world = status_world
    world.path, _, _ = write_config(tmp_path, text)
    world.healthy(runs=False)
    status, out, _ = health(world, "--group", "spare-rig")
    assert status == 0
    assert out.splitlines()[1] == (
        "  note: not checked whether a job runs on the group: the config has no jobs"
    )
    assert world.kube.requests == []
