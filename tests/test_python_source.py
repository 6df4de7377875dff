"""Parsing Python source from several threads at once (tpdisc.python_source)."""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.threads import failures_in_threads
from tpdisc.protocols import baselines
from tpdisc.python_source import PARSING, parse

SOURCE = inspect.getsource(baselines)  # a module's source is read, not parsed


class _Finalised:
    """Cyclic garbage whose finaliser runs Python code: a collection started while a
    thread builds ast objects lets the interpreter switch threads in the middle."""

    def __del__(self) -> None:
        sum(range(50))


@pytest.fixture
def eager_switching() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _in_two_threads(work: Callable[[], object], rounds: int = 150) -> list[BaseException]:
    def run() -> None:
        for _ in range(rounds):
            for _ in range(200):
                garbage = _Finalised()
                garbage.self = garbage  # type: ignore[attr-defined]
            work()

    return failures_in_threads(run, 2)


def test_parse_is_ast_parse() -> None:
    assert ast.dump(parse(SOURCE)) == ast.dump(ast.parse(SOURCE))


def test_parses_in_two_threads_at_once_do_not_break_each_other(eager_switching: None) -> None:
    # Without the lock, CPython 3.11 fails this within the first rounds with "SystemError:
    # AST constructor recursion depth mismatch" (checked with ast.parse in place of parse).
    assert _in_two_threads(lambda: parse(SOURCE)) == []


def test_a_class_source_looked_up_under_the_lock_is_safe_beside_parses(
    eager_switching: None,
) -> None:
    def look_up() -> None:
        with PARSING:
            inspect.getsource(baselines.Paired)
        parse(SOURCE)

    assert _in_two_threads(look_up, rounds=60) == []
