"""The `novapod` command: validate a config, print its JSON Schema, plan capacity, write
the Nova recipes of its jobs, launch them, read their evaluations, show what a deployed
environment runs and pays for, check a group's nodes, review what a change to the
synthesized stacks does, and print the sequence that destroys it.

Only `offerings`, `launch`, `cancel`, `results`, `purchases`, `status`, `health` and
`pipeline-check` talk to AWS. The other commands never read AWS settings (profile, config
and credentials files), so a broken or missing profile cannot stop them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
    PartialCredentialsError,
    SSOError,
    TokenRetrievalError,
)

from novapod import review
from novapod.capacity import (
    capacity_plan_json,
    extension,
    render_gantt,
    render_table,
    split_advice,
    svg,
)
from novapod.capacity.naming import training_plan_name
from novapod.config import (
    ConfigError,
    NovapodConfig,
    is_pipeline_file,
    json_schema,
    load_config,
    load_pipeline,
)
from novapod.config.loading import validation_time
from novapod.constructs.handler_core import ledger, values
from novapod.constructs.training_plan.handler import decisions, offerings
from novapod.nova import cancel, launch, render, results
from novapod.nova.catalog import CatalogError
from novapod.operate import aws_session, destroy, health, pipeline_check, purchases
from novapod.operate.status import assess as status_assess
from novapod.operate.status import collect as status_collect
from novapod.operate.status import render as status_render
from novapod.operate.status import watch as status_watch

EXIT_OK = 0
EXIT_INVALID = 2
EXIT_AWS = 1
EXIT_GATE = 3  # `review --fail-on`: a named gate tripped (1 stays a crash or an AWS error)
EXIT_ATTENTION = status_assess.EXIT_ATTENTION  # `status`: something needs a human
CONFIG_VARIABLE = "NOVAPOD_CONFIG"


class _NoConfigError(Exception):
    """No file given and NOVAPOD_CONFIG unset."""


def _config_path(args: argparse.Namespace) -> tuple[str, str]:
    """The config file to read and where its name came from (for messages)."""
    if args.config:
        return args.config, ""
    from_environment = os.environ.get(CONFIG_VARIABLE, "").strip()
    if from_environment:
        return from_environment, f" (from {CONFIG_VARIABLE})"
    raise _NoConfigError(
        f"novapod {args.command}: no config file: name one (novapod {args.command} "
        f"config/my-env.yaml) or set {CONFIG_VARIABLE}"
    )


def _load(args: argparse.Namespace) -> NovapodConfig:
    path, _ = _config_path(args)
    return load_config(path)


def _look(path: str) -> NovapodConfig:
    """The config for `plan`, `offerings` and `recipes`, which look before anyone
    approves: they print the names to approve and the prices, so a missing, `true` or
    stale `approve` does not stop them (validate, synthesis and deploy still refuse it)."""
    return load_config(path, approvals=False)


def _validate(args: argparse.Namespace) -> int:
    path, origin = _config_path(args)
    if is_pipeline_file(path):
        pipeline = load_pipeline(path)
        for deployment in pipeline.deployments:
            for warning in deployment.config.warnings():
                print(f"{deployment.path}: warning: {warning}", file=sys.stderr)
        names = ", ".join(d.config.name for d in pipeline.deployments)
        print(f"{path}{origin}: valid (pipeline {pipeline.spec.name}, environments {names})")
        return EXIT_OK
    config = load_config(path)
    for warning in config.warnings():
        print(f"{path}: warning: {warning}", file=sys.stderr)
    print(f"{path}{origin}: valid (environment {config.name}, region {config.region})")
    return EXIT_OK


def _compliance_report(args: argparse.Namespace) -> int:
    from novapod.compliance import report as compliance_report  # noqa: PLC0415 - loads the CDK

    def run(out_dir: Path) -> int:
        found = []
        for assembly, prefix in compliance_report.synthesize(
            compliance_report.shipped_configs(), out_dir
        ):
            found += compliance_report.acknowledgements(assembly, prefix)
        sys.stdout.write(compliance_report.render(found))
        return EXIT_OK

    if args.synth_dir:
        return run(Path(args.synth_dir))
    with tempfile.TemporaryDirectory(prefix="novapod-compliance-") as scratch:
        return run(Path(scratch))


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(json_schema(), indent=2, sort_keys=False))
    return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    path, _ = _config_path(args)
    config = _look(path)
    for field, sentence in config.unapproved():  # what validate and synthesis will refuse
        print(f"{path}: not approved yet: {field}: {sentence}", file=sys.stderr)
    plan = config.capacity_plan()
    if args.gantt:
        print(render_gantt(plan), end="")
        return EXIT_OK
    if args.format:
        picture = svg.render_html if args.format == "html" else svg.render_svg
        sys.stdout.write(picture(plan, config.name))
        return EXIT_OK
    names = config.purchase_names(plan)
    advice = split_advice(plan)  # advice only: the config is never changed
    if args.json:
        print(json.dumps(capacity_plan_json(plan, names, advice), indent=2))
    else:
        print(render_table(plan, names, advice))
        adopted = [spec for spec in config.capacity.training_plans if spec.adopted]
        if adopted:
            print("\nAdopted plans (described and checked at deploy, never bought)")
            for spec in adopted:
                size = f"{spec.instance_count} x {spec.instance_type}"
                print(f"{spec.name}: {spec.existing_arn} ({size})")
        extended = extension.extension_lines(config.name, config.training_plan_requests())
        if extended:
            print("\nExtensions (bought once per approval by the plan's custom resource)")
            print("\n".join(extended))
    return EXIT_OK


def _recipes(args: argparse.Namespace) -> int:
    """Write every job's recipe and launch spec, and the index, under --out (offline)."""
    path, _ = _config_path(args)
    config = _look(path)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        print(
            f"novapod recipes: --out {out} is a file, not a directory; name a directory "
            "(it is created if missing)",
            file=sys.stderr,
        )
        return EXIT_INVALID
    try:
        files = render.bundle(config)
    except CatalogError as error:  # validation refuses these first; a last guard
        raise ConfigError([("jobs", str(error))], path) from None
    blocked = [out / name for name in files if (out / name).is_dir()]
    if blocked:
        print(
            f"novapod recipes: {blocked[0]} is a directory where the recipes write a file; "
            "move it or choose another --out",
            file=sys.stderr,
        )
        return EXIT_INVALID
    for name, text in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        # Bytes, not text mode: the same config gives the same bytes on every platform.
        target.write_bytes(text.encode("utf-8"))
    index = json.loads(files["index.json"])
    jobs = index["jobs"]
    launchable = sum(1 for job in jobs if job["launch"] is not None)
    print(
        f"{len(jobs)} job(s), {launchable} launchable: wrote {len(files)} files under {out}; "
        f"index {out / 'index.json'}"
    )
    for job in jobs:
        if job["launch"] is None:
            print(f"{job['job']} ({job['technique']}) is not launchable: {job['not_launchable']}")
    return EXIT_OK


def _offerings(args: argparse.Namespace) -> int:
    """Read-only: the search, filter and choice the TrainingPlan handler would make."""
    path, _ = _config_path(args)
    config = _look(path)
    requests = {r.name: r for r in config.capacity_plan().training_plans}
    explicit = {spec.name: spec for spec in config.capacity.training_plans}
    for listed, request in config.training_plan_requests():
        requests.setdefault(listed.name, request)
    if not requests:
        raise ConfigError([("capacity", "no jobs or training plans to search offerings for")], path)
    name = args.plan or (next(iter(requests)) if len(requests) == 1 else None)
    if name is None or name not in requests:
        known = ", ".join(requests)
        where = f"--plan {name}: no such plan" if name else "--plan: several plans"
        raise ConfigError([("", f"{where}; choose one of {known}")], path)
    request = requests[name]
    spec = explicit.get(name)
    if spec is not None and spec.adopted:
        print(f"training plan {name} is adopted from {spec.existing_arn}; nothing to search")
        return EXIT_OK
    search = decisions.OfferingRequest(
        instance_type=request.instance_type,
        instance_count=request.instance_count,
        duration_hours=request.duration_hours,
        start_time_after=values.as_utc(request.start_after),
        end_time_before=values.as_utc(request.end_before),
        target_resources=tuple(request.target_resources),
        choice_policy=spec.choice if spec else "cheapest",
        subnet_ids_by_zone_id=_our_zones(config),
        # As the deploy does: only offerings priced in the fee cap's currency compete.
        currency=spec.purchase.currency if spec and spec.purchase else None,
    )
    sagemaker, ec2 = _aws_clients(config, "offerings", "sagemaker", "ec2")
    try:
        found = offerings.find(sagemaker, ec2, search)
    except (BotoCoreError, ClientError) as error:
        raise _aws_failed("offerings", error, "the search failed") from None
    print(f"training plan {name}: {search.describe()}, zones {', '.join(config.network.zone_ids)}")
    print(
        f"{len(found.offerings)} offered, {len(found.candidates)} fit the request in one of "
        "our zones"
    )
    for offering_id, reasons in found.skipped:
        print(f"skipped {offering_id}: {'; '.join(reasons)}")
    chosen_id = (found.chosen or {}).get("TrainingPlanOfferingId")
    rows = [("", "offering", "upfront fee", "currency", "zone", "zone id", "start", "end")]
    for offering in found.candidates:
        capacity = offering.get("ReservedCapacityOfferings", [{}])
        rows.append(
            (
                "*" if offering.get("TrainingPlanOfferingId") == chosen_id else "",
                str(offering.get("TrainingPlanOfferingId", "?")),
                str(offering.get("UpfrontFee", "?")),
                str(offering.get("CurrencyCode", "?")),
                str(offering.get("AvailabilityZone", "?")),
                str(offering.get("AvailabilityZoneId", "?")),
                values.iso(capacity[0].get("StartTime")),
                values.iso(capacity[-1].get("EndTime")),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    if found.chosen is None:
        print("nothing would be bought: no offering fits our zones")
        return EXIT_OK
    print(_offerings_verdict(config, request, spec, found, chosen_id, search.choice_policy))
    return EXIT_OK


def _offerings_verdict(  # noqa: PLR0917 - what the verdict reads
    config: NovapodConfig,
    request: Any,
    spec: Any,
    found: Any,
    chosen: str | None,
    policy: str,
) -> str:
    """The last line of `novapod offerings`: what a deploy would do with the choice."""
    purchase = spec.purchase if spec else None
    plan_name = training_plan_name(config.name, request)
    if purchase is None or not purchase.approve:
        return (
            f"would choose {chosen} ({policy}); nothing is bought until the plan "
            f"is in capacity.training_plans with purchase.approve: {plan_name} and "
            "max_upfront_fee"
        )
    refusal = decisions.check_fee_cap(
        found.chosen, purchase.max_upfront_fee, purchase.currency, candidates=found.candidates
    )
    if purchase.approve != plan_name:  # `true`, or a name from before an edit
        return (
            f"would choose {chosen} ({policy}; {refusal or 'within the cap'}); nothing is "
            f"bought until purchase.approve is {plan_name} (it is "
            f"{str(purchase.approve).lower()})"
        )
    return refusal or f"a deploy would buy {chosen} ({policy}, within the cap)"


def _aws_clients(config: NovapodConfig, command: str, *services: str) -> list[Any]:
    """Clients in the config's region with the caller's credentials (environment, profile).
    A missing profile or a broken ~/.aws/config surfaces here as botocore's own sentence,
    without a traceback."""
    try:
        session = aws_session.session(config.region)
        made = [session.client(service) for service in services]
    except BotoCoreError as error:
        raise _AwsError(
            f"novapod {command}: cannot use your AWS settings: {error}; fix AWS_PROFILE or "
            "the AWS config and credentials files (aws configure list shows what is used)"
        ) from None
    _LAST_CALL.clear()
    for client in made:
        # Which call a failure below belongs to: botocore's credential errors do not say.
        client.meta.events.register("before-call", _record_call)
    return made


# Credentials are looked up when the first call is signed, so their failures surface as
# a failed call whose message names neither the call nor what would fix it.
_CREDENTIAL_ERRORS = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    TokenRetrievalError,
    SSOError,
)
# IAM actions whose names differ from the API operation's (the rest are service:Operation).
_IAM_ACTIONS = {
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "HeadBucket"): "s3:ListBucket",
    ("monitoring", "GetMetricData"): "cloudwatch:GetMetricData",  # signed as monitoring
}
_LAST_CALL: list[tuple[str, str]] = []


def _record_call(model: Any, **_: Any) -> None:
    prefix = model.service_model.signing_name or model.service_model.endpoint_prefix
    _LAST_CALL[:] = [(prefix, model.name)]


def _aws_failed(command: str, error: Exception, what: str = "an AWS call failed") -> _AwsError:
    """The one sentence of a failed AWS call; for missing or unusable credentials, the call,
    the permission it needs and how to provide them."""
    if isinstance(error, _CREDENTIAL_ERRORS):
        call = "its first AWS call"
        if _LAST_CALL:
            service, operation = _LAST_CALL[0]
            action = _IAM_ACTIONS.get((service, operation), f"{service}:{operation}")
            call = f"{operation} (which needs {action})"
        return _AwsError(
            f"novapod {command}: {call} has no usable AWS credentials ({error}); provide "
            "credentials allowed to make it: AWS_PROFILE=NAME (after aws sso login for an SSO "
            "profile) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then check them with "
            "aws sts get-caller-identity"
        )
    return _AwsError(f"novapod {command}: {what}: {error}")


class _AwsError(Exception):
    """An AWS call failed (credentials, permissions, throttling): exit 1."""


def _launch(args: argparse.Namespace) -> int:
    if args.config is None and args.job.endswith((".yaml", ".yml")):
        # argparse gives a lone argument to JOB; a file name there means JOB is missing.
        raise launch.LaunchError(
            f"name the job to launch after the config: novapod launch {args.job} JOB"
        )
    config = _load(args)
    if launch.find_job(config, args.job).on_training_job:
        return _launch_training_job(args, config)
    cfn, s3 = _aws_clients(config, "launch", "cloudformation", "s3")
    try:
        prepared = launch.prepare(config, args.job, cfn=cfn, s3=s3, force=args.force)
    except (BotoCoreError, ClientError) as error:
        raise _aws_failed("launch", error) from None
    for note in prepared.notes:
        print(f"# {note}", file=sys.stderr)
    if not args.execute:
        for argv in prepared.commands:
            print(shlex.join(argv))
        return EXIT_OK
    executable = launch.hyperpod_executable(Path(__file__).resolve().parent.parent)
    if executable is None:
        print(f"novapod launch: {launch.NOT_INSTALLED}", file=sys.stderr)
        return EXIT_INVALID
    for argv in prepared.commands:
        print(f"+ {shlex.join(argv)}", file=sys.stderr)
    sys.stdout.flush()
    outcome = launch.execute(prepared.commands, executable, sys.stdout)
    if outcome.failed is not None:
        print(
            f"novapod launch: `{shlex.join(outcome.failed[:2])}` failed with exit status "
            f"{outcome.status}; the commands after it were not run",
            file=sys.stderr,
        )
        return outcome.status
    if outcome.run is None:
        print(
            f"novapod launch: started job {prepared.job}, but start-job printed no NAME: "
            f"line; find its run under {prepared.output}",
            file=sys.stderr,
        )
    else:
        print(
            f"started job {prepared.job} as run {outcome.run}: outputs in "
            f"{prepared.output}{outcome.run}/"
        )
    return EXIT_OK


def _launch_training_job(args: argparse.Namespace, config: NovapodConfig) -> int:
    """A training-job job: print its resolved CreateTrainingJob request, or with --run
    upload its recipe and start it once (a repeat starts nothing and says so)."""
    job = launch.find_job(config, args.job)
    if job not in config.training_jobs:
        raise launch.LaunchError(
            f"job {job.name} runs as a training job in the environment's VPC, with the role "
            "the nova-base stack creates, which needs a hyperpod section; add "
            "hyperpod.restricted_instance_groups, or run the job elsewhere"
        )
    cfn, s3, sagemaker, ec2 = _aws_clients(
        config, "launch", "cloudformation", "s3", "sagemaker", "ec2"
    )
    try:
        prepared = launch.prepare_training_job(
            config, job, cfn=cfn, s3=s3, sagemaker=sagemaker, ec2=ec2, force=args.force
        )
        for note in prepared.notes:
            print(f"# {note}", file=sys.stderr)
        if prepared.running is not None:
            running = prepared.running
            print(
                f"job {job.name} is already running as training job {running.name} "
                f"({_job_status(running)}); nothing started"
            )
            return EXIT_OK
        recipe_uri = f"s3://{prepared.recipe_bucket}/{prepared.recipe_key}"
        if not args.execute:
            print(f"# recipe: {recipe_uri} (uploaded by --run)", file=sys.stderr)
            print(json.dumps(prepared.request, indent=2, sort_keys=True))
            return EXIT_OK
        print(f"+ PutObject {recipe_uri}", file=sys.stderr)
        print(f"+ CreateTrainingJob {prepared.request['TrainingJobName']}", file=sys.stderr)
        started = launch.start_training_job(prepared, s3=s3, sagemaker=sagemaker)
    except (BotoCoreError, ClientError) as error:
        raise _aws_failed("launch", error) from None
    if not started.started:
        # SageMaker refused the name: our own first attempt (its answer lost) or another
        # launch of this run made it; which cannot be told, and either way one job runs.
        print(
            f"job {job.name} runs as training job {started.name} ({_job_status(started)}), "
            "started by this launch (an answer lost, the retry refused by its name) or by "
            "another at the same time; no second job started"
        )
        return EXIT_OK
    print(
        f"started job {job.name} as training job {started.name} (run {prepared.run} of "
        f"{prepared.runs}): outputs in {prepared.output}{started.name}/"
    )
    return EXIT_OK


def _job_status(started: Any) -> str:
    """A training job's status as DescribeTrainingJob shows it: InProgress (Training)."""
    return f"{started.status} ({started.secondary})" if started.secondary else started.status


def _cancel(args: argparse.Namespace) -> int:
    if args.config is None and args.job.endswith((".yaml", ".yml")):
        raise launch.LaunchError(
            f"name the job to cancel after the config: novapod cancel {args.job} JOB"
        )
    config = _load(args)
    (cfn,) = _aws_clients(config, "cancel", "cloudformation")
    try:
        prepared = cancel.prepare(config, args.job, args.run_name, cfn=cfn)
    except (BotoCoreError, ClientError) as error:
        raise _aws_failed("cancel", error) from None
    if args.dry_run:
        print(shlex.join(prepared.connect))
        if prepared.run is None:
            print(shlex.join(prepared.list_command()))
            print(shlex.join(prepared.uninstall_command("RUN")))
            print("# RUN: the one run helm list shows (or name it with --run)", file=sys.stderr)
        else:
            print(shlex.join(prepared.uninstall_command(prepared.run)))
        return EXIT_OK
    hyperpod = launch.hyperpod_executable(Path(__file__).resolve().parent.parent)
    if hyperpod is None:
        print(f"novapod cancel: {launch.NOT_INSTALLED}", file=sys.stderr)
        return EXIT_INVALID
    helm = cancel.helm_executable()
    if helm is None:
        print(f"novapod cancel: {cancel.NO_HELM}", file=sys.stderr)
        return EXIT_INVALID
    print(f"+ {shlex.join(prepared.connect)}", file=sys.stderr)
    sys.stdout.flush()
    outcome = cancel.execute(prepared, hyperpod, helm, sys.stdout)
    if outcome.failed is not None:
        print(
            f"novapod cancel: `{shlex.join(outcome.failed[:2])}` failed with exit status "
            f"{outcome.status}; job {prepared.job} was not cancelled",
            file=sys.stderr,
        )
        return outcome.status
    print(
        f"cancelled job {prepared.job}: run {outcome.run} uninstalled from namespace "
        f"{prepared.namespace} with every object its chart created; its outputs stay in S3"
    )
    return EXIT_OK


def _results(args: argparse.Namespace) -> int:
    config = _load(args)
    if not results.evaluation_jobs(config):
        raise launch.LaunchError(
            "the config has no evaluation jobs; add a job with technique: evaluation"
        )
    results.evaluation_jobs(config, args.job)  # refuses a name that is no evaluation
    cfn, s3 = _aws_clients(config, "results", "cloudformation", "s3")
    try:
        names = launch.deployed_names(cfn, config, ["ArtifactsBucket"])
        found = results.collect(
            config, s3=s3, artifacts_bucket=names["ArtifactsBucket"], job=args.job
        )
    except (BotoCoreError, ClientError) as error:
        raise _aws_failed("results", error) from None
    if args.json:
        print(results.results_json(config, found))
    else:
        text = results.render_tables(found)
        if text:
            print(text)
        for _, sentence in found.missing:
            print(sentence)
    return EXIT_OK if found.tables else EXIT_AWS


def _purchases(args: argparse.Namespace) -> int:
    config = _load(args)
    cfn, dynamodb = _aws_clients(config, "purchases", "cloudformation", "dynamodb")
    try:
        table = launch.deployed_names(cfn, config, ["PurchaseLedger"])["PurchaseLedger"]
    except (BotoCoreError, ClientError) as error:
        raise _aws_failed("purchases", error) from None
    book = ledger.Ledger(dynamodb, table, config.name)
    try:
        if args.release:
            released = purchases.release(book, args.release, force=args.force)
            print(f"released {released.key}: {ledger.describe(released)}")
            return EXIT_OK
        entries = book.entries()
    except ledger.LedgerError as error:
        raise _AwsError(f"novapod purchases: {error}") from None
    except purchases.PurchasesError as error:
        print(f"novapod purchases: {error}", file=sys.stderr)
        return EXIT_INVALID
    except ledger.ClaimConflictError:
        print(
            f"novapod purchases: {args.release} changed while it was released; nothing was "
            "changed, read it again",
            file=sys.stderr,
        )
        return EXIT_AWS
    if args.json:
        print(purchases.purchases_json(config.name, table, entries))
    else:
        print(purchases.render_text(config.name, table, entries))
    return EXIT_OK


# `status` reads the time and waits between `--watch` rounds through these (tests replace them).
_status_now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731
_status_sleep: Callable[[float], None] = time.sleep


def _status(args: argparse.Namespace) -> int:
    path, _ = _config_path(args)
    # As `plan` does: an edit not approved yet still shows what is deployed (as drift); and
    # an environment whose plans ran out (their windows ended) is still read: status buys
    # nothing, and that is when what is left is worth seeing.
    config = load_config(path, approvals=False, windows=False)
    cfn, sagemaker, dynamodb, s3, eks, sts, cloudwatch = _aws_clients(
        config,
        "status",
        "cloudformation",
        "sagemaker",
        "dynamodb",
        "s3",
        "eks",
        "sts",
        "cloudwatch",
    )
    ending = timedelta(hours=args.ending_within)

    def one_round() -> tuple[str, int]:
        try:
            facts = status_collect.collect(
                config,
                path,
                cloudformation=cfn,
                sagemaker=sagemaker,
                dynamodb=dynamodb,
                s3=s3,
                eks=eks,
                sts=sts,
                cloudwatch=cloudwatch,
                now=_status_now(),
            )
        except (BotoCoreError, ClientError) as error:
            raise _aws_failed("status", error) from None
        except ledger.LedgerError as error:
            raise _AwsError(f"novapod status: {error}") from None
        report = status_assess.assess(facts, ending_within=ending)
        if args.json:
            return status_render.to_json(report, compact=bool(args.watch)), report.exit_status
        return status_render.to_text(report), report.exit_status

    if not args.watch:
        text, code = one_round()
        print(text)
        return code
    return status_watch.watch(
        one_round,
        args.watch,
        sleep=_status_sleep,
        out=sys.stdout,
        redraw=not args.json and sys.stdout.isatty(),
    )


# `health --wait` reads the time and waits between its polls through these (tests replace them).
_health_now: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731
_health_sleep: Callable[[float], None] = time.sleep
HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity", "MultiNodeTrainingValidation")


def _health(args: argparse.Namespace) -> int:
    path, _ = _config_path(args)
    config = load_config(path, approvals=False, windows=False)
    try:
        return _health_run(args, path, config)
    except health.HealthError as error:
        if args.json:  # the refusal as a document too; the sentence still goes to stderr
            print(health.refusal_json(config, args.group, str(error), waited=args.wait))
        raise


def _health_run(args: argparse.Namespace, path: str, config: NovapodConfig) -> int:
    health.check_group(config, args.group)  # an unknown group needs no AWS call
    asked = [c.strip() for c in (args.checks or "").split(",") if c.strip()]
    unknown = [c for c in asked if c not in HEALTH_CHECKS]
    if unknown:
        raise health.HealthError(
            f"--checks: {unknown[0]} is not a deep health check; choose from "
            + ", ".join(HEALTH_CHECKS)
        )
    sagemaker, eks, sts = _aws_clients(config, "health", "sagemaker", "eks", "sts")
    try:
        found = health.target(config, sagemaker, args.group)
        checks, notes = health.checks_for(found, asked)
        checking = health.already_checking(found)  # --force or not: results would mix
        if checking is not None:
            raise health.HealthError(checking)
        if args.force:
            notes.append("--force: not checked whether a job runs on the group")
        elif not health.has_jobs(config):
            notes.append(health.NO_JOBS_NOTE)
        else:
            refusal = health.busy(config, found, eks=eks, sts=sts, config_path=path)
            if refusal is not None:
                raise health.HealthError(refusal)
        try:
            health.start(sagemaker, found, checks)
        except ClientError as error:
            sentence = health.refused(found, error)
            if sentence is not None:
                raise _AwsError(f"novapod health: {sentence}") from None
            raise
    except (BotoCoreError, ClientError) as error:
        raise _aws_failed("health", error) from None
    started = _health_now()
    # What the nodes were before the start: a node already in Failure is not this check's.
    tracker = health.Tracker.of(found, started)
    timed_out = _health_follow(args, sagemaker, found, checks, notes, tracker)
    render = health.to_json if args.json else health.render_text
    print(render(found, checks, started, tracker, notes, waited=args.wait, timed_out=timed_out))
    return health.exit_status(tracker, waited=args.wait)


def _health_follow(  # noqa: PLR0917 - the started check and what it is followed with
    args: argparse.Namespace,
    sagemaker: Any,
    found: health.Target,
    checks: Sequence[str],
    notes: Sequence[str],
    tracker: health.Tracker,
) -> bool:
    """Poll the group's nodes once, and with --wait until each has a result or the wait
    times out (True). A poll that fails prints what was seen so far, then exits 1."""
    started = tracker.started_at or _health_now()
    try:
        tracker.observe(health.group_nodes(sagemaker, found.cluster, found.group), started)
        if args.wait:
            deadline = started + timedelta(minutes=args.timeout)
            while not tracker.done:
                if _health_now() >= deadline:
                    return True
                _health_sleep(args.interval)
                nodes = health.group_nodes(sagemaker, found.cluster, found.group)
                tracker.observe(nodes, _health_now())
    except (BotoCoreError, ClientError) as error:
        # The check runs on: show what was seen so far (text only: the JSON document's
        # exit_status would not be the command's), then the failed call.
        if not args.json:
            print(
                health.render_text(
                    found,
                    checks,
                    started,
                    tracker,
                    notes,
                    waited=args.wait,
                    timed_out=False,
                    stopped="reading the nodes failed",
                )
            )
        seen = health.summary(tracker, waited=args.wait, timed_out=False, stopped="it failed")
        raise _aws_failed(
            "health",
            error,
            f"the check started at {values.iso(started)}, but reading its progress failed"
            + (f" (so far: {seen})" if args.json else ""),
        ) from None
    return False


def _add_health(commands: Any, config_help: str) -> None:
    health_cmd = commands.add_parser(
        "health",
        help="start HyperPod's deep health check on a group's nodes and report each node",
        description=(
            "Start HyperPod's on-demand deep health check (SageMaker StartClusterHealthCheck) "
            "on every node of instance group GROUP: InstanceStress (each node's GPUs or "
            "Trainium devices, memory, EFA) and, on a p or trn group of two nodes or more, "
            "InstanceConnectivity (NCCL or NCCOM across nodes). Refuses while a job runs on "
            "the group (a pod of the jobs' namespace on its nodes, or a run of a job of the "
            "config on it; no other namespace is looked at), since checked nodes take no "
            "workload, unless --force. Then shows each node's status; --wait polls until "
            "every node has a result."
        ),
        epilog=(
            "Exit 0 once the check started (with --wait: every node passed); 4 when a node "
            "failed (HyperPod reboots or replaces it with node recovery Automatic) or was in "
            "Failure before the check started, or --wait timed out first or ended with a node "
            "whose result it could not see; 2 for an unknown group, a group without nodes or "
            "of CPU instances, a cluster not deployed, or a refusal (a job runs; or the "
            "cluster's API cannot tell, outside the VPC); 1 when an AWS call fails "
            "(StartClusterHealthCheck refusing to start, as while a check runs; a poll that "
            "fails during --wait prints the nodes seen so far first). Needs "
            "sagemaker:StartClusterHealthCheck (the HealthCheckPolicyArn output), "
            "DescribeCluster and ListClusterNodes (StatusPolicyArn), and for the refusal "
            "eks:DescribeCluster and an access entry of nova.scientists. --json prints the "
            "check, each node's result or the refusal (docs/reference/health.schema.json)."
        ),
    )
    health_cmd.add_argument("config", nargs="?", help=config_help)
    health_cmd.add_argument("--group", required=True, help="the instance group to check")
    health_cmd.add_argument(
        "--wait", action="store_true", help="poll until every node has a result"
    )
    health_cmd.add_argument(
        "--force", action="store_true", help="start even though a job runs on the group"
    )
    health_cmd.add_argument(
        "--checks",
        metavar="CHECKS",
        help=(
            f"comma-separated checks to run; choose from {', '.join(HEALTH_CHECKS)}; default "
            "InstanceStress (and InstanceConnectivity on p/trn groups of two or more nodes)"
        ),
    )
    health_cmd.add_argument(
        "--timeout",
        type=_positive("minutes"),
        default=240.0,
        metavar="MINUTES",
        help="with --wait: stop waiting after MINUTES (default: 240)",
    )
    health_cmd.add_argument(
        "--interval",
        type=_positive("seconds"),
        default=60.0,
        metavar="SECONDS",
        help="with --wait: seconds between polls (default: 60)",
    )
    health_cmd.add_argument(
        "--json", action="store_true", help="print JSON (docs/reference/health.schema.json)"
    )
    health_cmd.set_defaults(run=_health)


def _positive(unit: str) -> Callable[[str], float]:
    """An argparse type: a positive, finite number of `unit` (its error names the unit)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of {unit}")
        return value

    return parse


def _add_status(commands: Any, config_help: str) -> None:
    status_cmd = commands.add_parser(
        "status",
        help="what the deployed environment runs and pays for: plans, groups, drift (reads only)",
        description=(
            "Read the deployed environment with your AWS credentials and compare it with the "
            "config: each training plan (status, window, time to its end, total / free / "
            "in-use / unhealthy instances, fee paid from the purchase ledger, extensions, "
            "purchases awaiting reconciliation), each HyperPod instance group (desired and "
            "current nodes, unhealthy nodes, its plan and whether that plan is Active), the "
            "instance-hours each plan reserved so far and, with the scheduled check, the "
            "share of them in use (its CloudWatch metrics), each "
            "job (its runs from the Kubernetes API and S3, against the plan's schedule) and "
            "the drift from the config, each with the command that brings it back. Makes "
            "only Describe, List, Query, GetMetricData and Kubernetes GET calls."
        ),
        epilog=(
            "Exit 0 when healthy; 4 when something needs attention (a failed or degraded "
            "group, unhealthy nodes, a failed plan, a plan ending within --ending-within "
            "hours, a purchase whose outcome is unknown, missing nodes, reserved instances "
            "idle while their plan is Active, a failed run, a job late for its plan's schedule "
            "or at risk of outliving the plan, drift); 1 when an AWS call fails; 2 for a "
            "config error or an undeployed storage stack. --json prints the report as JSON "
            "(docs/reference/status.schema.json); with --watch, one document per line. Needs "
            "cloudformation:DescribeStacks on the storage stack, dynamodb:Query on the "
            "purchase ledger and kms:Decrypt on the environment's key, "
            "sagemaker:DescribeTrainingPlan and DescribeTrainingPlanExtensionHistory on the "
            "plans, sagemaker:DescribeCluster and ListClusterNodes on the cluster; with the "
            "scheduled check, cloudwatch:GetMetricData; with jobs, "
            "eks:DescribeCluster and s3:ListBucket on the jobs' outputs, and an access entry "
            "of nova.scientists for their runs in the cluster (without it, or from outside "
            "the VPC, the runs come from S3 and the report says why)."
        ),
    )
    status_cmd.add_argument("config", nargs="?", help=config_help)
    status_cmd.add_argument("--json", action="store_true", help="print JSON (the contract)")
    status_cmd.add_argument(
        "--watch",
        type=_positive("seconds"),
        metavar="SECONDS",
        help="redraw every SECONDS until interrupted (Ctrl-C); exit with the last status",
    )
    status_cmd.add_argument(
        "--ending-within",
        type=_positive("hours"),
        default=status_assess.DEFAULT_ENDING_WITHIN.total_seconds() / 3600,
        metavar="HOURS",
        help="an Active plan ending within HOURS needs attention (default: 72)",
    )
    status_cmd.set_defaults(run=_status)


def _destroy_plan(args: argparse.Namespace) -> int:
    """Offline: the sequence that destroys the config's environment."""
    path, _ = _config_path(args)
    if is_pipeline_file(path):
        raise ConfigError(
            [
                (
                    "",
                    "a pipeline file deploys its environments through the pipeline's stages; "
                    "run novapod destroy-plan on each environment file it lists",
                )
            ],
            path,
        )
    plan = destroy.destroy_plan(destroy.load(path), path, now=validation_time(path))
    if args.json:
        print(json.dumps(destroy.plan_json(plan), indent=2))
    else:
        sys.stdout.write(destroy.render_text(plan))
    return EXIT_OK


def _review(args: argparse.Namespace) -> int:
    gates = [g.strip() for g in (args.fail_on or "").split(",") if g.strip()]
    unknown = [g for g in gates if g not in review.GATES]
    if unknown:
        raise review.ReviewError(
            f"--fail-on: unknown gate {unknown[0]}; choose from {', '.join(review.GATES)}"
        )
    report = review.build(Path(args.base), Path(args.head))
    if args.format == "json":
        print(json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        sys.stdout.write(review.render(report))
    tripped = [g for g in gates if report["gates"][g]]
    if tripped:
        print(f"novapod review: tripped --fail-on {','.join(tripped)}", file=sys.stderr)
        return EXIT_GATE
    return EXIT_OK


def _our_zones(config: NovapodConfig) -> dict[str, tuple[str, ...]]:
    """Zone ID -> subnet IDs; subnets of a VPC novapod creates do not exist yet."""
    existing = config.network.existing_vpc
    if existing is not None:
        out: dict[str, tuple[str, ...]] = {}
        for subnet in existing.private_subnets:
            out[subnet.zone_id] = (*out.get(subnet.zone_id, ()), subnet.subnet_id)
        return out
    return {zone: ("(created at deploy)",) for zone in config.network.zone_ids}


def _add_purchases(commands: Any, config_help: str) -> None:
    purchases_cmd = commands.add_parser(
        "purchases",
        help="list the purchase ledger: what was bought, when, for how much",
        description=(
            "Read the environment's purchase ledger (the DynamoDB table named by the "
            "storage stack's PurchaseLedgerTableName output) with your AWS credentials: "
            "every training plan, extension and Bedrock import, its state, fee, approval "
            "and earlier attempts; items whose outcome is unknown are listed first."
        ),
        epilog=(
            "Listing only reads. --release KEY (the one write) marks a claimed, calling or "
            "ambiguous item released, so a deploy may buy it again: only after checking with "
            "AWS that it was not bought (the deploy's failure message names the command to "
            "check); a calling or ambiguous item younger than 30 minutes needs --force. Needs "
            "dynamodb:GetItem and dynamodb:Query (and PutItem for --release) on the table, "
            "and kms:Decrypt on the environment's key (the table is encrypted with it)."
        ),
    )
    purchases_cmd.add_argument("config", nargs="?", help=config_help)
    purchases_cmd.add_argument("--json", action="store_true", help="print JSON (the contract)")
    purchases_cmd.add_argument(
        "--release", metavar="KEY", help="release an item checked not bought (e.g. plan#NAME)"
    )
    purchases_cmd.add_argument(
        "--force",
        action="store_true",
        help="with --release: release a calling or ambiguous item younger than 30 minutes",
    )
    purchases_cmd.set_defaults(run=_purchases)


def _add_destroy_plan(commands: Any, config_help: str) -> None:
    destroy_cmd = commands.add_parser(
        "destroy-plan",
        help="print the exact sequence that destroys the environment and what stays (offline)",
        description=(
            "Print, for this config, the commands that remove its environment: first what "
            "to save (the purchase record, the names of what stays), then each stack's "
            "`npx cdk destroy --exclusively`, one at a time and each before the stacks it "
            "uses, with termination protection turned off before the storage stack, then "
            "every resource that outlives the stacks, whether it keeps costing, and the "
            "aws commands that remove it. Reads no AWS settings and calls nothing."
        ),
        epilog=(
            "Lines starting with # say what the next commands do; UPPER_CASE words are "
            "placeholders the comment above explains. Exit 0 with the plan, 2 for a config "
            "that does not validate (approvals and ended plan windows aside: a destroy buys "
            "nothing) or a pipeline file. See docs/destroying.md."
        ),
    )
    destroy_cmd.add_argument("config", nargs="?", help=config_help)
    destroy_cmd.add_argument("--json", action="store_true", help="print JSON (the contract)")
    destroy_cmd.set_defaults(run=_destroy_plan)


def _add_cancel(commands: Any, config_help: str) -> None:
    cancel_cmd = commands.add_parser(
        "cancel",
        help="stop a job's run: helm uninstall of its release (every technique, PPO too)",
        description=(
            "Cancel a run of JOB: hyperpod connect-cluster, then helm uninstall of the run's "
            "Helm release in the jobs' namespace, which removes every object its chart "
            "created (PPO's four PyTorchJobs and actor-generation StatefulSet included, "
            "which `hyperpod cancel-job` leaves running). Without --run, helm list finds "
            "the job's run; with several, name one. Needs the HyperPod CLI and Helm, AWS "
            "credentials that can describe the stacks, and a route to the cluster's "
            "private endpoint (inside the VPC, or from eks.private_access_cidrs)."
        ),
        epilog=(
            "Exit 0 once helm uninstalled the run; 2 for an unknown job, a run name that "
            "is not the job's, no run or several runs, or a stack not deployed; 1 when an "
            "AWS call fails; the exit status of connect-cluster or helm when one fails. "
            "The run's outputs in S3 are kept. --dry-run prints the commands instead."
        ),
    )
    cancel_cmd.add_argument("config", nargs="?", help=config_help)
    cancel_cmd.add_argument("job", help="the job's name (jobs[].name)")
    cancel_cmd.add_argument(
        "--run",
        dest="run_name",
        metavar="RUN",
        help="the run (Helm release) to cancel, as `novapod launch --run` printed it",
    )
    cancel_cmd.add_argument(
        "--dry-run", action="store_true", help="print the commands, run nothing"
    )
    cancel_cmd.set_defaults(run=_cancel)


def _add_results(commands: Any, config_help: str) -> None:
    results_cmd = commands.add_parser(
        "results",
        help="evaluation metrics: one table per task, base model vs tuned jobs",
        description=(
            "Read each evaluation job's newest results_*.json from the artifacts bucket "
            "(HyperPod runs and SageMaker training jobs alike) and print one table per task "
            "and dataset: a row per evaluation (the model it tested, from its `from`), a "
            "column per metric (stderr left out). JOB: that evaluation only."
        ),
        epilog=(
            "Exit 0 when at least one evaluation has a result, 1 when none has (or an "
            "AWS call failed), 2 for a config without evaluation jobs or an undeployed "
            "storage stack. Evaluations without a result are listed as such."
        ),
    )
    results_cmd.add_argument("config", nargs="?", help=config_help)
    results_cmd.add_argument("job", nargs="?", help="one evaluation job (default: every one)")
    results_cmd.add_argument(
        "--json", action="store_true", help="machine-readable output (sorted keys)"
    )
    results_cmd.set_defaults(run=_results)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="novapod",
        description="Amazon Nova customization on SageMaker HyperPod, as AWS CDK.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    config_help = f"path to the environment's YAML file (default: ${CONFIG_VARIABLE})"
    validate = commands.add_parser(
        "validate", help="check a config (or a pipeline file); exit 2 on errors"
    )
    validate.add_argument("config", nargs="?", help=config_help)
    validate.set_defaults(run=_validate)
    plan = commands.add_parser(
        "plan", help="size the jobs and the training plans they need (reads only)"
    )
    plan.add_argument("config", nargs="?", help=config_help)
    plan_output = plan.add_mutually_exclusive_group()
    plan_output.add_argument(
        "--json", action="store_true", help="machine-readable output, with each plan's schedule"
    )
    plan_output.add_argument(
        "--gantt", action="store_true", help="each plan's schedule as text bars over its days"
    )
    plan_output.add_argument(
        "--format",
        choices=("svg", "html"),
        help="each plan's schedule as a Gantt chart: a standalone SVG, or an HTML page holding it",
    )
    plan.set_defaults(run=_plan)
    offerings = commands.add_parser(
        "offerings",
        help="search training-plan offerings with your AWS credentials (buys nothing)",
    )
    offerings.add_argument("config", nargs="?", help=config_help)
    offerings.add_argument("--plan", help="training plan name (from `novapod plan`)")
    offerings.set_defaults(run=_offerings)
    _add_purchases(commands, config_help)
    _add_status(commands, config_help)
    _add_health(commands, config_help)
    _add_destroy_plan(commands, config_help)
    recipes = commands.add_parser(
        "recipes", help="write the jobs' Nova recipes, launch specs and index (offline)"
    )
    recipes.add_argument("config", nargs="?", help=config_help)
    recipes.add_argument(
        "--out", required=True, metavar="DIR", help="directory to write (created if missing)"
    )
    recipes.set_defaults(run=_recipes)
    launch_cmd = commands.add_parser(
        "launch",
        help="print (or --run) the HyperPod CLI commands that launch a job",
        description=(
            "Print the HyperPod CLI commands (connect-cluster, start-job) that launch JOB, "
            "with the bucket and cluster names read from the deployed stacks "
            "(CloudFormation DescribeStacks) and, for `from: job:X`, the checkpoint named "
            "by X's newest manifest.json in S3. Needs AWS credentials that can describe "
            "the stacks and list and read the artifacts bucket. A job with runs_on: "
            "training-job prints its CreateTrainingJob request instead, resolved the same "
            "way and with its plan's ARN (DescribeTrainingPlan)."
        ),
        epilog=(
            "For a training job, --run uploads its recipe and starts the job once; while "
            "a run of it is in progress, a repeated launch starts nothing and says so. "
            "--run executes the commands in order with the HyperPod CLI (on PATH, else "
            ".venv-client/bin/hyperpod from `make client`), stops at the first failure "
            "and exits with its status. A job is refused (exit 2) while a job it starts "
            "from (from: job:X) has no manifest.json, or a job it waits for (after:) has "
            "no finished run; --force launches despite the latter. Exit 2 also for an "
            "unknown job, a job HyperPod cannot run, or a stack not deployed; exit 1 when "
            "an AWS call fails. Scientist's path: novapod recipes CONFIG --out DIR (review), "
            "novapod launch CONFIG JOB (check), novapod launch CONFIG JOB --run, then "
            "novapod results CONFIG; novapod cancel CONFIG JOB stops a run."
        ),
    )
    launch_cmd.add_argument("config", nargs="?", help=config_help)
    launch_cmd.add_argument("job", help="the job's name (jobs[].name)")
    launch_cmd.add_argument(
        "--run", dest="execute", action="store_true", help="execute the commands"
    )
    launch_cmd.add_argument(
        "--force",
        action="store_true",
        help="launch even though a job named in after: has no finished run",
    )
    launch_cmd.set_defaults(run=_launch)
    _add_cancel(commands, config_help)
    _add_results(commands, config_help)
    review_cmd = commands.add_parser(
        "review",
        help="what a change to the synthesized stacks does (two cdk.out directories, offline)",
        description=(
            "Compare two cloud assemblies (the cdk.out of the base and of the head) stack by "
            "stack with CDK's diff engine and report, in this order: training plans bought or "
            "removed, fee caps changed and Bedrock imports, stateful resources replaced or "
            "removed, IAM broadening, security-group openings and endpoint changes, then "
            "everything else. "
            "Needs Node.js and `make setup`; no AWS credentials."
        ),
        epilog=(
            "Exit 0 with the report; 3 when a gate named in --fail-on trips (the report is "
            "still printed); 2 for a directory that is not a cloud assembly, an unknown gate, "
            f"or a missing engine. Gates: {', '.join(review.GATES)}."
        ),
    )
    review_cmd.add_argument("--base", required=True, metavar="DIR", help="cdk.out of the base")
    review_cmd.add_argument("--head", required=True, metavar="DIR", help="cdk.out of the head")
    review_cmd.add_argument(
        "--format",
        choices=("markdown", "json"),
        default="markdown",
        help="markdown (a pull-request comment, rendered from the JSON) or json (the contract)",
    )
    review_cmd.add_argument(
        "--fail-on",
        metavar="GATES",
        help="comma-separated gates that make the exit status 3, e.g. "
        "purchase,stateful-replacement,iam-broadening",
    )
    review_cmd.set_defaults(run=_review)
    check = commands.add_parser(
        "pipeline-check",
        help="after a pipeline stage: the HyperPod cluster is InService, the Nova check passed",
    )
    pipeline_check.add_arguments(check)
    check.set_defaults(run=pipeline_check.main)
    schema = commands.add_parser("schema", help="print the config's JSON Schema (for editors)")
    schema.set_defaults(run=_schema)
    report = commands.add_parser(
        "compliance-report",
        help="print the Compliance section of docs/security.md: every acknowledged rule and "
        "its reason",
        description=(
            "Synthesize config/default.yaml and every example with the NIST 800-53 R5 and "
            "HIPAA packs (offline; fails on an unacknowledged finding) and print one table "
            "row per acknowledgement reason, with the cdk-nag and checkov rules it answers."
        ),
    )
    report.add_argument(
        "--synth-dir",
        metavar="DIR",
        help="keep the synthesized assemblies in DIR/<config> (default: a temporary directory)",
    )
    report.set_defaults(run=_compliance_report)
    return parser


def _version() -> str:
    try:
        return metadata.version("novapod")
    except metadata.PackageNotFoundError:  # run from a checkout without `pip install`
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except _NoConfigError as error:
        print(error, file=sys.stderr)
        return EXIT_INVALID
    except ConfigError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_INVALID
    except (launch.LaunchError, review.ReviewError, health.HealthError) as error:
        print(f"novapod {args.command}: {error}", file=sys.stderr)
        return EXIT_INVALID
    except _AwsError as error:
        print(error, file=sys.stderr)
        return EXIT_AWS
    except BrokenPipeError:  # `novapod schema | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
