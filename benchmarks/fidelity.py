"""Calibration of the empowerment agents against the reference's anchors (docs/fidelity.md).

    python benchmarks/fidelity.py tables --prior-seeds 0 1 2
        every baseline, every protocol of examples/protocols/ and its schedule-replay
        ablation, with empowerment agents under the prior of each seed (built in an empty
        cache unless --cache is given), then with stochastic agents; the anchors per seed
    python benchmarks/fidelity.py grid --prior-seeds 0 1 2 --variants "beta=0.05" "beta=0.5"
        the anchors under other model settings, side by side (--cache to reuse priors)
    python benchmarks/fidelity.py grid --variants "beta=0.05" … --baselines asocial \
        --no-protocols --save sweep
        asocial play only (level, per-agent inventory, Jaccard distance), e.g. over beta
    python benchmarks/fidelity.py swap --prior-seeds 0 1 2 --beta 0.05
        asocial play with P(success) of one seed's prior and P(result) of another's
    python benchmarks/fidelity.py report
        the markdown tables of docs/fidelity.md again, from the saved JSON

Each evaluation is 30 simulations × 10 agents × 150 steps (seeds 0–29). Results are written
as JSON under results/fidelity/ with the commit, the date and each prior's fingerprint.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tpdisc.agents.base import AgentParams
from tpdisc.agents.choices import EmpowermentChoices
from tpdisc.agents.population import describe_agents
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.protocols.baselines import BASELINES, STANDARD_BASELINES, BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate, evaluate_ablated
from tpdisc.sim.executors import Executor, ProcessExecutor

# --link-members: an experiment on the prior, not an agent setting, so it reaches the
# simulation workers (which import this file as their main module) through the environment.
LINK_MEMBERS_ENV = "TPDISC_FIDELITY_LINK_MEMBERS"
if os.environ.get(LINK_MEMBERS_ENV):
    import tpdisc.agents.prior.build as _build

    _members = int(os.environ[LINK_MEMBERS_ENV])
    _plain_init = _build.PriorSettings.__init__

    def _with_members(self: Any, *args: Any, **kwargs: Any) -> None:
        from tpdisc.agents.prior.models import LinkSettings

        kwargs.setdefault("link", LinkSettings(members=_members))
        _plain_init(self, *args, **kwargs)

    _build.PriorSettings.__init__ = _with_members  # type: ignore[method-assign]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "protocols"
OUT = ROOT / "results" / "fidelity"
# The reference's anchors (SPEC §1, issue 11).
ASOCIAL_RANGE = (60.0, 74.0)
BASELINE_BAND = (-0.03, 0.06)  # each standard baseline relative to asocial
PROTOCOL_GAIN = 0.20  # the best protocol over the best standard baseline
ABLATION_BAND = 0.05  # each ablation relative to asocial


def example_protocols() -> list[ProtocolSpec]:
    return [SourceProtocol.from_file(p, trusted=True) for p in sorted(EXAMPLES.glob("*.py"))]


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def params_of(variant: str, prior_seed: int) -> AgentParams:
    """``"beta=0.5;owned=zero"``: beta and p_social, then any empowerment choices."""
    fields = dict(part.split("=", 1) for part in filter(None, variant.split(";")))
    beta = float(fields.pop("beta", AgentParams.beta))
    p_social = float(fields.pop("p_social", AgentParams.p_social))
    choices = EmpowermentChoices.parse(",".join(f"{k}={v}" for k, v in fields.items()))
    return AgentParams(beta=beta, p_social=p_social, prior_seed=prior_seed, empowerment=choices)


def evaluate_all(
    domain: Domain,
    config: SimConfig,
    sims: int,
    pool: Executor,
    baselines: tuple[str, ...],
    protocols: list[ProtocolSpec],
) -> list[Evaluation]:
    seeds = list(range(sims))
    out: list[Evaluation] = []
    for name in baselines:
        out.append(evaluate(domain, config, BaselineProtocol(name), seeds, executor=pool))
        print(f"  {out[-1].protocol:<26} {out[-1].mean:6.1f} ± {out[-1].sem:.1f}", flush=True)
    for spec in protocols:
        t0 = time.perf_counter()
        original, ablated = evaluate_ablated(domain, config, spec, seeds, executor=pool)
        out += [original, ablated]
        print(
            f"  {spec.name:<26} {original.mean:6.1f} ± {original.sem:.1f}, ablated "
            f"{ablated.mean:.1f} ± {ablated.sem:.1f} ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    return out


def anchors_of(by_name: dict[str, float], protocols: list[str]) -> dict[str, Any]:
    """The issue-11 anchors for one prior seed; each entry says whether it holds."""
    asocial = by_name["asocial"]
    standard = {n: by_name[n] / asocial - 1 for n in STANDARD_BASELINES if n in by_name}
    best = max(by_name[n] for n in STANDARD_BASELINES if n in by_name)
    gains = {p: by_name[p] / best - 1 for p in protocols}
    ablations = {p: by_name[f"{p} (ablated)"] / asocial - 1 for p in protocols}
    lo, hi = BASELINE_BAND
    return {
        "asocial": asocial,
        "asocial_ok": ASOCIAL_RANGE[0] <= asocial <= ASOCIAL_RANGE[1],
        "standard_vs_asocial": standard,
        "standard_ok": all(lo <= r <= hi for r in standard.values()),
        "best_standard": best,
        "protocol_gains": gains,
        "protocols_ok": all(g > 0 for g in gains.values()),
        "best_gain": max(gains.values(), default=float("nan")),
        "best_gain_ok": max(gains.values(), default=0.0) >= PROTOCOL_GAIN,
        "ablation_vs_asocial": ablations,
        "ablations_ok": all(abs(r) <= ABLATION_BAND for r in ablations.values()),
    }


def run_seed(
    variant: str,
    seed: int,
    sims: int,
    pool: Executor,
    recipes: str | None,
    baselines: tuple[str, ...],
    with_protocols: bool = True,
) -> dict[str, Any]:
    graph = default_graph(recipes)
    domain = make_domain(graph)
    config = SimConfig(params=params_of(variant, seed))
    t0 = time.perf_counter()
    prior = describe_agents(graph, None, ["empowerment"], config.params)["empowerment"]["prior"]
    print(f"prior seed {seed}: {prior['sha256'][:12]} ({time.perf_counter() - t0:.0f} s)")
    protocols = example_protocols() if with_protocols else []
    evs = evaluate_all(domain, config, sims, pool, baselines, protocols)
    by_name = {e.protocol: e.mean for e in evs}
    complete = protocols and all(n in by_name for n in STANDARD_BASELINES)
    return {
        "variant": variant,
        "link_members": int(os.environ.get(LINK_MEMBERS_ENV) or 1),
        "prior_seed": seed,
        "prior": prior,
        "results": [e.to_json() for e in evs],
        "anchors": anchors_of(by_name, [p.name for p in protocols]) if complete else None,
    }


def save(name: str, payload: Any) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path


def stamp() -> dict[str, str]:
    return {"commit": commit(), "date": datetime.date.today().isoformat()}


def seed_table(run: dict[str, Any]) -> list[str]:
    """One prior seed: every protocol, its coverage, and the mechanism numbers."""
    rows = sorted(run["results"], key=lambda r: -r["mean"])
    best = run["anchors"]["best_standard"]
    lines = [
        "| protocol | coverage (mean ± sem) | vs best standard baseline | per-agent inventory "
        "| Jaccard distance | success rate | re-made received |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kinds = r.get("mechanism", {})
        m = next(iter(kinds.values())) if len(kinds) == 1 else {}
        lines.append(
            f"| {r['protocol']} | {r['mean']:.1f} ± {r['sem']:.1f} | {r['mean'] / best - 1:+.1%} "
            f"| {m.get('inventory_size', float('nan')):.1f} "
            f"| {m.get('jaccard_distance', float('nan')):.2f} "
            f"| {m.get('success_rate', float('nan')):.2f} "
            f"| {m.get('remake_fraction', float('nan')):.2f} |"
        )
    return lines


def label(run: dict[str, Any]) -> str:
    members = run.get("link_members", 1)
    name = run["variant"] or "default"
    return name if members == 1 else f"{name}, {members}-model link ensemble"


def anchor_table(runs: list[dict[str, Any]]) -> list[str]:
    """The anchors, one row per (variant, prior seed)."""

    def mark(ok: bool) -> str:
        return "✓" if ok else "✗"

    lines = [
        "| variant | prior seed | asocial (60–74) | standard vs asocial (−3…+6%) "
        "| protocols vs best standard (all > 0, best ≥ +20%) | ablations vs asocial (±5%) |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        a = run["anchors"]
        if a is None:
            continue
        std = a["standard_vs_asocial"].values()
        gains = a["protocol_gains"].values()
        abl = a["ablation_vs_asocial"].values()
        lines.append(
            f"| {label(run)} | {run['prior_seed']} "
            f"| {a['asocial']:.1f} {mark(a['asocial_ok'])} "
            f"| {min(std):+.1%} … {max(std):+.1%} {mark(a['standard_ok'])} "
            f"| {min(gains):+.1%} … {max(gains):+.1%} "
            f"{mark(a['protocols_ok'])}{mark(a['best_gain_ok'])} "
            f"| {min(abl):+.1%} … {max(abl):+.1%} {mark(a['ablations_ok'])} |"
        )
    return lines


def asocial_table(runs: list[dict[str, Any]]) -> list[str]:
    """Asocial play per (variant, prior seed): the level and what makes it."""
    lines = [
        "| variant | prior seed | asocial coverage | per-agent inventory | Jaccard distance "
        "| success rate |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        for r in run["results"]:
            if r["protocol"] != "asocial":
                continue
            m = r.get("mechanism", {}).get("empowerment", {})
            lines.append(
                f"| {label(run)} | {run['prior_seed']} | {r['mean']:.1f} ± "
                f"{r['sem']:.1f} | {m.get('inventory_size', float('nan')):.1f} "
                f"| {m.get('jaccard_distance', float('nan')):.2f} "
                f"| {m.get('success_rate', float('nan')):.3f} |"
            )
    return lines


def swap(seeds: list[int], beta: float, sims: int, recipes: str | None) -> dict[str, Any]:
    """Which part of the prior makes two seeds' agents differ: asocial play with P(success)
    from one seed's prior and P(result) (its expectation and top results) from another's.

    The mixed priors are injected into this process's table memo, so the simulations run
    serially here."""
    from tpdisc.agents.empowerment_tables import EmpowermentTables, install_tables
    from tpdisc.agents.prior.build import Prior, PriorSettings
    from tpdisc.agents.prior.store import ensure_prior
    from tpdisc.sim.executors import SerialExecutor

    graph = default_graph(recipes)
    domain = make_domain(graph)
    priors = {s: ensure_prior(graph, "ngram", PriorSettings(seed=s))[0] for s in seeds}
    rows = []
    for a in seeds:
        for b in seeds:
            mixed = Prior(
                priors[b].n_elements,
                priors[a].p_success,
                priors[b].expect,
                priors[b].children,
                priors[b].top_idx,
                priors[b].top_p,
                priors[b].resid,
                {},
            )
            fake_seed = 1000 + 100 * a + b  # a memo key no real prior uses
            install_tables(EmpowermentTables.build(mixed, graph), graph, graph, "ngram", fake_seed)
            config = SimConfig(params=AgentParams(beta=beta, prior_seed=fake_seed))
            ev = evaluate(
                domain, config, BaselineProtocol("asocial"), range(sims), executor=SerialExecutor()
            )
            m = ev.to_json().get("mechanism", {}).get("empowerment", {})
            rows.append(
                {"p_success_seed": a, "result_seed": b, "mean": ev.mean, "sem": ev.sem, **m}
            )
            print(
                f"  P(success) of seed {a}, P(result) of seed {b}: asocial {ev.mean:.1f}, "
                f"inventory {m.get('inventory_size', 0):.1f}, "
                f"Jaccard {m.get('jaccard_distance', 0):.2f}",
                flush=True,
            )
    return {**stamp(), "beta": beta, "sims": sims, "rows": rows}


def swap_table(data: dict[str, Any]) -> list[str]:
    lines = [
        f"β = {data['beta']}: asocial coverage (per-agent inventory, Jaccard distance)",
        "",
        "| P(success) from \\ P(result) from | "
        + " | ".join(f"seed {s}" for s in sorted({r["result_seed"] for r in data["rows"]}))
        + " |",
    ]
    seeds = sorted({r["p_success_seed"] for r in data["rows"]})
    lines.append("|---" * (len(seeds) + 1) + "|")
    for a in seeds:
        cells = [
            f"{r['mean']:.1f} ({r.get('inventory_size', float('nan')):.1f}, "
            f"{r.get('jaccard_distance', float('nan')):.2f})"
            for r in data["rows"]
            if r["p_success_seed"] == a
        ]
        lines.append(f"| seed {a} | " + " | ".join(cells) + " |")
    return lines


def report() -> None:
    for path in sorted(OUT.glob("swap-beta*.json")):
        print("\n" + "\n".join(swap_table(json.loads(path.read_text()))))
    for name in ("tables", "grid", "grid-ensemble", "sweep"):
        path = OUT / f"{name}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        print(f"\n## {name} (commit {data['commit']}, {data['date']})\n")
        if any(run["anchors"] for run in data["runs"]):
            print("\n".join(anchor_table(data["runs"])) + "\n")
        print("\n".join(asocial_table(data["runs"])))
        if name == "tables":
            for run in data["runs"]:
                print(f"\n### Prior seed {run['prior_seed']} ({run['prior']['sha256'][:12]})\n")
                print("\n".join(seed_table(run)))
            stochastic = data.get("stochastic")
            if stochastic:
                print("\n### Stochastic agents\n")
                print("\n".join(seed_table(stochastic)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("what", choices=("tables", "grid", "swap", "report"))
    p.add_argument("--beta", type=float, default=AgentParams.beta, help="swap: temperature")
    p.add_argument("--prior-seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument(
        "--variants",
        nargs="+",
        default=[""],
        help="grid: model settings, e.g. 'beta=0.05' 'beta=0.5;owned=zero' ('' = defaults)",
    )
    p.add_argument("--sims", type=int, default=30)
    p.add_argument("--save", default="grid", help="grid: results/fidelity/SAVE.json")
    p.add_argument(
        "--baselines",
        nargs="+",
        default=list(STANDARD_BASELINES),
        help="grid: baselines to run (default: the five standard ones)",
    )
    p.add_argument(
        "--no-protocols",
        action="store_true",
        help="grid: baselines only (no example protocols, no anchors)",
    )
    p.add_argument("--recipes", default=None)
    p.add_argument(
        "--cache",
        default=None,
        help="Cache folder for the priors (default: a new empty one, so priors are built "
        "as on a fresh install).",
    )
    p.add_argument(
        "--link-members",
        type=int,
        default=None,
        help="grid: priors whose link model averages this many models per fold (experiment)",
    )
    args = p.parse_args()
    if args.link_members and not os.environ.get(LINK_MEMBERS_ENV):
        # again, with the setting in place before anything builds a prior
        os.environ[LINK_MEMBERS_ENV] = str(args.link_members)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    if args.what == "report":
        report()
        return
    if args.what == "swap":
        if args.cache:
            os.environ["TPDISC_CACHE"] = args.cache
        data = swap(args.prior_seeds, args.beta, args.sims, args.recipes)
        save(f"swap-beta{args.beta}", data)
        print("\n".join(swap_table(data)))
        return
    os.environ["TPDISC_CACHE"] = args.cache or tempfile.mkdtemp(prefix="tpdisc-fidelity-")
    print(f"cache: {os.environ['TPDISC_CACHE']}")
    runs: list[dict[str, Any]] = []
    payload: dict[str, Any] = {**stamp(), "sims": args.sims, "runs": runs}
    with ProcessExecutor() as pool:
        if args.what == "tables":
            for seed in args.prior_seeds:
                runs.append(run_seed("", seed, args.sims, pool, args.recipes, tuple(BASELINES)))
                save("tables", payload)
            graph = default_graph(args.recipes)
            config = SimConfig(agent_type="stochastic")
            print("stochastic agents")
            evs = evaluate_all(
                make_domain(graph), config, args.sims, pool, tuple(BASELINES), example_protocols()
            )
            names = [p.name for p in example_protocols()]
            payload["stochastic"] = {
                "results": [e.to_json() for e in evs],
                "anchors": anchors_of({e.protocol: e.mean for e in evs}, names),
            }
            path = save("tables", payload)
        else:
            saved = OUT / f"{args.save}.json"
            if saved.exists():  # runs of other variants stay; the same ones are replaced
                done = json.loads(saved.read_text())["runs"]
                redo = {(v, s) for v in args.variants for s in args.prior_seeds}
                runs += [r for r in done if (r["variant"], r["prior_seed"]) not in redo]
            for variant in args.variants:
                for seed in args.prior_seeds:
                    print(f"variant {variant or 'default'}, prior seed {seed}")
                    run = run_seed(
                        variant,
                        seed,
                        args.sims,
                        pool,
                        args.recipes,
                        tuple(args.baselines),
                        not args.no_protocols,
                    )
                    runs.append(run)
                    path = save(args.save, payload)
    print("\n".join(anchor_table(runs)))
    print("\n".join(asocial_table(runs)))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
