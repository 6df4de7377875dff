"""One set of BLAS kernels on every x86-64 machine, so that a prior is the same everywhere.

OpenBLAS picks its kernels by the CPU it finds, and its AVX-512 kernels (SkylakeX, on Intel
since Skylake-SP and AMD since Zen 4) round differently from its AVX2 ones (Haswell). The
empowerment agents' prior is trained (an SVD, two small networks), so on an AVX-512
machine the same recipe file and seed gave another prior, and every simulation of
empowerment agents other numbers than on an AVX2 machine (measured 2026-12-06: prior
seed 0's mean rank 86.3 against 87.9, and another outcome digest). The simulations
themselves do not depend on the kernels: with the same prior the digest is the same.

OpenBLAS reads its choice once, when it is loaded with numpy, so :func:`pin` runs before
numpy is imported (``tpdisc/__init__.py``) and, through the environment, holds in every
process tpdisc starts. A machine without AVX2 keeps its own kernels, and an
``OPENBLAS_CORETYPE`` set by the user is left alone.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

CORETYPE = "Haswell"
VARIABLE = "OPENBLAS_CORETYPE"


def has_avx2(cpuinfo: str | None = None) -> bool:
    """Whether this x86-64 CPU runs AVX2 (and FMA, which the Haswell kernels use too)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return {"avx2", "fma"} <= flags
    return False


def pin(environ: dict[str, str] | None = None, machine: str | None = None) -> bool:
    """Ask OpenBLAS for its Haswell kernels where they run and nothing chose otherwise;
    True if it did. Too late once numpy is loaded: then nothing changes."""
    env = os.environ if environ is None else environ
    if environ is None and "numpy" in sys.modules:
        return False
    if env.get(VARIABLE):
        return False
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return False
    if not has_avx2():
        return False
    env[VARIABLE] = CORETYPE
    return True


def architectures() -> list[str]:
    """The kernels of every OpenBLAS loaded in this process (numpy's, scipy's), as a
    prior's build records them."""
    from threadpoolctl import threadpool_info

    return sorted(
        {
            str(i.get("architecture"))
            for i in threadpool_info()
            if i.get("internal_api") == "openblas"
        }
    )
