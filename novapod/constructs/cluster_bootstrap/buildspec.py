"""The CodeBuild buildspec of ClusterBootstrap, rendered from the pins (no CDK).

The buildspec carries every pinned value as an environment variable and runs
`bootstrap.sh` (fetched from the construct's S3 asset) with standard input closed, so
nothing in the job can wait for an answer. A null pin becomes `UNPINNED`, which the
script refuses. The custom-resource handler passes the same variables, taken from the
event's own properties, as overrides with `BOOTSTRAP_MODE` and `CLUSTER_NAME`; CDK
supplies the asset location. With Nova jobs, `access_variables` adds the namespace and
access objects (novapod/nova/kubernetes.py) to those overrides only, not to the
buildspec: a new namespace changes the resource, not the project.

What a successful install records in the marker ConfigMap is read from these variables
(`recorded_marker`): the script records CHART_REVISION and RIG_REVISION (the pins'
`revision`, computed here and nowhere else) and NOVA_ACCESS_SHA256, so `novapod status`
computes what the cluster should record from the same `build_environment` the construct
puts on its resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from novapod.nova.kubernetes import NovaAccess, compact_json
from novapod.pins import HyperPodDependencies

Mode = Literal["install", "delete"]
MODES: tuple[str, ...] = ("install", "delete")
UNPINNED = "UNPINNED"
MARKER_CONFIGMAP = "novapod-hyperpod-dependencies"
# The marker's keys that say what is installed (bootstrap.sh marker_put also writes
# nova_access_objects, nova_namespace, pins_sha256 and written_by).
CHART_REVISION_KEY = "chart_revision"
RIG_REVISION_KEY = "rig_revision"
NOVA_ACCESS_KEY = "nova_access_sha256"
# Where the build unpacks the scripts asset (not the source directory: the project
# has no source; the asset is fetched by the first command).
SCRIPTS_DIR = "/tmp/novapod-bootstrap"  # noqa: S108 - fixed path inside the build container
SCRIPTS_ZIP = "/tmp/novapod-bootstrap.zip"  # noqa: S108
# StartBuild refuses an override longer than this ("InvalidInputException:
# EnvironmentVariable should be at most 4096 characters", seen in
# wolfeidau/buildkite-serverless-agent#35); the quotas page
# (docs.aws.amazon.com/codebuild/latest/userguide/limits.html) does not list it, so the
# observed limit is enforced at synth, name and value together to be safe.
MAX_VARIABLE_CHARS = 4096


def build_spec(pins: HyperPodDependencies, mode: Mode, rig: bool, region: str) -> dict[str, Any]:
    """A buildspec (version 0.2) that runs `bootstrap.sh <mode>` with these pins."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return {
        "version": "0.2",
        "env": {
            "shell": "bash",
            "variables": pin_variables(pins, mode=mode, rig=rig, region=region),
        },
        "phases": {
            "build": {
                "commands": [
                    'aws s3 cp "s3://${SCRIPTS_BUCKET}/${SCRIPTS_KEY}" '
                    f"{SCRIPTS_ZIP} --only-show-errors",
                    f"rm -rf {SCRIPTS_DIR} && unzip -q -o {SCRIPTS_ZIP} -d {SCRIPTS_DIR}",
                    f'bash {SCRIPTS_DIR}/bootstrap.sh "${{BOOTSTRAP_MODE}}" < /dev/null',
                ]
            }
        },
    }


def pin_variables(
    pins: HyperPodDependencies, *, mode: Mode, rig: bool, region: str
) -> dict[str, str]:
    """Environment of bootstrap.sh: the pins, the mode, the RIG switch and the images
    of the cluster's region."""

    def value(pin: str | None) -> str:
        return UNPINNED if pin is None else pin

    chart, rig_pin = pins.chart, pins.rig
    return {
        "BOOTSTRAP_MODE": mode,
        "INSTALL_RIG": "true" if rig else "false",
        "PINS_SHA256": pins.digest(),
        "MARKER_CONFIGMAP": MARKER_CONFIGMAP,
        "HYPERPOD_REPO_URL": pins.repository,
        "CHART_COMMIT": value(chart.commit),
        # What the build records once the chart is installed (the script refuses an
        # unpinned commit before it records anything).
        "CHART_REVISION": chart.revision if chart.commit else UNPINNED,
        "CHART_BRANCH": chart.branch,
        "CHART_PATH": chart.path,
        "CHART_RELEASE": chart.release,
        "CHART_NAMESPACE": chart.namespace,
        "CHART_TIMEOUT": chart.timeout,
        "CHART_WAIT": "true" if chart.wait else "false",
        "RIG_COMMIT": value(rig_pin.commit),
        "RIG_REVISION": rig_pin.revision if rig_pin.commit else UNPINNED,
        "RIG_BRANCH": rig_pin.branch,
        "RIG_SCRIPT": rig_pin.script,
        "RIG_RELEASE": rig_pin.release,
        "HMA_VALUES_KEY": pins.health_agent.values_key,
        "HMA_IMAGE": value(pins.health_agent.image(region)),
        "HELM_VERSION": pins.helm.version,
        "HELM_URL": pins.helm.url,
        "HELM_SHA256": value(pins.helm.sha256),
        "HELM_ARCHIVE_MEMBER": value(pins.helm.archive_member),
        "KUBECTL_VERSION": pins.kubectl.version,
        "KUBECTL_URL": pins.kubectl.url,
        "KUBECTL_SHA256": value(pins.kubectl.sha256),
        "YQ_VERSION": pins.yq.version,
        "YQ_URL": pins.yq.url,
        "YQ_SHA256": value(pins.yq.sha256),
    }


def access_variables(access: NovaAccess) -> dict[str, str]:
    """Environment of bootstrap.sh for the Nova namespace and its access objects.

    NOVA_NAMESPACE_MANIFEST is created only where the namespace does not exist yet;
    NOVA_ACCESS_MANIFEST (a kubectl List) is applied; NOVA_ACCESS_OBJECTS names those
    objects (`<namespace>/<type>/<name>`, space-separated) so the build can delete the
    ones a later config drops; NOVA_ACCESS_SHA256 is the change trigger.
    """
    variables = {
        "NOVA_NAMESPACE": access.namespace,
        "NOVA_NAMESPACE_MANIFEST": compact_json(access.namespace_object),
        "NOVA_ACCESS_MANIFEST": access.manifest(),
        "NOVA_ACCESS_OBJECTS": " ".join(access.refs()),
        "NOVA_ACCESS_SHA256": access.digest(),
    }
    for name, value in variables.items():
        if len(name) + len(value) > MAX_VARIABLE_CHARS:
            raise ValueError(
                f"the bootstrap build variable {name} would be {len(name) + len(value)} "
                f"characters; CodeBuild takes at most {MAX_VARIABLE_CHARS} per variable"
            )
    return variables


def build_environment(
    pins: HyperPodDependencies, *, rig: bool, region: str, access: NovaAccess | None
) -> dict[str, str]:
    """The environment of an install build: the resource's BuildEnvironment property."""
    return {
        **pin_variables(pins, mode="install", rig=rig, region=region),
        **(access_variables(access) if access else {}),
    }


def recorded_marker(environment: Mapping[str, str]) -> dict[str, str]:
    """What an install build run with `environment` records in the marker ConfigMap
    (bootstrap.sh do_install and install_nova_access): the chart's revision; the RIG
    script's when it installs the RIG dependencies (otherwise the build leaves the key as
    an earlier build wrote it); the Nova access objects' digest, empty without jobs."""
    recorded = {CHART_REVISION_KEY: environment["CHART_REVISION"]}
    if environment.get("INSTALL_RIG") == "true":
        recorded[RIG_REVISION_KEY] = environment["RIG_REVISION"]
    recorded[NOVA_ACCESS_KEY] = environment.get("NOVA_ACCESS_SHA256", "")
    return recorded
