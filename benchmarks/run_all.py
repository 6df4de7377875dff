"""Run every benchmark in turn, each in its own process (a few minutes in all).

    python benchmarks/run_all.py [--record] [--recipes PATH]

--record and --recipes are passed to each script. Scripts that another part of the
project has not written yet are reported as missing, not skipped silently.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The figures issue 6 asks for, in this order; any other bench_*.py runs after them.
SCRIPTS = (
    "bench_evaluation.py",  # (1) default fitness evaluation, serial / all cores / Ray / CLI
    "bench_agent_steps.py",  # (2) agent-steps per second per agent type
    "bench_scaling.py",  # (3) cost against agents and steps
    "bench_sandbox.py",  # (4) sandbox overhead (written with the sandbox)
    "bench_search.py",  # (5) one search iteration without LLM latency
    "bench_empowerment.py",  # empowerment agents: default evaluation, µs per agent-step
)


def scripts() -> list[str]:
    others = sorted(p.name for p in HERE.glob("bench_*.py") if p.name not in SCRIPTS)
    return [*SCRIPTS, *others]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--record", action="store_true", help="Record figures in docs/performance.md.")
    p.add_argument("--recipes", default=None, help="Little Alchemy 2 recipe file.")
    args = p.parse_args()
    passed: list[str] = []
    if args.record:
        passed.append("--record")
    if args.recipes:
        passed += ["--recipes", args.recipes]
    failures = 0
    for name in scripts():
        script = HERE / name
        if not script.exists():
            print(f"== {name}: missing (not written yet)\n")
            continue
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        # Every script takes --record and --recipes (see benchlib.parser).
        code = subprocess.call([sys.executable, str(script), *passed], cwd=HERE.parent)
        print(f"== {name}: exit {code} after {time.perf_counter() - t0:.0f} s\n", flush=True)
        failures += code != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
