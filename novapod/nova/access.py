"""What the Nova environment grants, as plain data: pure functions, no CDK.

`data_grants` lists what the jobs of the config read (dataset objects in the data
bucket or in other buckets), where they write, and the Lambda functions they call;
NovaStack turns it into the restricted execution role's policy. `sub_text` prepares a
bundle file for CloudFormation's Fn::Sub: the deploy-time placeholders stay, every
other `${...}` (OmegaConf interpolations in the recipes) is escaped as `${!...}`, which
Fn::Sub writes back as `${...}` (docs.aws.amazon.com/AWSCloudFormation/latest/
TemplateReference/intrinsic-function-reference-sub.html).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from novapod.nova.render import PLACEHOLDERS

if TYPE_CHECKING:
    from novapod.config import Job, NovapodConfig

SCIENTISTS_GROUP = "novapod-nova-scientists"
ENTRY_ID_DIGEST_CHARS = 10
BUNDLE_PREFIX = "recipes/"
# HyperPod's log groups, where the jobs log: /aws/sagemaker/Clusters/<cluster name>/<cluster
# id>. HyperPod creates them; no stack holds them, so they outlive the environment.
HYPERPOD_LOG_GROUP_PREFIX = "/aws/sagemaker/Clusters/"
_ESCAPE = re.compile(r"\$\{(?!(?:" + "|".join(PLACEHOLDERS) + r")\})")
_USED = re.compile(r"\$\{(" + "|".join(PLACEHOLDERS) + r")\}")


@dataclass(frozen=True)
class DataGrants:
    """What the jobs read and call. Keys are exact object keys (datasets are files)."""

    data_keys: tuple[str, ...] = ()  # keys in the environment's data bucket
    external: dict[str, tuple[str, ...]] = field(default_factory=dict)  # bucket -> keys
    lambdas: tuple[str, ...] = ()  # reward and custom-metrics function ARNs


def scientist_entry_id(principal: str) -> str:
    """Construct ID of a scientist's access entry: keyed by the principal, so reordering
    or removing a scientist never replaces (and collides with) another's entry."""
    digest = hashlib.sha256(principal.encode("utf-8")).hexdigest()[:ENTRY_ID_DIGEST_CHARS]
    return f"Scientist{digest}"


def _datasets(job: Job) -> Iterable[str]:
    if job.data is not None:
        yield job.data.train
        if job.data.validation is not None:
            yield job.data.validation
    if job.evaluation is not None and job.evaluation.dataset is not None:
        yield job.evaluation.dataset


def data_grants(config: NovapodConfig, jobs: Iterable[Job] | None = None) -> DataGrants:
    """The datasets and functions of every job (or of `jobs`), each once, in config
    order."""
    data: dict[str, None] = {}
    external: dict[str, dict[str, None]] = {}
    lambdas: dict[str, None] = {}
    for job in config.jobs if jobs is None else jobs:
        for location in _datasets(job):
            if location.startswith("s3://"):
                bucket, _, key = location.removeprefix("s3://").partition("/")
                external.setdefault(bucket, {})[key] = None
            else:
                data[location] = None
        lambdas.update(dict.fromkeys(job.lambda_arns))
    return DataGrants(
        data_keys=tuple(data),
        external={bucket: tuple(keys) for bucket, keys in external.items()},
        lambdas=tuple(lambdas),
    )


def placeholders_in(text: str) -> list[str]:
    """The deploy-time placeholders a bundle file uses, in PLACEHOLDERS order."""
    used = set(_USED.findall(text))
    return [name for name in PLACEHOLDERS if name in used]


def sub_text(text: str) -> str:
    """The text as an Fn::Sub template: placeholders kept, any other `${` as `${!`."""
    return _ESCAPE.sub("${!", text)


def bundle_key(path: str) -> str:
    """Where a bundle file lands in the artifacts bucket (index at recipes/index.json)."""
    return BUNDLE_PREFIX + path
