"""What a purchase handler's Lambda asset holds, and that it imports on its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def assert_asset_imports_alone(construct_root: Path) -> Path:
    """Lambda loads the handler from the asset root: no novapod, no aws_cdk there, only
    the handler package and the handler core beside it (provider.handler_code). Returns
    the staged directory."""
    from novapod.constructs.provider import _stage_with_core, core_handler_module

    name = construct_root.name
    stage = _stage_with_core(construct_root)
    shipped = sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())
    core = construct_root.parent / "handler_core"
    assert shipped == sorted(
        [
            "novapod_lambda/__init__.py",
            f"novapod_lambda/{name}/__init__.py",
            *(
                f"novapod_lambda/{name}/handler/{p.name}"
                for p in construct_root.glob("handler/*.py")
            ),
            *(f"novapod_lambda/handler_core/{p.name}" for p in core.glob("*.py")),
        ]
    )
    module = core_handler_module(construct_root)
    assert module == f"novapod_lambda.{name}.handler.index"
    probe = (
        f"import sys, {module} as h; "
        "assert callable(h.on_event) and callable(h.is_complete); "
        "assert not [m for m in sys.modules if m.split('.')[0] in ('novapod', 'aws_cdk')]"
    )
    # No bytecode written into the stage: the asset is exactly its sources.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "-c", probe], cwd=stage, check=True, env=env)
    assert not list(stage.rglob("__pycache__"))
    return stage
