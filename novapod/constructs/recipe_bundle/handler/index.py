"""Custom::NovaBundleFile handler: write one bundle file to S3, or remove it.

CloudFormation has already substituted the deploy-time names into `Body` (Fn::Sub), so
this only stores the text. parse -> decide (pure) -> call, like the other handlers.
The physical ID is the object's S3 URI: a changed Key is a replacement, and
CloudFormation then deletes the old object with the old ID.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTENT_TYPES = {".json": "application/json", ".yaml": "application/yaml"}


@dataclass(frozen=True)
class Action:
    """What one event asks for: `put` the body, `delete` the object, or nothing."""

    kind: str  # "put" | "delete" | "none"
    bucket: str
    key: str
    physical_id: str
    body: str = ""
    content_type: str = "text/plain"


def decide(event: dict[str, Any]) -> Action:
    props = event["ResourceProperties"]
    bucket, key = str(props["Bucket"]), str(props["Key"])
    uri = f"s3://{bucket}/{key}"
    if event["RequestType"] == "Delete":
        # Only an object this resource wrote: a create that failed left another ID.
        if event.get("PhysicalResourceId") == uri:
            return Action("delete", bucket, key, uri)
        return Action("none", bucket, key, str(event.get("PhysicalResourceId", uri)))
    suffix = key[key.rfind(".") :] if "." in key else ""
    return Action(
        "put",
        bucket,
        key,
        uri,
        body=str(props["Body"]),
        content_type=CONTENT_TYPES.get(suffix, "text/plain"),
    )


def on_event(event: dict[str, Any], _context: Any = None, s3: Any = None) -> dict[str, Any]:
    action = decide(event)
    print(f"{event['RequestType']}: {action.kind} {action.physical_id}")
    if action.kind != "none":
        if s3 is None:
            # boto3 (botocore's defaults), reused by a warm Lambda; not needed by tests.
            from ...handler_core import aws  # noqa: PLC0415

            s3 = aws.client("s3")
        if action.kind == "put":
            s3.put_object(
                Bucket=action.bucket,
                Key=action.key,
                Body=action.body.encode("utf-8"),
                ContentType=action.content_type,
            )
        else:
            s3.delete_object(Bucket=action.bucket, Key=action.key)
    return {"PhysicalResourceId": action.physical_id}
