"""Portraits of the best protocols, for the reports that link to them (``tpdisc report``
and the study's report).

A portrait is built when its report is, from the portrait data a previous build stored
beside its page (``portrait.json``) when that data is of the same code, simulation and
seeds, else by simulating a few seeds. (The Parquet logs of ``evaluate --log-dir`` lack
the agents' attempts that inventories and has-k are rebuilt from, so the stored portrait
data is what a rebuild reads.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tpdisc.analysis.portrait import Portrait, build_portraits, protocol_source
from tpdisc.analysis.simulate import load_run
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import Domain
from tpdisc.errors import ConfigError, ProtocolError, TpdiscError
from tpdisc.executors.base import Executor
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.report.portrait_pages import read_portrait, write_portrait
from tpdisc.report.search_run import page_name
from tpdisc.safefiles import make_dirs
from tpdisc.search.archive import Archive
from tpdisc.search.listing import labels
from tpdisc.search.pick import run_pick
from tpdisc.sim.config import SimConfig

# Seeds simulated for a report's portrait: three games each (protocol, ablation, asocial).
PORTRAIT_SIMS = 3
PORTRAITS = "portraits"


def _plain(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples become lists), to compare stored data."""
    return json.loads(json.dumps(value))


def matches(
    stored: Portrait | None, spec: ProtocolSpec, sim: SimConfig, seeds: Sequence[int]
) -> bool:
    """Whether ``stored`` is the portrait of ``spec`` on ``sim`` over ``seeds``."""
    if stored is None:
        return False
    _, source, _ = protocol_source(spec)
    return (
        stored.source == source
        and list(stored.seeds) == list(seeds)
        and _plain(stored.settings) == _plain(sim.to_dict())
    )


def portrait_page(
    name: str,
    spec: ProtocolSpec,
    domain: Domain,
    sim: SimConfig,
    seeds: Sequence[int],
    folder: Path,
    executor: Executor,
    back: tuple[str, str] | None = None,
    on_simulation: Callable[[str], None] | None = None,
    root: Path | None = None,
) -> Path:
    """``folder/index.html``: the stored portrait when it is this one, else a new one.
    ``folder`` is reached from ``root`` (a run's or study's folder) without following a
    link (default: the folder above it)."""
    make_dirs(folder, root if root is not None else folder.parent)
    stored = read_portrait(folder)
    if not matches(stored, spec, sim, seeds):
        (stored,) = build_portraits(domain, sim, [(name, spec)], seeds, executor, on_simulation)
    assert stored is not None
    return write_portrait(stored, folder, back)


def run_portraits(
    run_dir: Path,
    out: Path,
    executor: Executor,
    *,
    top: int = 1,
    sims: int = PORTRAIT_SIMS,
    recipes: str | Path | None = None,
    on_simulation: Callable[[str], None] | None = None,
    root: Path | None = None,
) -> tuple[dict[int, str], list[str]]:
    """Portraits of a search run's ``top`` protocols (its pick, then by fitness) under
    ``out/portraits/``:
    ``({protocol id: page, relative to out}, notes)``; a portrait that cannot be made
    (another recipe file than the run's, a protocol failing) is a note, not an error.
    Each portrait's folder is named as the protocol's page is. ``root``: the folder
    ``out`` is in, from which no link is followed (default: ``out`` is the user's own
    path)."""
    if top < 1:
        return {}, []
    try:
        graph = default_graph(recipes)
    except TpdiscError as err:  # no recipe data here: the report goes on without portraits
        return {}, [f"no portrait: {err}"]
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        used = archive.meta("recipes")
        names = labels(archive.summaries())
        try:
            pick: int | None = run_pick(archive).protocol_id
        except ConfigError:  # nothing valid: no portrait to draw
            pick = None
    if used is not None and used != (graph.sha256 or f"{graph.n_elements} elements"):
        return {}, [
            "no portrait: the recipe data at hand is not this run's; pass the run's file "
            "with --recipes"
        ]
    try:
        run = load_run(run_dir, graph=graph)
    except ConfigError as err:  # no config.yaml, a bad row: the report says it, if it can
        return {}, [f"no portrait: {err}"]
    # The run's pick first (the report's "best protocol"), then the others by fitness.
    best = sorted(run.protocols, key=lambda p: (p.id != pick, -p.fitness, p.id))[:top]
    pages: dict[int, str] = {}
    notes = []
    for protocol in best:
        name = names.get(protocol.id, protocol.name)
        # The folder is named as the protocol's page is (protocols/i0009.html).
        folder_name = page_name(name, protocol.id).removesuffix(".html")
        folder = out / PORTRAITS / folder_name
        seeds = list(protocol.seeds[:sims]) or list(range(sims))
        try:
            back = ("../../index.html", "all protocols")
            portrait_page(
                name,
                protocol.spec,
                run.domain,
                run.sim,
                seeds,
                folder,
                executor,
                back,
                on_simulation,
                out if root is None else root,
            )
        except (ProtocolError, ConfigError) as err:
            notes.append(f"no portrait of {name}: {err}")
            continue
        pages[protocol.id] = f"{PORTRAITS}/{folder_name}/index.html"
    return pages, notes
