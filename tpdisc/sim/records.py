"""What a search keeps of the simulations it scores, for the analyses that follow.

The analyses of a run (the behavioural features, the ablation, volume) simulate its
protocols on seeds the search scored them on: the same simulations, since a simulation is
fixed by its settings, its protocol and its seed. So the search keeps, per protocol and
seed it is asked to, a :class:`SimRecord`: the coverage curve and delivery counts, the
schedule (who sent how many memories to whom, step by step: what the ablation's replay
replays) and the tally the features pool (:mod:`tpdisc.sim.transmissions`), but not the
transmission log. :func:`encode` packs a protocol's records into a few tens of kB (the
schedule is most of it), :func:`decode` reads them back, checking every value: an archive
may come from anyone.

Records belong to the settings they were simulated under: :func:`simulation_settings`
(the simulation's config and the recipe data), named by :func:`settings_hash`, the key
analyses store their own results under too.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tpdisc.errors import excerpt
from tpdisc.protocols.schedule import PackedSchedule
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import SimResult
from tpdisc.sim.transmissions import Tally

# The layout of an encoded record, and what its tallies mean: a new definition of a tally
# makes earlier records unreadable as such (they are then simulated again, as without).
FORMAT = 1
# Far above any real protocol's records (30 seeds of 20 agents over 300 steps routing to
# everyone: about 30 MB), far below what would exhaust memory when decompressed.
MAX_DECODED = 1 << 28
_DTYPES = ("u1", "u2", "u4", "u8", "f8")
# Bound of every whole number read back: far above any count of a game, far below what
# overflows the sums made of them.
MAX_COUNT = 2**40
_LENGTH = struct.Struct("<I")


def simulation_settings(sim: SimConfig, recipes_sha256: str | None) -> dict[str, Any]:
    """What, with a protocol and a seed, fixes a simulation: its config and the recipe
    data (plain JSON data)."""
    return {"sim": sim.to_dict(), "recipes_sha256": recipes_sha256}


def settings_hash(settings: Mapping[str, Any]) -> str:
    """A short stable name for ``settings`` (plain JSON data): equal settings, equal hash."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class SimRecord:
    """One simulation as the analyses need it: its outcome, its schedule and its tally."""

    seed: int
    curve: tuple[int, ...]  # coverage before the first step, then after each step
    received: int  # memories delivered past the bottleneck, all agents together
    novel_received: int  # of those, pairs the learner had not tried itself before
    schedule: PackedSchedule
    tally: Tally

    @property
    def final(self) -> int:
        return self.curve[-1]

    @classmethod
    def of(cls, result: SimResult) -> SimRecord:
        """The record of a simulation run with ``tally=True``."""
        if result.tally is None:
            raise ValueError(f"simulation of seed {result.seed} has no tally")
        return cls(
            seed=result.seed,
            curve=tuple(result.curve),
            received=result.received,
            novel_received=result.novel_received,
            schedule=result.schedule.packed(),
            tally=result.tally,
        )

    def same_as(self, other: SimRecord) -> bool:
        """Whether both record the same simulation, value for value."""
        return (
            (self.seed, self.curve, self.received, self.novel_received, self.tally)
            == (other.seed, other.curve, other.received, other.novel_received, other.tally)
            and np.array_equal(self.schedule.sizes, other.schedule.sizes)
            and np.array_equal(self.schedule.transfers, other.schedule.transfers)
        )


def _narrowest(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """``values`` (whole numbers, none negative) in the smallest unsigned type that holds
    them."""
    array = np.asarray(values, dtype=np.int64)
    top = int(array.max(initial=0))
    for dtype in _DTYPES[:-1]:
        if top <= np.iinfo(dtype).max:
            return array.astype(dtype)
    raise ValueError(f"{top} is too large to record")  # unreachable: int64 fits u8


def _joined(parts: Sequence[np.ndarray], width: int = 0) -> np.ndarray:
    empty = np.zeros((0, width) if width else 0, dtype=np.int64)
    return np.concatenate([empty, *parts])


def _undefined_as_nan(value: float | None) -> float:
    return math.nan if value is None else value


def _pairs_sent(records: Sequence[SimRecord], n_agents: int, n_steps: int) -> np.ndarray:
    """Per record and step, which (teacher, learner) pairs sent anything: one bit each,
    teacher-major, as a schedule lists them."""
    sizes = _joined([r.schedule.sizes for r in records])
    transfers = _joined([r.schedule.transfers for r in records], 3)
    sent = np.zeros((len(records) * n_steps, n_agents * n_agents), dtype=bool)
    sent[np.repeat(np.arange(sizes.size), sizes), transfers[:, 0] * n_agents + transfers[:, 1]] = (
        True
    )
    return np.packbits(sent, axis=None)


def encode(records: Sequence[SimRecord], n_agents: int, n_steps: int) -> bytes:
    """A protocol's records (simulations of ``n_agents`` over ``n_steps``), packed and
    compressed: a JSON header naming the arrays, then the arrays, each of every seed in
    order. Curves are kept as their start and each step's gain; schedules as one bit per
    step and pair of agents (which sent anything), then what each of those pairs sent, in
    order: half the bytes of the transfers listed, and cheaper to compress (a protocol's
    routing is most of its records, and it is as random as the protocol makes it)."""
    if any(len(r.schedule.sizes) != n_steps for r in records):
        raise ValueError(f"a schedule of other than {n_steps} steps")
    transfers = _joined([r.schedule.transfers for r in records], 3)
    counts, sums, values = Tally.counts(), Tally.sums(), Tally.values()
    streams = {
        "start": _narrowest([r.curve[0] for r in records]),
        "gains": _narrowest(_joined([np.diff(r.curve) for r in records])),
        "received": _narrowest([r.received for r in records]),
        "novel": _narrowest([r.novel_received for r in records]),
        "pairs": _pairs_sent(records, n_agents, n_steps),
        "sent": _narrowest(transfers[:, 2]),
        "counts": _narrowest([[getattr(r.tally, n) for n in counts] for r in records]),
        "sums": np.array([[getattr(r.tally, n) for n in sums] for r in records], dtype="<f8"),
        "values": np.array(
            [[_undefined_as_nan(getattr(r.tally, n)) for n in values] for r in records],
            dtype="<f8",
        ),
    }
    header = {
        "format": FORMAT,
        "agents": n_agents,
        "steps": n_steps,
        "seeds": [r.seed for r in records],
        "tally": [*counts, *sums, *values],
        "streams": [[name, a.dtype.str[1:], int(a.size)] for name, a in streams.items()],
    }
    text = json.dumps(header, separators=(",", ":")).encode()
    body = b"".join(
        a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes() for a in streams.values()
    )
    # the fastest level: 9 % larger than the default one, a quarter of its time
    return zlib.compress(_LENGTH.pack(len(text)) + text + body, 1)


class RecordError(ValueError):
    """Encoded records that are not what :func:`encode` writes (a damaged or forged
    archive), with what is wrong."""


def _inflated(data: bytes) -> bytes:
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(data, MAX_DECODED)
    except zlib.error as err:
        raise RecordError(f"not compressed records ({err})") from None
    if inflate.unconsumed_tail:
        raise RecordError(f"more than {MAX_DECODED:,} bytes once decompressed")
    if not inflate.eof:
        raise RecordError("the compressed records end early")
    return raw


def _header(raw: bytes) -> tuple[dict[str, Any], int]:
    if len(raw) < _LENGTH.size:
        raise RecordError("no header")
    (length,) = _LENGTH.unpack_from(raw)
    end = _LENGTH.size + length
    try:
        header = json.loads(raw[_LENGTH.size : end].decode())
    except (ValueError, RecursionError):
        raise RecordError("the header is not JSON") from None
    if not isinstance(header, dict):
        raise RecordError(f"the header is not an object: {excerpt(header)}")
    return header, end


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _streams(header: Mapping[str, Any], raw: bytes, start: int) -> dict[str, np.ndarray]:
    listed = header.get("streams")
    if not isinstance(listed, list):
        raise RecordError("the header lists no arrays")
    out: dict[str, np.ndarray] = {}
    at = start
    for entry in listed:
        if not (
            isinstance(entry, list)
            and len(entry) == 3
            and isinstance(entry[0], str)
            and entry[1] in _DTYPES
            and _whole(entry[2])
            and entry[2] >= 0
        ):
            raise RecordError(f"the header lists a bad array: {excerpt(entry)}")
        name, dtype, size = entry
        nbytes = np.dtype(dtype).itemsize * size
        if at + nbytes > len(raw):
            raise RecordError(f"array {excerpt(name)} runs past the end")
        out[name] = np.frombuffer(raw, dtype="<" + dtype, count=size, offset=at)
        at += nbytes
    if at != len(raw):
        raise RecordError(f"{len(raw) - at:,} bytes after the last array")
    return out


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise RecordError(what)


def decode(data: bytes, n_agents: int, n_steps: int, bottleneck: int) -> list[SimRecord]:
    """The records :func:`encode` packed, of simulations of ``n_agents`` over ``n_steps``
    with that bottleneck; a :class:`RecordError` saying what is wrong with anything else."""
    raw = _inflated(data)
    header, start = _header(raw)
    _check(header.get("format") == FORMAT, f"format {excerpt(header.get('format'))}, not {FORMAT}")
    _check(
        header.get("agents") == n_agents and header.get("steps") == n_steps,
        f"records of {excerpt(header.get('agents'))} agents over "
        f"{excerpt(header.get('steps'))} steps, not {n_agents} over {n_steps}",
    )
    seeds = header.get("seeds")
    if not (isinstance(seeds, list) and all(_whole(s) and s >= 0 for s in seeds)):
        raise RecordError(f"seeds: expected whole numbers, got {excerpt(seeds)}")
    counts, sums, values = Tally.counts(), Tally.sums(), Tally.values()
    _check(header.get("tally") == [*counts, *sums, *values], "another tally's fields")
    _check(len(set(seeds)) == len(seeds), "seeds: one of them twice")
    got = _streams(header, raw, start)
    for name, array in got.items():
        if array.dtype.kind == "u":
            _check(int(array.max(initial=0)) <= MAX_COUNT, f"array {name}: a value out of range")
    n = len(seeds)
    cells = n * n_steps * n_agents * n_agents
    shapes = {
        "start": n, "gains": n * n_steps, "received": n, "novel": n, "pairs": -(-cells // 8),
        "counts": n * len(counts), "sums": n * len(sums), "values": n * len(values),
    }  # fmt: skip
    for name, size in shapes.items():
        _check(name in got and got[name].size == size, f"array {name}: not {size} values")
    _check(got["pairs"].dtype == np.uint8, "array pairs: not bytes")
    pairs = np.unpackbits(got["pairs"], count=cells).reshape(n * n_steps, n_agents * n_agents)
    _check(
        not np.unpackbits(got["pairs"])[cells:].any(), "array pairs: bits set past the last pair"
    )
    step, cell = np.nonzero(pairs)
    _check("sent" in got and got["sent"].size == step.size, f"array sent: not {step.size} values")
    _check(bool(np.isfinite(got["sums"]).all()), "array sums: a value not finite")
    _check(not np.isinf(got["values"]).any(), "array values: a value not finite")
    sent = got["sent"]
    _check(
        int(sent.min(initial=1)) >= 1 and int(sent.max(initial=1)) <= bottleneck * n_agents,
        f"array sent: a count outside 1..{bottleneck * n_agents}",
    )
    _check(
        bool((got["novel"].astype(np.uint64) <= got["received"].astype(np.uint64)).all()),
        "array novel: more novel memories than received",
    )
    curves = np.cumsum(
        np.column_stack(
            [got["start"].astype(np.int64), got["gains"].astype(np.int64).reshape(n, n_steps)]
        ),
        axis=1,
    )
    sizes = np.bincount(step, minlength=n * n_steps).reshape(n, n_steps)
    ends = np.cumsum(sizes.sum(axis=1))
    transfers = np.column_stack([cell // n_agents, cell % n_agents, sent.astype(np.int64)]).astype(
        np.int64
    )
    whole = got["counts"].astype(np.int64).reshape(n, len(counts)).tolist()
    real = got["sums"].reshape(n, len(sums)).tolist()
    defined = got["values"].reshape(n, len(values)).tolist()
    records = []
    names = (*counts, *sums, *values)
    for k, seed in enumerate(seeds):
        value = [None if math.isnan(v) else v for v in defined[k]]
        tally = Tally(**dict(zip(names, (*whole[k], *real[k], *value), strict=True)))
        first = int(ends[k - 1]) if k else 0
        records.append(
            SimRecord(
                seed=seed,
                curve=tuple(curves[k].tolist()),
                received=int(got["received"][k]),
                novel_received=int(got["novel"][k]),
                schedule=PackedSchedule(sizes[k], transfers[first : int(ends[k])]),
                tally=tally,
            )
        )
    return records
