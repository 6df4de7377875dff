"""A search's records (tpdisc.sim.records): what a simulation leaves for the analyses,
packed and read back value for value, and every kind of damaged or forged bytes refused
in one line naming what is wrong."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.protocols.ablation import ReplayProtocol
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import AblatedTask, ReplayTask
from tpdisc.sim.game import run_simulation
from tpdisc.sim.records import (
    MAX_DECODED,
    RecordError,
    SimRecord,
    decode,
    encode,
    settings_hash,
    simulation_settings,
)

CONFIG = SimConfig(n_agents=5, n_steps=20, agent_type="stochastic", bottleneck=3)


@pytest.fixture
def toy(toy_graph: RecipeGraph) -> Domain:
    return make_domain(toy_graph)


def recorded(toy: Domain, seeds=range(4), protocol: str = "dynamic") -> list[SimRecord]:
    spec = BaselineProtocol(protocol)
    return [SimRecord.of(run_simulation(toy, CONFIG, spec, s, tally=True)) for s in seeds]


def test_records_come_back_value_for_value(toy: Domain) -> None:
    records = recorded(toy)
    back = decode(encode(records, 5, 20), 5, 20, 3)
    assert [r.seed for r in back] == [0, 1, 2, 3]
    assert all(a.same_as(b) for a, b in zip(records, back, strict=True))
    for a, b in zip(records, back, strict=True):
        assert a.schedule.unpacked().steps == b.schedule.unpacked().steps
        assert b.final == b.curve[-1] and len(b.curve) == 21
    assert decode(encode([], 5, 20), 5, 20, 3) == []


def test_a_record_is_the_simulation_run_again(toy: Domain) -> None:
    spec = BaselineProtocol("stochastic")
    record = SimRecord.of(run_simulation(toy, CONFIG, spec, 7, tally=True))
    record = decode(encode([record], 5, 20), 5, 20, 3)[0]
    original, ablated = AblatedTask(toy, CONFIG, spec, 7, tally=True)()
    assert tuple(original.curve) == record.curve and original.tally == record.tally
    assert (original.received, original.novel_received) == (
        record.received,
        record.novel_received,
    )
    # the replay of the recorded schedule is the ablated half of the pair, tally and all
    replay = ReplayTask(toy, CONFIG, spec.name, record.schedule, 7, tally=True)()
    assert replay.curve == ablated.curve and replay.tally == ablated.tally
    alone = run_simulation(toy, CONFIG, ReplayProtocol("x", original.schedule), 7)
    assert alone.curve == replay.curve


def test_undefined_synergy_survives_the_round_trip(toy: Domain) -> None:
    one = SimConfig(n_agents=1, n_steps=6, agent_type="stochastic")
    result = run_simulation(toy, one, BaselineProtocol("asocial"), 0, tally=True)
    record = SimRecord.of(result)
    assert record.tally.synergy_early is None
    (back,) = decode(encode([record], 1, 6), 1, 6, 20)
    assert back.tally == record.tally


def test_settings_name_the_simulation() -> None:
    a = simulation_settings(CONFIG, "abc")
    assert settings_hash(a) == settings_hash(json.loads(json.dumps(a)))
    assert settings_hash(a) != settings_hash(simulation_settings(CONFIG, "abd"))
    longer = SimConfig(n_agents=5, n_steps=21, agent_type="stochastic", bottleneck=3)
    assert settings_hash(a) != settings_hash(simulation_settings(longer, "abc"))


def test_a_simulation_without_its_tally_has_no_record(toy: Domain) -> None:
    result = run_simulation(toy, CONFIG, BaselineProtocol("paired"), 0)
    with pytest.raises(ValueError, match="no tally"):
        SimRecord.of(result)


def _raw(data: bytes) -> tuple[dict, bytes]:
    raw = zlib.decompress(data)
    (length,) = struct.unpack_from("<I", raw)
    return json.loads(raw[4 : 4 + length]), raw[4 + length :]


def _packed(header: dict, body: bytes) -> bytes:
    text = json.dumps(header).encode()
    return zlib.compress(struct.pack("<I", len(text)) + text + body)


def _with_stream(data: bytes, name: str, values: np.ndarray) -> bytes:
    """``data`` with one array replaced by ``values`` (its dtype and size)."""
    header, body = _raw(data)
    out, at = [], 0
    for entry in header["streams"]:
        size = np.dtype(entry[1]).itemsize * entry[2]
        part = body[at : at + size]
        if entry[0] == name:
            entry[1], entry[2] = values.dtype.str[1:], int(values.size)
            part = values.astype(values.dtype.newbyteorder("<")).tobytes()
        out.append(part)
        at += size
    return _packed(header, b"".join(out))


@pytest.mark.parametrize(
    ("forge", "message"),
    [
        (lambda d: b"not zlib", "not compressed"),
        (lambda d: d[: len(d) // 2], "end early"),
        (lambda d: zlib.compress(b"\x01"), "no header"),
        (lambda d: zlib.compress(struct.pack("<I", 3) + b"[1]"), "not an object"),
        (lambda d: zlib.compress(struct.pack("<I", 2) + b"{x"), "not JSON"),
        (lambda d: _packed({**_raw(d)[0], "format": 99}, _raw(d)[1]), "format 99"),
        (lambda d: _packed({**_raw(d)[0], "agents": 6}, _raw(d)[1]), "6 agents over 20"),
        (lambda d: _packed({**_raw(d)[0], "seeds": [0, -1, 2, 3]}, _raw(d)[1]), "seeds"),
        (lambda d: _packed({**_raw(d)[0], "seeds": [0, 0, 2, 3]}, _raw(d)[1]), "twice"),
        (lambda d: _packed({**_raw(d)[0], "tally": ["events"]}, _raw(d)[1]), "tally's fields"),
        (lambda d: _packed({**_raw(d)[0], "streams": {}}, _raw(d)[1]), "lists no arrays"),
        (lambda d: _packed({**_raw(d)[0], "streams": [["x", "f4", 1]]}, b"abcd"), "a bad array"),
        (lambda d: _packed(_raw(d)[0], _raw(d)[1][:-8]), "runs past the end"),
        (lambda d: _packed(_raw(d)[0], _raw(d)[1] + b"x"), "after the last array"),
        (lambda d: _with_stream(d, "pairs", np.full(3, 5, "u1")), "array pairs: not 250"),
        (lambda d: _with_stream(d, "pairs", np.full(250, 0, "u2")), "array pairs: not bytes"),
        (lambda d: _with_stream(d, "sums", np.full(4 * 11, np.inf)), "not finite"),
        (lambda d: _with_stream(d, "values", np.full(4 * 2, -np.inf)), "not finite"),
        (lambda d: _with_stream(d, "gains", np.full(80, 2**62, "u8")), "out of range"),
        (lambda d: _with_stream(d, "novel", np.full(4, 10**6, "u4")), "more novel"),
        (lambda d: _with_stream(d, "sent", np.full(3, 1, "u1")), "array sent: not"),
    ],
)
def test_damaged_or_forged_records_are_refused(toy: Domain, forge, message) -> None:
    data = encode(recorded(toy), 5, 20)
    with pytest.raises(RecordError, match=message):
        decode(forge(data), 5, 20, 3)


def test_counts_out_of_range_and_stray_bits_are_refused(toy: Domain) -> None:
    records = recorded(toy, seeds=[0])
    data = encode(records, 5, 20)
    n = int(records[0].schedule.sizes.sum())
    for value in (0, 16):
        with pytest.raises(RecordError, match=r"array sent: a count outside 1\.\.15"):
            decode(_with_stream(data, "sent", np.full(n, value, "u1")), 5, 20, 3)
    # 5 agents over 20 steps: 500 pairs, 63 bytes, the last 4 bits unused
    header, body = _raw(data)
    pairs = np.zeros(63, "u1")
    pairs[-1] = 1
    with pytest.raises(RecordError, match="bits set past the last pair"):
        decode(_with_stream(data, "pairs", pairs), 5, 20, 3)
    assert header["streams"][4][0] == "pairs" and len(body) > 0


def test_a_bomb_is_refused_before_it_fills_memory() -> None:
    bomb = zlib.compress(b"\0" * (MAX_DECODED + 1), 9)
    with pytest.raises(RecordError, match="once decompressed"):
        decode(bomb, 5, 20, 3)
