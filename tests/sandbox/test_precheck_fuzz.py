"""Fuzzing the pre-check with generated class graphs and very large or deep sources.

hypothesis is not a dev dependency, so a seeded generator makes the cases: every run
checks the same ones. Each must give one-line problems, never an exception, in work
proportional to its size; and on class graphs the pre-check must agree with the loader.
"""

from __future__ import annotations

import ast
import random

import pytest

from tpdisc.errors import ProtocolError
from tpdisc.protocols.loader import find_protocol_class
from tpdisc.sandbox import precheck
from tpdisc.sandbox.bounds import MAX_CLASSES, Budget
from tpdisc.sandbox.classgraph import protocol_class_problem

SHARE = "    def share_memories(self, i, s):\n        return {}\n"


def class_graph(rng: random.Random) -> tuple[str, int]:
    """Classes whose names are drawn from a small pool (reused names make cycles among
    names), each with up to three earlier names as bases; returns the source and its
    number of class and base references."""
    pool = [f"K{k}" for k in range(rng.randint(1, 12))]
    lines: list[str] = []
    defined: list[str] = []
    links = 0
    for _ in range(rng.randint(1, 60)):
        name = rng.choice(pool)
        bases = rng.sample(sorted(set(defined)), min(len(set(defined)), rng.randint(0, 3)))
        links += 1 + len(bases)
        body = SHARE if rng.random() < 0.3 else "    pass\n"
        lines.append(f"class {name}({', '.join(bases)}):\n{body}")
        defined.append(name)
    return "".join(lines), links


def one_line_problems(source: str) -> list[str]:
    found = precheck(source)
    assert isinstance(found, list)
    assert all(isinstance(p, str) and p and "\n" not in p for p in found)
    return found


@pytest.mark.parametrize("seed", range(150))
def test_random_class_graphs_agree_with_the_loader_in_linear_work(seed: int) -> None:
    rng = random.Random(seed)
    source, links = class_graph(rng)
    found = one_line_problems(source)
    budget = Budget(10**9, "test")
    class_problem = protocol_class_problem(ast.parse(source), budget)
    assert budget.spent <= 3 * links
    assert [p for p in found if "share_memories" in p] == ([class_problem] if class_problem else [])
    namespace: dict[str, object] = {"__name__": "fuzz"}
    try:
        exec(compile(source, "<fuzz>", "exec"), namespace)
    except TypeError:  # an inconsistent MRO: Python refuses the class, nothing to compare
        return
    try:
        find_protocol_class(namespace, "fuzz")
    except ProtocolError:
        assert class_problem is not None
    else:
        assert class_problem is None


@pytest.mark.parametrize("size", [2, 50, 199, MAX_CLASSES, MAX_CLASSES + 1, 1_000, 3_000])
@pytest.mark.parametrize("shape", ["chain", "ladder", "wide"])
def test_chains_ladders_and_wide_graphs_are_bounded(shape: str, size: int) -> None:
    source = "class C0:\n" + SHARE
    for k in range(1, size):
        bases = {
            "chain": f"C{k - 1}",
            "ladder": ", ".join(f"C{j}" for j in (k - 1, k - 2) if j >= 0),
            "wide": ", ".join(f"C{j}" for j in range(max(0, k - 8), k)),
        }[shape]
        source += f"class C{k}({bases}):\n    pass\n"
    found = one_line_problems(source)
    if size > MAX_CLASSES:
        assert len(found) == 1
        assert "classes; the limit is" in found[0] or "bytes; the limit is" in found[0]
    else:
        assert found == []
        budget = Budget(10**9, "test")
        protocol_class_problem(ast.parse(source), budget)
        assert budget.spent <= 3 * 9 * size


def nested(rng: random.Random, depth: int) -> str:
    """An expression nested ``depth`` deep in one of the ways Python's grammar allows."""
    kind = rng.choice(["unary", "not", "parens", "list", "attr", "call", "sum", "lambda", "if"])
    inner = "x"
    if kind == "unary":
        return "-" * depth + inner
    if kind == "not":
        return "not " * depth + inner
    if kind == "parens":
        return "(" * depth + inner + ")" * depth
    if kind == "list":
        return "[" * depth + inner + "]" * depth
    if kind == "attr":
        return inner + ".a" * depth
    if kind == "call":
        return inner + "()" * depth
    if kind == "sum":
        return " + ".join([inner] * depth)
    if kind == "lambda":
        return "lambda: " * depth + inner
    return " if x else ".join([inner] * depth)


@pytest.mark.parametrize("seed", range(60))
def test_deep_and_large_sources_give_one_line_problems(seed: int) -> None:
    rng = random.Random(seed)
    depth = rng.choice([10, 99, 150, 1_000, 5_000, 30_000])
    source = f"y = {nested(rng, depth)}\n"
    if rng.random() < 0.3:  # padding towards and past the size limit
        source += "z = 1\n" * rng.choice([100, 10_000, 20_000])
    if rng.random() < 0.3:  # garbage
        source += "".join(rng.choice("()[]{}:.,=+-*/ \nab1'\"#\\") for _ in range(200))
    one_line_problems(source + "class TransmissionProtocol:\n" + SHARE)
