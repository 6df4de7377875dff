"""The sandboxed runner with well-behaved protocols: same results as in-process, clear
errors for broken sources."""

from __future__ import annotations

import pytest

from tests.helpers import DATACLASS_PROTOCOL, FUTURE_ANNOTATIONS
from tests.sandbox.helpers import (
    FAST,
    RANDOM_PROTOCOL,
    fail_calls,
    same_simulation,
    simulate,
    source_spec,
    toy_states,
)
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.errors import ProtocolError
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.protocols.states import Snapshot
from tpdisc.sandbox import SandboxedSource, SandboxError, open_sandboxed
from tpdisc.sandbox.runner import SandboxRunner


def test_sandboxed_and_trusted_runs_of_one_file_give_the_same_simulation(
    toy_graph: RecipeGraph,
) -> None:
    for seed in (0, 7):
        trusted = simulate(toy_graph, SourceProtocol("p", RANDOM_PROTOCOL, "p.py", True), seed)
        sandboxed = simulate(toy_graph, SandboxedSource("p", RANDOM_PROTOCOL, "p.py"), seed)
        assert trusted.schedule.total_sent() > 0
        assert same_simulation(trusted, sandboxed)
        assert sandboxed.protocol_logs == [
            {
                "metric_name": "sent",
                "metric_description": "memories sent per agent",
                "metric_value": [int(v) for v in trusted.protocol_logs[0]["metric_value"]],
            }
        ]


@pytest.mark.parametrize("future", ["", FUTURE_ANNOTATIONS])
def test_a_dataclass_protocol_runs_sandboxed_as_it_runs_trusted(
    toy_graph: RecipeGraph, future: str
) -> None:
    source = future + DATACLASS_PROTOCOL
    trusted = simulate(toy_graph, SourceProtocol("p", source, "p.py", True), 3)
    sandboxed = simulate(toy_graph, SandboxedSource("p", source, "p.py"), 3)
    assert trusted.schedule.total_sent() > 0
    assert same_simulation(trusted, sandboxed)
    assert sandboxed.protocol_logs == trusted.protocol_logs


def test_the_caller_chooses_the_sandbox_and_a_plain_source_never_runs_untrusted() -> None:
    with SandboxedSource("p", RANDOM_PROTOCOL, "p.py").open(3, 5, 0) as runner:
        assert isinstance(runner, SandboxRunner)
    with SandboxedSource("p", RANDOM_PROTOCOL, "p.py", True).open(3, 5, 0) as runner:
        assert not isinstance(runner, SandboxRunner)
    with SourceProtocol("p", RANDOM_PROTOCOL, "p.py", trusted=True).open(3, 5, 0) as runner:
        assert not isinstance(runner, SandboxRunner)
    with pytest.raises(ProtocolError, match=r"p\.py: untrusted protocol code runs only in the"):
        SourceProtocol("p", RANDOM_PROTOCOL, "p.py").open(3, 5, 0)


@pytest.mark.parametrize("kind", ["tuples", "snapshots"])
def test_only_new_memories_cross_the_pipe_and_a_changed_prefix_is_resent(kind: str) -> None:
    echo = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        pass

    def share_memories(self, i_step, agent_states):
        # Echo what the worker sees, encoded as exchanges: (sender, last memory index) only
        # when the last memory is the one the parent expects ("fire" + str(index)).
        out = {}
        for agent, state in agent_states.items():
            memories = state["memories"]
            ok = all(m[2] == f"fire{k}" for k, m in enumerate(memories))
            if memories and ok and state["inventory"][-1] == f"item{len(memories)}":
                out[agent] = [(agent, len(memories) - 1)]
        return out
"""
    runner = open_sandboxed(source_spec(echo), 2, 10, 0)

    lists: dict[str, list] = {"memories": [], "inventory": []}

    def states(n: int, first: str = "fire0") -> dict:
        memories = [("a", "b", first if k == 0 else f"fire{k}") for k in range(n)]
        inventory = [f"item{k}" for k in range(n + 1)]
        if kind == "tuples":
            return {
                a: {"inventory": tuple(inventory), "memories": tuple(memories)} for a in range(2)
            }
        # as a game hands them: snapshots of lists that grow, a new list when history changed
        for name, items in (("memories", memories), ("inventory", inventory)):
            if items[: len(lists[name])] == lists[name]:
                lists[name].extend(items[len(lists[name]) :])
            else:
                lists[name] = items
        view = {"inventory": Snapshot(lists["inventory"]), "memories": Snapshot(lists["memories"])}
        return dict.fromkeys(range(2), view)

    sent: list[list] = []
    updates = runner._updates

    def recording(agent_states: dict) -> tuple:
        order, new = updates(agent_states)
        sent.append(new)
        return order, new

    runner._updates = recording  # type: ignore[method-assign]
    with runner:
        assert runner.share(0, states(1)) == {0: [(0, 0)], 1: [(1, 0)]}
        assert runner.share(1, states(3)) == {0: [(0, 2)], 1: [(1, 2)]}
        assert [(u[3], len(u[4])) for u in sent[-1]] == [(1, 2), (1, 2)]  # the tails only
        # The first memory changed: the mirror must follow, so the echo now refuses.
        assert runner.share(2, states(4, first="other")) == {}
        assert runner.share(3, states(5)) == {0: [(0, 4)], 1: [(1, 4)]}


def test_every_allowed_import_resolves_inside() -> None:
    source = """
from __future__ import annotations
import abc, bisect, copy, dataclasses, enum, operator, typing
import collections, collections.abc, functools, heapq, itertools, math, random, statistics
import numpy as np
import numpy.linalg
from numpy.random import default_rng
from sklearn.neighbors import BallTree, KDTree, NearestNeighbors
from sklearn.metrics import pairwise_distances
from sklearn.metrics.pairwise import cosine_similarity
from sklearn import neighbors, metrics


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.rng = default_rng(1)

    def share_memories(self, i_step, agent_states):
        x = self.rng.random((6, 3))
        KDTree(x).query(x, k=2)
        BallTree(x).query_radius(x, r=0.5)
        NearestNeighbors(n_neighbors=2).fit(x).kneighbors(x)
        cosine_similarity(x)
        pairwise_distances(x, metric="manhattan")
        np.fft.rfft(x[:, 0])
        np.linalg.pinv(x)
        statistics.median(list(x[:, 0]))
        heapq.nlargest(2, x[:, 1])
        return {0: [(1, 0)]}
"""
    with source_spec(source).open(3, 5, 0) as runner:
        assert runner.share(0, toy_states()) == {0: [(1, 0)]}


@pytest.mark.parametrize(
    ("source", "kind", "reason"),
    [
        (
            "class TransmissionProtocol:\n    def share_memories(self, a, b)\n",
            "syntax",
            "SyntaxError at line 2: expected ':'",
        ),
        ("import os\n", "import", "ImportError: os is not allowed (line 1) while loading"),
        (
            "from sklearn import svm\n",
            "import",
            "ImportError: sklearn.svm is not allowed (line 1) while loading",
        ),
        ("x = 1\n", "no-protocol", "no class with a share_memories method"),
        (
            "class P:\n    def __init__(self, n, t):\n        1 / 0\n"
            "    def share_memories(self, i, s):\n        return {}\n",
            "crash",
            "ZeroDivisionError: division by zero (line 3) in __init__",
        ),
        (
            "class P:\n    def __init__(self, n, t):\n        pass\n"
            "    def share_memories(self, i, s):\n        return s[99]\n",
            "crash",
            "KeyError: 99 (line 5) in share_memories at step 0",
        ),
    ],
)
def test_broken_sources_fail_with_their_kind_and_one_line_reason(
    source: str, kind: str, reason: str
) -> None:
    err = fail_calls(source, kind)
    assert err.reason == reason
    assert str(err) == f"hostile.py: {reason}"


def test_get_logs_failures_are_typed() -> None:
    source = (
        "class P:\n    def __init__(self, n, t):\n        pass\n"
        "    def share_memories(self, i, s):\n        return {}\n"
        "    def get_logs(self):\n        raise ValueError('no logs')\n"
    )
    with source_spec(source, FAST).open(2, 5, 0) as runner:
        runner.share(0, toy_states(2))
        with pytest.raises(Exception) as info:
            runner.logs()
    assert getattr(info.value, "kind", None) == "crash"
    assert str(info.value) == "hostile.py: ValueError: no logs (line 7) in get_logs"


def test_a_failed_runner_keeps_failing_the_same_way() -> None:
    source = (
        "class P:\n    def __init__(self, n, t):\n        pass\n"
        "    def share_memories(self, i, s):\n        return 3\n"
    )
    runner = open_sandboxed(source_spec(source), 2, 5, 0)
    with runner:
        with pytest.raises(Exception) as first:
            runner.share(0, toy_states(2))
        with pytest.raises(Exception) as second:
            runner.share(1, toy_states(2))
    assert first.value is second.value
    assert getattr(first.value, "kind", None) == "invalid-exchange"


def test_a_closed_runner_refuses_calls() -> None:
    runner = open_sandboxed(source_spec(RANDOM_PROTOCOL), 3, 5, 0)
    runner.close()
    runner.close()  # closing twice is harmless
    with pytest.raises(SandboxError) as info:
        runner.share(0, toy_states())
    assert (info.value.kind, info.value.reason) == (
        "sandbox",
        "the sandboxed runner is closed (in share_memories at step 0)",
    )
