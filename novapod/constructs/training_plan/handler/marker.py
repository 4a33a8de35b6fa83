"""The purchase markers earlier novapod versions tagged on a plan: read for the migration.

Before the purchase ledger (handler_core/ledger.py), the handler marked an extension's
purchase with one tag per attempt on the training plan: key
`novapod-extension:<extension name>:<token>`, value `<state> <offering ID>` (`pending`
before ExtendTrainingPlan, `bought` after). Tags are eventually consistent and are no
lock, so nothing writes them any more. On the next deploy the handler reads them
(ListTags) to adopt what they mark into the ledger and deletes the resolved ones
(claims.unresolved_markers says which are); the Service Authorization Reference lists
ListTags and DeleteTags (with aws:TagKeys) on the training-plan resource type
(docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PREFIX = "novapod-extension:"
# Every key the handler deletes matches this (IAM aws:TagKeys condition).
KEY_PATTERN = PREFIX + "*"
_KEY = re.compile(
    re.escape(PREFIX) + r"(?P<name>[a-zA-Z0-9-]+-ext(?P<hours>\d+)h-[0-9a-f]{8}):(?P<token>\w+)"
)


@dataclass(frozen=True)
class Marker:
    key: str
    extension_name: str
    hours: int  # the total that extension asks for (from its name)
    state: str  # "pending", "bought"; anything else counts as pending
    offering_id: str


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
