"""Lambda entry points of the BedrockModel custom resource (CDK `Provider` framework).

Imports a finished Nova job's checkpoint into Amazon Bedrock (CreateCustomModel) and
optionally deploys it for on-demand inference (CreateCustomModelDeployment);
CloudFormation has no resource for either. Both are purchases of the purchase ledger
(handler_core/ledger.py; the items and their rules in `claims.py`): an item is claimed
before the call, `calling` is written right before it and `bought` (with the ARN) after
it; an ambiguous failure is `ambiguous` and is reconciled by looking the model (or
deployment) up by name. Bedrock's own guarantees stay: names are unique and the client
token makes a resend harmless, so a reconcile that finds nothing resends the same token.

on_event first asks the ledger whether this CloudFormation request was delivered before
(then it imports the checkpoint that delivery chose, never a newer one), else reads the
job's newest manifest for the checkpoint; it looks the model up by name and adopts a
model the ledger or its source tag shows it imported, and only then claims and calls.
A job with no manifest yet is no failure: nothing is claimed or called, the resource
succeeds as waiting for a checkpoint under a stable placeholder ID (decisions.waiting_id)
and is_complete answers at once; the Update that finds a checkpoint (a new `Refresh`)
imports it as above. An Update of a waiting resource whose Refresh went down (the
rollback of a failed import) stays waiting and reads nothing. An imported model whose
job shows no run any more fails the Update and is kept.
is_complete waits for Active, then claims, creates or adopts the deployment and waits
for it; past WaitTimeoutSeconds it fails with a sentence, and the next deploy adopts the
model and resumes waiting. Delete deletes (unless retained) and moves the ledger item to
the next generation, whose new client token lets the same checkpoint be imported again.
Nothing else moves a bought item on but a human's release: one whose model (or
deployment) Bedrock shows neither by name nor by its recorded ARN fails with the
commands to check and release it, since a look-up right after the create may miss and a
new token would be a second import.
A ledger that cannot be read or written fails closed: nothing is called. Decisions live
in `decisions.py` and `claims.py`; every step is logged as one JSON line.

See https://docs.aws.amazon.com/bedrock/latest/userguide/create-custom-model-sdks.html
(create, then poll GetCustomModel until Active) and
https://docs.aws.amazon.com/bedrock/latest/userguide/deploy-custom-model-on-demand.html
(a deployment's ARN is the modelId of on-demand inference).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import ClientError, ParamValidationError  # type: ignore[import-untyped]

from ...handler_core import aws, errors, ledger, values

# The JSON log line, the clock and the pause before looking at an item another
# invocation holds (tests replace the last two).
from ...handler_core.values import log as _log
from ...handler_core.values import pause as _sleep
from ...handler_core.values import utc_now as _now
from . import claims, decisions, manifest
from .decisions import BedrockModelError, ModelProperties

CONNECT_TIMEOUT_SECONDS: float = 5
READ_TIMEOUT_SECONDS: float = 20
MAX_ATTEMPTS = 3
# The ledger answers in milliseconds; tight bounds keep the handlers within their timeouts.
LEDGER_CONNECT_TIMEOUT_SECONDS: float = 2
LEDGER_READ_TIMEOUT_SECONDS: float = 3
# How long an event leaves an item another invocation holds (claimed or calling, no model
# yet) before looking again; an item unchanged after that is taken over (the token makes
# a resend harmless).
HOLDER_WAIT_SECONDS: float = 5
# Rounds of look-up, ledger write and call: a round after the first runs only after a
# lost conditional write or a wait, never after an import call.
MAX_ROUNDS = 4
MAX_RESOLVES = 2
# Top-level key of on_event's result; the Provider passes it to every is_complete.
WAIT_STARTED_AT = "WaitStartedAt"
NOT_FOUND = "ResourceNotFoundException"
# What novapod does only under a claim in the purchase ledger.
ACTS = "calls Bedrock"
CONFLICT = "ConflictException"
# Codes of a call botocore retries rather than one the service refused.
_RETRIED_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "ServiceUnavailableException",
        "InternalServerException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)

T = TypeVar("T")


def call_seconds(connect: float, read: float, attempts: int = MAX_ATTEMPTS) -> float:
    """The longest one call takes: every attempt timed out, botocore's standard-mode
    pauses between them (at most 2**n, capped at 20 s)."""
    pauses = sum(min(2**n, 20) for n in range(1, attempts))
    return float(attempts * (connect + read) + pauses)


BEDROCK_CALL_SECONDS = call_seconds(CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS)
LEDGER_CALL_SECONDS = call_seconds(LEDGER_CONNECT_TIMEOUT_SECONDS, LEDGER_READ_TIMEOUT_SECONDS)
# A ledger write that fails is read back before it is given up.
LEDGER_WRITE_SECONDS = 2 * LEDGER_CALL_SECONDS
# The import and what follows its failure: retried to the limit, then the look-up by
# name; or refused at once as a taken name, then the look-up and the model's tags.
CREATE_AND_CONFIRM_SECONDS = max(
    2 * BEDROCK_CALL_SECONDS,
    CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS + 2 * BEDROCK_CALL_SECONDS,
)
# The longest round (one that calls: the others, a wait or an adoption, are shorter):
# look the model up, read its item, claim it, resolve the request's other items (a
# query and a claim given up, at most MAX_RESOLVES times), `calling`, the import and
# its confirmation, the item settled.
ROUND_SECONDS = (
    BEDROCK_CALL_SECONDS
    + LEDGER_CALL_SECONDS
    + LEDGER_WRITE_SECONDS
    + MAX_RESOLVES * (LEDGER_CALL_SECONDS + LEDGER_WRITE_SECONDS)
    + LEDGER_WRITE_SECONDS
    + CREATE_AND_CONFIRM_SECONDS
    + LEDGER_WRITE_SECONDS
)
# on_event starts another round only while one more fits in this (the Lambda's timeout,
# construct.ON_EVENT_TIMEOUT, is longer).
ON_EVENT_BUDGET_SECONDS = 830


class ReadError(aws.ReadError, BedrockModelError):
    """A Get* call failed after botocore's retries; `detail` names the error."""


def _claimant() -> str:
    """New for every invocation (tests replace it)."""
    return ledger.new_claimant()


def _client(service: str) -> Any:
    # Every Bedrock write here carries a client token, so botocore may resend it.
    return aws.client(
        service, aws.Settings(MAX_ATTEMPTS, CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS)
    )


def _ledger_client() -> Any:
    # The ledger's writes are conditional on the item's sequence: a resent write that
    # landed fails its condition, and ledger.Ledger reads the item back to settle it.
    return aws.client(
        "dynamodb",
        aws.Settings(MAX_ATTEMPTS, LEDGER_CONNECT_TIMEOUT_SECONDS, LEDGER_READ_TIMEOUT_SECONDS),
    )


def refused(exc: BaseException) -> bool:
    """The service refused the call at once, so nothing was created: a 4xx answer to the
    only attempt (a retried call may have been worked by an attempt whose answer was
    lost), not a throttle, not a taken name; or a request botocore never sent."""
    if isinstance(exc, ParamValidationError):
        return True
    code = errors.error_code(exc)
    return (
        isinstance(exc, ClientError)
        and 400 <= (errors.http_status(exc) or 0) < 500
        and errors.retry_attempts(exc) == 0
        and code not in _RETRIED_CODES
        and code != CONFLICT
    )


def _aws(action: str, call: Callable[[], T]) -> T:
    return aws.call(action, call, BedrockModelError)


def _get(action: str, call: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """A Get* answer, or None when the resource does not exist."""
    return aws.read(action, call, not_found=NOT_FOUND, error=ReadError)


def _get_model(bedrock: Any, identifier: str) -> dict[str, Any] | None:
    """GetCustomModel by name or ARN (its modelIdentifier takes either)."""
    return _get(
        f"GetCustomModel {identifier}",
        lambda: bedrock.get_custom_model(modelIdentifier=identifier),
    )


def _get_deployment(bedrock: Any, identifier: str) -> dict[str, Any] | None:
    return _get(
        f"GetCustomModelDeployment {identifier}",
        lambda: bedrock.get_custom_model_deployment(customModelDeploymentIdentifier=identifier),
    )


def _model_tags(bedrock: Any, arn: str) -> dict[str, str]:
    answer = _aws(
        f"ListTagsForResource {arn}", lambda: bedrock.list_tags_for_resource(resourceARN=arn)
    )
    return decisions.tag_map(answer.get("tags", []))


# --- the purchase ledger ----------------------------------------------------------------


def _ledger(props: ModelProperties) -> ledger.Ledger | None:
    """The resource's ledger; None for a resource from before it (a rollback to an older
    template), which may only adopt what exists."""
    if not props.ledger_table or not props.environment:
        return None
    return ledger.Ledger(_ledger_client(), props.ledger_table, props.environment, clock=_now)


def _unavailable(what: str, key: str, failed: ledger.LedgerError) -> BedrockModelError:
    """Fail closed: nothing was called, and the message says so."""
    message = ledger.unavailable_message(what, failed)
    _log("ledger-failed", message, purchase=key)
    return BedrockModelError(message)


def _by_recorded_arn(
    entry: ledger.Entry,
    get: Callable[[str], dict[str, Any] | None],
    *,
    what: str,
    key: str,
    arn_field: str,
    missing: Callable[[str], str],
) -> dict[str, Any]:
    """What a bought item's recorded ARN finds (the look-up by name missed it), else fail
    with `missing(arn)`: nothing is created again without a recorded Delete or release."""
    arn = str(entry.get("Arn") or "")
    found = get(arn) if arn else None
    if found is not None:
        _log(
            "found-by-arn",
            f"Bedrock shows no {what} (yet), but {ledger.describe(entry)} and its ARN {arn} "
            "finds it; nothing is created again",
            purchase=key,
            **{arn_field: arn},
        )
        return found
    message = missing(arn or "no ARN recorded")
    _log("refuse", message, purchase=key, **{arn_field: arn})
    raise BedrockModelError(message)


def _settle(
    book: ledger.Ledger, entry: ledger.Entry, state: ledger.State, **fields: Any
) -> ledger.Entry:
    return ledger.settle(book, entry, state, log=_log, settled_by="Bedrock", **fields)


def _pinned(book: ledger.Ledger, props: ModelProperties, request_id: str) -> ledger.Entry | None:
    """The item an earlier delivery of this request chose, if any (fail closed)."""
    try:
        entries = book.entries(claims.IMPORT)
    except ledger.LedgerError as failed:
        raise _unavailable(
            f"Bedrock model {props.model_name}", f"{claims.IMPORT}#{props.model_name}-*", failed
        ) from failed
    pin = claims.pinned(entries, props.model_name, request_id)
    if pin is not None and not isinstance(pin.get("Checkpoint"), str):
        return None
    return pin


# --- on_event ---------------------------------------------------------------------------


def on_event(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    request_type = event["RequestType"]
    if request_type == "Delete":
        return _delete(event)
    props = decisions.parse_properties(event["ResourceProperties"])
    old_id = str(event.get("PhysicalResourceId") or "")
    if (
        request_type == "Update"
        and decisions.is_waiting_id(old_id)
        and decisions.refresh_lowered(event)
    ):
        # The rollback of a failed first import returns to waiting rather than try the
        # import again (which a refused call would fail again, and the rollback with it).
        _log("waiting", decisions.still_waiting_message(props, event), physical_id=old_id)
        return {"PhysicalResourceId": old_id, "Data": decisions.waiting_data(props)}
    request_id = str(event.get("RequestId") or "")
    book = _ledger(props)
    pin = _pinned(book, props, request_id) if book is not None else None
    if pin is not None:
        checkpoint, manifest_at = str(pin.get("Checkpoint")), str(pin.get("ManifestAt") or "")
        _log(
            "pinned",
            f"request {request_id} was delivered before and chose checkpoint {checkpoint} "
            f"({ledger.describe(pin)}); this delivery imports that one and does not read the "
            "manifest again",
            checkpoint=checkpoint,
            purchase=pin.key,
        )
    else:
        found = _checkpoint(props)
        if found is None:
            return _waiting(event, props)
        checkpoint, manifest_at = found
    name = decisions.model_name(props, checkpoint)
    _log(
        "start",
        f"{request_type} of Bedrock model {name} from {checkpoint}",
        request_type=request_type,
        model_name=name,
        checkpoint=checkpoint,
        deployment=props.deployment,
    )
    target = _Target(name, checkpoint, manifest_at)
    bedrock = _client("bedrock")
    if book is None:
        arn = _adopt_without_ledger(bedrock, target)
    else:
        arn, target = _Importer(bedrock, book, props, request_id).run(target)
    if request_type == "Update" and decisions.is_waiting_id(old_id):
        _log(
            "imported-after-waiting",
            f"job {decisions.job_of(props)} has a checkpoint now: Bedrock model "
            f"{target.name} replaces the placeholder {old_id} (nothing to delete there)",
            model_arn=arn,
        )
    elif request_type == "Update" and arn != old_id:
        _log(
            "replace",
            f"Bedrock model {target.name} replaces {old_id}; "
            "CloudFormation deletes the old one unless RetainOnDelete keeps it",
            model_arn=arn,
        )
    return {
        "PhysicalResourceId": arn,
        "Data": {"ModelArn": arn, "ModelName": target.name, "CheckpointUri": target.checkpoint},
        WAIT_STARTED_AT: values.iso(_now()),
    }


def _waiting(event: Mapping[str, Any], props: ModelProperties) -> dict[str, Any]:
    """No finished run yet: succeed as waiting (no claim, no Bedrock call), unless the
    resource holds an imported model, which an Update must not replace by a placeholder."""
    old_id = str(event.get("PhysicalResourceId") or "")
    if event["RequestType"] == "Update" and decisions.is_model_arn(old_id):
        message = decisions.no_manifest_after_import_message(props, old_id)
        _log("refuse", message, model_arn=old_id)
        raise BedrockModelError(message)
    physical_id = decisions.waiting_id(props)
    _log(
        "waiting",
        decisions.waiting_message(props),
        request_type=event["RequestType"],
        physical_id=physical_id,
        status=decisions.WAITING,
    )
    return {"PhysicalResourceId": physical_id, "Data": decisions.waiting_data(props)}


def _checkpoint(props: ModelProperties) -> tuple[str, str] | None:
    """The newest run's checkpoint and when its manifest was written; None when the job
    has no finished run yet (no manifest under its output prefix)."""
    s3 = _client("s3")
    found = _aws(
        f"listing {props.output_prefix}", lambda: manifest.newest_manifest(s3, props.output_prefix)
    )
    if found is None:
        return None
    reading = _aws(f"reading {found.uri}", lambda: manifest.read_manifest(s3, found))
    if not reading.has_manifest:
        raise BedrockModelError(decisions.no_manifest_in_archive_message(props, reading.where))
    if reading.checkpoint is None:
        raise BedrockModelError(decisions.no_checkpoint_message(props, reading.where))
    _log(
        "manifest",
        f"run {found.run}'s manifest {reading.where} names checkpoint {reading.checkpoint}",
        run=found.run,
        manifest=reading.where,
        checkpoint=reading.checkpoint,
    )
    return reading.checkpoint, values.iso(found.last_modified)


@dataclass(frozen=True)
class _Target:
    """The model a round works on: its name, checkpoint and manifest time (the rank)."""

    name: str
    checkpoint: str
    manifest_at: str

    @property
    def key(self) -> str:
        return ledger.purchase_key(claims.IMPORT, self.name)

    @property
    def what(self) -> str:
        return f"Bedrock model {self.name}"


def _adopt_without_ledger(bedrock: Any, target: _Target) -> str:
    """No ledger named: an existing model of ours is adopted, nothing is imported."""
    model = _get_model(bedrock, target.name)
    if model is None:
        message = ledger.missing_message(target.what, done="imported", acts=ACTS)
        _log("refuse", message, model_name=target.name)
        raise BedrockModelError(message)
    arn = str(model["modelArn"])
    problem = decisions.adoption_problem(model, _model_tags(bedrock, arn), target.checkpoint)
    if problem is not None:
        _log("refuse", problem, model_arn=arn)
        raise BedrockModelError(problem)
    _log(
        "adopt",
        f"Bedrock model {target.name} exists ({model.get('modelStatus')}) and was imported "
        f"from {target.checkpoint}; adopting it (the resource names no purchase ledger)",
        model_arn=arn,
    )
    return arn


@dataclass(frozen=True)
class _Again:
    """Look again (a lost conditional write, a wait): `detail` for the last message."""

    detail: str


class _Importer:
    """One on_event's import: rounds of look-up, registration in the ledger and call."""

    def __init__(
        self, bedrock: Any, book: ledger.Ledger, props: ModelProperties, request_id: str
    ) -> None:
        self.bedrock = bedrock
        self.book = book
        self.props = props
        self.request_id = request_id
        self.claimant = _claimant()
        self.started = _now()
        self.waited: set[tuple[str, int]] = set()

    def run(self, target: _Target) -> tuple[str, _Target]:
        last = "no round ran"
        for round_ in range(MAX_ROUNDS):
            elapsed = (_now() - self.started).total_seconds()
            if round_ and elapsed + ROUND_SECONDS > ON_EVENT_BUDGET_SECONDS:
                break
            outcome = self._round(target)
            if isinstance(outcome, str):
                return outcome, target
            if isinstance(outcome, _Target):
                _log(
                    "follow",
                    f"another delivery of request {self.request_id} chose {outcome.key} "
                    f"(checkpoint {outcome.checkpoint}); this one follows it and imports "
                    "nothing else",
                    purchase=outcome.key,
                    checkpoint=outcome.checkpoint,
                )
                target = outcome
                continue
            last = outcome.detail
        message = decisions.unsettled_message(target.what, target.key, last)
        _log("give-up", message, purchase=target.key)
        raise BedrockModelError(message)

    # --- the ledger, failing closed before any call ---------------------------------

    def _read(self, target: _Target) -> ledger.Entry | None:
        try:
            entry = self.book.read(claims.IMPORT, target.name)
        except ledger.LedgerError as failed:
            raise _unavailable(target.what, target.key, failed) from failed
        _log(
            "ledger-read",
            ledger.describe(entry) if entry else f"{target.key} is not in the purchase ledger",
            purchase=target.key,
        )
        return entry

    def _write(
        self, target: _Target, write: Callable[[], ledger.Entry], doing: str
    ) -> ledger.Entry | _Again:
        try:
            written = write()
        except ledger.ClaimConflictError as lost:
            detail = ledger.describe(lost.current) if lost.current else f"{target.key} is gone"
            _log(
                "ledger-conflict",
                f"{doing} lost to another invocation ({detail}); this event looks again and "
                "has called nothing for it",
                purchase=target.key,
            )
            return _Again(detail)
        except ValueError as stale:  # the item moved to a state that cannot be claimed
            return _Again(str(stale))
        except ledger.LedgerError as failed:
            raise _unavailable(target.what, target.key, failed) from failed
        _log("ledger", f"{doing}: {ledger.describe(written)}", purchase=target.key)
        return written

    def _fields(self, target: _Target, generation: int) -> dict[str, Any]:
        return {
            "BaseName": self.props.model_name,
            "Checkpoint": target.checkpoint,
            "ManifestAt": target.manifest_at,
            "Generation": generation,
        }

    # --- one round ------------------------------------------------------------------

    def _round(self, target: _Target) -> str | _Target | _Again:
        model = _get_model(self.bedrock, target.name)
        # Read after the look-up: an item is written before its call, so a model seen
        # here is at least as old as the item read next.
        entry = self._read(target)
        if model is None and entry is not None and entry.state == ledger.BOUGHT:
            model = self._bought_model(target, entry)
        if model is not None:
            return self._adopt(target, model, entry)
        superseded = self._superseded(target, entry)
        if superseded is not None:
            return superseded
        if (
            entry is not None
            and claims.holder_may_be_working(entry, self.claimant)
            and (entry.key, entry.sequence) not in self.waited
        ):
            self.waited.add((entry.key, entry.sequence))
            _log(
                "wait",
                f"{ledger.describe(entry)} and Bedrock shows no model {target.name} yet: "
                f"another invocation may be importing it, so this event looks again in "
                f"{HOLDER_WAIT_SECONDS:g} s",
                purchase=target.key,
            )
            _sleep(HOLDER_WAIT_SECONDS)
            return _Again(ledger.describe(entry))
        own = self._register_call(target, entry)
        if isinstance(own, _Again):
            return own
        resolved = self._resolve(target, own)
        if resolved is not None:
            return resolved
        if own.state == ledger.CLAIMED:
            claimed = own
            token = decisions.model_token(target.name, target.checkpoint, claims.generation(own))
            calling = self._write(
                target,
                lambda: self.book.advance(
                    claimed,
                    ledger.CALLING,
                    CallingRequest=self.request_id,
                    CallingAt=values.iso(_now()),
                    ClientRequestToken=token,
                ),
                f"recorded {target.key} as calling",
            )
            if isinstance(calling, _Again):
                return calling
            own = calling
        return self._call(target, own)

    def _bought_model(self, target: _Target, entry: ledger.Entry) -> dict[str, Any]:
        """The model of a bought item the look-up by name missed, by the ARN the item
        records. A look-up right after the import may miss, and a new generation would be
        a new token, which Bedrock takes for a new import: only a Delete this handler
        recorded, or a human's release, moves the item on. Neither shown: fail."""
        return _by_recorded_arn(
            entry,
            lambda arn: _get_model(self.bedrock, arn),
            what=f"model named {target.name}",
            key=target.key,
            arn_field="model_arn",
            missing=lambda arn: decisions.model_missing_message(target.name, arn),
        )

    def _superseded(self, target: _Target, entry: ledger.Entry | None) -> _Target | None:
        """Another delivery of this request gave this claim up for its own item: follow
        that one rather than claim this again."""
        if entry is None or entry.state != ledger.RELEASED or entry.request_id != self.request_id:
            return None
        key = str(entry.get("SupersededBy") or "")
        kind, _, name = key.partition("#")
        if kind != claims.IMPORT or not name:
            return None
        chosen = self._read(_Target(name, target.checkpoint, ""))
        if chosen is None or not isinstance(chosen.get("Checkpoint"), str):
            return None
        return _Target(name, str(chosen.get("Checkpoint")), str(chosen.get("ManifestAt") or ""))

    def _register_call(self, target: _Target, entry: ledger.Entry | None) -> ledger.Entry | _Again:
        """This event's hold on the item before it calls: a claim (new, a new attempt, or
        a takeover of a claim that never called), or, for an item whose earlier call may
        have been made, `calling` again (its resend sends the same token)."""
        if entry is not None and entry.state in ledger.UNSETTLED:
            generation = claims.generation(entry)
            token = decisions.model_token(target.name, target.checkpoint, generation)
            return self._write(
                target,
                lambda: self.book.advance(
                    entry,
                    ledger.CALLING,
                    claimant=self.claimant,
                    Requests=claims.with_request(entry, self.request_id),
                    CallingRequest=self.request_id,
                    CallingAt=values.iso(_now()),
                    ClientRequestToken=token,
                    Resends=int(entry.get("Resends") or 0) + 1,
                ),
                f"{target.key} was {entry.state} with no model to show: recorded as calling "
                "to resend its token",
            )
        generation = claims.generation(entry)
        return self._write(
            target,
            lambda: self.book.claim(
                claims.IMPORT,
                target.name,
                current=entry,
                request_id=self.request_id,
                claimant=self.claimant,
                fields=self._fields(target, generation),
            ),
            f"claimed {target.key} (generation {generation})",
        )

    def _resolve(self, target: _Target, own: ledger.Entry) -> _Target | _Again | None:
        """Against the other items of this request (a concurrent delivery that read
        another manifest): the target to follow instead, or None to go on."""
        for _ in range(MAX_RESOLVES):
            try:
                entries = self.book.entries(claims.IMPORT)
            except ledger.LedgerError as failed:
                raise _unavailable(target.what, target.key, failed) from failed
            others = claims.of_resource(entries, self.props.model_name)
            follow, give_up = claims.winner(own, others, self.request_id)
            if follow is not None:
                if own.state == ledger.CLAIMED:
                    _settle(
                        self.book,
                        own,
                        ledger.RELEASED,
                        SupersededBy=follow.key,
                        Detail=f"request {self.request_id} imports {follow.key} instead; "
                        "nothing was called for this item",
                    )
                return _Target(
                    follow.name,
                    str(follow.get("Checkpoint") or target.checkpoint),
                    str(follow.get("ManifestAt") or ""),
                )
            lost = False
            for rival in give_up:
                try:
                    self.book.advance(
                        rival,
                        ledger.RELEASED,
                        claimant=self.claimant,
                        SupersededBy=own.key,
                        Detail=f"request {self.request_id} imports {own.key} instead; nothing "
                        "was called for this item",
                    )
                except ledger.ClaimConflictError:
                    lost = True
                    break
                except ledger.LedgerError as failed:
                    raise _unavailable(target.what, target.key, failed) from failed
                _log(
                    "supersede",
                    f"another delivery of request {self.request_id} claimed {rival.key}; "
                    f"released it, this request imports {own.key}",
                    purchase=rival.key,
                )
            if not lost:
                return None
        return _Again(f"the other items of request {self.request_id} kept changing")

    # --- adopting an existing model -----------------------------------------------

    def _adopt(
        self, target: _Target, model: Mapping[str, Any], entry: ledger.Entry | None
    ) -> str | _Target | _Again:
        arn = str(model["modelArn"])
        ours = claims.ours_by_ledger(entry, model)
        tags = _model_tags(self.bedrock, arn)
        problem = decisions.adoption_problem(model, tags, target.checkpoint, ours=ours)
        if problem is not None:
            if ours and entry is not None and model.get("modelStatus") == "Failed":
                _fail_import(self.book, entry, model)
            _log("refuse", problem, model_arn=arn)
            raise BedrockModelError(problem)
        if ours and entry is not None and decisions.SOURCE_DIGEST_TAG not in tags:
            _log(
                "wait-tags",
                f"Bedrock model {target.name} shows no source tags yet, but the purchase "
                f"ledger records this stack's import of it ({ledger.describe(entry)}); it "
                "is adopted, not taken for someone else's, and its tags follow",
                model_arn=arn,
            )
        own = self._register_adoption(target, arn, entry)
        if isinstance(own, _Again):
            return own
        resolved = self._resolve(target, own)
        if resolved is not None:
            return resolved
        _log(
            "adopt",
            f"Bedrock model {target.name} exists ({model.get('modelStatus')}) and was "
            f"imported from {target.checkpoint}; adopting it, nothing is imported again",
            model_arn=arn,
            status=model.get("modelStatus"),
        )
        return arn

    def _register_adoption(
        self, target: _Target, arn: str, entry: ledger.Entry | None
    ) -> ledger.Entry | _Again:
        """The item says bought with the model's ARN and names this request."""
        if entry is None:
            # Imported before the ledger (or by a novapod that tagged it): recorded as
            # bought at generation 0, the token it was imported with.
            return self._write(
                target,
                lambda: self.book.record(
                    claims.IMPORT,
                    target.name,
                    ledger.BOUGHT,
                    request_id=self.request_id,
                    claimant=self.claimant,
                    fields={**self._fields(target, 0), "Arn": arn, "Source": "adopted"},
                ),
                f"adopted {target.key} into the purchase ledger as bought",
            )
        if (
            entry.state == ledger.BOUGHT
            and entry.get("Arn") == arn
            and claims.standing(entry, self.request_id) is not None
        ):
            return entry
        source = "reconciled" if entry.state in ledger.UNSETTLED else "adopted"
        if entry.state == ledger.BOUGHT and entry.get("Arn") == arn:
            source = str(entry.get("Source") or "bought")
        return self._write(
            target,
            lambda: self.book.advance(
                entry,
                ledger.BOUGHT,
                claimant=self.claimant,
                Arn=arn,
                Source=source,
                Requests=claims.with_request(entry, self.request_id),
            ),
            f"recorded {target.key} as bought by this request's adoption",
        )

    # --- the import call ----------------------------------------------------------

    def _call(self, target: _Target, calling: ledger.Entry) -> str:
        generation = claims.generation(calling)
        kwargs = decisions.create_model_kwargs(
            self.props, target.name, target.checkpoint, generation
        )
        _log(
            "create",
            f"calling CreateCustomModel for Bedrock model {target.name} from "
            f"{target.checkpoint} (generation {generation})",
            model_name=target.name,
            client_request_token=kwargs["clientRequestToken"],
            generation=generation,
        )
        called_at = _now()
        try:
            arn = str(self.bedrock.create_custom_model(**kwargs)["modelArn"])
        except aws.ERRORS as exc:
            return self._after_failed_create(target, calling, exc)
        _settle(self.book, calling, ledger.BOUGHT, Arn=arn, BoughtAt=values.iso(called_at))
        _log("created", f"Bedrock is importing model {target.name} ({arn})", model_arn=arn)
        return arn

    def _after_failed_create(
        self, target: _Target, calling: ledger.Entry, exc: BaseException
    ) -> str:
        """Reconcile by name; say nothing was imported only when Bedrock refused."""
        detail = errors.error_detail(exc)
        _log(
            "create-failed",
            f"CreateCustomModel for {target.name} failed ({detail})",
            model_name=target.name,
        )
        try:
            model = _get_model(self.bedrock, target.name)
        except ReadError as unread:
            _log("create-failed", str(unread), model_name=target.name)
            model = None
        if model is not None:
            # A taken name answered at once: the model is not this call's.
            ours = not (errors.error_code(exc) == CONFLICT and errors.retry_attempts(exc) == 0)
            tags = _model_tags(self.bedrock, str(model["modelArn"]))
            problem = decisions.adoption_problem(model, tags, target.checkpoint, ours=ours)
            if problem is not None:
                if not ours:
                    _settle(
                        self.book,
                        calling,
                        ledger.REFUSED,
                        Error=detail,
                        Generation=claims.generation(calling) + 1,
                    )
                _log("refuse", problem, model_arn=model["modelArn"])
                raise BedrockModelError(problem) from exc
            _settle(
                self.book,
                calling,
                ledger.BOUGHT,
                Arn=str(model["modelArn"]),
                Source="confirmed" if ours else "existed",
            )
            _log(
                "adopt-after-failed-create",
                f"Bedrock model {target.name} exists after the failed call "
                f"({model.get('modelStatus')}); adopting it without importing again",
                model_arn=model["modelArn"],
            )
            return str(model["modelArn"])
        if refused(exc):
            _settle(
                self.book,
                calling,
                ledger.REFUSED,
                Error=detail,
                Generation=claims.generation(calling) + 1,
            )
            raise BedrockModelError(
                decisions.create_refused_message("CreateCustomModel", target.what, detail)
            ) from exc
        _settle(self.book, calling, ledger.AMBIGUOUS, Error=detail)
        raise BedrockModelError(
            decisions.create_ambiguous_message("CreateCustomModel", target.what, target.key, detail)
        ) from exc


def _fail_import(book: ledger.Ledger, entry: ledger.Entry, model: Mapping[str, Any]) -> None:
    """A Failed import needs a new token for the next one (after the model is deleted)."""
    if entry.state == ledger.FAILED:
        return
    _settle(
        book,
        entry,
        ledger.FAILED,
        Arn=str(model.get("modelArn") or entry.get("Arn") or ""),
        Error=str(model.get("failureMessage") or "the import Failed"),
        Generation=claims.generation(entry) + 1,
    )


# --- Delete -----------------------------------------------------------------------------


def _delete(event: Mapping[str, Any]) -> dict[str, Any]:
    arn = str(event.get("PhysicalResourceId", ""))
    raw = event.get("ResourceProperties", {})
    if decisions.is_waiting_id(arn):
        _log(
            "delete",
            f"{arn} was waiting for a checkpoint: nothing was imported, nothing to delete",
            physical_id=arn,
        )
        return {"PhysicalResourceId": arn}
    if not decisions.is_model_arn(arn):
        _log("delete", f"{arn} is not a Bedrock model ARN; nothing to delete", model_arn=arn)
        return {"PhysicalResourceId": arn}
    if decisions.retain_on_delete(raw):
        _log(
            "retain",
            f"keeping Bedrock model {arn} and its deployment (RetainOnDelete is true)",
            model_arn=arn,
        )
        return {"PhysicalResourceId": arn}
    bedrock = _client("bedrock")
    model = _get_model(bedrock, arn)
    if model is None:
        _log("delete", f"Bedrock model {arn} does not exist; nothing to delete", model_arn=arn)
        return {"PhysicalResourceId": arn}
    if model.get("modelStatus") == "Creating":
        # The rollback of a Create that timed out sends this Delete: the import goes on,
        # and the next deploy adopts it instead of importing again.
        _log(
            "retain",
            f"keeping Bedrock model {model['modelName']} ({arn}): its import is still "
            "Creating, and the next deploy adopts it; delete it by hand "
            f"(aws bedrock delete-custom-model --model-identifier {arn}) if none will",
            model_arn=arn,
        )
        return {"PhysicalResourceId": arn}
    model_name = str(model["modelName"])
    base = raw.get("DeploymentName") or raw.get("ModelName") or ""
    deployment: tuple[str, str] | None = None
    if base:
        deployment = _delete_deployment(bedrock, f"{base}-{model_name.rsplit('-', 1)[-1]}", arn)
    _tolerate_not_found(
        f"DeleteCustomModel {arn}", lambda: bedrock.delete_custom_model(modelIdentifier=arn)
    )
    _log("deleted", f"deleted Bedrock model {model_name} ({arn})", model_arn=arn)
    _next_generation(event, model_name, arn, deployment)
    return {"PhysicalResourceId": arn}


def _delete_deployment(bedrock: Any, name: str, model_arn: str) -> tuple[str, str] | None:
    """Delete our model's deployment of this name; its (name, ARN) when there was one."""
    deployment = _get_deployment(bedrock, name)
    if deployment is None or deployment.get("modelArn") != model_arn:
        return None
    _tolerate_not_found(
        f"DeleteCustomModelDeployment {name}",
        lambda: bedrock.delete_custom_model_deployment(customModelDeploymentIdentifier=name),
    )
    _log("deleted", f"deleted custom model deployment {name}", deployment_name=name)
    return name, str(deployment.get("customModelDeploymentArn") or "")


def _next_generation(
    event: Mapping[str, Any], model_name: str, arn: str, deployment: tuple[str, str] | None
) -> None:
    """After deleting: the ledger items move to their next generation, so importing the
    same checkpoint again sends a token Bedrock has not seen. Best effort: the model is
    gone either way; an item left bought makes the next import fail with the commands to
    check and release it (it never takes a missing model for a deleted one)."""
    raw = event.get("ResourceProperties", {})
    named = decisions.ledger_of(raw)
    if named is None:
        _log(
            "ledger",
            f"the resource names no purchase ledger; no generation recorded for {model_name}",
            model_name=model_name,
        )
        return
    book = ledger.Ledger(_ledger_client(), named[0], named[1], clock=_now)
    request_id = str(event.get("RequestId") or "")
    deleted_at = values.iso(_now())
    items = [(claims.IMPORT, model_name, arn, True)]
    if deployment is not None:
        items.append((claims.DEPLOYMENT, deployment[0], deployment[1], False))
    for kind, name, deleted, record_missing in items:
        key = ledger.purchase_key(kind, name)
        detail = f"deleted {deleted} (RetainOnDelete false); the next one is a new generation"
        try:
            entry = book.read(kind, name)
            if entry is None:
                if not record_missing:
                    continue
                base = raw.get("ModelName")
                book.record(
                    kind,
                    name,
                    ledger.RELEASED,
                    request_id=request_id,
                    claimant=_claimant(),
                    fields={
                        "BaseName": base if isinstance(base, str) else "",
                        "Arn": deleted,
                        "Source": "adopted",
                        "Deleted": deleted,
                        "DeletedAt": deleted_at,
                        "Generation": 1,
                        "Detail": detail,
                    },
                )
            elif entry.get("Arn") in (None, "", deleted) and entry.state != ledger.RELEASED:
                book.advance(
                    entry,
                    ledger.RELEASED,
                    claimant=_claimant(),
                    Deleted=deleted,
                    DeletedAt=deleted_at,
                    Generation=claims.generation(entry) + 1,
                    Detail=detail,
                )
            else:
                _log(
                    "ledger",
                    f"{ledger.describe(entry)}: it does not name {deleted}, so it is left as it is",
                    purchase=key,
                )
                continue
        except (ledger.LedgerError, ledger.ClaimConflictError) as failed:
            _log(
                "ledger-settle-failed",
                f"recording the deletion of {deleted} in {key} failed ({failed}); the next "
                "deploy of it fails until the item is released with novapod purchases "
                f"CONFIG --release {key}",
                purchase=key,
            )
            continue
        _log("ledger", f"recorded {key} as deleted: {detail}", purchase=key)


def _tolerate_not_found(action: str, call: Callable[[], Any]) -> None:
    try:
        call()
    except aws.ERRORS as exc:
        if errors.error_code(exc) != NOT_FOUND:
            raise BedrockModelError(errors.failed(action, exc)) from exc


# --- is_complete ------------------------------------------------------------------------


def is_complete(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = decisions.parse_properties(event["ResourceProperties"])
    arn = str(event["PhysicalResourceId"])
    if decisions.is_waiting_id(arn):
        # on_event found no run and called nothing: there is nothing to wait for.
        _log("ready", decisions.waiting_message(props), physical_id=arn, status=decisions.WAITING)
        return {"IsComplete": True, "Data": decisions.waiting_data(props)}
    data = dict(event.get("Data") or {})
    name, checkpoint = str(data.get("ModelName", "")), str(data.get("CheckpointUri", ""))
    since = values.as_utc(event.get(WAIT_STARTED_AT)) or _now()
    late = values.timed_out(since, _now(), props.wait_timeout_seconds)
    bedrock = _client("bedrock")
    try:
        model = _get_model(bedrock, arn)
    except ReadError as failed:
        if late:
            raise BedrockModelError(
                decisions.import_timeout_message(name, arn, last_error=failed.detail)
            ) from failed
        _log("poll", f"could not read Bedrock model {name} ({failed.detail})", model_arn=arn)
        return {"IsComplete": False}
    if model is None:
        raise BedrockModelError(f"Bedrock model {name} ({arn}) no longer exists")
    _log(
        "poll",
        f"Bedrock model {name} is {model.get('modelStatus')}",
        model_arn=arn,
        status=model.get("modelStatus"),
        since=values.iso(since),
    )
    if model.get("modelStatus") == "Failed":
        _record_failed_import(props, name, model)
    verdict = decisions.model_verdict(model)
    if verdict == "pending":
        if late:
            raise BedrockModelError(decisions.import_timeout_message(name, arn))
        return {"IsComplete": False}
    result = decisions.result_data(
        model_arn=arn, bedrock_model_name=name, checkpoint=checkpoint, status="Active"
    )
    if props.deployment == "none":
        _log("ready", f"Bedrock model {name} is Active", **result)
        return {"IsComplete": True, "Data": result}
    request_id = str(event.get("RequestId") or "")
    deployment_arn = _deploy(bedrock, props, name, arn, late=late, request_id=request_id)
    if deployment_arn is None:
        return {"IsComplete": False}
    result["DeploymentArn"] = deployment_arn
    _log("ready", f"Bedrock model {name} and its deployment are Active", **result)
    return {"IsComplete": True, "Data": result}


def _record_failed_import(props: ModelProperties, name: str, model: Mapping[str, Any]) -> None:
    """The ledger says failed (and the next generation) for our Failed import."""
    book = _ledger(props)
    if book is None:
        return
    try:
        entry = book.read(claims.IMPORT, name)
    except ledger.LedgerError as failed:
        _log("poll", f"reading {claims.IMPORT}#{name} failed ({failed})", model_name=name)
        return
    if entry is not None and claims.ours_by_ledger(entry, model):
        _fail_import(book, entry, model)


def _ledger_wait(what: str, key: str, failed: ledger.LedgerError, late: bool) -> None:
    """is_complete cannot use the ledger: nothing is called; the next poll tries again."""
    if late:
        raise _unavailable(what, key, failed) from failed
    _log("poll", f"the purchase ledger could not be used for {key} ({failed})", purchase=key)


def _deploy(
    bedrock: Any,
    props: ModelProperties,
    model_name: str,
    model_arn: str,
    *,
    late: bool,
    request_id: str,
) -> str | None:
    """The deployment's ARN once Active; None while it is being created."""
    name = decisions.deployment_name(props, model_name)
    return _Deployment(
        bedrock=bedrock,
        props=props,
        book=_ledger(props),
        name=name,
        model_arn=model_arn,
        late=late,
        request_id=request_id,
    ).poll()


@dataclass(frozen=True)
class _Deployment:
    """One is_complete poll's look at the model's deployment (claimed like the import)."""

    bedrock: Any
    props: ModelProperties
    book: ledger.Ledger | None
    name: str
    model_arn: str
    late: bool
    request_id: str

    @property
    def what(self) -> str:
        return f"custom model deployment {self.name}"

    @property
    def key(self) -> str:
        return ledger.purchase_key(claims.DEPLOYMENT, self.name)

    def poll(self) -> str | None:
        try:
            deployment = _get_deployment(self.bedrock, self.name)
        except ReadError as failed:
            if self.late:
                raise BedrockModelError(
                    decisions.deployment_timeout_message(self.name, last_error=failed.detail)
                ) from failed
            return None
        entry = None
        if self.book is not None:
            try:
                entry = self.book.read(claims.DEPLOYMENT, self.name)
            except ledger.LedgerError as failed:
                _ledger_wait(self.what, self.key, failed, self.late)
                return None
        if deployment is None and entry is not None and entry.state == ledger.BOUGHT:
            try:
                deployment = self._bought_deployment(entry)
            except ReadError as failed:
                if self.late:
                    raise BedrockModelError(
                        decisions.deployment_timeout_message(self.name, last_error=failed.detail)
                    ) from failed
                return None
        if deployment is not None:
            return self._existing(deployment, entry)
        if self.book is None:
            message = ledger.missing_message(self.what, done="created", acts=ACTS)
            _log("refuse", message, deployment_name=self.name)
            raise BedrockModelError(message)
        calling = self._claim(self.book, entry)
        if calling is None:
            return None
        return self._create(self.book, calling)

    def _bought_deployment(self, entry: ledger.Entry) -> dict[str, Any]:
        """A bought item's deployment the look-up by name missed, by its recorded ARN
        (as _Importer._bought_model: only a recorded Delete or a release moves it on)."""
        return _by_recorded_arn(
            entry,
            lambda arn: _get_deployment(self.bedrock, arn),
            what=f"deployment named {self.name}",
            key=self.key,
            arn_field="deployment_arn",
            missing=lambda arn: decisions.deployment_missing_message(self.name, arn),
        )

    def _claim(self, book: ledger.Ledger, entry: ledger.Entry | None) -> ledger.Entry | None:
        """`calling` for this poll's CreateCustomModelDeployment, or None (poll again)."""
        claimant = _claimant()
        generation = claims.generation(entry)
        try:
            if entry is not None and entry.state in ledger.UNSETTLED:
                # An earlier call may have been made and shows nothing: resend its token.
                return book.advance(
                    entry,
                    ledger.CALLING,
                    claimant=claimant,
                    CallingAt=values.iso(_now()),
                    Resends=int(entry.get("Resends") or 0) + 1,
                )
            claimed = book.claim(
                claims.DEPLOYMENT,
                self.name,
                current=entry,
                request_id=self.request_id,
                claimant=claimant,
                fields={"Model": self.model_arn, "Generation": generation},
            )
            _log("claim", f"claimed {self.key} (generation {generation})", purchase=self.key)
            return book.advance(claimed, ledger.CALLING, CallingAt=values.iso(_now()))
        except (ledger.ClaimConflictError, ValueError) as lost:
            _log(
                "ledger-conflict",
                f"{self.key} moved under another invocation ({lost}); this poll calls nothing",
                purchase=self.key,
            )
            return None
        except ledger.LedgerError as failed:
            _ledger_wait(self.what, self.key, failed, self.late)
            return None

    def _create(self, book: ledger.Ledger, calling: ledger.Entry) -> str | None:
        generation = claims.generation(calling)
        kwargs = decisions.create_deployment_kwargs(
            self.props, self.name, self.model_arn, generation
        )
        _log(
            "deploy",
            f"calling CreateCustomModelDeployment {self.name} for {self.model_arn} "
            f"(generation {generation})",
            deployment_name=self.name,
            client_request_token=kwargs["clientRequestToken"],
            generation=generation,
        )
        called_at = _now()
        try:
            created = self.bedrock.create_custom_model_deployment(**kwargs)
        except aws.ERRORS as exc:
            detail = errors.error_detail(exc)
            if refused(exc):
                _settle(book, calling, ledger.REFUSED, Error=detail, Generation=generation + 1)
                raise BedrockModelError(
                    decisions.create_refused_message(
                        "CreateCustomModelDeployment", self.what, detail
                    )
                ) from exc
            _settle(book, calling, ledger.AMBIGUOUS, Error=detail)
            message = decisions.create_ambiguous_message(
                "CreateCustomModelDeployment", self.what, self.key, detail
            )
            if self.late:
                raise BedrockModelError(message) from exc
            # The next poll looks the deployment up by name, then resends the same token.
            _log("deploy-failed", message, deployment_name=self.name)
            return None
        deployment_arn = str(created["customModelDeploymentArn"])
        _settle(book, calling, ledger.BOUGHT, Arn=deployment_arn, BoughtAt=values.iso(called_at))
        _log(
            "deploying",
            f"creating custom model deployment {self.name}",
            deployment_arn=deployment_arn,
        )
        if self.late:
            raise BedrockModelError(decisions.deployment_timeout_message(self.name))
        return None

    def _existing(self, deployment: Mapping[str, Any], entry: ledger.Entry | None) -> str | None:
        deployment_arn = str(deployment.get("customModelDeploymentArn") or "")
        serves = deployment.get("modelArn") == self.model_arn
        failed = serves and deployment.get("status") == "Failed"
        if failed and self.book is not None and entry is not None and entry.state != ledger.FAILED:
            _settle(
                self.book,
                entry,
                ledger.FAILED,
                Arn=deployment_arn,
                Error=str(deployment.get("failureMessage") or "the deployment Failed"),
                Generation=claims.generation(entry) + 1,
            )
        verdict = decisions.deployment_verdict(deployment, self.model_arn)
        if self.book is not None:
            self._record(self.book, entry, deployment_arn)
        _log(
            "poll",
            f"custom model deployment {self.name} is {deployment.get('status')}",
            deployment_arn=deployment_arn,
            status=deployment.get("status"),
        )
        if verdict == "ready":
            return deployment_arn
        if self.late:
            raise BedrockModelError(decisions.deployment_timeout_message(self.name))
        return None

    def _record(self, book: ledger.Ledger, entry: ledger.Entry | None, deployment_arn: str) -> None:
        """The deployment serving our model exists: the ledger says bought (best effort)."""
        if (
            entry is not None
            and entry.state == ledger.BOUGHT
            and entry.get("Arn") == deployment_arn
        ):
            return
        if entry is None:
            try:
                book.record(
                    claims.DEPLOYMENT,
                    self.name,
                    ledger.BOUGHT,
                    request_id=self.request_id,
                    claimant=_claimant(),
                    fields={"Arn": deployment_arn, "Model": self.model_arn, "Source": "adopted"},
                )
            except (ledger.LedgerError, ledger.ClaimConflictError) as failed:
                _log(
                    "ledger-settle-failed",
                    f"recording {self.key} failed ({failed}); the next poll records it",
                    purchase=self.key,
                )
            return
        source = "reconciled" if entry.state in ledger.UNSETTLED else "adopted"
        _settle(book, entry, ledger.BOUGHT, Arn=deployment_arn, Model=self.model_arn, Source=source)
