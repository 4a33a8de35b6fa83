"""The CLI's sessions share botocore's service models and read everything else per call."""

from __future__ import annotations

import os

import pytest

from novapod.operate import aws_session


@pytest.fixture
def aws_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def _loader(session: object) -> object:
    return session._session.get_component("data_loader")  # type: ignore[attr-defined]


def test_sessions_share_one_loader_and_its_search_paths_stay_as_a_fresh_one_s(
    aws_environment: pytest.MonkeyPatch,
) -> None:
    first, second = aws_session.session("us-east-1"), aws_session.session("us-west-2")
    assert _loader(first) is _loader(second)
    paths = _loader(first).search_paths  # type: ignore[attr-defined]
    assert len(paths) == len(set(paths))
    assert any(path.endswith(os.path.join("boto3", "data")) for path in paths)
    # boto3 appends its data directory on every session: still once after many.
    for _ in range(3):
        aws_session.session("us-east-1")
    assert _loader(first).search_paths == paths  # type: ignore[attr-defined]


def test_a_service_model_is_read_once_across_sessions(
    aws_environment: pytest.MonkeyPatch,
) -> None:
    first = aws_session.session("us-east-1").client("sts")
    second = aws_session.session("us-east-1").client("sts")
    assert first.meta.service_model._service_description is (
        second.meta.service_model._service_description
    )


def test_region_credentials_and_endpoint_are_read_per_session(
    aws_environment: pytest.MonkeyPatch,
) -> None:
    aws_environment.setenv("AWS_ACCESS_KEY_ID", "AKIDFIRST")
    aws_environment.setenv("AWS_SECRET_ACCESS_KEY", "first")
    first = aws_session.session("us-east-1")
    assert first.get_credentials().access_key == "AKIDFIRST"
    assert first.client("sts").meta.endpoint_url == "https://sts.us-east-1.amazonaws.com"
    aws_environment.setenv("AWS_ACCESS_KEY_ID", "AKIDSECOND")
    aws_environment.setenv("AWS_SECRET_ACCESS_KEY", "second")
    aws_environment.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    second = aws_session.session("eu-west-1")
    assert second.get_credentials().access_key == "AKIDSECOND"
    assert first.client("sts").meta.region_name == "us-east-1"
    client = second.client("sts")
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.endpoint_url == "http://127.0.0.1:9"


def test_another_data_path_gets_its_own_loader(
    aws_environment: pytest.MonkeyPatch, tmp_path
) -> None:
    default = _loader(aws_session.session("us-east-1"))
    aws_environment.setenv("AWS_DATA_PATH", str(tmp_path))
    other = _loader(aws_session.session("us-east-1"))
    assert other is not default
    assert str(tmp_path) in other.search_paths  # type: ignore[attr-defined]
    assert str(tmp_path) not in default.search_paths  # type: ignore[attr-defined]


def test_a_missing_profile_fails_as_botocore_says(aws_environment: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import ProfileNotFound

    aws_environment.setenv("AWS_PROFILE", "novapod-test-no-such-profile")
    with pytest.raises(ProfileNotFound, match="novapod-test-no-such-profile"):
        aws_session.session("us-east-1")
