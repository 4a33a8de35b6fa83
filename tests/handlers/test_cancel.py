"""`novapod cancel`: a run's Helm release uninstalled, for every technique (issue 19).

Against the fake control plane (the deployed stacks), the fake Kubernetes API with the
scientists' Role bound (as RBAC authorizes them in the jobs' namespace), a fake
`hyperpod` whose connect-cluster writes the kubeconfig, and a fake `helm` that lists and
uninstalls releases through that API (tests/fakes/helm.py). The cluster is seeded as
`helm install` of each Nova chart leaves it (tests/fixtures/nova_chart_objects.yaml).
"""

from __future__ import annotations

import shlex
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from novapod.cli import main
from novapod.constructs.nova_environment.handler import kubernetes as eks_auth
from novapod.nova.cancel import run_pattern, run_problem
from novapod.nova.kubernetes import scientist_rules
from tests.conftest import ROOT
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.fakes.helm import install
from tests.fakes.kubernetes import FakeKubernetes

CONFIG = ROOT / "config" / "examples" / "nova-jobs.yaml"
CLUSTER = "novapod-nova-jobs"
NAMESPACE = "nova-jobs"
CHARTS = yaml.safe_load((ROOT / "tests" / "fixtures" / "nova_chart_objects.yaml").read_text())
# The chart each example job's run installs (launcher/nova/launchers.py get_nova_launcher).
JOBS = {"lite-sft": "sft", "lite-eval-base": "evaluation", "micro-ppo": "ppo", "nova2-rft": "rft"}

FAKE_HYPERPOD = """\
#!{python}
# connect-cluster writes the kubeconfig the fake helm reads ($KUBECONFIG, JSON).
import json, os, sys
if sys.argv[1] != "connect-cluster" or os.environ.get("FAKE_HYPERPOD_FAIL"):
    print("fake hyperpod: no", file=sys.stderr)
    sys.exit(4)
with open(os.environ["KUBECONFIG"], "w") as out:
    json.dump({{"server": os.environ["FAKE_K8S_SERVER"], "ca": os.environ["FAKE_K8S_CA"],
               "token": os.environ["FAKE_K8S_TOKEN"]}}, out)
print("connected to " + sys.argv[sys.argv.index("--cluster-name") + 1])
"""
FAKE_HELM = """\
#!{python}
import sys
sys.path.insert(0, {root!r})
from tests.fakes.helm import main
sys.exit(main(sys.argv[1:]))
"""


def objects(technique: str, run: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "metadata": {"name": o["name"].format(run=run)},
        }
        for o in CHARTS[technique]
    ]


@dataclass
class Cluster:
    kube: FakeKubernetes
    kubeconfig: Path
    token: str

    def launched(self, job: str, run: str, status: str = "deployed") -> set[tuple[str, str]]:
        """Seed the run as helm install leaves it; its objects' (kind, name)."""
        made = objects(JOBS[job], run)
        install(self.kube, run, NAMESPACE, made, status=status)
        return {(o["kind"], o["metadata"]["name"]) for o in made}

    def delete(self, path: str) -> int:
        """One DELETE as the scientist, with the cluster's CA; the HTTP status."""
        context = ssl.create_default_context(cadata=self.kube.ca_pem.decode())
        request = urllib.request.Request(
            self.kube.endpoint + path,
            method="DELETE",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return int(error.code)


@pytest.fixture
def cluster(
    control_plane: FakeControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Cluster]:
    control_plane.reset()
    control_plane.add_stack(f"{CLUSTER}-hyperpod", {"ClusterName": CLUSTER})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("hyperpod", FAKE_HYPERPOD), ("helm", FAKE_HELM)):
        (bin_dir / name).write_text(text.format(python=sys.executable, root=str(ROOT)))
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    kubeconfig = tmp_path / "kubeconfig.json"
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    with FakeKubernetes(cluster_name=CLUSTER, secret_key="fake-secret") as kube:
        # The scientists' Role in the jobs' namespace, as the bootstrap binds it.
        kube.bind_role(NAMESPACE, scientist_rules())
        token = eks_auth.token(boto3.client("sts", region_name="us-east-1"), CLUSTER)
        monkeypatch.setenv("FAKE_K8S_SERVER", kube.endpoint)
        monkeypatch.setenv("FAKE_K8S_CA", kube.ca_pem.decode())
        monkeypatch.setenv("FAKE_K8S_TOKEN", token)
        yield Cluster(kube=kube, kubeconfig=kubeconfig, token=token)
        assert kube.bad_tokens() == []
    assert control_plane.violations == []


def cancel(*args: str) -> int:
    return main(["cancel", str(CONFIG), *args])


def test_hyperpod_cancel_job_finds_no_pytorchjob_for_ppo(cluster: Cluster) -> None:
    # What `hyperpod cancel-job micro-ppo-ab12c` does first (service/
    # cancel_training_job.py): delete the PyTorchJob named after the run. PPO's are
    # <run>-rm/-cm/-am/-at, so the API answers 404, the CLI raises and skips helm
    # uninstall, and all seven instances keep running.
    made = cluster.launched("micro-ppo", "micro-ppo-ab12c")
    path = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/pytorchjobs/micro-ppo-ab12c"
    assert cluster.delete(path) == 404
    assert made <= cluster.kube.names(NAMESPACE)


@pytest.mark.parametrize("job", sorted(JOBS))
def test_cancel_uninstalls_every_object_of_the_run(cluster: Cluster, job: str, capsys) -> None:
    run = f"{job}-ab12c"
    made = cluster.launched(job, run)
    other = cluster.launched("lite-sft" if job != "lite-sft" else "micro-ppo", "keep-me-zz999")
    assert cancel(job) == 0
    left = cluster.kube.names(NAMESPACE)
    assert not made & left
    assert not {n for k, n in left if k == "Secret" and run in n}  # the release records
    assert other <= left  # another job's run stays
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"connected to {CLUSTER}",
        f'release "{run}" uninstalled',
        f"cancelled job {job}: run {run} uninstalled from namespace {NAMESPACE} with every "
        "object its chart created; its outputs stay in S3",
    ]


def test_a_named_run_is_cancelled_and_the_others_stay(cluster: Cluster) -> None:
    first = cluster.launched("micro-ppo", "micro-ppo-aaaaa")
    second = cluster.launched("micro-ppo", "micro-ppo-bbbbb")
    assert cancel("micro-ppo", "--run", "micro-ppo-bbbbb") == 0
    left = cluster.kube.names(NAMESPACE)
    assert first <= left
    assert not second & left


def test_a_run_left_pending_install_is_found_and_uninstalled(cluster: Cluster) -> None:
    # An interrupted start-job leaves the release pending-install with its objects in
    # place; helm list without --all would not show it and cancel would say "no run".
    made = cluster.launched("lite-sft", "lite-sft-pp123", status="pending-install")
    assert cancel("lite-sft") == 0
    assert not made & cluster.kube.names(NAMESPACE)


def test_several_runs_without_run_are_refused(cluster: Cluster, capsys) -> None:
    made = cluster.launched("micro-ppo", "micro-ppo-aaaaa") | cluster.launched(
        "micro-ppo", "micro-ppo-bbbbb"
    )
    assert cancel("micro-ppo") == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "novapod cancel: job micro-ppo has 2 runs in namespace nova-jobs (micro-ppo-aaaaa, "
        "micro-ppo-bbbbb); choose one with --run"
    )
    assert made <= cluster.kube.names(NAMESPACE)


def test_no_run_is_refused(cluster: Cluster, capsys) -> None:
    cluster.launched("lite-sft", "lite-sft-aaaaa")  # another job's
    assert cancel("micro-ppo") == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "novapod cancel: job micro-ppo has no run in namespace nova-jobs (helm list shows "
        "none); nothing to cancel"
    )


def test_helm_failing_is_its_exit_status(cluster: Cluster, capfd) -> None:
    assert cancel("micro-ppo", "--run", "micro-ppo-aaaaa") == 1
    err = capfd.readouterr().err.splitlines()  # helm's stderr is the command's
    assert "Error: uninstall: Release not loaded: micro-ppo-aaaaa: release: not found" in err
    assert err[-1] == (
        "novapod cancel: `helm uninstall` failed with exit status 1; job micro-ppo was not "
        "cancelled"
    )


def test_connect_cluster_runs_first(cluster: Cluster, capsys, monkeypatch) -> None:
    made = cluster.launched("micro-ppo", "micro-ppo-aaaaa")
    monkeypatch.setenv("FAKE_HYPERPOD_FAIL", "1")
    assert cancel("micro-ppo") == 4
    assert capsys.readouterr().err.splitlines()[-1] == (
        "novapod cancel: `hyperpod connect-cluster` failed with exit status 4; job micro-ppo "
        "was not cancelled"
    )
    assert not cluster.kubeconfig.exists()
    assert made <= cluster.kube.names(NAMESPACE)


def test_dry_run_prints_the_commands(cluster: Cluster, capsys) -> None:
    assert cancel("micro-ppo", "--run", "micro-ppo-aaaaa", "--dry-run") == 0
    assert [shlex.split(line) for line in capsys.readouterr().out.splitlines()] == [
        ["hyperpod", "connect-cluster", "--cluster-name", CLUSTER, "--region", "us-east-1",
         "--namespace", NAMESPACE],
        ["helm", "uninstall", "micro-ppo-aaaaa", "--namespace", NAMESPACE],
    ]  # fmt: skip
    assert cancel("micro-ppo", "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert shlex.split(lines[1]) == [
        "helm", "list", "--all", "--namespace", NAMESPACE, "--filter", "^micro\\-ppo-[a-z0-9]{5}$",
        "--output", "json",
    ]  # fmt: skip
    assert cluster.kube.requests == []


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (
            "micro-ppo-ab12c-rm",
            "micro-ppo-ab12c-rm is one of PPO run micro-ppo-ab12c's parts; cancel the run: "
            "--run micro-ppo-ab12c",
        ),
        (
            "lite-sft-ab12c",
            "lite-sft-ab12c is not a run of job micro-ppo: its runs are named micro-ppo-<5 "
            "letters or digits>, as `novapod launch --run` printed; leave --run out to cancel "
            "its only run",
        ),
    ],
)
def test_a_run_of_another_job_or_a_ppo_part_is_refused(
    cluster: Cluster, capsys, run: str, message: str
) -> None:
    assert cancel("micro-ppo", "--run", run) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"novapod cancel: {message}"
    assert cluster.kube.requests == []


def test_the_run_name_follows_the_launchers_truncation() -> None:
    # main.py valid_run_name keeps the first 34 characters of the name, then -xxxxx.
    job = "a" * 40
    assert run_problem(job, "a" * 34 + "-0z9y8") is None
    assert run_problem(job, "a" * 40 + "-0z9y8") is not None
    assert run_pattern("x.y") == "^x\\.y-[a-z0-9]{5}$"


def test_the_fake_refuses_what_the_scientists_role_does_not_grant(cluster: Cluster) -> None:
    # As strict as RBAC: another namespace, or a verb the Role lacks, is a 403.
    cluster.kube.add_object(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}
    )
    assert cluster.delete("/api/v1/namespaces/x/configmaps/c") == 403
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"}}
    status, body = cluster.kube.answer(
        "PUT",
        f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/pytorchjobs/j",
        f"Bearer {cluster.token}",
        "",
        job,
    )
    assert (status, body["message"]) == (
        403,
        'pytorchjobs.kubeflow.org "j" is forbidden: User "novapod-scientist" cannot update '
        'resource "pytorchjobs" in API group "kubeflow.org" in the namespace "nova-jobs"',
    )
    assert cluster.kube.objects.keys() == {("", "configmaps", "x", "c")}


# The chart of upstream's launcher (novapod/data/nova_upstream.yaml) each fixture entry seeds.
FIXTURE_CHART = {"sft": "SFT", "evaluation": "SFT", "ppo": "PPO", "rft": "RFT"}


def test_the_seeded_objects_are_kinds_the_upstream_chart_creates() -> None:
    from novapod.nova.upstream import upstream_facts

    facts = upstream_facts()
    kinds = {"PyTorchJob": ("kubeflow.org", "pytorchjobs"), "ConfigMap": ("", "configmaps")}
    kinds |= {"Service": ("", "services"), "Secret": ("", "secrets")}
    kinds |= {"StatefulSet": ("apps", "statefulsets"), "Deployment": ("apps", "deployments")}
    kinds |= {"Job": ("batch", "jobs")}
    for entry, objects in CHARTS.items():
        created = facts.chart_objects[FIXTURE_CHART[entry]]
        for obj in objects:
            assert kinds[obj["kind"]] in created, (entry, obj)
