"""Loading protocol classes from Python source written to the SPEC §3 contract."""

from __future__ import annotations

import types
from dataclasses import dataclass
from pathlib import Path

from tpdisc.errors import ProtocolError
from tpdisc.protocols.interface import (
    InProcessRunner,
    ProtocolRunner,
    ProtocolSpec,
    describe_exception,
    seed_global_generators,
)

CONVENTIONAL_NAME = "TransmissionProtocol"


def code_filename(origin: str) -> str:
    """The filename protocol code is compiled under, recognised in error reports."""
    return f"<protocol {origin}>"


def find_protocol_class(namespace: dict[str, object], origin: str) -> type:
    """``TransmissionProtocol`` if defined, else the one class that has ``share_memories``."""
    conventional = namespace.get(CONVENTIONAL_NAME)
    if isinstance(conventional, type):
        return conventional
    module_name = namespace.get("__name__")
    candidates = [
        obj
        for obj in namespace.values()
        if isinstance(obj, type)
        and obj.__module__ == module_name
        and callable(getattr(obj, "share_memories", None))
    ]
    # A base class and its subclass both have share_memories: the subclass is the protocol.
    candidates = [
        c for c in candidates if not any(o is not c and issubclass(o, c) for o in candidates)
    ]
    if not candidates:
        raise ProtocolError(f"{origin}: no class with a share_memories method")
    if len(candidates) > 1:
        names = ", ".join(sorted(c.__name__ for c in candidates))
        raise ProtocolError(
            f"{origin}: several classes define share_memories ({names}); "
            f"name the one to use {CONVENTIONAL_NAME}"
        )
    return candidates[0]


def load_protocol_class(source: str, origin: str) -> type:
    """Execute ``source`` in a fresh module and return its protocol class."""
    try:
        code = compile(source, code_filename(origin), "exec")
    except SyntaxError as err:
        raise ProtocolError(f"{origin}: SyntaxError at line {err.lineno}: {err.msg}") from None
    module = types.ModuleType(f"tpdisc_protocol_{abs(hash(origin))}")
    module.__file__ = origin
    try:
        exec(code, module.__dict__)
    except Exception as err:
        raise ProtocolError(f"{origin}: {describe_exception(err)} while loading") from err
    return find_protocol_class(module.__dict__, origin)


def instantiate(cls: type, n_agents: int, n_steps: int, origin: str) -> object:
    try:
        return cls(n_agents, n_steps)
    except Exception as err:
        raise ProtocolError(f"{origin}: {describe_exception(err)} in __init__") from err


@dataclass(frozen=True)
class SourceProtocol(ProtocolSpec):
    """A protocol given as source code (a user's file, or a search candidate).

    ``trusted`` source runs in this process; untrusted source runs in the sandbox.
    """

    name: str
    source: str
    origin: str = "<source>"
    trusted: bool = False

    @classmethod
    def from_file(cls, path: str | Path, *, trusted: bool = False) -> SourceProtocol:
        path = Path(path)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ProtocolError(f"{path}: cannot read protocol file ({err})") from None
        return cls(path.stem, source, str(path), trusted)

    @property
    def label(self) -> str:
        return self.origin

    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        if not self.trusted:
            from tpdisc.sandbox import open_sandboxed

            return open_sandboxed(self, n_agents, n_steps, seed)
        cls = load_protocol_class(self.source, self.origin)
        seed_global_generators(seed)
        return InProcessRunner(self.origin, instantiate(cls, n_agents, n_steps, self.origin))
