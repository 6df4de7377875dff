"""Sandbox limits: defaults from SPEC §3, bad values refused in one line."""

from __future__ import annotations

import pytest

from tpdisc.errors import ConfigError
from tpdisc.sandbox import SandboxConfig


def test_defaults_follow_the_spec() -> None:
    config = SandboxConfig()
    assert config.time_limit == 20.0
    assert config.call_time_limit is None
    assert config.wall_limit == 60.0
    assert config.allow_without_seccomp is False


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"time_limit": 0}, "sandbox time limit must be positive, got 0"),
        ({"call_time_limit": -1.0}, "sandbox per-call time limit must be positive, got -1.0"),
        ({"wall_factor": 0.5}, "sandbox wall factor must be at least 1, got 0.5"),
        ({"memory_mb": 10}, "sandbox memory must be at least 64 MB, got 10"),
        ({"max_exchanges": 0}, "sandbox max_exchanges must be positive, got 0"),
        ({"max_log_bytes": 5}, "sandbox max_log_bytes must be at least 1024, got 5"),
    ],
)
def test_bad_values_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        SandboxConfig(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message
