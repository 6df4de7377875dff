"""Empowerment agents (SPEC §2, after Brändle et al. 2023).

An agent values a candidate pair by ``Emp(a, b) = P(success | a, b) · Σ_r P(r | a, b) ·
EmpItem(r)``, with ``EmpItem(r)`` = 0 if it owns ``r``, else the true number of distinct
elements ``r`` helps produce in the game being played, times a noise factor ~ N(1, 0.1)
drawn once per agent and element. It discards pairs of zero empowerment and picks by a
softmax with temperature beta (see :class:`~tpdisc.agents.choices.EmpowermentChoices` for
the choices the description leaves open).

Cost. P(r | a, b) is a softmax over all n elements, so the sum over r costs O(n) per pair;
done naively for every candidate at every step it would dominate a simulation. The prior
stores, per pair, the exact expectation ``Σ_r P(r) · children(r)`` and the ``k`` most likely
results; an agent keeps, for the element vector ``u = EmpItem - children`` (noise,
ownership and the played graph's counts, relative to the prior's graph),

    Σ_r P(r) · EmpItem(r) = expect + Σ_r P(r) · u(r)
                          ≈ expect + Σ_{top k} (P(r) - ρ) · u(r) + ρ · Σ_r u(r),

where ρ is the mean probability of the elements outside the top ``k``: exact for the
noise-free, ownership-free part and for the top results, mean-field for the rest (see
``docs/prior.md`` for the measured error). The per-pair sums are kept for the pairs of
owned elements and updated only when the agent gains an element (one gather over ``k``
entries per new pair, one comparison per cached entry), so a step costs
O(candidates · small constant), independent of n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tpdisc.agents.base import FAILED, Agent, AgentContext, AgentParams, AgentState, Memory
from tpdisc.agents.candidates import CandidatePairs, choose_biased
from tpdisc.agents.choices import EmpowermentChoices
from tpdisc.agents.prior.dataset import pair_index_table
from tpdisc.domain.recipes import Pair, RecipeGraph

if TYPE_CHECKING:
    from tpdisc.agents.prior.build import Prior

NOISE_SD = 0.1
# Below this a value counts as zero empowerment: a sum that is 0 in exact arithmetic (no
# result with children left) comes out at ~1e-7 from the prior's float32 summaries, and
# must still be discarded as worthless. Real values are ~1e-2 and more.
ZERO = 1e-6
# Codes of what an agent knows about a pair; a code >= 0 is the result of a received success.
UNKNOWN, FAILURE, OWN_SUCCESS = -1, -2, -3


@dataclass(frozen=True, eq=False)
class EmpowermentTables:
    """Read-only arrays shared by every empowerment agent playing one graph with one prior."""

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

    @classmethod
    def build(cls, prior: Prior, played: RecipeGraph) -> EmpowermentTables:
        if prior.n_elements != played.n_elements:
            raise ValueError(
                f"prior covers {prior.n_elements} elements, the game has {played.n_elements}"
            )
        lo, hi = np.triu_indices(prior.n_elements)
        return cls(
            n=prior.n_elements,
            pair_id=pair_index_table(prior.n_elements),
            pair_lo=lo,
            pair_hi=hi,
            p_success=prior.p_success.astype(np.float64),
            expect=prior.expect.astype(np.float64),
            resid=prior.resid.astype(np.float64),
            top_idx=prior.top_idx.astype(np.intp),
            top_p=prior.top_p.astype(np.float64),
            children_prior=prior.children.astype(np.float64),
            children_played=played.children_count.astype(np.float64),
        )


# Per-process memo: simulations of one evaluation share a graph and a prior; building the
# tables (about 100 MB of gathers and casts) once per process instead of once per agent.
_TABLES: dict[tuple[int, int, str], tuple[RecipeGraph, RecipeGraph, EmpowermentTables]] = {}
_PRIORS: dict[tuple[int, str], Prior] = {}


def _fingerprint(graph: RecipeGraph) -> int:
    return hash((graph.names, tuple(graph.recipes.items())))


def shared_tables(source: RecipeGraph, played: RecipeGraph, spec: str) -> EmpowermentTables:
    """Tables for agents playing ``played`` with the prior of ``source`` and backend ``spec``."""
    key = (id(source), id(played), spec)
    hit = _TABLES.get(key)
    if hit is not None:
        return hit[2]
    from tpdisc.agents.prior.store import ensure_prior

    prior_key = (_fingerprint(source), spec)
    prior = _PRIORS.get(prior_key)
    if prior is None:
        prior, _ = ensure_prior(source, spec)
        _PRIORS.clear()  # one prior at a time per process is all a run needs
        _PRIORS[prior_key] = prior
    tables = EmpowermentTables.build(prior, played)
    if len(_TABLES) >= 8:
        _TABLES.pop(next(iter(_TABLES)))
    # Keeping the graphs alive keeps their ids from being reused by other graphs.
    _TABLES[key] = (source, played, tables)
    return tables


def softmax_probabilities(values: np.ndarray, beta: float, zscore: bool) -> np.ndarray:
    """Choice probabilities: softmax with temperature ``beta`` of the (z-scored) values."""
    x = np.asarray(values, dtype=np.float64)
    if zscore:
        sd = x.std()
        x = (x - x.mean()) / sd if sd > 0 else np.zeros_like(x)
    weights = np.exp((x - x.max()) / beta)
    p: np.ndarray = weights / weights.sum()
    return p


class _Rows:
    """Growable per-pair arrays for the pairs of owned elements (the lasting candidates)."""

    def __init__(self, k: int, capacity: int = 256) -> None:
        self.size = 0
        self.k = k
        self.pid = np.empty(capacity, dtype=np.intp)
        self.lo = np.empty(capacity, dtype=np.intp)
        self.hi = np.empty(capacity, dtype=np.intp)
        self.ps = np.empty(capacity)
        self.expect = np.empty(capacity)
        self.rho = np.empty(capacity)
        self.top = np.empty((capacity, k), dtype=np.intp)
        self.dtop = np.empty((capacity, k))  # P(r) - rho for the top results
        self.t = np.empty(capacity)  # Σ_top (P - rho) · u
        self.t_owned = np.empty(capacity)  # Σ_top (P - rho) · owned
        self.code = np.empty(capacity, dtype=np.int64)

    def reserve(self, extra: int) -> None:
        need = self.size + extra
        if need <= self.pid.size:
            return
        capacity = max(need, 2 * self.pid.size)
        for name in ("pid", "lo", "hi", "ps", "expect", "rho", "top", "dtop", "t", "t_owned"):
            old = getattr(self, name)
            new = np.empty((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: self.size] = old[: self.size]
            setattr(self, name, new)
        code = np.empty(capacity, dtype=np.int64)
        code[: self.size] = self.code[: self.size]
        self.code = code


class EmpowermentAgent(Agent):
    """Chooses pairs by softmax over their empowerment, with the social bias of SPEC §2."""

    kind = "empowerment"

    def __init__(
        self,
        tables: EmpowermentTables,
        beta: float = 0.05,
        p_social: float = 0.5,
        choices: EmpowermentChoices | None = None,
    ) -> None:
        self.tables = tables
        self.beta = beta
        self.p_social = p_social
        self.choices = choices or EmpowermentChoices()
        self.known = np.full(tables.pair_id.size, UNKNOWN, dtype=np.int64)
        self.rows = _Rows(tables.top_idx.shape[1])
        self.row_of: dict[int, int] = {}
        self.inventory: list[int] = []
        self.noise: np.ndarray | None = None
        self.fallbacks = 0
        self.choices_made = 0

    @classmethod
    def from_context(cls, ctx: AgentContext) -> EmpowermentAgent:
        source = ctx.source_graph if ctx.source_graph is not None else ctx.graph
        tables = shared_tables(source, ctx.graph, ctx.params.prior)
        return cls(tables, ctx.params.beta, ctx.params.p_social, ctx.params.empowerment)

    @classmethod
    def prepare(cls, graph: RecipeGraph, source: RecipeGraph | None, params: AgentParams) -> None:
        """Build (with progress) or load the prior before simulations start."""
        shared_tables(source if source is not None else graph, graph, params.prior)

    # -- knowledge -------------------------------------------------------------------------

    def _start(self, rng: np.random.Generator) -> None:
        t = self.tables
        self.noise = 1.0 + NOISE_SD * rng.standard_normal(t.n)
        self.item = t.children_played * self.noise  # EmpItem of an element not owned
        self.owned = np.zeros(t.n, dtype=bool)
        self.u = self.item - t.children_prior
        self.u_sum = float(self.u.sum())
        self.n_owned = 0

    def _gain(self, e: int) -> None:
        rows = self.rows
        if self.choices.owned != "ignore":
            if rows.size:
                hit_row, hit_k = np.nonzero(rows.top[: rows.size] == e)
                if hit_row.size:
                    d = rows.dtop[hit_row, hit_k]
                    rows.t[hit_row] -= d * self.item[e]
                    rows.t_owned[hit_row] += d
            self.u[e] -= self.item[e]
            self.u_sum -= float(self.item[e])
            self.n_owned += 1
        self.owned[e] = True
        self.inventory.append(e)
        self._add_rows(e, np.asarray(self.inventory, dtype=np.intp))

    def _add_rows(self, e: int, partners: np.ndarray) -> None:
        t, rows = self.tables, self.rows
        m = partners.size
        rows.reserve(m)
        s = slice(rows.size, rows.size + m)
        pid = t.pair_id[e, partners]
        rows.pid[s] = pid
        rows.lo[s] = np.minimum(partners, e)
        rows.hi[s] = np.maximum(partners, e)
        rows.ps[s] = t.p_success[pid]
        rows.expect[s] = t.expect[pid]
        rho = t.resid[pid]
        rows.rho[s] = rho
        top = t.top_idx[pid]
        dtop = t.top_p[pid] - rho[:, None]
        rows.top[s] = top
        rows.dtop[s] = dtop
        rows.t[s] = (dtop * self.u[top]).sum(axis=1)
        rows.t_owned[s] = (dtop * self.owned[top]).sum(axis=1)
        rows.code[s] = self.known[pid]
        for i, p in enumerate(pid.tolist()):
            self.row_of[p] = rows.size + i
        rows.size += m

    def _learn(self, a: int, b: int, code: int) -> None:
        pid = int(self.tables.pair_id[a, b])
        if self.known[pid] == OWN_SUCCESS:
            return
        self.known[pid] = code
        row = self.row_of.get(pid)
        if row is not None:
            self.rows.code[row] = code

    def observe_own(self, a: int, b: int, result: int) -> None:
        self._learn(a, b, FAILURE if result == FAILED else OWN_SUCCESS)

    def observe_received(self, memories: Sequence[Memory]) -> None:
        keep_results = self.choices.received == "item"
        for a, b, r in memories:
            if r == FAILED:
                self._learn(a, b, FAILURE)
            elif keep_results:
                self._learn(a, b, r)

    # -- values ----------------------------------------------------------------------------

    def _values(
        self,
        ps: np.ndarray,
        expect: np.ndarray,
        rho: np.ndarray,
        t: np.ndarray,
        t_owned: np.ndarray,
        code: np.ndarray,
    ) -> np.ndarray:
        """Empowerment of pairs from their prior summaries and what the agent knows."""
        gain = expect + t + rho * self.u_sum
        if self.choices.owned == "renormalise":
            gain /= np.maximum(1.0 - t_owned - rho * self.n_owned, 1e-9)
        # The mean-field part can push a sum a hair below 0; empowerment is never negative.
        values = ps * np.maximum(gain, 0.0)
        known = code != UNKNOWN
        if known.any():
            result = np.maximum(code[known], 0)
            worth = np.where(code[known] >= 0, self.item[result] * ~self.owned[result], 0.0)
            values[known] = worth
        return values

    def _social_pairs(self, extra: list[int]) -> np.ndarray:
        """Pair ids of the pairs that need a social element the agent does not own."""
        pool = np.asarray(self.inventory + extra, dtype=np.intp)
        m = len(self.inventory)
        firsts = [np.full(m + j + 1, x, dtype=np.intp) for j, x in enumerate(extra)]
        seconds = [pool[: m + j + 1] for j in range(len(extra))]
        pid: np.ndarray = self.tables.pair_id[np.concatenate(firsts), np.concatenate(seconds)]
        return pid

    def candidate_values(
        self, social: Sequence[int]
    ) -> tuple[CandidatePairs, np.ndarray, np.ndarray]:
        """Every candidate pair, its empowerment and its knowledge code."""
        t, rows = self.tables, self.rows
        n = rows.size
        values = self._values(
            rows.ps[:n],
            rows.expect[:n],
            rows.rho[:n],
            rows.t[:n],
            rows.t_owned[:n],
            rows.code[:n],
        )
        lo, hi, code = rows.lo[:n], rows.hi[:n], rows.code[:n]
        if not social:
            return CandidatePairs(lo, hi, np.zeros(n, dtype=bool)), values, code
        in_social = np.zeros(t.n, dtype=bool)
        in_social[list(social)] = True
        flags = in_social[lo] | in_social[hi]
        extra = [e for e in dict.fromkeys(social) if not self.owned[e]]
        if not extra:
            return CandidatePairs(lo, hi, flags), values, code
        pid = self._social_pairs(extra)
        rho = t.resid[pid]
        top = t.top_idx[pid]
        dtop = t.top_p[pid] - rho[:, None]
        s_code = self.known[pid]
        s_values = self._values(
            t.p_success[pid],
            t.expect[pid],
            rho,
            (dtop * self.u[top]).sum(axis=1),
            (dtop * self.owned[top]).sum(axis=1),
            s_code,
        )
        lo_all = np.concatenate([lo, t.pair_lo[pid]])
        hi_all = np.concatenate([hi, t.pair_hi[pid]])
        pairs = CandidatePairs(lo_all, hi_all, np.concatenate([flags, np.ones(pid.size, bool)]))
        return pairs, np.concatenate([values, s_values]), np.concatenate([code, s_code])

    # -- choice ----------------------------------------------------------------------------

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        if self.noise is None:
            self._start(rng)
        for e in state.inventory[len(self.inventory) :]:
            self._gain(e)
        pairs, values, code = self.candidate_values(social)
        allowed = values > ZERO
        if not allowed.any():
            self.fallbacks += 1
            if self.choices.fallback == "untried":
                allowed = code == UNKNOWN
        options = choose_biased(pairs, allowed, self.p_social, rng)
        self.choices_made += 1
        k = int(options[self._softmax_pick(values[options], rng)])
        return int(pairs.lo[k]), int(pairs.hi[k])

    def _softmax_pick(self, values: np.ndarray, rng: np.random.Generator) -> int:
        if values.size == 1:
            return 0
        if not (values > ZERO).any():
            return int(rng.integers(values.size))
        p = softmax_probabilities(values, self.beta, self.choices.zscore)
        return min(int(np.searchsorted(np.cumsum(p), rng.random(), side="right")), p.size - 1)

    def stats(self) -> dict[str, float]:
        return {"empowerment_fallbacks": float(self.fallbacks)}
