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


def _strict_ancestors(classes: list[type]) -> set[int]:
    """The ids of every class some class of ``classes`` inherits from, each visited once.

    Iterative and linear in classes plus base links: comparing every pair with issubclass
    was quadratic, on top of each check walking an MRO, and generated code can define
    thousands of classes. Ids, because a metaclass may make classes unhashable or equal.
    """
    found: set[int] = set()
    stack = [base for cls in classes for base in cls.__bases__]
    while stack:
        cls = stack.pop()
        if isinstance(cls, type) and id(cls) not in found:
            found.add(id(cls))
            stack.extend(cls.__bases__)
    return found


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
    inherited = _strict_ancestors(candidates)
    candidates = [c for c in candidates if id(c) not in inherited]
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


def start_protocol(cls: type, n_agents: int, n_steps: int, seed: int) -> object:
    """A fresh instance of a loaded protocol class whose random choices follow ``seed``.

    In-process runs and the sandbox's worker both start a protocol here, so that a trusted
    and a sandboxed run of the same source give the same simulation: the generators are
    seeded after the source has run (whatever it did to them at import) and just before
    ``__init__``. Whatever ``__init__`` raises propagates; each caller reports it its way.
    """
    seed_global_generators(seed)
    return cls(n_agents, n_steps)


@dataclass(frozen=True)
class SourceProtocol(ProtocolSpec):
    """A protocol given as source code (a user's file, or a search candidate).

    ``trusted`` source runs in this process. Untrusted source runs only where the caller
    puts it: in the sandbox, through ``tpdisc.sandbox.SandboxedSource`` (the loader sits
    below the sandbox and does not pick it on its own); opening it here is refused.
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
            raise ProtocolError(
                f"{self.origin}: untrusted protocol code runs only in the sandbox "
                "(tpdisc.sandbox.SandboxedSource)"
            )
        cls = load_protocol_class(self.source, self.origin)
        try:
            instance = start_protocol(cls, n_agents, n_steps, seed)
        except Exception as err:
            raise ProtocolError(f"{self.origin}: {describe_exception(err)} in __init__") from err
        return InProcessRunner(self.origin, instance)
