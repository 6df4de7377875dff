"""Compiled kernels of the empowerment agents (see :mod:`tpdisc.agents.compiled`).

Each kernel does what a part of :class:`~tpdisc.agents.empowerment.agent.EmpowermentAgent`'s
numpy reference does, on the same arrays, with the same floating-point operations in the
same order, so that both give the same bits. Two of numpy's reductions are rebuilt here for
that: the pairwise sum of ``ndarray.sum`` (:func:`pairwise_sum`) and the two-lane
accumulation of ``np.einsum("ij,ij->i", ...)`` (:func:`_row_dot`, numpy's baseline SSE
loop; no fused multiply-add). ``np.exp`` and ``x @ x`` stay with the callers.

The constants the kernels share with the agent live here: numba freezes globals into the
cached machine code, and its cache notices changes to this file only.
"""

from __future__ import annotations

import numpy as np

from tpdisc.agents.compiled import inline, kernel

# Below this a value counts as zero empowerment: a sum that is 0 in exact arithmetic (no
# result with children left) comes out at ~1e-7 from the prior's float32 summaries, and
# must still be discarded as worthless. Real values are ~1e-2 and more.
ZERO = 1e-6
# The softmax draw leaves out options more than NEGLIGIBLE temperatures below the best: each
# has under e^-40 (4e-18) of the best one's weight, all together under 4e-14 of the
# probability with 10,000 options, so a draw would pick one about once in 10^13 decisions.
# In a late game most options are that far down, and weighing them was most of a decision.
NEGLIGIBLE = 40.0
BAND_MIN = 1024  # below, leaving options out costs more than weighing them
# Codes of what an agent knows about a pair; a code > 0 is 1 + the result of a received
# success. Nothing known is 0, what freshly zeroed memory holds.
UNKNOWN, FAILURE, OWN_SUCCESS = 0, -1, -2
FAILED = -1  # a memory's result on failure (tpdisc.agents.base.FAILED)
UNIFORM, WEIGH = -1, -2  # what prepare_draw leaves to its caller
# What a received success teaches (the empowerment model's ``received``): its result, for a
# certain success worth EmpItem of it; nothing; or that the pair is tried, worth nothing.
LEARN_RESULT, LEARN_PRIOR, LEARN_TRIED = 0, 1, 2
# How long received knowledge lasts (the model's ``failures``, and ``remember`` for
# successes): for good, for the agent's next choice only, or not at all.
KEEP_ALWAYS, KEEP_STEP, KEEP_NEVER = 0, 1, 2


@inline
def _block_sum(a: np.ndarray, start: int, n: int) -> float:
    """numpy's sum of at most 128 values: in order below 8, else eight running sums."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[start + i]
        return res
    r0, r1, r2, r3 = a[start], a[start + 1], a[start + 2], a[start + 3]
    r4, r5, r6, r7 = a[start + 4], a[start + 5], a[start + 6], a[start + 7]
    i = 8
    whole = n - n % 8
    while i < whole:
        s = start + i
        r0 += a[s]
        r1 += a[s + 1]
        r2 += a[s + 2]
        r3 += a[s + 3]
        r4 += a[s + 4]
        r5 += a[s + 5]
        r6 += a[s + 6]
        r7 += a[s + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@inline
def _left_size(n: int) -> int:
    half = n // 2
    return half - half % 8


@inline
def pairwise_sum(a: np.ndarray, start: int, n: int) -> float:
    """``a[start:start + n].sum()`` as numpy adds it: blocks of up to 128 values (see
    :func:`_block_sum`), the two halves of a longer run summed apart, then added.

    numpy recurses; this walks the same tree with a stack, as numba's cache cannot load a
    recursive function.
    """
    if n <= 128:
        return _block_sum(a, start, n)
    starts = np.empty(64, dtype=np.intp)  # the path from the root: depth < log2(n)
    sizes = np.empty(64, dtype=np.intp)
    lefts = np.empty(64)
    waiting = np.zeros(64, dtype=np.int8)  # 0: not split yet, 1: for its left, 2: right
    starts[0], sizes[0], depth = start, n, 1
    while True:
        i = depth - 1
        if sizes[i] > 128 and waiting[i] == 0:
            waiting[i] = 1
            starts[depth], sizes[depth], waiting[depth] = starts[i], _left_size(sizes[i]), 0
            depth += 1
            continue
        v = _block_sum(a, starts[i], sizes[i])
        depth -= 1
        while depth:  # hand v up the path
            j = depth - 1
            if waiting[j] == 1:
                lefts[j], waiting[j] = v, 2
                half = _left_size(sizes[j])
                starts[depth], sizes[depth], waiting[depth] = starts[j] + half, sizes[j] - half, 0
                depth += 1
                break
            v = lefts[j] + v
            depth -= 1
        if not depth:
            return v


@inline
def _row_dot(dtop: np.ndarray, r: int, weights: np.ndarray, top: np.ndarray) -> float:
    """``Σ_j dtop[r, j] · weights[top[r, j]]`` as ``np.einsum("ij,ij->i")`` sums it: two
    lanes, eight products per round taken last to first, then lane 0 + lane 1."""
    k = dtop.shape[1]
    lane0 = 0.0
    lane1 = 0.0
    j = 0
    while k - j >= 8:
        lane0 = dtop[r, j + 6] * weights[top[r, j + 6]] + lane0
        lane1 = dtop[r, j + 7] * weights[top[r, j + 7]] + lane1
        lane0 = dtop[r, j + 4] * weights[top[r, j + 4]] + lane0
        lane1 = dtop[r, j + 5] * weights[top[r, j + 5]] + lane1
        lane0 = dtop[r, j + 2] * weights[top[r, j + 2]] + lane0
        lane1 = dtop[r, j + 3] * weights[top[r, j + 3]] + lane1
        lane0 = dtop[r, j] * weights[top[r, j]] + lane0
        lane1 = dtop[r, j + 1] * weights[top[r, j + 1]] + lane1
        j += 8
    while j < k:
        lane0 = dtop[r, j] * weights[top[r, j]] + lane0
        # past the end, the last load pads lane 1 with a zero product
        lane1 += dtop[r, j + 1] * weights[top[r, j + 1]] if j + 1 < k else 0.0
        j += 2
    return 0.0 + (lane0 + lane1)


@inline
def _known_value(code: int, item: np.ndarray, owned: np.ndarray) -> float:
    """A received success is worth EmpItem of its result while the agent lacks it;
    failures and own successes nothing."""
    if code <= 0:
        return 0.0
    return item[code - 1] * (0.0 if owned[code - 1] else 1.0)


@inline
def _fetch_row(
    p: int,
    r: int,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    top: np.ndarray,
    dtop: np.ndarray,
) -> tuple[float, float, float]:
    """Copy pair ``p``'s top results into ``top[r]`` and their probabilities into
    ``dtop[r]`` (see :func:`_finish_row`); return its (P(success), ρ, expect).

    The first of two passes over a batch of pairs: the prior's tables are far larger than
    the caches, and a loop doing nothing but these independent loads keeps many of them in
    flight at once, where computing each row as it arrives waited for every one (about
    1.5x faster over a batch)."""
    p_success, resid, expect, top_idx, top_p = tables
    for j in range(top.shape[1]):
        top[r, j] = top_idx[p, j]
        dtop[r, j] = np.float64(top_p[p, j])
    return p_success[p], resid[p], expect[p]


@inline
def _finish_row(
    r: int,
    ps: float,
    rho: float,
    expect: float,
    u: np.ndarray,
    owned_weight: np.ndarray,
    renormalise: bool,
    top: np.ndarray,
    dtop: np.ndarray,
) -> tuple[float, float, float, float]:
    """The (a, b, c, d) terms of the row fetched into ``top[r]``, ``dtop[r]`` by
    :func:`_fetch_row`, whose probabilities become ``P(r) - ρ`` here."""
    for j in range(top.shape[1]):
        dtop[r, j] = dtop[r, j] - rho
    a = ps * (expect + _row_dot(dtop, r, u, top))
    b = ps * rho
    if not renormalise:  # c and d are read only when renormalising
        return a, b, b, b
    return a, b, _row_dot(dtop, r, owned_weight, top), rho


@inline
def _usable_terms(
    p: int,
    a: float,
    c: float,
    top: np.ndarray,
    r: int,
    usable: np.ndarray,
    item: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    renormalise: bool,
) -> tuple[float, float]:
    """The (a, c) terms of pair ``p`` (top results in ``top[r]``) when the elements marked
    ``usable`` count as owned: each of its top results among them is worth nothing, as
    ``u`` less that element's EmpItem and an owned weight of 1 would give. Summed in the
    order of the top results, as the agent's reference does."""
    p_success, resid, _, _, top_p = tables
    rho = resid[p]
    ca = 0.0
    cc = 0.0
    hit = False
    for j in range(top.shape[1]):
        e = top[r, j]
        if usable[e]:
            dt = np.float64(top_p[p, j]) - rho
            ca += dt * item[e]
            cc += dt
            hit = True
    if hit:
        a = a - p_success[p] * ca
        if renormalise:
            c = c + cc
    return a, c


@inline
def _value(
    a: float, b: float, c: float, d: float, u_sum: float, n_owned: int, renormalise: bool
) -> float:
    value = b * u_sum + a
    if renormalise:
        den = d * -float(n_owned)
        den = den - c
        den = den + 1.0
        den = 1e-9 if den < 1e-9 else den  # np.maximum(den, 1e-9), NaN kept
        value = value / den
    return value


@kernel
def gain(
    e: int,
    worth: float,
    scan: bool,
    partners: np.ndarray,
    pair_id: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    agent: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    u_sum: float,
    n_owned: int,
    renormalise: bool,
    n: int,
    rows: tuple[np.ndarray, ...],
    top: np.ndarray,
    dtop: np.ndarray,
) -> None:
    """The rows after the agent gained ``e`` (its ``u``, ownership and counts already
    updated): ``_gain`` then ``_add_rows`` of the reference, and every row's value.

    ``agent`` = (u, owned_weight, item, owned, known, row_of); ``rows`` = (lo, hi, ps, a,
    b, c, d, value, code, frozen), with ``n`` rows before this gain and room for
    ``partners.size`` more.
    """
    u, owned_weight, item, owned, known, row_of = agent
    lo, hi, ps, a, b, c, d, value, code, frozen = rows
    k = top.shape[1]
    if scan:  # the lasting candidates that may yield e lose its worth
        for r in range(n):
            hit = False
            for j in range(k):  # no early exit: a loop the compiler vectorises
                hit |= top[r, j] == e
            if not hit or frozen[r]:
                continue
            for j in range(k):
                if top[r, j] == e:  # results are distinct within a row
                    dr = dtop[r, j]
                    a[r] = a[r] - ps[r] * dr * worth
                    c[r] = c[r] + dr
                    break
    for r in range(n):  # received successes that yield e are now worth nothing
        if code[r] == e + 1:
            a[r] = 0.0
    for i in range(partners.size):  # the new rows, in two passes (see _fetch_row)
        q = partners[i]
        p = pair_id[e, q]
        r = n + i
        lo[r] = min(q, e)
        hi[r] = max(q, e)
        # ρ and expect wait in d and a until the second pass
        ps[r], d[r], a[r] = _fetch_row(p, r, tables, top, dtop)
        known_code = known[p]
        code[r] = known_code
        frozen[r] = known_code != UNKNOWN
        row_of[p] = r + 1
    for r in range(n, n + partners.size):
        a[r], b[r], c[r], d[r] = _finish_row(
            r, ps[r], d[r], a[r], u, owned_weight, renormalise, top, dtop
        )
        if frozen[r]:
            a[r] = _known_value(code[r], item, owned)
    # Every row's value, frozen ones (worth ``a``) included, then the choice between the
    # two: a loop without branches, which the compiler vectorises (divisions and all).
    if renormalise:
        for r in range(n + partners.size):
            v = _value(a[r], b[r], c[r], d[r], u_sum, n_owned, True)
            value[r] = a[r] if frozen[r] else v
    else:
        for r in range(n + partners.size):
            v = b[r] * u_sum + a[r]
            value[r] = a[r] if frozen[r] else v


@kernel
def live_options(
    value: np.ndarray, n: int, position: np.ndarray, rows: np.ndarray, x: np.ndarray
) -> tuple[int, float]:
    """Write the rows worth something into ``rows`` and their values into ``x`` (both with
    room for ``n``), and return how many and the values' sum; ``position`` maps each row to
    its place among them (-1 for the others).

    This kernel, ``social_options``, ``near_social`` and ``prepare_draw`` fill arrays their
    caller keeps rather than return new ones: numba's boxing of a returned array costs about
    0.4 µs, as much as their work. (``social_prior``'s arrays are kept in a cache, so it
    returns new ones.)"""
    # Written without branches (each row is stored, and kept by moving on), here and in
    # the kernels below: whether a row is worth something is as good as random.
    count = 0
    for r in range(n):
        v = value[r]
        keep = v > ZERO
        rows[count] = r
        x[count] = v
        position[r] = count if keep else -1
        count += keep
    return count, pairwise_sum(x, 0, count)


@inline
def _live_update(
    r: int,
    v: float,
    position: np.ndarray,
    x: np.ndarray,
    count: int,
    total: float,
    squares: float,
    dirty: bool,
) -> tuple[int, float, float, bool]:
    """:meth:`~tpdisc.agents.empowerment.options.LiveOptions.update`: row ``r`` is now
    worth ``v``."""
    if dirty:
        return count, total, squares, dirty
    place = position[r]
    if place < 0:
        return count, total, squares, v > ZERO  # a new option: its place is found by a rebuild
    old = x[place]
    if old > ZERO:
        count -= 1
        total -= old
        squares -= old * old
    if v > ZERO:
        count += 1
        total += v
        squares += v * v
        x[place] = v
    else:
        x[place] = -np.inf
    return count, total, squares, dirty


@inline
def _freeze(
    r: int,
    new_code: int,
    item: np.ndarray,
    owned: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> float:
    """Row ``r``'s outcome is now known (``new_code``): frozen at its known value, which
    is returned."""
    code, frozen, a, value = rows
    v = _known_value(new_code, item, owned)
    code[r] = new_code
    frozen[r] = True
    a[r] = v
    value[r] = v
    return v


@kernel
def learn(
    memories: np.ndarray,
    received: int,
    keep: tuple[int, int],
    pair_id: np.ndarray,
    agent: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    live: tuple[np.ndarray, np.ndarray],
    count: int,
    total: float,
    squares: float,
    dirty: bool,
    pending: np.ndarray,
) -> tuple[int, float, float, bool, int]:
    """What the agent learns from received ``memories`` (rows of a, b, result), in order:
    ``known``, the rows it freezes, and the live options' count, sum and sum of squares,
    returned with whether they need a rebuild; what it knows for its next choice only is
    written to ``pending`` (pair id, code; room for every memory), and how many is
    returned last.

    ``keep`` = how long a received (failure, success) is known (``KEEP_*``); ``agent`` =
    (known, row_of, item, owned); ``rows`` = (code, frozen, a, value); ``live`` =
    (position, x).
    """
    known, row_of, item, owned = agent
    position, x = live
    keep_failures, keep_successes = keep
    n_pending = 0
    for i in range(memories.shape[0]):
        ea, eb, result = memories[i, 0], memories[i, 1], memories[i, 2]
        if result == FAILED:
            new_code, lasts = FAILURE, keep_failures
        elif received == LEARN_PRIOR:
            continue  # received successes are left to the prior
        else:
            new_code = FAILURE if received == LEARN_TRIED else result + 1
            lasts = keep_successes
        if lasts == KEEP_NEVER:
            continue
        p = pair_id[min(ea, eb), max(ea, eb)]
        if lasts == KEEP_STEP:
            pending[n_pending, 0] = p
            pending[n_pending, 1] = new_code
            n_pending += 1
            continue
        if known[p] == OWN_SUCCESS:
            continue
        known[p] = new_code
        r = row_of[p] - 1
        if r < 0:
            continue
        v = _freeze(r, new_code, item, owned, rows)
        count, total, squares, dirty = _live_update(r, v, position, x, count, total, squares, dirty)
    return count, total, squares, dirty, n_pending


@kernel
def know_for_now(
    pending: np.ndarray,
    n_pending: int,
    agent: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    live: tuple[np.ndarray, np.ndarray],
    count: int,
    total: float,
    squares: float,
    dirty: bool,
    undo: tuple[np.ndarray, np.ndarray],
) -> tuple[int, float, float, bool, int]:
    """Learn the knowledge ``pending`` (pair id, code) for one decision, where the pair's
    outcome is not known yet: as :func:`learn` does, recording in ``undo`` (pair id, row,
    old code, old frozen; old a, old value) what :func:`forget` restores. Returns the live
    options' numbers and how many entries ``undo`` holds."""
    known, row_of, item, owned = agent
    code, frozen, a, value = rows
    position, x = live
    undo_ids, undo_values = undo
    n_undo = 0
    for i in range(n_pending):
        p, new_code = pending[i, 0], pending[i, 1]
        if known[p] != UNKNOWN:
            continue
        known[p] = new_code
        r = row_of[p] - 1
        undo_ids[n_undo, 0] = p
        undo_ids[n_undo, 1] = r
        if r >= 0:
            undo_ids[n_undo, 2] = code[r]
            undo_ids[n_undo, 3] = frozen[r]
            undo_values[n_undo, 0] = a[r]
            undo_values[n_undo, 1] = value[r]
            v = _freeze(r, new_code, item, owned, rows)
            count, total, squares, dirty = _live_update(
                r, v, position, x, count, total, squares, dirty
            )
        n_undo += 1
    return count, total, squares, dirty, n_undo


@kernel
def forget(
    undo: tuple[np.ndarray, np.ndarray],
    n_undo: int,
    agent: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    live: tuple[np.ndarray, np.ndarray],
    count: int,
    total: float,
    squares: float,
    dirty: bool,
) -> tuple[int, float, float, bool]:
    """Undo :func:`know_for_now`, last entry first; returns the live options' numbers."""
    known = agent[0]
    code, frozen, a, value = rows
    position, x = live
    undo_ids, undo_values = undo
    for i in range(n_undo - 1, -1, -1):
        known[undo_ids[i, 0]] = UNKNOWN
        r = undo_ids[i, 1]
        if r < 0:
            continue
        code[r] = undo_ids[i, 2]
        frozen[r] = undo_ids[i, 3] != 0
        a[r] = undo_values[i, 0]
        v = undo_values[i, 1]
        value[r] = v
        count, total, squares, dirty = _live_update(r, v, position, x, count, total, squares, dirty)
    return count, total, squares, dirty


@inline
def _fresh_rows(
    pid: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    u: np.ndarray,
    owned_weight: np.ndarray,
    renormalise: bool,
    top: np.ndarray,
    terms: np.ndarray,
) -> None:
    """The (a, b, c, d) terms of pairs ``pid`` into ``terms``, their top results into
    ``top``, in two passes (see :func:`_fetch_row`)."""
    size = pid.size
    dtop = np.empty((size, top.shape[1]))
    for r in range(size):
        terms[r, 0], terms[r, 1], terms[r, 2] = _fetch_row(pid[r], r, tables, top, dtop)
    for r in range(size):
        terms[r, 0], terms[r, 1], terms[r, 2], terms[r, 3] = _finish_row(
            r, terms[r, 0], terms[r, 1], terms[r, 2], u, owned_weight, renormalise, top, dtop
        )


@kernel
def social_prior(
    extra: np.ndarray,
    inventory: np.ndarray,
    pair_id: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    u: np.ndarray,
    owned_weight: np.ndarray,
    u_sum: float,
    n_owned: int,
    renormalise: bool,
    store: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    used: int,
    usable: np.ndarray,
    item: np.ndarray,
    any_usable: bool,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Pair ids of the pairs needing the social elements ``extra`` (each with the
    inventory, the extra elements before it and itself) and their empowerment before what
    the agent knows of them; and how much of the store is used after.

    ``store`` = (block, pid, top, terms) of :class:`~tpdisc.agents.empowerment.options.
    SocialPairs`, with room for a new block of ``2 m + 8`` pairs per extra element past
    ``used``. An element's pairs with the inventory keep their (a, b, c, d) terms there
    from one call to the next, across gains: a gain changes ``u`` and ``owned_weight`` at
    the element gained only, so only the pairs with it among their top results are
    computed again, as are the pairs with the elements gained since. Each term comes out
    as a fresh computation would give it, since the same operations read the same
    numbers; then every value is computed, as the sums ``u_sum`` and ``n_owned`` moved.

    With ``any_usable``, the elements ``extra`` count as owned when the values are computed
    (``u_sum`` less their EmpItem, ``n_owned`` plus their number, and each pair corrected as
    :func:`_usable_terms` says, marking them in the caller's all-false ``usable`` for the
    call); the kept terms stay those of what the agent owns.
    """
    if any_usable:
        worth = np.empty(extra.size)
        for i in range(extra.size):
            usable[extra[i]] = True
            worth[i] = item[extra[i]]
        u_sum = u_sum - pairwise_sum(worth, 0, extra.size)
        n_owned = n_owned + extra.size
    block, store_pid, store_top, store_terms = store
    m = inventory.size
    size = 0
    for i in range(extra.size):
        size += m + i + 1
    pid = np.empty(size, dtype=np.intp)
    values = np.empty(size)
    k = store_top.shape[1]
    among = np.empty(extra.size, dtype=np.intp)
    top = np.empty((extra.size, k), dtype=store_top.dtype)
    terms = np.empty((extra.size, 4))
    j = 0
    for i in range(extra.size):
        e = extra[i]
        start, kept, room = block[e, 0], block[e, 1], block[e, 2]
        if kept and kept < m:  # gains since: the pairs whose top results hold one
            for r in range(start, start + kept):
                hit = False
                for g in range(kept, m):  # mostly one: a comparison the compiler vectorises
                    gained = inventory[g]
                    for t in range(k):
                        hit |= store_top[r, t] == gained
                if hit:
                    _fresh_rows(
                        store_pid[r : r + 1],
                        tables,
                        u,
                        owned_weight,
                        renormalise,
                        store_top[r : r + 1],
                        store_terms[r : r + 1],
                    )
        if room < m:  # moved to a larger block at the end
            room = 2 * m + 8
            store_pid[used : used + kept] = store_pid[start : start + kept]
            store_top[used : used + kept] = store_top[start : start + kept]
            store_terms[used : used + kept] = store_terms[start : start + kept]
            start = used
            used += room
        if kept < m:
            fresh = slice(start + kept, start + m)
            for q in range(kept, m):
                store_pid[start + q] = pair_id[e, inventory[q]]
            _fresh_rows(
                store_pid[fresh],
                tables,
                u,
                owned_weight,
                renormalise,
                store_top[fresh],
                store_terms[fresh],
            )
        block[e, 0], block[e, 1], block[e, 2] = start, m, room
        for r in range(start, start + m):
            pid[j] = store_pid[r]
            a, c = store_terms[r, 0], store_terms[r, 2]
            if any_usable:
                a, c = _usable_terms(
                    store_pid[r], a, c, store_top, r, usable, item, tables, renormalise
                )
            values[j] = _value(
                a, store_terms[r, 1], c, store_terms[r, 3], u_sum, n_owned, renormalise
            )
            j += 1
        # the pairs with the extra elements up to itself: few, computed each time
        for q in range(i + 1):
            among[q] = pair_id[e, extra[q]]
        _fresh_rows(among[: i + 1], tables, u, owned_weight, renormalise, top, terms)
        for q in range(i + 1):
            pid[j] = among[q]
            a, c = terms[q, 0], terms[q, 2]
            if any_usable:
                a, c = _usable_terms(among[q], a, c, top, q, usable, item, tables, renormalise)
            values[j] = _value(a, terms[q, 1], c, terms[q, 3], u_sum, n_owned, renormalise)
            j += 1
    if any_usable:
        for i in range(extra.size):
            usable[extra[i]] = False
    return pid, values, used


@kernel
def social_options(
    pid: np.ndarray,
    prior: np.ndarray,
    known: np.ndarray,
    item: np.ndarray,
    owned: np.ndarray,
    options: np.ndarray,
    x: np.ndarray,
) -> int:
    """Write the positions and values of the social pairs worth something, after what the
    agent knows of them, into ``options`` and ``x``; return how many."""
    count = 0
    for i in range(pid.size):
        known_code = known[pid[i]]
        v = prior[i] if known_code == UNKNOWN else _known_value(known_code, item, owned)
        options[count] = i
        x[count] = v
        count += v > ZERO
    return count


@kernel
def near_social(
    owned_social: np.ndarray,
    slot: np.ndarray,
    m: int,
    value: np.ndarray,
    near: np.ndarray,
    x: np.ndarray,
) -> tuple[int, float]:
    """Write the rows worth something that use one of ``owned_social``, in row order, into
    ``near`` and their values into ``x``; return how many and the values' sum.

    ``slot`` gives each owned element's place in the inventory, whose ``m`` elements the
    rows pair in blocks: the ``j``-th gain added the ``j + 1`` rows of its element with
    the inventory up to itself, so row ``j (j + 1) / 2 + q`` pairs the ``j``-th element with
    the ``q``-th. The rows using a social item are then its own block and one row of each
    later block: found by position, where a scan of every row grew with the square of the
    inventory."""
    s = owned_social.size
    places = np.empty(s, dtype=np.intp)  # the social items' slots, ascending
    for i in range(s):
        p = slot[owned_social[i]]
        t = i
        while t > 0 and places[t - 1] > p:
            places[t] = places[t - 1]
            t -= 1
        places[t] = p
    count = 0
    start = 0  # the first row of block j
    t = 0  # how many social slots are below j
    for j in range(m):
        if t < s and places[t] == j:  # the social item's own block: every row
            t += 1
            for r in range(start, start + j + 1):
                v = value[r]
                near[count] = r
                x[count] = v
                count += v > ZERO
        else:  # the rows pairing block j's element with an earlier social item
            for i in range(t):
                r = start + places[i]
                v = value[r]
                near[count] = r
                x[count] = v
                count += v > ZERO
        start += j + 1
    return count, pairwise_sum(x, 0, count)


@kernel
def split_social(social: np.ndarray, owned: np.ndarray) -> int:
    """Reorder ``social`` in place: the items the agent owns, then those it does not, each
    in their order; return how many it owns."""
    others = np.empty(social.size, dtype=social.dtype)
    n_owned = n_others = 0
    for e in social:
        if owned[e]:
            social[n_owned] = e
            n_owned += 1
        else:
            others[n_others] = e
            n_others += 1
    for i in range(n_others):
        social[n_owned + i] = others[i]
    return n_owned


@kernel
def prepare_draw(
    x: np.ndarray,
    count: int,
    total: float,
    squares: float,
    extra: np.ndarray,
    beta: float,
    zscore: bool,
    w: np.ndarray,
) -> tuple[int, int, int]:
    """The softmax draw up to the exponentials, over the options of ``x`` (its ``count``
    finite entries; ``total`` their sum) then ``extra``; ``squares`` is the sum of the
    squares of both (BLAS's, from the caller). ``w`` has room for every entry of ``x``
    and ``extra``: filling the caller's array spares numba boxing a new one, which cost
    more than this kernel's work in a short game.

    Returns (outcome, n, size): outcome >= 0 is the position drawn when there is one
    option; ``UNIFORM`` asks for a uniform draw over the ``n`` options (all equal);
    ``WEIGH`` for the draw over ``exp(w[:size])``, a weight per entry (see
    :func:`log_weights`).
    """
    n = count + extra.size
    if n == 1:
        first = x.size
        if count:
            first = 0
            while not x[first] > ZERO:
                first += 1
        return first, n, 0
    top = max(_maximum(x) if count else -np.inf, _maximum(extra))
    if extra.size:
        total += pairwise_sum(extra, 0, extra.size)
    scale = beta
    if zscore:  # tpdisc.agents.empowerment.options.temperature
        mean = total / n
        var = squares / n - mean * mean
        if var <= 1e-24 * max(1.0, mean * mean):
            return UNIFORM, n, 0
        scale = beta * np.sqrt(var)
    log_weights(x, extra, top, scale, w)
    return WEIGH, n, x.size + extra.size


@inline
def _maximum(x: np.ndarray) -> float:
    """The largest value of ``x`` (-inf when empty), kept as four running maxima: with
    one, every comparison waits for the previous one."""
    m0 = m1 = m2 = m3 = -np.inf
    whole = x.size - x.size % 4
    for i in range(0, whole, 4):
        m0 = x[i] if x[i] > m0 else m0
        m1 = x[i + 1] if x[i + 1] > m1 else m1
        m2 = x[i + 2] if x[i + 2] > m2 else m2
        m3 = x[i + 3] if x[i + 3] > m3 else m3
    for i in range(whole, x.size):
        m0 = x[i] if x[i] > m0 else m0
    return max(max(m0, m1), max(m2, m3))


@inline
def log_weights(x: np.ndarray, extra: np.ndarray, top: float, scale: float, w: np.ndarray) -> None:
    """Write the softmax's log-weights, ``(value - top) / scale``, of the entries of ``x``
    then ``extra`` into ``w``. From ``BAND_MIN`` entries on, those more than ``NEGLIGIBLE``
    temperatures below the best get -inf instead, a weight of exactly 0, as the -inf
    entries of ``x`` do: adding 0 leaves every running sum of the draw as it was, so the
    draw picks what the reference's, over the band's weights only, picks. (Gathering the
    band instead stored a position per entry, a loop the compiler could not vectorise.)"""
    inverse = 1.0 / scale
    cutoff = top - NEGLIGIBLE * scale if x.size + extra.size >= BAND_MIN else -np.inf
    for i in range(x.size):
        v = (x[i] - top) * inverse
        w[i] = v if x[i] >= cutoff else -np.inf
    for i in range(extra.size):
        v = (extra[i] - top) * inverse
        w[x.size + i] = v if extra[i] >= cutoff else -np.inf


@kernel
def pick(w: np.ndarray, size: int, u: float) -> int:
    """The draw of ``searchsorted(cumsum(w[:size]), u · sum, side="right")`` over the
    weights ``w[:size]`` (sums in order, as cumsum's); when rounding carries it past the
    end, the last positive weight."""
    cumulative = np.empty(size)
    total = 0.0
    for i in range(size):
        total += w[i]
        cumulative[i] = total
    target = u * total
    lo, hi = 0, size  # the first position whose running sum exceeds the target
    while lo < hi:
        mid = (lo + hi) // 2
        if cumulative[mid] > target:
            hi = mid
        else:
            lo = mid + 1
    if lo < size:
        return lo
    for i in range(size - 1, -1, -1):
        if w[i] != 0.0:
            return i
    return size
