"""The code that runs inside a sandboxed worker, after the zygote forks it.

Order matters: read the parent's settings, confine the process (limits, uid, seccomp), and
only then compile and run the untrusted source. From that point on, nothing here is trusted
by the parent: the protocol can reach and rewrite this module, so every reply is checked
again on the other side.
"""

from __future__ import annotations

import builtins
import os
import pickle
import random
import types
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import numpy as np

from tpdisc.errors import ProtocolError
from tpdisc.protocols.exchanges import validate_exchanges
from tpdisc.protocols.interface import describe_exception
from tpdisc.protocols.loader import (
    compile_protocol,
    find_protocol_class,
    protocol_module,
    run_protocol_module,
    start_protocol,
)
from tpdisc.sandbox import codec, confine, policy
from tpdisc.sandbox.allowlist import disallowed_import, import_message

# Builtins with no use in a protocol but a use in an attack; their absence is feedback, the
# seccomp filter is the barrier.
SEQUENCES = (list, tuple, np.ndarray)  # what validate_exchanges accepts as a recipient's list
TRIMMED_BUILTINS = (
    "open",
    "input",
    "breakpoint",
    "help",
    "exit",
    "quit",
    "copyright",
    "credits",
    "license",
)


# Private attributes of allowed modules that are whole modules: ``random._os`` is ``os``
# (pid, CPU times), ``random._random`` the C generator, whose unseeded state comes from the
# clock and pid once getrandom is refused. ``_time`` is listed for Pythons that have it.
HIDDEN_MODULES = {random: ("_os", "_random", "_time")}
ENTROPY_SALT = "tpdisc-sandbox-entropy"


class _Unavailable(types.ModuleType):
    """Stands in for a module reached through a private attribute: a clear error."""

    def __getattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{self.__name__} is not available in the sandbox")


def pin_entropy(seed: int) -> None:
    """Serve every Python-level read of OS entropy from a stream derived from ``seed``.

    Same seed, same simulation: unseeded generators (``random.Random()``, ``random.seed()``,
    ``np.random.default_rng()``, ``RandomState()``), ``SystemRandom``, ``secrets`` and
    ``os.urandom`` all draw from it. It is separate from the global generators, so a
    protocol that does not read entropy runs exactly as in-process. Code that goes round
    these names (``os.getrandom``, ``posix.urandom``) meets the seccomp filter: EPERM.
    """
    stream = random.Random(f"{ENTROPY_SALT}:{seed}")

    def urandom(size: int) -> bytes:
        return stream.randbytes(size)

    unseeded = random.Random.seed

    def seed_or_draw(self: random.Random, a: Any = None, version: int = 2) -> None:
        # random.Random's C base seeds from the clock and pid when getrandom fails.
        unseeded(self, int.from_bytes(urandom(32), "big") if a is None else a, version)

    # numpy's SeedSequence and secrets look random._urandom up at each call. random.seed is
    # a method bound at import, so it is bound again to pick up the new Random.seed.
    os.urandom = urandom
    random._urandom = urandom  # type: ignore[attr-defined]
    random.Random.seed = seed_or_draw  # type: ignore[method-assign]
    random.seed = random._inst.seed
    for module, names in HIDDEN_MODULES.items():
        for name in names:
            if hasattr(module, name):
                setattr(module, name, _Unavailable(f"{module.__name__}.{name}"))


class Channel:
    """Blocking frames over the worker's end of the socket."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def _read_exact(self, n: int) -> bytes | None:
        chunks = []
        while n:
            chunk = os.read(self.fd, min(n, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> bytes | None:
        header = self._read_exact(codec.HEADER.size)
        if header is None:
            return None
        return self._read_exact(codec.HEADER.unpack(header)[0])

    def send(self, payload: bytes) -> None:
        view = memoryview(codec.frame(payload))
        while view:
            view = view[os.write(self.fd, view) :]


def _guarded_import(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: tuple[str, ...] | list[str] | None = (),
    level: int = 0,
) -> types.ModuleType:
    if level:
        raise ImportError("relative imports are not allowed")
    bad = disallowed_import(name, fromlist or ())
    if bad is not None:
        raise ImportError(import_message(bad))
    return builtins.__import__(name, globals, locals, fromlist or (), level)


def sandboxed_module(source: str, origin: str) -> types.ModuleType:
    """The protocol's module (see :func:`~tpdisc.protocols.loader.protocol_module`), with
    the builtins trimmed and imports filtered."""
    module = protocol_module(source, origin)
    safe = {k: v for k, v in builtins.__dict__.items() if k not in TRIMMED_BUILTINS}
    safe["__import__"] = _guarded_import
    module.__dict__["__builtins__"] = safe
    return module


def classify(err: BaseException) -> str:
    if isinstance(err, MemoryError):
        return "memory"
    if isinstance(err, ImportError):
        return "import"
    return "crash"


def describe(err: BaseException) -> str:
    try:
        return describe_exception(err)
    except BaseException:  # a hostile __str__ cannot stop the report
        return type(err).__name__


class Session:
    """One protocol instance serving the parent's requests."""

    def __init__(self, channel: Channel, init: dict[str, Any]) -> None:
        self.channel = channel
        self.origin: str = init["origin"]
        self.max_exchanges: int = init["max_exchanges"]
        self.max_log_bytes: int = init["max_log_bytes"]
        self.order: tuple[int, ...] = ()
        self.inventories: dict[int, tuple[Any, ...]] = {}
        self.memories: dict[int, tuple[Any, ...]] = {}
        self.instance: object = None

    def fail(self, kind: str, reason: str) -> None:
        self.channel.send(codec.encode_failure(kind, reason))

    def load(self, init: dict[str, Any]) -> bool:
        """Compile, run and instantiate the protocol; report and return False on failure."""
        try:
            code = compile_protocol(init["source"], self.origin)
        except SyntaxError as err:
            self.fail("syntax", f"SyntaxError at line {err.lineno}: {err.msg}")
            return False
        except (ValueError, RecursionError, MemoryError) as err:
            self.fail("syntax", f"{describe(err)} while compiling")
            return False
        module = sandboxed_module(init["source"], self.origin)
        try:
            run_protocol_module(code, module)
            cls = find_protocol_class(module.__dict__, self.origin)
        except ProtocolError as err:
            self.fail("no-protocol", str(err).removeprefix(f"{self.origin}: "))
            return False
        except BaseException as err:
            self.fail(classify(err), f"{describe(err)} while loading")
            return False
        self.channel.send(codec.LOADED)
        try:
            self.instance = start_protocol(cls, init["n_agents"], init["n_steps"], init["seed"])
        except BaseException as err:
            self.fail(classify(err), f"{describe(err)} in __init__")
            return False
        self.channel.send(codec.READY)
        return True

    def apply(self, order: tuple[int, ...] | None, updates: list[tuple[Any, ...]]) -> None:
        """Extend the mirror of the agents' states with what is new since the last step."""
        if order is not None:
            self.order = order
        for agent, keep_inv, inv_tail, keep_mem, mem_tail in updates:
            inv = self.inventories.get(agent, ())
            mem = self.memories.get(agent, ())
            self.inventories[agent] = (inv if keep_inv == len(inv) else inv[:keep_inv]) + inv_tail
            self.memories[agent] = (mem if keep_mem == len(mem) else mem[:keep_mem]) + mem_tail

    def share(self, step: int) -> None:
        states = {
            i: {"inventory": self.inventories[i], "memories": self.memories[i]} for i in self.order
        }
        share: Callable[[int, object], object] = self.instance.share_memories  # type: ignore[attr-defined]
        context = f"in share_memories at step {step}"
        try:
            raw = share(step, states)
        except BaseException as err:
            self.fail(classify(err), f"{describe(err)} {context}")
            return
        counts = [len(self.memories[i]) for i in self.order]
        try:
            total = (
                sum(len(v) for v in raw.values() if isinstance(v, SEQUENCES))
                if isinstance(raw, dict)
                else 0
            )
            if total > self.max_exchanges:
                self.fail(
                    "too-large",
                    f"share_memories returned {total:,} exchanges at step {step} "
                    f"(limit {self.max_exchanges:,})",
                )
                return
            exchanges = validate_exchanges(raw, counts)
            reply = codec.encode_exchanges(exchanges)
        except MemoryError as err:
            self.fail("memory", f"{describe(err)} {context}")
            return
        except ProtocolError as err:
            self.fail("invalid-exchange", f"invalid exchange at step {step}: {err}")
            return
        except BaseException as err:
            self.fail("invalid-exchange", f"invalid exchange at step {step}: {describe(err)}")
            return
        self.channel.send(reply)

    def logs(self) -> None:
        get_logs = getattr(self.instance, "get_logs", None)
        try:
            logs = get_logs() if callable(get_logs) else []
            reply = codec.encode_logs(logs, self.max_log_bytes)
        except BaseException as err:
            self.fail(classify(err), f"{describe(err)} in get_logs")
            return
        self.channel.send(reply)

    def serve(self) -> None:
        while True:
            message = self.channel.recv()
            if message is None:
                return
            request = pickle.loads(message)
            if request[0] == "step":
                _, step, order, updates = request
                self.apply(order, updates)
                self.share(step)
            elif request[0] == "logs":
                self.logs()
            else:
                return


def run(fd: int, zygote_pid: int, uid: int, gid: int) -> int:
    """The worker's life; returns its exit code. Called in the zygote's forked child."""
    channel = Channel(fd)
    message = channel.recv()
    if message is None:
        return 0
    init = pickle.loads(message)  # from the parent, before any untrusted code has run
    confine.set_limits(init["cpu_seconds"], init["memory_bytes"])
    confine.drop_privileges(uid, gid, zygote_pid)
    pin_entropy(init["seed"])  # before the filter: from then on getrandom fails
    if init["seccomp"]:
        try:
            policy.install(os.getpid())
        except Exception as err:
            channel.send(codec.encode_failure("unsupported", f"seccomp filter failed: {err}"))
            return 0
        channel.send(codec.SECURED)
    else:
        channel.send(codec.UNSECURED)
    session = Session(channel, init)
    if session.load(init):
        session.serve()
    return 0
