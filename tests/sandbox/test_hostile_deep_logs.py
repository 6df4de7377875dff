"""Hostile case: logs the worker's encoder would never produce, forged past it.

The worker bounds the depth and sizes of ``get_logs`` values, but protocol code can
replace the worker's encoder; the parent checks every decoded value again, without
recursion, so nothing it stores can break ``archive --json`` or a report later.
"""

from __future__ import annotations

import json

import pytest

from tests.sandbox.helpers import protocol, source_spec, toy_states
from tpdisc.sandbox import SandboxError
from tpdisc.sandbox.codec import MAX_LOG_DEPTH, encode_logs, log_value_fault

# get_logs's reply goes out through codec.encode_logs: replace it with raw JSON text.
PATCH = """
codec = sys.modules["tpdisc.sandbox.codec"]
codec.encode_logs = lambda logs, max_bytes: b"L" + FORGED.encode("utf-8")
FORGED = {forged!r}
"""


def forged_logs(text: str) -> SandboxError:
    spec = source_spec(protocol("pass", prelude=PATCH.format(forged=text)))
    with pytest.raises(SandboxError) as info, spec.open(3, 5, 0) as runner:
        runner.share(0, toy_states())
        runner.logs()
    return info.value


def test_logs_nested_600_deep_are_refused() -> None:
    deep = '[{"metric_value": ' + "[" * 600 + "]" * 600 + "}]"
    err = forged_logs(deep)
    assert err.kind == "malformed-reply"
    assert err.reason == (
        "malformed reply from the worker to get_logs "
        f"(values nested deeper than {MAX_LOG_DEPTH} levels)"
    )


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ('[{"v": NaN}]', "a non-finite number"),
        ('[{"v": Infinity}]', "a non-finite number"),
        ('[{"v": "' + "x" * 1001 + '"}]', "an overlong or unencodable string"),
        ('[{"v": "\\ud800"}]', "an overlong or unencodable string"),
        ('[{"' + "k" * 1001 + '": 1}]', "an overlong or unencodable key"),
    ],
)
def test_values_beyond_the_encoders_limits_are_refused(text: str, fault: str) -> None:
    err = forged_logs(text)
    assert err.kind == "malformed-reply"
    assert err.reason == f"malformed reply from the worker to get_logs ({fault})"


def test_what_the_real_encoder_produces_is_accepted() -> None:
    # Nested far deeper than the limit: the worker's encoder cuts it, the check agrees.
    deep: object = 1
    for _ in range(600):
        deep = [deep]
    logs = [{"metric_value": deep, "name": "x" * 5000, "nan": float("nan"), "k" * 2000: 1}]
    decoded = json.loads(encode_logs(logs, 10**6)[1:])
    assert [log_value_fault(entry) for entry in decoded] == [None]
    json.dumps(decoded)  # and it serialises again


def test_a_forged_value_deeper_than_the_recursion_limit_is_refused_without_recursion() -> None:
    deep: object = 0
    for _ in range(100_000):
        deep = {"v": [deep]}
    assert log_value_fault(deep) == f"values nested deeper than {MAX_LOG_DEPTH} levels"


def test_ordinary_logs_still_arrive() -> None:
    source = protocol("pass", reach_sys=False) + (
        "\n    def get_logs(self):\n"
        "        return [{'metric_name': 'm', 'metric_value': [1, 2.5, None, {'a': 'b'}]}]\n"
    )
    with source_spec(source).open(3, 5, 0) as runner:
        runner.share(0, toy_states())
        assert runner.logs() == [{"metric_name": "m", "metric_value": [1, 2.5, None, {"a": "b"}]}]
