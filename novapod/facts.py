"""EKS and HyperPod facts kept as data (novapod/data/eks.yaml), loaded once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import botocore.loaders  # type: ignore[import-untyped]
import botocore.model  # type: ignore[import-untyped]
import yaml

# Managed by novapod as EKS add-ons. CoreDNS is not among them: it is a Deployment, and
# a managed coredns add-on on a cluster without nodes (HyperPod brings the first ones)
# stays DEGRADED and stalls the stack; the RIG install also patches it. The copy EKS
# bootstraps itself serves until then.
ADDON_NAMES = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")


@dataclass(frozen=True)
class EksFacts:
    supported_versions: tuple[str, ...]
    default_version: str
    addons: dict[str, dict[str, str]]  # kubernetes version -> add-on -> version
    min_vpc_cni_for_rig: str
    rig_regions: tuple[str, ...]

    def addon_versions(self, kubernetes_version: str) -> dict[str, str] | None:
        return self.addons.get(kubernetes_version)


@cache
def eks_facts() -> EksFacts:
    text = resources.files("novapod").joinpath("data/eks.yaml").read_text(encoding="utf-8")
    return parse_eks_facts(yaml.safe_load(text))


def parse_eks_facts(data: dict[str, Any]) -> EksFacts:
    """Check and type novapod/data/eks.yaml."""
    addons = {
        str(k): {str(a): str(v) for a, v in pins.items()} for k, pins in data["addons"].items()
    }
    minimum = str(data["min_vpc_cni_for_rig"])
    for version, pins in addons.items():
        missing = [a for a in ADDON_NAMES if a not in pins]
        if missing:
            raise ValueError(f"novapod/data/eks.yaml: add-ons for {version} lack {missing}")
        if version_tuple(pins["vpc-cni"]) < version_tuple(minimum):
            raise ValueError(
                f"novapod/data/eks.yaml: vpc-cni {pins['vpc-cni']} for {version} is older than "
                f"{minimum}, which restricted instance groups need"
            )
    return EksFacts(
        supported_versions=tuple(str(v) for v in data["supported_kubernetes_versions"]),
        default_version=str(data["default_kubernetes_version"]),
        addons=addons,
        min_vpc_cni_for_rig=minimum,
        rig_regions=tuple(data["rig_regions"]),
    )


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
