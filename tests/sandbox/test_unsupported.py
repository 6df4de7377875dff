"""Without seccomp the tool refuses untrusted code, unless the unsafe mode is explicit."""

from __future__ import annotations

import os

import pytest

from tests.sandbox.helpers import protocol, source_spec, toy_states
from tpdisc.sandbox import SandboxConfig, SandboxError, SandboxWarning, client, runner
from tpdisc.sandbox.client import ENVIRONMENT

# Set in the worker by what it imports: scikit-learn, and tpdisc's BLAS kernels' pin.
ADDED = {"KMP_DUPLICATE_LIB_OK", "KMP_INIT_AT_FORK", "OPENBLAS_CORETYPE"}

WHY = "this kernel has no seccomp (test)"


@pytest.fixture
def no_seccomp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "seccomp_support", lambda: (False, WHY))


@pytest.mark.usefixtures("no_seccomp")
def test_untrusted_code_is_refused_with_the_way_out_named() -> None:
    with pytest.raises(SandboxError) as info:
        source_spec(protocol("pass", reach_sys=False)).open(3, 5, 0)
    assert info.value.kind == "unsupported"
    assert info.value.reason == (
        f"refusing to run untrusted code: the seccomp sandbox is unavailable ({WHY}); "
        "--unsafe-no-sandbox runs it with the weaker layers only"
    )


@pytest.mark.usefixtures("no_seccomp")
def test_the_unsafe_mode_warns_and_keeps_the_other_layers() -> None:
    # Without the filter the worker can list '/' (its empty root, where namespaces work),
    # but it is still nobody (when we are root), in a minimal environment, under the CPU and
    # memory limits.
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    empty_root = client.get_zygote().namespaces
    share = f"""
    os = sys.modules['os']
    assert (os.listdir('/') == []) == {empty_root}, "no filter, so listing works"
    assert os.getuid() == {uid}
    assert set(os.environ) <= {set(ENVIRONMENT) | ADDED}
    try:
        bytearray(30 * 2**30)
    except MemoryError:
        return {{0: [(1, 0)]}}
    """
    config = SandboxConfig(time_limit=1.0, allow_without_seccomp=True)
    with pytest.warns(SandboxWarning, match=r"WITHOUT the seccomp sandbox \(this kernel"):
        spec = source_spec(protocol(share), config)
        with spec.open(3, 5, 0) as opened:
            assert opened.share(0, toy_states()) == {0: [(1, 0)]}


def test_where_seccomp_works_the_unsafe_mode_changes_nothing() -> None:
    config = SandboxConfig(time_limit=1.0, allow_without_seccomp=True)
    share = "sys.modules['os'].listdir('/')"
    with (
        pytest.raises(SandboxError) as info,
        source_spec(protocol(share), config).open(3, 5, 0) as r,
    ):
        r.share(0, toy_states())
    assert info.value.reason.startswith("PermissionError: [Errno 1] Operation not permitted")


def test_the_zygotes_probe_has_the_final_word(monkeypatch: pytest.MonkeyPatch) -> None:
    started = client.get_zygote()
    monkeypatch.setattr(started, "seccomp", False)
    monkeypatch.setattr(started, "seccomp_reason", "the probe child could not load the filter")
    with pytest.raises(SandboxError) as info:
        source_spec(protocol("pass", reach_sys=False)).open(3, 5, 0)
    assert info.value.kind == "unsupported"
    assert "(the probe child could not load the filter)" in info.value.reason


def test_sandboxed_protocols_need_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner.sys, "platform", "darwin")
    config = SandboxConfig(time_limit=1.0, allow_without_seccomp=True)
    with pytest.raises(SandboxError) as info:
        source_spec(protocol("pass", reach_sys=False), config).open(3, 5, 0)
    assert (info.value.kind, info.value.reason) == (
        "unsupported",
        "sandboxed protocols need Linux (this is darwin); --trusted runs a file you have read "
        "in-process",
    )
