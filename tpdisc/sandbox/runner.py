"""The game's side of a sandboxed protocol: a :class:`ProtocolRunner` over a forked worker."""

from __future__ import annotations

import os
import pickle
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from tpdisc.protocols.interface import AgentStates, ProtocolRunner
from tpdisc.protocols.states import Snapshot
from tpdisc.sandbox import codec
from tpdisc.sandbox.channel import Channel, ReplyTooLarge
from tpdisc.sandbox.client import (
    WorkerHandle,
    Zygote,
    ZygoteError,
    get_zygote,
    optional_imports,
)
from tpdisc.sandbox.config import SandboxConfig
from tpdisc.sandbox.errors import SandboxError, worker_death
from tpdisc.sandbox.policy import seccomp_support

if TYPE_CHECKING:
    from tpdisc.protocols.loader import SourceProtocol

UNSAFE_FLAG = "--unsafe-no-sandbox"
SETUP_TIMEOUT = 30.0  # wall seconds for the worker to confine itself (no untrusted code yet)
EXIT_WAIT = 2.0
# Replies may route at most this many times what a step can deliver (the attention
# bottleneck times the number of agents: 20,000 exchanges at the defaults). Beyond that a
# reply only feeds the bottleneck's random draw, while the host pays for every exchange.
# 100, not less: "every memory to everyone" (10 agents, 150 steps: 13,500 at the last
# step) is a plausible protocol, and must run.
DELIVERY_FACTOR = 100
# The host's CPU spent receiving and decoding replies, charged to the protocol (per thread:
# neither the worker's time nor other threads' count). A module attribute so tests can count.
host_clock = time.thread_time


def refusal(why: str) -> str:
    """The one message for untrusted code on a platform without seccomp."""
    return (
        f"refusing to run untrusted code: the seccomp sandbox is unavailable ({why}); "
        f"{UNSAFE_FLAG} runs it with the weaker layers only"
    )


class SandboxWarning(UserWarning):
    """Untrusted code is running without the seccomp layer (explicitly requested)."""


class SandboxRunner(ProtocolRunner):
    """Runs one protocol instance in its own confined worker for one simulation."""

    # decode_exchanges checks every id and index of a reply and builds the canonical form
    # validate_exchanges would: the game need not check it again.
    canonical = True

    def __init__(
        self, spec: SourceProtocol, n_agents: int, n_steps: int, seed: int, config: SandboxConfig
    ) -> None:
        self.origin = spec.origin
        self.config = config
        self.wall_used = 0.0
        self.failure: SandboxError | None = None
        self.order: tuple[int, ...] = ()
        self.step_limit: int | None = None  # exchanges per step, once the game says
        self.host_used = 0.0  # CPU seconds this process spent on the worker's replies
        self.sent: dict[int, tuple[Sequence[Any], Sequence[Any]]] = {}  # what the worker has
        self.zygote, seccomp = self._zygote()
        try:
            self.worker: WorkerHandle | None = self.zygote.spawn(optional_imports(spec.source))
        except ZygoteError as err:
            raise SandboxError("sandbox", str(err), self.origin) from None
        _live.add(self)
        self.channel = Channel(self.worker.sock)
        try:
            self._start(spec, n_agents, n_steps, seed, seccomp)
        except BaseException:
            self.close()
            raise

    def _zygote(self) -> tuple[Zygote, bool]:
        """This process's zygote, and whether workers get the seccomp filter; refuses
        untrusted code where the filter is unavailable, unless the unsafe mode says not to."""
        allow = self.config.allow_without_seccomp
        if not sys.platform.startswith("linux"):
            raise SandboxError(
                "unsupported",
                f"sandboxed protocols need Linux (this is {sys.platform}); "
                "--trusted runs a file you have read in-process",
                self.origin,
            )
        supported, why = seccomp_support()
        if not supported and not allow:
            raise SandboxError("unsupported", refusal(why), self.origin)
        try:
            zygote = get_zygote()
        except ZygoteError as err:
            raise SandboxError("sandbox", str(err), self.origin) from None
        if supported and not zygote.seccomp:  # the zygote's probe is the final word
            supported, why = False, zygote.seccomp_reason
            if not allow:
                raise SandboxError("unsupported", refusal(why), self.origin)
        if not supported:
            warnings.warn(
                f"running untrusted protocol code WITHOUT the seccomp sandbox ({why}): it can "
                "read and write your files and use the network",
                SandboxWarning,
                stacklevel=4,
            )
        return zygote, supported

    # --- failures ---------------------------------------------------------------------

    def _fail(self, error: SandboxError) -> NoReturn:
        self.failure = error
        self._stop()
        raise error

    def _timeout(self, limit: str, context: str) -> NoReturn:
        self._fail(SandboxError("timeout", f"timeout after {limit} {context}", self.origin))

    def _died(self, context: str) -> NoReturn:
        """The worker closed its end: find out how it ended and say so."""
        assert self.worker is not None
        self.worker.kill()
        self.worker.wait_gone(EXIT_WAIT)
        status = self.zygote.exit_status(self.worker.pid)
        config = self.config
        self._fail(
            worker_death(status, config.cpu_seconds, config.time_limit, context, self.origin)
        )

    # --- talking to the worker --------------------------------------------------------

    def _exchange(
        self,
        request: bytes | None,
        cap: int,
        context: str,
        call: bool,
        too_large: Callable[[int], str] | None = None,
    ) -> bytes:
        """Send ``request`` (if any) and return the next reply, within every deadline;
        ``too_large`` says why a reply of a given size is refused (default: bytes)."""
        if self.failure is not None:
            raise self.failure
        if self.worker is None:
            raise SandboxError(
                "sandbox", f"the sandboxed runner is closed ({context})", self.origin
            )
        now = time.monotonic()
        wall_left = self.config.wall_limit - self.wall_used
        deadline, limit = now + wall_left, f"{self.config.wall_limit:g} s of wall-clock time"
        per_call = self.config.call_time_limit
        if call and per_call is not None and per_call < wall_left:
            deadline, limit = now + per_call, f"{per_call:g} s (per-call limit)"
        try:
            if request is not None:
                self.channel.send(request, deadline)
            reply = self.channel.recv(max(cap, codec.MAX_FAILURE_BYTES), deadline)
        except TimeoutError:
            self.wall_used += time.monotonic() - now
            self._timeout(limit, context)
        except EOFError:
            self._died(context)
        except ReplyTooLarge as err:
            reason = f"reply of {err.size:,} bytes {context} (limit {cap:,})"
            if too_large is not None:
                reason = too_large(err.size)
            self._fail(SandboxError("too-large", reason, self.origin))
        self.wall_used += time.monotonic() - now
        if reply[:1] == codec.FAILURE:
            self._fail(codec.decode_failure(reply, self.origin, context))
        return reply

    def _start(
        self, spec: SourceProtocol, n_agents: int, n_steps: int, seed: int, seccomp: bool
    ) -> None:
        init = {
            "source": spec.source,
            "origin": spec.origin,
            "n_agents": n_agents,
            "n_steps": n_steps,
            "seed": seed,
            "cpu_seconds": self.config.cpu_seconds,
            "memory_bytes": self.config.memory_mb << 20,
            "seccomp": seccomp,
            "max_exchanges": self.config.max_exchanges,
            "max_log_bytes": self.config.max_log_bytes,
        }
        payload = pickle.dumps(init, protocol=pickle.HIGHEST_PROTOCOL)
        deadline = time.monotonic() + SETUP_TIMEOUT
        try:
            self.channel.send(payload, deadline)
            secured = self.channel.recv(codec.MAX_FAILURE_BYTES, deadline)
        except (TimeoutError, EOFError, ReplyTooLarge):
            self._died("while starting")
        unsupported = codec.FAILURE + b"unsupported\n"
        if secured.startswith(unsupported):  # reported before any untrusted code ran
            detail = secured[len(unsupported) :].decode(errors="replace")
            self._fail(SandboxError("unsupported", detail, self.origin))
        if secured != (codec.SECURED if seccomp else codec.UNSECURED):
            self._fail(codec.malformed(self.origin, "while starting"))
        loaded = self._exchange(None, 1, "while loading", call=False)
        if loaded != codec.LOADED:
            self._fail(codec.malformed(self.origin, "while loading"))
        if self._exchange(None, 1, "in __init__", call=False) != codec.READY:
            self._fail(codec.malformed(self.origin, "in __init__"))

    def _updates(self, agent_states: AgentStates) -> tuple[tuple[int, ...] | None, list[Any]]:
        """Only what is new since the last call, per agent.

        States grow by appending, so normally only the tails travel (a game's snapshots say
        so at once; other sequences are compared); a prefix that changed (whatever the
        caller did) is detected and that agent's state is sent again whole.
        """
        order = tuple(agent_states)
        changed = order != self.order
        if changed:
            self.order = order
        updates = []
        sent = self.sent
        for agent, state in agent_states.items():
            inv, mem = state["inventory"], state["memories"]
            old = sent.get(agent)
            if old is None:
                keep_inv, inv_tail, keep_mem, mem_tail = 0, tuple(inv), 0, tuple(mem)
            else:
                keep_inv, inv_tail = _new_items(old[0], inv)
                keep_mem, mem_tail = _new_items(old[1], mem)
                if keep_inv == len(old[0]) == len(inv) and keep_mem == len(old[1]) == len(mem):
                    continue  # nothing new, nothing taken back
            updates.append((agent, keep_inv, inv_tail, keep_mem, mem_tail))
            sent[agent] = (_keepable(inv), _keepable(mem))
        return (order if changed else None), updates

    def _charge(self, started: float, context: str) -> None:
        """Count the host CPU spent on a reply against the protocol's time limit: the
        worker's rlimit cannot see it, and a reply is as hostile as the protocol."""
        self.host_used += host_clock() - started
        if self.host_used > self.config.time_limit:
            self._fail(
                SandboxError(
                    "timeout",
                    f"timeout after {self.config.time_limit:g} s of the host's CPU spent on "
                    f"the worker's replies {context}",
                    self.origin,
                )
            )

    # --- ProtocolRunner ---------------------------------------------------------------

    def limit_exchanges(self, deliverable: int) -> None:
        """Called by the game before the first step with how many memories one step can
        deliver (bottleneck × agents): replies beyond ``DELIVERY_FACTOR`` times that are
        refused from their frame header, before the host reads or decodes them."""
        self.step_limit = DELIVERY_FACTOR * deliverable

    def share(self, step: int, agent_states: AgentStates) -> object:
        order, updates = self._updates(agent_states)
        request = pickle.dumps(("step", step, order, updates), protocol=pickle.HIGHEST_PROTOCOL)
        context = f"in share_memories at step {step}"
        limit = self.config.max_exchanges
        if self.step_limit is not None and self.step_limit < limit:
            limit = self.step_limit
        cap = codec.exchanges_cap(limit, len(agent_states))
        too_large = None
        if limit == self.step_limit:

            def too_large(size: int) -> str:
                return (
                    f"share_memories returned more than {limit:,} exchanges at step {step} "
                    f"(limit: {DELIVERY_FACTOR} times the {limit // DELIVERY_FACTOR:,} "
                    f"memories a step can deliver; a reply of {size:,} bytes, refused unread)"
                )

        started = host_clock()
        reply = self._exchange(request, cap, context, call=True, too_large=too_large)
        if reply[:1] != codec.EXCHANGES:
            self._fail(codec.malformed(self.origin, context))
        counts = [len(state["memories"]) for state in agent_states.values()]
        try:
            exchanges = codec.decode_exchanges(reply, counts, self.origin, context)
        except SandboxError as err:
            self._fail(err)
        self._charge(started, context)
        return exchanges

    def logs(self) -> list[dict[str, Any]]:
        request = pickle.dumps(("logs",))
        started = host_clock()
        reply = self._exchange(request, self.config.max_log_bytes + 1, "in get_logs", call=True)
        if reply[:1] != codec.LOGS:
            self._fail(codec.malformed(self.origin, "in get_logs"))
        try:
            logs = codec.decode_logs(reply, self.origin)
        except SandboxError as err:
            self._fail(err)
        self._charge(started, "in get_logs")
        return logs

    def _stop(self) -> None:
        """SIGKILL the worker (through its pidfd: no pid-reuse race). It cannot survive that;
        the kernel finishes tearing it down while the game goes on, and the zygote reaps it."""
        worker, self.worker = self.worker, None
        if worker is None:
            return
        worker.kill()
        worker.release()
        _live.discard(self)

    def close(self) -> None:
        self._stop()

    def abandon(self) -> None:
        """In a forked child: let go of the parent's worker without touching it."""
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.release()
        self.failure = SandboxError(
            "sandbox", "this sandboxed runner belongs to the parent process", self.origin
        )


# Open runners of this process, so that a forked child can let go of their workers.
_live: weakref.WeakSet[SandboxRunner] = weakref.WeakSet()


def _abandon_in_child() -> None:
    for runner in list(_live):
        runner.abandon()
    _live.clear()


os.register_at_fork(after_in_child=_abandon_in_child)


def open_sandboxed(
    spec: SourceProtocol,
    n_agents: int,
    n_steps: int,
    seed: int,
    config: SandboxConfig | None = None,
) -> ProtocolRunner:
    """Start ``spec``'s source in a fresh confined worker for one simulation.

    The worker starts the protocol as an in-process run does
    (:func:`~tpdisc.protocols.loader.start_protocol`), so a sandboxed and a trusted run of
    the same file give the same simulation. Every
    failure raises :class:`SandboxError` with a ``kind`` and a one-line reason.
    """
    if config is None:
        config = getattr(spec, "sandbox", None) or SandboxConfig()
    return SandboxRunner(spec, n_agents, n_steps, seed, config)


def _new_items(sent: Sequence[Any], now: Sequence[Any]) -> tuple[int, tuple[Any, ...]]:
    """How many leading items of ``now`` the worker has (``sent`` being what it was sent),
    and the items after them."""
    if type(now) is Snapshot:
        tail = now.since(sent)
        if tail is not None:
            return len(sent), tail
    keep = len(sent) if tuple(now[: len(sent)]) == tuple(sent) else 0
    return keep, tuple(now[keep:])


def _keepable(items: Sequence[Any]) -> Sequence[Any]:
    """What to remember of a state that was sent: a snapshot as it is (it cannot change),
    anything else as a copy."""
    return items if isinstance(items, Snapshot) else tuple(items)
