"""Template values as short, stable text: intrinsics as ${...}, never Python reprs."""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

# The engine renders a value it cannot parse as compact JSON inside its strings; a weak
# cross-stack reference then reads {"Fn::GetStackOutput":{...}} in the middle of an ARN.
_STACK_OUTPUT = re.compile(r'\{"Fn::GetStackOutput":\{[^{}]*\}\}')


def stack_output(reference: dict[str, Any]) -> str:
    return "${" + f"{reference.get('StackName')}:{reference.get('OutputName')}" + "}"


def readable(text: str) -> str:
    """An engine string with embedded Fn::GetStackOutput JSON shortened to ${Stack:Output}."""

    def shorten(match: re.Match[str]) -> str:
        try:
            return stack_output(json.loads(match.group(0))["Fn::GetStackOutput"])
        except (ValueError, KeyError, TypeError):
            return match.group(0)

    return _STACK_OUTPUT.sub(shorten, text)


def canonical(value: Any) -> str:
    """A value as compact JSON with sorted keys: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def render(value: Any) -> str:
    """A template value as text: literals as they are, Ref/GetAtt/Join/Sub readable."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key == "Ref":
            return "${" + str(inner) + "}"
        if key == "Fn::GetAtt":
            return (
                "${" + (".".join(map(str, inner)) if isinstance(inner, list) else str(inner)) + "}"
            )
        if key == "Fn::GetStackOutput" and isinstance(inner, dict):
            return stack_output(inner)
        if key == "Fn::Join" and isinstance(inner, list) and len(inner) == 2:
            separator, parts = inner
            if isinstance(parts, list):
                return str(separator).join(render(part) for part in parts)
        if key == "Fn::Sub":
            return str(inner[0] if isinstance(inner, list) else inner)
    if isinstance(value, list):
        return "[" + ", ".join(render(item) for item in value) + "]"
    return canonical(value)


def integer(value: Any) -> int | str | None:
    """A count or duration: an int when the template holds digits, else its text."""
    if value is None:
        return None
    text = render(value)
    return int(text) if text.isdigit() else text


def decimal(value: Any) -> Decimal | None:
    """A fee cap's amount (the template holds the config's plain number as text); None
    when it is absent or not a literal number (an intrinsic)."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def amount(value: Any) -> str:
    """A fee cap for reading: digits grouped by thousands (600,000; 1,234.50), as the
    config wrote its decimals; anything not a number as `render` shows it."""
    number = decimal(value)
    return render(value) if number is None else f"{number:,f}"
