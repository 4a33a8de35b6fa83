"""Launch a job: its HyperPod CLI commands with every deploy-time and run-time name resolved.

`render.launch_spec` leaves placeholders: `${DataBucket}`, `${ArtifactsBucket}`,
`${ClusterName}`, `${MlflowTrackingServerArn}` (outputs of the deployed stacks) and
`{{checkpoint:<job>}}` (what a finished job's manifest
names). This module finds the values with the caller's credentials (CloudFormation
DescribeStacks, S3 ListObjectsV2/GetObject) and refuses, with one sentence, when one
cannot be found. The AWS clients are passed in, so tests point them at a fake.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from botocore.exceptions import ClientError  # type: ignore[import-untyped]

from novapod.constructs.bedrock_model.handler.manifest import (
    ARCHIVE,
    MANIFEST,
    Found,
    list_runs_objects,
    newest,
    newest_manifest,
    read_manifest,
)
from novapod.nova import render
from novapod.nova import training_jobs as tj
from novapod.nova.catalog import CatalogError, catalog

if TYPE_CHECKING:
    from novapod.config import Job, NovapodConfig

# Placeholder -> (stack, output key): the outputs StorageStack, HyperPodStack, NovaStack
# and, with training-job jobs, NovaBaseStack declare (novapod/stacks/storage.py,
# hyperpod.py, nova.py, nova_base.py TrainingJobOutputs: the training jobs' role, the
# zone-id=subnet-id pairs they may run in, their security group).
STACK_OUTPUTS: Mapping[str, tuple[str, str]] = {
    "DataBucket": ("storage", "DataBucketName"),
    "ArtifactsBucket": ("storage", "ArtifactsBucketName"),
    "ClusterName": ("hyperpod", "ClusterName"),
    "MlflowTrackingServerArn": ("nova", "MlflowTrackingServerArn"),
    "PurchaseLedger": ("storage", "PurchaseLedgerTableName"),
    "TrainingJobRoleArn": ("nova-base", "TrainingJobRoleArn"),
    "TrainingJobSubnets": ("nova-base", "TrainingJobSubnets"),
    "TrainingJobSecurityGroupId": ("nova-base", "TrainingJobSecurityGroupId"),
    "StorageKeyArn": ("storage", "KeyArn"),
}
# Deploy-time names (`${Name}`), a predecessor's checkpoint, and a training job's values
# known at launch: its plan's ARN, its recipe's digest and its name (render.py).
_PLACEHOLDER = re.compile(
    r"\$\{([A-Za-z]+)\}|\{\{checkpoint:([a-z0-9-]+)\}\}"
    r"|\{\{training-plan:[A-Za-z0-9-]+\}\}|\{\{recipe-digest\}\}|\{\{training-job-name\}\}"
)
# A training plan's status in which a training job may use it: "The training plan must be
# in the Scheduled or Active status to be used by a training job"
# (docs.aws.amazon.com/sagemaker/latest/dg/training-plan-utilization-for-training-jobs.html).
USABLE_PLAN_STATUSES = frozenset({"Scheduled", "Active"})
# TrainingJobStatus values of a job that still runs (botocore's model: InProgress,
# Completed, Failed, Stopping, Stopped); a job in one of these holds its run's number.
RUNNING_STATUSES = frozenset({"InProgress", "Stopping"})
OVERRIDES_FLAG = "--override-parameters"
RECIPE_DIGEST_CHARS = 16


class LaunchError(Exception):
    """A launch or a results query that cannot go ahead; the message is one sentence."""


@dataclass(frozen=True)
class Checkpoint:
    """Where a finished training job's latest run left its checkpoint."""

    job: str
    run: str
    manifest: str  # the manifest's S3 URI (inside the archive for output.tar.gz)
    uri: str


@dataclass(frozen=True)
class Launch:
    """A job's commands with every name resolved, and what was looked up for them."""

    job: str
    commands: list[list[str]]
    output: str
    checkpoints: list[Checkpoint]
    notes: list[str]


# --- deployed names ---------------------------------------------------------------------


def stack_name(config: NovapodConfig, part: str) -> str:
    """The stack environment.build_environment names `<prefix>-<part>`."""
    return f"{config.prefix}-{part}"


def deployed_names(cfn: Any, config: NovapodConfig, wanted: Iterable[str]) -> dict[str, str]:
    """Placeholder name -> value, for the `wanted` placeholders a stack output provides.

    DescribeStacks with a stack name answers that stack with its Outputs, and an
    unknown name is a ValidationError "Stack with id X does not exist"
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html).
    Other AWS errors (access denied, throttling) propagate to the caller."""
    needed = [name for name in dict.fromkeys(wanted) if name in STACK_OUTPUTS]
    values: dict[str, str] = {}
    # Storage first: the stack every environment has, so its absence is named first.
    for part in dict.fromkeys(STACK_OUTPUTS[name][0] for name in STACK_OUTPUTS if name in needed):
        name = stack_name(config, part)
        try:
            stacks = cfn.describe_stacks(StackName=name)["Stacks"]
        except ClientError as error:
            if "does not exist" not in str(error.response.get("Error", {}).get("Message", "")):
                raise
            stacks = []
        if not stacks:
            raise LaunchError(
                f"stack {name} is not deployed in {config.region}; deploy the environment "
                f"first (cdk deploy {name})"
            )
        stack = stacks[0]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        for placeholder in needed:
            owner, key = STACK_OUTPUTS[placeholder]
            if owner != part:
                continue
            if not outputs.get(key):
                raise LaunchError(
                    f"stack {name} ({stack.get('StackStatus', 'unknown status')}) has no "
                    f"output {key}; deploy this version of novapod (cdk deploy {name})"
                )
            values[placeholder] = outputs[key]
    return values


# --- placeholders -----------------------------------------------------------------------


def placeholders_in(commands: Iterable[Sequence[str]]) -> list[str]:
    """Every placeholder in the commands, in order of appearance, once each."""
    found: dict[str, None] = {}
    for argv in commands:
        for arg in argv:
            for match in _PLACEHOLDER.finditer(arg):
                found[match.group(0)] = None
    return list(found)


def substitute(text: str, values: Mapping[str, str]) -> str:
    """`text` with each placeholder in `values` (by its literal form) replaced."""

    def one(match: re.Match[str]) -> str:
        return values.get(match.group(0), match.group(0))

    return _PLACEHOLDER.sub(one, text)


def resolve_commands(
    commands: Iterable[Sequence[str]], values: Mapping[str, str]
) -> list[list[str]]:
    """The commands with placeholders replaced. The override parameters are a JSON
    object: its values are replaced in the parsed object and it is written back as
    render.launch_spec writes it, so no value can break the JSON quoting."""
    out: list[list[str]] = []
    for argv in commands:
        resolved: list[str] = []
        for i, arg in enumerate(argv):
            if i > 0 and argv[i - 1] == OVERRIDES_FLAG:
                document = _substitute_json(json.loads(arg), values)
                resolved.append(json.dumps(document, sort_keys=True, separators=(",", ":")))
            else:
                resolved.append(substitute(arg, values))
        out.append(resolved)
    return out


def _substitute_json(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return substitute(value, values)
    if isinstance(value, dict):
        return {key: _substitute_json(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute_json(item, values) for item in value]
    return value


# --- what a job's runs left in S3 -------------------------------------------------------

# The layouts and the search (MANIFEST, ARCHIVE, list_runs_objects, newest) live in
# the BedrockModel handler's `manifest` module: its Lambda asset can import nothing else.
# Evaluations: `<run>/eval-result/results_<timestamp>.json`, which the same AWS page also
# names `result-<timestamp>.json`: its tree shows results_[timestamp].json, its text
# s3://output_path/job_name/eval-result/result-timestamp.json. Both are read.
# https://docs.aws.amazon.com/nova/latest/userguide/customize-fine-tune-evaluate-access-results.html
RESULTS = re.compile(r"^(?P<run>[^/]+)/eval-result/(?:results_|result-)[^/]*\.json$")
# A training-job evaluation's, uncompressed (CompressionType NONE): <TrainingJobName>/
# output/output/<evaluation>/eval_results/results_<timestamp>.json
# (docs.aws.amazon.com/sagemaker/latest/dg/model-customize-evaluation-metrics-formats.html).
TRAINING_JOB_RESULTS = re.compile(
    r"^(?P<run>[^/]+)/output/output/(?:[^/]+/)*eval_results/results_[^/]*\.json$"
)


def latest_checkpoint(s3: Any, job: str, output: str) -> Checkpoint:
    """The checkpoint of the job's newest run that wrote a manifest, in either layout."""
    latest = newest_manifest(s3, output)
    if latest is None:
        raise LaunchError(
            f"job {job} has not finished (no manifest.json under {output}); launch {job} "
            "first or wait for it"
        )
    reading = read_manifest(s3, latest)
    if not reading.has_manifest:
        raise LaunchError(
            f"job {job}'s run {latest.run} wrote {latest.uri} without a manifest.json at "
            f"its root; launch {job} again or set from: to the checkpoint's s3:// URI"
        )
    if reading.checkpoint is None:
        raise LaunchError(
            f"job {job}'s manifest {reading.where} names no s3:// checkpoint_s3_bucket; "
            f"launch {job} again or set from: to the checkpoint's s3:// URI"
        )
    return Checkpoint(job=job, run=latest.run, manifest=reading.where, uri=reading.checkpoint)


def _finish_signs(job: Job) -> tuple[tuple[re.Pattern[str], ...], str]:
    """What a finished run of `job` leaves below its outputs (a manifest, or for an
    evaluation its results), and how a refusal names it."""
    if job.technique == "evaluation":
        if job.on_training_job:
            return (TRAINING_JOB_RESULTS,), "evaluation results"
        return (RESULTS,), "results"
    words = "manifest.json or output/output.tar.gz" if job.on_training_job else "manifest.json"
    return (MANIFEST, ARCHIVE), words


def finished_run(s3: Any, job: Job, output: str) -> Found | None:
    """The newest sign that the job finished: a manifest, or for an evaluation its results."""
    return newest(list_runs_objects(s3, output, _finish_signs(job)[0]))


# --- the launch -------------------------------------------------------------------------


def find_job(config: NovapodConfig, name: str) -> Job:
    for job in config.jobs:
        if job.name == name:
            return job
    names = ", ".join(job.name for job in config.jobs) or "none (add a jobs section)"
    raise LaunchError(f"no job is named {name}; the config's jobs are: {names}")


def launchable_reason(job: Job) -> str | None:
    """Why the job cannot be launched on HyperPod, or None."""
    why = catalog().techniques[job.technique].not_launchable
    if why is not None:
        return f"job {job.name} cannot be launched on HyperPod: {why}"
    return None


def prepare(config: NovapodConfig, name: str, *, cfn: Any, s3: Any, force: bool = False) -> Launch:
    """The job's commands with every name resolved, after checking its predecessors.

    `from: job:X` needs X's checkpoint, so a missing manifest always refuses. A job
    that only waits (`after: [X]`) is refused as well while X has no finished run:
    `after` is the order the config promises, and launching early would start from
    data X has not written yet; `force` launches anyway (X ran elsewhere, by hand)."""
    job = find_job(config, name)
    if job.on_training_job:
        raise LaunchError(f"job {name} runs as a training job; use prepare_training_job")
    reason = launchable_reason(job)
    if reason is not None:
        raise LaunchError(reason)
    if config.hyperpod is None:
        raise LaunchError(
            f"job {name} runs on a HyperPod cluster but the config has no hyperpod section; "
            "add hyperpod.restricted_instance_groups and deploy it"
        )
    try:
        spec = render.launch_spec(config, job)
    except CatalogError as error:
        raise LaunchError(f"job {name}: {error}") from None
    commands: list[list[str]] = spec["commands"]
    wanted = [text[2:-1] for text in placeholders_in(commands) if text.startswith("${")]
    deployed = deployed_names(cfn, config, wanted)
    values = {"${" + key + "}": value for key, value in deployed.items()}
    checkpoints: list[Checkpoint] = []
    notes = _predecessors(config, job, s3, values, force=force, checkpoints=checkpoints)
    resolved = resolve_commands(commands, values)
    left = placeholders_in(resolved)
    if left:  # every placeholder render writes is handled above; this guards new ones
        raise LaunchError(f"job {name}: cannot resolve {', '.join(left)}")
    return Launch(
        job=name,
        commands=resolved,
        output=substitute(render.output_uri(config, job), values),
        checkpoints=checkpoints,
        notes=notes,
    )


# The HyperPod CLI prints the Helm release, which is the run's name (the SDK parses
# it with this pattern: aws/sagemaker-python-sdk BaseTrainer._train_hyperpod).
RELEASE = re.compile(r"NAME: (\S+)")
CLIENT_VENV = ".venv-client"
NOT_INSTALLED = (
    "the HyperPod CLI is not installed; run `make client` (installs "
    "aws/sagemaker-hyperpod-cli release_v2 at a pinned commit)"
)


def hyperpod_executable(checkout: Path | None = None) -> Path | None:
    """`hyperpod` on PATH, else the one `make client` installs in .venv-client (of the
    current directory, then of the novapod checkout)."""
    on_path = shutil.which("hyperpod")
    if on_path:
        return Path(on_path)
    roots = [Path.cwd()] + ([checkout] if checkout is not None else [])
    for root in roots:
        candidate = root / CLIENT_VENV / "bin" / "hyperpod"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def child_environment(executable: Path) -> dict[str, str]:
    """Our environment with the CLI's own bin directory first on PATH: the CLI runs
    `aws eks update-kubeconfig` and `python3 .../main.py` (the recipes launcher, which
    needs hydra) as subprocesses, both installed beside it by `make client`."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(filter(None, [str(executable.parent), env.get("PATH")]))
    return env


@dataclass(frozen=True)
class Outcome:
    status: int  # 0, or the exit status of the first command that failed
    failed: list[str] | None  # that command
    run: str | None  # the release (run) name start-job printed


def execute(commands: Sequence[Sequence[str]], executable: Path, out: TextIO) -> Outcome:
    """Run the commands in order (no shell), streaming their output to `out` (their
    stderr is ours), and stop at the first that fails."""
    env = child_environment(executable)
    run: str | None = None
    for argv in commands:
        command = [str(executable), *argv[1:]] if argv[0] == "hyperpod" else list(argv)
        status = stream(command, env, out)
        run = run or release_name(status.lines)
        if status.code != 0:
            return Outcome(status=status.code, failed=list(argv), run=run)
    return Outcome(status=0, failed=None, run=run)


@dataclass(frozen=True)
class Streamed:
    code: int  # the command's exit status
    lines: tuple[str, ...]  # what it printed on stdout, as written to `out`


def stream(argv: Sequence[str], env: dict[str, str], out: TextIO) -> Streamed:
    """Run one command (no shell), copying its stdout to `out` line by line as it comes
    (its stderr is ours)."""
    lines: list[str] = []
    # An argv list, no shell: the commands are ours (render.launch_spec), resolved.
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env) as child:  # noqa: S603
        assert child.stdout is not None
        for line in child.stdout:
            out.write(line)
            out.flush()
            lines.append(line)
        return Streamed(child.wait(), tuple(lines))


def release_name(lines: Iterable[str]) -> str | None:
    for line in lines:
        match = RELEASE.search(line)
        if match:
            return match.group(1)
    return None


# --- training jobs ----------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingJobLaunch:
    """A training-job job's CreateTrainingJob request with every name resolved, the
    recipe to upload first, and the run of it already running (then nothing starts)."""

    job: str
    request: dict[str, Any]
    recipe: bytes
    recipe_bucket: str
    recipe_key: str
    output: str
    run: int
    runs: int
    notes: list[str]
    running: tj.Started | None = None


def recipe_digest(recipe: bytes) -> str:
    """The content address of an uploaded recipe: the same bytes, the same key."""
    return hashlib.sha256(recipe).hexdigest()[:RECIPE_DIGEST_CHARS]


def plan_name(config: NovapodConfig, plan: str) -> str:
    """The name a config's plan has in SageMaker (adopted, or bought under its
    deterministic name, as the HyperPod stack names a group's plan)."""
    return render.sagemaker_plan_name(config, plan, config.purchase_names())


def usable_plan(
    sagemaker: Any,
    ec2: Any,
    config: NovapodConfig,
    job: Job,
    *,
    instance_type: str,
    instance_count: int,
) -> tuple[str, list[str]]:
    """The plan's ARN and the zone IDs of its reserved capacity, from DescribeTrainingPlan
    (ResourceNotFound for a plan never bought), or one sentence naming the fix: a plan
    not Scheduled or Active, or one that does not sell the job's instance type and count
    ("The InstanceType ... must match the InstanceType of your training plan",
    use-training-plan-for-training-jobs-using-api-cli-sdk.html), is refused before
    anything is uploaded or started."""
    assert job.plan is not None
    name = plan_name(config, job.plan)
    try:
        plan = sagemaker.describe_training_plan(TrainingPlanName=name)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceNotFound":
            raise
        raise LaunchError(
            f"training plan {job.plan} ({name}) is not bought yet; approve it "
            f"(capacity.training_plans purchase.approve: {name}) and deploy "
            f"{stack_name(config, 'capacity')} before launching {job.name}"
        ) from None
    status = str(plan.get("Status", ""))
    if status not in USABLE_PLAN_STATUSES:
        raise LaunchError(
            f"training plan {job.plan} ({name}) is {status}, and a training job runs only on "
            f"a Scheduled or Active plan; launch {job.name} while the plan is Scheduled or "
            "Active, or set on_demand: true instead of plan"
        )
    summaries = list(plan.get("ReservedCapacitySummaries", []))
    sold = sorted({str(s.get("InstanceType", "")) for s in summaries} - {""})
    total = int(plan.get("TotalInstanceCount") or 0)
    if (sold and sold != [instance_type]) or instance_count > total:
        raise LaunchError(
            f"training plan {job.plan} ({name}) holds {total} x {', '.join(sold) or 'nothing'}, "
            f"and job {job.name} asks for {instance_count} x {instance_type}; change the "
            "job's instance type or replicas to what the plan holds, or its plan"
        )
    return str(plan["TrainingPlanArn"]), _plan_zone_ids(ec2, job.plan, summaries)


def _plan_zone_ids(ec2: Any, plan: str, summaries: list[dict[str, Any]]) -> list[str]:
    """The zone ID of each reserved capacity: its AvailabilityZoneId, or its
    AvailabilityZone mapped through this account's DescribeAvailabilityZones (the API
    reference's DescribeTrainingPlan shows only AvailabilityZone; zone names differ per
    account, IDs do not: docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html),
    as the purchase handler maps offerings."""
    ids = [str(s["AvailabilityZoneId"]) for s in summaries if s.get("AvailabilityZoneId")]
    names = sorted(
        {str(s["AvailabilityZone"]) for s in summaries if not s.get("AvailabilityZoneId")} - {""}
    )
    if names:
        # The purchase handler's mapping; imported here, not at the top, because its
        # package's decisions module is only needed for a plan shown by zone name.
        from novapod.constructs.training_plan.handler import offerings  # noqa: PLC0415

        by_name = offerings.zone_name_to_id(ec2)
        unknown = [n for n in names if n not in by_name]
        if unknown and (ids or len(unknown) < len(names)):
            # Part of the capacity mapped: launching in those zones alone would narrow
            # where the job may run without saying so (the plan's other zone may be the
            # one with room), so the unmapped zone is named instead.
            raise LaunchError(
                f"training plan {plan} reserves capacity in {', '.join(unknown)}, which "
                "this account's DescribeAvailabilityZones does not list, so the job's "
                "subnets cannot be chosen; check the zone is enabled for the account (aws "
                "ec2 describe-availability-zones --all-availability-zones) and launch again"
            )
        ids += [by_name[n] for n in names if n in by_name]
    if not ids:
        raise LaunchError(
            f"training plan {plan} names no Availability Zone for its reserved capacity, so "
            "the job's subnets cannot be chosen; describe it (aws sagemaker "
            "describe-training-plan) and launch again once it shows its zone"
        )
    return list(dict.fromkeys(ids))


def _runs_of(sagemaker: Any, stem: str) -> dict[int, tuple[str, str, str]]:
    """Run number -> (name, TrainingJobStatus, SecondaryStatus) of the job's runs, the
    training jobs named `<stem>-<run>` (ListTrainingJobs NameContains, every page),
    whatever each asked: a run started before the config changed is still a run."""
    found: dict[int, tuple[str, str, str]] = {}
    for page in sagemaker.get_paginator("list_training_jobs").paginate(NameContains=f"{stem}-"):
        for summary in page.get("TrainingJobSummaries", []):
            name = str(summary["TrainingJobName"])
            run = tj.run_of(stem, name)
            if run is not None:
                found[run] = (
                    name,
                    str(summary.get("TrainingJobStatus", "")),
                    str(summary.get("SecondaryStatus", "")),
                )
    return found


def prepare_training_job(
    config: NovapodConfig,
    job: Job,
    *,
    cfn: Any,
    s3: Any,
    sagemaker: Any,
    ec2: Any,
    force: bool = False,
) -> TrainingJobLaunch:
    """The training job's request with every name resolved: the stacks' outputs, the
    predecessors' checkpoints (a training job's `<name>/output/output.tar.gz` manifest is
    read like a HyperPod run's), the plan's ARN and the subnets of its zones (all the
    private subnets on demand), the recipe's content address, and the next run's name."""
    variant = render.job_variant(config, job)
    recipe = render.render_recipe(config, job, variant)
    document = render.training_job_launch(config, job, recipe)
    template: dict[str, Any] = document["create_training_job"]
    wanted = ["DataBucket", "ArtifactsBucket", *render.TRAINING_JOB_PLACEHOLDERS]
    if job.mlflow:
        wanted.append("MlflowTrackingServerArn")
    deployed = deployed_names(cfn, config, wanted)
    values = {"${" + key + "}": value for key, value in deployed.items()}
    notes = _predecessors(config, job, s3, values, force=force)
    try:
        subnets_by_zone = tj.parse_subnets(deployed["TrainingJobSubnets"])
        if job.on_demand or job.plan is None:
            # On demand: every private subnet of the environment (SageMaker places the
            # instances in one of the VpcConfig's subnets: train-vpc.html).
            subnets = [s for zone in sorted(subnets_by_zone) for s in subnets_by_zone[zone]]
            notes.append(f"on demand: no training plan; subnets {', '.join(subnets)}")
        else:
            resources = template["ResourceConfig"]
            arn, zones = usable_plan(
                sagemaker,
                ec2,
                config,
                job,
                instance_type=str(resources["InstanceType"]),
                instance_count=int(resources["InstanceCount"]),
            )
            subnets = list(tj.plan_subnets(zones, subnets_by_zone, job.plan))
            values[render.plan_placeholder(job.plan)] = arn
            notes.append(f"training plan {job.plan}: {arn} (zones {', '.join(zones)})")
    except tj.TrainingJobError as error:
        raise LaunchError(str(error)) from None
    # Resolved in the parsed recipe, then written as `novapod recipes` writes it.
    text = render.recipe_yaml(_substitute_json(recipe, values)).encode("utf-8")
    digest = recipe_digest(text)
    values[render.RECIPE_DIGEST] = digest
    body = _substitute_json({k: v for k, v in template.items() if k != "TrainingJobName"}, values)
    body["VpcConfig"]["Subnets"] = subnets
    left = placeholders_in([[json.dumps(body)], [text.decode()]])
    if left:  # every placeholder render writes is handled above; this guards new ones
        raise LaunchError(f"job {job.name}: cannot resolve {', '.join(left)}")
    try:
        stem = tj.job_stem(config.prefix, job.name)
    except tj.TrainingJobError as error:
        raise LaunchError(str(error)) from None
    runs = _runs_of(sagemaker, stem)
    running = next(
        (
            tj.Started(name, "", started=False, status=status, secondary=secondary)
            for _, (name, status, secondary) in sorted(runs.items())
            if status in RUNNING_STATUSES
        ),
        None,
    )
    run = max(runs, default=0) + 1
    if running is None and run > job.runs:
        done = ", ".join(f"{n} ({s})" for _, (n, s, _) in sorted(runs.items()))
        raise LaunchError(
            f"job {job.name} has run all its {job.runs} run(s) ({done}); raise its runs in "
            "the config to run it again"
        )
    bucket, _, prefix = document["recipe_upload"].removeprefix("s3://").partition("/")
    return TrainingJobLaunch(
        job=job.name,
        request=tj.named(config.prefix, job.name, run, body),
        recipe=text,
        recipe_bucket=substitute(bucket, values),
        recipe_key=substitute(prefix, values),
        output=str(body["OutputDataConfig"]["S3OutputPath"]),
        run=run,
        runs=job.runs,
        notes=notes,
        running=running,
    )


def _predecessors(
    config: NovapodConfig,
    job: Job,
    s3: Any,
    values: dict[str, str],
    *,
    force: bool,
    checkpoints: list[Checkpoint] | None = None,
) -> list[str]:
    """Check the job's predecessors, on either platform: a `from: job:` one must have a
    checkpoint (added to `values`, and to `checkpoints` when given); an `after` one a
    finished run, unless `force`. The notes say what was found."""
    by_name = {j.name: j for j in config.jobs}
    notes: list[str] = []
    for predecessor in job.predecessors:
        output = substitute(render.output_uri(config, by_name[predecessor]), values)
        if predecessor == job.source_job:
            found = latest_checkpoint(s3, predecessor, output)
            if checkpoints is not None:
                checkpoints.append(found)
            values[render.checkpoint_placeholder(predecessor)] = found.uri
            notes.append(
                f"{predecessor}: checkpoint {found.uri} from run {found.run} ({found.manifest})"
            )
            continue
        done = finished_run(s3, by_name[predecessor], output)
        if done is not None:
            notes.append(f"{predecessor} finished: run {done.run} ({done.uri})")
        elif force:
            notes.append(f"warning: {predecessor} has no finished run under {output}; --force")
        else:
            sign = _finish_signs(by_name[predecessor])[1]
            raise LaunchError(
                f"job {predecessor} has not finished (no {sign} under {output}); launch "
                f"{predecessor} first or wait for it (--force launches {job.name} anyway)"
            )
    return notes


def start_training_job(prepared: TrainingJobLaunch, *, s3: Any, sagemaker: Any) -> tj.Started:
    """Upload the recipe (one PutObject at its content-addressed key: a repeat writes the
    same bytes again) and start the job once (`training_jobs.start`). No SSE headers: the
    data bucket encrypts new objects with the storage key by default (its default
    encryption, aws:kms with the key: novapod/constructs/buckets.py), and its policy
    requires only TLS ("Amazon S3 automatically encrypts ... with the default encryption
    configuration of the bucket", docs.aws.amazon.com/AmazonS3/latest/userguide/
    bucket-encryption.html)."""
    s3.put_object(Bucket=prepared.recipe_bucket, Key=prepared.recipe_key, Body=prepared.recipe)
    return tj.start(sagemaker, prepared.request)
