"""The synthesis cache the test session shares (tests/synth_cache.py): a changed source,
config or setting is a miss, concurrent askers synthesize once, a failure stores nothing."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests import synth_cache


def synthesizer(calls: list[Path], *, delay: float = 0.0):
    def run(outdir: Path) -> dict[str, Any]:
        calls.append(outdir)
        time.sleep(delay)
        outdir.mkdir(parents=True)
        (outdir / "stack.template.json").write_text("{}")
        return {"templates": {"network": {"Resources": {}}}, "n": len(calls)}

    return run


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "env.yaml"
    path.write_text("name: a\n")
    return path


def test_a_second_ask_reads_what_the_first_stored(tmp_path: Path, config: Path) -> None:
    calls: list[Path] = []
    first, folder = synth_cache.cached(
        config, "s", synthesizer(calls), root=tmp_path / "c", source="src1"
    )
    second, again = synth_cache.cached(
        config, "s", synthesizer(calls), root=tmp_path / "c", source="src1"
    )
    assert len(calls) == 1
    assert first == second == {"templates": {"network": {"Resources": {}}}, "n": 1}
    assert folder == again and (folder / "stack.template.json").read_text() == "{}"
    assert folder.name == "env"  # named after the config, as the report reads it


def test_sources_config_name_content_and_settings_each_miss(tmp_path: Path, config: Path) -> None:
    calls: list[Path] = []
    root = tmp_path / "c"
    synth_cache.cached(config, "s", synthesizer(calls), root=root, source="src1")
    synth_cache.cached(config, "s", synthesizer(calls), root=root, source="src2")
    synth_cache.cached(config, "other", synthesizer(calls), root=root, source="src1")
    config.write_text("name: b\n")
    synth_cache.cached(config, "s", synthesizer(calls), root=root, source="src1")
    renamed = config.with_name("renamed.yaml")
    renamed.write_text("name: b\n")
    synth_cache.cached(renamed, "s", synthesizer(calls), root=root, source="src1")
    assert len(calls) == 5


def test_the_source_digest_follows_every_package_file(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "data").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "data" / "pins.yaml").write_text("v: 1\n")
    harness = tmp_path / "conftest.py"
    harness.write_text("SETTINGS = 1\n")
    before = synth_cache.source_digest.__wrapped__(package, (harness,))
    (package / "data" / "pins.yaml").write_text("v: 2\n")
    assert synth_cache.source_digest.__wrapped__(package, (harness,)) != before
    (package / "data" / "pins.yaml").write_text("v: 1\n")
    assert synth_cache.source_digest.__wrapped__(package, (harness,)) == before
    harness.write_text("SETTINGS = 2\n")
    assert synth_cache.source_digest.__wrapped__(package, (harness,)) != before
    harness.write_text("SETTINGS = 1\n")
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert synth_cache.source_digest.__wrapped__(package, (harness,)) == before


def test_concurrent_askers_synthesize_once(tmp_path: Path, config: Path) -> None:
    calls: list[Path] = []
    results: list[dict[str, Any]] = []

    def ask() -> None:
        result, _ = synth_cache.cached(
            config, "s", synthesizer(calls, delay=0.3), root=tmp_path / "c", source="src1"
        )
        results.append(result)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert [r["n"] for r in results] == [1, 1, 1]


def test_a_failed_synthesis_stores_nothing(tmp_path: Path, config: Path) -> None:
    root = tmp_path / "c"

    def broken(outdir: Path) -> dict[str, Any]:
        outdir.mkdir(parents=True)
        raise RuntimeError("cdk-nag found something")

    with pytest.raises(RuntimeError, match="cdk-nag found something"):
        synth_cache.cached(config, "s", broken, root=root, source="src1")
    assert [p.name for p in root.iterdir()] == [".locks"]
    calls: list[Path] = []
    result, _ = synth_cache.cached(config, "s", synthesizer(calls), root=root, source="src1")
    assert result["n"] == 1


def test_prune_keeps_only_the_current_sources(tmp_path: Path, config: Path) -> None:
    root = tmp_path / "c"
    for source in ("old", "new"):
        synth_cache.cached(config, "s", synthesizer([]), root=root, source=source)
    # A session that started on the old sources a minute ago keeps its entry...
    synth_cache.prune(root, "new", now=time.time() + 60)
    kept = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    assert [name.split("-")[0] for name in kept] == ["new", "old"]
    # ...and once it is older than any suite runs, it goes.
    synth_cache.prune(root, "new", now=time.time() + synth_cache.PRUNE_AFTER_SECONDS + 1)
    kept = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    assert len(kept) == 1 and kept[0].startswith("new-")
    assert json.loads((root / kept[0] / synth_cache.RESULT).read_text())["n"] == 1
