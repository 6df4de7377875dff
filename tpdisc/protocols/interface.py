"""The call boundary between the game and a transmission protocol.

A protocol is any object with ``share_memories(i_step, agent_states)``; the game talks to it
through a :class:`ProtocolRunner`, so that an in-process call and a sandboxed worker are
interchangeable. A :class:`ProtocolSpec` is the picklable recipe for opening runners, one
per simulation.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from tpdisc.errors import ProtocolError

# {agent_id: {"inventory": (name, ...), "memories": ((e1, e2, result_or_None), ...)}}: tuples
# for protocol code, the game's snapshots (:class:`~tpdisc.protocols.states.Snapshot`) for
# the runners and the project's own protocols
AgentStates = dict[int, dict[str, Sequence[Any]]]


class ProtocolRunner(ABC):
    """One live protocol instance, for the length of one simulation."""

    # True when ``share`` answers in the canonical form ``validate_exchanges`` returns
    # (the project's own baselines, built that way): the game then skips the check.
    canonical: bool = False

    @abstractmethod
    def share(self, step: int, agent_states: AgentStates) -> object:
        """The protocol's raw answer for ``step``; the game validates it."""

    def logs(self) -> list[dict[str, Any]]:
        """What the protocol's optional ``get_logs`` returned (empty when it has none)."""
        return []

    def close(self) -> None:  # noqa: B027
        """Release whatever the runner holds (a worker process, for a sandbox)."""

    def __enter__(self) -> ProtocolRunner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ProtocolSpec(ABC):
    """What to evaluate: a name and the means to open one runner per simulation."""

    name: str

    @property
    def label(self) -> str:
        """How errors name the protocol: its file where it has one."""
        return self.name

    @abstractmethod
    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        """Start a fresh protocol instance whose random choices follow ``seed``."""


def seed_global_generators(seed: int) -> None:
    """Seed ``random`` and ``np.random``, which protocol code written to the spec uses.

    Only in-process protocols need this; the game itself draws from its own generators, so
    whatever a protocol does to these modules cannot change the game's random streams.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)


class InProcessRunner(ProtocolRunner):
    """Calls a protocol object directly. Only for code the user trusts.

    Protocol code written to SPEC §3 gets each state as tuples, made for the call. The
    project's own protocols that only count memories (the baselines, schedule replays) pass
    ``snapshots=True`` and read the game's snapshots as they are: no copy of every memory
    at every step. (Tuples index several times faster than a snapshot, which is what a
    protocol reading the memories wants.)
    """

    def __init__(
        self, name: str, instance: object, *, snapshots: bool = False, canonical: bool = False
    ) -> None:
        self.name = name
        self._snapshots = snapshots
        self.canonical = canonical
        share = getattr(instance, "share_memories", None)
        if not callable(share):
            raise ProtocolError(f"{name}: the protocol object has no share_memories method")
        self._share: Callable[[int, AgentStates], object] = share
        self._instance = instance

    def share(self, step: int, agent_states: AgentStates) -> object:
        if not self._snapshots:
            agent_states = as_tuples(agent_states)
        try:
            return self._share(step, agent_states)
        except Exception as err:
            raise ProtocolError(
                f"{self.name}: {describe_exception(err)} in share_memories at step {step}"
            ) from err

    def logs(self) -> list[dict[str, Any]]:
        get_logs = getattr(self._instance, "get_logs", None)
        if not callable(get_logs):
            return []
        try:
            logs = get_logs()
        except Exception as err:
            raise ProtocolError(f"{self.name}: {describe_exception(err)} in get_logs") from err
        return list(logs) if isinstance(logs, list | tuple) else []


def as_tuples(agent_states: AgentStates) -> AgentStates:
    """The same states with every sequence a tuple (free for those that already are)."""
    return {
        agent: {key: tuple(items) for key, items in state.items()}
        for agent, state in agent_states.items()
    }


def describe_exception(err: BaseException) -> str:
    """``TypeName: message (line N)``, with the line in the protocol's own source if known."""
    line = ""
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<protocol"):
            line = f" (line {tb.tb_lineno})"
        tb = tb.tb_next
    message = str(err)
    return f"{type(err).__name__}: {message}{line}" if message else f"{type(err).__name__}{line}"
