"""Search quality: does the offline search find protocols better than the reference's?

For each prior seed, one or more offline searches (``tpdisc evolve``, default agents and
game, a fixed number of iterations; each ends by re-scoring its top protocols on the
fresh seeds right after its own, as ``evolve`` always does), then a test on seeds neither
the search nor that re-scoring used: the search's pick (its best on the re-scoring's seeds)
beside the reference's published evolved protocols (``../shared/reference_protocols/``)
and the five standard baselines, all sandboxed, on the same 30 seeds.

    python benchmarks/search_quality.py [--prior-seeds 0 1 2] [--search-seeds 0 1]
        [--iterations 900] [--out results/search_quality] [--record]

Per prior seed and search seed it prints the pick's mean on the test seeds, the best
published protocol's on the same seeds, their ratio and the one-sided Welch p that the
pick beats it, and the search's wall time. Runs resume: a finished search (its folder has
``done``) is not run again. ``--record`` writes the table into docs/search.md. Each
run uses one new empty cache unless ``--cache`` is given, so each prior is built as on a
fresh install, by its first search (about 70-200 s on 2 cores, counted in that search's
wall time). The default budget, 900 iterations, takes 17-18 minutes per search on 2 cores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from benchlib import ROOT, machine, parser, record

from tpdisc.agents.base import AgentParams
from tpdisc.agents.empowerment.model import PriorChoice
from tpdisc.analysis.stats import welch_greater
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import make_domain
from tpdisc.executors.process import ProcessExecutor
from tpdisc.protocols.baselines import STANDARD_BASELINES, BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sandbox import SandboxedSource
from tpdisc.sandbox.config import SandboxConfig
from tpdisc.search.archive import Archive
from tpdisc.search.config import SearchConfig
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate

REFERENCE = ROOT.parent / "shared" / "reference_protocols"
SEARCH_DOC = ROOT / "docs" / "search.md"
TEST_FIRST = 1000  # the test seeds: far from the search's (0..29) and its re-scoring's


def run_search(
    run_dir: Path, prior_seed: int, search_seed: int, iterations: int, recipes: str | None
) -> float | None:
    """Run (or resume) one search; its wall seconds, or None if it had finished before."""
    done = run_dir / "done"
    if done.exists():
        return None
    tpdisc = shutil.which("tpdisc")
    if tpdisc is None:
        raise SystemExit("no tpdisc command on PATH: pip install -e . first")
    command = [
        tpdisc,
        "evolve",
        "--run-dir",
        str(run_dir),
        "--iterations",
        str(iterations),
        "--seed",
        str(search_seed),
        "--prior-seed",
        str(prior_seed),
    ]
    if recipes:
        command += ["--recipes", recipes]
    t0 = time.perf_counter()
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - t0
    done.write_text(json.dumps({"seconds": seconds, "date": time.strftime("%F %T")}))
    return seconds


def search_seconds(run_dir: Path) -> float:
    data: dict[str, Any] = json.loads((run_dir / "done").read_text())
    return float(data["seconds"])


def pick(run_dir: Path) -> tuple[str, str, float, float]:
    """The search's pick: among the protocols it re-scored, the best on those fresh
    seeds (name, code, fitness on the search's seeds, on the re-scoring's seeds)."""
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        rescores = archive.rescores()
        if not rescores:
            raise SystemExit(f"{run_dir}: nothing re-scored; run 'tpdisc archive --rescore 3'")
        best = max(rescores.values(), key=lambda r: r.mean)
        row = archive.get(best.protocol_id)
    assert row.code is not None and row.fitness_mean is not None
    return row.name, row.code, row.fitness_mean, best.mean


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--prior-seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--search-seeds", type=int, nargs="+", default=[0])
    p.add_argument("--iterations", type=int, default=900)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "search_quality")
    p.add_argument("--cache", default=None, help="Cache for the priors (default: a new one).")
    p.add_argument("--protocols", type=Path, default=REFERENCE, help="Folder of evolved*.py.")
    args = p.parse_args()
    os.environ["TPDISC_CACHE"] = args.cache or tempfile.mkdtemp(prefix="tpdisc-quality-")
    if args.recipes:
        os.environ["TPDISC_RECIPES"] = args.recipes
    graph = default_graph(args.recipes)
    domain = make_domain(graph)
    published = sorted(args.protocols.glob("evolved*.py"))
    if not published:
        raise SystemExit(f"no evolved*.py in {args.protocols}")
    test_seeds = list(range(TEST_FIRST, TEST_FIRST + SearchConfig().sims))
    sandbox = SandboxConfig()
    rows: list[dict[str, Any]] = []
    for prior_seed in args.prior_seeds:
        runs = {}
        for search_seed in args.search_seeds:
            run_dir = args.out / f"prior{prior_seed}" / f"search{search_seed}"
            run_search(run_dir, prior_seed, search_seed, args.iterations, args.recipes)
            runs[search_seed] = run_dir
        params = AgentParams()
        model = replace(params.empowerment, prior=PriorChoice(seed=prior_seed))
        config = replace(SimConfig(), params=replace(params, empowerment=model))
        specs: dict[str, ProtocolSpec] = {b: BaselineProtocol(b) for b in STANDARD_BASELINES}
        for path in published:
            specs[path.stem] = SandboxedSource.of(SourceProtocol.from_file(path), sandbox)
        picks = {}
        for search_seed, run_dir in runs.items():
            name, code, fitness, fresh = pick(run_dir)
            label = f"search{search_seed}:{name}"
            picks[search_seed] = (label, fitness, fresh)
            specs[label] = SandboxedSource.of(SourceProtocol(label, code, origin=label), sandbox)
        finals: dict[str, list[float]] = {}
        with ProcessExecutor() as pool:
            for label, spec in specs.items():
                ev = evaluate(domain, config, spec, test_seeds, executor=pool)
                finals[label] = [float(v) for v in ev.final]
                print(f"prior {prior_seed}: {label} {ev.mean:.1f} ± {ev.sem:.1f}", flush=True)
        best_published = max((p.stem for p in published), key=lambda n: np.mean(finals[n]))
        best_baseline = max(STANDARD_BASELINES, key=lambda n: np.mean(finals[n]))
        for search_seed, (label, fitness, fresh) in picks.items():
            ours, theirs = finals[label], finals[best_published]
            rows.append(
                {
                    "prior_seed": prior_seed,
                    "search_seed": search_seed,
                    "pick": label,
                    "search_fitness": fitness,
                    "rescore": fresh,
                    "test": float(np.mean(ours)),
                    "test_sem": float(np.std(ours, ddof=1) / np.sqrt(len(ours))),
                    "published": best_published,
                    "published_test": float(np.mean(theirs)),
                    "ratio": float(np.mean(ours) / np.mean(theirs)),
                    "p": welch_greater(ours, theirs),
                    "best_baseline": best_baseline,
                    "baseline_test": float(np.mean(finals[best_baseline])),
                    "seconds": search_seconds(runs[search_seed]),
                }
            )
        (args.out / f"prior{prior_seed}" / "test.json").write_text(
            json.dumps({"seeds": test_seeds, "finals": finals}, indent=1)
        )
    lines = table(rows, args)
    print("\n".join(lines))
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1))
    if args.record:
        record("search_quality", "\n".join(lines), SEARCH_DOC)


def table(rows: list[dict[str, Any]], args: Any) -> list[str]:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} at {commit} on {machine()}: "
        f"`python benchmarks/search_quality.py --prior-seeds "
        f"{' '.join(map(str, args.prior_seeds))} --search-seeds "
        f"{' '.join(map(str, args.search_seeds))} --iterations {args.iterations}`, each "
        "prior built in an empty cache. Test seeds "
        f"{TEST_FIRST}..{TEST_FIRST + 29}: used by neither the search (0..29) nor its "
        "re-scoring (30..59), which picked the protocol tested.",
        "",
        "| prior seed | search seed | search wall time | pick | fitness (search's seeds) "
        "| re-scored | test | best published on the test seeds | ratio | one-sided Welch p "
        "| best baseline |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['prior_seed']} | {r['search_seed']} | {r['seconds'] / 60:.1f} min "
            f"| {r['pick']} | {r['search_fitness']:.1f} | {r['rescore']:.1f} "
            f"| **{r['test']:.1f}** ± {r['test_sem']:.1f} | {r['published']} "
            f"{r['published_test']:.1f} | **{r['ratio']:.2f}** | {r['p']:.2g} "
            f"| {r['best_baseline']} {r['baseline_test']:.1f} |"
        )
    ratios = [r["ratio"] for r in rows]
    if ratios:
        lines += [
            "",
            f"Ratio over all searches: min {min(ratios):.2f}, median "
            f"{float(np.median(ratios)):.2f}, max {max(ratios):.2f}.",
        ]
    return lines


if __name__ == "__main__":
    main()
