"""Hostile case: reading os.environ (API keys of the parent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.helpers import fail_calls, protocol
from tpdisc import portable_blas
from tpdisc.sandbox import client

SECRET = "sk-tpdisc-test-secret-0123456789"
# The zygote's whole environment, plus what scikit-learn sets for itself when imported and
# the BLAS kernels' pin tpdisc sets when it is imported (tpdisc.portable_blas).
EXPECTED = sorted(
    {*client.ENVIRONMENT, "KMP_DUPLICATE_LIB_OK", "KMP_INIT_AT_FORK", portable_blas.VARIABLE}
)


def test_the_parents_environment_never_reaches_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("TPDISC_TEST_TOKEN", SECRET)
    client.shutdown()  # the next zygote starts while this process holds the secret
    share = f"""
    environ = sys.modules['os'].environ
    leaked = sorted(k for k, v in environ.items() if {SECRET!r} in v)
    extra = sorted(set(environ) - set({EXPECTED!r}))
    raise RuntimeError(f"leaked={{leaked}} extra={{extra}}")
    """
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("RuntimeError: leaked=[] extra=[] (line ")
    zygote = client.get_zygote()
    assert SECRET.encode() not in Path(f"/proc/{zygote.pid}/environ").read_bytes()


def test_the_parents_environment_file_is_unreadable() -> None:
    share = "sys.modules['io'].open(f\"/proc/{sys.modules['os'].getppid()}/environ\").read()"
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("PermissionError: [Errno 1] Operation not permitted: '/proc/")
