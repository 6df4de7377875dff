"""Loading protocol classes from Python source written to the SPEC §3 contract."""

from __future__ import annotations

import hashlib
import sys
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


def compile_protocol(source: str, origin: str) -> types.CodeType:
    """``source`` compiled as a module file of its own: with the ``__future__`` imports it
    makes, never the ones of the module compiling it (this one postpones annotations, which
    would turn a dataclass's field types into strings). SyntaxError and others propagate."""
    return compile(source, code_filename(origin), "exec", dont_inherit=True)


def protocol_module(source: str, origin: str) -> types.ModuleType:
    """The fresh module a protocol's source runs in, named after its origin and source: a
    name that stays the same in every process and for every load of the same source."""
    digest = hashlib.sha256(f"{origin}\0{source}".encode(errors="surrogatepass")).hexdigest()
    module = types.ModuleType(f"tpdisc_protocol_{digest[:16]}")
    module.__file__ = origin
    return module


def run_protocol_module(code: types.CodeType, module: types.ModuleType) -> None:
    """Run a protocol's compiled source in ``module``, registered in ``sys.modules`` as an
    imported file is: ``dataclasses``, ``typing.get_type_hints``, ``enum`` and pickling look
    a class's module up there. A source that fails is unregistered, as a failed import."""
    sys.modules[module.__name__] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        if sys.modules.get(module.__name__) is module:
            del sys.modules[module.__name__]
        raise


def load_protocol_class(source: str, origin: str) -> type:
    """Execute ``source`` in a fresh module and return its protocol class."""
    try:
        code = compile_protocol(source, origin)
    except SyntaxError as err:
        raise ProtocolError(f"{origin}: SyntaxError at line {err.lineno}: {err.msg}") from None
    module = protocol_module(source, origin)
    try:
        run_protocol_module(code, module)
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
