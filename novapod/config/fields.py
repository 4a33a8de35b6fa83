"""Value types and rules more than one section uses: zone IDs, instance types,
plan names, CloudWatch Logs retention and FSx for Lustre sizes."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints

# Retention values CloudWatch Logs accepts.
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192,
    2557, 2922, 3288, 3653,
)  # fmt: skip


FSX_THROUGHPUTS = (125, 250, 500, 1000)

INSTANCE_TYPE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"

ZONE_ID_PATTERN = r"^[a-z]{2,5}\d{1,2}-az\d{1,2}$"
# A zone *name* (us-east-1a, us-gov-west-1b, us-east-1-bos-1a): what people type
# instead of an ID.
ZONE_NAME = re.compile(r"^(?P<region>[a-z]{2}(-gov)?-[a-z]+-\d{1,2})(-[a-z]{3}-\d)?[a-z]$")
ZoneId = Annotated[str, StringConstraints(pattern=ZONE_ID_PATTERN)]

PlanName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$")]


def _lustre_size(value: int, *, limit: int | None) -> int:
    """FSx for Lustre (SSD) sizes: 1200 GiB or a multiple of 2400 GiB."""
    if not (value == 1200 or (value > 0 and value % 2400 == 0)) or (limit and value > limit):
        bound = f" up to {limit}" if limit else ""
        raise ValueError(
            f"{value} GiB is not an FSx for Lustre size; use 1200 or a multiple of 2400{bound}"
        )
    return value


def _lustre_throughput(value: int) -> int:
    if value not in FSX_THROUGHPUTS:
        raise ValueError(f"{value} is not offered; use one of 125, 250, 500, 1000")
    return value


LustreThroughput = Annotated[
    int,
    AfterValidator(_lustre_throughput),
    Field(json_schema_extra={"enum": list(FSX_THROUGHPUTS)}),
]


def _lustre_size_schema(limit: int | None) -> dict[str, Any]:
    """The same sizes as _lustre_size, for editors."""
    multiple: dict[str, Any] = {"multipleOf": 2400, "minimum": 2400}
    if limit:
        multiple["maximum"] = limit
    return {"anyOf": [{"const": 1200}, multiple]}


def _log_retention_schema() -> dict[str, Any]:
    return {"enum": list(LOG_RETENTION_DAYS)}


def _log_retention(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        nearest = min(LOG_RETENTION_DAYS, key=lambda d: abs(d - value))
        raise ValueError(f"CloudWatch Logs does not offer {value} days; nearest is {nearest}")
    return value
