"""Empowerment agents (SPEC §2, after Brändle et al. 2023).

An agent values a candidate pair by ``Emp(a, b) = P(success | a, b) · Σ_r P(r | a, b) ·
EmpItem(r)``, with ``EmpItem(r)`` = 0 if it owns ``r``, else the true number of distinct
elements ``r`` helps produce in the game being played, times a noise factor ~ N(1, 0.1)
drawn once per agent and element. It discards pairs of zero empowerment and picks by a
softmax with temperature beta (see :class:`~tpdisc.agents.empowerment.model.EmpowermentModel` for
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
``docs/empowerment.md`` for the measured error). The per-pair sums are kept for the pairs of
owned elements and updated only when the agent gains an element (one gather over ``k``
entries per new pair, one comparison per cached entry), so a step costs
O(candidates · small constant), independent of n.

A decision reads the candidates worth something from arrays kept between gains (not a scan
of every pair), and over many options weighs only those within ``NEGLIGIBLE`` softmax
temperatures of the best; each option left out has under 1e-17 of the probability. How
many that leaves out depends on the spread of the values: in the paired baseline's 1000-step
games, hardly any (2,147 weights per draw for 2,158 entries, measured 2026-11-24).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from tpdisc.agents.base import FAILED, Agent, AgentContext, AgentParams, AgentState, Memory
from tpdisc.agents.candidates import CandidatePairs, choose_biased
from tpdisc.agents.empowerment.kernels import (
    FAILURE,
    KEEP_ALWAYS,
    KEEP_NEVER,
    KEEP_STEP,
    LEARN_PRIOR,
    LEARN_RESULT,
    LEARN_TRIED,
    OWN_SUCCESS,
    UNKNOWN,
    ZERO,
)
from tpdisc.agents.empowerment.model import EmpowermentModel
from tpdisc.agents.empowerment.options import LiveOptions, Rows, softmax_draw
from tpdisc.agents.empowerment.tables import EmpowermentTables, shared_tables
from tpdisc.domain.recipes import Pair, RecipeGraph
from tpdisc.random_draws import integer_below

# What a received success teaches, by the model's ``received`` (the kernels' codes).
RECEIVED_CODES = {"item": LEARN_RESULT, "prior": LEARN_PRIOR, "zero": LEARN_TRIED}
# How long received knowledge lasts, by the model's ``failures`` and ``remember``.
KEEP_CODES = {"always": KEEP_ALWAYS, "step": KEEP_STEP, "never": KEEP_NEVER}


def tables_of(ctx: AgentContext) -> EmpowermentTables:
    """The tables of a simulation's agents, from this process's memo."""
    source = ctx.source_graph if ctx.source_graph is not None else ctx.graph
    # prepare() verified the file where the results are reported; a worker that loads it
    # again relies on the archive's own CRC-32s (see load_prior).
    prior = ctx.params.empowerment.prior
    return shared_tables(source, ctx.graph, prior.backend, prior.seed, verify=False)


class EmpowermentAgent(Agent):
    """Chooses pairs by softmax over their empowerment, with the social bias of SPEC §2.

    This class is the numpy reference: readable, and what the compiled kernels are held
    to. :func:`~tpdisc.agents.empowerment.compiled_agent.make_agent` picks it or
    :class:`~tpdisc.agents.empowerment.compiled_agent.CompiledEmpowermentAgent`, which
    makes the same choices with the kernels, once per agent.
    """

    kind = "empowerment"
    compiled: ClassVar[bool] = False

    def __init__(
        self,
        tables: EmpowermentTables,
        model: EmpowermentModel | None = None,
        p_social: float = 0.5,
    ) -> None:
        self.tables = tables
        self.choices = model or EmpowermentModel()
        self._prior_tables = (
            tables.p_success_base_rate if self.choices.success == "base-rate" else tables.p_success,
            tables.resid,
            tables.expect,
            tables.top_idx,
            tables.top_p,
        )
        self.beta = self.choices.beta
        self.p_social = p_social
        self.renormalise = self.choices.owned == "renormalise"
        n_pairs = tables.pair_id.size
        # Both start at 0 (UNKNOWN; no row): zeroed memory costs nothing until written,
        # where filling these 1.5 MB per agent was a sixth of a 150-step simulation.
        self.known = np.zeros(n_pairs, dtype=np.int16)
        self.row_of = np.zeros(n_pairs, dtype=np.int32)  # 1 + the pair's row
        self._known, self._row_of = self.known.data, self.row_of.data  # memoryviews
        # rows frozen as a received success, by result: worth 0 once the result is owned
        self._received_rows: dict[int, list[int]] = {}
        self.rows = Rows(tables.top_idx.shape[1], tables.top_idx.dtype)
        self.live = LiveOptions()
        self._social_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # until a gain
        self.inventory: list[int] = []
        self.inventory_ids = np.empty(tables.n, dtype=np.intp)
        self.inventory_slot = np.empty(tables.n, dtype=np.intp)  # an owned element's place
        self._no_social = np.zeros(tables.n * (tables.n + 1) // 2, dtype=bool)
        self.noise: np.ndarray | None = None
        self.fallbacks = 0
        self._received = RECEIVED_CODES[self.choices.received]
        self._keep = (KEEP_CODES[self.choices.failures], KEEP_CODES[self.choices.remember])
        # received knowledge for the next choice only (failures=step, remember=step): pair
        # ids and codes, as many as ``_n_pending``; then what undoes it while it is known
        self._pending = np.empty((20, 2), dtype=np.int64)
        self._n_pending = 0
        self._undo: list[tuple[int, int, int, bool, float, float]] = []
        # owns=usable, during a decision: what counts as owned when an outcome is valued
        # (the inventory and this step's social elements)
        self._usable_now: np.ndarray | None = None

    @classmethod
    def from_context(cls, ctx: AgentContext) -> EmpowermentAgent:
        return cls(tables_of(ctx), ctx.params.empowerment, ctx.params.p_social)

    @classmethod
    def prepare(cls, graph: RecipeGraph, source: RecipeGraph | None, params: AgentParams) -> None:
        """Build (with progress) or load the prior before simulations start."""
        prior = params.empowerment.prior
        shared_tables(source if source is not None else graph, graph, prior.backend, prior.seed)

    @classmethod
    def describe_model(
        cls, graph: RecipeGraph, source: RecipeGraph | None, params: AgentParams
    ) -> dict[str, Any]:
        """The prior's fingerprint, for results (after :meth:`prepare`, a memo lookup)."""
        source = source if source is not None else graph
        model = params.empowerment
        tables = shared_tables(source, graph, model.prior.backend, model.prior.seed)
        return {"model": model.name, "beta": model.beta, "prior": tables.fingerprint}

    # -- what the agent owns -----------------------------------------------------------------

    def _start(self, rng: np.random.Generator) -> None:
        t = self.tables
        sd = self.choices.noise_sd
        if self.choices.noise == "pair":
            self.noise = np.ones(t.n)
            pair_noise = np.maximum(1.0 + sd * rng.standard_normal(t.p_success.size), 0.0)
            p_success = self._prior_tables[0] * pair_noise
            self._prior_tables = (p_success, *self._prior_tables[1:])
        else:
            self.noise = 1.0 + sd * rng.standard_normal(t.n)
        self.item = t.children_played * self.noise  # EmpItem of an element not owned
        # what a known received success is worth, by its result
        w = self.choices.received_worth
        self.known_item = self.item if w == 1.0 else self.item * w
        self.owned = np.zeros(t.n, dtype=bool)
        self.owned_weight = np.zeros(t.n)  # owned as 0/1 floats: summed with probabilities
        self._item, self._owned = self.known_item.data, self.owned.data
        # u = EmpItem - children of the prior's graph (ownership subtracted as it comes)
        self.u = self.item - t.children_prior
        self.u_sum = float(self.u.sum())
        self.n_owned = 0

    def _gain(self, e: int) -> None:
        rows, n = self.rows, self.rows.size
        worth = float(self.item[e])
        if self.choices.owned != "ignore":
            if n:
                # A flat scan of the small-integer top table (~10x cheaper than np.nonzero
                # on the 2-D mask); ``dtop`` has the same shape, so the same flat positions.
                hit = np.flatnonzero(rows.top[:n] == e)
                if hit.size:
                    hit_row = hit // rows.k
                    live = ~rows.frozen.take(hit_row)
                    hit, hit_row = hit[live], hit_row[live]
                    d = rows.dtop.reshape(-1).take(hit)
                    rows.a[hit_row] -= rows.ps.take(hit_row) * d * worth
                    rows.c[hit_row] += d
            self.u[e] -= worth
            self.u_sum -= worth
            self.n_owned += 1
        # received successes whose result the agent now owns are worth nothing (a row frozen
        # since may have learnt another code: an own attempt, another result of the pair)
        for r in self._received_rows.pop(e, ()):
            if rows.code[r] == e + 1:
                rows.a[r] = 0.0
        self.owned[e] = True
        self.owned_weight[e] = 1.0
        self.inventory_ids[len(self.inventory)] = e
        self.inventory_slot[e] = len(self.inventory)
        self.inventory.append(e)
        self._add_rows(e, self.inventory_ids[: len(self.inventory)])
        # Σu and n_owned changed: every lasting candidate's value moves (once per gain;
        # other steps only touch the rows whose outcome became known). Frozen rows keep
        # their value, ``a``, whatever their other terms hold.
        n = rows.size
        self.live.dirty = True
        self._social_cache.clear()
        value = self._values(rows.a[:n], rows.b[:n], rows.c[:n], rows.d[:n], out=rows.value[:n])
        np.copyto(value, rows.a[:n], where=rows.frozen[:n])

    def _add_rows(self, e: int, partners: np.ndarray) -> None:
        t, rows = self.tables, self.rows
        m = partners.size
        rows.reserve(m)
        s = slice(rows.size, rows.size + m)
        pid = t.pair_id[e, partners]
        np.minimum(partners, e, out=rows.lo[s])
        np.maximum(partners, e, out=rows.hi[s])
        a, b, c, d, ps, top, dtop = self._prior_terms(pid)
        code = self.known.take(pid)
        rows.ps[s], rows.top[s], rows.dtop[s], rows.code[s] = ps, top, dtop, code
        frozen = np.not_equal(code, UNKNOWN, out=rows.frozen[s])
        if frozen.any():
            a[frozen] = self._known_values(code[frozen])
            for r in np.flatnonzero(code > 0).tolist():
                self._received_rows.setdefault(int(code[r]) - 1, []).append(rows.size + r)
        rows.a[s], rows.b[s], rows.c[s], rows.d[s] = a, b, c, d
        self.row_of[pid] = np.arange(rows.size + 1, rows.size + m + 1, dtype=np.int32)
        rows.size += m

    def _prior_terms(self, pid: np.ndarray) -> tuple[np.ndarray, ...]:
        """The (a, b, c, d) terms of pairs ``pid`` (see
        :class:`~tpdisc.agents.empowerment.options.Rows`), and what builds them."""
        t = self.tables
        ps = self._prior_tables[0].take(pid)
        rho = t.resid.take(pid)
        # take: the same gathers as indexing, several times faster for rows of a 2-D table
        # or with a 2-D index
        top = t.top_idx.take(pid, axis=0)
        dtop = t.top_p.take(pid, axis=0).astype(np.float64)
        dtop -= rho[:, None]
        # einsum: the row sums of a product without the product, about twice as fast here
        a = ps * (t.expect.take(pid) + np.einsum("ij,ij->i", dtop, self.u.take(top)))
        b = ps * rho
        if not self.renormalise:  # c and d are read only when renormalising
            return a, b, b, b, ps, top, dtop
        c = np.einsum("ij,ij->i", dtop, self.owned_weight.take(top))
        return a, b, c, rho, ps, top, dtop

    def _known_values(self, code: np.ndarray, owned: np.ndarray | None = None) -> np.ndarray:
        """Value of pairs with a known outcome: a received success is worth EmpItem of its
        result while the agent lacks it (``owned``: what counts as owned, by default the
        inventory); failures and own successes are worth nothing."""
        owned = self.owned if owned is None else owned
        result = np.maximum(code - 1, 0)
        value: np.ndarray = np.where(code > 0, self.known_item[result] * ~owned[result], 0.0)
        return value

    # -- knowledge ---------------------------------------------------------------------------
    # Knowledge arrives a pair at a time (about five memories per agent-step), so this is
    # scalar work. ``known`` and ``row_of`` are read and written through memoryviews: a
    # Python-int access costs a third of a numpy scalar access. A frozen row keeps its
    # value in ``a`` and ``value``; its other terms are never read (see ``_gain``).

    def _freeze(self, r: int, code: int, value: float) -> None:
        rs = self.rows
        rs.code[r], rs.frozen[r] = code, True
        rs.a[r] = rs.value[r] = value
        self.live.update(r, value)
        if code > 0:
            self._received_rows.setdefault(code - 1, []).append(r)

    def _learn(self, pid: int, code: int) -> None:
        known = self._known
        if known[pid] == OWN_SUCCESS:
            return
        known[pid] = code
        r = self._row_of[pid] - 1
        if r >= 0:
            value = self._item[code - 1] * (not self._owned[code - 1]) if code > 0 else 0.0
            self._freeze(r, code, value)

    def _pair_id(self, a: int, b: int) -> int:
        """The pair_id table's entry for ``a``, ``b``, without numpy."""
        n = self.tables.n
        lo, hi = (a, b) if a <= b else (b, a)
        return lo * n - lo * (lo - 1) // 2 + hi - lo

    def _know_for_now(self) -> None:
        """Learn what is known for this decision only (``_pending``), where the pair's
        outcome is not known yet, keeping in ``_undo`` what :meth:`_forget` restores."""
        known, rows, live = self._known, self.rows, self.live
        undo = self._undo = []
        for pid, code in self._pending[: self._n_pending].tolist():
            if known[pid] != UNKNOWN:
                continue
            known[pid] = code
            r = self._row_of[pid] - 1
            if r < 0:
                undo.append((pid, r, 0, False, 0.0, 0.0))
                continue
            undo.append(
                (
                    pid,
                    r,
                    int(rows.code[r]),
                    bool(rows.frozen[r]),
                    float(rows.a[r]),
                    float(rows.value[r]),
                )
            )
            value = self._item[code - 1] * (not self._owned[code - 1]) if code > 0 else 0.0
            rows.code[r], rows.frozen[r] = code, True
            rows.a[r] = rows.value[r] = value
            live.update(r, value)
        self._n_pending = 0

    def _usable_results_worthless(self, social: Sequence[int]) -> list[tuple[int, float]]:
        """Lasting candidates known to make a social element are worth 0 this step (the
        element is usable already); returns what undoes it."""
        usable = self.owned.copy()
        usable[np.asarray(social, dtype=np.intp)] = True
        self._usable_now = usable
        rows, n = self.rows, self.rows.size
        code = rows.code[:n]
        making = (code > 0) & usable.take(np.maximum(code, 1) - 1) & (rows.value[:n] > ZERO)
        saved = []
        for r in np.flatnonzero(making).tolist():
            saved.append((r, float(rows.value[r])))
            rows.a[r] = rows.value[r] = 0.0
            self.live.update(r, 0.0)
        return saved

    def _restore(self, saved: list[tuple[int, float]]) -> None:
        rows = self.rows
        for r, value in reversed(saved):
            rows.a[r] = rows.value[r] = value
            self.live.update(r, value)
        self._usable_now = None

    def _forget(self) -> None:
        """Undo :meth:`_know_for_now`, last entry first."""
        rows = self.rows
        for pid, r, code, frozen, a, value in reversed(self._undo):
            self._known[pid] = UNKNOWN
            if r >= 0:
                rows.code[r], rows.frozen[r], rows.a[r], rows.value[r] = code, frozen, a, value
                self.live.update(r, value)

    def observe_own(self, a: int, b: int, result: int) -> None:
        # Own attempts are always worth 0 afterwards: a failure, or a result now owned.
        n = self.tables.n
        lo, hi = (a, b) if a <= b else (b, a)
        # _pair_id, inlined: this runs once per agent-step
        pid = lo * n - lo * (lo - 1) // 2 + hi - lo
        code = FAILURE if result == FAILED else OWN_SUCCESS
        self._known[pid] = code
        r = self._row_of[pid] - 1
        if r >= 0:
            self._freeze(r, code, 0.0)

    def observe_received(self, memories: Sequence[Memory]) -> None:
        """What received memories teach: a failure, for as long as ``failures`` says; a
        success, what ``received`` says, for as long as ``remember`` says. What is known
        for the next choice only waits in ``_pending``."""
        keep_failures, keep_successes = self._keep
        received = self._received
        self._reserve_pending(len(memories))
        for a, b, r in memories:
            if r == FAILED:
                code, lasts = FAILURE, keep_failures
            elif received == LEARN_PRIOR:
                continue  # received successes are left to the prior
            else:
                code = FAILURE if received == LEARN_TRIED else r + 1
                lasts = keep_successes
            if lasts == KEEP_NEVER:
                continue
            pid = self._pair_id(a, b)
            if lasts == KEEP_STEP:
                self._pending[self._n_pending] = pid, code
                self._n_pending += 1
            else:
                self._learn(pid, code)

    def _reserve_pending(self, more: int) -> None:
        need = self._n_pending + more
        if need > self._pending.shape[0]:
            grown = np.empty((max(need, 2 * self._pending.shape[0]), 2), dtype=np.int64)
            grown[: self._n_pending] = self._pending[: self._n_pending]
            self._pending = grown

    # -- values ------------------------------------------------------------------------------

    def _values(
        self,
        a: np.ndarray,
        b: np.ndarray,
        c: np.ndarray,
        d: np.ndarray,
        out: np.ndarray | None = None,
        u_sum: float | None = None,
        n_owned: int | None = None,
    ) -> np.ndarray:
        values = np.multiply(b, self.u_sum if u_sum is None else u_sum, out=out)
        values += a
        if self.renormalise:
            den = d * -float(self.n_owned if n_owned is None else n_owned)
            den -= c
            den += 1.0
            np.maximum(den, 1e-9, out=den)
            values /= den
        return values

    def _social_pairs(self, extra: np.ndarray) -> np.ndarray:
        """Pair ids of the pairs that need a social element the agent does not own: each
        extra element with the inventory, the extra elements before it and itself (the
        upper-triangle order of the pool ``inventory + extra``)."""
        m = len(self.inventory)
        pool = np.concatenate([self.inventory_ids[:m], extra])
        pair_id = self.tables.pair_id
        if extra.size == 1:  # the common case: one gather
            pid: np.ndarray = pair_id[extra[0], pool]
            return pid
        return np.concatenate([pair_id[e, pool[: m + i + 1]] for i, e in enumerate(extra)])

    def _social_prior(self, extra: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pair ids of the pairs needing the social elements ``extra`` (see
        :meth:`_social_pairs`) and their empowerment before what the agent knows of them.

        With ``owns=usable`` the social elements count as owned in these values: usable
        this step, making one of them is worth nothing now (the terms the agent keeps are
        those of what it owns, and each pair with one of ``extra`` among its top results is
        corrected as :func:`~tpdisc.agents.empowerment.kernels._usable_terms` says).

        For one social element this is kept until the next gain changes it: the same item
        often comes back in the steps between two gains, and its pairs with the inventory
        are a late game's largest gather.
        """
        single = int(extra[0]) if extra.size == 1 else None
        cached = self._social_cache.get(single) if single is not None else None
        if cached is not None:
            return cached
        prior = self._social_prior_values(extra, self.choices.owns == "usable")
        if single is not None:
            self._social_cache[single] = prior
        return prior

    def _social_prior_values(
        self, extra: np.ndarray, usable: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        pid = self._social_pairs(extra)
        a, b, c, d, ps, top, dtop = self._prior_terms(pid)
        u_sum, n_owned = self.u_sum, self.n_owned
        if usable:
            a, c = self._usable_terms(extra, a, c, ps, top, dtop)
            u_sum -= float(self.item[extra].sum())
            n_owned += extra.size
        return pid, self._values(a, b, c, d, u_sum=u_sum, n_owned=n_owned)

    def _usable_terms(
        self,
        extra: np.ndarray,
        a: np.ndarray,
        c: np.ndarray,
        ps: np.ndarray,
        top: np.ndarray,
        dtop: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The kernels' ``_usable_terms`` for every pair: the (a, c) terms with the elements
        ``extra`` counted as owned, summed in the same order (few pairs have one of them
        among their top results: a scalar loop over those)."""
        mask = np.zeros(self.tables.n, dtype=bool)
        mask[extra] = True
        hits = mask.take(top)
        a, c = a.copy(), c.copy()  # c may be the same array as b
        for i in np.flatnonzero(hits.any(axis=1)).tolist():
            ca = cc = 0.0
            for j in np.flatnonzero(hits[i]).tolist():
                dt = float(dtop[i, j])
                ca += dt * float(self.item[top[i, j]])
                cc += dt
            a[i] = a[i] - ps[i] * ca
            if self.renormalise:
                c[i] = c[i] + cc
        return a, c

    def _social_values(self, pid: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Empowerment of social pairs ``pid`` worth ``prior`` before what the agent knows of
        them, and whether each outcome is known."""
        values = prior.copy()
        code = self.known.take(pid)
        known = code != UNKNOWN
        if known.any():  # mostly failures: worth 0, as _known_values would say
            values[known] = 0.0
            success = code > 0
            if success.any():
                values[success] = self._known_values(code[success], self._usable_now)
        return values, known

    def _social_options(self, pid: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions among the social pairs ``pid`` of those worth something, and their
        values (see :meth:`_social_values`)."""
        values = self._social_values(pid, prior)[0]
        options = np.flatnonzero(values > ZERO)
        return options, values.take(options)

    def candidate_values(
        self, social: Sequence[int]
    ) -> tuple[CandidatePairs, np.ndarray, np.ndarray]:
        """Every candidate pair, its empowerment, and whether its outcome is unknown.

        The lasting candidates come first, in row order, then the pairs needing a social
        element (see :meth:`_social_pairs`); choices index into this order.
        """
        t, rows = self.tables, self.rows
        n = rows.size
        values = rows.value[:n]  # a view: read only
        lo, hi, untried = rows.lo[:n], rows.hi[:n], ~rows.frozen[:n]
        if not social:
            return CandidatePairs(lo, hi, self._no_social[:n]), values, untried
        soc = np.asarray(social, dtype=np.intp)  # distinct, as the game delivers them
        in_social = np.zeros(t.n, dtype=bool)
        in_social[soc] = True
        flags = in_social[lo] | in_social[hi]
        extra = soc[~self.owned[soc]]
        if not extra.size:
            return CandidatePairs(lo, hi, flags), values, untried
        pid, prior = self._social_prior(extra)
        s_values, s_known = self._social_values(pid, prior)
        pairs = CandidatePairs(
            np.concatenate([lo, t.pair_lo[pid]]),
            np.concatenate([hi, t.pair_hi[pid]]),
            np.concatenate([flags, np.ones(pid.size, dtype=bool)]),
        )
        return pairs, np.concatenate([values, s_values]), np.concatenate([untried, ~s_known])

    # -- choice ------------------------------------------------------------------------------

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """Draw this step's pair (see :meth:`_choose`). What holds for one decision only is
        applied around the draw and undone after it: received failures and successes known
        for one step (``failures=step``, ``remember=step``) and, with ``owns=usable``, known
        successes whose result is usable now, worth nothing this step."""
        # Known successes to value with the social elements as owned: only where a received
        # success is known at all (received=item); the social pairs' prior values count
        # them as owned whenever owns=usable (see _social_prior).
        usable_now = (
            self.choices.owns == "usable" and self.choices.received == "item" and len(social) > 0
        )
        if not self._n_pending and not usable_now:
            return self._choose(state, social, rng)
        if self.noise is None:
            self._start(rng)
        if len(state.inventory) > len(self.inventory):
            for e in state.inventory[len(self.inventory) :]:
                self._gain(e)
        self._know_for_now()
        zeroed = self._usable_results_worthless(social) if usable_now else []
        try:
            return self._choose(state, social, rng)
        finally:
            self._restore(zeroed)
            self._forget()

    def _choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """Draw a pair: the social bias of :func:`choose_biased`, then a softmax over the
        options' empowerment.

        The same draw as building every candidate (:meth:`candidate_values`) and calling
        :func:`choose_biased`, without materialising what the draw does not read: the
        options are the positive rows and social pairs, in candidate order, and the pairs
        using a social item are looked for only when the bias asks for them.
        """
        self.steered = False
        if self.noise is None:
            self._start(rng)
        if len(state.inventory) > len(self.inventory):
            for e in state.inventory[len(self.inventory) :]:
                self._gain(e)
        rows, live = self.rows, self.live
        if live.dirty:
            live.rebuild(rows.value[: rows.size], self.compiled)
        x, count, total, squares = live.x, live.count, live.total, live.squares
        if not social:
            if not count:
                return self._choose_worthless(social, rng)
            return self._row_pair(
                int(live.rows[self._softmax_draw(x, count, total, squares, None, rng)])
            )
        mine, extra = self._split_social(social)
        s_x = None
        if extra.size:
            pid, prior = self._social_prior(extra)
            s_options, s_values = self._social_options(pid, prior)
            if s_options.size:
                s_x = s_values
        if not count and s_x is None:
            return self._choose_worthless(social, rng)
        index = live.rows
        # Some candidate always uses a social item (at least the self-pair of each), so
        # choose_biased always draws here.
        if rng.random() < self.p_social:
            if self.choices.bias == "unowned":
                mine = mine[:0]
            near, near_x, near_total = self._near_social(mine)
            if near.size or s_x is not None:
                index, x = near, near_x
                count, total, squares = near.size, near_total, float(x @ x)
                self.steered = True
        j = self._softmax_draw(x, count, total, squares, s_x, rng)
        if j < x.size:
            return self._row_pair(int(index[j]))
        p = int(pid[s_options[j - x.size]])
        return int(self.tables.pair_lo[p]), int(self.tables.pair_hi[p])

    def _split_social(self, social: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The social elements the agent owns, and those it does not."""
        soc = np.asarray(social, dtype=np.intp)
        owned = self.owned[soc]
        return soc[owned], soc[~owned]

    def _near_social(self, owned_social: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """The rows worth something that use one of ``owned_social``, in row order, their
        values and the values' sum."""
        rows, n = self.rows, self.rows.size
        if not owned_social.size:
            near = owned_social[:0]
        else:
            in_social = np.zeros(self.tables.n, dtype=bool)
            in_social[owned_social] = True
            mask = in_social.take(rows.lo[:n]) | in_social.take(rows.hi[:n])
            mask &= rows.value[:n] > ZERO
            near = np.flatnonzero(mask)
        x = rows.value.take(near)
        return near, x, float(x.sum())

    def _row_pair(self, r: int) -> Pair:
        return int(self.rows.lo[r]), int(self.rows.hi[r])

    def _choose_worthless(self, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """Every candidate is worth 0 (rare): a uniform draw, over the whole candidate set."""
        self.fallbacks += 1
        pairs, values, untried = self.candidate_values(social)
        allowed = untried if self.choices.fallback == "untried" else values > ZERO
        if social:
            options = choose_biased(pairs, allowed, self.p_social, rng)
        else:  # choose_biased without social items, minus its checks
            options = np.flatnonzero(allowed)
            if not options.size:
                options = np.arange(values.size)
        k = int(options[integer_below(rng, options.size)])
        return int(pairs.lo[k]), int(pairs.hi[k])

    def _softmax_draw(
        self,
        x: np.ndarray,
        count: int,
        total: float,
        squares: float,
        extra: np.ndarray | None,
        rng: np.random.Generator,
    ) -> int:
        """:func:`~tpdisc.agents.empowerment.options.softmax_draw` with this agent's
        temperature."""
        return softmax_draw(x, count, total, squares, extra, rng, self.beta, self.choices.zscore)

    def stats(self) -> dict[str, float]:
        return {"empowerment_fallbacks": float(self.fallbacks)}
