"""Check an `aws SERVICE OPERATION --param value ...` command against botocore's service
model, offline: the operation exists, each option is one of its parameters (or an option
of the CLI itself), and the values have the types, lengths and required members the
model says. What the docs and `novapod destroy-plan` print is held to it."""

from __future__ import annotations

import json
import shlex
from typing import Any

from botocore import xform_name
from botocore.validate import ParamValidator  # type: ignore[import-untyped]

from tests.fakes.service_model import service_model

# Options of the CLI itself, not of the operation.
CLI_OPTIONS = {"--region", "--query", "--output", "--max-items"}
SERVICES = {"s3api": "s3"}
# The CLI's own names of some members (aws/aws-cli, awscli/customizations/argrename.py,
# ARGUMENT_RENAMES): (service, operation, CLI option) -> the member's name in the model.
RENAMED = {("sns", "subscribe", "notification-endpoint"): "endpoint"}
CLI_NAMES = {(service, operation, m): o for (service, operation, o), m in RENAMED.items()}


def api_call(command: str) -> tuple[str, str, dict[str, Any]]:
    """`aws SERVICE OPERATION --param value ...` as (service, operation, API parameters)."""
    words = shlex.split(command)
    assert words[0] == "aws", command
    service = SERVICES.get(words[1], words[1])
    model = service_model(service)
    operations = {xform_name(name, "-"): name for name in model.operation_names}
    assert words[2] in operations, f"{words[1]} has no operation {words[2]}: {command}"
    operation = model.operation_model(operations[words[2]])
    members = {xform_name(name, "-"): name for name in operation.input_shape.members}
    params: dict[str, Any] = {}
    rest = words[3:]
    while rest:
        option = rest.pop(0)
        assert option.startswith("--"), command
        if option in CLI_OPTIONS:
            rest.pop(0)
            continue
        key = option[2:]
        cli_name = CLI_NAMES.get((service, words[2], key))
        assert cli_name is None, f"the CLI calls {option} --{cli_name}: {command}"
        key = RENAMED.get((service, words[2], key), key)
        if key.startswith("no-") and key[3:] in members:
            params[members[key[3:]]] = False
            continue
        assert key in members, f"{words[2]} takes no {option}: {command}"
        shape = operation.input_shape.members[members[key]]
        if shape.type_name == "boolean":
            params[members[key]] = True
            continue
        value = rest.pop(0)
        if shape.type_name == "list" and not value.startswith("["):
            # The CLI's list form: the values, one word each, up to the next option.
            values = [value]
            while rest and not rest[0].startswith("--"):
                values.append(rest.pop(0))
            params[members[key]] = values
        elif shape.type_name in {"structure", "list", "map"}:
            params[members[key]] = json.loads(value)
        elif shape.type_name == "integer":
            params[members[key]] = int(value)
        else:
            params[members[key]] = value
    report = ParamValidator().validate(params, operation.input_shape)
    assert not report.has_errors(), f"{command}: {report.generate_report()}"
    return service, operations[words[2]], params
