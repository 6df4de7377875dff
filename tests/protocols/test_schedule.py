"""The schedule: who sent how many memories to whom, per step, without content."""

from __future__ import annotations

import json
import random
from collections import Counter

from tpdisc.protocols.schedule import Schedule


def test_record_counts_per_teacher_and_learner() -> None:
    schedule = Schedule()
    schedule.record({0: [(2, 0), (1, 3), (2, 5)], 3: [(0, 1)]})
    schedule.record({})
    schedule.record({1: [(1, 0), (1, 0)]})
    assert schedule.steps == [[(0, 3, 1), (1, 0, 1), (2, 0, 2)], [], [(1, 1, 2)]]
    assert schedule.at(0) == [(0, 3, 1), (1, 0, 1), (2, 0, 2)]
    assert schedule.at(1) == []
    assert schedule.at(99) == []  # beyond the recorded run: nothing
    assert schedule.total_sent() == 6


def test_record_matches_a_plain_count_on_random_routings() -> None:
    """One teacher per learner (the common case, counted apart), several, or none."""
    draw = random.Random(3)
    for _ in range(300):
        exchanges = {
            learner: [(draw.choice([0, 1, 2, 5]), draw.randrange(9)) for _ in range(size)]
            for learner, size in enumerate(draw.choices(range(6), k=draw.randrange(8)))
        }
        if draw.random() < 0.5:  # mostly one teacher each, as the baselines route
            exchanges = {k: [(k + 1, i) for _, i in v] for k, v in exchanges.items()}
        schedule = Schedule()
        schedule.record(exchanges)
        expected = sorted(
            (teacher, learner, n)
            for learner, entries in exchanges.items()
            for teacher, n in Counter(t for t, _ in entries).items()
        )
        assert schedule.steps == [expected]


def test_same_routing_different_content_same_schedule() -> None:
    a, b = Schedule(), Schedule()
    a.record({0: [(1, 0), (1, 1)]})
    b.record({0: [(1, 7), (1, 7)]})
    assert a.steps == b.steps


def test_json_round_trip() -> None:
    schedule = Schedule()
    schedule.record({0: [(1, 0)], 1: [(0, 0), (2, 1)]})
    schedule.record({})
    text = json.dumps(schedule.to_json())
    back = Schedule.from_json(json.loads(text))
    assert back.steps == schedule.steps
    assert back.total_sent() == 3


def test_packed_round_trip_on_random_routings() -> None:
    rng = random.Random(7)
    for _ in range(50):
        schedule = Schedule()
        for _ in range(rng.randrange(0, 12)):
            schedule.record(
                {
                    learner: [(rng.randrange(6), rng.randrange(9)) for _ in range(rng.randrange(4))]
                    for learner in range(6)
                }
            )
        packed = schedule.packed()
        assert packed.sizes.tolist() == [len(step) for step in schedule.steps]
        assert packed.transfers.shape == (sum(len(step) for step in schedule.steps), 3)
        back = packed.unpacked()
        assert back == schedule
        assert all(type(v) is int for step in back.steps for t in step for v in t)
