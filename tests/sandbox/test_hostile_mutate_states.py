"""Hostile case: mutating agent_states."""

from __future__ import annotations

from tests.sandbox.helpers import asocial, protocol, same_simulation, simulate, source_spec
from tpdisc.domain.recipes import RecipeGraph

MUTATE = """
# Its own view must be intact every step, whatever it did to the previous one.
wrong = [a for a, s in agent_states.items() if len(s["memories"]) != i_step + 1]
if len(agent_states) != self.n_agents or wrong:
    raise RuntimeError(f"step {i_step}: corrupted view {wrong}")
for state in agent_states.values():
    state["memories"] = ()
    state["inventory"] = state["inventory"] + ("philosopher's stone",)
agent_states[0].clear()
agent_states[99] = {"inventory": ("gold",), "memories": (("a", "b", "gold"),)}
agent_states.clear()
"""


def test_mutations_change_nothing_outside_the_protocol(toy_graph: RecipeGraph) -> None:
    spec = source_spec(protocol(MUTATE, init="self.n_agents = n_agents", reach_sys=False))
    for seed in (0, 1, 2):
        mutated = simulate(toy_graph, spec, seed)
        assert same_simulation(mutated, simulate(toy_graph, asocial(), seed))
