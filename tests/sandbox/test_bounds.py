"""Bounded parsing and walking of untrusted source: one-line reasons, never a crash."""

from __future__ import annotations

import ast

import pytest

from tpdisc.sandbox.bounds import (
    MAX_AST_NODES,
    MAX_DEPTH,
    MAX_SOURCE_BYTES,
    Budget,
    SourceRejected,
    bounded_nodes,
    parse_bounded,
)


def test_a_small_source_parses_and_walks_in_source_order() -> None:
    nodes = bounded_nodes(parse_bounded("a = 1\nb = a\n"))
    names = [n.id for n in nodes if isinstance(n, ast.Name)]
    assert names == ["a", "b", "a"]
    assert not any(isinstance(n, ast.expr_context) for n in nodes)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("x = 1\n" * 20_000, "the source has 120,000 bytes; the limit is 100,000"),
        ("x = '\ud800'\n", "the source is not valid text"),
        ("x = 1\0\n", "SyntaxError: source code string cannot contain null bytes"),
        ("def f(:\n", "SyntaxError at line 1:"),
        ("x = " + "-" * 60_000 + "1", "the source is nested too deeply to parse"),
        ("x = " + "not " * 20_000 + "1", "the source is nested too deeply to parse"),
        ("x = " + "lambda: " * 10_000 + "1", "the source is nested too deeply to parse"),
        ("x = " + "(" * 300 + "1" + ")" * 300, "SyntaxError at line 1: too many nested"),
    ],
)
def test_parse_failures_are_one_line(source: str, reason: str) -> None:
    with pytest.raises(SourceRejected) as err:
        parse_bounded(source)
    assert str(err.value).startswith(reason) and "\n" not in str(err.value)


def test_the_size_is_counted_in_bytes() -> None:
    parse_bounded("x = 'é'\n" * 10_000)  # 90,000 bytes: fits
    with pytest.raises(SourceRejected, match="the source has 110,000 bytes"):
        parse_bounded("x = 'éé'\n" * 10_000)


@pytest.mark.parametrize(
    "source",
    [
        "x = a" + ".b" * 5_000,
        "x = " + "+".join(["1"] * 5_000),
        "x = f" + "()" * 5_000,
    ],
)
def test_deep_trees_are_refused_by_depth_not_by_recursion(source: str) -> None:
    try:
        tree = parse_bounded(source)
    except SourceRejected as err:  # the parser itself may give up first
        assert "nested too deeply" in str(err)
        return
    with pytest.raises(SourceRejected, match=f"nested more than {MAX_DEPTH} levels deep"):
        bounded_nodes(tree)


def test_too_many_nodes_are_refused() -> None:
    source = "x = [" + "0," * (MAX_AST_NODES + 1) + "]"
    assert len(source.encode()) < 2 * MAX_AST_NODES + 10
    tree = ast.parse(source)  # within bounds to parse: only the walk counts nodes
    with pytest.raises(SourceRejected, match="syntax nodes"):
        bounded_nodes(tree)


def test_the_size_limit_is_checked_before_parsing() -> None:
    assert MAX_SOURCE_BYTES < 2 * MAX_AST_NODES + 10
    with pytest.raises(SourceRejected, match="bytes; the limit"):
        parse_bounded("[" + "0," * MAX_SOURCE_BYTES + "]")


def test_a_budget_counts_steps_and_stops_past_its_limit() -> None:
    budget = Budget(3, "the thing")
    budget.spend(2)
    budget.spend()
    assert budget.spent == 3
    with pytest.raises(SourceRejected, match="the thing takes more than 3 steps"):
        budget.spend()
