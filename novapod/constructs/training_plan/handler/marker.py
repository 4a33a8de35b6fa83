"""The durable purchase marker of a plan's extension: pure decisions, no AWS calls.

ExtendTrainingPlan has no client token, and an extension may be bought but not yet
shown by DescribeTrainingPlanExtensionHistory nor by the plan's end time. So before
calling it, the handler writes a marker on the training plan itself, one tag per
attempt: key `novapod-extension:<extension name>:<token>` (the token is new for every
on_event invocation, so a duplicated invocation of the same event writes another key),
value `pending <offering ID>`. Training plans take tags: CreateTrainingPlan has Tags,
and the Service Authorization Reference lists AddTags, ListTags and DeleteTags for the
training-plan resource type (docs.aws.amazon.com/service-authorization/latest/reference/
list_amazonsagemaker.html, as mirrored in iann0036/iam-dataset:aws/iam_definition.json).

The protocol (index.py performs it):

1. With the history, read the plan's markers (ListTags). An unresolved `pending`
   marker (below) blocks any purchase: the event buys nothing and is_complete waits
   for the history or the end time to show it; past the pending timeout it fails with
   the commands to check and to clear the marker (`marker_timeout_message`).
2. Write this event's marker `pending` (AddTags). If that fails, nothing is bought.
3. Read the markers again. If another event's marker appeared since step 1 (or ours
   is not listed), back off: delete ours and buy nothing. Of two events that both wrote,
   the one that reads second sees the first one's marker, so at most one goes on (the
   tags of one resource read their own writes; if they did not, two events writing at
   the same moment could both go on, and no marker of any kind would prevent that).
4. Call ExtendTrainingPlan once. Success: the marker becomes `bought <offering ID>`.
   A definite refusal (or a call that never left the client): the marker is deleted, so
   a later deploy may try again. An ambiguous failure leaves it `pending`.

A marker is resolved once the history lists its offering (as bought, or only as Failed:
then it added nothing), or once the plan is extended by the marker's total by either
read. A crash between any two steps leaves at worst an unresolved `pending` marker:
later events wait for it and never buy past it until someone clears it deliberately.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

PREFIX = "novapod-extension:"
# Every key the handler writes or deletes matches this (IAM aws:TagKeys condition).
KEY_PATTERN = PREFIX + "*"
PENDING = "pending"
BOUGHT = "bought"
_KEY = re.compile(
    re.escape(PREFIX) + r"(?P<name>[a-zA-Z0-9-]+-ext(?P<hours>\d+)h-[0-9a-f]{8}):(?P<token>\w+)"
)
# AddTags' TagValue pattern ([\p{L}\p{Z}\p{N}_.:/=+\-@]*, at most 256, botocore's model):
# anything else in an offering ID is dropped from the value, which only names it.
_NOT_IN_VALUE = re.compile(r"[^\w .:/=+\-@]")
_VALUE_MAX = 256

Outcome = Literal["shown", "failed", "unseen"]


@dataclass(frozen=True)
class Marker:
    key: str
    extension_name: str
    hours: int  # the total that extension asks for (from its name)
    state: str  # "pending", "bought"; anything else counts as pending
    offering_id: str

    @property
    def value(self) -> str:
        offering = _NOT_IN_VALUE.sub("", self.offering_id)
        return f"{self.state} {offering}"[:_VALUE_MAX]

    def tag(self) -> dict[str, str]:
        return {"Key": self.key, "Value": self.value}

    def as_bought(self) -> Marker:
        return Marker(self.key, self.extension_name, self.hours, BOUGHT, self.offering_id)


def new_marker(extension_name: str, hours: int, offering_id: str, token: str) -> Marker:
    """This event's marker, `pending` until the purchase is known."""
    return Marker(f"{PREFIX}{extension_name}:{token}", extension_name, hours, PENDING, offering_id)


def parse_markers(tags: Sequence[Mapping[str, Any]]) -> list[Marker]:
    """The markers among a plan's tags (others are the user's and are left alone)."""
    markers: list[Marker] = []
    for tag in tags:
        found = _KEY.fullmatch(str(tag.get("Key", "")))
        if found is None:
            continue
        state, _, offering = str(tag.get("Value", "")).partition(" ")
        markers.append(
            Marker(
                key=found.group(0),
                extension_name=found.group("name"),
                hours=int(found.group("hours")),
                state=state,
                offering_id=offering,
            )
        )
    return sorted(markers, key=lambda m: m.key)


def outcome(marker: Marker, history: Sequence[Mapping[str, Any]], seen: int) -> Outcome:
    """`shown`: the history lists its offering, or the plan has its total anyway;
    `failed`: the history lists its offering only as Failed (nothing added);
    `unseen`: neither read shows it yet."""
    listed = [
        e
        for e in history
        if marker.offering_id and e.get("TrainingPlanExtensionOfferingId") == marker.offering_id
    ]
    if any(e.get("Status") != "Failed" for e in listed):
        return "shown"
    if listed:
        return "failed"
    return "shown" if seen >= marker.hours else "unseen"


def unresolved(
    markers: Sequence[Marker], history: Sequence[Mapping[str, Any]], seen: int
) -> list[Marker]:
    """Markers whose purchase neither read shows yet (pending or bought)."""
    return [m for m in markers if outcome(m, history, seen) == "unseen"]


@dataclass(frozen=True)
class Gate:
    """What the markers say before a purchase: those that block it (a purchase that
    may have happened), and the hours the plan has counting those known bought."""

    blocking: tuple[Marker, ...]
    counted: int


def gate(markers: Sequence[Marker], history: Sequence[Mapping[str, Any]], seen: int) -> Gate:
    waiting = unresolved(markers, history, seen)
    # A `bought` marker not shown yet: its extension took the plan to its total.
    counted = max([seen, *(m.hours for m in waiting if m.state == BOUGHT)])
    return Gate(tuple(m for m in waiting if m.state != BOUGHT), counted)


def back_off_reason(
    own: Marker,
    reread: Sequence[Marker],
    before: Gate,
    history: Sequence[Mapping[str, Any]],
    seen: int,
) -> str | None:
    """Why this event must not buy after writing its marker (None: it buys)."""
    if own.key not in {m.key for m in reread}:
        return f"its own marker {own.key} is not listed yet"
    after = gate([m for m in reread if m.key != own.key], history, seen)
    if after.blocking:
        return f"{after.blocking[0].key} marks another purchase pending"
    if after.counted != before.counted:
        return (
            f"another purchase was marked bought meanwhile (extended by {after.counted} h, "
            f"not {before.counted} h)"
        )
    return None


# --- messages ----------------------------------------------------------------------------


def check_command(plan_arn: str) -> str:
    # docs.aws.amazon.com/cli/latest/reference/sagemaker/
    # describe-training-plan-extension-history.html
    return f"aws sagemaker describe-training-plan-extension-history --training-plan-arn {plan_arn}"


def clear_command(plan_arn: str, key: str) -> str:
    # docs.aws.amazon.com/cli/latest/reference/sagemaker/delete-tags.html
    return f"aws sagemaker delete-tags --resource-arn {plan_arn} --tag-keys {key}"


def waiting_message(marker: Marker) -> str:
    return (
        f"{marker.key} marks extension {marker.extension_name} ({marker.offering_id or '?'}) "
        "pending and neither the extension history nor the end time shows it yet, so this "
        "event buys nothing and waits for it to show"
    )


def marker_timeout_message(plan_arn: str, marker: Marker, waited_seconds: int) -> str:
    """One sentence: (may have been) bought, how to check, how to clear deliberately."""
    bought = "was bought" if marker.state == BOUGHT else "may have been bought"
    offering = marker.offering_id or "?"
    return (
        f"extension {marker.extension_name} {bought}: tag {marker.key} on the training plan "
        f"marks it {marker.state} (offering {offering}) and neither the plan's extension "
        f"history nor its end time has shown it in {waited_seconds} s, so no deploy extends "
        f"the plan while that tag is there; check with `{check_command(plan_arn)}` and, only "
        f"if it lists no extension {offering}, clear the marker with "
        f"`{clear_command(plan_arn, marker.key)}`, then deploy again"
    )


def not_marked_message(extension_name: str, detail: str) -> str:
    return (
        f"marking extension {extension_name} pending on the training plan failed ({detail}), "
        "so ExtendTrainingPlan was not called and nothing was bought; deploy again"
    )


def not_reread_message(extension_name: str, detail: str) -> str:
    return (
        "reading the training plan's purchase markers again after marking extension "
        f"{extension_name} pending failed ({detail}), so ExtendTrainingPlan was not called "
        "and nothing was bought; deploy again"
    )


def stale_marker_note(plan_arn: str, key: str, detail: str) -> str:
    """Appended when this event's marker of a purchase that did not happen stays."""
    return (
        f"; deleting its marker failed too ({detail}), so deploys wait for it until you clear "
        f"it with `{clear_command(plan_arn, key)}`"
    )
