"""Hostile case: protocols that draw OS entropy, so the same seed gives different results.

The pre-check refuses the obvious ways in; these sources bypass it as the other hostile tests
do (through ``sys``), to exercise the runtime: every Python-level entropy read in the worker
is served from a stream derived from the simulation seed, and the getrandom system call
itself is refused by the seccomp filter.
"""

from __future__ import annotations

import re

import pytest

from tests.sandbox.helpers import (
    fail_calls,
    protocol,
    same_simulation,
    simulate,
    source_spec,
    toy_states,
)
from tpdisc.domain.recipes import RecipeGraph

# Each draws a float in [0, 1) from somewhere other than the seeded global generators.
DRAWS = {
    "SystemRandom": "sys.modules['random'].SystemRandom().random()",
    "os.urandom": "int.from_bytes(sys.modules['os'].urandom(4), 'big') / 2**32",
    "secrets": "sys.modules['secrets'].randbits(32) / 2**32",
    "unseeded Random": "sys.modules['random'].Random().random()",
    "unseeded default_rng": "float(NP.random.default_rng().random())",
    "unseeded RandomState": "float(NP.random.RandomState().random_sample())",
    "random.seed()": "(sys.modules['random'].seed(), sys.modules['random'].random())[1]",
    "np.random.seed()": "(NP.random.seed(), NP.random.rand())[1]",
}


def sharing_by(draw: str) -> str:
    """A protocol whose every exchange is chosen by ``draw``."""
    share = f"""
    exchanges = {{}}
    for agent in agent_states:
        teacher = int(({draw}) * len(agent_states))
        n_mem = len(agent_states[teacher]["memories"])
        exchanges[agent] = [(teacher, int(({draw}) * n_mem))] if n_mem else []
    return exchanges
    """
    return protocol(share, prelude="NP = sys.modules['numpy']")


@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_the_same_seed_gives_the_same_simulation(toy_graph: RecipeGraph, draw: str) -> None:
    spec = source_spec(sharing_by(draw))
    first, *others = (simulate(toy_graph, spec, 7) for _ in range(3))
    assert all(same_simulation(first, other) for other in others)


def test_the_stream_follows_the_seed() -> None:
    # Not a constant: another seed draws other exchanges.
    spec = source_spec(sharing_by(DRAWS["SystemRandom"]))
    replies = []
    for seed in (0, 1):
        with spec.open(6, 5, seed) as runner:
            replies.append([runner.share(step, toy_states(6, 5)) for step in range(4)])
    assert replies[0] != replies[1]


@pytest.mark.parametrize(
    "share",
    ["sys.modules['os'].getrandom(4)", "sys.modules['posix'].urandom(4)"],
    ids=["getrandom", "posix.urandom"],
)
def test_the_getrandom_system_call_is_refused(share: str) -> None:
    err = fail_calls(protocol(share), "crash")
    assert re.match(r"PermissionError: \[Errno 1\] Operation not permitted", err.reason)


def test_random_module_internals_are_not_a_way_to_the_os() -> None:
    prelude = "import random\n"
    err = fail_calls(protocol("random._os.getpid()", prelude=prelude), "crash")
    assert "random._os is not available in the sandbox" in err.reason
    err = fail_calls(protocol("random._random.Random().random()", prelude=prelude), "crash")
    assert "random._random is not available in the sandbox" in err.reason
