"""A confinement step tried in a throwaway child."""

from __future__ import annotations

import os

from tpdisc.sandbox.probe import in_child


def test_the_child_says_whether_the_step_worked_and_the_parent_is_untouched() -> None:
    parent = os.getpid()
    assert in_child(lambda: "", "test") == (True, "")
    assert in_child(lambda: "refused", "test") == (False, "refused")
    assert os.getpid() == parent


def test_an_exception_or_a_silent_death_is_a_reason() -> None:
    def boom() -> str:
        raise OSError("no such thing")

    assert in_child(boom, "test") == (False, "OSError: no such thing")
    assert in_child(lambda: os._exit(3), "test") == (False, "the test probe died")
