"""How the game hands the agents' states to protocol runners: read-only snapshots that
cost nothing to make.

An agent's inventory and memories only ever grow, one item at a time. Copying them into
fresh tuples at every step makes a step cost O(T) and a game O(T²). A :class:`Snapshot` is
the first ``n`` items of such a list, fixed when it is made; it reads like a tuple (length,
indexing, slices, iteration, ``in``, ``count``, ``index``, equality with tuples, ``+``) and
has no way to change the game. The baselines read snapshots as they are; protocol code gets
tuples made from them (see :class:`~tpdisc.protocols.interface.InProcessRunner`), and the
sandbox runner sends only what a snapshot added.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, overload


class Snapshot(Sequence[Any]):
    """The first ``length`` items of ``items``, a list that is only ever appended to."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[Any], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length

    def since(self, earlier: object) -> tuple[Any, ...] | None:
        """The items added since ``earlier`` when this snapshot extends it (the same list,
        as long or longer), else None."""
        if (
            type(earlier) is Snapshot
            and earlier._items is self._items
            and earlier._length <= self._length
        ):
            return tuple(self._items[earlier._length : self._length])
        return None

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step > 0:  # bounds within the snapshot: a plain list slice
                return tuple(self._items[start:stop:step])
            return tuple(self._items[i] for i in range(start, stop, step))
        i = index.__index__()
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError("snapshot index out of range")
        return self._items[i]

    def __iter__(self) -> Iterator[Any]:
        return islice(self._items, self._length)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Snapshot | tuple):
            return len(other) == self._length and all(
                a == b for a, b in zip(self, other, strict=False)
            )
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, Snapshot | tuple):
            return tuple(self) + tuple(other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, tuple):
            return other + tuple(self)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Snapshot, (self._items[: self._length],))
