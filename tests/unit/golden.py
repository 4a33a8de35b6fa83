"""The fixed training-plan request whose name the tests pin (shared by several files).

Its name in environment dev, `novapod-dev-main-e41dea05`, was checked against the
original implementation: if it changes, every deployed plan would be bought again.
"""

from __future__ import annotations

from novapod.capacity import PlanRequest

REQUEST = PlanRequest(
    name="main",
    instance_type="ml.p5.48xlarge",
    instance_count=4,
    duration_hours=48,
    start_after="2027-01-04T00:00:00+00:00",
    end_before="2027-02-28T00:00:00+00:00",
    target_resources=("hyperpod-cluster",),
    jobs=("sft",),
    required_instance_hours=120.0,
    reserved_instance_hours=192.0,
    waste_instance_hours=72.0,
)
NAME = "novapod-dev-main-e41dea05"

# A job whose plan (listed as "main") is 4 x ml.p5.48xlarge for 48 h, for
# hyperpod-cluster, no window; SFT_PLAN is that plan's name in environment dev.
SFT = {
    "name": "sft",
    "model": "lite",
    "technique": "sft-lora",
    "hours_per_run": 10,
    "runs": 3,
    "plan": "main",
    "data": {"train": "sft/train.jsonl"},
}
SFT_PLAN = "novapod-dev-main-951cd24c"
