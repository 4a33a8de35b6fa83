"""Replays CloudFormation custom-resource events the way the CDK Provider framework does.

`ProviderDriver.send` runs one event: on_event, then is_complete with the event merged
with on_event's result (as JSON, like the waiter state machine's payload), polling at
`query_interval_seconds` on an injected clock until complete, failed or past
`total_timeout_seconds` ("Operation timed out"). It mirrors the framework's rules: a
failed Create answers with a marker physical ID whose Delete is never passed on,
Delete may not change the physical ID, and is_complete may not return Data while
incomplete.

`Stack` holds one such resource and plays CloudFormation around it: rollback of a
failed Create (Delete), rollback of a failed Update (an Update with the old
properties), and the clean-up Delete of a replaced physical ID.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

CREATE_FAILED_MARKER = "AWSCDK::CustomResourceProviderFramework::CREATE_FAILED"
SERVICE_TOKEN = "arn:aws:lambda:us-east-1:123456789012:function:framework-onEvent"
STACK_ID = "arn:aws:cloudformation:us-east-1:123456789012:stack/Capacity/1111"

Handler = Callable[[dict[str, Any], Any], Any]
RequestType = Literal["Create", "Update", "Delete"]


@dataclass(frozen=True)
class Outcome:
    """What the framework would report to CloudFormation for one event."""

    request_type: RequestType
    status: Literal["SUCCESS", "FAILED"]
    physical_id: str
    data: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    polls: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "SUCCESS"


class ProviderDriver:
    def __init__(
        self,
        on_event: Handler,
        is_complete: Handler,
        *,
        advance_clock: Callable[[float], None],
        query_interval_seconds: float = 30,
        total_timeout_seconds: float = 3600,
        logical_id: str = "TrainingPlan",
    ) -> None:
        self.on_event = on_event
        self.is_complete = is_complete
        self.advance_clock = advance_clock
        self.query_interval_seconds = query_interval_seconds
        self.max_polls = int(total_timeout_seconds // query_interval_seconds)
        self.logical_id = logical_id
        self.last_request_id = ""  # of the last event made

    def event(
        self,
        request_type: RequestType,
        props: Mapping[str, Any],
        *,
        physical_id: str | None = None,
        old_props: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "RequestType": request_type,
            "ServiceToken": SERVICE_TOKEN,
            "ResponseURL": "https://cloudformation-custom-resource-response.invalid/signed",
            "StackId": STACK_ID,
            "RequestId": str(uuid.uuid4()),
            "LogicalResourceId": self.logical_id,
            "ResourceType": "Custom::TrainingPlan",
            "ResourceProperties": {"ServiceToken": SERVICE_TOKEN, **props},
        }
        self.last_request_id = event["RequestId"]
        if physical_id is not None:
            event["PhysicalResourceId"] = physical_id
        if old_props is not None:
            event["OldResourceProperties"] = {"ServiceToken": SERVICE_TOKEN, **old_props}
        return event

    def send(self, event: Mapping[str, Any]) -> Outcome:
        request_type: RequestType = event["RequestType"]
        old_id = event.get("PhysicalResourceId")
        if request_type == "Delete" and old_id == CREATE_FAILED_MARKER:
            return Outcome(request_type, "SUCCESS", CREATE_FAILED_MARKER)
        try:
            result = self.on_event(copy.deepcopy(dict(event)), None) or {}
        except Exception as exc:
            marker = CREATE_FAILED_MARKER if request_type == "Create" else str(old_id)
            return Outcome(request_type, "FAILED", marker, reason=str(exc))
        return self.complete(event, result)

    def complete(self, event: Mapping[str, Any], result: Mapping[str, Any]) -> Outcome:
        """The waiter's part: is_complete polls for `event` after on_event gave `result`."""
        request_type: RequestType = event["RequestType"]
        old_id = event.get("PhysicalResourceId")
        physical_id = str(
            result.get("PhysicalResourceId")
            or (event["RequestId"] if request_type == "Create" else old_id)
        )
        if request_type == "Delete" and physical_id != old_id:
            return Outcome(
                request_type, "FAILED", str(old_id), reason="DELETE changed the physical ID"
            )
        # The waiter receives the merged event as JSON: anything else cannot pass.
        merged = json.loads(json.dumps({**event, **result, "PhysicalResourceId": physical_id}))
        for poll in range(1, self.max_polls + 1):
            if poll > 1:
                self.advance_clock(self.query_interval_seconds)
            try:
                answer = self.is_complete(copy.deepcopy(merged), None)
            except Exception as exc:
                return Outcome(request_type, "FAILED", physical_id, reason=str(exc), polls=poll)
            answer = json.loads(json.dumps(answer))
            if not answer.get("IsComplete"):
                if answer.get("Data"):
                    reason = '"Data" is not allowed if "IsComplete" is "False"'
                    return Outcome(request_type, "FAILED", physical_id, reason=reason, polls=poll)
                continue
            data = {**merged.get("Data", {}), **answer.get("Data", {})}
            if not all(isinstance(v, str) for v in data.values()):
                raise AssertionError(f"attributes must be strings: {data}")
            return Outcome(request_type, "SUCCESS", physical_id, data=data, polls=poll)
        return Outcome(
            request_type, "FAILED", physical_id, reason="Operation timed out", polls=self.max_polls
        )


class Stack:
    """One custom resource in a stack, deployed, updated and deleted like CloudFormation."""

    def __init__(self, driver: ProviderDriver) -> None:
        self.driver = driver
        self.props: dict[str, Any] | None = None
        self.physical_id: str | None = None
        self.data: dict[str, str] = {}
        self.history: list[Outcome] = []
        self.rolled_back = False  # whether the last update was rolled back

    def _send(self, event: Mapping[str, Any]) -> Outcome:
        outcome = self.driver.send(event)
        self.history.append(outcome)
        return outcome

    def create(self, props: Mapping[str, Any]) -> Outcome:
        """Create; on failure CloudFormation rolls back by deleting what it got."""
        outcome = self._send(self.driver.event("Create", props))
        if outcome.ok:
            self.props, self.physical_id, self.data = dict(props), outcome.physical_id, outcome.data
        else:
            self._send(self.driver.event("Delete", props, physical_id=outcome.physical_id))
        return outcome

    def update(self, props: Mapping[str, Any], *, another_resource_fails: bool = False) -> Outcome:
        """Update; on failure (ours or another resource's) roll back, then clean up.

        Returns the last outcome that decides the resource's state: the update's, or
        the rollback update's when CloudFormation rolled back. `rolled_back` says which,
        so a test expecting a successful update cannot mistake a rollback for one.
        """
        if self.props is None or self.physical_id is None:
            raise AssertionError("update before a successful create")
        self.rolled_back = False
        old_props, old_id = self.props, self.physical_id
        outcome = self._send(
            self.driver.event("Update", props, physical_id=old_id, old_props=old_props)
        )
        if outcome.ok and not another_resource_fails:
            if outcome.physical_id != old_id:
                self._send(self.driver.event("Delete", old_props, physical_id=old_id))
            self.props, self.physical_id, self.data = dict(props), outcome.physical_id, outcome.data
            return outcome
        new_id = outcome.physical_id
        self.rolled_back = True
        rollback = self._send(
            self.driver.event("Update", old_props, physical_id=new_id, old_props=props)
        )
        if rollback.ok:
            if new_id != rollback.physical_id:
                self._send(self.driver.event("Delete", props, physical_id=new_id))
            self.physical_id, self.data = rollback.physical_id, rollback.data
        return rollback

    def delete(self) -> Outcome:
        if self.props is None or self.physical_id is None:
            raise AssertionError("delete before a successful create")
        outcome = self._send(self.driver.event("Delete", self.props, physical_id=self.physical_id))
        if outcome.ok:
            self.props = self.physical_id = None
        return outcome
