"""Compiled kernels of the hot loop, and the switch back to the pure-Python reference.

The agents' decisions and what they learn run as numba kernels (``@njit`` with an on-disk
cache: the first run on a machine compiles them, in a few seconds, and every later process
loads them, in about 0.3 s). Each kernel has a reference in numpy or plain Python that
makes the same choices bit for bit; ``TPDISC_REFERENCE=1`` (or an agent built with
``reference=True``) runs that instead, and ``tests/test_compiled.py`` compares the two.

Where the cache goes: ``__pycache__`` beside the kernels' modules, or, when the package's
folder is read-only, numba's user-wide cache (``~/.cache/numba``); ``NUMBA_CACHE_DIR``
overrides both.

Kernels never draw random numbers: the callers draw from the simulation's numpy streams in
the same order as the reference, and pass the numbers in. Nor do they compute what numpy
computes with machine-specific code (``np.exp``, ``x @ x`` through BLAS): the callers keep
those in numpy, so that both paths see the same bits.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])


def reference_mode() -> bool:
    """Whether ``TPDISC_REFERENCE`` asks for the pure-Python reference paths."""
    return os.environ.get("TPDISC_REFERENCE", "").strip().lower() not in ("", "0", "no", "false")


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode on first call, caching the machine code on disk.

    No ``fastmath``: the kernels must round exactly as the reference does.
    """
    return cast(F, numba.njit(cache=True)(fn))


def inline(fn: F) -> F:
    """A helper of kernels, compiled into each kernel that calls it: a call between
    compiled functions passes every array as a handful of scalars, which costs more than
    the small helpers do."""
    return cast(F, numba.njit(cache=True, inline="always")(fn))
