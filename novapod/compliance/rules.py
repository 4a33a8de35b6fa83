"""Acknowledgements that follow from a rule about every resource of a kind.

One today: cdk-nag's NIST 800-53 R5 and HIPAA packs flag every inline IAM policy
(IAMNoInlinePolicy). novapod writes an inline policy only for exactly one role; each is
acknowledged on itself, after the check that it is attached to one role and nothing
else. A policy shared by roles stays flagged (make it a managed policy, as the storage
stack's node policies are).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from novapod.constructs.acknowledge import acknowledge

INLINE_POLICY_REASON = (
    "An inline policy written for exactly one role, created and deleted with it; IAM "
    "recommends inline policies for such a strict one-to-one relationship "
    "(docs.aws.amazon.com/IAM/latest/UserGuide/access_policies_managed-vs-inline.html)."
)


def acknowledge_inline_policies(scope: IConstruct) -> int:
    """Acknowledge IAMNoInlinePolicy on each inline policy of one role under `scope`;
    returns how many."""
    count = 0
    for construct in scope.node.find_all():
        if isinstance(construct, iam.CfnPolicy) and _one_role_only(construct):
            acknowledge(construct, "IAMNoInlinePolicy", INLINE_POLICY_REASON)
            count += 1
    return count


def _one_role_only(policy: iam.CfnPolicy) -> bool:
    stack = Stack.of(policy)
    roles = stack.resolve(policy.roles) or []
    users = stack.resolve(policy.users) or []
    groups = stack.resolve(policy.groups) or []
    return len(roles) == 1 and not users and not groups
