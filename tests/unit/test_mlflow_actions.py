"""The sagemaker-mlflow actions kept as data, and what the jobs' nodes get of them."""

from __future__ import annotations

import pytest

from novapod.nova.mlflow import mlflow_actions, parse_mlflow_actions


def test_runs_may_log_everything_on_the_server_but_delete() -> None:
    actions = mlflow_actions()
    granted = mlflow_actions().run_actions()
    # Written out: what a training run logs, and the MLflow 3 calls the old list lacked.
    for action in (
        "CreateExperiment", "GetExperimentByName", "CreateRun", "UpdateRun", "LogBatch",
        "LogMetric", "LogParam", "LogInputs", "SetTag", "LogModel", "LogOutputs",
        "LogLoggedModelParams", "FinalizeLoggedModel", "SearchRuns",
    ):  # fmt: skip
        assert f"sagemaker-mlflow:{action}" in granted
    assert not [a for a in granted if ":Delete" in a]
    # AccessUI takes no resource: a statement on the server's ARN could never grant it.
    assert "sagemaker-mlflow:AccessUI" not in granted
    assert actions.without_resource_level == ("AccessUI",)
    # Everything else the service defines on the tracking server is granted.
    kept = [a for a in actions.tracking_server_actions if not a.startswith("Delete")]
    assert granted == tuple(f"sagemaker-mlflow:{a}" for a in kept)
    assert len(actions.tracking_server_actions) - len(kept) == 12


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"without_resource_level": []}, "tracking_server_actions must be a list"),
        (
            {"tracking_server_actions": ["LogMetric", ""], "without_resource_level": []},
            "tracking_server_actions must be a list of action names",
        ),
        (
            {"tracking_server_actions": ["AccessUI"], "without_resource_level": ["AccessUI"]},
            "AccessUI listed under both keys",
        ),
    ],
)
def test_bad_data_is_refused_with_the_file_and_key(data, message) -> None:
    with pytest.raises(ValueError, match=message) as info:
        parse_mlflow_actions(data)
    assert str(info.value).startswith("novapod/data/mlflow_actions.yaml: ")
