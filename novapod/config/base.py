"""What every section builds on: the frozen model base, ConfigError, and the
field-path errors validators raise so a finding names the exact key to fix."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict


class ConfigError(Exception):
    """An invalid configuration; `issues` holds (field path, message) pairs.

    `source` is the file the issues are about; `render()` prefixes every line with it
    (`config/dev.yaml: network.vpc.zone_ids: ...`) so each line stands on its own.
    """

    def __init__(self, issues: Iterable[tuple[str, str]], source: str | None = None) -> None:
        self.issues = list(issues)
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return "\n".join(
            prefix + (f"{path}: {message}" if path else message) for path, message in self.issues
        )


class _FieldError(ValueError):
    """A model-level error that belongs to a more precise field path."""

    def __init__(self, path: str, message: str, root: bool) -> None:
        super().__init__(message)
        self.path = path
        self.root = root


def _at(path: str, message: str, *, root: bool = False) -> _FieldError:
    return _FieldError(path, message, root)


class _ApprovalError(_FieldError):
    """A purchase or extension that is not approved (as it stands) by its exact name, or
    approved without a fee cap. `names` when the message offers a name to paste."""

    def __init__(self, path: str, message: str, *, names: bool) -> None:
        super().__init__(path, message, True)
        self.names = names


class _EndedWindowError(_FieldError):
    """A plan to buy whose window has ended: nothing can be bought for it any more. The
    read-only commands (`novapod status`) still read an environment whose plans ran out."""


class _CombinedFieldError(ValueError):
    """Several model-level errors, reported together (one validator, many findings)."""

    def __init__(self, errors: list[_FieldError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


def _raise_all(problems: Iterable[_FieldError]) -> None:
    found = list(problems)
    if len(found) == 1:
        raise found[0]
    if found:
        raise _CombinedFieldError(found)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)
