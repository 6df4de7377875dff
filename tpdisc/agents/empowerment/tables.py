"""The arrays empowerment agents read, and their per-process memo.

:class:`EmpowermentTables` holds what every empowerment agent playing one graph with one
prior reads and never writes: the prior's per-pair summaries (``P(success)``, the exact
expectation, the top ``k`` results) and the children counts of both graphs.
:func:`shared_tables` builds them once per process and per (source graph, played graph,
backend, seed, cache folder); :mod:`tpdisc.agents.empowerment.agent` is what uses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from tpdisc.agents.empowerment.prior.dataset import pair_index_table
from tpdisc.domain.recipes import RecipeGraph

if TYPE_CHECKING:
    from tpdisc.agents.empowerment.prior.build import Prior


@dataclass(frozen=True, eq=False)
class EmpowermentTables:
    """Read-only arrays shared by every empowerment agent playing one graph with one prior.

    The two large per-pair tables, ``top_idx`` and ``top_p`` (pairs × k), stay in the
    prior's compact types (uint16, float32): casting them would cost each process about
    0.1 s and 60 MB. Agents widen what they gather to float64 before any arithmetic, so
    every value is the same as with float64 tables.
    """

    n: int
    pair_id: np.ndarray
    pair_lo: np.ndarray
    pair_hi: np.ndarray
    p_success: np.ndarray
    expect: np.ndarray
    resid: np.ndarray
    top_idx: np.ndarray
    top_p: np.ndarray
    children_prior: np.ndarray
    children_played: np.ndarray
    fingerprint: dict[str, Any] = field(default_factory=dict)  # of the prior (see store)
    # the fraction of the prior's pairs that succeed, which its link model was trained away
    # from (successes oversampled to match failures)
    base_rate: float = 0.5

    @cached_property
    def p_success_base_rate(self) -> np.ndarray:
        """``p_success`` corrected from the training's balanced classes back to the game's
        base rate (odds × π / (1 − π)): the model's ``success=base-rate``."""
        p, rate = self.p_success, self.base_rate
        hit = p * rate
        return hit / (hit + (1.0 - p) * (1.0 - rate))

    @classmethod
    def build(
        cls, prior: Prior, played: RecipeGraph, source: RecipeGraph | None = None
    ) -> EmpowermentTables:
        """``source``: the graph the prior was trained on (default ``played``)."""
        if prior.n_elements != played.n_elements:
            raise ValueError(
                f"prior covers {prior.n_elements} elements, the game has {played.n_elements}"
            )
        from tpdisc.agents.empowerment.prior.store import fingerprint

        lo, hi = np.triu_indices(prior.n_elements)
        return cls(
            n=prior.n_elements,
            pair_id=pair_index_table(prior.n_elements),
            pair_lo=lo,
            pair_hi=hi,
            p_success=prior.p_success.astype(np.float64),
            expect=prior.expect.astype(np.float64),
            resid=prior.resid.astype(np.float64),
            top_idx=prior.top_idx,
            top_p=prior.top_p,
            children_prior=prior.children.astype(np.float64),
            children_played=played.children_count.astype(np.float64),
            fingerprint=fingerprint(prior.meta) if "key" in prior.meta else {},
            base_rate=len((source or played).recipes) / lo.size,
        )


# Per-process memo: the simulations of an evaluation share a graph and a prior, and each
# worker process unpickles its own copy of the graphs for every simulation. Building the
# tables (about 70 MB of gathers and casts) once per process, keyed by content, keeps
# that out of every simulation.
_TABLES: dict[tuple[int, int, str, int, str], EmpowermentTables] = {}
_FINGERPRINTS: dict[int, tuple[RecipeGraph, int]] = {}


def _fingerprint(graph: RecipeGraph) -> int:
    """A per-process content hash of a graph, remembered for the graph object."""
    hit = _FINGERPRINTS.get(id(graph))
    if hit is not None and hit[0] is graph:
        return hit[1]
    value = hash((graph.names, tuple(graph.recipes.items())))
    if len(_FINGERPRINTS) >= 16:
        _FINGERPRINTS.pop(next(iter(_FINGERPRINTS)))
    # The entry keeps the graph alive, so its id cannot be reused by another graph.
    _FINGERPRINTS[id(graph)] = (graph, value)
    return value


def shared_tables(
    source: RecipeGraph, played: RecipeGraph, spec: str, seed: int = 0, *, verify: bool = True
) -> EmpowermentTables:
    """Tables for agents playing ``played`` with the prior of ``source``, backend ``spec``
    and seed ``seed`` (``verify``: see
    :func:`~tpdisc.agents.empowerment.prior.store.load_prior`)."""
    from tpdisc.agents.empowerment.prior.build import PriorSettings
    from tpdisc.agents.empowerment.prior.store import ensure_prior

    key = _key(source, played, spec, seed)
    tables = _TABLES.get(key)
    if tables is None:
        prior, _ = ensure_prior(source, spec, PriorSettings(seed=seed), verify=verify)
        tables = EmpowermentTables.build(prior, played, source)
        _remember(key, tables)
    return tables


def install_tables(
    tables: EmpowermentTables, source: RecipeGraph, played: RecipeGraph, spec: str, seed: int
) -> None:
    """Make :func:`shared_tables` hand out ``tables`` in this process for this prior, as
    experiments on a modified prior do (``benchmarks/fidelity.py swap``)."""
    _remember(_key(source, played, spec, seed), tables)


def _key(
    source: RecipeGraph, played: RecipeGraph, spec: str, seed: int
) -> tuple[int, int, str, int, str]:
    from tpdisc.agents.empowerment.prior.store import prior_dir

    # The cache folder is part of the key: a process that switches caches (tests, a user
    # setting TPDISC_CACHE between calls) finds, or builds, the prior in the new one.
    return (_fingerprint(source), _fingerprint(played), spec, seed, str(prior_dir()))


def _remember(key: tuple[int, int, str, int, str], tables: EmpowermentTables) -> None:
    if len(_TABLES) >= 4:
        _TABLES.pop(next(iter(_TABLES)))
    _TABLES[key] = tables
