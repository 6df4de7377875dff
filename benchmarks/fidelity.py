"""Calibration of the empowerment agents against the reference's anchors (docs/fidelity.md).

    python benchmarks/fidelity.py tables        # all 10 baselines + the state-aware protocol,
                                                # empowerment and stochastic agents
    python benchmarks/fidelity.py sensitivity   # the three anchors under each open choice
    python benchmarks/fidelity.py priors FILE…  # the anchors with other cached priors (serial)

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
    return anchors_of({e.protocol: e.mean for e in evaluations})


def anchors_of(by_name: dict[str, float]) -> dict[str, Any]:
    """The three anchors and how far they are missed (0 = met).

    Our game's level differs from the reference's (docs/fidelity.md), so the standard
    baselines are judged relative to asocial: the reference's 66–70 around 67 means each
    within [66/67, 70/67] of asocial. The miss adds the relative miss of asocial's level,
    the worst standard baseline's distance outside that band, and the shortfall of the
    state-aware protocol's gain over the best baseline below 15%.
    """
    asocial = by_name["asocial"]
    standard = [by_name[n] for n in STANDARD_BASELINES]
    best = max(by_name[n] for n in BASELINES if n in by_name)
    state_aware = by_name[STATE_AWARE.stem]
    lo, hi = (x / ASOCIAL_REF for x in STANDARD_RANGE)
    ratios = [m / asocial for m in standard]
    miss_asocial = abs(asocial / ASOCIAL_REF - 1)
    miss_standard = max(max(lo - r, r - hi, 0.0) for r in ratios)
    miss_gain = max(0.0, STATE_AWARE_GAIN - state_aware / best)
    return {
        "asocial": asocial,
        "standard_min": min(standard),
        "standard_max": max(standard),
        "standard_vs_asocial": [min(ratios) - 1, max(ratios) - 1],
        "random_sharing_gain": max(standard) / asocial - 1,
        "state_aware": state_aware,
        "state_aware_gain": state_aware / best - 1,
        "miss": miss_asocial + miss_standard + miss_gain,
    }


def sensitivity_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| choices | asocial | standard baselines (vs asocial) | state-aware "
        "(vs best baseline) | miss |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: r["miss"]):
        lo, hi = r["standard_vs_asocial"]
        lines.append(
            f"| {r['choices']} | {r['asocial']:.1f} | {r['standard_min']:.1f}–"
            f"{r['standard_max']:.1f} ({lo:+.0%} to {hi:+.0%}) | {r['state_aware']:.1f} "
            f"({r['state_aware_gain']:+.1%}) | {r['miss']:.3f} |"
        )
    return lines


def save(name: str, payload: Any) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(payload, indent=2))


def compare_priors(files: list[Path], sims: int, recipes: str | None) -> None:
    """The anchors with the default choices under other priors (e.g. another training
    budget or backend), injected in place of the default one; serial, in this process."""
    import tpdisc.agents.empowerment as empowerment
    from tpdisc.agents.prior import store
    from tpdisc.sim.executors import SerialExecutor

    specs: list[ProtocolSpec] = [BaselineProtocol(n) for n in STANDARD_BASELINES]
    specs.append(SourceProtocol.from_file(STATE_AWARE, trusted=True))
    saved = OUT / "priors.json"
    rows = json.loads(saved.read_text()) if saved.exists() else []
    for path in files:
        rows = [r for r in rows if r["prior"] != str(path)]
        prior = store.load_prior(path)
        store.ensure_prior = lambda *a, _p=prior, _f=path, **k: (_p, _f)  # type: ignore[assignment]
        empowerment._TABLES.clear()
        print(path, json.dumps(prior.meta["backend"]), json.dumps(prior.metrics))
        evs = run(specs, SimConfig(), sims, SerialExecutor(), recipes)
        rows.append({"prior": str(path), "meta": prior.meta, **anchors(evs)})
        save("priors", rows)
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "meta"}))


def report() -> None:
    """Print the markdown tables of docs/fidelity.md from the saved JSON results."""
    for agent in ("empowerment", "stochastic"):
        path = OUT / f"table-{agent}.json"
        if path.exists():
            results = json.loads(path.read_text())
            by_name = {r["protocol"]: r["mean"] for r in results}
            print(f"\n{agent} agents\n")
            best = max(by_name[n] for n in BASELINES)
            print("| protocol | final coverage (mean ± sem) | vs best baseline |")
            print("|---|---|---|")
            for r in sorted(results, key=lambda r: -r["mean"]):
                print(
                    f"| {r['protocol']} | {r['mean']:.1f} ± {r['sem']:.1f} | "
                    f"{r['mean'] / best - 1:+.1%} |"
                )
            print(json.dumps(anchors_of(by_name)))
    path = OUT / "sensitivity.json"
    if path.exists():
        rows = json.loads(path.read_text())
        for row in rows:
            row.update(anchors_of({k: v[0] for k, v in row["results"].items()}))
        print("\n" + "\n".join(sensitivity_table(rows)))
    path = OUT / "priors.json"
    if path.exists():
        for row in json.loads(path.read_text()):
            print(row["prior"], {k: v for k, v in row.items() if k not in ("meta", "prior")})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("what", choices=("tables", "sensitivity", "priors", "report"))
    p.add_argument("files", nargs="*", help="priors: cached prior files (.npz) to compare.")
    p.add_argument("--sims", type=int, default=30)
    p.add_argument("--recipes", default=None)
    p.add_argument(
        "--choices",
        nargs="*",
        default=None,
        help="Sensitivity: only these choice sets (e.g. 'zscore=no,owned=ignore').",
    )
    args = p.parse_args()
    if args.what == "priors":
        compare_priors([Path(f) for f in args.files], args.sims, args.recipes)
        return
    if args.what == "report":
        report()
        return
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
        print("\n".join(sensitivity_table(rows)))


if __name__ == "__main__":
    main()
