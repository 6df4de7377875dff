"""The pre-check's view of which class is the protocol, in work linear in the class graph."""

from __future__ import annotations

import ast

from tpdisc.sandbox.bounds import MAX_CLASSES, Budget
from tpdisc.sandbox.classgraph import class_count_problem, protocol_class_problem

SHARE = "    def share_memories(self, i_step, agent_states):\n        return {}\n"


def ladder(n: int) -> str:
    """Each class inherits from the two before: exponentially many inheritance paths."""
    out = "class C0:\n" + SHARE + "class C1(C0):\n    pass\n"
    return out + "".join(f"class C{k}(C{k - 1}, C{k - 2}):\n    pass\n" for k in range(2, n))


def chain(n: int) -> str:
    links = "".join(f"class C{k}(C{k - 1}):\n    pass\n" for k in range(1, n))
    return "class C0:\n" + SHARE + links


def test_a_ladder_of_200_classes_takes_linear_work() -> None:
    budget = Budget(10**9, "test")
    assert protocol_class_problem(ast.parse(ladder(200)), budget) is None
    # one step per class and base, one per ancestor visit: about 3 per base reference
    assert budget.spent <= 4 * 200 * 3


def test_a_long_chain_is_refused_by_its_class_count_in_one_line() -> None:
    nodes = list(ast.walk(ast.parse(chain(3_000))))
    assert class_count_problem(nodes) == (
        f"the source defines 3,000 classes; the limit is {MAX_CLASSES}"
    )


def test_a_chain_at_the_limit_takes_linear_work() -> None:
    budget = Budget(10**9, "test")
    assert protocol_class_problem(ast.parse(chain(MAX_CLASSES)), budget) is None
    assert budget.spent <= 3 * 2 * MAX_CLASSES


def test_reused_names_refer_to_the_class_defined_before() -> None:
    # B -> A -> B(old): names form a cycle; the classes do not.
    source = "class B:\n" + SHARE + "class A(B):\n    pass\nclass B(A):\n    pass\n"
    assert protocol_class_problem(ast.parse(source)) is None
    source = "class A:\n" + SHARE + "class A(A):\n" + SHARE + "class B:\n" + SHARE
    assert protocol_class_problem(ast.parse(source)) == (
        "several classes define share_memories (A, B); name the one to use TransmissionProtocol"
    )


def test_the_conventional_name_settles_it_also_by_assignment() -> None:
    two = "class A:\n" + SHARE + "class B:\n" + SHARE
    assert protocol_class_problem(ast.parse(two + "TransmissionProtocol = A\n")) is None
    assert protocol_class_problem(ast.parse("x = 1\n")) == (
        "no class defines share_memories (name it TransmissionProtocol)"
    )
