"""Identification of the empowerment model from the reference's published results
(docs/fidelity.md).

The reference published its five baselines and the best protocols of its evolution runs
(``../shared/reference_protocols/``); it reports that every evolved protocol beats every
baseline by a wide margin while random sharing is worth next to nothing. This script
measures a model against those anchors, on several priors, each built in an empty cache:

    python benchmarks/fidelity.py mechanism --prior-seeds 0
        each open choice alone (over the ``previous`` model): asocial play and the
        reference's evolved protocols, with per-agent inventory, Jaccard distance between
        agents, success rate and the fraction of attempts that re-make a received recipe
    python benchmarks/fidelity.py grid --variants "" "model=previous" "owns=usable;remember=step"
        each setting on each prior seed: the five standard baselines, the evolved
        protocols and their schedule-replay ablations, and the anchors a–d
    python benchmarks/fidelity.py stochastic --variants stochastic=always stochastic=never
        anchor e: the baselines against asocial play and the evolved protocols against
        the best baseline, with stochastic agents (``stochastic=LIFETIME``: how long a
        received memory counts its pair as tried)
    python benchmarks/fidelity.py report
        the markdown tables of docs/fidelity.md, from results/fidelity/*.json
    python benchmarks/fidelity.py judge RESULTS.json ...
        the anchors of ``tpdisc evaluate ../shared/reference_protocols/*.py --ablate
        --json RESULTS.json`` (the reference's own baseline files as the standard baselines)
    python benchmarks/fidelity.py account RESULTS.json ...
        where the elements come from in the same results (tpdisc.sim.accounting): per
        protocol, each way's contribution to the gain over asocial play and its attempts,
        one markdown table per file, then the means over the files

A setting is ``name=value`` pairs joined by ``;``: ``model=NAME`` picks a named model
(default: the default model), ``p_social=X`` the social bias, ``stochastic=LIFETIME`` the
stochastic agents' ``received`` (:class:`~tpdisc.agents.stochastic_model.StochasticModel`),
``truth=λ`` a prior moved a
fraction λ of the way to the truth (P(success) and P(r | pair) mixed with the recipe
graph's; an experiment on the prior's quality, run serially), ``usable=successes|results``
a change of the game's rules (which elements of a received memory its recipient may use
for a step: those of successful memories only, or their results only, instead of every
element named; an experiment, run serially), anything else is a field of
:class:`~tpdisc.agents.empowerment.model.EmpowermentModel` (``beta=0.05;owned=zero``).
Every evaluation is 30 simulations × 10 agents × 150 steps (seeds 0–29) unless --sims says
otherwise; results record the commit, the date and each prior's fingerprint.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from tpdisc.agents.base import FAILED, AgentParams
from tpdisc.agents.empowerment.model import DEFAULT_MODEL, PriorChoice, named_model
from tpdisc.agents.empowerment.tables import install_tables, shared_tables
from tpdisc.agents.population import describe_agents
from tpdisc.agents.stochastic_model import StochasticModel
from tpdisc.analysis.stats import welch_greater
from tpdisc.domain.data import default_graph
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.executors.base import Executor
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import STANDARD_BASELINES, BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sim.accounting import WAYS, asocial_rate, contributions, pooled
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import Evaluation, evaluate, evaluate_ablated
from tpdisc.sim.game import Game

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT.parent / "shared" / "reference_protocols"
OUT = ROOT / "results" / "fidelity"
# The anchors of issue 35, judged on every prior seed.
ASOCIAL_RANGE = (62.0, 72.0)  # a
BASELINE_BAND = (-0.03, 0.06)  # b (and e): each standard baseline relative to asocial
GAIN = 0.25  # c: the evolved protocols' mean gain over the best standard baseline
P_MAX = 0.01  # c: each evolved protocol above each standard baseline, one-sided Welch
ABLATION_BAND = 0.06  # d: the ablations' mean relative to asocial
ABLATION_DROP = -0.08  # d: each ablation relative to its original, at most
STOCHASTIC_GAIN = 0.10  # e: with stochastic agents, each evolved over the best baseline
# Each open choice alone, for the mechanism table: over the previous model.
CHOICES = (
    "",
    "beta=0.05",
    "beta=4",
    "received=prior",
    "received=zero",
    "remember=step",
    "owns=usable",
    "owned=zero",
    "bias=unowned",
    "noise=pair;noise_sd=0.3",
)


def setting_fields(setting: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in filter(None, setting.split(";")))


def truth_seed(truth: float, prior_seed: int) -> int:
    """The made-up prior seed under which a prior mixed with the truth is installed."""
    return 100_000 + 1_000 * round(truth * 100) + prior_seed


def params_of(setting: str, prior_seed: int, base: str = DEFAULT_MODEL) -> AgentParams:
    """``"model=previous;beta=0.05;owned=zero"`` as the agents' parameters."""
    fields = setting_fields(setting)
    p_social = float(fields.pop("p_social", AgentParams.p_social))
    fields.pop("usable", None)  # a rule of the game (see usable_rule), not of the agents
    stochastic = StochasticModel(fields.pop("stochastic", StochasticModel.received))
    truth = fields.pop("truth", None)
    if truth is not None:
        prior_seed = truth_seed(float(truth), prior_seed)
    model = named_model(fields.pop("model", base))
    model = model.with_choices(",".join(f"{k}={v}" for k, v in fields.items()))
    model = replace(model, prior=PriorChoice(model.prior.backend, prior_seed))
    return AgentParams(p_social=p_social, empowerment=model, stochastic=stochastic)


def install_truth_mix(graph: RecipeGraph, prior_seed: int, truth: float) -> None:
    """Make agents of :func:`truth_seed` read prior ``prior_seed`` moved a fraction
    ``truth`` of the way to the recipe graph: P(success) mixed with 0/1, and for pairs that
    succeed P(r | pair) mixed with the uniform distribution over their true results (a true
    result missing from the prior's top ``k`` takes the place of its least likely entry,
    with the mean-field probability of the elements outside the top as its prior part)."""
    base = shared_tables(graph, graph, "ngram", prior_seed)
    lam = truth
    success = np.zeros(base.p_success.size, dtype=bool)
    top_idx = base.top_idx.copy()
    top_p = base.top_p.astype(np.float64) * (1 - lam)
    expect = base.expect * (1 - lam)
    resid = base.resid * (1 - lam)
    for (a, b), results in graph.recipes.items():
        pid = int(base.pair_id[a, b])
        success[pid] = True
        m = len(results)
        expect[pid] += lam * float(np.mean(base.children_prior[list(results)]))
        row = top_idx[pid]
        for r in results:
            hit = np.flatnonzero(row == r)
            if hit.size:
                top_p[pid, hit[0]] += lam / m
                continue
            order = np.argsort(top_p[pid], kind="stable")
            slot = next(j for j in order if row[j] not in results)
            row[slot] = r
            top_p[pid, slot] = (1 - lam) * base.resid[pid] + lam / m
    p_success = (1 - lam) * base.p_success + lam * success
    mixed = replace(
        base,
        p_success=p_success,
        expect=expect,
        resid=resid,
        top_idx=top_idx,
        top_p=top_p.astype(np.float32),
        fingerprint={"truth": truth, "prior_seed": prior_seed},
    )
    install_tables(mixed, graph, graph, "ngram", truth_seed(truth, prior_seed))


@contextlib.contextmanager
def usable_rule(rule: str | None) -> Iterator[None]:
    """While open, games in this process let a recipient use, for a step, only the
    elements of received *successful* memories (``successes``: both ingredients and the
    result) or only their results (``results``), instead of every element named. What
    agents learn from the memories is unchanged."""
    if rule is None:
        yield
        return
    if rule not in ("successes", "results"):
        raise SystemExit(f"usable={rule}: choose successes or results")
    original = Game.deliver
    seen: dict[int, list[tuple[int, int, int]]] = {}

    def watch(agent: Any, i: int) -> None:
        observe = agent.observe_received

        def record(memories: Any) -> None:
            seen.setdefault(i, []).extend(memories)
            observe(memories)

        agent.observe_received = record

    def deliver(game: Game, step: int, exchanges: dict[int, list[tuple[int, int]]]) -> None:
        for i, agent in enumerate(game.agents):
            if "observe_received" not in vars(agent):
                watch(agent, i)
        seen.clear()
        original(game, step, exchanges)
        for i, memories in seen.items():
            usable: dict[int, None] = {}
            for a, b, r in memories:
                if r != FAILED:
                    if rule == "successes":
                        usable[a] = usable[b] = None
                    usable[r] = None
            game.social[i] = list(usable)

    Game.deliver = deliver  # type: ignore[method-assign]
    try:
        yield
    finally:
        Game.deliver = original  # type: ignore[method-assign]


def evolved_protocols(folder: Path) -> list[ProtocolSpec]:
    """The reference's evolved protocols (its own published code: run in this process)."""
    files = sorted(folder.glob("evolved*.py"))
    if not files:
        raise SystemExit(f"no evolved*.py in {folder}: give --protocols")
    return [SourceProtocol.from_file(p, trusted=True) for p in files]


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


def summary(ev: Evaluation) -> dict[str, Any]:
    data = ev.to_json()
    kinds = data.get("mechanism", {})
    m = next(iter(kinds.values())) if len(kinds) == 1 else {}
    return {
        "mean": ev.mean,
        "sem": ev.sem,
        "final": [float(x) for x in data["final"]],
        "inventory": m.get("inventory_size"),
        "jaccard": m.get("jaccard_distance"),
        "success": m.get("success_rate"),
        "remake": m.get("remake_fraction"),
    }


def run_setting(
    setting: str,
    seed: int,
    domain: Domain,
    pool: Executor,
    sims: int,
    protocols: list[ProtocolSpec],
    baselines: tuple[str, ...],
    ablate: bool,
    agent_type: str = "empowerment",
) -> dict[str, Any]:
    config = SimConfig(params=params_of(setting, seed), agent_type=agent_type)
    seeds = list(range(sims))
    t0 = time.perf_counter()
    results: dict[str, Any] = {}
    for name in baselines:
        results[name] = summary(
            evaluate(domain, config, BaselineProtocol(name), seeds, executor=pool)
        )
    for spec in protocols:
        if ablate:
            original, ablated = evaluate_ablated(domain, config, spec, seeds, executor=pool)
            results[spec.name] = summary(original)
            results[f"{spec.name} (ablated)"] = summary(ablated)
        else:
            results[spec.name] = summary(evaluate(domain, config, spec, seeds, executor=pool))
    run: dict[str, Any] = {
        "setting": setting,
        "agent_type": agent_type,
        "prior_seed": seed,
        "model": config.params.empowerment.to_dict() if agent_type == "empowerment" else None,
        "seconds": round(time.perf_counter() - t0, 1),
        "results": results,
    }
    if agent_type == "empowerment":
        graph = domain.graph
        run["prior"] = describe_agents(graph, None, ["empowerment"], config.params)["empowerment"][
            "prior"
        ]
    names = [p.name for p in protocols]
    if all(b in results for b in STANDARD_BASELINES) and names:
        run["anchors"] = anchors_of(results, names, ablate)
    return run


def anchors_of(results: dict[str, Any], evolved: list[str], ablated: bool) -> dict[str, Any]:
    asocial = results["asocial"]["mean"]
    standard = {b: results[b]["mean"] / asocial - 1 for b in STANDARD_BASELINES}
    best_name = max(STANDARD_BASELINES, key=lambda b: results[b]["mean"])
    best = results[best_name]["mean"]
    gains = {p: results[p]["mean"] / best - 1 for p in evolved}
    worst_p = {
        p: max(welch_greater(results[p]["final"], results[b]["final"]) for b in STANDARD_BASELINES)
        for p in evolved
    }
    lo, hi = BASELINE_BAND
    out: dict[str, Any] = {
        "asocial": asocial,
        "a": ASOCIAL_RANGE[0] <= asocial <= ASOCIAL_RANGE[1],
        "standard_vs_asocial": standard,
        "b": all(lo <= r <= hi for r in standard.values()),
        "best_standard": best_name,
        "gains": gains,
        "mean_gain": float(np.mean(list(gains.values()))),
        "worst_p": worst_p,
        "c": all(p < P_MAX for p in worst_p.values())
        and float(np.mean(list(gains.values()))) >= GAIN,
    }
    if ablated:
        abl = {p: results[f"{p} (ablated)"]["mean"] / asocial - 1 for p in evolved}
        drop = {p: results[f"{p} (ablated)"]["mean"] / results[p]["mean"] - 1 for p in evolved}
        out["ablation_vs_asocial"] = abl
        out["ablation_mean"] = float(np.mean(list(abl.values())))
        out["ablation_vs_original"] = drop
        out["d"] = abs(out["ablation_mean"]) <= ABLATION_BAND and all(
            d <= ABLATION_DROP for d in drop.values()
        )
    out["e"] = out["b"] and min(gains.values()) >= STOCHASTIC_GAIN
    return out


def load(name: str) -> dict[str, Any]:
    path = OUT / f"{name}.json"
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    return {"runs": []}


def save(name: str, data: dict[str, Any]) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    data.update(commit=commit(), date=datetime.date.today().isoformat())
    path = OUT / f"{name}.json"
    tmp = path.with_suffix(".part")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)
    return path


def keep(data: dict[str, Any], run: dict[str, Any]) -> None:
    """Add ``run``, replacing an earlier one of the same setting, agents and prior seed."""
    key = (run["setting"], run["agent_type"], run["prior_seed"])
    data["runs"] = [
        r for r in data["runs"] if (r["setting"], r["agent_type"], r["prior_seed"]) != key
    ] + [run]


def line(run: dict[str, Any], evolved: list[str]) -> str:
    r = run["results"]
    text = f"[{run['setting'] or 'default'} | prior seed {run['prior_seed']}]"
    if "asocial" in r:
        text += f" asocial {r['asocial']['mean']:.1f}"
    text += " evolved " + " / ".join(f"{r[p]['mean']:.1f}" for p in evolved if p in r)
    a = run.get("anchors")
    if a:
        best = a["best_standard"]
        text += f" | best standard {best} ({a['standard_vs_asocial'][best]:+.1%})"
        text += f" mean gain {a['mean_gain']:+.1%}, worst p {max(a['worst_p'].values()):.2g}"
        if "ablation_vs_asocial" in a:
            text += " ablated " + " / ".join(f"{x:+.1%}" for x in a["ablation_vs_asocial"].values())
            text += " vs originals " + " / ".join(
                f"{x:+.1%}" for x in a["ablation_vs_original"].values()
            )
        text += " anchors " + "".join(k for k in "abcd" if a.get(k))
    return text + f" ({run['seconds']:.0f} s)"


# -- report ------------------------------------------------------------------------------


def mark(ok: bool | None) -> str:
    return "–" if ok is None else ("✓" if ok else "✗")


def anchor_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| setting | prior seed | a: asocial (62–72) | b: standard vs asocial (−3…+6 %) "
        "| c: evolved vs best standard (each p < 0.01, mean ≥ +25 %) "
        "| d: ablations vs asocial (mean ±6 %), vs their originals (each ≤ −8 %) |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        a = run.get("anchors")
        if not a:
            continue
        std = a["standard_vs_asocial"].values()
        gains = " / ".join(f"{g:+.0%}" for g in a["gains"].values())
        abl = a.get("ablation_vs_asocial")
        abl_text = "–"
        if abl:
            drops = " / ".join(f"{x:+.0%}" for x in a["ablation_vs_original"].values())
            abl_text = (
                " / ".join(f"{x:+.0%}" for x in abl.values())
                + f" (mean {a['ablation_mean']:+.0%}); {drops} {mark(a['d'])}"
            )
        lines.append(
            f"| {run['setting'] or 'default'} | {run['prior_seed']} "
            f"| {a['asocial']:.1f} {mark(a['a'])} "
            f"| {min(std):+.0%} … {max(std):+.0%} {mark(a['b'])} "
            f"| {gains} (mean {a['mean_gain']:+.0%}, worst p {max(a['worst_p'].values()):.2g}) "
            f"{mark(a['c'])} | {abl_text} |"
        )
    return lines


def mechanism_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| setting | prior seed | protocol | coverage | per-agent inventory | Jaccard distance "
        "| success rate | re-made received |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for name, r in run["results"].items():
            if name.endswith("(ablated)"):
                continue
            lines.append(
                f"| {run['setting'] or 'default'} | {run['prior_seed']} | {name} "
                f"| {r['mean']:.1f} ± {r['sem']:.1f} | {r['inventory'] or 0:.1f} "
                f"| {r['jaccard'] or 0:.2f} | {r['success'] or 0:.3f} | {r['remake'] or 0:.3f} |"
            )
    return lines


def report() -> None:
    """Every saved file: the three studies first, then further grids (``--save NAME``)."""
    studies = ["mechanism", "grid", "stochastic"]
    further = sorted(p.stem for p in OUT.glob("*.json") if p.stem not in studies)
    for name in studies + further:
        data = load(name)
        if not data["runs"]:
            continue
        when = f"commit {data.get('commit')}, {data.get('date')}, {data.get('sims')} sims"
        print(f"\n## {name} ({when})\n")
        if name != "mechanism":
            print("\n".join(anchor_table(data["runs"])) + "\n")
        print("\n".join(mechanism_table(data["runs"])))


def judge(paths: list[Path]) -> None:
    """The anchors of ``tpdisc evaluate --json`` results of the reference's files, one row
    per file: its ``baseline_*`` files stand for the standard baselines."""
    runs = [evaluated_run(path) for path in paths]
    print("\n".join(anchor_table(runs)))
    for run in runs:
        a = run["anchors"]
        met = [k for k in "abcde" if a.get(k)]
        print(f"{run['setting']} (prior seed {run['prior_seed']}): met {''.join(met) or 'none'}")


def reference_rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The results by the name anchors use (``baseline_paired.py``'s as ``paired``); the
    reference's baseline files stand for the standard baselines where both were run."""
    rows: dict[str, dict[str, Any]] = {}
    for row in data["results"]:
        name = str(row["protocol"])
        short = name.removeprefix("baseline_")
        if short not in rows or name.startswith("baseline_"):
            rows[short] = row
    return rows


def accounted(path: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """A results file's label and, per protocol, its coverage, gain over asocial play and,
    per way, attempts, new elements for the group and contribution to the gain."""
    data = json.loads(path.read_text())
    rows = reference_rows(data)
    n_agents = int(data["evaluation"]["sim"]["n_agents"])
    rate = asocial_rate(rows["asocial"]["curve_mean"], n_agents)
    out: dict[str, dict[str, Any]] = {}
    for name, row in rows.items():
        whole = pooled(row["accounting"])
        parts = contributions(row["accounting"], rate)
        out[name] = {
            "mean": row["mean"],
            "gain": row["mean"] - rows["asocial"]["mean"],
            "ways": {
                w: {
                    "attempts": sum(whole["attempts_by_step"][w]),
                    "group": whole["counts"][w]["group"],
                    "self": whole["counts"][w]["self"],
                    "contribution": parts[w],
                }
                for w in WAYS
            },
        }
    params = data["config"]["params"]["empowerment"]
    label = f"{params['name']} {params.get('bias', '')}/{params.get('received', '')}"
    return f"{label}, prior seed {params['prior']['seed']}", out


def account_table(tables: list[dict[str, dict[str, Any]]]) -> list[str]:
    """Per protocol, means over ``tables``: coverage, gain, and per way its contribution
    (attempts; new for the group)."""
    head = "| protocol | coverage | gain | " + " | ".join(WAYS) + " |"
    lines = [head, "|" + "---|" * (3 + len(WAYS))]
    for name in tables[0]:
        got = [t[name] for t in tables if name in t]
        k = len(got)
        cells = [
            f"{sum(g['ways'][w]['contribution'] for g in got) / k:+.1f} "
            f"({sum(g['ways'][w]['attempts'] for g in got) / k:.0f}; "
            f"{sum(g['ways'][w]['group'] for g in got) / k:.1f})"
            for w in WAYS
        ]
        mean = sum(g["mean"] for g in got) / k
        gain = sum(g["gain"] for g in got) / k
        lines.append(f"| {name} | {mean:.1f} | {gain:+.1f} | " + " | ".join(cells) + " |")
    return lines


def account(paths: list[Path]) -> None:
    tables = []
    for path in paths:
        label, table = accounted(path)
        tables.append(table)
        print(f"\n{path.name}: {label}\n")
        print("\n".join(account_table([table])))
    if len(tables) > 1:
        print(f"\nmeans over the {len(tables)} files\n")
        print("\n".join(account_table(tables)))


def evaluated_run(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    params = data["config"]["params"]
    results = {
        name: {"mean": row["mean"], "final": row["final"]}
        for name, row in reference_rows(data).items()
    }
    evolved = sorted(n for n in results if n.startswith("evolved") and "(ablated)" not in n)
    ablated = all(f"{n} (ablated)" in results for n in evolved)
    kind = data["config"]["agent_type"]
    model = params["empowerment"]["name"] if kind == "empowerment" else kind
    return {
        "setting": f"{path.name}: {model}",
        "prior_seed": params["empowerment"]["prior"]["seed"],
        "anchors": anchors_of(results, evolved, ablated),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "what", choices=("mechanism", "grid", "stochastic", "report", "judge", "account")
    )
    p.add_argument(
        "files", nargs="*", type=Path, help="judge, account: tpdisc evaluate --json files"
    )
    p.add_argument("--prior-seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--variants", nargs="+", default=[""], help="grid: settings ('' = default)")
    p.add_argument("--sims", type=int, default=30)
    p.add_argument("--save", default=None, help="results/fidelity/SAVE.json (default: WHAT)")
    p.add_argument("--protocols", type=Path, default=REFERENCE, help="folder of evolved*.py")
    p.add_argument(
        "--resume", action="store_true", help="Skip the runs already saved (same setting, seed)."
    )
    p.add_argument("--recipes", default=None)
    p.add_argument(
        "--cache",
        default=None,
        help="Cache folder for the priors (default: a new empty one, so that each prior is "
        "built as on a fresh install).",
    )
    args = p.parse_args()
    if args.what == "report":
        report()
        return
    if args.what == "judge":
        judge(args.files)
        return
    if args.what == "account":
        account(args.files)
        return
    os.environ["TPDISC_CACHE"] = args.cache or tempfile.mkdtemp(prefix="tpdisc-fidelity-")
    print(f"cache: {os.environ['TPDISC_CACHE']}", flush=True)
    name = args.save or args.what
    data = load(name)
    data["sims"] = args.sims
    domain = make_domain(default_graph(args.recipes))
    protocols = evolved_protocols(args.protocols)
    evolved = [s.name for s in protocols]
    with ProcessExecutor() as pool:
        if args.what == "stochastic":
            for setting in args.variants:
                run = run_setting(
                    setting,
                    0,
                    domain,
                    pool,
                    args.sims,
                    protocols,
                    STANDARD_BASELINES,
                    False,
                    "stochastic",
                )
                keep(data, run)
                save(name, data)
                print(line(run, evolved), flush=True)
                a = run["anchors"]
                print(
                    f"anchor e (baselines {BASELINE_BAND[0]:+.0%} … {BASELINE_BAND[1]:+.0%} of "
                    f"asocial, each evolved >= +{STOCHASTIC_GAIN:.0%}): {a['e']} "
                    f"(baselines {min(a['standard_vs_asocial'].values()):+.1%} … "
                    f"{max(a['standard_vs_asocial'].values()):+.1%}, "
                    f"evolved {min(a['gains'].values()):+.1%} … {max(a['gains'].values()):+.1%})"
                )
        else:
            mechanism = args.what == "mechanism"
            variants = CHOICES if mechanism else args.variants
            for seed in args.prior_seeds:
                for setting in variants:
                    if mechanism:
                        setting = ";".join(filter(None, ("model=previous", setting)))
                    done = {(r["setting"], r["prior_seed"]) for r in data["runs"]}
                    if args.resume and (setting, seed) in done:
                        continue
                    fields = setting_fields(setting)
                    truth, rule = fields.get("truth"), fields.get("usable")
                    if truth is not None:
                        # installed in this process only: its agents must play here
                        install_truth_mix(domain.graph, seed, float(truth))
                    here = truth is not None or rule is not None
                    with usable_rule(rule):
                        run = run_setting(
                            setting,
                            seed,
                            domain,
                            SerialExecutor() if here else pool,
                            args.sims,
                            protocols,
                            ("asocial",) if mechanism else STANDARD_BASELINES,
                            not mechanism,
                        )
                    keep(data, run)
                    save(name, data)
                    print(line(run, evolved), flush=True)
    print(f"saved {save(name, data)}")


if __name__ == "__main__":
    main()
