"""The result tables of evaluate and compare: what the significance column says."""

from __future__ import annotations

import io

from rich.console import Console

from tpdisc.cli.tables import results_table, versus
from tpdisc.sim.evaluate import Evaluation


def evaluation(name: str, final: list[int]) -> Evaluation:
    return Evaluation(name, list(range(len(final))), final, [[4, f] for f in final])


def rows(*evaluations: Evaluation) -> dict[str, list[str]]:
    table = results_table(list(evaluations), "t", versus(list(evaluations), "paired"))
    out = io.StringIO()
    Console(file=out, width=300).print(table)
    cells = [line.split("│") for line in out.getvalue().splitlines() if line.startswith("│")]
    return {row[1].strip(): [c.strip() for c in row[2:-1]] for row in cells}


def test_a_protocol_that_does_worse_than_the_reference_reads_not_better_not_p_1() -> None:
    shown = rows(
        evaluation("better", [30, 31, 32, 33]),
        evaluation("paired", [20, 21, 22, 23]),
        evaluation("same", [20, 21, 22, 23]),
        evaluation("lower", [10, 11, 12, 13]),
    )
    assert shown["paired"][-2:] == ["reference", ""]
    assert shown["better"][-2] == "+10.00" and shown["better"][-1].endswith("***")
    assert shown["same"][-2:] == ["+0.00", "not better"]  # not better: nothing to test
    assert shown["lower"][-2:] == ["-10.00", "not better"]
