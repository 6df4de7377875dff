"""Turning what a user types (a baseline name or a file path) into a protocol spec."""

from __future__ import annotations

from pathlib import Path

from tpdisc.errors import ConfigError, did_you_mean
from tpdisc.protocols.baselines import BASELINES, BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol, load_protocol_class


def resolve_protocol(text: str, *, trusted: bool = False) -> ProtocolSpec:
    """A baseline by name, or a protocol ``.py`` file (sandboxed unless ``trusted``)."""
    if text in BASELINES:
        return BaselineProtocol(text)
    path = Path(text)
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise ConfigError(f"{text}: no such protocol file (looked for {path.absolute()})")
        spec = SourceProtocol.from_file(path, trusted=trusted)
        if trusted:
            # Fail now, with the file named, rather than in the middle of a run.
            load_protocol_class(spec.source, spec.origin)
        return spec
    raise ConfigError(f"unknown protocol {text!r}{suggestion(text)}")


def suggestion(text: str) -> str:
    """What the user may have meant by a name that is neither a baseline nor a file: the
    file ``text.py`` when it exists, else the closest baseline; then every baseline."""
    if Path(f"{text}.py").is_file():
        return f" (did you mean the file {text}.py?)"
    return (
        f"{did_you_mean(text, BASELINES)}: not a baseline ({', '.join(BASELINES)}) nor a .py file"
    )


def unique_names(specs: list[ProtocolSpec]) -> list[str]:
    """Display names, made unique when two files share a stem."""
    names: list[str] = []
    for spec in specs:
        name, k = spec.name, 2
        while name in names:
            name, k = f"{spec.name}#{k}", k + 1
        names.append(name)
    return names
