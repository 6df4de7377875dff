"""The empowerment agent on the compiled kernels.

:class:`CompiledEmpowermentAgent` is :class:`~tpdisc.agents.empowerment.agent.EmpowermentAgent`
with each hot step done by one kernel of :mod:`tpdisc.agents.empowerment.kernels` instead
of numpy: the same choices, bit for bit (``tests/agents/test_compiled.py``), several times
faster. :func:`make_agent` picks the class once per agent, so neither path branches on the
other; simulations reach it through :meth:`CompiledEmpowermentAgent.from_context`, the
``empowerment`` agent type's entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from tpdisc.agents.base import AgentContext, Memory
from tpdisc.agents.compiled import use_kernels
from tpdisc.agents.empowerment import kernels
from tpdisc.agents.empowerment.agent import EmpowermentAgent, tables_of
from tpdisc.agents.empowerment.model import EmpowermentModel
from tpdisc.agents.empowerment.options import Scratch, SocialPairs, softmax_draw_compiled
from tpdisc.agents.empowerment.tables import EmpowermentTables

Arrays4 = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# What the learning kernels read and change (CompiledEmpowermentAgent._knowledge).
Knowledge = tuple[Arrays4, Arrays4, tuple[np.ndarray, np.ndarray], int, float, float, bool]


def make_agent(
    tables: EmpowermentTables,
    model: EmpowermentModel | None = None,
    p_social: float = 0.5,
    reference: bool | None = None,
) -> EmpowermentAgent:
    """An agent on the compiled kernels, or on the numpy reference with ``reference``
    (default: ``TPDISC_REFERENCE``, else the kernels); both make the same choices."""
    if use_kernels(True) if reference is None else not reference:
        return CompiledEmpowermentAgent(tables, model, p_social)
    return EmpowermentAgent(tables, model, p_social)


class CompiledEmpowermentAgent(EmpowermentAgent):
    """An empowerment agent whose hot steps are compiled kernels."""

    compiled: ClassVar[bool] = True

    def __init__(
        self,
        tables: EmpowermentTables,
        model: EmpowermentModel | None = None,
        p_social: float = 0.5,
    ) -> None:
        super().__init__(tables, model, p_social)
        # what the kernels fill for one decision
        self._draw_room, self._near_room, self._social_room = Scratch(), Scratch(), Scratch()
        self._social_pairs_kept = SocialPairs(
            tables.n, tables.top_idx.shape[1], tables.top_idx.dtype
        )
        self._usable_mask = np.zeros(tables.n, dtype=bool)  # the kernels' view of owns=usable
        # what _know_for_now records for _forget: (pair id, row, code, frozen), (a, value)
        self._undo_ids = np.empty((20, 4), dtype=np.int64)
        self._undo_values = np.empty((20, 2))
        self._n_undo = 0

    @classmethod
    def from_context(cls, ctx: AgentContext) -> EmpowermentAgent:
        """The agent a simulation gets: compiled, unless ``TPDISC_REFERENCE`` asks for the
        numpy reference (:func:`make_agent`)."""
        return make_agent(tables_of(ctx), ctx.params.empowerment, ctx.params.p_social)

    def _gain(self, e: int) -> None:
        """:meth:`EmpowermentAgent._gain` in one kernel call; rows frozen as a received
        success are found by their code instead of ``_received_rows``."""
        rows, n = self.rows, self.rows.size
        worth = float(self.item[e])
        scan = self.choices.owned != "ignore"
        if scan:
            self.u[e] -= worth
            self.u_sum -= worth
            self.n_owned += 1
        self.owned[e] = True
        self.owned_weight[e] = 1.0
        m = len(self.inventory) + 1
        self.inventory_ids[m - 1] = e
        self.inventory_slot[e] = m - 1
        self.inventory.append(e)
        rows.reserve(m)
        kernels.gain(
            e,
            worth,
            scan,
            self.inventory_ids[:m],
            self.tables.pair_id,
            self._prior_tables,
            (self.u, self.owned_weight, self.known_item, self.owned, self.known, self.row_of),
            self.u_sum,
            self.n_owned,
            self.renormalise,
            n,
            (
                rows.lo,
                rows.hi,
                rows.ps,
                rows.a,
                rows.b,
                rows.c,
                rows.d,
                rows.value,
                rows.code,
                rows.frozen,
            ),
            rows.top,
            rows.dtop,
        )
        rows.size = n + m
        self.live.dirty = True
        self._social_cache.clear()
        self._social_pairs_kept.forget(e)

    def _knowledge(self) -> Knowledge:
        """What the learning kernels read and change: (known, row_of, item, owned), the
        rows' (code, frozen, a, value), the live options' (position, x), then their count,
        sum, sum of squares and whether they need a rebuild."""
        rows, live = self.rows, self.live
        return (
            (self.known, self.row_of, self.known_item, self.owned),
            (rows.code, rows.frozen, rows.a, rows.value),
            (live.position, live.x),
            live.count,
            live.total,
            live.squares,
            live.dirty,
        )

    def observe_received(self, memories: Sequence[Memory]) -> None:
        live = self.live
        self._reserve_pending(len(memories))
        live.count, live.total, live.squares, live.dirty, n_pending = kernels.learn(
            np.array(memories, dtype=np.int64).reshape(-1, 3),
            self._received,
            self._keep,
            self.tables.pair_id,
            *self._knowledge(),
            self._pending[self._n_pending :],
        )
        self._n_pending += n_pending

    def _know_for_now(self) -> None:
        live, n = self.live, self._n_pending
        if not n:  # nothing received to know for now: no kernel call (most choices)
            self._n_undo = 0
            return
        if n > self._undo_ids.shape[0]:
            self._undo_ids = np.empty((n, 4), dtype=np.int64)
            self._undo_values = np.empty((n, 2))
        live.count, live.total, live.squares, live.dirty, self._n_undo = kernels.know_for_now(
            self._pending, n, *self._knowledge(), (self._undo_ids, self._undo_values)
        )
        self._n_pending = 0

    def _forget(self) -> None:
        if not self._n_undo:  # every pair it was told of was known already
            return
        live = self.live
        live.count, live.total, live.squares, live.dirty = kernels.forget(
            (self._undo_ids, self._undo_values), self._n_undo, *self._knowledge()
        )

    def _social_prior_values(
        self, extra: np.ndarray, usable: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        kept, m = self._social_pairs_kept, len(self.inventory)
        kept.reserve(extra.size, m)
        pid, values, kept.used = kernels.social_prior(
            extra,
            self.inventory_ids[:m],
            self.tables.pair_id,
            self._prior_tables,
            self.u,
            self.owned_weight,
            self.u_sum,
            self.n_owned,
            self.renormalise,
            kept.arrays(),
            kept.used,
            self._usable_mask,
            self.item,
            usable,
        )
        return pid, values

    def _social_options(self, pid: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        room = self._social_room
        room.reserve(pid.size)
        count = kernels.social_options(
            pid,
            prior,
            self.known,
            self.known_item,
            self.owned if self._usable_now is None else self._usable_now,
            room.positions,
            room.values,
        )
        return room.first(count)

    def _split_social(self, social: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        soc = np.array(social, dtype=np.intp)  # a copy: split_social reorders it
        n_mine = kernels.split_social(soc, self.owned)
        return soc[:n_mine], soc[n_mine:]

    def _near_social(self, owned_social: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        room = self._near_room
        room.reserve(self.rows.size)
        count, total = kernels.near_social(
            owned_social,
            self.inventory_slot,
            len(self.inventory),
            self.rows.value,
            room.positions,
            room.values,
        )
        return (*room.first(count), total)

    def _softmax_draw(
        self,
        x: np.ndarray,
        count: int,
        total: float,
        squares: float,
        extra: np.ndarray | None,
        rng: np.random.Generator,
    ) -> int:
        return softmax_draw_compiled(
            x,
            count,
            total,
            squares,
            extra,
            rng,
            self.beta,
            self.choices.zscore,
            self._draw_room,
        )
