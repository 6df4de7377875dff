"""What one search iteration reads from a large archive, timed.

Fills a fresh archive with about 2,000 protocols of realistic size (5 KB of code, 10 KB of
prompt, 10 KB of logs, an answer, curves; a quarter of the iterations repaired once),
then times the reads of one evolution iteration: its request (statistics, parent and
contrasts), the progress event (statistics and spending), the novelty checks of a new
code, and the ranked table ``tpdisc archive`` prints. Simulation and LLM time are not
included: this is the archive's share of an iteration.

    python benchmarks/archive_queries.py [--rows 2000] [--repeat 40]

It uses only calls the archive had before its queries were narrowed, so the same script
measures an older checkout: ``PYTHONPATH=/path/to/old/tree python benchmarks/...``.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from benchlib import full_domain, load, machine, parser

import tpdisc
from tpdisc.executors.serial import SerialExecutor
from tpdisc.search.archive import Archive, Candidate
from tpdisc.search.config import SearchConfig
from tpdisc.search.listing import table
from tpdisc.search.loop import SearchLoop
from tpdisc.search.proposers import OfflineProposer

N_SIMS = 30
N_STEPS = 150


def text(rng: np.random.Generator, size: int, tag: str) -> str:
    """``size`` characters of code-like text, different for every ``tag``."""
    words = ["state", "agent", "memory", "send", "peers", "score", "for", "in", "return"]
    out = [f"# {tag}\n"]
    length = len(out[0])
    while length < size:
        line = " ".join(rng.choice(words, 8)) + f"  # {rng.integers(1 << 30)}\n"
        out.append(line)
        length += len(line)
    return "".join(out)[:size]


def protocol(
    rng: np.random.Generator, name: str, iteration: int, attempt: int, mode: str, status: str
) -> Candidate:
    fitness = float(rng.normal(60, 8)) if status == "valid" else None
    # get_logs of each simulation: about 10 KB in all
    logs = [
        [{"metric_name": "memories_sent", "step": s, "value": int(v)} for s, v in enumerate(values)]
        for values in rng.integers(50, size=(N_SIMS, 6))
    ]
    return Candidate(
        name=name,
        iteration=iteration,
        attempt=attempt,
        mode=mode,
        status=status,
        proposer="llm",
        code=text(rng, 5_000, name),
        error=None if status == "valid" else "Traceback ...\nKeyError: 'x'",
        description=text(rng, 300, "description"),
        logging=text(rng, 200, "logging"),
        reasoning=text(rng, 600, "reasoning"),
        genome={"route": "ring", "weights": [["novel", 1.0]], "horizon": 12},
        fitness_mean=fitness,
        fitness_sem=1.2 if fitness is not None else None,
        fitness_values=rng.normal(60, 8, N_SIMS).tolist() if fitness is not None else None,
        seeds=list(range(N_SIMS)) if fitness is not None else None,
        curve_mean=np.linspace(4, 60, N_STEPS + 1).tolist() if fitness is not None else None,
        logs=logs if fitness is not None else None,
        model="some-model",
        prompt_tokens=2_500,
        completion_tokens=1_500,
        cost=0.01,
        prompt=text(rng, 10_000, "prompt"),
        answer=text(rng, 6_000, "answer"),
    )


def fill(path: Path, n_rows: int, seed: int = 0) -> int:
    """An archive of ``n_rows`` protocols grown as a search grows it; returns its last
    iteration."""
    rng = np.random.default_rng(seed)
    lineages: dict[int, list[int]] = {}
    with Archive(path) as archive:
        for name in ("asocial", "paired", "dynamic", "graph", "stochastic"):
            row = protocol(rng, name, 0, 0, "seed", "valid")
            lineages[archive.add_seed(row)] = []
        rows, iteration = 5, 0
        while rows < n_rows:
            iteration += 1
            parent = int(rng.choice(list(lineages)))
            lineage = [parent, *lineages[parent]]
            batch = [protocol(rng, f"i{iteration:04d}", iteration, 0, "improve", "valid")]
            if iteration % 4 == 0:  # a failed first attempt, then its repair
                batch[0].status, batch[0].fitness_mean = "invalid", None
                batch.append(protocol(rng, f"i{iteration:04d}r1", iteration, 1, "repair", "valid"))
            for row in batch:
                row.parent_id, row.lineage = parent, lineage
            accepted = archive.finish_iteration(iteration, "improve", batch)
            if accepted is not None:
                lineages[accepted] = lineage
            rows += len(batch)
    return iteration


def median_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, min(times) * 1000


def commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(Path(tpdisc.__file__).parent.parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--rows", type=int, default=2000, help="Protocols in the archive.")
    p.add_argument("--repeat", type=int, default=40, help="Iterations timed.")
    args = p.parse_args()
    domain = full_domain(args.recipes)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        t0 = time.perf_counter()
        last = fill(run_dir / Archive.FILE_NAME, args.rows)
        filled = time.perf_counter() - t0
        size = (run_dir / Archive.FILE_NAME).stat().st_size / 1e6
        config = SearchConfig(iterations=last + args.repeat, warmup=1)
        with SearchLoop(run_dir, config, domain, OfflineProposer(), SerialExecutor()) as loop:
            archive = loop.archive
            new_code = text(np.random.default_rng(1), 5_000, "new")
            iterations = iter(range(last + 1, last + 1 + 10 * args.repeat))

            def request() -> object:
                i = next(iterations)
                return loop.request_for(i, np.random.default_rng([config.seed, i]))

            def event() -> object:
                return archive.stats(), archive.spent()

            def novelty() -> object:  # the proposer's check, then the loop's
                return archive.find_code(new_code), archive.find_code(new_code)

            def one_iteration() -> object:
                return request(), novelty(), event()

            request()  # the first read warms SQLite's page cache
            timings = {
                "request (stats, parent, contrasts)": median_ms(request, args.repeat),
                "progress event (stats, spent)": median_ms(event, args.repeat),
                "novelty checks (2 × find_code)": median_ms(novelty, args.repeat),
                "one iteration's reads": median_ms(one_iteration, args.repeat),
                "ranked table (`tpdisc archive`)": median_ms(lambda: table(archive), 5),
            }
    print(
        f"tpdisc at {commit()} ({Path(tpdisc.__file__).parent}); {machine()}; {load()}\n"
        f"{args.rows} protocols, {last} iterations, archive {size:.0f} MB, "
        f"filled in {filled:.1f} s\n"
    )
    print("| reads | median | min |\n|---|---|---|")
    for label, (median, fastest) in timings.items():
        print(f"| {label} | {median:.2f} ms | {fastest:.2f} ms |")


if __name__ == "__main__":
    main()
