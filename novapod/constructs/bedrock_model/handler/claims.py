"""Pure decisions over the purchase ledger's items of Bedrock imports and deployments.

The ledger (handler_core/ledger.py) holds one item per import, `import#<Bedrock model
name>` (the name ends in the checkpoint's digest, so one item per resource and
checkpoint), and one per deployment, `deployment#<deployment name>`. Bedrock's own
guarantees stay the first line: names are unique and a repeated client token is
ignored, so a resend of one import is harmless. The ledger adds what those cannot:

- **Generations.** Bedrock ignores a token it has seen even after the model is gone, so
  an import that must be made again (the model was deleted, its import Failed or was
  refused) sends a new token: the item's `Generation` (0 when absent) is the generation
  the next call uses, and generation 0 gives the token novapod always sent
  (`decisions.model_token`), so imports made before the ledger keep theirs.
- **One checkpoint per request.** A CloudFormation request delivered twice (the
  Provider framework invokes on_event again after a failed Invoke) must not read a
  newer manifest the second time and import a second model. Every item a request
  used names it (`RequestId` when it claimed the item, `Requests` when it adopted the
  model, `CallingRequest` when it called); a later delivery finds them (`pinned`) and
  imports that checkpoint. Two deliveries running at once both register before any
  call and then resolve by `winner`, so at most one of them calls.
- **Only a recorded deletion frees a bought item.** A bought item whose model (or
  deployment) Bedrock shows neither by name nor by the ARN it records is not taken for
  gone: a look-up right after the create may miss, and a new generation is a new token,
  which Bedrock takes for a new purchase. The item moves to its next generation only
  when this handler's Delete records the deletion, or when a human releases it
  (`novapod purchases CONFIG --release KEY`, written as HAND_RELEASER) after checking.
- **Ownership.** An item whose call may have made the model (`calling`, `ambiguous`, or
  `bought` with the model's ARN) proves the model is this stack's import while its
  source tags are not visible yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ...handler_core import ledger
from ...handler_core.ledger import Entry

IMPORT = "import"
DEPLOYMENT = "deployment"
# How many requests an adopted item remembers (a repeated delivery comes soon after).
REQUEST_MEMORY = 5
# The claimant `novapod purchases --release` writes (novapod/operate/purchases.py RELEASER; the
# Lambda asset cannot import it, a test keeps the two equal).
HAND_RELEASER = "novapod-purchases-release"

Standing = Literal["called", "adopted", "claimed"]


def generation(entry: Entry | None) -> int:
    """The generation the next call of this item uses (0: the token of today).

    An item a human released after it was bought (it records the ARN) moves on by one:
    the release leaves `Generation` as it was, and Bedrock ignores that generation's
    token even once its model is gone. A release from calling or ambiguous keeps it
    (a resend of that token is harmless should the call have been made)."""
    value = entry.get("Generation") if entry is not None else None
    current = int(value) if isinstance(value, int) and value > 0 else 0
    if released_by_hand_after_purchase(entry):
        return current + 1
    return current


def released_by_hand_after_purchase(entry: Entry | None) -> bool:
    return (
        entry is not None
        and entry.state == ledger.RELEASED
        and entry.claimant == HAND_RELEASER
        and bool(entry.get("Arn"))
    )


def requests_of(entry: Entry) -> list[str]:
    recorded = entry.get("Requests") or []
    return [str(r) for r in recorded] if isinstance(recorded, list) else []


def with_request(entry: Entry, request_id: str) -> list[str]:
    """`Requests` with `request_id` added (the latest REQUEST_MEMORY)."""
    kept = [r for r in requests_of(entry) if r != request_id]
    return [*kept, request_id][-REQUEST_MEMORY:]


def standing(entry: Entry, request_id: str) -> Standing | None:
    """What `entry` says `request_id` did with it: `called` (a call of this request may
    have made the model, or did), `adopted` (the request adopted the model), `claimed`
    (the request claimed it and has not called yet), or None (nothing of this request,
    or an attempt that ended without a model, or a claim given up for another item)."""
    if entry.get("SupersededBy") or entry.state in ledger.RECLAIMABLE:
        return None
    if entry.get("CallingRequest") == request_id and entry.state in (
        ledger.UNSETTLED | {ledger.BOUGHT}
    ):
        return "called"
    mentioned = entry.request_id == request_id or request_id in requests_of(entry)
    if not mentioned:
        return None
    if entry.state == ledger.CLAIMED:
        return "claimed" if entry.request_id == request_id else None
    if entry.state == ledger.BOUGHT:
        return "adopted"
    return None


def rank(entry: Entry) -> tuple[str, str, str]:
    """Between two items of one request, the one whose manifest is older comes first
    (the first delivery's checkpoint); then by checkpoint and name, so every reader
    orders them alike. S3 times are compared only with each other."""
    return (str(entry.get("ManifestAt") or ""), str(entry.get("Checkpoint") or ""), entry.name)


def of_resource(entries: Sequence[Entry], base_name: str) -> list[Entry]:
    return [e for e in entries if e.kind == IMPORT and e.get("BaseName") == base_name]


def pinned(entries: Sequence[Entry], base_name: str, request_id: str) -> Entry | None:
    """The item an earlier delivery of `request_id` chose for this resource: one that
    called first, else one adopted, else the first claim."""
    mine = [e for e in of_resource(entries, base_name) if standing(e, request_id)]
    for wanted in ("called", "adopted", "claimed"):
        found = [e for e in mine if standing(e, request_id) == wanted]
        if found:
            return min(found, key=rank)
    return None


def winner(
    own: Entry, others: Sequence[Entry], request_id: str
) -> tuple[Entry | None, list[Entry]]:
    """Resolve this delivery's registered item `own` against the other items of the
    same request and resource: (the item to follow instead, or None to go on; the
    claims this delivery must give up for the others before it calls or adopts).

    An item another delivery called always wins (it may have made a model). A claim
    yields to an adopted model and to an older claim; a called or adopted item takes
    over the claims (a conditional write each: a claim that lost it never calls)."""
    rivals = [e for e in others if e.key != own.key and standing(e, request_id)]
    called = [e for e in rivals if standing(e, request_id) == "called"]
    if called:
        return min(called, key=rank), []
    adopted = [e for e in rivals if standing(e, request_id) == "adopted"]
    claims = [e for e in rivals if standing(e, request_id) == "claimed"]
    mine = standing(own, request_id)
    if mine == "claimed":
        if adopted:
            return min(adopted, key=rank), []
        ahead = [e for e in claims if rank(e) < rank(own)]
        if ahead:
            return min(ahead, key=rank), []
    elif mine == "adopted":
        ahead = [e for e in adopted if rank(e) < rank(own)]
        if ahead:
            return min(ahead, key=rank), []
    return None, claims


def ours_by_ledger(entry: Entry | None, model: Mapping[str, Any]) -> bool:
    """The ledger shows this stack's call may have made `model` (same name, and the same
    ARN once bought): its missing source tags are not yet visible, not someone else's."""
    if entry is None or entry.get("SupersededBy"):
        return False
    if entry.state in ledger.UNSETTLED:
        return True
    return entry.state == ledger.BOUGHT and entry.get("Arn") == model.get("modelArn")


def holder_may_be_working(entry: Entry, claimant: str) -> bool:
    """Another invocation holds the item and may be about to call (or calling)."""
    return entry.state in (ledger.CLAIMED, ledger.CALLING) and entry.claimant != claimant
