"""Where a study's simulation time goes: the protocols' own code, against the rest.

Draws ``--protocols`` of the generated protocols of a study's runs at random (``--seed``),
and runs each ``--sims`` times trusted (in this process, timing its own ``share_memories``,
not the runner's copy of the states it is given)
and as often sandboxed (wall time), with the run's own simulation settings. It prints, per
protocol and on average, the CPU of a trusted simulation, the share of it spent in the
protocol's code, and the sandboxed wall time.

    python benchmarks/protocol_share.py STUDY_DIR [--protocols 12] [--sims 3] [--seed 0]
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path
from typing import Any

from benchlib import load, parser

from tpdisc.analysis.simulate import load_run
from tpdisc.protocols.interface import InProcessRunner
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sandbox import SandboxedSource
from tpdisc.sim.game import run_simulation


def timed_protocol_code() -> list[float]:
    """Wrap each in-process runner's protocol method (its ``share_memories``, not the
    runner's copying of the states into tuples) with a CPU clock; returns the running
    total."""
    spent = [0.0]
    init = InProcessRunner.__init__

    def timed_init(self: InProcessRunner, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        share = self._share

        def timed(*call: Any) -> object:
            t0 = time.process_time()
            try:
                return share(*call)
            finally:
                spent[0] += time.process_time() - t0

        self._share = timed

    InProcessRunner.__init__ = timed_init  # type: ignore[method-assign]
    return spent


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("study", type=Path, help="A study's folder (tpdisc study --out).")
    p.add_argument("--protocols", type=int, default=12, help="Protocols drawn.")
    p.add_argument("--sims", type=int, default=3, help="Simulations of each, per condition.")
    p.add_argument("--seed", type=int, default=0, help="Seed of the draw.")
    args = p.parse_args()
    if not (args.study / "runs").is_dir():
        p.error(f"{args.study}: not a study's folder (no runs/ in it)")
    runs = [load_run(d, recipes=args.recipes) for d in sorted((args.study / "runs").iterdir())]
    pool = [(run, protocol) for run in runs for protocol in run.protocols]
    picked = random.Random(args.seed).sample(pool, min(args.protocols, len(pool)))
    spent = timed_protocol_code()
    print(f"{len(picked)} of {len(pool)} protocols, {args.sims} simulations each; {load()}")
    print("| run | protocol | trusted CPU | its share_memories | sandboxed wall |")
    print("|---|---|---|---|---|")
    rows = []
    for run, protocol in picked:
        spec = protocol.spec
        assert isinstance(spec, SourceProtocol)
        trusted = SourceProtocol(spec.name, spec.source, spec.origin, trusted=True)
        sandboxed = SandboxedSource.of(spec, run.config.sandbox)
        spent[0] = 0.0
        c0 = time.process_time()
        for seed in range(args.sims):
            run_simulation(run.domain, run.sim, trusted, seed)
        cpu = (time.process_time() - c0) / args.sims
        own = spent[0] / args.sims
        t0 = time.perf_counter()
        for seed in range(args.sims):
            run_simulation(run.domain, run.sim, sandboxed, seed)
        wall = (time.perf_counter() - t0) / args.sims
        rows.append((cpu, own, wall))
        print(
            f"| {run.path.name} | {protocol.name} | {cpu * 1e3:.0f} ms | {own * 1e3:.0f} ms "
            f"({own / cpu:.0%}) | {wall * 1e3:.0f} ms |"
        )
    cpu, own, wall = (statistics.mean(column) for column in zip(*rows, strict=True))
    print(
        f"\nMean: trusted CPU {cpu * 1e3:.0f} ms per simulation, of which the protocol's code "
        f"{own * 1e3:.0f} ms ({sum(r[1] for r in rows) / sum(r[0] for r in rows):.0%}); "
        f"sandboxed wall {wall * 1e3:.0f} ms."
    )


if __name__ == "__main__":
    main()
