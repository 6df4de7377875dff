"""Hostile case: protocols whose choices follow heap addresses or the wall clock, so that
the same seed would give different simulations.

The sources bypass the pre-check (which refuses ``id`` and numpy's clock), as the other
hostile tests do, to exercise the runtime: the zygote runs without address-space
randomisation and with a fixed hash seed, so addresses repeat run to run. Each run below
starts a fresh zygote, as a new command would: in one zygote the layout repeats anyway.
"""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import protocol, same_simulation, simulate, source_spec
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.sandbox import client

# Each draws a float in [0, 1) from something that follows the heap's addresses.
DRAWS = {
    "id": "mix(id(object()))",
    "hash": "mix(hash(object()))",
    "repr": "mix(int(repr(object())[-13:-1], 16))",
    "set order": "[o.k for o in {O(k) for k in range(9)}][0] / 9",
    "numpy buffer": "mix(NP.zeros(3).__array_interface__['data'][0])",
    "uninitialised numpy memory": "mix(int(NP.empty(64, dtype=NP.int64).sum()) & 0xFFFFFFFFFFFF)",
}
PRELUDE = """
NP = sys.modules['numpy']


def mix(x):
    # Every bit of an address moves the draw (addresses differ above the page offset).
    return (x * 2654435761 % 4294967296) / 4294967296


class O:
    def __init__(self, k=0):
        self.k = k
"""


def sharing_by(draw: str) -> str:
    share = f"""
    exchanges = {{}}
    for agent in agent_states:
        teacher = int(({draw}) * len(agent_states))
        n_mem = len(agent_states[teacher]["memories"])
        exchanges[agent] = [(teacher, int(({draw}) * n_mem))] if n_mem else []
    return exchanges
    """
    return protocol(share, prelude=PRELUDE)


@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_three_runs_give_the_same_simulation(toy_graph: RecipeGraph, draw: str) -> None:
    spec = source_spec(sharing_by(draw))
    runs = []
    for _ in range(3):
        client.shutdown()  # a fresh zygote, as in a new process
        runs.append(simulate(toy_graph, spec, 7))
    first, *others = runs
    assert all(same_simulation(first, other) for other in others)
