"""Evaluation results: each evaluation job's newest results file, one table per task.

An evaluation's run writes `<output>/<run>/eval-result/results_<timestamp>.json`, which
the AWS docs also call `result-<timestamp>.json` (both are read, see launch.RESULTS). Its
`results` object holds the metrics: benchmarks under `all`, gen_qa and custom scorers
under a task key such as `custom|gen_qa_gen_qa|0`, each metric with a `*_stderr`
sibling that is left out, as the SageMaker Python SDK does
(aws/sagemaker-python-sdk sagemaker-train common_utils/show_results_utils.py,
_extract_metrics_from_results).

An evaluation on a SageMaker training job (`runs_on: training-job`) writes the same file
below its run folder, the TrainingJobName, in one of two layouts, chosen by the request's
OutputDataConfig.CompressionType (`render.compresses_output`):

- NONE (what novapod sends for evaluations): loose objects
  `<name>/output/output/<evaluation>/eval_results/results_<timestamp>.json`
  (docs.aws.amazon.com/sagemaker/latest/dg/model-customize-evaluation-metrics-formats.html:
  s3://<loc>/<training-job-name>/output/output/<evaluation-job-name>/eval_results/; the
  SDK's show_results_utils reads them there), listed like HyperPod's;
- GZIP (SageMaker's default, and what AWS's Nova SDK starts evaluations with: a run
  started by hand or by the SDK under the same name):
  `<name>/output/output.tar.gz`, whose members hold `<run>/eval_results/results_*.json`.
  AWS's Nova SDK downloads the archive, extracts it and takes the `results_*.json` below
  it (aws/nova-customization-sdk model/nova_model_customizer.py sets
  eval_output_s3_path to `{output}/{job_id}/output/output.tar.gz` on SMTJ, and
  model/result/eval_result.py extracts it and globs `results_*.json`; its tests build
  the archive as `<run>/eval_results/results_<x>.json`). Here the archive is read as a
  stream (it also holds the inference outputs), and the member whose name sorts last
  (the newest timestamp) is the result; the row's `result` is the archive's URI, `#`,
  and the member's path. A member over MAX_RESULT_BYTES or with a `..` in its path is
  not read.

Which layout a run left is read from S3, not from the config: both are listed and the
newest object of either is the job's newest result.
"""

from __future__ import annotations

import json
import re
import tarfile
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from novapod.constructs.bedrock_model.handler.manifest import (
    ARCHIVE,
    Found,
    list_runs_objects,
    newest,
    split_s3,
)
from novapod.nova import render
from novapod.nova.launch import RESULTS, TRAINING_JOB_RESULTS, LaunchError, substitute

if TYPE_CHECKING:
    from novapod.config import Job, NovapodConfig

# A results file inside a training job's output.tar.gz, at any depth below the archive's
# root (`<run>/eval_results/results_<timestamp>.json` in AWS's Nova SDK's tests).
ARCHIVED_RESULTS = re.compile(r"^(?:\./)?(?:[^/]+/)*eval_results/results_[^/]*\.json$")
# The largest results file read from an archive: a results file holds a few metrics per
# task (model-customize-evaluation-metrics-formats.html), so more is not one.
MAX_RESULT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Row:
    """One evaluation's newest result."""

    job: str
    model: str
    tested: str  # `from`: base, job:<name> or an s3:// URI
    run: str
    result: str
    metrics: dict[str, float]


@dataclass
class Table:
    """The evaluations of one task on one dataset: comparable rows."""

    task: str
    dataset: str | None
    rows: list[Row] = field(default_factory=list)

    @property
    def metrics(self) -> list[str]:
        return sorted({name for row in self.rows for name in row.metrics})


@dataclass(frozen=True)
class Results:
    tables: list[Table]
    missing: list[tuple[str, str]]  # (job, sentence)


def evaluation_jobs(config: NovapodConfig, name: str | None = None) -> list[Job]:
    """The config's evaluation jobs, or only `name` (LaunchError naming the choices when
    it is no evaluation job)."""
    jobs = [job for job in config.jobs if job.evaluation is not None]
    if name is None:
        return jobs
    chosen = [job for job in jobs if job.name == name]
    if not chosen:
        names = ", ".join(job.name for job in jobs) or "none"
        what = "no job" if all(job.name != name for job in config.jobs) else "not an evaluation"
        raise LaunchError(
            f"{name} is {what} in the config; name one of its evaluation jobs: {names}"
        )
    return chosen


@dataclass(frozen=True)
class _Latest:
    """A job's newest results file: its run, where it is, and its bytes."""

    run: str
    uri: str
    body: bytes


def _latest(s3: Any, job: Job, output: str) -> _Latest | None:
    """The newest results file of a job's runs, in its platform's layout."""
    if not job.on_training_job:
        return _read(s3, newest(list_runs_objects(s3, output, (RESULTS,))))
    # Either layout, whichever the run left (review 23b, finding 2: chosen from the
    # config, a GZIP run was never read).
    archive = newest(list_runs_objects(s3, output, (TRAINING_JOB_RESULTS, ARCHIVE)))
    if archive is None:
        return None
    if not archive.key.endswith(".tar.gz"):
        return _read(s3, archive)
    bucket, _ = split_s3(archive.uri)
    found = results_in_archive(s3.get_object(Bucket=bucket, Key=archive.key)["Body"])
    if found is None:
        return _Latest(archive.run, archive.uri, b"")
    member, body = found
    return _Latest(archive.run, f"{archive.uri}#{member}", body)


def _read(s3: Any, found: Found | None) -> _Latest | None:
    if found is None:
        return None
    bucket, _ = split_s3(found.uri)
    return _Latest(found.run, found.uri, s3.get_object(Bucket=bucket, Key=found.key)["Body"].read())


def results_in_archive(body: Any) -> tuple[str, bytes] | None:
    """The `eval_results/results_*.json` member of a gzipped tar whose name sorts last,
    and its bytes; read as a stream (the archive's other members are skipped). None for
    an archive without one, or for what is not a gzipped tar."""
    best: tuple[str, bytes] | None = None
    try:
        with tarfile.open(fileobj=body, mode="r|gz") as archive:
            for member in archive:
                if not (member.isfile() and ARCHIVED_RESULTS.match(member.name)):
                    continue
                if member.size > MAX_RESULT_BYTES or ".." in member.name.split("/"):
                    continue
                name = member.name.removeprefix("./")
                if best is not None and name <= best[0]:
                    continue
                handle = archive.extractfile(member)
                if handle is not None:
                    best = (name, handle.read())
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return best
    return best


def collect(
    config: NovapodConfig, *, s3: Any, artifacts_bucket: str, job: str | None = None
) -> Results:
    """Every evaluation job's newest result (or `job`'s only), grouped by (task, dataset)
    in config order."""
    values = {render.ARTIFACTS_BUCKET: artifacts_bucket}
    tables: dict[tuple[str, str | None], Table] = {}
    missing: list[tuple[str, str]] = []
    for evaluation in evaluation_jobs(config, job):
        assert evaluation.evaluation is not None
        spec = evaluation.evaluation
        table = tables.setdefault((spec.task, spec.dataset), Table(spec.task, spec.dataset))
        output = substitute(render.output_uri(config, evaluation), values)
        latest = _latest(s3, evaluation, output)
        name = evaluation.name
        if latest is None:
            missing.append((name, f"job {name} has no results yet (not run or not finished)"))
            continue
        metrics = metrics_of(latest.body)
        if metrics is None:
            missing.append(
                (name, f"job {name}: {latest.uri} holds no metrics (not a results file)")
            )
            continue
        table.rows.append(
            Row(
                job=name,
                model=evaluation.model,
                tested=evaluation.from_ or "base",
                run=latest.run,
                result=latest.uri,
                metrics=metrics,
            )
        )
    return Results([t for t in tables.values() if t.rows], missing)


def metrics_of(body: bytes | str) -> dict[str, float] | None:
    """The numeric metrics of a results file, without `*_stderr`; None if it has none.

    `all` when present (the benchmarks' aggregate); otherwise each task key's metrics,
    named `<task key>:<metric>` only when there is more than one task key."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, dict) or not results:
        return None
    groups = {"all": results["all"]} if isinstance(results.get("all"), dict) else results
    metrics: dict[str, float] = {}
    for key, values in groups.items():
        if not isinstance(values, dict):
            continue
        for name, value in values.items():
            if "stderr" in name or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            metrics[name if len(groups) == 1 else f"{key}:{name}"] = value
    return metrics or None


def tested_label(row: Row) -> str:
    """What the row measured: the base model, a job's checkpoint, or a given URI."""
    if row.tested == "base":
        return f"base {row.model}"
    return row.tested.removeprefix("job:")


def render_tables(results: Results) -> str:
    """One plain-text table per task: a row per evaluation, a column per metric."""
    blocks: list[str] = []
    for table in results.tables:
        title = table.task + (f" on {table.dataset}" if table.dataset else "")
        names = table.metrics
        rows = [["model", "evaluation", "run", *names]]
        for row in table.rows:
            cells = [_number(row.metrics[n]) if n in row.metrics else "-" for n in names]
            rows.append([tested_label(row), row.job, row.run, *cells])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        ]
        blocks.append("\n".join([title, *lines]))
    return "\n\n".join(blocks)


def results_json(config: NovapodConfig, results: Results) -> str:
    """Machine-readable results: sorted keys, tables and rows in config order."""
    document = {
        "environment": config.name,
        "tasks": [
            {
                "task": table.task,
                "dataset": table.dataset,
                "metrics": table.metrics,
                "rows": [
                    {
                        "job": row.job,
                        "model": row.model,
                        "from": row.tested,
                        "run": row.run,
                        "result": row.result,
                        "metrics": row.metrics,
                    }
                    for row in table.rows
                ],
            }
            for table in results.tables
        ],
        "missing": [{"job": job, "reason": reason} for job, reason in results.missing],
    }
    return json.dumps(document, indent=2, sort_keys=True)


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4f}"
