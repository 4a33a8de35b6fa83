"""Which AWS-owned ECR repositories HyperPod nodes pull from, per region.

The registries are data (novapod/data/node_images.yaml, loaded once); this module turns
them into the repositories of one region, for the execution roles' pull permissions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from novapod import yamlsafe
from novapod.pins import HealthAgentPin

SOURCE = "novapod/data/node_images.yaml"


@dataclass(frozen=True, order=True)
class ImageRepository:
    """One ECR repository: `account.dkr.ecr.region.amazonaws.com/name`."""

    region: str
    account: str
    name: str


@dataclass(frozen=True)
class NodeImageRegistries:
    eks_registries: dict[str, str]  # region -> account
    eks_repositories: tuple[str, ...]
    efa_repository: str
    efa_account: str
    efa_chart_region: str

    def system_repositories(
        self, region: str, health_agent: HealthAgentPin
    ) -> tuple[ImageRepository, ...]:
        """What nodes in `region` pull: EKS add-ons, EFA device plugin, health agent.

        The health agent's registries are the ones the bootstrap sets the chart's image
        from (novapod/data/hyperpod_dependencies.yaml): one source for both.
        """
        account = self.eks_registries.get(region)
        if account is None:
            raise ValueError(
                f"region: {region} has no Amazon EKS add-on image registry in {SOURCE}; "
                "add it from https://docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html"
            )
        eks = [ImageRepository(region, account, name) for name in self.eks_repositories]
        # The chart's image, and the RIG install's copy of it in the cluster's region.
        efa = {
            ImageRepository(r, self.efa_account, self.efa_repository)
            for r in (self.efa_chart_region, region)
        }
        agent_account = health_agent.registry_accounts.get(region)
        if agent_account is None:
            raise ValueError(
                f"region: {region} has no HyperPod health-monitoring agent registry in "
                "novapod/data/hyperpod_dependencies.yaml; add it from the chart's "
                "health-monitoring-agent README"
            )
        agent = ImageRepository(region, agent_account, health_agent.repository)
        return (*eks, *sorted(efa), agent)


@cache
def node_image_registries() -> NodeImageRegistries:
    return parse_node_image_registries(yamlsafe.load_packaged("novapod", "data/node_images.yaml"))


def parse_node_image_registries(data: dict[str, Any]) -> NodeImageRegistries:
    """Check and type novapod/data/node_images.yaml (accounts are 12-digit strings)."""
    efa = data["efa_device_plugin"]
    accounts = {
        **{f"eks_registries.{r}": a for r, a in data["eks_registries"].items()},
        "efa_device_plugin.account": efa["account"],
    }
    for where, account in accounts.items():
        if not (isinstance(account, str) and len(account) == 12 and account.isdigit()):
            raise ValueError(
                f"{SOURCE}: {where} must be a quoted 12-digit account, not {account!r}"
            )
    return NodeImageRegistries(
        eks_registries=dict(data["eks_registries"]),
        eks_repositories=tuple(data["eks_repositories"]),
        efa_repository=str(efa["repository"]),
        efa_account=efa["account"],
        efa_chart_region=str(efa["chart_region"]),
    )
