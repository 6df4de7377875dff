"""Helpers of the sandbox tests: hostile sources, short limits, simulations to compare."""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import AgentStates, ProtocolSpec
from tpdisc.sandbox import SandboxConfig, SandboxedSource, SandboxError, client
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation

# Short limits keep the suite fast; every timeout below is one CPU second.
FAST = SandboxConfig(time_limit=1.0, wall_factor=5.0)
WATCHDOG_SECONDS = 60

# Uses both global generators, numpy arrays and scikit-learn, and logs numpy values.
RANDOM_PROTOCOL = """
import random
from collections import defaultdict

import numpy as np
from sklearn.neighbors import NearestNeighbors


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.sent = defaultdict(int)

    def share_memories(self, i_step, agent_states):
        sizes = np.array([[len(s["inventory"]), len(s["memories"])] for s in agent_states.values()])
        nn = NearestNeighbors(n_neighbors=2).fit(sizes + np.random.rand(*sizes.shape))
        _, neighbours = nn.kneighbors(sizes)
        exchanges = {}
        for agent in range(self.n_agents):
            teacher = int(neighbours[agent, 1])
            if random.random() < 0.5:
                teacher = random.randrange(self.n_agents)
            n_mem = len(agent_states[teacher]["memories"])
            k = min(n_mem, 3)
            picks = np.random.choice(n_mem, size=k, replace=False) if k else []
            exchanges[agent] = [(teacher, int(m)) for m in picks]
            self.sent[agent] += k
        return exchanges

    def get_logs(self):
        return [{"metric_name": "sent", "metric_description": "memories sent per agent",
                 "metric_value": np.array([self.sent[a] for a in range(self.n_agents)])}]
"""

# Python-level restrictions are bypassable: hostile sources reach ``sys`` (and from it any
# module the worker has loaded) through the classic walk over object's subclasses.
REACH_SYS = """
def _reach_sys():
    for cls in ().__class__.__base__.__subclasses__():
        init_globals = getattr(getattr(cls, "__init__", None), "__globals__", None)
        if init_globals and "sys" in init_globals:
            return init_globals["sys"]
    raise LookupError("no sys")


sys = _reach_sys()
"""


def protocol(share: str, *, init: str = "pass", prelude: str = "", reach_sys: bool = True) -> str:
    """A protocol source whose ``share_memories`` runs ``share`` then returns ``{}``."""
    parts = [REACH_SYS if reach_sys else "", textwrap.dedent(prelude)]
    parts.append(
        "class TransmissionProtocol:\n"
        "    def __init__(self, n_agents, n_steps):\n"
        + textwrap.indent(textwrap.dedent(init).strip() or "pass", " " * 8)
        + "\n\n    def share_memories(self, i_step, agent_states):\n"
        + textwrap.indent(textwrap.dedent(share).strip(), " " * 8)
        + "\n        return {}\n"
    )
    return "\n".join(parts)


def source_spec(
    source: str, config: SandboxConfig = FAST, origin: str = "hostile.py"
) -> SandboxedSource:
    return SandboxedSource("hostile", source, origin, False, config)


def toy_states(n_agents: int = 3, n_memories: int = 2) -> AgentStates:
    memories = tuple(("air", "fire", "energy" if k % 2 else None) for k in range(n_memories))
    return {
        i: {"inventory": ("air", "earth", "fire", "water"), "memories": memories}
        for i in range(n_agents)
    }


def fail_calls(
    source: str, kind: str, *, config: SandboxConfig = FAST, steps: int = 1, n_agents: int = 3
) -> SandboxError:
    """Open ``source`` sandboxed, call it ``steps`` times, and expect a ``kind`` failure."""
    spec = source_spec(source, config)
    with pytest.raises(SandboxError) as info, spec.open(n_agents, 10, 0) as runner:
        for step in range(steps):
            runner.share(step, toy_states(n_agents))
    assert info.value.kind == kind, str(info.value)
    return info.value


def simulate(graph: RecipeGraph, spec: ProtocolSpec, seed: int, n_steps: int = 8) -> SimResult:
    config = SimConfig(n_agents=4, n_steps=n_steps)
    return run_simulation(make_domain(graph), config, spec, seed, record_log=True)


def same_simulation(a: SimResult, b: SimResult) -> bool:
    assert a.log is not None and b.log is not None
    return (
        a.curve == b.curve
        and a.schedule.steps == b.schedule.steps
        and a.log.to_table().equals(b.log.to_table())
        and a.agent_stats == b.agent_stats
    )


def asocial() -> BaselineProtocol:
    return BaselineProtocol("asocial")


def zygote_children() -> list[int]:
    """Live or unreaped processes whose parent is this process's zygote."""
    zygote = client._zygote
    if zygote is None:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The fields after the command name (which may contain spaces) start with state, ppid.
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == zygote.pid:
            found.append(int(entry))
    return found


def wait_for(condition: object, timeout: float = 5.0) -> bool:
    """Poll ``condition()`` until true or ``timeout``: cleanup is asynchronous by a few ms."""
    assert callable(condition)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.01)
    return bool(condition())
