"""Hostile case: a legal protocol returning a huge number of exchanges."""

from __future__ import annotations

from tests.sandbox.helpers import fail_calls, protocol, source_spec, toy_states
from tpdisc.sandbox import SandboxConfig


def test_millions_of_legal_exchanges_are_refused_before_they_cross() -> None:
    share = "return {r: [(0, 0)] * 2_000_000 for r in range(3)}"
    err = fail_calls(protocol(share, reach_sys=False), "too-large")
    assert err.reason == "share_memories returned 6,000,000 exchanges at step 0 (limit 1,000,000)"


def test_a_large_legal_reply_under_the_cap_arrives_intact() -> None:
    share = "return {r: [((r + k) % 3, k % 2) for k in range(100_000)] for r in range(3)}"
    spec = source_spec(protocol(share, reach_sys=False), SandboxConfig(time_limit=20.0))
    with spec.open(3, 5, 0) as runner:
        raw = runner.share(0, toy_states())
    assert raw == {r: [((r + k) % 3, k % 2) for k in range(100_000)] for r in range(3)}


def test_the_cap_is_configurable() -> None:
    share = "return {0: [(1, 0)] * 11}"
    config = SandboxConfig(time_limit=1.0, max_exchanges=10)
    err = fail_calls(protocol(share, reach_sys=False), "too-large", config=config)
    assert err.reason == "share_memories returned 11 exchanges at step 0 (limit 10)"


def test_a_forged_giant_frame_is_refused_unread() -> None:
    share = "sys.modules['os'].write(3, (2**31 - 1).to_bytes(4, 'little'))"
    err = fail_calls(protocol(share), "too-large")
    assert err.reason.startswith("reply of 2,147,483,647 bytes in share_memories at step 0 (limit ")


def test_huge_logs_are_refused() -> None:
    source = protocol("pass", reach_sys=False) + (
        "\n    def get_logs(self):\n        return [{'metric_value': 'x' * 1000}] * 20_000\n"
    )
    spec = source_spec(source)
    runner = spec.open(3, 5, 0)
    try:
        runner.share(0, toy_states())
        try:
            runner.logs()
        except Exception as err:
            assert getattr(err, "kind", None) == "too-large"
            assert getattr(err, "reason", "").startswith("get_logs returned ")
            assert getattr(err, "reason", "").endswith(" bytes of JSON (limit 1,000,000)")
        else:
            raise AssertionError("huge logs were accepted")
    finally:
        runner.close()
