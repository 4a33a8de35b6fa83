"""What a change grants through IAM, from the statement changes of CDK's diff engine.

The engine (novapod/review/diff.js) lists the IAM statements a stack's head adds and
removes (a changed statement is one of each), each with the principal it applies to
(aws/aws-cdk-cli packages/@aws-cdk/cloudformation-diff lib/iam/iam-changes.ts). An added
Allow statement is a broadening only where it grants something the removed one it most
likely replaces did not; removed Deny statements and attached managed policies are
listed as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from novapod.review.values import canonical, readable, render


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


def iam_broadenings(stack: str, iam: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Added Allow statements (what each grants beyond the one it replaces), Deny removals
    and managed-policy attachments, from the engine's IAM statement changes."""
    added = [_statement_view(s) for s in iam.get("statement_additions", [])]
    removed = [_statement_view(s) for s in iam.get("statement_removals", [])]
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
    for attachment in iam.get("managed_policy_additions", []):
        out.append(
            {
                "stack": stack,
                "kind": "managed-policy-attached",
                "principals": [readable(str(attachment.get("identity")))],
                "policy": readable(str(attachment.get("policy"))),
            }
        )
    return out
