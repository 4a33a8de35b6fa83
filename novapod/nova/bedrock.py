"""Amazon Bedrock facts about imported Nova models (novapod/data/bedrock.yaml), loaded once.

Where and for which models Bedrock offers on-demand inference of a Nova model imported
from SageMaker AI; `config/checks.py` refuses a `deployment: on-demand` outside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any

from novapod import yamlsafe


@dataclass(frozen=True)
class OnDemand:
    """Where Bedrock deploys an imported Nova model for on-demand inference, with the
    pages that say so."""

    source: str
    checked: date
    regions: tuple[str, ...]
    models: tuple[str, ...]  # catalog model names
    techniques_source: str
    techniques: tuple[str, ...]  # catalog technique names (parameter-efficient ones)


@cache
def on_demand() -> OnDemand:
    return parse_on_demand(yamlsafe.load_packaged("novapod", "data/bedrock.yaml"))


def parse_on_demand(data: dict[str, Any]) -> OnDemand:
    """Check and type the on_demand section of novapod/data/bedrock.yaml."""
    section = data["on_demand"]
    checked = section["checked"]
    if not isinstance(checked, date):
        raise ValueError(f"novapod/data/bedrock.yaml: on_demand.checked: {checked!r} is not a date")
    facts = OnDemand(
        source=str(section["source"]),
        checked=checked,
        regions=tuple(str(r) for r in section["regions"]),
        models=tuple(str(m) for m in section["models"]),
        techniques_source=str(section["techniques_source"]),
        techniques=tuple(str(t) for t in section["techniques"]),
    )
    if not (facts.regions and facts.models and facts.techniques):
        raise ValueError("novapod/data/bedrock.yaml: on_demand lists no region, model or technique")
    return facts
