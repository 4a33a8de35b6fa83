"""The stacks of a synthesized cloud assembly (`cdk.out`), read from its manifest.

A stack is known by its display name (`novapod-dev-network`, or `Prod/novapod-dev-network`
inside a Stage), which is what pairs the base's and the head's stacks. Each stack carries
its template's path and the hashes of the assets it publishes, so that a change that only
moves an asset hash can be told apart, and its construct metadata (where the capacity
stack records each plan's schedule). Pure file reading, no CDK import, no AWS.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from novapod.review.errors import ReviewError

STACK = "aws:cloudformation:stack"
ASSET_MANIFEST = "cdk:asset-manifest"
NESTED_ASSEMBLY = "cdk:cloud-assembly"


@dataclass(frozen=True)
class StackArtifact:
    name: str  # display name: the key that pairs base and head
    template_path: Path
    asset_hashes: frozenset[str]
    # The stack's construct metadata: inline in the manifest, and (aws-cdk-lib 2.17x and
    # later) in the file the artifact's additionalMetadataFile names, merged as the
    # cloud-assembly reader does (@aws-cdk/cloud-assembly-api, cloud-artifact.js).
    inline_metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)
    metadata_file: Path | None = None

    def template(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.template_path.read_text(encoding="utf-8"))
        return loaded

    def metadata(self, kind: str) -> list[tuple[str, Any]]:
        """(construct path, data) of each metadata entry of type `kind`, by path; an
        unreadable metadata file counts as none (the review then draws less, never fails)."""
        entries: dict[str, Any] = dict(self.inline_metadata)
        if self.metadata_file is not None:
            try:
                loaded = json.loads(self.metadata_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                loaded = {}
            if isinstance(loaded, dict):
                entries.update(loaded)
        return [
            (path, entry.get("data"))
            for path, listed in sorted(entries.items())
            if isinstance(listed, list)
            for entry in listed
            if isinstance(entry, dict) and entry.get("type") == kind
        ]


def read_stacks(directory: Path, option: str) -> dict[str, StackArtifact]:
    """Display name -> stack, for every stack in the assembly (nested Stages included)."""
    if not directory.is_dir():
        raise ReviewError(
            f"{option} {directory} is not a directory; name the cdk.out directory of a "
            "synthesis (npx cdk synth -o DIR)"
        )
    manifest = directory / "manifest.json"
    if option == "--base" and not any(directory.iterdir()):
        # No base: the head is a first deploy (a pipeline's first commit, a new Stage),
        # and every stack in it is added.
        return {}
    if not manifest.is_file():
        raise ReviewError(
            f"{option} {directory} has no manifest.json, so it is not a cloud assembly; "
            "name the cdk.out directory of a synthesis (npx cdk synth -o DIR)"
        )
    return _stacks(directory, option)


def _stacks(directory: Path, option: str) -> dict[str, StackArtifact]:
    manifest = directory / "manifest.json"
    try:
        artifacts: dict[str, Any] = json.loads(manifest.read_text(encoding="utf-8")).get(
            "artifacts", {}
        )
    except (OSError, ValueError, AttributeError) as error:
        raise ReviewError(f"{option}: cannot read {manifest}: {error}") from None
    out: dict[str, StackArtifact] = {}
    for artifact_id, artifact in sorted(artifacts.items()):
        kind = artifact.get("type")
        properties = artifact.get("properties", {})
        if kind == NESTED_ASSEMBLY:
            # A Stage: its stacks' display names already start with the stage's path.
            out |= _stacks(directory / properties["directoryName"], option)
        elif kind == STACK:
            name = str(artifact.get("displayName") or artifact_id)
            template = directory / properties["templateFile"]
            if not template.is_file():
                raise ReviewError(
                    f"{option}: stack {name}'s template {template} is missing; synthesize again"
                )
            hashes = _asset_hashes(directory, artifacts, artifact)
            extra = artifact.get("additionalMetadataFile")
            out[name] = StackArtifact(
                name,
                template,
                hashes,
                inline_metadata=artifact.get("metadata") or {},
                metadata_file=directory / extra if isinstance(extra, str) else None,
            )
    return out


def _asset_hashes(
    directory: Path, artifacts: dict[str, Any], stack: dict[str, Any]
) -> frozenset[str]:
    """Hashes of the files and images the stack's asset manifests publish."""
    hashes: set[str] = set()
    for dependency in stack.get("dependencies", []):
        artifact = artifacts.get(dependency, {})
        if artifact.get("type") != ASSET_MANIFEST:
            continue
        path = directory / artifact["properties"]["file"]
        try:
            assets = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # without its asset manifest a change is shown in full, never hidden
        hashes |= set(assets.get("files", {})) | set(assets.get("dockerImages", {}))
    return frozenset(hashes)
