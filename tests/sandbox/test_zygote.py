"""The zygote's own duties: proving seccomp works, reporting how workers ended."""

from __future__ import annotations

from tests.sandbox.helpers import protocol, source_spec, toy_states
from tpdisc.sandbox import client, zygote


def test_the_zygote_proved_the_filter_before_taking_work() -> None:
    started = client.get_zygote()
    assert (started.seccomp, started.seccomp_reason) == (True, "")


def test_the_exit_status_of_a_worker_is_reported_once() -> None:
    with source_spec(protocol("pass", reach_sys=False)).open(3, 5, 0) as runner:
        runner.share(0, toy_states())
        assert runner.worker is not None
        pid = runner.worker.pid
    # close() killed it; the zygote reaped it and keeps its status until asked.
    status = client.get_zygote().exit_status(pid)
    assert status is not None and status[:2] == ("signal", 9)
    assert client.get_zygote().exit_status(pid) is None  # reported once, then forgotten


def test_nobody_is_the_unprivileged_user() -> None:
    assert zygote.nobody() == (65534, 65534)
