from __future__ import annotations

import pickle
import random

import pytest

from tpdisc.protocols.states import Snapshot

MEMORIES = [("air", "water", "steam"), ("fire", "fire", None), ("earth", "water", "mud")]


def test_reads_like_the_tuple_of_its_items() -> None:
    items = list(MEMORIES)
    view, plain = Snapshot(items), tuple(MEMORIES)
    assert len(view) == 3 and view == plain and plain == view and view != plain[:2]
    assert view[0] == plain[0] and view[-1] == plain[-1]
    for cut in (slice(1, None), slice(None, None, -1), slice(-2, -1), slice(5, 9)):
        assert view[cut] == plain[cut] and isinstance(view[cut], tuple)
    assert list(view) == list(plain) and list(reversed(view)) == list(reversed(plain))
    assert (
        ("fire", "fire", None) in view and view.index(plain[2]) == 2 and view.count(plain[0]) == 1
    )
    extra = (("fire", "water", "steam"),)
    assert view + extra == (*plain, *extra) and extra + view == (*extra, *plain)
    assert hash(view) == hash(plain) and repr(view) == repr(plain)
    assert sorted(view, key=str) == sorted(plain, key=str)
    assert random.Random(0).sample(view, 2) == random.Random(0).sample(plain, 2)
    assert pickle.loads(pickle.dumps(view)) == plain
    with pytest.raises(IndexError):
        view[3]
    with pytest.raises(IndexError):
        view[-4]
    with pytest.raises(TypeError):
        view[0] = ("x", "y", None)  # type: ignore[index]


def test_fixed_when_made_while_the_list_grows() -> None:
    items = list(MEMORIES[:1])
    first = Snapshot(items)
    items.append(MEMORIES[1])
    second = Snapshot(items)
    assert len(first) == 1 and list(first) == MEMORIES[:1] and first[-1] == MEMORIES[0]
    assert first[:5] == tuple(MEMORIES[:1])
    assert second.since(first) == (MEMORIES[1],) and first.since(second) is None
    assert second.since(Snapshot(list(items))) is None and second.since(tuple(items)) is None
    assert second.since(second) == ()
