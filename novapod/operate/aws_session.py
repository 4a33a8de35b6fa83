"""The boto3 session of one CLI command, with botocore's service models read once per process.

A new `boto3.session.Session` makes a new botocore session, and each botocore session
makes its own data loader (`botocore.session.Session._register_data_loader`), whose
cache (`botocore.loaders.instance_cache`) lives and dies with it: every command, and in
the tests every `cli.main` call, parsed the service models, endpoint rule sets and
partitions of each client again (about 0.3 s of a `status`).

What a loader reads is static: the JSON files under its search paths (botocore's
`data/`, `~/.aws/models`, then each directory of `AWS_DATA_PATH` or the profile's
`data_path`; `botocore.loaders.create_loader`). So the loader is kept per `data_path`
value, and that value is still read from the session's config on every call, as
botocore reads it. Everything else stays per call: a new botocore session reads the
region, profile, credentials, endpoint URLs and config files from the environment when
its clients are made and signed, so a changed environment (another profile, other
credentials, `AWS_ENDPOINT_URL`) is seen by the next command as before, and a broken
config file or a missing profile fails at the same place with botocore's same error.
Clients of one botocore session share its loader in the same way
(`Session.create_client` passes `get_component('data_loader')` to each).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3  # type: ignore[import-untyped]
import botocore.loaders  # type: ignore[import-untyped]
import botocore.session  # type: ignore[import-untyped]


@cache
def _loader(data_path: str | None) -> Any:
    return botocore.loaders.create_loader(data_path)


def session(region: str | None) -> Any:
    """A new boto3 session in `region` whose botocore session reuses the process's loader."""
    core = botocore.session.get_session()
    # The lookup a new session's lazy loader would make (it raises what that would raise).
    loader = _loader(core.get_config_variable("data_path"))
    core.register_component("data_loader", loader)
    made = boto3.session.Session(botocore_session=core, region_name=region)
    # boto3 appends its own data directory to the loader's search paths on every new
    # session (boto3.session.Session._setup_loader); keep it once, as a fresh loader has it.
    paths = loader.search_paths
    paths[:] = list(dict.fromkeys(paths))
    return made
