from __future__ import annotations

from pathlib import Path

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.loader import SourceProtocol, load_protocol_class
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation

PATH = Path(__file__).resolve().parent.parent.parent / "examples" / "protocols" / "state_aware.py"


def make():  # type: ignore[no-untyped-def]
    return load_protocol_class(PATH.read_text(), str(PATH))(3, 10)


def test_routes_rare_successes_and_useful_failures() -> None:
    tp = make()
    states = {
        0: {
            "inventory": ("air", "earth", "fire", "water", "steam"),
            "memories": (("fire", "water", "steam"), ("air", "earth", None)),
        },
        1: {"inventory": ("air", "earth", "fire", "water"), "memories": ()},
        2: {"inventory": ("air", "fire", "water"), "memories": (("fire", "fire", None),)},
    }
    out = tp.share_memories(0, states)
    # agent 1 lacks steam: gets the recipe; it holds air, earth and fire: both failures help
    assert sorted(out[1]) == [(0, 0), (0, 1), (2, 0)]
    assert out[1][0] == (0, 0)  # successes first
    # agent 2 lacks earth: no use for the failure air + earth
    assert out[2] == [(0, 0)]
    # agent 0 made steam and tried air + earth itself; fire + fire is useful to it
    assert out[0] == [(2, 0)]
    # nothing is sent twice to the same recipient
    again = tp.share_memories(1, states)
    assert again == {}
    assert {m["metric_name"] for m in tp.get_logs()} == {"successes_sent", "failures_sent"}


def test_runs_as_a_protocol_file(toy_graph: RecipeGraph) -> None:
    spec = SourceProtocol.from_file(PATH, trusted=True)
    config = SimConfig(n_agents=4, n_steps=20, agent_type="stochastic")
    result = run_simulation(make_domain(toy_graph), config, spec, seed=1)
    assert result.received > 0 and result.final >= 4
