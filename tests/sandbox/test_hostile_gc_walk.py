"""Hostile case: gc.get_objects() walks."""

from __future__ import annotations

from tests.sandbox.helpers import fail_calls, protocol

SIMULATOR_TYPES = ["Game", "SimConfig", "RecipeGraph", "Domain", "AgentState", "SandboxRunner"]


def test_the_walk_finds_no_object_of_the_simulation() -> None:
    share = f"""
    gc = sys.modules['gc']
    gc.unfreeze()  # the zygote froze its heap; a thorough walker thaws it first
    everything = gc.get_objects()
    names = {{type(o).__name__ for o in everything}}
    found = sorted(names & set({SIMULATOR_TYPES!r}))
    raise RuntimeError(f"walked={{len(everything) > 10_000}} found={{found}}")
    """
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("RuntimeError: walked=True found=[] (line ")


def test_rewriting_the_worker_mirror_cannot_smuggle_an_exchange_through() -> None:
    # The protocol inflates its worker's copy of agent 1's memories, so the worker's own check
    # accepts index 60; the parent checks against the real states (2 memories) and refuses.
    share = """
    gc = sys.modules['gc']
    session = next(o for o in gc.get_objects() if type(o).__name__ == "Session")
    session.memories[1] = session.memories[1] * 50
    return {0: [(1, 60)]}
    """
    err = fail_calls(protocol(share), "malformed-reply")
    assert err.reason == "malformed reply from the worker in share_memories at step 0"
