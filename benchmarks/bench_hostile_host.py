"""What a hostile protocol costs the *host*: peak memory and CPU of the simulation process.

The worker's CPU and memory limits bound what protocol code spends; this measures what the
parent spends receiving, decoding, delivering and logging what the worker sends, which
those limits do not see. Each case runs one sandboxed simulation (10 agents, 20 steps,
``--log-dir`` on, serial executor, default sandbox limits) in a fresh interpreter and
reports that interpreter's peak RSS (``ru_maxrss``) and CPU seconds (workers excluded:
they are other processes).

Cases:
- ``baseline``: ten memories to every agent per step (an ordinary protocol);
- ``legal-1M``: a legal protocol returning one million exchanges per step;
- ``patched-encoder``: protocol code replaces the worker's exchange encoder with one that
  sends a forged, valid, maximum-size frame at every step at no CPU cost to itself;
- ``forged-frame``: a frame of the size the host accepted before the per-step limit
  (max_exchanges = 1,000,000), all garbage;
- ``at-limit-legal``, ``at-limit-forged``: the worst a protocol can do *within* the
  per-step limit (10,000 exchanges per step for 10 agents and a bottleneck of 20), legally
  or through a patched encoder that costs it nothing, over a default game of 150 steps.

    PYTHONPATH=$PWD python benchmarks/bench_hostile_host.py [--recipes PATH] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib

# Python-level restrictions are bypassable: the classic walk to ``sys`` (tests/sandbox).
REACH_SYS = """
def _reach_sys():
    for cls in ().__class__.__base__.__subclasses__():
        init_globals = getattr(getattr(cls, "__init__", None), "__globals__", None)
        if init_globals and "sys" in init_globals:
            return init_globals["sys"]
    raise LookupError("no sys")


sys = _reach_sys()
"""

BASELINE = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        return {r: [((r + 1) % self.n, 0)] * 10 for r in range(self.n)}
"""

LEGAL_1M = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        per = 1_000_000 // self.n
        return {r: [((r + 1) % self.n, 0)] * per for r in range(self.n)}
"""

# The largest frame the host accepts is what the worker's own encoder would send for the
# sandbox's max_exchanges; the forged one says "one recipient, N entries of (1, 0)".
PATCHED_ENCODER = (
    REACH_SYS
    + """
codec = sys.modules["tpdisc.sandbox.codec"]
_ENTRIES = ENTRY_COUNT


def _forged(exchanges):
    body = (0).to_bytes(4, "little") + _ENTRIES.to_bytes(4, "little")
    return b"X" + body + ((1).to_bytes(4, "little") + bytes(4)) * _ENTRIES


_FRAME = _forged({})
codec.encode_exchanges = lambda exchanges: _FRAME


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        pass

    def share_memories(self, i_step, agent_states):
        return {}
"""
)

FORGED_FRAME = (
    REACH_SYS
    + """
codec = sys.modules["tpdisc.sandbox.codec"]
_SIZE = 1 + 4 * (2 * 1_000_000 + 2 * 10)  # the host's cap before this change
codec.encode_exchanges = lambda exchanges: b"X" + b"\\xff" * (_SIZE - 1)


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        pass

    def share_memories(self, i_step, agent_states):
        return {}
"""
)

# name: (source, steps; None for --steps)
CASES: dict[str, tuple[str, int | None]] = {
    "baseline": (BASELINE, None),
    "legal-1M": (LEGAL_1M, None),
    "patched-encoder": (PATCHED_ENCODER.replace("ENTRY_COUNT", "999_000"), None),
    "forged-frame": (FORGED_FRAME, None),
    "at-limit-legal": (LEGAL_1M.replace("1_000_000", "10_000"), 150),
    "at-limit-forged": (PATCHED_ENCODER.replace("ENTRY_COUNT", "10_000"), 150),
}


def run_case(source: str, steps: int, recipes: str | None) -> dict[str, object]:
    """In this (fresh) interpreter: one sandboxed simulation with --log-dir; its cost."""
    from tpdisc.cli.runs import run_evaluations
    from tpdisc.domain.data import default_graph
    from tpdisc.domain.variants import make_domain
    from tpdisc.sim.config import EvaluationConfig, ExecutorConfig, SimConfig

    domain = make_domain(default_graph(recipes))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hostile.py"
        path.write_text(source)
        config = EvaluationConfig(
            protocols=(str(path),),
            sims=1,
            sim=SimConfig(n_agents=10, n_steps=steps),
            executor=ExecutorConfig(kind="serial"),
            recipes=recipes,
        )
        cpu0, wall0 = time.process_time(), time.perf_counter()
        outcome = "completed"
        try:
            run_evaluations(config, domain, Path(tmp) / "logs")
        except Exception as err:  # the point: which error, and what it cost to get there
            outcome = f"{type(err).__name__}: {err}"
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        log_bytes = sum(p.stat().st_size for p in (Path(tmp) / "logs").glob("*"))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "host_cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "host_peak_rss_mb": round(peak_mb),
        "log_bytes": log_bytes,
        "outcome": outcome[:160],
    }


def main() -> None:
    parser = benchlib.parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--case", choices=list(CASES), action="append")
    parser.add_argument("--child", choices=list(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        source, steps = CASES[args.child]
        print(json.dumps(run_case(source, steps or args.steps, args.recipes)))
        return
    rows = [
        "Host = the simulation process (workers excluded), one sandboxed simulation of 10 "
        f"agents with `--log-dir`, serial, default limits, {args.steps} steps unless the case "
        f"says otherwise; {benchlib.load()}. `python benchmarks/bench_hostile_host.py`.",
        "",
        "| case | host CPU | wall | host peak RSS | outcome |",
        "|---|---|---|---|---|",
    ]
    for name in args.case or CASES:
        # A fresh interpreter per case: ru_maxrss is a high-water mark of the whole process.
        command = [sys.executable, __file__, "--child", name, "--steps", str(args.steps)]
        if args.recipes:
            command += ["--recipes", args.recipes]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode or not lines:
            print(f"{name:16} failed: {done.stderr.strip()[-400:]}")
            continue
        figures = json.loads(lines[-1])
        print(
            f"{name:16} host CPU {figures['host_cpu_s']:7.2f} s  wall {figures['wall_s']:7.2f} s  "
            f"peak RSS {figures['host_peak_rss_mb']:6} MB  log {figures['log_bytes']:>11,} B  "
            f"{figures['outcome']}"
        )
        # "SandboxError: /tmp/…/hostile.py: reason": the reason, without the temporary path.
        outcome = figures["outcome"].split(": ", 2)[-1][:90]
        rows.append(
            f"| {name} | {figures['host_cpu_s']:.2f} s | {figures['wall_s']:.2f} s | "
            f"{figures['host_peak_rss_mb']} MB | {outcome} |"
        )
    benchlib.report("bench_hostile_host", "Host cost of hostile protocols", rows, args.record)


if __name__ == "__main__":
    main()
