"""Reading a config file: bytes to text to YAML to a validated NovapodConfig, every
failure a ConfigError."""

from __future__ import annotations

import codecs
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from novapod import yamlsafe
from novapod.capacity import aware_time
from novapod.config.base import ConfigError
from novapod.config.messages import _issues
from novapod.config.pipeline import Deployment, PipelineConfig, PipelineFile, placement_problem
from novapod.config.root import NovapodConfig

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "config" / "default.yaml"


def parse_config(
    data: Any,
    source: str | None = None,
    *,
    now: datetime | None = None,
    approvals: bool = True,
    windows: bool = True,
) -> NovapodConfig:
    """Validate already-parsed YAML data, as of `now` (default: the current time).

    `approvals=False`: everything but whether each purchase is approved by its exact name
    (for the commands that show the names and prices before anyone approves; what
    synthesizes or deploys always checks them). `windows=False`: nor whether each plan's
    purchase window is still open (for `novapod status`, which reads an environment after
    its plans ran out and buys nothing)."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            [("", "the configuration must be a YAML mapping with name, region and network")],
            source,
        )
    try:
        moment = now or validation_time(source)
        context = {"now": moment, "approvals": approvals, "windows": windows}
        return NovapodConfig.model_validate(dict(data), context=context)
    except ValidationError as exc:
        raise ConfigError(_issues(exc), source) from None


def load_config(
    path: str | os.PathLike[str],
    *,
    now: datetime | None = None,
    approvals: bool = True,
    windows: bool = True,
) -> NovapodConfig:
    """Read, decode, parse and validate one config file; every failure is a ConfigError.
    `approvals=False`, `windows=False`: see parse_config."""
    path = Path(path)
    return parse_config(_read_yaml(path), str(path), now=now, approvals=approvals, windows=windows)


def is_pipeline_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` holds a pipeline config: a YAML mapping with `pipeline` at the top.

    A file that cannot be read or parsed is not; `load_config` then says why.
    """
    try:
        data = _read_yaml(Path(path))
    except ConfigError:
        return False
    return isinstance(data, Mapping) and "pipeline" in data


def load_pipeline(path: str | os.PathLike[str], *, now: datetime | None = None) -> PipelineConfig:
    """Read and validate a pipeline file, then load every environment file it lists
    (paths relative to the pipeline file's folder), as of `now`."""
    path = Path(path)
    source = str(path)
    data = _read_yaml(path)
    if not isinstance(data, Mapping) or "pipeline" not in data:
        raise ConfigError(
            [("", "a pipeline file is a YAML mapping with a pipeline section at the top")], source
        )
    try:
        spec = PipelineFile.model_validate(dict(data)).pipeline
    except ValidationError as exc:
        raise ConfigError(_issues(exc), source) from None
    deployments: list[Deployment] = []
    for index, entry in enumerate(spec.environments):
        where = f"pipeline.environments[{index}].config"
        file = path.parent / entry.config
        if not file.is_file():
            raise ConfigError(
                [
                    (
                        where,
                        f"no environment file {file} (paths are relative to the pipeline "
                        f"file's folder, {path.parent}); fix the path",
                    )
                ],
                source,
            )
        config = load_config(file, now=now)  # its errors name its own file
        problem = placement_problem(spec, config, deployments)
        if problem:
            raise ConfigError([(where, problem)], source)
        deployments.append(Deployment(index, entry, file, config))
    return PipelineConfig(spec, path, tuple(deployments))


def _read_yaml(path: Path) -> Any:
    """The file's YAML, parsed; unreadable, undecodable or invalid YAML, or a key written
    twice in one mapping, is a ConfigError."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError([("", f"cannot read the file: {exc.strerror}")], source) from None
    text = decode_config_text(raw, source)
    try:
        return yamlsafe.load(text)
    except yamlsafe.DuplicateKeyError as exc:  # safe_load would keep the last silently
        raise ConfigError(exc.issues, source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        if isinstance(exc, yaml.reader.ReaderError):  # a character YAML forbids; no mark
            line = text.count("\n", 0, exc.position) + 1
            column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
            where = f" at line {line}, column {column}"
        # One line per mistake: PyYAML's own text adds an 'in "<unicode string>"' line.
        problem = (getattr(exc, "problem", None) or str(exc)).splitlines()[0]
        raise ConfigError([("", f"invalid YAML{where}: {problem}")], source) from None


# Byte-order marks, longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_config_text(raw: bytes, source: str) -> str:
    """UTF-8, or UTF-8/16/32 with a byte-order mark (editors on Windows write those).

    Anything else (a Latin-1 comment, UTF-16 without a mark) is a ConfigError that
    says where the first undecodable byte is; guessing an encoding could change a
    value silently.
    """
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            try:
                return raw.decode(codec)
            except UnicodeDecodeError as exc:
                raise _encoding_error(raw, exc, codec, source) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _encoding_error(raw, exc, "utf-8", source) from None
    if "\x00" in text:  # ASCII saved as UTF-16/32 without a mark decodes, NULs and all
        offset = raw.index(b"\x00")
        line = raw[:offset].count(b"\n") + 1
        raise ConfigError(
            [
                (
                    "",
                    f"byte {offset} (line {line}) is a NUL byte: the file looks like UTF-16 or "
                    "UTF-32 without a byte-order mark; save it as UTF-8",
                )
            ],
            source,
        )
    return text


def _encoding_error(raw: bytes, exc: UnicodeDecodeError, codec: str, source: str) -> ConfigError:
    offset = exc.start
    line = raw[:offset].count(b"\n") + 1
    byte = raw[offset : offset + 1].hex()
    encoding = {"utf-8": "UTF-8", "utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}
    return ConfigError(
        [
            (
                "",
                f"byte {offset} (line {line}, 0x{byte}) is not valid {encoding[codec]}; save "
                "the file as UTF-8 (in most editors: Save with Encoding, UTF-8)",
            )
        ],
        source,
    )


VALIDATE_AS_OF_ENV = "NOVAPOD_VALIDATE_AS_OF"


def validation_time(source: str | None = None) -> datetime:
    """The time the config's time-dependent rules are judged at: NOVAPOD_VALIDATE_AS_OF,
    else now. `source` names the file in the error an unreadable setting raises."""
    return _validate_as_of(source) or datetime.now(UTC)


def _validate_as_of(source: str | None) -> datetime | None:
    """NOVAPOD_VALIDATE_AS_OF: judge time-dependent rules (a plan window that has
    ended) as of that time, to re-synthesize a past commit as it was, and in tests."""
    value = os.environ.get(VALIDATE_AS_OF_ENV)
    if not value:
        return None
    moment = aware_time(value)
    if moment is None:
        raise ConfigError(
            [
                (
                    "",
                    f"{VALIDATE_AS_OF_ENV}={value} is not an ISO 8601 time with a UTC offset; "
                    "write it like 2026-11-30T00:00:00Z or unset it",
                )
            ],
            source,
        )
    return moment
