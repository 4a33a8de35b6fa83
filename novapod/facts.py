"""EKS and HyperPod facts kept as data (novapod/data/eks.yaml), loaded once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any, Literal

import botocore.loaders  # type: ignore[import-untyped]
import botocore.model  # type: ignore[import-untyped]

from novapod import yamlsafe

# Managed by novapod as EKS add-ons. CoreDNS is not among them: it is a Deployment, and
# a managed coredns add-on on a cluster without nodes (HyperPod brings the first ones)
# stays DEGRADED and stalls the stack; the RIG install also patches it. The copy EKS
# bootstraps itself serves until then.
ADDON_NAMES = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")

SupportStatus = Literal["standard", "extended", "ended"]


@dataclass(frozen=True)
class SupportWindow:
    """When EKS ends standard (then extended, charged) support of a Kubernetes version."""

    end_of_standard_support: date
    end_of_extended_support: date

    def status(self, on: date) -> SupportStatus:
        if on < self.end_of_standard_support:
            return "standard"
        if on < self.end_of_extended_support:
            return "extended"
        return "ended"


@dataclass(frozen=True)
class EksFacts:
    as_of: date  # when the EKS facts were last checked
    # The Kubernetes versions SageMaker HyperPod lists, the page that lists them, and when
    # it was read.
    supported_versions: tuple[str, ...]
    supported_source: str
    supported_checked: date
    default_version: str
    support_calendar: dict[str, SupportWindow]
    addons: dict[str, dict[str, str]]  # kubernetes version -> add-on -> version
    min_vpc_cni_for_rig: str
    rig_regions: tuple[str, ...]

    def addon_versions(self, kubernetes_version: str) -> dict[str, str] | None:
        return self.addons.get(kubernetes_version)

    @property
    def usable_versions(self) -> tuple[str, ...]:
        """The versions a config may name: listed by HyperPod and pinned here."""
        return tuple(v for v in self.supported_versions if v in self.addons)

    def support_status(self, kubernetes_version: str, on: date) -> SupportStatus | None:
        """EKS support of a version on a day; None for a version without a calendar entry."""
        window = self.support_calendar.get(kubernetes_version)
        return window.status(on) if window else None

    def support_warning(self, kubernetes_version: str, on: date | None = None) -> str | None:
        """One sentence when a version is past EKS standard support on `on` (default:
        today), else None. For `novapod validate` and synthesis to print."""
        on = on or date.today()
        window = self.support_calendar.get(kubernetes_version)
        if window is None or window.status(on) == "standard":
            return None
        newest = max(self.usable_versions, key=version_tuple)
        if window.status(on) == "extended":
            advice = (
                f"Upgrade one minor version at a time towards {newest}"
                if kubernetes_version != newest
                else "It is the newest version SageMaker HyperPod lists "
                f"({self.supported_source}); upgrade once it lists a newer one"
            )
            return (
                f"eks.kubernetes_version: {kubernetes_version} left EKS standard support on "
                f"{window.end_of_standard_support}; EKS charges extended-support rates for "
                f"the cluster until {window.end_of_extended_support}, then upgrades it "
                f"itself. {advice} (docs/operations.md: Upgrading Kubernetes)."
            )
        return (
            f"eks.kubernetes_version: {kubernetes_version} left EKS extended support on "
            f"{window.end_of_extended_support}; EKS creates no new clusters of it and "
            f"upgrades existing ones itself. Use {newest} "
            "(docs/operations.md: Upgrading Kubernetes)."
        )


def support_warning(kubernetes_version: str, on: date | None = None) -> str | None:
    """The shipped facts' support_warning (see EksFacts.support_warning)."""
    return eks_facts().support_warning(kubernetes_version, on)


@cache
def eks_facts() -> EksFacts:
    return parse_eks_facts(yamlsafe.load_packaged("novapod", "data/eks.yaml"))


def parse_eks_facts(data: dict[str, Any]) -> EksFacts:
    """Check and type novapod/data/eks.yaml."""
    addons = {
        str(k): {str(a): str(v) for a, v in pins.items()} for k, pins in data["addons"].items()
    }
    minimum = str(data["min_vpc_cni_for_rig"])
    supported = tuple(str(v) for v in data["supported_kubernetes_versions"])
    default = str(data["default_kubernetes_version"])
    as_of = _date(data["as_of"], "as_of")
    calendar = {
        str(v): SupportWindow(
            end_of_standard_support=_date(w["end_of_standard_support"], f"support_calendar.{v}"),
            end_of_extended_support=_date(w["end_of_extended_support"], f"support_calendar.{v}"),
        )
        for v, w in data["support_calendar"].items()
    }
    for version, pins in addons.items():
        if version not in supported:
            raise ValueError(
                f"novapod/data/eks.yaml: add-ons pinned for {version}, which is not in "
                "supported_kubernetes_versions"
            )
        if version not in calendar:
            raise ValueError(f"novapod/data/eks.yaml: support_calendar lacks {version}")
        missing = [a for a in ADDON_NAMES if a not in pins]
        if missing:
            raise ValueError(f"novapod/data/eks.yaml: add-ons for {version} lack {missing}")
        if version_tuple(pins["vpc-cni"]) < version_tuple(minimum):
            raise ValueError(
                f"novapod/data/eks.yaml: vpc-cni {pins['vpc-cni']} for {version} is older than "
                f"{minimum}, which restricted instance groups need"
            )
    if default not in addons:
        raise ValueError(f"novapod/data/eks.yaml: the default {default} has no add-on pins")
    # The default is the newest version HyperPod lists that novapod pins: a newer one
    # HyperPod does not list may not get a HyperPod AMI; an older one ages out of support
    # sooner. Whether it is past EKS standard support is for `novapod validate` to warn.
    newest = max((v for v in supported if v in addons), key=version_tuple)
    if default != newest:
        raise ValueError(
            f"novapod/data/eks.yaml: the default {default} is not {newest}, the newest "
            "version in supported_kubernetes_versions with add-on pins"
        )
    return EksFacts(
        as_of=as_of,
        supported_versions=supported,
        supported_source=str(data["supported_kubernetes_versions_source"]),
        supported_checked=_date(
            data["supported_kubernetes_versions_checked"], "supported_kubernetes_versions_checked"
        ),
        default_version=default,
        support_calendar=calendar,
        addons=addons,
        min_vpc_cni_for_rig=minimum,
        rig_regions=tuple(data["rig_regions"]),
    )


def _date(value: Any, field: str) -> date:
    """YAML reads 2026-11-30 as a date; accept the same text quoted."""
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise ValueError(f"novapod/data/eks.yaml: {field}: {value!r} is not a date") from None


def version_tuple(version: str) -> tuple[int, ...]:
    """v1.20.1-eksbuild.3 -> (1, 20, 1)."""
    core = version.lstrip("v").split("-", 1)[0]
    return tuple(int(p) for p in core.split("."))


@cache
def sagemaker_enum(shape: str) -> frozenset[str]:
    """Allowed values of a SageMaker API enum, from the installed botocore model."""
    return frozenset(_sagemaker_model().shape_for(shape).enum)


@cache
def _sagemaker_model() -> Any:
    """The SageMaker service model that ships with botocore, read from its data files.

    A botocore Session would also read AWS_PROFILE, ~/.aws/config and the credentials
    file, so a missing profile or a broken file would break offline commands (validate,
    plan, schema, cdk synth). The Loader reads only model files, and only botocore's
    own copy (not ~/.aws/models or AWS_DATA_PATH), so every machine validates alike.
    """
    loader = botocore.loaders.Loader(
        extra_search_paths=[botocore.loaders.Loader.BUILTIN_DATA_PATH],
        include_default_search_paths=False,
    )
    data = loader.load_service_model("sagemaker", "service-2")
    return botocore.model.ServiceModel(data, service_name="sagemaker")


def plan_instance_types() -> frozenset[str]:
    """Instance types SearchTrainingPlanOfferings accepts."""
    return sagemaker_enum("ReservedCapacityInstanceType")


def cluster_instance_types() -> frozenset[str]:
    """Instance types a HyperPod instance group accepts."""
    return sagemaker_enum("ClusterInstanceType")
