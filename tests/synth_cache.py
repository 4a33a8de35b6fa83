"""A disk cache of synthesized configs, shared by pytest-xdist workers and by reruns.

Synthesis (CDK plus cdk-nag's packs) is most of what the stack tests cost, and every
worker needs the same configs. An entry is keyed by everything the synthesis reads:

- the bytes of every file of the `novapod` package (code, data, handler assets, the
  lifecycle scripts, the feature flags create_app passes to the App), and of this
  module and tests/conftest.py (what synthesizes, and the entry's layout),
- the installed versions of the libraries that synthesize (aws-cdk-lib, constructs,
  cdk-nag, jsii) and of Python,
- the config file's bytes (an environment config names no other file; its path never
  reaches the templates) and the file name (the cloud assembly's folder),
- the session's settings that change templates (the compliance packs, the validation
  time), passed in as `settings`.

So an edit of any source file, a version bump or another config is a miss; nothing
stale is ever served. Entries of other source digests are deleted when a session
starts, once they are half an hour old: a session still running on the sources before
an edit (or another checkout's session sharing the directory) keeps what it reads. Writers take an exclusive lock per entry (fcntl), so two workers asking for the
same config synthesize it once: the second waits and reads. An entry is published by
renaming a complete folder into place, so a crash mid-synthesis leaves no half entry.

NOVAPOD_SYNTH_CACHE=0 turns the cache off (each process synthesizes for itself);
NOVAPOD_SYNTH_CACHE_DIR moves it (default: .cache/synth in the checkout).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "novapod"
LIBRARIES = ("aws-cdk-lib", "constructs", "cdk-nag", "jsii")
HARNESS = (Path(__file__).resolve(), ROOT / "tests" / "conftest.py")
RESULT = "synthesized.json"


def enabled() -> bool:
    return os.environ.get("NOVAPOD_SYNTH_CACHE", "1") != "0"


def cache_root() -> Path:
    return Path(os.environ.get("NOVAPOD_SYNTH_CACHE_DIR", ROOT / ".cache" / "synth"))


def _package_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            yield path


@cache
def source_digest(root: Path = PACKAGE, harness: tuple[Path, ...] = HARNESS) -> str:
    """What the synthesis runs: the package's files, the harness that drives it and
    the synthesizing libraries."""
    digest = hashlib.sha256()
    for path in _package_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    for path in harness:
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    for name in LIBRARIES:
        digest.update(f"{name}=={metadata.version(name)}\0".encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:20]


def entry_key(config: Path, settings: str, source: str) -> str:
    digest = hashlib.sha256()
    digest.update(config.read_bytes())
    digest.update(b"\0" + config.name.encode() + b"\0" + settings.encode())
    return f"{source}-{digest.hexdigest()[:20]}"


# How old another source digest's entry must be before a session deletes it: longer
# than a whole suite runs, so a session started before an edit keeps its entries.
PRUNE_AFTER_SECONDS = 1800


def prune(root: Path, source: str, *, now: float | None = None) -> None:
    """Delete the entries of other source digests older than PRUNE_AFTER_SECONDS (a
    worker may be writing ours; another session may be reading theirs)."""
    if not root.is_dir():
        return
    cutoff = (time.time() if now is None else now) - PRUNE_AFTER_SECONDS
    for entry in root.iterdir():
        other = entry.is_dir() and not entry.name.startswith((f"{source}-", "."))
        if other and entry.stat().st_mtime < cutoff:
            shutil.rmtree(entry, ignore_errors=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached(
    config: Path,
    settings: str,
    synthesize: Callable[[Path], dict[str, Any]],
    *,
    root: Path | None = None,
    source: str | None = None,
) -> tuple[dict[str, Any], Path]:
    """(result, assembly folder) of `config`: read from the cache, or made by
    `synthesize(outdir)` (which writes the cloud assembly into outdir and returns a
    JSON-able result) and stored. The assembly folder is named after the config (as
    the session's own outdirs were: the compliance report reads the name) and must be
    treated as read-only."""
    root = cache_root() if root is None else root
    source = source_digest() if source is None else source
    entry = root / entry_key(config, settings, source)
    with _locked(root / ".locks" / f"{entry.name}.lock"):
        if not (entry / RESULT).is_file():
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=root))
            try:
                result = synthesize(staging / config.stem)
                (staging / RESULT).write_text(json.dumps(result))
                shutil.rmtree(entry, ignore_errors=True)
                staging.rename(entry)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
    return json.loads((entry / RESULT).read_text()), entry / config.stem
