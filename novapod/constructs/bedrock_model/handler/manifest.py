"""What a Nova job's runs left under its output prefix, and the checkpoint its manifest names.

Shared by `novapod launch` (`{{checkpoint:<job>}}`) and the BedrockModel handler, which
runs as a Lambda asset holding only this folder: so stdlib only, and the S3 client is
passed in.

Below a job's output prefix the launcher puts one folder per run, named
`<job[:34]>-<5 random [a-z0-9]>` (aws/sagemaker-hyperpod-recipes main.py, valid_run_name).
HyperPod writes `<run>/manifest.json`; SageMaker training jobs write
`<run>/output/output.tar.gz` with manifest.json at the archive root. Both layouts as the
SageMaker Python SDK reads them: aws/sagemaker-python-sdk sagemaker-train,
BaseTrainer._resolve_checkpoint_from_manifest.
"""

from __future__ import annotations

import json
import re
import tarfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

MANIFEST = re.compile(r"^(?P<run>[^/]+)/manifest\.json$")
ARCHIVE = re.compile(r"^(?P<run>[^/]+)/output/output\.tar\.gz$")


@dataclass(frozen=True)
class Found:
    """An object under a job's output prefix: the run it belongs to and when it was written."""

    run: str
    uri: str
    key: str
    last_modified: datetime


@dataclass(frozen=True)
class ManifestReading:
    """What a found manifest (or archive) says: `where` names it for messages;
    `has_manifest` is False for an archive without manifest.json at its root;
    `checkpoint` is its s3:// checkpoint_s3_bucket, or None."""

    where: str
    has_manifest: bool
    checkpoint: str | None


def split_s3(uri: str) -> tuple[str, str]:
    """s3://bucket/some/prefix/ -> ("bucket", "some/prefix/")."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def list_runs_objects(s3: Any, output: str, patterns: Sequence[re.Pattern[str]]) -> list[Found]:
    """Objects below the output prefix whose key (relative to it) matches a pattern.

    ListObjectsV2 pages at most 1,000 keys and gives each key's LastModified
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html)."""
    bucket, prefix = split_s3(output)
    found: list[Found] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) :]
            for pattern in patterns:
                match = pattern.match(relative)
                if match:
                    found.append(
                        Found(
                            run=match.group("run"),
                            uri=f"s3://{bucket}/{item['Key']}",
                            key=item["Key"],
                            last_modified=item["LastModified"],
                        )
                    )
                    break
    return found


def newest(found: Iterable[Found]) -> Found | None:
    """The most recently written object (ties: the greater key, so the choice is stable)."""
    return max(found, key=lambda f: (f.last_modified, f.key), default=None)


def newest_manifest(s3: Any, output: str) -> Found | None:
    """The newest run's manifest.json or output.tar.gz under the output prefix."""
    return newest(list_runs_objects(s3, output, (MANIFEST, ARCHIVE)))


def read_manifest(s3: Any, found: Found) -> ManifestReading:
    """Read a found manifest (from inside the archive for output.tar.gz)."""
    bucket, _ = split_s3(found.uri)
    body = s3.get_object(Bucket=bucket, Key=found.key)["Body"]
    if found.key.endswith(".tar.gz"):
        text = manifest_in_archive(body)
        where = f"{found.uri} (manifest.json inside it)"
        if text is None:
            return ManifestReading(where=where, has_manifest=False, checkpoint=None)
    else:
        text = body.read()
        where = found.uri
    return ManifestReading(where=where, has_manifest=True, checkpoint=checkpoint_in(text))


def manifest_in_archive(body: Any) -> bytes | None:
    """manifest.json at the root of a gzipped tar, read as a stream: the archive may be
    large and the manifest is all we need."""
    try:
        with tarfile.open(fileobj=body, mode="r|gz") as archive:
            for member in archive:
                if member.isfile() and member.name.removeprefix("./") == "manifest.json":
                    handle = archive.extractfile(member)
                    return handle.read() if handle is not None else None
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return None  # not a gzipped tar (or cut short): no manifest to read
    return None


def checkpoint_in(text: bytes | str) -> str | None:
    """checkpoint_s3_bucket when it is an S3 URI; the SDK treats anything else (a
    relative path) as unresolvable, and so do we."""
    try:
        manifest = json.loads(text)
    except ValueError:
        return None
    value = manifest.get("checkpoint_s3_bucket") if isinstance(manifest, dict) else None
    if not isinstance(value, str) or not value.strip().startswith("s3://"):
        return None
    return value.strip()
