"""The eks section: the EKS cluster that orchestrates HyperPod."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from novapod.config.base import _at, _Model
from novapod.config.fields import _log_retention, _log_retention_schema
from novapod.facts import eks_facts

PRINCIPAL_ARN = r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[A-Za-z0-9_+=,.@/-]+$"


def _kubernetes_versions() -> tuple[str, ...]:
    """Versions the validator accepts: supported by HyperPod and with pinned add-ons."""
    return eks_facts().usable_versions


def _ipv4_cidrs(value: list[str], everything: str) -> list[str]:
    """Each entry an IPv4 network in canonical form, none of them 0.0.0.0/0, none twice."""
    seen: set[str] = set()
    for cidr in value:
        try:
            network = ipaddress.IPv4Network(cidr, strict=True)
        except ValueError as exc:
            raise ValueError(f"{cidr!r} is not an IPv4 CIDR ({exc})") from None
        if network.prefixlen == 0:
            raise ValueError(f"0.0.0.0/0 {everything}; list your CIDRs")
        if cidr in seen:
            raise ValueError(f"{cidr} is listed twice; remove one")
        seen.add(cidr)
    return value


class Eks(_Model):
    """The EKS cluster that orchestrates HyperPod."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {
                "properties": {"endpoint": {"const": "public-and-private"}},
                "required": ["endpoint"],
            },
            "then": {
                "required": ["public_access_cidrs"],
                "properties": {"public_access_cidrs": {"minItems": 1}},
            },
            "else": {"properties": {"public_access_cidrs": {"maxItems": 0}}},
        }
    )

    kubernetes_version: str = Field(
        default_factory=lambda: eks_facts().default_version,
        description="A version SageMaker HyperPod lists for EKS that novapod/data/eks.yaml "
        "pins add-ons for; quoted. Default: the newest such version.",
        json_schema_extra=lambda schema: schema.update(enum=list(_kubernetes_versions())),
    )
    authentication_mode: Literal["API_AND_CONFIG_MAP", "API"] = Field(
        "API_AND_CONFIG_MAP", description="How the cluster authenticates IAM principals."
    )
    endpoint: Literal["private", "public-and-private"] = Field(
        "private", description="public-and-private needs public_access_cidrs."
    )
    public_access_cidrs: list[str] = Field(
        default_factory=list,
        max_length=40,
        description="CIDRs allowed to reach a public endpoint (not 0.0.0.0/0).",
    )
    private_access_cidrs: list[str] = Field(
        default_factory=list,
        max_length=40,
        description="IPv4 CIDRs outside the VPC (VPN, peered or transit-gateway networks) "
        "allowed HTTPS to the private endpoint; the VPC's own CIDR always is.",
    )
    admin_principals: list[Annotated[str, StringConstraints(pattern=PRINCIPAL_ARN)]] = Field(
        default_factory=list, description="IAM roles/users granted cluster admin (access entries)."
    )
    log_retention_days: int = Field(
        365,
        description="Control-plane and bootstrap log retention, in days.",
        json_schema_extra=_log_retention_schema(),
    )

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, value: str) -> str:
        facts = eks_facts()
        usable = ", ".join(facts.usable_versions)
        if value not in facts.supported_versions:
            listed = facts.supported_versions
            raise ValueError(
                f"{value} is not a Kubernetes version SageMaker HyperPod lists for EKS "
                f"clusters ({listed[0]} to {listed[-1]} on {facts.supported_source}, read "
                f"{facts.supported_checked}), so HyperPod may not create nodes for it; use "
                f"{usable}"
            )
        if facts.addon_versions(value) is None:
            raise ValueError(
                f"novapod has no pinned add-on versions for {value} yet; use "
                f"{usable} or add pins to novapod/data/eks.yaml"
            )
        return value

    @field_validator("public_access_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        return _ipv4_cidrs(value, "opens the API endpoint to the internet")

    @field_validator("private_access_cidrs")
    @classmethod
    def _private_cidrs(cls, value: list[str]) -> list[str]:
        return _ipv4_cidrs(value, "admits every address to the private endpoint")

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        return _log_retention(value)

    @model_validator(mode="after")
    def _endpoint(self) -> Eks:
        if self.endpoint == "public-and-private" and not self.public_access_cidrs:
            raise _at("public_access_cidrs", "a public endpoint needs an allow-list of CIDRs")
        if self.endpoint == "private" and self.public_access_cidrs:
            raise _at("public_access_cidrs", "only used with endpoint: public-and-private")
        return self
