"""Evaluation results: each evaluation job's newest results file, one table per task.

An evaluation's run writes `<output>/<run>/eval-result/results_<timestamp>.json`, which
the AWS docs also call `result-<timestamp>.json` (both are read, see launch.RESULTS). Its
`results` object holds the metrics: benchmarks under `all`, gen_qa and custom scorers
under a task key such as `custom|gen_qa_gen_qa|0`, each metric with a `*_stderr`
sibling that is left out, as the SageMaker Python SDK does
(aws/sagemaker-python-sdk sagemaker-train common_utils/show_results_utils.py,
_extract_metrics_from_results).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from novapod.constructs.bedrock_model.handler.manifest import list_runs_objects, newest, split_s3
from novapod.nova import render
from novapod.nova.launch import RESULTS, substitute

if TYPE_CHECKING:
    from novapod.config import Job, NovapodConfig


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


def evaluation_jobs(config: NovapodConfig) -> list[Job]:
    return [job for job in config.jobs if job.evaluation is not None]


def collect(config: NovapodConfig, *, s3: Any, artifacts_bucket: str) -> Results:
    """Every evaluation job's newest result, grouped by (task, dataset) in config order."""
    values = {render.ARTIFACTS_BUCKET: artifacts_bucket}
    tables: dict[tuple[str, str | None], Table] = {}
    missing: list[tuple[str, str]] = []
    for job in evaluation_jobs(config):
        assert job.evaluation is not None
        spec = job.evaluation
        table = tables.setdefault((spec.task, spec.dataset), Table(spec.task, spec.dataset))
        output = substitute(render.output_uri(config, job), values)
        latest = newest(list_runs_objects(s3, output, (RESULTS,)))
        if latest is None:
            missing.append(
                (job.name, f"job {job.name} has no results yet (not run or not finished)")
            )
            continue
        bucket, _ = split_s3(latest.uri)
        body = s3.get_object(Bucket=bucket, Key=latest.key)["Body"].read()
        metrics = metrics_of(body)
        if metrics is None:
            missing.append(
                (job.name, f"job {job.name}: {latest.uri} holds no metrics (not a results file)")
            )
            continue
        table.rows.append(
            Row(
                job=job.name,
                model=job.model,
                tested=job.from_ or "base",
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
