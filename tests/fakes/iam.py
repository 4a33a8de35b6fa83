"""IAM for the fake control plane: the handler roles' statements, read from a synthesized
template, and an evaluator of identity-based policies good enough for them.

`role_statements` collects what a template attaches to one role: inline `Policies`,
`AWS::IAM::Policy` and `AWS::IAM::ManagedPolicy` resources that name the role in
`Roles`, and managed policies of the template in `ManagedPolicyArns`. An AWS managed
policy (an ARN literal) cannot be read offline and is refused rather than ignored.
Values are resolved for a given account and region (Fn::Join of literals, Ref of the
AWS::Partition / AWS::Region / AWS::AccountId / AWS::URLSuffix pseudo parameters,
Fn::Sub of those); anything else, such as Fn::GetAtt of a log group, becomes a text
that no request matches.

`authorize` decides like IAM for one principal with identity-based policies only: an
explicit Deny wins, else an Allow is needed, else the request is denied (implicit deny),
see docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html.
Actions match case-insensitively, resources case-sensitively, both with the `*` and `?`
wildcards (reference_policies_elements_action.html, ..._resource.html). Conditions:
StringEquals, StringEqualsIgnoreCase and StringLike on single-valued keys (a key the
request does not carry does not match, as in IAM), their IfExists forms (a key the
request does not carry holds), and the same three qualified with
ForAllValues:/ForAnyValue: on multivalued keys such as aws:TagKeys or DynamoDB's
dynamodb:LeadingKeys (every / some value of the request matches one of the condition's;
ForAllValues holds for a key the request does not carry, ForAnyValue does not:
reference_policies_condition-single-vs-multi-valued-context-keys.html, and DynamoDB's
specifying-conditions.html). A condition on a key the service would set but the fake
does not compute (`Request.unmodelled`), or with any other operator (negated ones, and
IfExists on those), is treated as "does not hold" for an Allow and as "holds" for a
Deny, so whatever the fake cannot evaluate ends in a refusal, never in a permission the
real service would not give.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal

Effect = Literal["Allow", "Deny"]
Decision = Literal["allowed", "implicit_deny", "explicit_deny"]
PSEUDO_PARAMETERS = ("AWS::Partition", "AWS::Region", "AWS::AccountId", "AWS::URLSuffix")


@dataclass(frozen=True)
class Statement:
    effect: Effect
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    # operator -> condition key -> accepted values
    conditions: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    sid: str = ""


@dataclass(frozen=True)
class Request:
    """One authorization the service asks for: an action on a resource, with context."""

    action: str
    resource: str
    # A tuple for a multivalued key (aws:TagKeys, dynamodb:LeadingKeys).
    context: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    # Keys the service sets that the fake does not compute (DynamoDB's dynamodb:Select,
    # ...): a condition on one of them, absent from `context`, cannot be evaluated.
    unmodelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class Principal:
    """A role session: its name (for messages) and the statements of its policies."""

    role_name: str
    statements: tuple[Statement, ...]

    def without(self, sid: str) -> Principal:
        """The same role with the statement `sid` removed (which must exist)."""
        kept = tuple(s for s in self.statements if s.sid != sid)
        if len(kept) == len(self.statements):
            known = sorted(s.sid for s in self.statements if s.sid)
            raise KeyError(f"{self.role_name} has no statement {sid!r} (has {known})")
        return replace(self, statements=kept)

    def sids(self) -> list[str]:
        return [s.sid for s in self.statements]


# --- evaluation -----------------------------------------------------------------------


@cache
def _glob(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """IAM wildcards only: `*` any run, `?` one character (no [] classes as fnmatch has)."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, (re.IGNORECASE | re.DOTALL) if ignore_case else re.DOTALL)


def wildcard_match(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    return _glob(pattern, ignore_case).fullmatch(value) is not None


_SINGLE_OPERATORS = ("StringEquals", "StringEqualsIgnoreCase", "StringLike")


def _matches(operator: str, values: Sequence[str], actual: str) -> bool:
    """One value of the request against a condition's values (alternatives)."""
    if operator == "StringEquals":
        return actual in values
    if operator == "StringEqualsIgnoreCase":
        return actual.lower() in {v.lower() for v in values}
    return any(wildcard_match(v, actual) for v in values)


def _condition_holds(
    operator: str,
    key: str,
    values: Sequence[str],
    context: Mapping[str, str | tuple[str, ...]],
    unmodelled: Sequence[str] = (),
) -> bool | None:
    """True / False, or None when the fake cannot evaluate it (see the module docstring)."""
    actual = context.get(key)
    if actual is None and key.lower() in {k.lower() for k in unmodelled}:
        return None  # the service would set the key; the fake does not know its value
    if operator == "Null":
        # "true": the request lacks the key; "false": it carries it (reference_policies_
        # elements_condition_operators.html#Conditions_Null). An empty set counts as absent.
        wanted = {str(v).lower() for v in values}
        if not wanted <= {"true", "false"} or len(wanted) != 1:
            return None
        absent = actual is None or (not isinstance(actual, str) and not actual)
        return absent == (wanted == {"true"})
    qualifier, _, single = operator.rpartition(":")
    if not qualifier and operator.endswith("IfExists") and operator[:-8] in _SINGLE_OPERATORS:
        # ...IfExists: holds when the request lacks the key, else as the operator
        # (reference_policies_elements_condition_operators.html#Conditions_IfExists).
        if actual is None:
            return True
        operator = operator[:-8]
    if qualifier in ("ForAllValues", "ForAnyValue") and single in _SINGLE_OPERATORS:
        if isinstance(actual, str):
            return None  # a set operator on a single-valued key: not modelled
        matches = [_matches(single, values, a) for a in actual or ()]
        return all(matches) if qualifier == "ForAllValues" else any(matches)
    if qualifier or operator not in _SINGLE_OPERATORS:
        return None
    if actual is None:
        return False
    if not isinstance(actual, str):
        return None  # a single-valued operator on a multivalued key: not modelled
    return _matches(operator, values, actual)


def conditions_hold(
    conditions: Mapping[str, Mapping[str, Sequence[str]]],
    context: Mapping[str, str | tuple[str, ...]],
    *,
    effect: Effect,
    unmodelled: Sequence[str] = (),
) -> bool:
    """All operators and all keys must hold (AND); a key's values are alternatives (OR)."""
    for operator, keys in conditions.items():
        for key, values in keys.items():
            held = _condition_holds(operator, key, values, context, unmodelled)
            if held is None:
                # Cannot evaluate: an Allow does not apply, a Deny does (deny either way).
                return effect == "Deny"
            if not held:
                return False
    return True


def applies(statement: Statement, request: Request) -> bool:
    return (
        any(wildcard_match(a, request.action, ignore_case=True) for a in statement.actions)
        and any(wildcard_match(r, request.resource) for r in statement.resources)
        and conditions_hold(
            statement.conditions,
            request.context,
            effect=statement.effect,
            unmodelled=request.unmodelled,
        )
    )


def authorize(statements: Iterable[Statement], request: Request) -> Decision:
    matching = [s for s in statements if applies(s, request)]
    if any(s.effect == "Deny" for s in matching):
        return "explicit_deny"
    return "allowed" if matching else "implicit_deny"


def denial_message(
    account: str,
    principal: Principal,
    request: Request,
    decision: Decision,
    *,
    quote_resource: bool = False,
) -> str:
    """The service's wording (e.g. aws/aws-cdk#32294, aws/amazon-sagemaker-feedback#88);
    S3 quotes the resource (aws-samples/serverless-patterns#2457)."""
    resource = f'"{request.resource}"' if quote_resource else request.resource
    why = (
        "with an explicit deny in an identity-based policy"
        if decision == "explicit_deny"
        else f"because no identity-based policy allows the {request.action} action"
    )
    return (
        f"User: arn:aws:sts::{account}:assumed-role/{principal.role_name}/handler is not "
        f"authorized to perform: {request.action} on resource: {resource} {why}"
    )


# --- reading a synthesized template ---------------------------------------------------


def resolve(value: Any, *, account: str, region: str, partition: str = "aws") -> Any:
    """A template value with the intrinsics the fake can evaluate replaced by text."""
    pseudo = {
        "AWS::Partition": partition,
        "AWS::Region": region,
        "AWS::AccountId": account,
        "AWS::URLSuffix": "amazonaws.com",
    }

    def walk(v: Any) -> Any:
        if isinstance(v, list):
            return [walk(x) for x in v]
        if not isinstance(v, dict):
            return v
        if set(v) == {"Ref"} and v["Ref"] in pseudo:
            return pseudo[v["Ref"]]
        if set(v) == {"Fn::Join"}:
            separator, parts = v["Fn::Join"]
            resolved = [walk(p) for p in parts]
            if all(isinstance(p, str) for p in resolved):
                return str(separator).join(resolved)
            return _unresolved(v)
        if set(v) == {"Fn::Sub"} and isinstance(v["Fn::Sub"], str):
            text = v["Fn::Sub"]
            for name, replacement in pseudo.items():
                text = text.replace("${" + name + "}", replacement)
            return text if "${" not in text else _unresolved(v)
        if len(v) == 1 and next(iter(v)).startswith(("Fn::", "Ref")):
            return _unresolved(v)
        return {k: walk(x) for k, x in v.items()}

    return walk(value)


def _unresolved(value: Any) -> str:
    # No '*' or '?' in it, and no ARN looks like it: it matches no request.
    return f"<unresolved {value!r}>"


def _listed(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(str(i) for i in items)


def parse_statement(raw: Mapping[str, Any]) -> Statement:
    unsupported = {"NotAction", "NotResource", "Principal", "NotPrincipal"} & set(raw)
    if unsupported:
        # Refuse rather than misjudge: the handler roles use none of these.
        raise ValueError(f"statement {raw.get('Sid', '')!r} uses {sorted(unsupported)}")
    effect = raw["Effect"]
    if effect not in ("Allow", "Deny"):
        raise ValueError(f"statement effect {effect!r}")
    conditions = {
        str(operator): {str(k): _listed(v) for k, v in keys.items()}
        for operator, keys in (raw.get("Condition") or {}).items()
    }
    return Statement(
        effect=effect,
        actions=_listed(raw["Action"]),
        resources=_listed(raw["Resource"]),
        conditions=conditions,
        sid=str(raw.get("Sid", "")),
    )


def _documents(template: Mapping[str, Any], role_id: str) -> Iterator[Mapping[str, Any]]:
    resources: Mapping[str, Any] = template["Resources"]
    role = resources[role_id]
    for inline in role["Properties"].get("Policies") or []:
        yield inline["PolicyDocument"]
    attached = set()
    for arn in role["Properties"].get("ManagedPolicyArns") or []:
        if isinstance(arn, dict) and set(arn) == {"Ref"} and arn["Ref"] in resources:
            attached.add(arn["Ref"])
        else:
            raise ValueError(f"{role_id} has a managed policy the fake cannot read: {arn!r}")
    for logical_id, resource in resources.items():
        kind = resource["Type"]
        if kind not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        roles = resource["Properties"].get("Roles") or []
        if {"Ref": role_id} in roles or logical_id in attached:
            yield resource["Properties"]["PolicyDocument"]


def role_statements(
    template: Mapping[str, Any], role_id: str, *, account: str, region: str
) -> tuple[Statement, ...]:
    statements: list[Statement] = []
    for document in _documents(template, role_id):
        raw = resolve(document["Statement"], account=account, region=region)
        statements.extend(parse_statement(s) for s in (raw if isinstance(raw, list) else [raw]))
    return tuple(statements)


def function_role(template: Mapping[str, Any], function_id: str) -> str:
    """The logical ID of a Lambda function's role (Role: Fn::GetAtt [role, Arn])."""
    role = template["Resources"][function_id]["Properties"]["Role"]
    if not (isinstance(role, dict) and "Fn::GetAtt" in role):
        raise ValueError(f"{function_id} has a role the fake cannot follow: {role!r}")
    return str(role["Fn::GetAtt"][0])


def provider_functions(template: Mapping[str, Any], custom_resource_id: str) -> dict[str, str]:
    """The user functions behind a custom resource of a CDK Provider.

    The resource's ServiceToken is the framework's onEvent function, whose environment
    names the user's handlers (USER_ON_EVENT_FUNCTION_ARN, USER_IS_COMPLETE_FUNCTION_ARN).
    Returns {"on_event": logical ID, "is_complete": logical ID}.
    """
    resources = template["Resources"]
    token = resources[custom_resource_id]["Properties"]["ServiceToken"]
    framework = resources[token["Fn::GetAtt"][0]]
    variables = framework["Properties"]["Environment"]["Variables"]
    return {
        "on_event": str(variables["USER_ON_EVENT_FUNCTION_ARN"]["Fn::GetAtt"][0]),
        "is_complete": str(variables["USER_IS_COMPLETE_FUNCTION_ARN"]["Fn::GetAtt"][0]),
    }
