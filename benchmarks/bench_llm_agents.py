"""Benchmark: LLM agents against the local test server (no network, no model).

What the LLM agent machinery costs around the model itself, on the full game:

1. A default-sized game (10 LLM agents × 150 steps, paired baseline) against a scripted
   player that answers at once: agent-steps per second with fresh answers (prompt, HTTP,
   parse, cache write) and when rerun from the answer cache (no request), plus the prompt
   size, which sets the token bill of a real model.
2. Latency hiding: 10 agents × 20 steps against a player taking 50 ms per answer, with one
   request at a time and with all ten agents of a step asking together.

    python benchmarks/bench_llm_agents.py [--record]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchlib import full_domain, load, parser, report

from tpdisc.agents.base import AgentParams
from tpdisc.agents.llm.config import LLMAgentConfig
from tpdisc.domain.variants import Domain
from tpdisc.llm_client import LLMConfig
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult, run_simulation
from tpdisc.testing.chat_server import FakeChatServer
from tpdisc.testing.llm_player import ScriptedPlayer

AGENTS, STEPS = 10, 150
LATENCY, LATENCY_STEPS = 0.05, 20


def run(
    domain: Domain, player: ScriptedPlayer, steps: int, concurrency: int, cache: Path | None
) -> tuple[SimResult, float, FakeChatServer]:
    with FakeChatServer(player) as server:
        client = LLMConfig(base_url=server.base_url, model="scripted", max_retries=0)
        llm = LLMAgentConfig(
            client,
            concurrency=concurrency,
            cache=cache is not None,
            cache_path=str(cache) if cache else None,
        )
        config = SimConfig(
            n_agents=AGENTS, n_steps=steps, agent_type="llm", params=AgentParams(llm=llm)
        )
        t0 = time.perf_counter()
        result = run_simulation(domain, config, BaselineProtocol("paired"), seed=0)
        return result, time.perf_counter() - t0, server


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    domain = full_domain(args.recipes)
    agent_steps = AGENTS * STEPS
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "answers.sqlite"
        player = ScriptedPlayer(invalid=0.1, invalid_reask=0.3)
        fresh, fresh_wall, server = run(domain, player, STEPS, 8, cache)
        requests = server.requests
        cached, cached_wall, again = run(domain, player, STEPS, 8, cache)
        assert cached.curve == fresh.curve and not again.requests
    chars = [len(r.text()) for r in requests]
    last_step = [len(r.text()) for r in requests if f"Step {STEPS} of" in r.last_user_text]
    stats = fresh.agent_stats
    lines = [
        f"Local scripted player (answers at once, 10% of first answers unusable, 30% of "
        f"re-asks too), {AGENTS} LLM agents × {STEPS} steps of the paired baseline on the "
        f"full game, concurrency 8, one process ({load()}).",
        "",
        "| run | requests | wall | agent-steps/s |",
        "|---|---|---|---|",
        f"| fresh answers | {len(requests):,} | {fresh_wall:.1f} s | "
        f"{agent_steps / fresh_wall:,.0f} |",
        f"| rerun from the cache | 0 | {cached_wall:.1f} s | {agent_steps / cached_wall:,.0f} |",
        "",
        f"Re-asks {stats['llm_reasks']:.0f}, fallbacks {stats['llm_fallbacks']:.0f} in "
        f"{stats['llm_choices']:.0f} choices; final coverage {fresh.final}. Prompt size "
        f"(system + user message): mean {sum(chars) / len(chars):,.0f} characters "
        f"(≈ {sum(chars) / len(chars) / 4:,.0f} tokens at 4 characters per token), "
        f"{max(last_step):,} characters at step {STEPS}: about "
        f"{sum(chars) / 4 / 1e6:.1f} M prompt tokens per {AGENTS}-agent game.",
    ]
    walls = {}
    for concurrency in (1, AGENTS):
        result, wall, _ = run(
            domain, ScriptedPlayer(delay=LATENCY), LATENCY_STEPS, concurrency, None
        )
        walls[concurrency] = (wall, result.agent_stats["llm_requests"])
    lines += [
        "",
        f"Latency hiding: {AGENTS} agents × {LATENCY_STEPS} steps, {LATENCY * 1000:.0f} ms "
        "per answer, no cache.",
        "",
        "| concurrency | requests | wall |",
        "|---|---|---|",
        *(f"| {c} | {n:.0f} | {w:.2f} s |" for c, (w, n) in walls.items()),
    ]
    report("bench_llm_agents", "LLM agents against the local server", lines, args.record)


if __name__ == "__main__":
    main()
