"""Every handler's Lambda asset (the custom resources' and the scheduled check's): its own
package and the handler core, importing nothing else (provider.handler_code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from novapod.constructs import provider
from tests.handlers.asset_probe import assert_asset_imports_alone, imports_outside

CONSTRUCTS = Path(provider.__file__).resolve().parent
# Each construct with a handler/ package, and the entry points its functions name.
HANDLERS = {
    "training_plan": ("on_event", "is_complete"),
    "bedrock_model": ("on_event", "is_complete"),
    "nova_environment": ("on_event", "is_complete"),
    "cluster_bootstrap": ("on_event", "is_complete"),
    "recipe_bundle": ("on_event",),
    "monitor": ("check",),
}


def test_every_handler_package_is_listed() -> None:
    assert sorted(p.parent.name for p in CONSTRUCTS.glob("*/handler")) == sorted(HANDLERS)


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_the_asset_holds_the_handler_and_the_core_and_imports_on_its_own(name: str) -> None:
    assert_asset_imports_alone(CONSTRUCTS / name, HANDLERS[name])


def test_an_import_from_outside_the_asset_is_found(tmp_path: Path) -> None:
    # The probe must be able to fail: a handler importing novapod, a module the asset
    # lacks, or a package the runtime does not have (even inside a function).
    handler = tmp_path / "novapod_lambda" / "x" / "handler"
    handler.mkdir(parents=True)
    (handler / "index.py").write_text(
        "import json\n"
        "from ...handler_core import aws\n"
        "from . import missing\n"
        "def on_event(event, context):\n"
        "    from novapod import cli\n"
        "    import yaml\n"
    )
    assert imports_outside(tmp_path) == [
        "novapod_lambda/x/handler/index.py: ...handler_core",
        "novapod_lambda/x/handler/index.py: .missing",
        "novapod_lambda/x/handler/index.py: novapod",
        "novapod_lambda/x/handler/index.py: yaml",
    ]
