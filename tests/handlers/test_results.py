"""`novapod results CONFIG [--json]`: each evaluation's newest results file from the fake
S3, one table per task with the base model and the tuned job side by side."""

from __future__ import annotations

import json
from pathlib import Path

from novapod.cli import main
from novapod.nova.results import metrics_of
from tests.handlers.nova_world import ARTIFACTS, T1, T2, T3, config_file, output_key, plane

__all__ = ["plane"]  # fixture

TASK = "custom|gen_qa_gen_qa|0"


def results_file(metrics: dict[str, float], task: str = TASK) -> bytes:
    with_stderr = {**metrics, **{f"{k}_stderr": 0.01 for k in metrics}}
    return json.dumps({"config_general": {"model": "x"}, "results": {task: with_stderr}}).encode()


def results(tmp_path: Path, *args: str) -> int:
    return main(["results", str(config_file(tmp_path)), *args])


def put_both(plane) -> None:
    # The base model, evaluated once.
    plane.put_object(
        ARTIFACTS,
        output_key("eval-base", "eval-base-b4s3x/eval-result/results_2027-01-10T08-00-00.json"),
        results_file({"rouge1": 0.41234, "exact_match": 0.1, "bleu": 12}),
        T1,
    )
    # The tuned model, evaluated twice: the newer run counts (its name sorts first).
    plane.put_object(
        ARTIFACTS,
        output_key("eval", "eval-zzzzz/eval-result/results_2027-01-10T09-00-00.json"),
        results_file({"rouge1": 0.3, "exact_match": 0.05, "bleu": 10}),
        T2,
    )
    plane.put_object(
        ARTIFACTS,
        output_key("eval", "eval-aaaaa/eval-result/results_2027-01-12T08-00-00.json"),
        results_file({"rouge1": 0.55, "exact_match": 0.25, "f1_score": 0.6}),
        T3,
    )
    # Not a result: the inference output beside it.
    plane.put_object(
        ARTIFACTS,
        output_key("eval", "eval-aaaaa/eval-result/inference_output.jsonl"),
        b"{}\n",
        T3,
    )


def test_one_table_per_task_base_and_tuned(plane, tmp_path, capsys) -> None:
    put_both(plane)
    assert results(tmp_path) == 0
    assert capsys.readouterr().out == (
        "gen-qa on eval/gen_qa.jsonl\n"
        "model      evaluation  run              bleu  exact_match  f1_score  rouge1\n"
        "sft-lora   eval        eval-aaaaa       -     0.2500       0.6000    0.5500\n"
        "base lite  eval-base   eval-base-b4s3x  12    0.1000       -         0.4123\n"
    )
    assert [(c["Bucket"], c["Prefix"]) for c in plane.calls_to("ListObjectsV2")] == [
        (ARTIFACTS, "nova/nova-lite/eval/"),
        (ARTIFACTS, "nova/nova-lite/eval-base/"),
    ]
    assert plane.calls_to("DescribeStacks") == [{"StackName": "novapod-nova-lite-storage"}]


def test_json_is_machine_readable_and_deterministic(plane, tmp_path, capsys) -> None:
    put_both(plane)
    assert results(tmp_path, "--json") == 0
    text = capsys.readouterr().out
    base = f"s3://{ARTIFACTS}/nova/nova-lite/eval-base/eval-base-b4s3x/eval-result/"
    tuned = f"s3://{ARTIFACTS}/nova/nova-lite/eval/eval-aaaaa/eval-result/"
    assert json.loads(text) == {
        "environment": "nova-lite",
        "tasks": [
            {
                "task": "gen-qa",
                "dataset": "eval/gen_qa.jsonl",
                "metrics": ["bleu", "exact_match", "f1_score", "rouge1"],
                "rows": [
                    {
                        "job": "eval",
                        "model": "lite",
                        "from": "job:sft-lora",
                        "run": "eval-aaaaa",
                        "result": tuned + "results_2027-01-12T08-00-00.json",
                        "metrics": {"exact_match": 0.25, "f1_score": 0.6, "rouge1": 0.55},
                    },
                    {
                        "job": "eval-base",
                        "model": "lite",
                        "from": "base",
                        "run": "eval-base-b4s3x",
                        "result": base + "results_2027-01-10T08-00-00.json",
                        "metrics": {"bleu": 12, "exact_match": 0.1, "rouge1": 0.41234},
                    },
                ],
            }
        ],
        "missing": [],
    }
    # Sorted keys at every level, so the same results print the same bytes.
    assert text.index('"dataset"') < text.index('"metrics"') < text.index('"rows"')
    assert text.index('"environment"') < text.index('"missing"') < text.index('"tasks"')


def test_a_job_without_results_is_named(plane, tmp_path, capsys) -> None:
    plane.put_object(
        ARTIFACTS,
        output_key("eval-base", "eval-base-b4s3x/eval-result/results_2027-01-10T08-00-00.json"),
        results_file({"rouge1": 0.5}),
        T1,
    )
    assert results(tmp_path) == 0
    assert capsys.readouterr().out == (
        "gen-qa on eval/gen_qa.jsonl\n"
        "model      evaluation  run              rouge1\n"
        "base lite  eval-base   eval-base-b4s3x  0.5000\n"
        "job eval has no results yet (not run or not finished)\n"
    )
    assert results(tmp_path, "--json") == 0
    assert json.loads(capsys.readouterr().out)["missing"] == [
        {"job": "eval", "reason": "job eval has no results yet (not run or not finished)"}
    ]


def test_results_named_result_dash_timestamp_are_found_too(plane, tmp_path, capsys) -> None:
    # The AWS page names the file both ways: results_[timestamp].json in its tree and
    # eval-result/result-timestamp.json in its text (nova/latest/userguide/
    # customize-fine-tune-evaluate-access-results). Either is the run's result; the newer
    # object counts.
    plane.put_object(
        ARTIFACTS,
        output_key("eval-base", "eval-base-b4s3x/eval-result/result-2027-01-10T08-00-00.json"),
        results_file({"rouge1": 0.5}),
        T1,
    )
    plane.put_object(
        ARTIFACTS,
        output_key("eval", "eval-zzzzz/eval-result/results_2027-01-10T09-00-00.json"),
        results_file({"rouge1": 0.3}),
        T2,
    )
    plane.put_object(
        ARTIFACTS,
        output_key("eval", "eval-aaaaa/eval-result/result-2027-01-12T08-00-00.json"),
        results_file({"rouge1": 0.6}),
        T3,
    )
    assert results(tmp_path) == 0
    assert capsys.readouterr().out == (
        "gen-qa on eval/gen_qa.jsonl\n"
        "model      evaluation  run              rouge1\n"
        "sft-lora   eval        eval-aaaaa       0.6000\n"
        "base lite  eval-base   eval-base-b4s3x  0.5000\n"
    )


def test_no_results_at_all_is_exit_1(plane, tmp_path, capsys) -> None:
    assert results(tmp_path) == 1
    assert capsys.readouterr().out == (
        "job eval has no results yet (not run or not finished)\n"
        "job eval-base has no results yet (not run or not finished)\n"
    )


def test_a_config_without_evaluations_is_refused(tmp_path, capsys) -> None:
    path = tmp_path / "env.yaml"
    text = config_file(tmp_path).read_text()
    start, end = text.index("  - name: eval\n"), text.index("  - name: sft-again\n")
    path.write_text(text[:start] + text[end:])
    assert main(["results", str(path)]) == 2
    assert capsys.readouterr().err == (
        "novapod results: the config has no evaluation jobs; add a job with technique: evaluation\n"
    )


def test_metrics_come_from_all_else_the_task_keys_without_stderr() -> None:
    benchmark = {"results": {"all": {"accuracy": 0.7, "accuracy_stderr": 0.01}, "mmlu|x|0": {}}}
    assert metrics_of(json.dumps(benchmark)) == {"accuracy": 0.7}
    assert metrics_of(results_file({"rouge1": 0.5})) == {"rouge1": 0.5}
    two = {"results": {"a|x|0": {"f1": 0.1}, "b|y|0": {"f1": 0.2, "note": "text", "ok": True}}}
    assert metrics_of(json.dumps(two)) == {"a|x|0:f1": 0.1, "b|y|0:f1": 0.2}
    assert metrics_of(b"not json") is None
    assert metrics_of(json.dumps({"results": {TASK: {"rouge1_stderr": 0.1}}})) is None
