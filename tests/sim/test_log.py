"""The transmission log as columns, Arrow table and Parquet file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.interface import AgentStates, ProtocolRunner
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate_ablated
from tpdisc.sim.game import run_simulation
from tpdisc.sim.log import ParquetLogWriter, TransmissionLog, log_file


def small_log(graph: RecipeGraph) -> TransmissionLog:
    # step 0: agent 1 tells agent 0 its memory 0 (fire + water -> steam) and 1 (a failure)
    fire, water, steam, air, earth = map(graph.id_of, ("fire", "water", "steam", "air", "earth"))
    return TransmissionLog(
        step=[0, 0],
        teacher=[1, 1],
        learner=[0, 0],
        memory_index=[0, 1],
        e1=[fire, air],
        e2=[water, earth],
        result=[steam, -1],
        survived=[True, False],
    )


def test_columns_are_typed_arrays(toy_graph: RecipeGraph) -> None:
    columns = small_log(toy_graph).columns()
    assert list(columns) == [
        "step", "teacher", "learner", "memory_index", "e1", "e2", "result", "survived"
    ]  # fmt: skip
    assert columns["survived"].dtype == np.bool_
    assert all(columns[k].dtype == np.int32 for k in columns if k != "survived")
    assert columns["result"].tolist() == [toy_graph.id_of("steam"), -1]
    assert len(small_log(toy_graph)) == 2


def test_table_with_names_maps_failure_to_empty(toy_graph: RecipeGraph) -> None:
    table = small_log(toy_graph).to_table(toy_graph.names)
    assert table.column("e1_name").to_pylist() == ["fire", "air"]
    assert table.column("e2_name").to_pylist() == ["water", "earth"]
    assert table.column("result_name").to_pylist() == ["steam", ""]
    plain = small_log(toy_graph)
    assert plain.to_table().column_names == list(plain.columns())


def test_parquet_round_trip(tmp_path: Path, toy_graph: RecipeGraph) -> None:
    path = tmp_path / "log.parquet"
    small_log(toy_graph).to_parquet(path, toy_graph.names)
    back = pq.read_table(path)
    assert back.column("survived").to_pylist() == [True, False]
    assert back.column("result_name").to_pylist() == ["steam", ""]
    assert back.num_rows == 2


def test_game_log_round_trips(tmp_path: Path, toy_graph: RecipeGraph) -> None:
    config = SimConfig(n_agents=4, n_steps=6, agent_type="stochastic")
    result = run_simulation(
        make_domain(toy_graph), config, BaselineProtocol("stochastic"), 0, record_log=True
    )
    log = result.log
    assert log is not None and len(log) == 4 * 20 * 6
    path = tmp_path / "game.parquet"
    log.to_parquet(path, toy_graph.names)
    back = pq.read_table(path).to_pydict()
    for name, column in log.columns().items():
        assert back[name] == column.tolist()
    names = np.asarray([*toy_graph.names, ""])
    assert back["e1_name"] == names[log.columns()["e1"]].tolist()


class Refused(Exception):
    pass


class FailsAtStep3(BaselineProtocol):
    """The stochastic baseline, failing at step 3: a simulation that dies mid-log."""

    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        runner = super().open(n_agents, n_steps, seed)
        share = runner.share

        def failing(step: int, states: AgentStates) -> object:
            if step == 3:
                raise Refused("step 3")
            return share(step, states)

        runner.share = failing  # type: ignore[method-assign]
        return runner


def test_a_streamed_log_is_the_held_log_in_row_groups(
    tmp_path: Path, toy_graph: RecipeGraph
) -> None:
    config = SimConfig(n_agents=4, n_steps=6, agent_type="stochastic")
    domain, protocol = make_domain(toy_graph), BaselineProtocol("stochastic")
    held = run_simulation(domain, config, protocol, 0, record_log=True)
    path = tmp_path / "streamed.parquet"
    streamed = run_simulation(domain, config, protocol, 0, log_path=path)
    assert streamed.log is None and streamed.curve == held.curve
    assert held.log is not None
    held.log.to_parquet(tmp_path / "held.parquet", toy_graph.names)
    assert pq.read_table(path).equals(pq.read_table(tmp_path / "held.parquet"))
    assert not path.with_name("streamed.parquet.part").exists()


def test_the_writer_flushes_groups_and_keeps_little(tmp_path: Path, toy_graph: RecipeGraph) -> None:
    log = small_log(toy_graph)
    writer = ParquetLogWriter(tmp_path / "groups.parquet", toy_graph.names, rows_per_group=3)
    for step in range(5):  # 2 rows a step: a group of 4 every other step
        entries = list(zip(log.teacher, log.memory_index, strict=True))
        memories = list(zip(log.e1, log.e2, log.result, strict=True))
        writer.extend(step, 0, entries, memories, log.survived)
        assert len(writer.buffer) < 3  # what is held never reaches a group
    writer.close()
    meta = pq.ParquetFile(tmp_path / "groups.parquet").metadata
    assert (meta.num_rows, meta.num_row_groups) == (10, 3)
    assert len(writer) == 10


def test_an_empty_log_has_the_full_schema(tmp_path: Path, toy_graph: RecipeGraph) -> None:
    writer = ParquetLogWriter(tmp_path / "empty.parquet", toy_graph.names)
    writer.close()
    table = pq.read_table(tmp_path / "empty.parquet")
    assert table.num_rows == 0
    assert table.schema.field("e1_name").type == "string"


def test_a_failed_simulation_leaves_no_log(tmp_path: Path, toy_graph: RecipeGraph) -> None:
    config = SimConfig(n_agents=4, n_steps=6, agent_type="stochastic")
    path = tmp_path / "failed.parquet"
    with pytest.raises(Refused):
        run_simulation(make_domain(toy_graph), config, FailsAtStep3("stochastic"), 0, log_path=path)
    assert list(tmp_path.iterdir()) == []


def test_log_file_names(tmp_path: Path) -> None:
    assert log_file(tmp_path / "paired", 3) == tmp_path / "paired-seed3.parquet"
    assert log_file(tmp_path / "p", 0, ablated=True) == tmp_path / "p-ablated-seed0.parquet"


def test_evaluations_stream_each_simulations_log(tmp_path: Path, toy_graph: RecipeGraph) -> None:
    config = SimConfig(n_agents=4, n_steps=4, agent_type="stochastic")
    domain, protocol = make_domain(toy_graph), BaselineProtocol("paired")
    seen: list[object] = []
    evaluate_ablated(
        domain,
        config,
        protocol,
        [0, 1],
        executor=SerialExecutor(),
        on_result=lambda pair: seen.extend(r.log for r in pair),
        log_to=tmp_path / "paired",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "paired-ablated-seed0.parquet",
        "paired-ablated-seed1.parquet",
        "paired-seed0.parquet",
        "paired-seed1.parquet",
    ]
    assert seen == [None] * 4  # nothing held, nothing pickled back
    held = run_simulation(domain, config, protocol, 1, record_log=True).log
    assert held is not None
    assert pq.read_table(tmp_path / "paired-seed1.parquet").num_rows == len(held)
