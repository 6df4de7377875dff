"""Calibration of the empowerment agents against the reference's anchors (docs/fidelity.md).

    python benchmarks/fidelity.py tables        # all 10 baselines + the state-aware protocol,
                                                # empowerment and stochastic agents
    python benchmarks/fidelity.py sensitivity   # the three anchors under each open choice

Each evaluation is 30 simulations × 10 agents × 150 steps (seeds 0-29). Results are written
as JSON under results/fidelity/ and printed as the markdown tables of docs/fidelity.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

from tpdisc.agents.base import AgentParams
from tpdisc.agents.choices import EmpowermentChoices
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BASELINES, STANDARD_BASELINES, BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate
from tpdisc.sim.executors import Executor, ProcessExecutor

ROOT = Path(__file__).resolve().parent.parent
STATE_AWARE = ROOT / "examples" / "protocols" / "state_aware.py"
OUT = ROOT / "results" / "fidelity"
# The reference's anchors (SPEC §1 and issue 3).
ASOCIAL_REF = 67.0
STANDARD_RANGE = (66.0, 70.0)
STATE_AWARE_GAIN = 1.15


def protocols() -> list[ProtocolSpec]:
    specs: list[ProtocolSpec] = [BaselineProtocol(name) for name in BASELINES]
    specs.append(SourceProtocol.from_file(STATE_AWARE, trusted=True))
    return specs


def run(
    specs: list[ProtocolSpec],
    config: SimConfig,
    sims: int,
    executor: Executor,
    recipes: str | None,
) -> list[Evaluation]:
    domain = make_domain(default_graph(recipes))
    seeds = list(range(sims))
    out = []
    for spec in specs:
        t0 = time.perf_counter()
        ev = evaluate(domain, config, spec, seeds, executor=executor)
        print(
            f"  {spec.name:<14} {ev.mean:6.2f} ± {ev.sem:4.2f}  ({time.perf_counter() - t0:.1f} s)"
        )
        out.append(ev)
    return out


def table(evaluations: list[Evaluation]) -> list[str]:
    best = max(e.mean for e in evaluations if e.protocol in BASELINES)
    lines = ["| protocol | final coverage (mean ± sem) | vs best baseline |", "|---|---|---|"]
    for e in sorted(evaluations, key=lambda e: -e.mean):
        lines.append(f"| {e.protocol} | {e.mean:.1f} ± {e.sem:.1f} | {e.mean / best - 1:+.1%} |")
    return lines


def anchors(evaluations: list[Evaluation]) -> dict[str, Any]:
    by_name = {e.protocol: e.mean for e in evaluations}
    standard = [by_name[n] for n in STANDARD_BASELINES]
    best = max(by_name[n] for n in BASELINES if n in by_name)
    state_aware = by_name[STATE_AWARE.stem]
    lo, hi = STANDARD_RANGE
    # How far each anchor is missed, relative to its size (0 = met).
    miss_asocial = abs(by_name["asocial"] / ASOCIAL_REF - 1)
    miss_standard = max(max(lo - m, m - hi, 0.0) for m in standard) / ASOCIAL_REF
    miss_gain = max(0.0, STATE_AWARE_GAIN - state_aware / best)
    return {
        "asocial": by_name["asocial"],
        "standard_min": min(standard),
        "standard_max": max(standard),
        "random_sharing_gain": max(standard) / by_name["asocial"] - 1,
        "state_aware": state_aware,
        "state_aware_gain": state_aware / best - 1,
        "miss": miss_asocial + miss_standard + miss_gain,
    }


def save(name: str, payload: Any) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(payload, indent=2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("what", choices=("tables", "sensitivity"))
    p.add_argument("--sims", type=int, default=30)
    p.add_argument("--recipes", default=None)
    p.add_argument(
        "--choices",
        nargs="*",
        default=None,
        help="Sensitivity: only these choice sets (e.g. 'zscore=no,owned=ignore').",
    )
    args = p.parse_args()
    with ProcessExecutor() as pool:
        if args.what == "tables":
            for agent in ("empowerment", "stochastic"):
                print(f"{agent} agents")
                evs = run(protocols(), SimConfig(agent_type=agent), args.sims, pool, args.recipes)
                save(f"table-{agent}", [e.to_json() for e in evs])
                print("\n".join(table(evs)))
                print(json.dumps(anchors(evs), indent=1))
            return
        specs = [BaselineProtocol(n) for n in STANDARD_BASELINES]
        specs.append(SourceProtocol.from_file(STATE_AWARE, trusted=True))
        if args.choices:
            grid = [EmpowermentChoices.parse(c) for c in args.choices]
        else:
            grid = [
                EmpowermentChoices(zscore=z, received=r, owned=o, fallback=f)
                for z, r, o, f in itertools.product(
                    (True, False),
                    ("item", "prior"),
                    ("zero", "renormalise", "ignore"),
                    ("untried", "any"),
                )
            ]
        rows = []
        for choices in grid:
            print(choices.label())
            params = AgentParams(empowerment=choices)
            evs = run(
                specs,
                SimConfig(agent_type="empowerment", params=params),
                args.sims,
                pool,
                args.recipes,
            )
            row = {
                "choices": choices.label(),
                **anchors(evs),
                "results": {e.protocol: [e.mean, e.sem] for e in evs},
            }
            rows.append(row)
            save("sensitivity", rows)
            print(json.dumps({k: v for k, v in row.items() if k != "results"}))
        rows.sort(key=lambda r: r["miss"])
        print(
            "| choices | asocial | standard baselines | random sharing | state-aware | "
            "gain over best | miss |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['choices']} | {r['asocial']:.1f} | {r['standard_min']:.1f}–"
                f"{r['standard_max']:.1f} | {r['random_sharing_gain']:+.1%} | "
                f"{r['state_aware']:.1f} | {r['state_aware_gain']:+.1%} | {r['miss']:.3f} |"
            )


if __name__ == "__main__":
    main()
