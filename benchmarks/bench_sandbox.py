"""Benchmark 4: what the sandbox costs, per call and per simulation.

Per call: a protocol that returns at once, on 10 agents whose states grow by one memory
each per call, as in a game; sandboxed minus in-process is the overhead. Also the cost when
the whole state crosses every call (what the worker's mirror saves), and with a protocol
that sends 10 memories to every agent. Per simulation: opening a runner (fork from the
zygote, limits, uid, seccomp, loading the source, ``__init__``) and closing it (SIGKILL,
wait). Once per process: starting the zygote (imports numpy; scikit-learn only once a
protocol imports it).

    python benchmarks/bench_sandbox.py [--record] [--recipes PATH] [--calls 300] [--opens 50]
        [--sims 15]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from benchlib import full_domain, load, parser, report

from tpdisc.domain.variants import Domain
from tpdisc.protocols.interface import AgentStates, ProtocolRunner
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.protocols.states import Snapshot
from tpdisc.sandbox import SandboxedSource, client
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

AGENTS, MEMORIES = 10, 150
Memory = tuple[str, str, str | None]  # as the protocol sees it: element names

NOTHING = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        return {}
"""

# Ten random memories of one random other agent, for every agent: 100 exchanges per call.
SHARING = """
import random


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        exchanges = {}
        for agent in range(self.n_agents):
            teacher = random.choice([a for a in range(self.n_agents) if a != agent])
            n_mem = len(agent_states[teacher]["memories"])
            picks = random.sample(range(n_mem), min(10, n_mem))
            exchanges[agent] = [(teacher, m) for m in picks]
        return exchanges
"""


def history(variant: str = "", length: int = 1000) -> dict[int, tuple[list[str], list[Memory]]]:
    """Every agent's inventory and memories over a long game, built once: like the game's,
    each call's state is a snapshot of these lists."""
    return {
        a: (
            [f"element{a}_{k}" for k in range(4 + length)],
            [
                (f"e{k % 7}{variant}", f"e{k % 5}", f"r{k}" if k % 3 else None)
                for k in range(length)
            ],
        )
        for a in range(AGENTS)
    }


def states(game: dict[int, tuple[list[str], list[Memory]]], n_memories: int) -> AgentStates:
    """The protocol's view when every agent has ``n_memories`` memories."""
    return {
        a: {"inventory": Snapshot(inv, 4 + n_memories // 3), "memories": Snapshot(mem, n_memories)}
        for a, (inv, mem) in game.items()
    }


def spec(source: str, trusted: bool) -> SourceProtocol:
    return SandboxedSource("bench", source, "bench.py", trusted)


def per_call(runner: ProtocolRunner, calls: list[AgentStates]) -> float:
    """Median seconds of ``runner.share`` over ``calls`` (states prepared beforehand)."""
    times = []
    for step, state in enumerate(calls):
        t0 = time.perf_counter()
        runner.share(step, state)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_calls(source: str, calls: list[AgentStates], warm: list[AgentStates]) -> list[float]:
    """Median per-call seconds: [sandboxed, in-process]."""
    results = []
    for trusted in (False, True):
        with spec(source, trusted).open(AGENTS, len(warm) + len(calls), 0) as runner:
            for step, state in enumerate(warm):
                runner.share(step, state)
            results.append(per_call(runner, calls))
    return results


def timed_many(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def sim_seconds(domain: Domain, config: SimConfig, protocol: SourceProtocol, seed: int) -> float:
    t0 = time.perf_counter()
    run_simulation(domain, config, protocol, seed)
    return time.perf_counter() - t0


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--calls", type=int, default=300, help="Timed calls per figure.")
    p.add_argument("--opens", type=int, default=50, help="Runners opened for the start figure.")
    p.add_argument(
        "--sims", type=int, default=15, help="Simulations of each kind for the whole-game rows."
    )
    args = p.parse_args()
    lines = [f"Sandboxed runner against the in-process one, same protocol and states; {load()}."]

    client.shutdown()
    zygote_start = timed_many(lambda: (client.shutdown(), client.get_zygote()), 3)

    # Per call at 150 memories per agent: warm the mirror to 150, then one more each call.
    game = history()
    warm = [states(game, n) for n in range(1, MEMORIES)]
    growing = [states(game, MEMORIES + k) for k in range(args.calls)]
    nothing_sb, nothing_ip = measure_calls(NOTHING, growing, warm)
    sharing_sb, sharing_ip = measure_calls(SHARING, growing, warm)
    # The whole state every call: two histories that differ in their first memory.
    histories = [history("a"), history("b")]
    full = [states(histories[k % 2], MEMORIES) for k in range(args.calls)]
    full_sb, full_ip = measure_calls(NOTHING, full, [])
    # A whole game's worth of calls, 1..150 memories.
    whole = [states(game, n) for n in range(1, MEMORIES + 1)]
    game_sb, game_ip = measure_calls(NOTHING, whole, [])

    def open_close() -> tuple[float, float]:
        t0 = time.perf_counter()
        runner = spec(SHARING, False).open(AGENTS, MEMORIES, 0)
        t1 = time.perf_counter()
        runner.close()
        return t1 - t0, time.perf_counter() - t1

    open_close()
    starts = [open_close() for _ in range(args.opens)]
    opens = statistics.median(s[0] for s in starts)
    closes = statistics.median(s[1] for s in starts)

    ms = 1000.0
    lines += [
        "",
        "| per call, 10 agents | sandboxed | in-process | overhead |",
        "|---|---|---|---|",
        f"| 150 memories each, +1 per call, protocol returns {{}} | {nothing_sb * ms:.3f} ms "
        f"| {nothing_ip * ms:.3f} ms | **{(nothing_sb - nothing_ip) * ms:.3f} ms** |",
        f"| same, protocol sends 10 memories to each agent | {sharing_sb * ms:.3f} ms "
        f"| {sharing_ip * ms:.3f} ms | {(sharing_sb - sharing_ip) * ms:.3f} ms |",
        f"| whole game (1…150 memories), protocol returns {{}} | {game_sb * ms:.3f} ms "
        f"| {game_ip * ms:.3f} ms | {(game_sb - game_ip) * ms:.3f} ms |",
        f"| 150 memories, whole state resent every call (no mirror) | {full_sb * ms:.3f} ms "
        f"| {full_ip * ms:.3f} ms | {(full_sb - full_ip) * ms:.3f} ms |",
        "",
        "| per simulation | median |",
        "|---|---|",
        f"| start: fork from zygote, confine, seccomp, load source, `__init__` "
        f"| **{opens * ms:.1f} ms** (min {min(s[0] for s in starts) * ms:.1f}, "
        f"{args.opens} runs) |",
        "| stop: SIGKILL through the pidfd (the kernel and the zygote clean up) "
        f"| {closes * ms:.2f} ms |",
        f"| zygote start, once per process (imports numpy; scikit-learn on first need) "
        f"| {statistics.median(zygote_start):.2f} s |",
    ]
    try:
        domain = full_domain(args.recipes)
    except Exception as err:  # the figure needs the recipe data; say why it is missing
        lines += ["", f"Whole-simulation figure skipped: no recipe data ({err})."]
    else:
        lines += [
            "",
            "A whole simulation (10 agents × 150 steps), trusted and sandboxed runs of the "
            f"same protocol interleaved, {args.sims} of each after one warm-up; the "
            "difference is the sandbox's cost per simulation (issue 28: ≤ 6 ms with the "
            "default agents):",
            "",
            "| agents | protocol | in-process | sandboxed | difference (median) |",
            "|---|---|---|---|---|",
        ]
        for agent_type in ("empowerment", "stochastic"):
            config = SimConfig(n_agents=AGENTS, n_steps=MEMORIES, agent_type=agent_type)
            for label, source in (("returns {}", NOTHING), ("sharing (above)", SHARING)):
                trusted, sandboxed = spec(source, True), spec(source, False)
                for protocol in (trusted, sandboxed):
                    run_simulation(domain, config, protocol, 999)
                pairs = [
                    [sim_seconds(domain, config, p, seed) for p in (trusted, sandboxed)]
                    for seed in range(args.sims)
                ]
                inside = statistics.median(p[0] for p in pairs)
                outside = statistics.median(p[1] for p in pairs)
                gap = statistics.median(p[1] - p[0] for p in pairs)
                lines.append(
                    f"| {agent_type} | {label} | {inside * ms:.1f} ms | {outside * ms:.1f} ms "
                    f"| **{gap * ms:+.1f} ms** |"
                )
    lines += [
        "",
        "Targets (issue 4): ≤ 0.3 ms per call and ≤ 50 ms per simulation start.",
    ]
    report("bench_sandbox", "Sandbox", lines, args.record)


if __name__ == "__main__":
    main()
