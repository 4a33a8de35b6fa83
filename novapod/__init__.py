"""novapod: one YAML file to the AWS CDK stacks of an Amazon Nova customization
environment on SageMaker HyperPod.

The public entry point, for using novapod's stacks inside your own CDK app::

    import aws_cdk as cdk
    import novapod

    app = cdk.App()
    prod = cdk.Stage(app, "Prod")
    stacks = novapod.build_environment(prod, novapod.load_config("config/prod.yaml"))
    app.synth()

`build_environment` adds the checks `make synth` runs (cdk-nag's AWS Solutions and the
config's `compliance` packs); `policy_checks=False` leaves them to you.

`import novapod` stays light (the `novapod` command imports it too): the CDK is
loaded only when `build_environment` or `add_policy_checks` is called.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from novapod.config import ConfigError, NovapodConfig, load_config, parse_config

if TYPE_CHECKING:
    from collections.abc import Sequence

    from constructs import Construct

    from novapod.config import CompliancePack
    from novapod.environment import EnvironmentStacks

__all__ = [
    "ConfigError",
    "NovapodConfig",
    "add_policy_checks",
    "build_environment",
    "feature_flags",
    "load_config",
    "parse_config",
]


def build_environment(
    scope: Construct,
    config: NovapodConfig | str | os.PathLike[str],
    *,
    policy_checks: bool = True,
) -> EnvironmentStacks:
    """Add one environment's stacks to `scope` (an App or a Stage) and return them.

    `config` is a `NovapodConfig` (from `load_config` or `parse_config`) or the path
    of a YAML file, which is loaded and validated (`ConfigError` if it is invalid).

    The returned `EnvironmentStacks` holds the stacks: `network` and `storage`
    always; `capacity`, `eks` and `hyperpod` when the config has training plans, an
    `eks` section and a `hyperpod` section (else None). Pass their constructs (the
    VPC handle, the KMS key, the buckets, the clusters) to your own stacks; those
    references become `Fn::GetStackOutput` (see `feature_flags`).

    With `policy_checks` (the default) the checks of novapod's own app run at synth, as
    `add_policy_checks(scope, config.compliance)` adds them: cdk-nag's AWS Solutions and
    the config's `compliance` packs, over the whole App (your stacks too); an
    unacknowledged finding fails synthesis. Each pack is added once per App, so a
    further `add_policy_checks` call adds only packs not there yet.

    novapod's stacks are built and tested with its feature flags (`feature_flags()`),
    among them weak cross-stack references. They are set on `scope` when it has no
    children yet (a fresh Stage, or an App before its first stack). A scope that
    already has children must carry them already, for instance
    `App(context=novapod.feature_flags())`; otherwise this raises ValueError naming
    the flags that differ. Stack names are `novapod-<name>-<kind>` inside a Stage too
    (set, not derived from the stage), as `novapod launch` and `results` look them up.
    """
    from novapod.environment import add_policy_checks as add  # noqa: PLC0415 - loads the CDK
    from novapod.environment import build_environment as compose  # noqa: PLC0415

    if not isinstance(config, NovapodConfig):
        config = load_config(config)
    _apply_feature_flags(scope)
    stacks = compose(scope, config)
    if policy_checks:
        add(scope, config.compliance)
    return stacks


def add_policy_checks(scope: Construct, compliance: Sequence[CompliancePack] = ()) -> None:
    """Run cdk-nag's AWS Solutions checks, and the `compliance` packs (a config's
    `compliance` list: "nist-800-53-r5", "hipaa"), at synth; an unacknowledged finding
    fails it. The checks cover the whole App that `scope` belongs to, and each pack is
    added once per App (`build_environment` has already added its config's)."""
    from novapod.environment import add_policy_checks as add  # noqa: PLC0415 - loads the CDK

    add(scope, compliance)


def feature_flags() -> dict[str, Any]:
    """The CDK context (feature flags) novapod's stacks are built and tested with,
    shipped in the package (novapod/data/feature_flags.json)."""
    from novapod.environment import feature_flags as flags  # noqa: PLC0415 - loads the CDK

    return flags()


def _apply_feature_flags(scope: Construct) -> None:
    flags = feature_flags()
    differ = sorted(k for k, v in flags.items() if scope.node.try_get_context(k) != v)
    if not differ:
        return
    if scope.node.children:
        raise ValueError(
            f"{scope.node.path or 'the App'} already has constructs, so novapod cannot set "
            f"its feature flags on it; {len(differ)} differ ({', '.join(differ[:3])}"
            f"{', ...' if len(differ) > 3 else ''}): pass a fresh Stage, or create the App "
            "with App(context=novapod.feature_flags())"
        )
    for key in differ:
        scope.node.set_context(key, flags[key])
