"""A plan's deterministic name, from what it buys: one implementation for synth and Lambda.

`novapod.capacity.naming` derives `novapod-<env>-<plan>-<digest>` at synth; the TrainingPlan
handler recomputes the digest from the very properties it buys with and refuses a
mismatch, so a template edited by hand (or a construct bug) cannot buy 64 instances
under the approval of 4. Any change here renames every deployed plan (each environment
would buy its plans again): tests/unit/test_naming.py pins the names as literals.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

DIGEST_CHARS = 8


def purchase_inputs(
    *,
    instance_type: str,
    instance_count: int,
    duration_hours: int,
    start_after: str | None,
    end_before: str | None,
    target_resources: Iterable[str],
    retry: int = 0,
) -> dict[str, object]:
    """What is bought. `retry` joins only when set, so names without one never changed."""
    inputs: dict[str, object] = {
        "instance_type": instance_type,
        "instance_count": instance_count,
        "duration_hours": duration_hours,
        "start_after": start_after,
        "end_before": end_before,
        "target_resources": sorted(target_resources),
    }
    if retry:
        inputs["retry"] = retry
    return inputs


def purchase_digest(inputs: dict[str, object]) -> str:
    """The name's last part: a digest of `purchase_inputs`. Never change the encoding
    without a migration that adopts the old names (every plan would be bought again)."""
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:DIGEST_CHARS]
