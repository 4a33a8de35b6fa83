"""What only novapod knows about a change: purchases, stateful resources, security.

Pure functions over one stack's base and head templates and what CDK's diff engine said
about them (novapod/review/diff.js). The engine decides whether a change replaces a
resource; these functions decide what that means here: a new training-plan name is a new
non-refundable purchase, a raised fee cap under an unchanged name (the approval) lets a
purchase cost more, replacing the HyperPod cluster deletes each restricted group's
FSx for Lustre. What IAM grants is read in iam.py; security groups and endpoints here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from novapod.review.values import amount, decimal, integer, readable, render
from novapod.review.values import canonical as _canonical

TRAINING_PLAN = "Custom::NovapodTrainingPlan"  # novapod/constructs/training_plan/construct.py
BEDROCK_MODEL = "Custom::NovapodBedrockModel"  # novapod/constructs/bedrock_model/construct.py
HYPERPOD_CLUSTER = "AWS::SageMaker::Cluster"
EKS_CLUSTER = "AWS::EKS::Cluster"
VPC_ENDPOINT = "AWS::EC2::VPCEndpoint"
MLFLOW_SERVER = "AWS::SageMaker::MlflowTrackingServer"

# What holds data, or everything that runs on it, and what a reviewer calls it.
STATEFUL = {
    "AWS::S3::Bucket": "S3 bucket",
    "AWS::KMS::Key": "KMS key",
    "AWS::FSx::FileSystem": "FSx for Lustre file system",
    EKS_CLUSTER: "EKS cluster",
    HYPERPOD_CLUSTER: "HyperPod cluster",
    # The experiments' runs, metrics and parameters live in the server (nova-base stack).
    MLFLOW_SERVER: "MLflow tracking server",
    # The purchase ledger (storage stack), and the databases of an app that composes
    # novapod's stacks with its own (docs/cdk-app.md), reviewed in the same assembly.
    "AWS::DynamoDB::Table": "DynamoDB table",
    "AWS::RDS::DBInstance": "RDS database instance",
    "AWS::RDS::DBCluster": "RDS database cluster",
}
# The property through which novapod gives these resources a custom name. CloudFormation
# cannot replace a custom-named resource whose name stays the same: the update fails
# (docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-name.html).
CUSTOM_NAME = {
    HYPERPOD_CLUSTER: "ClusterName",
    EKS_CLUSTER: "Name",
    "AWS::S3::Bucket": "BucketName",
    MLFLOW_SERVER: "TrackingServerName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::RDS::DBInstance": "DBInstanceIdentifier",
    "AWS::RDS::DBCluster": "DBClusterIdentifier",
}

# The engine's ResourceImpact -> what the report calls the change, and replacement.
CHANGE = {
    "WILL_CREATE": "add",
    "WILL_UPDATE": "update",
    "NO_CHANGE": "update",  # a type the service spec does not know (custom resources)
    "WILL_REPLACE": "replace",
    "MAY_REPLACE": "may-replace",
    "WILL_DESTROY": "destroy",
    "WILL_ORPHAN": "orphan",
    "WILL_IMPORT": "import",
}
REPLACEMENT = {"WILL_REPLACE": "yes", "MAY_REPLACE": "maybe"}
STATEFUL_CATEGORY = {
    "replace": "will-replace",
    "may-replace": "may-replace",
    "destroy": "destroy",
    "orphan": "orphan",
}
CATEGORIES = ("will-replace", "may-replace", "destroy", "orphan")

# A stack that left the app is not deleted by `cdk deploy` (aws/aws-cdk-cli#787; for
# pipelines aws/aws-cdk#10759): what the review lists for it happens at `cdk destroy`.
STACK_REMOVED = "its stack left the app (deleted only by cdk destroy)"

# Endpoint properties that change who or what can reach a service, not just where the
# endpoint's interfaces sit (SubnetIds, RouteTableIds are placement).
ENDPOINT_ACCESS = (
    "PolicyDocument",
    "PrivateDnsEnabled",
    "SecurityGroupIds",
    "ServiceName",
    "VpcEndpointType",
)
EKS_ENDPOINT_ACCESS = ("EndpointPrivateAccess", "EndpointPublicAccess", "PublicAccessCidrs")


def _properties(resource: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict((resource or {}).get("Properties") or {})


# --- every resource -------------------------------------------------------------------


def asset_only(
    base: Mapping[str, Any] | None, head: Mapping[str, Any] | None, hashes: Iterable[str]
) -> bool:
    """Whether the two resources differ only in asset hashes (code, templates, files)."""
    if base is None or head is None:
        return False
    old, new = _canonical(base), _canonical(head)
    if old == new:
        return False
    for asset_hash in sorted(hashes, key=len, reverse=True):
        old, new = old.replace(asset_hash, "<asset>"), new.replace(asset_hash, "<asset>")
    return old == new


def resource_entry(
    change: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
    hashes: Iterable[str],
) -> dict[str, Any]:
    """One resource's change: the engine's impact, per-property impacts, asset-only."""
    impact = str(change["impact"])
    kind = CHANGE.get(impact, "update")
    return {
        "logical_id": change["logical_id"],
        "type": change["new_type"] or change["old_type"],
        "change": kind,
        "replacement": REPLACEMENT.get(impact, "no"),
        "impact": impact,
        "properties": dict(sorted(change["properties"].items())),
        "other": sorted(change["other"]),
        "asset_only": kind == "update" and asset_only(base, head, hashes),
    }


# --- 1. purchases ---------------------------------------------------------------------


def _plan_fields(properties: Mapping[str, Any]) -> dict[str, Any]:
    def text(key: str) -> str | None:
        return render(properties[key]) if key in properties else None

    return {
        "plan_name": text("PlanName"),
        "mode": text("Mode"),
        "instance_type": text("InstanceType"),
        "instance_count": integer(properties.get("InstanceCount")),
        "duration_hours": integer(properties.get("DurationHours")),
        "start_after": text("StartTimeAfter"),
        "end_before": text("EndTimeBefore"),
        "max_upfront_fee": text("MaxUpfrontFee"),
        "currency": text("Currency"),
        "existing_arn": text("ExistingArn"),
        "extension_name": text("ExtensionName"),
        # What the plan's capacity serves (SearchTrainingPlanOfferings' TargetResources):
        # a plan for training jobs is bought, approved and capped as a HyperPod one is.
        "target_resources": _texts(properties.get("TargetResources")),
    }


def _texts(value: Any) -> list[str]:
    """A list property as text, each item rendered; [] without one."""
    if value is None:
        return []
    return [render(item) for item in value] if isinstance(value, list) else [render(value)]


# The approved name and its guardrails, per purchase a plan's resource makes. The name is
# the approval (novapod/capacity/naming.py) and covers what is bought, never the cap or currency,
# so a raised cap keeps the approval valid: the review is where that is decided.
CAPS = (
    ("plan", "PlanName", "MaxUpfrontFee", "Currency"),
    ("extension", "ExtensionName", "ExtensionMaxUpfrontFee", "ExtensionCurrency"),
)
CAP_TITLE = {  # cap change -> how the Markdown heads it
    "raised": "Cap raised",
    "lowered": "Cap lowered",
    "currency-changed": "Currency changed",
    "changed": "Cap changed",
}


def cap_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Fee caps and currencies changed under an unchanged plan or extension name.

    A new name is a new approval, reported as such; the same name with a higher cap (or
    another currency, whose amounts do not compare) may cost more if it is not bought
    yet, so it counts for the purchase gate (`may_spend_more`). A lower cap cannot.
    """
    out: list[dict[str, Any]] = []
    for of, name_key, fee_key, currency_key in CAPS:
        name = render(new[name_key]) if name_key in new else None
        if name is None or name_key not in old or render(old[name_key]) != name:
            continue
        before, after = old.get(fee_key), new.get(fee_key)
        if after is None:
            continue  # no cap (an adopted plan): the handler buys nothing without one
        was, now = decimal(before), decimal(after)
        old_currency = render(old[currency_key]) if currency_key in old else None
        currency = render(new[currency_key]) if currency_key in new else None
        if before is None:
            change = "changed"  # a cap where there was none (an adopted plan, bought)
        elif old_currency != currency:
            change = "currency-changed"
        elif was is not None and now is not None:
            if now == was:
                continue  # the same amount, written differently (60000, 60000.00)
            change = "raised" if now > was else "lowered"
        elif _canonical(before) == _canonical(after):
            continue
        else:
            change = "changed"  # not a literal number: cannot be compared
        cap = f"{amount(after)} {currency}"
        if change == "lowered":
            note = f"offerings above {cap} are refused; nothing can cost more than before"
        else:
            note = (
                f"the approval (the {of}'s name) stays valid, so if the {of} is not "
                f"bought yet it may now cost up to {cap}"
            )
        if change == "changed" and before is not None:
            note = f"the two caps cannot be compared offline; {note}"
        out.append(
            {
                "of": of,
                "name": name,
                "change": change,
                "previous_max_upfront_fee": render(before) if before is not None else None,
                "max_upfront_fee": render(after),
                "previous_currency": old_currency,
                "currency": currency,
                "may_spend_more": change != "lowered",
                "note": note,
            }
        )
    return out


def _instance_hours(properties: Mapping[str, Any]) -> tuple[int, int, int] | None:
    count = integer(properties.get("InstanceCount"))
    hours = integer(properties.get("DurationHours"))
    if not isinstance(count, int) or not isinstance(hours, int):
        return None
    return count, hours, count * hours


def cap_unscaled(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A plan bought again under a new name because it grew (more instance-hours: the
    count or the duration went up), while its fee cap and currency stayed the same.

    The name covers what is bought, never the cap (capacity/naming.py), so the new name
    is approved with the cap written for the smaller plan: an offering for the larger
    one above it is refused at deploy (handler decisions.check_fee_cap) and nothing is
    bought. Not a gate of its own: the new name is a purchase, which trips `purchase`.
    """
    name, previous = render(new.get("PlanName", "")), render(old.get("PlanName", ""))
    was, now = _instance_hours(old), _instance_hours(new)
    if not previous or name == previous or was is None or now is None or now[2] <= was[2]:
        return []
    cap, old_cap = decimal(new.get("MaxUpfrontFee")), decimal(old.get("MaxUpfrontFee"))
    currency = render(new["Currency"]) if "Currency" in new else None
    if cap is None or cap != old_cap or currency != (render(old.get("Currency", "")) or None):
        return []  # no cap (adopt), a new cap, or another currency: chosen for this plan
    return [
        {
            "of": "plan",
            "warning": "cap-unchanged",
            "name": name,
            "previous_name": previous,
            "max_upfront_fee": render(new["MaxUpfrontFee"]),
            "currency": currency,
            "previous_instance_count": was[0],
            "instance_count": now[0],
            "previous_duration_hours": was[1],
            "duration_hours": now[1],
            "previous_instance_hours": was[2],
            "instance_hours": now[2],
            "note": f"the cap was written for the smaller plan ({was[2]:,} instance-hours, now "
            f"{now[2]:,}): an offering above it is refused at deploy and nothing is bought; "
            "check the price with novapod offerings and raise max_upfront_fee if needed",
        }
    ]


def _changed_keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def training_plan(
    stack: str,
    logical_id: str,
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
    *,
    stack_removed: bool = False,
) -> dict[str, Any] | None:
    """A training plan bought, adopted, updated or removed; None when it did not change."""
    old, new = _properties(base), _properties(head)
    if base is not None and head is not None and _canonical(base) == _canonical(head):
        return None
    fields = _plan_fields(new if head is not None else old)
    entry: dict[str, Any] = {
        "stack": stack,
        "logical_id": logical_id,
        "kind": "training-plan",
        **fields,
        "previous_plan_name": None,
        "changed": [],
        "purchase": False,
        "cap_changes": cap_changes(old, new) if base is not None and head is not None else [],
        "cap_warnings": [],
    }
    name, previous = fields["plan_name"], render(old.get("PlanName", "")) or None
    if head is None:
        entry["action"] = "remove"
        entry["note"] = (
            f"not refunded: plan {name} stays paid for and runs to its end (plans cannot be "
            "cancelled; the resource is retained)"
            if fields["mode"] != "adopt"
            else f"the adopted plan {name} is kept; nothing is deleted or refunded"
        )
        if stack_removed:
            entry["note"] += f"; {STACK_REMOVED}"
        return entry
    buying = fields["mode"] != "adopt"
    if base is None or previous != name:
        entry["previous_plan_name"] = previous if base is not None else None
        entry["changed"] = _changed_keys(old, new) if base is not None else []
        entry["action"] = "buy" if buying else "adopt"
        entry["purchase"] = buying
        if buying and base is not None:
            entry["cap_warnings"] = cap_unscaled(old, new)
        cap = f"up to {fields['max_upfront_fee']} {fields['currency']}"
        if buying:
            entry["note"] = f"a new non-refundable purchase of {cap}" + (
                f"; plan {previous}, if it was bought, is not refunded and stays paid for"
                if entry["previous_plan_name"]
                else ""
            )
        else:
            entry["note"] = f"adopts plan {name}; nothing is bought"
        return entry
    entry["changed"] = _changed_keys(old, new)
    extension = render(new["ExtensionName"]) if "ExtensionName" in new else None
    if extension and extension != (render(old.get("ExtensionName", "")) or None):
        # An extension whose name (its approval, which covers what it buys) is new is a
        # purchase of its own: ExtendTrainingPlan, non-refundable like the plan.
        entry["action"] = "extend"
        entry["purchase"] = True
        hours = integer(new.get("ExtendHours"))
        cap = f"{render(new.get('ExtensionMaxUpfrontFee', '?'))} " + render(
            new.get("ExtensionCurrency", "")
        )
        entry["note"] = (
            f"a new non-refundable extension {extension} of plan {name}"
            + (f" by {hours} h" if hours is not None else "")
            + f", up to {cap.strip()}; the plan itself is not bought again"
        )
        return entry
    entry["action"] = "update"
    entry["note"] = (
        f"same plan name {name}, so nothing new is bought: the handler finds the plan by its "
        "name first"
    )
    return entry


def bedrock_model(
    stack: str,
    logical_id: str,
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
    *,
    stack_removed: bool = False,
) -> dict[str, Any] | None:
    """A Bedrock custom-model import added, changed or removed."""
    if base is not None and head is not None and _canonical(base) == _canonical(head):
        return None
    resource = head if head is not None else base
    assert resource is not None
    properties = _properties(resource)
    retained = (
        resource.get("DeletionPolicy") == "Retain"
        or render(properties.get("RetainOnDelete", "false")) == "true"
    )
    entry: dict[str, Any] = {
        "stack": stack,
        "logical_id": logical_id,
        "kind": "bedrock-model",
        "model_name": render(properties.get("ModelName", "")),
        "output_prefix": render(properties.get("OutputPrefix", "")),
        "deployment": render(properties.get("Deployment", "none")),
        "retained": retained,
        "changed": [],
        "purchase": False,
    }
    if base is None:
        entry["action"] = "import"
        entry["note"] = (
            "imports the job's newest checkpoint into Bedrock at deploy"
            + (
                ", then creates an on-demand deployment"
                if entry["deployment"] == "on-demand"
                else ""
            )
            + " (a job with no finished run yet: waits, and a changed refresh imports later)"
        )
    elif head is None:
        entry["action"] = "remove"
        entry["note"] = (
            "the model and its deployment are kept (retain)"
            if retained
            else "the model and its deployment are deleted"
        ) + (f"; {STACK_REMOVED}" if stack_removed else "")
    else:
        entry["action"] = "update"
        entry["changed"] = _changed_keys(_properties(base), properties)
        entry["note"] = (
            "re-run at deploy: a newer checkpoint of the job imports a new model (the first "
            "one if the model was waiting for a checkpoint)"
        )
    return entry


# --- 2. stateful ----------------------------------------------------------------------


def _restricted_groups(resource: Mapping[str, Any] | None) -> list[str]:
    groups = _properties(resource).get("RestrictedInstanceGroups") or []
    return sorted(render(g.get("InstanceGroupName", "?")) for g in groups if isinstance(g, Mapping))


def stateful(
    stack: str,
    entry: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
    *,
    stack_removed: bool = False,
) -> list[dict[str, Any]]:
    """Replacement or removal of a resource that holds data (or runs on it)."""
    type_ = str(entry["type"])
    if type_ not in STATEFUL:
        return []
    category = STATEFUL_CATEGORY.get(str(entry["change"]))
    if category is None:
        return _removed_groups(stack, entry, base, head)
    notes: list[str] = []
    if category in ("will-replace", "may-replace"):
        cause = sorted(
            name for name, impact in entry["properties"].items() if impact in REPLACEMENT
        ) or ["Type"]
    else:
        cause = ["stack removed" if stack_removed else "removed from the template"]
    deletes: list[str] = []
    if type_ == HYPERPOD_CLUSTER and category != "orphan":
        # Each restricted group's FSx for Lustre is service-managed: it goes with the
        # cluster (or the group) - shared reference nova-hyperpod.md section 3.
        deletes = ["its nodes"] + [
            f"the FSx for Lustre of restricted group {g}" for g in _restricted_groups(base)
        ]
    # A property whose template value stays the same and still replaces: the engine
    # followed a Ref or GetAtt to a resource that is replaced, whose new value is known
    # only at deploy.
    referring = [
        p
        for p in cause
        if p in entry["properties"] and _properties(base).get(p) == _properties(head).get(p)
    ]
    if referring and category in ("will-replace", "may-replace"):
        notes.append(
            f"{', '.join(referring)} {'refers' if len(referring) == 1 else 'refer'} to a "
            "resource that is replaced, so the new value is known only at deploy"
        )
    if category == "may-replace":
        # The engine's "maybe": the service spec's conditional replacement (CloudFormation
        # docs: "Update requires: Conditional").
        notes.append(
            "CloudFormation decides at deploy whether this replaces it (the AWS service "
            "spec makes the replacement conditional): treat it as a replacement and keep a "
            "copy of its data"
        )
    blocked_by_name = None
    name_property = CUSTOM_NAME.get(type_)
    if category in ("will-replace", "may-replace") and name_property:
        old_name = _properties(base).get(name_property)
        if old_name is not None and old_name == _properties(head).get(name_property):
            blocked_by_name = name_property
            remedy = (
                "remove the hyperpod section from the config, deploy, then add it back"
                if type_ == HYPERPOD_CLUSTER
                else "change the name, or remove the resource, deploy, then add it back"
            )
            notes.append(
                f"CloudFormation cannot replace it while its custom name ({name_property}) "
                f"stays the same, so this deploy fails: {remedy}"
            )
    if category == "will-replace" and (base or {}).get("UpdateReplacePolicy") == "Retain":
        notes.append("the old one is retained (UpdateReplacePolicy: Retain)")
    if category == "orphan":
        notes.append("retained by its DeletionPolicy: it leaves the stack and keeps its data")
    return [
        {
            "stack": stack,
            "logical_id": entry["logical_id"],
            "type": type_,
            "what": STATEFUL[type_],
            "category": category,
            "cause": cause,
            "deletes": deletes,
            "blocked_by_name": blocked_by_name,
            "note": "; ".join(notes),
        }
    ]


def _removed_groups(
    stack: str,
    entry: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """An in-place cluster update that drops a restricted group deletes that group's FSx."""
    if entry["type"] != HYPERPOD_CLUSTER or base is None or head is None:
        return []
    gone = sorted(set(_restricted_groups(base)) - set(_restricted_groups(head)))
    return [
        {
            "stack": stack,
            "logical_id": entry["logical_id"],
            "type": HYPERPOD_CLUSTER,
            "what": f"FSx for Lustre of restricted group {group}",
            "category": "destroy",
            "cause": [f"restricted group {group} removed"],
            "deletes": [],
            "blocked_by_name": None,
            "note": "removing a restricted group deletes its service-managed FSx for Lustre; "
            "scaling it to 0 would keep it",
        }
        for group in gone
    ]


# --- 3. security ----------------------------------------------------------------------


def _peer(rule: Mapping[str, Any]) -> str:
    peer = rule.get("peer") or {}
    kind = peer.get("kind")
    if kind == "cidr-ip":
        return f"cidr {peer.get('ip')}"
    if kind == "security-group":
        return f"security group {readable(str(peer.get('securityGroupId')))}"
    if kind == "prefix-list":
        return f"prefix list {readable(str(peer.get('prefixListId')))}"
    return "any"


def _ports(rule: Mapping[str, Any]) -> str:
    low, high = rule.get("fromPort"), rule.get("toPort")
    if (low is None and high is None) or rule.get("ipProtocol") == "-1":
        return "all"
    return str(low) if low == high else f"{low}-{high}"


def security_group_openings(stack: str, groups: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rules the head adds, ingress or egress (removals only close)."""
    out = []
    for direction in ("ingress", "egress"):
        for rule in groups.get(f"{direction}_additions", []):
            protocol = str(rule.get("ipProtocol"))
            out.append(
                {
                    "stack": stack,
                    "direction": direction,
                    "group": readable(str(rule.get("groupId"))),
                    "protocol": "all" if protocol == "-1" else protocol,
                    "ports": _ports(rule),
                    "peer": _peer(rule),
                }
            )
    return out


def endpoint_change(
    stack: str,
    entry: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    head: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """A VPC endpoint added, removed or re-scoped; the EKS API endpoint's access changed."""
    if entry["type"] == VPC_ENDPOINT:
        touched = sorted(p for p in entry["properties"] if p in ENDPOINT_ACCESS)
        if entry["change"] in ("update", "import") and not touched:
            return None  # moved between subnets or route tables only
        service = render(_properties(head if head is not None else base).get("ServiceName", "?"))
        return {
            "stack": stack,
            "logical_id": entry["logical_id"],
            "kind": "vpc-endpoint",
            "change": entry["change"],
            "service": service,
            "properties": touched,
        }
    if entry["type"] == EKS_CLUSTER and base is not None and head is not None:
        old = _properties(base).get("ResourcesVpcConfig") or {}
        new = _properties(head).get("ResourcesVpcConfig") or {}
        touched = sorted(k for k in EKS_ENDPOINT_ACCESS if old.get(k) != new.get(k))
        if not touched:
            return None
        return {
            "stack": stack,
            "logical_id": entry["logical_id"],
            "kind": "eks-api-endpoint",
            "change": entry["change"],
            "service": " ".join(
                f"{k}: {render(old.get(k))} -> {render(new.get(k))}" for k in touched
            ),
            "properties": touched,
        }
    return None
