"""The transmission log as columns, Arrow table and Parquet file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation
from tpdisc.sim.log import TransmissionLog


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
