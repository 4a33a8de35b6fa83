"""What a change grants through IAM, from the statement changes of CDK's diff engine.

The engine (novapod/review/diff.js) lists the IAM statements a stack's head adds and
removes (a changed statement is one of each), each with the principal it applies to:
`AWS:${Role}` for a role's own policies (inline or AWS::IAM::Policy; managed policies
attach to `${Role}`), the trust policy's principals for a role's AssumeRolePolicyDocument,
whose resource is then `${Role.Arn}`, and a resource policy's principals
(aws/aws-cdk-cli packages/@aws-cdk/cloudformation-diff lib/iam/iam-changes.ts:
readIdentityPolicies, readIdentityPolicyResource, readResourceStatements,
readManagedPolicies). Three readings of that:

- `new_grants`: a stack the base does not have (a new environment) or a role the base
  does not have grants nothing less than everything it holds, so its statements are one
  summary per role (or other principal) instead of one "broadening" each;
- `_broadenings`: for everything else, what an added Allow statement grants beyond the
  removed one it most likely replaces, Deny statements removed, managed policies attached;
- `without_purchase_grants`: a statement widened by nothing but the ARN of a training
  plan the same review lists as bought (in a named account and region) follows that
  purchase, which the Purchases section and the `purchase` gate already cover: it is not
  a broadening. An adopted plan's ARN is: adoption trips no other gate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from novapod.capacity.naming import split_name
from novapod.review.values import canonical, readable, render

ROLE = "AWS::IAM::Role"
# `AWS:${Id}`: the principal the engine gives a role's own policies (no `.Arn`, no stack).
_IDENTITY = re.compile(r"^AWS:\$\{(?P<id>[A-Za-z0-9]+)\}$")
_TRUST_RESOURCE = re.compile(r"^\$\{(?P<id>[A-Za-z0-9]+)\.Arn\}$")
# arn:PARTITION:sagemaker:REGION:ACCOUNT:training-plan/NAME, each part literal or a
# ${Token}: the API's TrainingPlanArn pattern (docs.aws.amazon.com/sagemaker/latest/
# APIReference/API_TrainingPlanSummary.html), its names ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}.
# Only a named account and region (literal, or a ${Token} such as ${AWS::AccountId}) follow
# a purchase: a wildcard (`*`, `?`) there grants on plans of that name in every account
# or region, which the purchase does not make.
_CFN_SUB = r"\$\{[^}]*\}"  # a ${Token} of Fn::Sub
_PLAN_ARN = re.compile(
    rf"^arn:(?:{_CFN_SUB}|aws[a-z-]*):sagemaker:(?:{_CFN_SUB}|[a-z]{{2}}(?:-[a-z]+)+-[0-9]):"
    rf"(?:{_CFN_SUB}|[0-9]{{12}}):training-plan/(?P<name>[A-Za-z0-9?-]+)$"
)
# The purchase entries whose plan's ARN a grant may follow: a plan bought trips the
# `purchase` gate, so the grant is reviewed there. An adopted plan trips no gate (nothing
# is bought), so what it is granted stays a broadening: adopting another team's plan is
# a decision of its own.
PLAN_ACTIONS = ("buy",)


def _values(targets: Mapping[str, Any]) -> list[str]:
    return sorted(readable(str(v)) for v in targets.get("values", []))


def _statement_view(statement: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "sid": statement.get("sid"),
        "effect": statement.get("effect"),
        "actions": _values(statement["actions"]),
        "resources": _values(statement["resources"]),
        "principals": _values(statement["principals"]),
        "not": sorted(
            key for key in ("actions", "resources", "principals") if statement[key].get("not")
        ),
        "condition": statement.get("condition"),
    }


def _overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    return sum(len(set(a[key]) & set(b[key])) for key in ("actions", "resources", "principals"))


# --- conditions ----------------------------------------------------------------------


def _condition_tests(condition: Any) -> dict[tuple[str, str], Any] | None:
    """(operator, key) -> value as written; None for a condition that is no such map."""
    if condition is None:
        return {}
    if not isinstance(condition, Mapping):
        return None
    out: dict[tuple[str, str], Any] = {}
    for operator, tests in condition.items():
        if not isinstance(tests, Mapping):
            return None
        for key, value in tests.items():
            out[str(operator), str(key)] = value
    return out


def _condition_pairs(condition: Any) -> dict[tuple[str, str], set[str]] | None:
    tests = _condition_tests(condition)
    if tests is None:
        return None
    return {
        test: {canonical(v) for v in (value if isinstance(value, list) else [value])}
        for test, value in tests.items()
    }


def condition_widens(old: Any, new: Any) -> bool:
    """Whether a statement's new condition may allow a request the old one refused.

    Conditions are ANDed: the new one is no wider when it keeps every old test and each
    kept test allows no more values (fewer for a positive operator such as StringEquals,
    more for a negated one such as StringNotEquals; others must stay equal). Tests it adds
    only restrict. Anything else counts as widening. (IAM: operators and keys are ANDed,
    a key's values ORed, a negated operator's values NORed: docs.aws.amazon.com/IAM/
    latest/UserGuide/reference_policies_multi-value-conditions.html.)
    """
    before, after = _condition_pairs(old), _condition_pairs(new)
    if before is None or after is None:
        return canonical(old) != canonical(new)
    for (operator, key), values in before.items():
        kept = after.get((operator, key))
        if kept is None:
            return True
        if "Not" in operator:
            if not kept >= values:
                return True
        elif operator.startswith(("Null", "Bool")):
            if kept != values:
                return True
        elif not kept <= values:
            return True
    return False


def condition_changes(old: Any, new: Any) -> list[str]:
    """The condition's tests that differ, compactly: `StringEquals s3:prefix: a → [a, b]`
    (`none` where a side has no such test); the whole blocks when either is no map."""
    before, after = _condition_tests(old), _condition_tests(new)
    if before is None or after is None:
        return [f"{render(old) if old is not None else 'none'} → {render(new)}"]
    out = []
    for test in [*before, *(t for t in after if t not in before)]:
        was, now = before.get(test), after.get(test)
        if canonical(was) != canonical(now):
            shown = ("none" if value is None else render(value) for value in (was, now))
            out.append(f"{test[0]} {test[1]}: {' → '.join(shown)}")
    return out


# --- broadenings ---------------------------------------------------------------------


def _match(added: Mapping[str, Any], removed: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The removed statement this added one most likely replaces (same sid, or most overlap)."""
    candidates = [r for r in removed if r["effect"] == added["effect"] and r["not"] == added["not"]]
    if added["sid"]:
        same_sid = [r for r in candidates if r["sid"] == added["sid"]]
        if same_sid:
            return same_sid[0]
    scored = sorted(
        (
            (_overlap(added, r), canonical(r), r)
            for r in candidates
            if r["principals"] == added["principals"]
        ),
        key=lambda item: (-item[0], item[1]),
    )
    return scored[0][2] if scored and scored[0][0] > 0 else None


def _broadenings(
    stack: str,
    added: Sequence[dict[str, Any]],
    removed: Sequence[dict[str, Any]],
    attachments: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Added Allow statements (what each grants beyond the one it replaces), Deny removals
    and managed-policy attachments."""
    out: list[dict[str, Any]] = []
    for statement in added:
        if statement["effect"] != "Allow":
            continue  # an added Deny narrows
        match = _match(statement, removed)
        new = {
            key: sorted(set(statement[key]) - set(match[key] if match else ()))
            for key in ("actions", "resources", "principals")
        }
        condition_widened = match is not None and condition_widens(
            match["condition"], statement["condition"]
        )
        if match is not None and not any(new.values()) and not condition_widened:
            continue  # regrouped or narrowed: nothing granted that was not granted before
        out.append(
            {
                "stack": stack,
                "kind": "statement-widened" if match else "statement-added",
                **statement,
                "previous_condition": match["condition"] if match else None,
                "added_actions": new["actions"],
                "added_resources": new["resources"],
                "added_principals": new["principals"],
                "condition_widened": condition_widened,
            }
        )
    for statement in removed:
        if statement["effect"] == "Deny":
            out.append({"stack": stack, "kind": "deny-removed", **statement})
    for attachment in attachments:
        out.append(
            {
                "stack": stack,
                "kind": "managed-policy-attached",
                "principals": [readable(str(attachment.get("identity")))],
                "policy": readable(str(attachment.get("policy"))),
            }
        )
    return out


# --- new roles and new stacks --------------------------------------------------------


def new_roles(base: Mapping[str, Any], head: Mapping[str, Any]) -> dict[str, str | None]:
    """Logical ID -> RoleName (None when CloudFormation names it) of each IAM role the
    head's template has and the base's does not (every role of an added stack)."""
    return {
        logical_id: render(resource["Properties"]["RoleName"])
        if "RoleName" in (resource.get("Properties") or {})
        else None
        for logical_id, resource in sorted(head.items())
        if resource.get("Type") == ROLE and logical_id not in base
    }


def _trusted_role(statement: Mapping[str, Any], roles: Mapping[str, Any]) -> str | None:
    """The new role whose trust policy this statement is (sts: actions on its `${Id.Arn}`
    only, granted to principals that are no role's own policies), else None."""
    resources = statement["resources"]
    found = _TRUST_RESOURCE.match(resources[0]) if len(resources) == 1 else None
    if (
        found is None
        or statement["effect"] != "Allow"
        or found["id"] not in roles
        or statement["not"]
        or not all(action.startswith("sts:") for action in statement["actions"])
        or any(_IDENTITY.match(p) for p in statement["principals"])
    ):
        return None
    return found["id"]


def _owners(statement: Mapping[str, Any], roles: Mapping[str, Any], stack_added: bool) -> list[str]:
    """The principals whose every grant is new that this statement's grant belongs to."""
    if stack_added:
        return list(statement["principals"])
    ids = [_IDENTITY.match(p) for p in statement["principals"]]
    if ids and all(m is not None and m["id"] in roles for m in ids):
        return list(statement["principals"])
    return []  # an existing role or principal: compared with what it had (broadenings)


def _summary(
    stack: str, principal: str, roles: Mapping[str, str | None], stack_added: bool
) -> dict[str, Any]:
    identity = _IDENTITY.match(principal)
    role = identity["id"] if identity and identity["id"] in roles else None
    return {
        "stack": stack,
        "kind": "role" if role else "principal",
        "principal": principal,
        "logical_id": role,
        "role_name": roles.get(role) if role else None,
        "new": "stack-added" if stack_added else "role-added",
        "assumed_by": [],
        "statements": 0,
        "actions": [],
        "services": [],
        "resources": [],
        "on_any_resource": [],
        "wildcard_resources": [],
        "conditional_statements": 0,
        "negated": [],
        # NotAction statements' lists: each grants every action except those.
        "all_actions_except": [],
        "managed_policies": [],
    }


def _add_grant(summary: dict[str, Any], statement: Mapping[str, Any]) -> None:
    summary["statements"] += 1
    # A NotAction statement grants every action but those it lists: they are no grant.
    not_action = "actions" in statement["not"]
    granted = ["*"] if not_action else statement["actions"]
    if not_action:
        summary["all_actions_except"] = sorted(
            set(summary["all_actions_except"]) | set(statement["actions"])
        )
    summary["actions"] = sorted(set(summary["actions"]) | set(granted))
    summary["services"] = sorted({a.split(":", 1)[0] for a in summary["actions"]})
    summary["resources"] = sorted(set(summary["resources"]) | set(statement["resources"]))
    summary["wildcard_resources"] = [
        r for r in summary["resources"] if r != "*" and ("*" in r or "?" in r)
    ]
    if "*" in statement["resources"] and "resources" not in statement["not"]:
        summary["on_any_resource"] = sorted(set(summary["on_any_resource"]) | set(granted))
    summary["conditional_statements"] += statement["condition"] is not None
    summary["negated"] = sorted(set(summary["negated"]) | set(statement["not"]))


def new_grants(
    stack: str, iam: Mapping[str, Any], roles: Mapping[str, str | None], *, stack_added: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(broadenings, summaries): one summary per new role or, in an added stack, per
    principal; every other change is compared with the base (`_broadenings`)."""
    added = [_statement_view(s) for s in iam.get("statement_additions", [])]
    removed = [_statement_view(s) for s in iam.get("statement_removals", [])]
    summaries: dict[str, dict[str, Any]] = {}

    def summary(principal: str) -> dict[str, Any]:
        if principal not in summaries:
            summaries[principal] = _summary(stack, principal, roles, stack_added)
        return summaries[principal]

    compared = []
    for statement in added:
        trusted = _trusted_role(statement, roles)
        owners = _owners(statement, roles, stack_added)
        if trusted is not None:
            entry = summary(f"AWS:${{{trusted}}}")
            entry["assumed_by"] = sorted(set(entry["assumed_by"]) | set(statement["principals"]))
        elif owners:
            if statement["effect"] == "Allow":  # an added Deny narrows
                for principal in owners:
                    _add_grant(summary(principal), statement)
        else:
            compared.append(statement)
    attachments = []
    for attachment in iam.get("managed_policy_additions", []):
        principal = "AWS:" + readable(str(attachment.get("identity")))
        if _owners({"principals": [principal]}, roles, stack_added):
            entry = summary(principal)
            policies = {readable(str(attachment.get("policy"))), *entry["managed_policies"]}
            entry["managed_policies"] = sorted(policies)
        else:
            attachments.append(attachment)
    return _broadenings(stack, compared, removed, attachments), list(summaries.values())


# --- grants that follow a purchase ---------------------------------------------------


def _plan_names(purchases: Sequence[Mapping[str, Any]]) -> set[str]:
    """The names of the training plans the review buys."""
    return {
        str(entry["plan_name"])
        for entry in purchases
        if entry.get("kind") == "training-plan"
        and entry.get("action") in PLAN_ACTIONS
        and entry.get("plan_name")
    }


def _names_the_plan(resource: str, names: set[str]) -> bool:
    """`resource` is one bought plan's ARN, or its name head with the digest left open
    (`novapod-<env>-<plan>-????????`, as the capacity stack grants its purchase handler;
    `?` matches exactly one character: docs.aws.amazon.com/IAM/latest/UserGuide/
    reference_policies_elements_resource.html)."""
    found = _PLAN_ARN.match(resource)
    if found is None:
        return False
    name = found["name"]
    if name in names:
        return True
    return any(
        (parts := split_name(plan)) is not None and name == f"{parts[0]}-{'?' * len(parts[1])}"
        for plan in names
    )


def follows_purchase(entry: Mapping[str, Any], purchases: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a broadening adds nothing but resources that name plans this review buys:
    no action, no principal, no wider condition, no NotAction/NotResource."""
    if entry["kind"] != "statement-widened" or entry["not"] or entry["condition_widened"]:
        return False
    if entry["added_actions"] or entry["added_principals"] or not entry["added_resources"]:
        return False
    names = _plan_names(purchases)
    return all(_names_the_plan(r, names) for r in entry["added_resources"])


def without_purchase_grants(
    broadenings: Sequence[dict[str, Any]], purchases: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    return [e for e in broadenings if not follows_purchase(e, purchases)]
