"""Checks across sections, in one place: a rule that reads more than one section of
the config (zones against the region, instance groups against training plans, ...)
is a plain function here, and `problems` runs them all in reporting order.

A new section adds its cross-section checks here and calls them from `problems`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime
from typing import TYPE_CHECKING

from novapod import addressing, approval, planning
from novapod.config.base import _at, _FieldError
from novapod.config.capacity import TrainingPlanSpec
from novapod.config.hyperpod import RestrictedGroup, StandardGroup
from novapod.config.network import GATEWAY_ENDPOINTS, RIG_ENDPOINTS
from novapod.constructs.cluster_bootstrap.pins import default_pins
from novapod.facts import cluster_instance_types, eks_facts, plan_instance_types, support_warning
from novapod.node_images import node_image_registries

if TYPE_CHECKING:
    from novapod.config.root import NovapodConfig


def problems(config: NovapodConfig, now: datetime) -> list[_FieldError]:
    """Every cross-section finding, collected and reported at once, so one run of
    `novapod validate` shows all there is to fix. `now`: the time purchases are judged at."""
    found = list(network_problems(config))
    inverted = list(window_problems(config))
    found += inverted
    requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]] | None = None
    if not inverted:  # the planner would only report a negative window
        try:
            requests = config.training_plan_requests()
        except planning.PlanningError as exc:
            found.append(_at(planning_path(config, str(exc)), str(exc), root=True))
    found += hyperpod_problems(config, requests)
    found += service_limit_problems(config, requests or [])
    found += purchase_problems(config, requests or [], now)
    return found


def network_problems(config: NovapodConfig) -> Iterator[_FieldError]:
    """Zones of another region, subnets that do not fit, Lustre in a zone without a subnet."""
    for i, zone in enumerate(config.network.zone_ids):
        if not addressing.zone_id_matches_region(zone, config.region):
            where = (
                f"network.vpc.zone_ids[{i}]"
                if config.network.vpc
                else "network.existing_vpc.private_subnets"
            )
            yield _at(
                where,
                f"{zone} is not a zone of {config.region} (its zone IDs start with "
                f"{addressing.zone_id_prefix(config.region)}-az)",
                root=True,
            )
    vpc = config.network.vpc
    if vpc is not None:
        try:
            addressing.plan_subnets(
                vpc.cidr,
                list(vpc.zone_ids),
                vpc.private_subnet_prefix,
                None if config.network.closed else vpc.public_subnet_prefix,
            )
        except addressing.AddressPlanError as exc:
            yield _at("network.vpc.cidr", str(exc), root=True)
    lustre = config.storage.lustre
    if lustre is not None and lustre.zone_id and lustre.zone_id not in config.network.zone_ids:
        yield _at(
            "storage.lustre.zone_id",
            f"{lustre.zone_id} has no private subnet; use one of "
            f"{', '.join(config.network.zone_ids)}",
            root=True,
        )


def window_problems(config: NovapodConfig) -> Iterator[_FieldError]:
    """A window that ends before it starts, said as such (the planner only sees hours)."""
    for i, spec in enumerate(config.capacity.training_plans):
        start, end = spec.start_after, spec.end_before
        if start is not None and end is not None and end <= start:
            yield _at(
                f"capacity.training_plans[{i}].end_before",
                f"the window is inverted: end_before {end.isoformat()} is not after "
                f"start_after {start.isoformat()}; swap the two or correct the dates",
                root=True,
            )


def planning_path(config: NovapodConfig, message: str) -> str:
    """The config path a planner message is about (it names a workload or plan)."""
    match = re.match(r"(workload|training plan) '?([a-z0-9-]+)'?", message)
    if match:
        kind, name = match.groups()
        names = [
            item.name
            for item in (
                config.capacity.workloads if kind == "workload" else config.capacity.training_plans
            )
        ]
        for i, item_name in enumerate(names):
            if item_name == name:
                key = "workloads" if kind == "workload" else "training_plans"
                return f"capacity.{key}[{i}]"
    return "capacity"


def hyperpod_problems(
    config: NovapodConfig, requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]] | None
) -> Iterator[_FieldError]:
    """Checks of eks and hyperpod; those against plans only when the plans resolved."""
    if config.eks is not None and config.network.closed:
        yield _at(
            "network.closed",
            "the HyperPod dependencies install (ClusterBootstrap) downloads helm, kubectl, "
            "yq and the chart from the internet, which a closed network cannot reach; "
            "use closed: false with eks (mirrors in S3 are not supported yet)",
            root=True,
        )
    if config.hyperpod is None:
        return
    if config.eks is None:
        yield _at("hyperpod", "HyperPod is orchestrated by EKS; add an eks section", root=True)
    if requests is None:
        return
    plans = {spec.name: request for spec, request in requests}
    groups: list[tuple[str, RestrictedGroup | StandardGroup]] = [
        (f"hyperpod.restricted_instance_groups[{i}]", g)
        for i, g in enumerate(config.hyperpod.restricted_instance_groups)
    ] + [
        (f"hyperpod.instance_groups[{i}]", g) for i, g in enumerate(config.hyperpod.instance_groups)
    ]
    used: dict[str, str] = {}
    for path, group in groups:
        if group.training_plan is None:
            continue
        request = plans.get(group.training_plan)
        if request is None:
            yield _at(
                f"{path}.training_plan",
                f"{group.training_plan} is not in capacity.training_plans; add it there "
                f"(bought or adopted) or use one of {', '.join(plans) or 'none yet'}",
                root=True,
            )
            continue
        if group.training_plan in used:
            yield _at(
                f"{path}.training_plan",
                f"{group.training_plan} already serves {used[group.training_plan]}; a plan "
                "binds one instance group",
                root=True,
            )
            continue
        used[group.training_plan] = group.name
        if "hyperpod-cluster" not in request.target_resources:
            yield _at(
                f"{path}.training_plan",
                f"{group.training_plan} is not bought for hyperpod-cluster; add it to the "
                "plan's target_resources",
                root=True,
            )
        if group.instance_type and group.instance_type != request.instance_type:
            yield _at(
                f"{path}.instance_type",
                f"{group.instance_type} differs from plan {group.training_plan}'s "
                f"{request.instance_type}; use the plan's type or leave it out",
                root=True,
            )
        if group.instance_count is not None and group.instance_count > request.instance_count:
            yield _at(
                f"{path}.instance_count",
                f"{group.instance_count} exceeds the {request.instance_count} instances of "
                f"plan {group.training_plan}; use {request.instance_count} or fewer",
                root=True,
            )


def service_limit_problems(
    config: NovapodConfig, requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]]
) -> Iterator[_FieldError]:
    """Regions, tags, principals and instance types the services accept or know."""
    if config.eks is not None:
        # Nodes pull the EKS add-on images and the health agent from per-region
        # registries; a region without them would fail at synth or on the nodes.
        known = set(node_image_registries().eks_registries) & set(
            default_pins().health_agent.registry_accounts
        )
        if config.region not in known:
            yield _at(
                "region",
                f"novapod knows the EKS add-on and HyperPod health-agent image registries "
                f"of {', '.join(sorted(known))}, not of {config.region}: choose one of them, "
                "or add the region to novapod/data/node_images.yaml and "
                "hyperpod_dependencies.yaml",
                root=True,
            )
    reserved = [k for k in config.tags if k.lower().startswith("aws:")]
    if reserved:
        yield _at("tags", f"the aws: prefix is reserved by AWS; rename {reserved[0]}", root=True)
    if config.eks is not None:
        principals = config.eks.admin_principals
        repeated = sorted({p for p in principals if principals.count(p) > 1})
        if repeated:
            yield _at("eks.admin_principals", f"listed twice: {', '.join(repeated)}", root=True)
    plan_types = plan_instance_types()
    for i, (_, request) in enumerate(requests):
        if request.instance_type not in plan_types:
            yield _at(
                f"capacity.training_plans[{i}].instance_type",
                f"training plans do not sell {request.instance_type}; use one of "
                f"{', '.join(sorted(plan_types))}",
                root=True,
            )
    if config.hyperpod is None:
        return
    group_types = cluster_instance_types()
    typed: list[tuple[str, str | None]] = [
        (f"restricted_instance_groups[{i}]", g.instance_type)
        for i, g in enumerate(config.hyperpod.restricted_instance_groups)
    ] + [
        (f"instance_groups[{i}]", g.instance_type)
        for i, g in enumerate(config.hyperpod.instance_groups)
    ]
    for where, instance_type in typed:
        if instance_type and instance_type not in group_types:
            yield _at(
                f"hyperpod.{where}.instance_type",
                f"{instance_type} is not a HyperPod instance type (see the "
                "ClusterInstanceType values of the SageMaker API)",
                root=True,
            )
    if config.hyperpod.restricted_instance_groups:
        missing = [
            e
            for e in (*GATEWAY_ENDPOINTS, *RIG_ENDPOINTS)
            if e not in config.network.endpoint_names
        ]
        if missing:
            yield _at(
                "network.endpoints",
                "restricted instance groups have no internet access and reach AWS only "
                f"through endpoints; add {', '.join(missing)}",
                root=True,
            )


def purchase_problems(
    config: NovapodConfig,
    requests: list[tuple[TrainingPlanSpec, planning.PlanRequest]],
    now: datetime,
) -> Iterator[_FieldError]:
    """Every plan to buy is approved by its exact name, capped, and still buyable."""
    instance_types = sorted(plan_instance_types())
    for i, (spec, request) in enumerate(requests):
        if spec.adopted:
            continue
        where = f"capacity.training_plans[{i}]"
        if spec.end_before is not None and spec.end_before <= now:
            yield _at(
                f"{where}.end_before",
                f"{spec.end_before.isoformat()} is in the past, and no plan can be bought "
                "for a window that has ended: move the window, or adopt a plan you already "
                "bought with existing_arn",
                root=True,
            )
            continue
        purchase = spec.purchase
        problem = approval.approval_problem(
            environment=config.name,
            request=request,
            approve=purchase.approve if purchase else None,
            fee_cap=purchase.max_upfront_fee if purchase else None,
            currency=purchase.currency if purchase else "USD",
            instance_types=instance_types,
        )
        if problem is not None:
            path = f"{where}.purchase.approve" if purchase else f"{where}.purchase"
            yield _at(path, problem, root=True)
        elif purchase is not None and purchase.max_upfront_fee is None:
            yield _at(
                f"{where}.purchase.max_upfront_fee",
                "required with approve: the highest up-front fee to pay for "
                f"{spec.name}, a plain number in {purchase.currency} (see `novapod "
                f"offerings CONFIG --plan {spec.name}` for prices)",
                root=True,
            )


def warnings(config: NovapodConfig, today: date | None = None) -> list[str]:
    """Things that are valid but probably wrong; the CLI prints them."""
    out: list[str] = []
    if config.eks is not None:
        support = support_warning(config.eks.kubernetes_version, today)
        if support:
            out.append(support)
    if config.hyperpod and config.hyperpod.restricted_instance_groups:
        regions = eks_facts().rig_regions
        if config.region not in regions:
            out.append(
                f"region: restricted instance groups have been seen only in "
                f"{', '.join(regions)}; check that {config.region} offers them"
            )
    return out
