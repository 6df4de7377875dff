"""What block-built protocols' own code costs per simulation.

Draws ``--genomes`` random designs of the offline proposer (``--seed``), renders each, and
runs it ``--sims`` times in this process (trusted) with the given agents, timing only the
protocol's own ``share_memories`` (as ``protocol_share.py`` does). Protocol files given as
arguments (the reference's, say) are timed the same way, for comparison. Prints, per
design, the CPU of a whole simulation and of the protocol's code, then the mean, median
and maximum of the protocol's code over the designs, and the mean of the rest of a
simulation (the agents' and the game's work) to compare with.

    python benchmarks/block_cost.py [--genomes 40] [--sims 2] [--agent-type stochastic]
        [FILE.py ...]
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
from benchlib import full_domain, load, parser
from protocol_share import timed_protocol_code

from tpdisc.protocols.loader import SourceProtocol
from tpdisc.search import blocks
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("files", nargs="*", type=Path, help="Protocol files to time as well.")
    p.add_argument("--genomes", type=int, default=40, help="Random designs drawn.")
    p.add_argument("--sims", type=int, default=2, help="Simulations of each.")
    p.add_argument("--seed", type=int, default=0, help="Seed of the draw.")
    p.add_argument("--agent-type", default="stochastic", help="Agents of the simulations.")
    p.add_argument("--steps", type=int, default=150, help="Steps per simulation.")
    p.add_argument("--quiet", action="store_true", help="Only the summary.")
    args = p.parse_args()
    domain = full_domain(args.recipes)
    config = SimConfig(n_agents=10, n_steps=args.steps, agent_type=args.agent_type)
    rng = np.random.default_rng(args.seed)
    specs = [
        (f"design {k}: {g.route}/{g.schedule} {'+'.join(f for f, _ in g.weights)}", g)
        for k, g in enumerate(blocks.random_genome(rng) for _ in range(args.genomes))
    ]
    files = [
        SourceProtocol(f.stem, f.read_text(encoding="utf-8"), str(f), trusted=True)
        for f in args.files
    ]
    spent = timed_protocol_code()
    print(
        f"{args.genomes} random designs (seed {args.seed}) and {len(files)} files, "
        f"{args.sims} simulations each, {args.agent_type} agents, {args.steps} steps; {load()}"
    )
    own_ms: list[float] = []
    sim_ms: list[float] = []
    rows = [
        (label, SourceProtocol(label, blocks.render(g), label, trusted=True)) for label, g in specs
    ]
    rows += [(spec.name, spec) for spec in files]
    for label, spec in rows:
        spent[0] = 0.0
        c0 = time.process_time()
        for seed in range(args.sims):
            run_simulation(domain, config, spec, seed)
        cpu = (time.process_time() - c0) / args.sims * 1e3
        own = spent[0] / args.sims * 1e3
        if not label.startswith("design"):
            print(f"  {label}: simulation {cpu:.0f} ms, protocol {own:.0f} ms")
            continue
        own_ms.append(own)
        sim_ms.append(cpu)
        if not args.quiet:
            print(f"  {label}: simulation {cpu:.0f} ms, protocol {own:.1f} ms")
    if own_ms:
        print(
            f"Designs' own code per simulation: mean {statistics.mean(own_ms):.1f} ms, "
            f"median {statistics.median(own_ms):.1f} ms, max {max(own_ms):.1f} ms; "
            f"the rest of a simulation {statistics.mean(sim_ms) - statistics.mean(own_ms):.1f} ms"
        )


if __name__ == "__main__":
    main()
