"""The BLAS kernels' pin: Haswell's on every x86-64 CPU with AVX2, nowhere else, never over
the user's choice, and in effect in a process that imports tpdisc before numpy."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from tpdisc import portable_blas
from tpdisc.portable_blas import VARIABLE, has_avx2, pin

ZEN4 = "processor\t: 0\nflags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq\n"
OLD = "processor\t: 0\nflags\t\t: fpu sse2 sse4_2 avx\n"


def test_avx2_is_read_from_the_flags() -> None:
    assert has_avx2(ZEN4)
    assert not has_avx2(OLD)
    assert not has_avx2("")


def test_pin_only_where_the_kernels_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(portable_blas, "has_avx2", lambda cpuinfo=None: True)
    env: dict[str, str] = {}
    assert pin(env, machine="x86_64") and env[VARIABLE] == "Haswell"
    assert not pin(env := {}, machine="aarch64") and VARIABLE not in env
    assert not pin(env := {VARIABLE: "Zen"}, machine="x86_64") and env[VARIABLE] == "Zen"
    monkeypatch.setattr(portable_blas, "has_avx2", lambda cpuinfo=None: False)
    assert not pin(env := {}, machine="x86_64") and VARIABLE not in env


def test_a_process_importing_tpdisc_first_runs_haswell_kernels() -> None:
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    code = (
        "import tpdisc, numpy, scipy.linalg\n"
        "from tpdisc.portable_blas import architectures\n"
        "print(','.join(architectures()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    if platform.machine().lower() in ("x86_64", "amd64") and has_avx2():
        assert out == "Haswell"  # on an AVX-512 machine OpenBLAS would say SkylakeX
    else:
        assert out  # its own kernels, named
