"""The BedrockModel handler's pure decisions over the purchase ledger (claims.py) and its
tokens: which item of a request wins, what a repeated delivery follows, generations."""

from __future__ import annotations

import hashlib
from typing import Any

from novapod.constructs.bedrock_model.handler import claims, decisions
from novapod.constructs.handler_core.ledger import Entry
from novapod.operate import purchases

REQUEST = "request-1"
OLD = "2030-01-01T00:00:00Z"
NEW = "2030-01-01T01:00:00Z"


def entry(
    name: str,
    state: str,
    *,
    request_id: str = REQUEST,
    manifest_at: str = OLD,
    claimant: str = "c-1",
    **fields: Any,
) -> Entry:
    return Entry(
        environment="dev",
        kind="import",
        name=name,
        state=state,
        sequence=1,
        attempt=1,
        request_id=request_id,
        claimant=claimant,
        updated_at=OLD,
        fields={"BaseName": "m", "Checkpoint": f"s3://c/{name}", "ManifestAt": manifest_at}
        | fields,
    )


def test_between_two_claims_of_one_request_the_older_manifest_wins() -> None:
    older = entry("m-1", "claimed", manifest_at=OLD)
    newer = entry("m-2", "claimed", manifest_at=NEW, claimant="c-2")
    # The older one gives the newer claim up before it calls ...
    assert claims.winner(older, [older, newer], REQUEST) == (None, [newer])
    # ... and the newer one follows the older one.
    assert claims.winner(newer, [older, newer], REQUEST) == (older, [])


def test_an_item_another_delivery_called_always_wins() -> None:
    called = entry("m-2", "calling", manifest_at=NEW, CallingRequest=REQUEST)
    for own in (entry("m-1", "claimed"), entry("m-1", "bought", Requests=[REQUEST])):
        assert claims.winner(own, [own, called], REQUEST) == (called, [])


def test_a_claim_follows_an_adopted_model_of_the_request() -> None:
    adopted = entry("m-2", "bought", manifest_at=NEW, request_id="older", Requests=[REQUEST])
    own = entry("m-1", "claimed")
    assert claims.winner(own, [own, adopted], REQUEST) == (adopted, [])
    assert claims.winner(adopted, [own, adopted], REQUEST) == (None, [own])


def test_other_requests_released_and_superseded_items_do_not_count() -> None:
    own = entry("m-1", "claimed", manifest_at=NEW)
    others = [
        entry("m-2", "claimed", request_id="another"),
        entry("m-3", "released", CallingRequest=REQUEST),
        entry("m-4", "released", SupersededBy="import#m-1"),
        entry("m-5", "refused", CallingRequest=REQUEST),
    ]
    assert claims.winner(own, [own, *others], REQUEST) == (None, [])


def test_a_repeated_delivery_follows_what_the_first_one_called_adopted_or_claimed() -> None:
    claimed = entry("m-1", "claimed")
    adopted = entry("m-2", "bought", request_id="older", Requests=["x", REQUEST], manifest_at=NEW)
    called = entry("m-3", "bought", CallingRequest=REQUEST, manifest_at=NEW)
    assert claims.pinned([claimed], "m", REQUEST) == claimed
    assert claims.pinned([claimed, adopted], "m", REQUEST) == adopted
    assert claims.pinned([claimed, adopted, called], "m", REQUEST) == called
    assert claims.pinned([called], "other-model", REQUEST) is None
    assert claims.pinned([called], "m", "another-request") is None


def test_requests_remembers_the_latest_few() -> None:
    many = entry("m-1", "bought", Requests=[f"r-{i}" for i in range(5)])
    assert claims.with_request(many, "r-9") == ["r-1", "r-2", "r-3", "r-4", "r-9"]
    assert claims.with_request(many, "r-2") == ["r-0", "r-1", "r-3", "r-4", "r-2"]


def test_the_ledger_shows_ownership_by_an_unsettled_call_or_the_same_arn() -> None:
    model = {"modelArn": "arn:model/1"}
    assert claims.ours_by_ledger(entry("m-1", "calling"), model)
    assert claims.ours_by_ledger(entry("m-1", "ambiguous"), model)
    assert claims.ours_by_ledger(entry("m-1", "bought", Arn="arn:model/1"), model)
    assert not claims.ours_by_ledger(entry("m-1", "bought", Arn="arn:model/0"), model)
    assert not claims.ours_by_ledger(entry("m-1", "claimed"), model)
    assert not claims.ours_by_ledger(None, model)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_generation_0_is_the_token_of_before_the_ledger() -> None:
    assert decisions.model_token("m-1", "s3://c/x") == "novapod-" + sha("model\nm-1\ns3://c/x")
    assert decisions.model_token("m-1", "s3://c/x", 2) == "novapod-" + sha(
        "model\nm-1\ns3://c/x\ngeneration 2"
    )
    assert decisions.deployment_token("d-1", "arn:m") == "novapod-" + sha("deployment\nd-1\narn:m")
    assert decisions.deployment_token("d-1", "arn:m", 1) != decisions.deployment_token(
        "d-1", "arn:m"
    )
    assert claims.generation(None) == 0
    assert claims.generation(entry("m-1", "released", Generation=3)) == 3


def test_missing_tags_of_our_own_import_are_waited_for_not_someone_elses() -> None:
    model = {"modelName": "m-1", "modelStatus": "Creating"}
    assert decisions.adoption_problem(model, {}, "s3://c/x", ours=True) is None
    assert "by someone else" in str(decisions.adoption_problem(model, {}, "s3://c/x"))
    other = {decisions.SOURCE_DIGEST_TAG: sha("s3://c/y")}
    assert "from another checkpoint" in str(
        decisions.adoption_problem(model, other, "s3://c/x", ours=True)
    )


def test_an_item_released_by_hand_after_it_was_bought_imports_as_a_new_generation() -> None:
    # novapod purchases --release writes as purchases.RELEASER and leaves Generation as it
    # was: the bought model's token is spent (Bedrock ignores it even once the model is
    # gone), so the next call sends the next one.
    by_hand = claims.HAND_RELEASER
    arn = "arn:aws:bedrock:us-east-1:123456789012:custom-model/imported/abc"
    assert by_hand == purchases.RELEASER
    assert claims.generation(entry("m-1", "released", claimant=by_hand, Arn=arn)) == 1
    assert claims.generation(entry("m-1", "released", claimant=by_hand, Arn=arn, Generation=2)) == 3
    # Released by hand from calling or ambiguous (no model recorded): the same token,
    # which Bedrock ignores should the call have been made after all.
    assert claims.generation(entry("m-1", "released", claimant=by_hand, Generation=2)) == 2
    # The handler's own Delete already recorded the next generation.
    deleted = entry("m-1", "released", Arn=arn, Deleted=arn, Generation=1)
    assert claims.generation(deleted) == 1
    # Bought and not released: the generation its model was imported with.
    assert claims.generation(entry("m-1", "bought", claimant=by_hand, Arn=arn)) == 0
