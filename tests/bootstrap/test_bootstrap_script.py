"""bootstrap.sh against fakes: install order, idempotence, refusals, delete report."""

from __future__ import annotations

from tests.bootstrap.conftest import CHART_COMMIT, CLUSTER, REGION, RIG_COMMIT, Sandbox

CHART_REVISION = f"{CHART_COMMIT}:helm_chart/HyperPodHelmChart"
RIG_REVISION = f"{RIG_COMMIT}:helm_chart/install_rig_dependencies.sh"


def first_index(calls: list[list[str]], *prefix: str) -> int:
    for index, call in enumerate(calls):
        if call[: len(prefix)] == list(prefix):
            return index
    raise AssertionError(f"no call {prefix} in {calls}")


def helm_upgrades(sandbox: Sandbox) -> list[list[str]]:
    return [c for c in sandbox.calls("helm") if c[1] in {"upgrade", "install"}]


def test_install_runs_the_pinned_sequence_without_a_terminal(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=True)
    assert result.returncode == 0, result.stderr
    calls = sandbox.calls()
    programs = [c[0] for c in calls]
    # Every download is verified before anything touches the cluster.
    last_download = max(i for i, p in enumerate(programs) if p == "curl")
    assert last_download < programs.index("aws")
    assert [c[-1] for c in sandbox.calls("curl")] == [
        sandbox.pins.helm.url,
        sandbox.pins.kubectl.url,
        sandbox.pins.yq.url,
    ]
    assert sandbox.calls("aws")[0][:3] == ["aws", "eks", "update-kubeconfig"]
    aws = sandbox.calls("aws")[0]
    assert aws[aws.index("--name") + 1] == CLUSTER
    assert aws[aws.index("--region") + 1] == REGION

    fetches = [c[c.index("fetch") + 1 :] for c in sandbox.calls("git") if "fetch" in c]
    # Each commit, then its branch (commits only) to check the commit is on it.
    assert fetches == [
        ["--quiet", "--depth", "1", "origin", CHART_COMMIT],
        ["--quiet", "--filter=tree:0", "origin", "refs/heads/release_v2"],
        ["--quiet", "--depth", "1", "origin", RIG_COMMIT],
        ["--quiet", "--filter=tree:0", "origin", "refs/heads/release_v2"],
    ]
    ancestry = [c[c.index("merge-base") + 1 :] for c in sandbox.calls("git") if "merge-base" in c]
    assert ancestry == [
        ["--is-ancestor", CHART_COMMIT, "FETCH_HEAD"],
        ["--is-ancestor", RIG_COMMIT, "FETCH_HEAD"],
    ]
    build = first_index(calls, "helm", "dependency", "build")
    upgrade = first_index(calls, "helm", "upgrade", "--install", "dependencies")
    owner = first_index(calls, "kubectl", "get", "namespace", "aws-hyperpod")
    rig = first_index(calls, "helm", "upgrade", "--install", "rig-dependencies")
    efa = first_index(
        calls, "kubectl", "get", "daemonset", "dependencies-aws-efa-k8s-device-plugin"
    )
    assert build < upgrade < owner < rig < efa

    command = calls[upgrade]
    assert command[3] == "dependencies"
    assert command[4].endswith(f"/src-{CHART_COMMIT}/helm_chart/HyperPodHelmChart")
    assert command[command.index("--namespace") + 1] == "kube-system"
    assert command[command.index("--timeout") + 1] == "15m"
    assert f"global.region={REGION}" in command
    # The health-monitoring agent from the cluster region's registry, not us-west-2's.
    assert (
        "health-monitoring-agent.hmaimage=767398015722.dkr.ecr.us-east-1.amazonaws.com/"
        "hyperpod-health-monitoring-agent:1.0.674.0_1.0.199.0"
    ) in command
    assert "--wait" not in command  # chart.wait: false in the pins

    assert sandbox.releases() == {"dependencies": "deployed", "rig-dependencies": "deployed"}
    assert sandbox.marker()["chart_revision"] == CHART_REVISION
    assert sandbox.marker()["rig_revision"] == RIG_REVISION
    assert sandbox.marker()["pins_sha256"] == sandbox.pins.digest()
    assert "answered 'y'" in result.stdout
    assert "tolerates sagemaker.amazonaws.com/RestrictedNode" in result.stdout


def test_second_run_at_the_pinned_revision_changes_nothing(sandbox: Sandbox) -> None:
    assert sandbox.run("install", rig=True).returncode == 0
    result = sandbox.run("install", rig=True)
    assert result.returncode == 0, result.stderr
    assert helm_upgrades(sandbox) == []
    assert [c for c in sandbox.calls("git") if "fetch" in c] == []
    assert not [c for c in sandbox.calls("kubectl") if c[1] == "apply"]
    assert result.stdout.count("nothing to do") == 2


def test_a_new_chart_commit_upgrades_the_chart_but_not_the_rig_release(sandbox: Sandbox) -> None:
    sandbox.set_release("dependencies")
    sandbox.set_release("rig-dependencies")
    sandbox.set_marker(chart_revision=f"{'0' * 40}:helm_chart/HyperPodHelmChart")
    sandbox.set_marker(rig_revision=RIG_REVISION)
    result = sandbox.run("install", rig=True)
    assert result.returncode == 0, result.stderr
    assert [c[1:4] for c in helm_upgrades(sandbox)] == [["upgrade", "--install", "dependencies"]]
    assert sandbox.marker()["chart_revision"] == CHART_REVISION


def test_without_rig_only_the_chart_is_installed(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=False)
    assert result.returncode == 0, result.stderr
    assert sandbox.releases() == {"dependencies": "deployed"}
    assert [c[-1] for c in sandbox.calls("curl")] == [
        sandbox.pins.helm.url,
        sandbox.pins.kubectl.url,
    ]
    assert sandbox.marker()["rig_revision"] == ""


def test_a_checksum_mismatch_stops_before_anything_is_installed(sandbox: Sandbox) -> None:
    kubectl = sandbox.downloads / "kubectl"
    kubectl.write_text(kubectl.read_text() + "# tampered\n")
    result = sandbox.run("install", rig=True)
    assert result.returncode == 1
    assert "checksum mismatch for kubectl v1.34.1" in result.stderr
    assert "refusing to install it" in result.stderr
    assert {c[0] for c in sandbox.calls()} == {"curl"}  # no aws, git, helm, kubectl, yq
    assert sandbox.releases() == {}


def test_an_unpinned_checksum_refuses_to_download(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=True, HELM_SHA256="UNPINNED")
    assert result.returncode == 1
    assert "HELM_SHA256 is not pinned" in result.stderr
    assert "hyperpod_dependencies.yaml" in result.stderr
    assert sandbox.calls() == []


def test_an_unpinned_rig_commit_matters_only_with_rig(sandbox: Sandbox) -> None:
    refused = sandbox.run("install", rig=True, RIG_COMMIT="UNPINNED", YQ_SHA256="UNPINNED")
    assert refused.returncode == 1
    assert "RIG_COMMIT is not pinned" in refused.stderr
    accepted = sandbox.run("install", rig=False, RIG_COMMIT="UNPINNED", YQ_SHA256="UNPINNED")
    assert accepted.returncode == 0, accepted.stderr


def test_a_checkout_that_is_not_the_pinned_commit_aborts(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=True, FAKE_GIT_HEAD="3" * 40)
    assert result.returncode == 1
    assert f"not the pinned commit {CHART_COMMIT}" in result.stderr
    assert [c[1] for c in sandbox.calls("helm")] == ["list"]  # looked, built nothing
    assert sandbox.releases() == {}


def test_a_rig_release_at_another_revision_is_not_rerun(sandbox: Sandbox) -> None:
    sandbox.set_release("rig-dependencies")
    sandbox.set_marker(chart_revision=CHART_REVISION, rig_revision="old:script.sh")
    sandbox.set_release("dependencies")
    result = sandbox.run("install", rig=True)
    assert result.returncode == 1
    assert "must run only once per cluster" in result.stderr
    assert helm_upgrades(sandbox) == []


def test_a_commit_that_is_not_on_its_branch_is_refused(sandbox: Sandbox) -> None:
    # Like the commit pinned before, reachable only from a pull-request ref.
    result = sandbox.run("install", rig=True, FAKE_GIT_BRANCH_COMMITS=RIG_COMMIT)
    assert result.returncode == 1
    assert f"commit {CHART_COMMIT} is not on branch release_v2" in result.stderr
    assert helm_upgrades(sandbox) == []
    assert sandbox.releases() == {}


def test_a_branch_that_does_not_exist_is_refused(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=True, FAKE_GIT_BRANCH="main")
    assert result.returncode == 1
    assert "could not fetch branch release_v2" in result.stderr
    assert sandbox.releases() == {}


def test_a_rig_script_that_leaves_efa_without_the_toleration_fails(sandbox: Sandbox) -> None:
    # What the revision pinned before did: multi-node jobs would stay Pending.
    result = sandbox.run("install", rig=True, FAKE_RIG_SKIP_EFA="1")
    assert result.returncode == 1
    assert (
        "DaemonSet kube-system/dependencies-aws-efa-k8s-device-plugin does not tolerate "
        "sagemaker.amazonaws.com/RestrictedNode"
    ) in result.stderr
    assert sandbox.marker()["rig_revision"] == ""  # not recorded: the next deploy says so


def test_the_rig_script_is_not_run_over_another_release_of_the_chart(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=True, FAKE_NAMESPACE_RELEASE="hyperpod-dependencies")
    assert result.returncode == 1
    assert (
        "namespace aws-hyperpod belongs to Helm release 'hyperpod-dependencies', not dependencies"
    ) in result.stderr
    assert "rig-dependencies" not in sandbox.releases()
    assert sandbox.marker()["chart_revision"] == CHART_REVISION  # the chart step completed


def test_no_health_agent_registry_for_the_region_refuses_to_install(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=True, HMA_IMAGE="UNPINNED")
    assert result.returncode == 1
    assert "HMA_IMAGE is not pinned" in result.stderr
    assert "health_monitoring_agent" in result.stderr
    assert sandbox.calls() == []


def test_a_rig_script_that_installs_nothing_fails_the_build(sandbox: Sandbox) -> None:
    result = sandbox.run("install", rig=True, FAKE_RIG_DECLINE="1")
    assert result.returncode == 1
    assert "ended without a deployed rig-dependencies release" in result.stderr
    assert sandbox.marker()["rig_revision"] == ""


def test_delete_uninstalls_rig_then_chart_and_the_marker(sandbox: Sandbox) -> None:
    assert sandbox.run("install", rig=True).returncode == 0
    result = sandbox.run("delete", rig=True)
    assert result.returncode == 0, result.stderr
    uninstalls = [c[2] for c in sandbox.calls("helm") if c[1] == "uninstall"]
    assert uninstalls == ["rig-dependencies", "dependencies"]
    assert sandbox.releases() == {}
    assert sandbox.marker() == {}
    assert "removed: rig-dependencies" in result.stdout
    assert "removed: dependencies" in result.stdout
    assert {c[0] for c in sandbox.calls()} <= {"curl", "aws", "helm", "kubectl"}


def test_delete_of_releases_already_gone_reports_and_succeeds(sandbox: Sandbox) -> None:
    result = sandbox.run("delete", rig=True)
    assert result.returncode == 0, result.stderr
    assert "already absent: rig-dependencies" in result.stdout
    assert "already absent: dependencies" in result.stdout
    assert [c for c in sandbox.calls("helm") if c[1] == "uninstall"] == []


def test_delete_reports_what_it_could_not_remove(sandbox: Sandbox) -> None:
    sandbox.set_release("dependencies")
    result = sandbox.run("delete", rig=False, FAKE_HELM_UNINSTALL_FAIL="dependencies")
    assert result.returncode == 1
    assert "NOT removed: dependencies (helm uninstall failed)" in result.stdout
    assert "rig-dependencies" not in result.stdout.split("report", 1)[1].split("left in place")[0]


def test_delete_with_an_unreachable_cluster_says_nothing_was_removed(sandbox: Sandbox) -> None:
    result = sandbox.run("delete", rig=True, FAKE_AWS_FAIL="1")
    assert result.returncode == 1
    assert f"could not start: cluster {CLUSTER} unreachable; nothing was removed" in result.stdout


def test_an_unknown_mode_is_a_usage_error(sandbox: Sandbox) -> None:
    result = sandbox.run("upgrade")
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_the_marker_records_the_revisions_the_buildspec_computed(sandbox: Sandbox) -> None:
    """The revisions come from the build variables (buildspec.py, the one computation
    `novapod status` compares with), and one that names another commit is refused before
    anything is installed: the marker would hide what runs."""
    result = sandbox.run("install", rig=True, CHART_REVISION=f"{'2' * 40}:helm_chart/X")
    assert result.returncode != 0
    assert f"CHART_REVISION {'2' * 40}:helm_chart/X is not of CHART_COMMIT {CHART_COMMIT}" in (
        result.stderr
    )
    assert helm_upgrades(sandbox) == []
    result = sandbox.run("install", rig=True, RIG_REVISION="old:script.sh")
    assert result.returncode != 0
    assert f"RIG_REVISION old:script.sh is not of RIG_COMMIT {RIG_COMMIT}" in result.stderr
    result = sandbox.run("install", rig=True)
    assert result.returncode == 0, result.stderr
    assert (sandbox.marker()["chart_revision"], sandbox.marker()["rig_revision"]) == (
        CHART_REVISION,
        RIG_REVISION,
    )
