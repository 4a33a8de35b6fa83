"""Cancel a run of a job: uninstall the run's Helm release, whatever the technique.

What the upstream tools do (aws/sagemaker-hyperpod-recipes@263199555b2e, the HyperPod
CLI release_v2 @abcdc77b):
- The recipes launcher names a run `<recipes.run.name, first 34 characters>-<5 random
  lowercase letters or digits>` (main.py, valid_run_name) and installs the run's chart as
  the Helm release of that name: `helm install <run> <chart> --namespace <ns>`
  (launcher/nova/launchers.py and launcher/evaluation/launchers.py, _create_helm_script).
  `novapod launch` sends the job's name as recipes.run.name (render.launch_spec), so a
  job's runs are the releases `<job[:34]>-xxxxx`; start-job prints the release as
  `NAME: <run>` (launch.RELEASE).
- Every object a run makes belongs to that release: SFT, DPO, CPT and evaluation one
  PyTorchJob `<run>` and a ConfigMap (k8s_templates/SFT/: main.py sends amazon.nova
  evaluations through the SFT launcher too, not launcher/evaluation/); PPO four
  PyTorchJobs `<run>-rm`, `-cm`, `-am`, `-at`, a StatefulSet and a Service `<run>-ag` and
  a ConfigMap each (k8s_templates/PPO/training.yaml, training-ag.yaml); RFT a PyTorchJob
  `<run>` plus Deployments, StatefulSets, batch Jobs, Services and a Secret (RFT/templates/).
- `hyperpod cancel-job <run>` deletes the PyTorchJob named `<run>` and only on success
  runs `helm uninstall` (src/hyperpod_cli/service/cancel_training_job.py). PPO has no
  PyTorchJob of that name: the delete is a 404, the CLI raises, and nothing is removed.

So the cancel that works for every technique is `helm uninstall <run> --namespace <ns>`
(helm deletes each object of the release's manifest, then the release records), after
`hyperpod connect-cluster` has pointed the kubeconfig at the cluster, as `novapod
launch` does. Like the HyperPod CLI it talks to the cluster's private API endpoint, so
it runs where `hyperpod` runs (inside the VPC, or a network eks.private_access_cidrs
admits).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

# The launcher's run names (main.py valid_run_name: run_name[:34] + "-" + 5 of [a-z0-9]),
# one copy with the rule that reads runs from PyTorchJobs.
from novapod.constructs.handler_core.runs import RUN_NAME_PREFIX_CHARS, RUN_SUFFIX
from novapod.nova import render
from novapod.nova.catalog import CatalogError
from novapod.nova.launch import (
    LaunchError,
    child_environment,
    deployed_names,
    find_job,
    launchable_reason,
    resolve_commands,
    stream,
)

if TYPE_CHECKING:
    from novapod.config import NovapodConfig

NO_HELM = (
    "helm is not on PATH; install Helm 3 or 4 (the HyperPod CLI needs it too, see "
    "https://helm.sh/docs/intro/install/)"
)


@dataclass(frozen=True)
class Cancel:
    """What cancelling a job's run takes: the connect command and the release's place."""

    job: str
    namespace: str
    connect: list[str]
    run: str | None  # None: the one run `helm list` finds

    def list_command(self) -> list[str]:
        """`helm list --all` of the job's runs as JSON: every status, so a run left
        pending-install by an interrupted start-job (its objects exist) is found too;
        without --all helm lists only deployed and failed releases (helm list --help)."""
        return [
            "helm", "list", "--all", "--namespace", self.namespace,
            "--filter", run_pattern(self.job), "--output", "json",
        ]  # fmt: skip

    def uninstall_command(self, run: str) -> list[str]:
        return ["helm", "uninstall", run, "--namespace", self.namespace]


def run_pattern(job: str) -> str:
    """The regular expression a run name of `job` matches (anchored, as helm --filter)."""
    return f"^{re.escape(job[:RUN_NAME_PREFIX_CHARS])}{RUN_SUFFIX}$"


def run_problem(job: str, run: str) -> str | None:
    """Why `run` cannot be a run of `job`, or None."""
    if re.fullmatch(run_pattern(job), run):
        return None
    prefix = job[:RUN_NAME_PREFIX_CHARS]
    ppo = re.fullmatch(rf"({re.escape(prefix)}{RUN_SUFFIX})-(rm|cm|am|at|ag)", run)
    if ppo:
        return (
            f"{run} is one of PPO run {ppo.group(1)}'s parts; cancel the run: --run {ppo.group(1)}"
        )
    return (
        f"{run} is not a run of job {job}: its runs are named {prefix}-<5 letters or "
        "digits>, as `novapod launch --run` printed; leave --run out to cancel its only run"
    )


def prepare(config: NovapodConfig, name: str, run: str | None, *, cfn: Any) -> Cancel:
    """The cancel of job `name` (its run `run`, or its only one), names resolved."""
    job = find_job(config, name)
    reason = launchable_reason(job)
    if reason is not None:
        raise LaunchError(f"{reason}, so it has no run to cancel")
    if config.hyperpod is None:
        raise LaunchError(
            f"job {name} runs on a HyperPod cluster but the config has no hyperpod section; "
            "there is no run to cancel"
        )
    if run is not None:
        problem = run_problem(name, run)
        if problem is not None:
            raise LaunchError(problem)
    try:
        spec = render.launch_spec(config, job)
    except CatalogError as error:
        raise LaunchError(f"job {name}: {error}") from None
    deployed = deployed_names(cfn, config, ["ClusterName"])
    (connect,) = resolve_commands(
        spec["commands"][:1], {render.CLUSTER_NAME: deployed["ClusterName"]}
    )
    return Cancel(job=name, namespace=spec["namespace"], connect=connect, run=run)


def helm_executable() -> Path | None:
    found = shutil.which("helm")
    return Path(found) if found else None


@dataclass(frozen=True)
class Outcome:
    status: int  # 0, or the exit status of the command that failed
    failed: list[str] | None
    run: str | None  # the run uninstalled (or that would have been)


def execute(cancel: Cancel, hyperpod: Path, helm: Path, out: TextIO) -> Outcome:
    """connect-cluster, then (without a run) `helm list` to find the job's run, then
    `helm uninstall` it; stop at the first command that fails."""
    env = child_environment(hyperpod)
    status = stream([str(hyperpod), *cancel.connect[1:]], env, out).code
    if status != 0:
        return Outcome(status, cancel.connect, cancel.run)
    run = cancel.run
    if run is None:
        listing = cancel.list_command()
        answer = subprocess.run(  # noqa: S603  (an argv list of our own, no shell)
            [str(helm), *listing[1:]], capture_output=True, text=True, env=env, check=False
        )
        if answer.returncode != 0:
            out.write(answer.stderr)
            return Outcome(answer.returncode, listing, None)
        run = only_run(cancel, answer.stdout)
    uninstall = cancel.uninstall_command(run)
    status = stream([str(helm), *uninstall[1:]], env, out).code
    return Outcome(status, uninstall if status else None, run)


def only_run(cancel: Cancel, listing: str) -> str:
    """The one release `helm list --output json` shows for the job, or a refusal."""
    try:
        releases = json.loads(listing or "[]")
        names = sorted(str(release["name"]) for release in releases)
    except (json.JSONDecodeError, TypeError, KeyError) as error:
        raise LaunchError(f"helm list printed no release list ({error})") from None
    names = [n for n in names if re.fullmatch(run_pattern(cancel.job), n)]
    if not names:
        raise LaunchError(
            f"job {cancel.job} has no run in namespace {cancel.namespace} (helm list shows "
            "none); nothing to cancel"
        )
    if len(names) > 1:
        raise LaunchError(
            f"job {cancel.job} has {len(names)} runs in namespace {cancel.namespace} "
            f"({', '.join(names)}); choose one with --run"
        )
    return names[0]
