"""The pre-check: fast, readable problems for an LLM to repair."""

from __future__ import annotations

import pytest

from tpdisc.sandbox import precheck
from tpdisc.sandbox.allowlist import ALLOWED_TEXT

GOOD = """
from __future__ import annotations
import math, random
from collections import defaultdict
from typing import Dict
import numpy as np
from sklearn.neighbors import KDTree
from sklearn import metrics


class TransmissionProtocol:
    def __init__(self, n_agents: int, n_steps: int) -> None:
        self.n = n_agents

    def share_memories(self, i_step: int, agent_states: Dict) -> dict:
        return {a: [] for a in range(self.n) if self.__class__.__name__}
"""


def test_a_clean_protocol_has_no_problem() -> None:
    assert precheck(GOOD) == []


def test_a_syntax_error_is_reported_alone_with_its_line() -> None:
    assert precheck("import os\nclass P:\n    def share_memories(self)\n") == [
        "SyntaxError at line 3: expected ':'"
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("import os", "line 1: os is not allowed"),
        ("import os.path", "line 1: os.path is not allowed"),
        ("from subprocess import run", "line 1: subprocess is not allowed"),
        ("import sklearn", "line 1: sklearn is not allowed"),
        ("from sklearn import svm", "line 1: sklearn.svm is not allowed"),
        ("import sklearn.cluster", "line 1: sklearn.cluster is not allowed"),
        ("import numpy, ctypes", "line 1: ctypes is not allowed"),
    ],
)
def test_disallowed_imports_are_named(line: str, problem: str) -> None:
    assert precheck(f"{line}\n{GOOD}") == [f"{problem} (allowed: {ALLOWED_TEXT})"]


def test_relative_imports_are_refused() -> None:
    assert precheck(f"from . import helpers\n{GOOD}") == [
        "line 1: relative imports are not allowed"
    ]


def test_forbidden_names_and_introspection_are_flagged_with_lines() -> None:
    source = GOOD + (
        "\n\ndef sneaky():\n"
        "    data = open('/etc/passwd').read()\n"
        "    eval('1 + 1')\n"
        "    return ().__class__.__base__.__subclasses__(), getattr(sneaky, '__globals__')\n"
    )
    first = source.splitlines().index("    data = open('/etc/passwd').read()") + 1
    assert precheck(source) == [
        f"line {first}: open is not allowed (no file access)",
        f"line {first + 1}: eval is not allowed (no dynamic code)",
        f"line {first + 2}: '__globals__' is not allowed (no introspection of internals)",
        f"line {first + 2}: .__base__ is not allowed (no introspection of internals)",
        f"line {first + 2}: .__subclasses__ is not allowed (no introspection of internals)",
    ]


def test_a_missing_protocol_class_is_reported() -> None:
    assert precheck("import math\nx = math.pi\n") == [
        "no class defines share_memories (name it TransmissionProtocol)"
    ]


def test_several_candidate_classes_need_the_conventional_name() -> None:
    two = "class A:\n    def share_memories(self, i, s):\n        return {}\n"
    two += "class B:\n    def share_memories(self, i, s):\n        return {}\n"
    assert precheck(two) == [
        "several classes define share_memories (A, B); name the one to use TransmissionProtocol"
    ]
    assert (
        precheck(two + "TransmissionProtocol = A\nclass TransmissionProtocol(A):\n    pass\n") == []
    )


def test_a_huge_source_is_refused_without_parsing() -> None:
    assert precheck("x = 1\n" * 300_000) == ["the source has 1,800,000 bytes; the limit is 100,000"]


def test_a_ladder_of_200_classes_is_checked_at_once() -> None:
    # Each class inherits from the two before: the old recursive search hung on it.
    source = "class C0:\n    def share_memories(self, i, s):\n        return {}\n"
    source += "class C1(C0):\n    pass\n"
    source += "".join(f"class C{k}(C{k - 1}, C{k - 2}):\n    pass\n" for k in range(2, 200))
    assert precheck(source) == []


def test_a_chain_of_3000_classes_is_one_line_not_a_recursion_error() -> None:
    source = "class C0:\n    def share_memories(self, i, s):\n        return {}\n"
    source += "".join(f"class C{k}(C{k - 1}):\n    pass\n" for k in range(1, 3_000))
    assert precheck(source) == ["the source defines 3,000 classes; the limit is 256"]


def test_deeply_nested_code_is_one_line() -> None:
    assert precheck("x = " + "-" * 50_000 + "1\n") == [
        "the source is nested too deeply to parse (simplify the deepest expression)"
    ]
    assert precheck("x = a" + ".b" * 500 + "\n") == [
        "line 1: the code is nested more than 100 levels deep"
    ]


def test_many_problems_are_capped() -> None:
    problems = precheck(GOOD + "".join(f"\nimport mod{k}" for k in range(30)))
    assert len(problems) == 21
    assert problems[-1] == "… and 10 more"
