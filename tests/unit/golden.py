"""The fixed training-plan request whose name the tests pin (shared by several files).

Its name in environment dev, `novapod-dev-main-e41dea05`, was checked against the
original implementation: if it changes, every deployed plan would be bought again.
"""

from __future__ import annotations

from novapod.planning import PlanRequest

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
