"""Compiled kernels of the hot loop, and the switch back to the pure-Python reference.

The agents' decisions and what they learn run as numba kernels (``@njit`` with an on-disk
cache: the first run on a machine compiles them, in a few seconds, and every later process
loads them, in about 0.25 s, at the first call of a kernel). Each kernel has a reference
in numpy or plain Python that makes the same choices bit for bit; ``TPDISC_REFERENCE=1``
(or an agent built with ``reference=True``) runs that instead, and
``tests/agents/test_compiled.py`` compares the two.

Where the cache goes: ``__pycache__`` beside the kernels' modules, or, when the package's
folder is read-only, numba's user-wide cache (``~/.cache/numba``); ``NUMBA_CACHE_DIR``
overrides both.

Kernels never draw random numbers: the callers draw from the simulation's numpy streams in
the same order as the reference, and pass the numbers in. Nor do they compute what numpy
computes with machine-specific code (``np.exp``, ``x @ x`` through BLAS): the callers keep
those in numpy, so that both paths see the same bits.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


def reference_mode() -> bool:
    """Whether ``TPDISC_REFERENCE`` asks for the pure-Python reference paths."""
    return os.environ.get("TPDISC_REFERENCE", "").strip().lower() not in ("", "0", "no", "false")


def use_kernels(default: bool) -> bool:
    """Whether an agent runs the compiled kernels: never with ``TPDISC_REFERENCE=1``, always
    with ``TPDISC_REFERENCE=0``, otherwise ``default``, its agent type's choice."""
    value = os.environ.get("TPDISC_REFERENCE", "").strip().lower()
    if not value:
        return default
    return not reference_mode()


class _Lazy:
    """A kernel before numba has compiled (or loaded) it.

    Importing numba and loading the cached kernels takes about 0.25 s per process, which a
    command that never runs a compiled agent in this process (help, reports, a pool's
    parent) should not pay: numba comes in at the first call of any kernel.
    """

    __slots__ = ("compiled", "fn", "options")

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.fn = fn
        self.options = options
        self.compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        compiled = self.compiled
        if compiled is None:
            _materialize()
            compiled = self.compiled
            assert compiled is not None
        return compiled(*args)


_REGISTERED: list[_Lazy] = []


def _materialize() -> None:
    """Every registered function as a numba dispatcher, in the globals of the module that
    defines it: a kernel calls its helpers by their global names, which numba resolves when
    it compiles the kernel (at its first call, after this), and callers reach kernels as
    attributes of that module (``kernels.gain``), so they call the dispatcher directly.
    No other module is touched: a name imported elsewhere keeps the :class:`_Lazy`, which
    forwards its calls. Then numba's code generator is set up, by a call of the kernel
    that does nothing."""
    import numba

    starting = _REGISTERED[0].compiled is None  # `ready`, registered as this module loads
    for lazy in _REGISTERED:
        if lazy.compiled is None:
            lazy.compiled = numba.njit(cache=True, **lazy.options)(lazy.fn)
            lazy.fn.__globals__[lazy.fn.__name__] = lazy.compiled
    if starting:
        with _blas_extension_alone():
            _REGISTERED[0](0)


@contextmanager
def _blas_extension_alone() -> Iterator[None]:
    """Lets numba's set-up find BLAS without importing all of ``scipy.linalg``.

    Numba's first compile (or cache load) in a process checks that BLAS is there by
    importing ``scipy.linalg.cython_blas``, and that import runs ``scipy.linalg``'s
    ``__init__`` first: about 0.17 s, more than half of numba's start, for kernels that
    call no BLAS. Here the extension module alone is loaded for that check, then taken out
    of ``sys.modules`` again, so that a later ``import scipy.linalg`` runs as usual (and
    gets the same extension module back: Cython modules load once per process). Where
    anything differs from what this expects, numba checks the usual way.
    """
    name = "scipy.linalg.cython_blas"
    module = None
    if "scipy.linalg" not in sys.modules:
        try:
            import scipy

            folder = Path(scipy.__file__).parent / "linalg"
            path = next(p for s in EXTENSION_SUFFIXES if (p := folder / f"cython_blas{s}").exists())
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
        except (ImportError, OSError, StopIteration):
            module = None
    if module is None:
        yield
        return
    sys.modules[name] = module
    try:
        yield
    finally:
        if sys.modules.get(name) is module:
            del sys.modules[name]


def load_kernels() -> None:
    """Load numba and ready it to run kernels, now rather than at the first kernel call.

    Most of numba's start (about 0.25 s) is its import and the set-up of its code generator,
    which the first kernel call of a process pays; each cached kernel then loads in a few
    milliseconds. A process that forks workers (the simulation workers' server) calls this
    once, so that every worker it forks starts ready.
    """
    _materialize()


def kernel(fn: F) -> F:
    """Compile ``fn`` in nopython mode on first call, caching the machine code on disk.

    No ``fastmath``: the kernels must round exactly as the reference does.
    """
    lazy = _Lazy(fn, {})
    _REGISTERED.append(lazy)
    return cast(F, lazy)


def inline(fn: F) -> F:
    """A helper of kernels, compiled into each kernel that calls it: a call between
    compiled functions passes every array as a handful of scalars, which costs more than
    the small helpers do."""
    lazy = _Lazy(fn, {"inline": "always"})
    _REGISTERED.append(lazy)
    return cast(F, lazy)


@kernel
def ready(x: int) -> int:
    """A kernel that does nothing: calling it sets up numba's code generator."""
    return x + 1
