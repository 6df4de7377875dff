"""A search's pick, the one protocol its run directory stands for, and the protocols a user
names by run: ``RUN_DIR:NAME`` (``runs/first:i0007``) or ``RUN_DIR`` alone (its pick).

The pick is what every place that says "best" of a run means (the closing line of
``evolve``, ``archive``, ``tpdisc report`` and its portrait, the analyses, a study): of the
protocols the search found (its seeded baselines are the yardstick, not its finds), the one
that scored best on fresh seeds where any were re-scored, since the best on the search's
own seeds is partly the luckiest there (:mod:`tpdisc.search.rescore`); else the best by the
search's fitness.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.search.archive import Archive, CandidateSummary, Rescore
from tpdisc.search.listing import labels, open_archive, protocol_id


@dataclass(frozen=True)
class Pick:
    """A run's pick: its row id and name, its fitness on the search's seeds, and its score
    on fresh seeds when it was picked on them."""

    protocol_id: int
    name: str
    fitness: float
    fresh: Rescore | None
    rescored: int  # protocols of the run re-scored on fresh seeds

    def why(self) -> str:
        """How it was picked, in a few words."""
        if self.fresh is None:
            return f"the best by fitness, {self.fitness:.2f}; none re-scored"
        return (
            f"the best of the {self.rescored} re-scored on fresh seeds, "
            f"{self.fresh.mean:.2f} ± {self.fresh.sem:.2f} (fitness {self.fitness:.2f})"
        )


def run_pick(archive: Archive) -> Pick:
    """The pick of the run whose archive is ``archive``: among the valid protocols it found,
    the best on fresh seeds where any were re-scored, else the best by fitness (ties: the
    higher fitness, then the earlier protocol)."""
    ranked = found(archive)
    if not ranked:
        raise ConfigError(f"{archive.path.parent}: no valid protocol of its own to pick")
    rescores = archive.rescores()
    fresh = [c for c in ranked if c.id in rescores]
    chosen = max(fresh, key=lambda c: rescores[c.id].mean) if fresh else ranked[0]
    return Pick(
        chosen.id,
        labels(archive.summaries())[chosen.id],
        chosen.fitness,
        rescores.get(chosen.id) if fresh else None,
        len(fresh),
    )


def found(archive: Archive) -> list[CandidateSummary]:
    """The valid protocols the search found, best by fitness first (no seeded baseline)."""
    return [c for c in archive.summaries(valid_only=True, order="fitness") if c.mode != "seed"]


def is_run_dir(path: str | Path) -> bool:
    """Whether ``path`` is a run directory of ``tpdisc evolve`` (it holds an archive)."""
    return (Path(path) / Archive.FILE_NAME).is_file()


def split_reference(text: str) -> tuple[Path, str | None] | None:
    """``(run directory, name)`` of ``RUN_DIR:NAME``, ``(run directory, None)`` of a run
    directory alone; None for anything else (a file, even one with a colon in its name; a
    baseline's name)."""
    if Path(text).is_file():
        return None
    if is_run_dir(text):
        return Path(text), None
    folder, colon, name = text.rpartition(":")
    if not colon or not folder:
        return None
    if is_run_dir(folder):
        return Path(folder), name
    if Path(folder).is_dir():
        raise ConfigError(f"{text}: {folder} is not a run directory of tpdisc evolve")
    return None


def run_protocol(text: str, *, trusted: bool = False) -> ProtocolSpec | None:
    """The protocol ``text`` names by run, as ``tpdisc evaluate`` runs a file (its code
    sandboxed unless ``trusted``; a seeded baseline as the baseline); None when ``text``
    names no run. Its name is the protocol's (``i0007``), its origin ``RUN_DIR:i0007``."""
    reference = split_reference(text)
    if reference is None:
        return None
    run_dir, name = reference
    with open_archive(run_dir) as archive:
        pid = run_pick(archive).protocol_id if name is None else protocol_id(archive, name)
        candidate = archive.get(pid)
        shown = labels(archive.summaries())[pid]
    if candidate.mode == "seed":
        return BaselineProtocol(candidate.name)
    if not candidate.code:
        raise ConfigError(f"{run_dir}:{shown}: no code stored (status {candidate.status})")
    return SourceProtocol(shown, candidate.code, origin=f"{run_dir}:{shown}", trusted=trusted)


def run_references(texts: Iterable[str], *, trusted: bool = False) -> dict[str, ProtocolSpec]:
    """The protocols of ``texts`` that name a run's protocol, by their text (the others,
    files and baselines, are resolved as usual)."""
    found = {}
    for text in texts:
        spec = run_protocol(text, trusted=trusted)
        if spec is not None:
            found[text] = spec
    return found
