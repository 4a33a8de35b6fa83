"""The storage section: bucket lifecycles and the optional FSx for Lustre."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from pydantic import AfterValidator, Field

from novapod.config.base import _Model
from novapod.config.fields import LustreThroughput, ZoneId, _lustre_size, _lustre_size_schema


class Lustre(_Model):
    """A customer-managed FSx for Lustre file system (PERSISTENT_2) for standard groups."""

    storage_capacity_gib: Annotated[int, AfterValidator(partial(_lustre_size, limit=None))] = Field(
        1200,
        description="Size in GiB: 1200, or a multiple of 2400.",
        json_schema_extra=_lustre_size_schema(None),
    )
    throughput_per_unit: LustreThroughput = Field(
        250, description="MB/s per TiB: 125, 250, 500 or 1000."
    )
    zone_id: ZoneId | None = Field(None, description="Zone of the file system; default the first.")
    data_repository_prefix: str = Field(
        "fsx/",
        pattern=r"^([A-Za-z0-9!_.*'()-]+/)*$",
        description="Prefix in the data bucket linked to /data on the file system.",
    )


class Storage(_Model):
    noncurrent_version_days: int = Field(
        90, ge=1, le=3650, description="Days before an overwritten object version expires."
    )
    access_log_days: int = Field(
        365, ge=1, le=3650, description="Days S3 server access logs are kept."
    )
    artifacts_infrequent_access_days: int | None = Field(
        90,
        ge=30,
        le=3650,
        description="Days before artifacts move to S3 Standard-IA; null keeps them in Standard.",
    )
    lustre: Lustre | None = Field(
        None, description="A customer-managed FSx for Lustre file system; none by default."
    )
