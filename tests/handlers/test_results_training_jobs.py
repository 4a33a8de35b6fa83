"""`novapod results CONFIG [JOB]` of an evaluation that ran as a SageMaker training job
(config/examples/training-jobs.yaml, micro-eval from micro-sft's checkpoint): the results
file read from the uncompressed objects SageMaker leaves with CompressionType NONE (what
novapod launches evaluations with), or from inside output/output.tar.gz with GZIP, into
the same table and JSON as a HyperPod evaluation's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from novapod.cli import main
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.handlers.test_launch_training_jobs import ARTIFACTS, ESCROW, EXAMPLE, SFT_NAME, plane

__all__ = ["plane"]  # fixture

TASK = "custom|gen_qa_gen_qa|0"
METRICS = {"rouge1": 0.6125, "rouge1_stderr": 0.01, "exact_match": 0.25, "bleu": 31}
TIMESTAMP = "20270910_120000"


def evaluated(plane: FakeControlPlane, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """micro-sft trained and micro-eval run to completion on training jobs: the
    evaluation's name and where the fake wrote its outputs."""
    assert main(["launch", str(EXAMPLE), "micro-sft", "--run"]) == 0
    plane.training_jobs.complete(SFT_NAME, checkpoint=ESCROW)
    assert main(["launch", str(EXAMPLE), "micro-eval", "--run"]) == 0
    name = plane.calls_to("CreateTrainingJob")[-1]["TrainingJobName"]
    # An older results file first (in the archive too): the newest timestamp counts.
    files = plane.training_jobs.evaluation_files(
        "micro-eval", {TASK: {"rouge1": 0.1}}, "20270909_000000"
    )
    files |= plane.training_jobs.evaluation_files("micro-eval", {TASK: METRICS}, TIMESTAMP)
    written = plane.training_jobs.complete(name, files, manifest=False)
    capsys.readouterr()
    return name, written


def results(*args: str) -> int:
    return main(["results", str(EXAMPLE), *args])


def test_uncompressed_results_fill_the_same_table_as_hyperpods(plane, capsys) -> None:
    name, written = evaluated(plane, capsys)
    assert plane.calls_to("CreateTrainingJob")[-1]["OutputDataConfig"]["CompressionType"] == (
        "NONE"
    )
    assert written == f"s3://{ARTIFACTS}/nova/mixed-tj/micro-eval/{name}/output/output/"
    lists, gets = len(plane.calls_to("ListObjectsV2")), len(plane.calls_to("GetObject"))
    assert results("micro-eval") == 0
    width = len(name)
    assert capsys.readouterr().out == (
        "gen-qa on eval/micro-gen-qa.jsonl\n"
        f"model      evaluation  {'run'.ljust(width)}  bleu  exact_match  rouge1\n"
        f"micro-sft  micro-eval  {name}  31    0.2500       0.6125\n"
    )
    # One listing of the evaluation's outputs, one read of the newest results file.
    (listed,) = plane.calls_to("ListObjectsV2")[lists:]
    assert listed["Prefix"] == "nova/mixed-tj/micro-eval/"
    (read,) = plane.calls_to("GetObject")[gets:]
    assert read["Key"] == (
        f"nova/mixed-tj/micro-eval/{name}/output/output/micro-eval/eval_results/"
        f"results_{TIMESTAMP}.json"
    )


def test_json_rows_name_the_training_job_and_its_results_file(plane, capsys) -> None:
    name, written = evaluated(plane, capsys)
    assert results("--json") == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert document["tasks"] == [
        {
            "task": "gen-qa",
            "dataset": "eval/micro-gen-qa.jsonl",
            "metrics": ["bleu", "exact_match", "rouge1"],
            "rows": [
                {
                    "job": "micro-eval",
                    "model": "micro",
                    "from": "job:micro-sft",
                    "run": name,
                    "result": f"{written}micro-eval/eval_results/results_{TIMESTAMP}.json",
                    "metrics": {"bleu": 31, "exact_match": 0.25, "rouge1": 0.6125},
                }
            ],
        }
    ]
    assert document["missing"] == []


def test_gzipped_outputs_are_read_from_inside_output_tar_gz(plane, capsys) -> None:
    """A run that left SageMaker's default GZIP layout (started by hand or by AWS's Nova
    SDK under the run's name, though novapod asks for NONE): its results file is a
    member of <name>/output/output.tar.gz, found from what is in S3, not from the config
    (review 23b, finding 2: the reader chose the layout from the config and never read
    an archive). The newer file is first in the archive: the newest timestamp counts,
    not the last member (review 23b, finding 10)."""
    assert main(["launch", str(EXAMPLE), "micro-sft", "--run"]) == 0
    plane.training_jobs.complete(SFT_NAME, checkpoint=ESCROW)
    assert main(["launch", str(EXAMPLE), "micro-eval", "--run"]) == 0
    name = plane.calls_to("CreateTrainingJob")[-1]["TrainingJobName"]
    assert plane.calls_to("CreateTrainingJob")[-1]["OutputDataConfig"]["CompressionType"] == (
        "NONE"
    )
    files = plane.training_jobs.evaluation_files("micro-eval", {TASK: METRICS}, TIMESTAMP)
    files |= plane.training_jobs.evaluation_files(
        "micro-eval", {TASK: {"rouge1": 0.1}}, "20270909_000000"
    )
    written = plane.training_jobs.complete(name, files, manifest=False, compression="GZIP")
    assert written.endswith(f"/{name}/output/output.tar.gz")
    capsys.readouterr()
    assert results("--json") == 0
    (table,) = json.loads(capsys.readouterr().out)["tasks"]
    (row,) = table["rows"]
    assert row["metrics"] == {"bleu": 31, "exact_match": 0.25, "rouge1": 0.6125}
    assert row["result"] == f"{written}#micro-eval/eval_results/results_{TIMESTAMP}.json"
    assert row["run"] == name


def test_an_archived_results_file_too_large_or_outside_is_not_read() -> None:
    """A member over MAX_RESULT_BYTES, or whose path climbs out with `..`, is skipped."""
    import io

    from novapod.nova.results import MAX_RESULT_BYTES, results_in_archive
    from tests.fakes.training_jobs import archive

    big = b"{" + b" " * MAX_RESULT_BYTES + b"}"
    members = {
        "a/eval_results/results_20270909_000000.json": b'{"results": {}}',
        "b/eval_results/results_20270911_000000.json": big,
        "c/../eval_results/results_20270912_000000.json": b'{"results": {"x": {}}}',
    }
    found = results_in_archive(io.BytesIO(archive(members)))
    assert found == ("a/eval_results/results_20270909_000000.json", b'{"results": {}}')


def test_an_evaluation_still_running_has_no_results_yet(plane, capsys) -> None:
    assert main(["launch", str(EXAMPLE), "micro-sft", "--run"]) == 0
    plane.training_jobs.complete(SFT_NAME, checkpoint=ESCROW)
    assert main(["launch", str(EXAMPLE), "micro-eval", "--run"]) == 0
    capsys.readouterr()
    assert results() == 1
    assert capsys.readouterr().out == (
        "job micro-eval has no results yet (not run or not finished)\n"
    )


def test_a_job_that_is_not_an_evaluation_is_refused_with_the_choices(plane, capsys) -> None:
    assert results("micro-sft") == 2
    assert capsys.readouterr().err == (
        "novapod results: micro-sft is not an evaluation in the config; name one of its "
        "evaluation jobs: micro-eval\n"
    )
    assert results("nope") == 2
    assert "nope is no job in the config" in capsys.readouterr().err
    assert plane.operations() == []
