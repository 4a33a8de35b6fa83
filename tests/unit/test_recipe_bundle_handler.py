"""The recipe-bundle handler: what each CloudFormation event makes it do with S3."""

from __future__ import annotations

from typing import Any

from novapod.constructs.recipe_bundle.handler.index import decide, on_event
from novapod.nova.access import sub_text

PROPS = {"Bucket": "artifacts", "Key": "recipes/index.json", "Body": '{"jobs": []}\n'}
URI = "s3://artifacts/recipes/index.json"


class RecordingS3:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def put_object(self, **kwargs: Any) -> None:
        self.calls.append(("PutObject", kwargs))

    def delete_object(self, **kwargs: Any) -> None:
        self.calls.append(("DeleteObject", kwargs))


def event(request: str, physical: str | None = None, **props: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"RequestType": request, "ResourceProperties": {**PROPS, **props}}
    if physical is not None:
        out["PhysicalResourceId"] = physical
    return out


def test_create_and_update_put_the_substituted_body() -> None:
    for request in ("Create", "Update"):
        s3 = RecordingS3()
        assert on_event(event(request, URI), s3=s3) == {"PhysicalResourceId": URI}
        assert s3.calls == [
            (
                "PutObject",
                {
                    "Bucket": "artifacts",
                    "Key": "recipes/index.json",
                    "Body": b'{"jobs": []}\n',
                    "ContentType": "application/json",
                },
            )
        ]


def test_recipes_are_yaml() -> None:
    assert decide(event("Create", Key="recipes/recipes/sft.yaml")).content_type == (
        "application/yaml"
    )


def test_delete_removes_only_the_object_it_wrote() -> None:
    s3 = RecordingS3()
    assert on_event(event("Delete", URI), s3=s3) == {"PhysicalResourceId": URI}
    assert s3.calls == [("DeleteObject", {"Bucket": "artifacts", "Key": "recipes/index.json"})]
    # A create that failed never wrote: its physical ID is the framework's request ID.
    s3 = RecordingS3()
    assert on_event(event("Delete", "req-123"), s3=s3) == {"PhysicalResourceId": "req-123"}
    assert s3.calls == []


def test_sub_text_keeps_placeholders_and_escapes_other_interpolations() -> None:
    text = "a: s3://${DataBucket}/x\nb: ${oc.select:run.x}\nc: ${recipes.run.rm_replicas}\n"
    assert sub_text(text) == (
        "a: s3://${DataBucket}/x\nb: ${!oc.select:run.x}\nc: ${!recipes.run.rm_replicas}\n"
    )
