"""``tpdisc analyze``: the ablation study's seed split, results stored and resumed, the
features' data path, and the commands on a small run made here."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tpdisc.agents.empowerment.model import named_model
from tpdisc.analysis import simulate
from tpdisc.analysis.ablation import COMPARE_SEEDS, RANK_SEEDS, ablation_study, rank, select
from tpdisc.analysis.feature_study import feature_study
from tpdisc.analysis.simulate import load_run, tallied_pairs
from tpdisc.analysis.store import ABLATED, ALL_SEEDS, FEATURES, ORIGINAL, AnalysisStore
from tpdisc.analysis.volume import volume_study
from tpdisc.cli import app
from tpdisc.domain.variants import make_domain
from tpdisc.executors.serial import SerialExecutor
from tpdisc.search.archive import Archive, Candidate
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import CONFIG_FILE, SearchLoop, open_run_dir
from tpdisc.search.proposers import OfflineProposer
from tpdisc.sim.config import SimConfig

runner = CliRunner()

CODE = """
class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        out = {}
        for i in range(self.n):
            j = (i + K) % self.n
            m = len(agent_states[j]["memories"])
            out[i] = [(j, k) for k in range(max(0, m - K), m)]
        return out
"""


class CountingExecutor(SerialExecutor):
    """Serial, counting the tasks it runs (and, with ``stop_after``, interrupted then)."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.tasks: list = []
        self.stop_after = stop_after

    def run(self, tasks, on_result=None):
        def counted(result):
            if on_result is not None:
                on_result(result)
            if self.stop_after is not None and len(self.tasks) >= self.stop_after:
                raise KeyboardInterrupt

        out = []
        for task in tasks:
            self.tasks.append(task)
            result = task()
            counted(result)
            out.append(result)
        return out


def make_run(path: Path, n_protocols: int = 6) -> Path:
    """A run directory by hand: protocols whose ranking on seeds 0–14 is the reverse of
    their ranking on seeds 15–29 (which the archive also holds)."""
    config = SearchConfig(
        sims=30,
        sim=SimConfig(n_agents=3, n_steps=6, agent_type="stochastic"),
        sandboxed=False,
    )
    path.mkdir(parents=True)
    config.save(path / CONFIG_FILE)
    with Archive(path / Archive.FILE_NAME) as archive:
        for k in range(n_protocols):
            early, late = float(10 + k), float(100 - 10 * k)
            values = [early] * 15 + [late] * 15
            row = Candidate(
                name=f"i{k + 1:04d}",
                iteration=k + 1,
                attempt=0,
                mode="warm-up",
                status="valid",
                proposer="test",
                code=CODE.replace("K", str(1 + k % 3)),
                fitness_mean=sum(values) / 30,
                fitness_values=values,
                seeds=list(range(30)),
            )
            archive.finish_iteration(k + 1, "warm-up", [row])
    return path


def add_bad_protocol(path: Path, code: str, n_seeds: int) -> None:
    """Archive ``code`` as protocol "bad", valid on its first ``n_seeds`` seeds."""
    with Archive(path / Archive.FILE_NAME) as archive:
        row = Candidate(
            name="bad",
            iteration=9,
            attempt=0,
            mode="warm-up",
            status="valid",
            proposer="test",
            code=code,
            fitness_mean=1.0,
            fitness_values=[1.0] * n_seeds,
            seeds=list(range(n_seeds)),
        )
        archive.finish_iteration(9, "warm-up", [row])


@pytest.fixture
def run(tmp_path, toy_graph):
    return load_run(make_run(tmp_path / "run"), graph=toy_graph)


def test_ranking_uses_seeds_0_to_14_and_comparison_15_to_29(run) -> None:
    ranked = rank(run.protocols)
    # On all 30 seeds the first protocol is best; on 0–14 the last one is.
    assert [r.protocol.name for r in ranked] == [f"i{k:04d}" for k in (6, 5, 4, 3, 2, 1)]
    assert all(r.n_seeds == 15 for r in ranked) and ranked[0].mean == 15.0
    chosen = select(ranked, 2, 2)
    assert [r.protocol.name for r in chosen["top"]] == ["i0006", "i0005"]
    assert [r.protocol.name for r in chosen["bottom"]] == ["i0002", "i0001"]

    pool = CountingExecutor()
    result = ablation_study([run], pool, top=2, bottom=2, compare_seeds=COMPARE_SEEDS[:3])
    assert {t.task.seed for t in pool.tasks} == {15, 16, 17}
    assert not {t.task.seed for t in pool.tasks} & set(RANK_SEEDS)
    assert len(pool.tasks) == 4 * 3
    assert {r.name for r in result.rows if r.set == "top"} == {"i0006", "i0005"}
    assert all(r.seeds == (15, 16, 17) and len(r.ablated) == 3 for r in result.rows)
    data = result.to_json()
    for name in ("top", "bottom"):
        assert {"n", "original_mean", "ablated_mean", "delta", "p"} <= set(data["sets"][name])
        assert data["sets"][name]["n"] == 2
    assert result.runs[0].rank_seeds == RANK_SEEDS and result.runs[0].note == ""
    assert data["per_run"][str(run.path)]["top"] == data["sets"]["top"]


def test_a_failing_protocol_is_reported_and_left_out(tmp_path, toy_graph) -> None:
    path = make_run(tmp_path / "run", n_protocols=3)
    broken = "class TransmissionProtocol:\n    def __init__(self, n_agents, n_steps):\n"
    broken += "        pass\n    def share_memories(self, i_step, agent_states):\n"
    broken += "        return {99: []}\n"
    add_bad_protocol(path, broken, n_seeds=1)
    run = load_run(path, graph=toy_graph)
    result = volume_study([run], CountingExecutor(), n_sims=1)
    assert result.n == 3 and list(result.failed) == [f"{path}:bad"]  # by its name
    assert "99" in result.failed[f"{path}:bad"]
    pool = CountingExecutor()
    volume_study([run], pool, n_sims=1)
    assert len(pool.tasks) == 1  # failures are not stored: retried


def test_small_runs_overlap_nothing_and_say_what_they_ranked_on(run) -> None:
    ranked = rank(run.protocols)
    chosen = select(ranked, 4, 4)
    assert len(chosen["top"]) == 4 and len(chosen["bottom"]) == 2
    ids = [r.protocol.id for group in chosen.values() for r in group]
    assert len(ids) == len(set(ids))
    assert all(r.n_seeds == 2 for r in rank(run.protocols, seeds=range(2)))


def test_a_rerun_simulates_nothing_and_an_interrupted_one_resumes(run) -> None:
    seeds = COMPARE_SEEDS[:3]
    interrupted = CountingExecutor(stop_after=4)  # one protocol done, the second begun
    with pytest.raises(KeyboardInterrupt):
        ablation_study([run], interrupted, top=2, bottom=2, compare_seeds=seeds)
    with AnalysisStore(run.archive_path) as store:
        assert store.count(ORIGINAL) == 3 and store.count(ABLATED) == 3

    resumed = CountingExecutor()
    first = ablation_study([run], resumed, top=2, bottom=2, compare_seeds=seeds)
    assert len(resumed.tasks) == 4 * 3 - 3

    again = CountingExecutor()
    second = ablation_study([run], again, top=2, bottom=2, compare_seeds=seeds)
    assert again.tasks == [] and second.to_json() == first.to_json()

    # Volume needs other seeds (the protocols' own, 0..), then reruns nothing either.
    pool = CountingExecutor()
    volume = volume_study([run], pool, n_sims=2)
    assert len(pool.tasks) == 6 * 2 and volume.n == 6
    assert all(p.sims == 2 and p.novel_per_agent <= p.received_per_agent for p in volume.points)
    pool = CountingExecutor()
    assert volume_study([run], pool, n_sims=2).to_json() == volume.to_json()
    assert pool.tasks == []


def test_other_steps_are_stored_apart(tmp_path, toy_graph) -> None:
    path = make_run(tmp_path / "run", n_protocols=2)
    volume_study([load_run(path, graph=toy_graph)], CountingExecutor(), n_sims=1)
    pool = CountingExecutor()
    volume_study([load_run(path, graph=toy_graph, n_steps=3)], pool, n_sims=1)
    assert len(pool.tasks) == 2


def test_tallied_pairs_hand_over_tallies_and_store_features(run) -> None:
    seen = []

    def finish(protocol, pairs):
        for seed, original, ablated in pairs:
            assert original.events > 0 and ablated.events > 0
            seen.append((protocol.id, seed))
        return {"original": {"n": float(protocol.id)}, "ablated": {"n": -1.0}}

    errors = tallied_pairs([run], finish, SerialExecutor(), n_sims=2)
    assert errors == {} and len(seen) == 6 * 2
    assert {seed for _, seed in seen} == {0, 1}
    with AnalysisStore(run.archive_path) as store:
        key = store.register(run.settings)
        first = run.protocols[0].id
        stored = store.features(key, [p.id for p in run.protocols], seeds=[0, 1])
        assert len(stored) == 6
        assert stored[first] == {"original": {"n": float(first)}, "ablated": {"n": -1.0}}
        assert store.features(key, [first], seeds=[0, 1, 2]) == {}
        raw = store.get(FEATURES + ORIGINAL, key, [first])[first][ALL_SEEDS]
        assert raw == {"seeds": [0, 1], "features": {"n": float(first)}}
        assert len(store.summaries(ABLATED, key, [run.protocols[0].id])[run.protocols[0].id]) == 2
    seen.clear()
    tallied_pairs([run], finish, SerialExecutor(), n_sims=2)
    assert seen == []  # features stored: nothing to do
    tallied_pairs([run], finish, SerialExecutor(), n_sims=3)
    assert len(seen) == 6 * 3  # features over other seeds are not these


def test_an_ablation_after_the_features_reuses_their_pairs_and_gets_the_same_numbers(
    tmp_path, toy_graph
) -> None:
    alone = load_run(make_run(tmp_path / "alone"), graph=toy_graph)
    expected = ablation_study([alone], CountingExecutor(), top=2, bottom=2).to_json()

    run = load_run(make_run(tmp_path / "after"), graph=toy_graph)
    feature_study([run], CountingExecutor())
    pool = CountingExecutor()
    after = ablation_study([run], pool, top=2, bottom=2).to_json()
    assert pool.tasks == []  # every pair the ablation needs was logged by the features
    assert json.dumps(after).replace(str(run.path), "") == json.dumps(expected).replace(
        str(alone.path), ""
    )


def searched_run(path: Path, graph, record_seeds: tuple[int, ...] | None = None) -> Path:
    """A small offline search of 30 seeds per protocol, keeping records of
    ``record_seeds`` (None: all) for the analyses."""
    config = SearchConfig(
        iterations=8,
        warmup=8,
        sims=30,
        generation_only=True,
        check_steps=3,
        record_seeds=record_seeds,
        sim=SimConfig(n_agents=3, n_steps=6, agent_type="stochastic"),
        sandboxed=False,
    )
    config = open_run_dir(path, config, {})
    with SearchLoop(path, config, make_domain(graph), OfflineProposer(), SerialExecutor()) as loop:
        loop.run()
    return path


def without_records(path: Path, copy: Path) -> Path:
    """A copy of run ``path`` whose search kept nothing for the analyses."""
    shutil.copytree(path, copy)
    with Archive(copy / Archive.FILE_NAME) as archive:
        archive.db.execute("DELETE FROM records")
    return copy


def analyses(path: Path, graph) -> tuple[dict[str, Any], CountingExecutor]:
    """Features, ablation and volume of the run, as JSON without its folder's name, and
    the executor that ran what they simulated."""
    pool = CountingExecutor()
    run = load_run(path, graph=graph)
    got = {
        "features": feature_study([run], pool).to_json(),
        "ablation": ablation_study([run], pool, top=3, bottom=3).to_json(),
        "volume": volume_study([run], pool).to_json(),
    }
    return json.loads(json.dumps(got).replace(str(path), "RUN")), pool


def test_analyses_of_a_recorded_run_replay_only_and_get_the_same_numbers(
    tmp_path, toy_graph
) -> None:
    path = searched_run(tmp_path / "run", toy_graph)
    copy = without_records(path, tmp_path / "copy")
    with Archive(path / Archive.FILE_NAME, readonly=True) as archive:
        valid = [c for c in archive.candidates(valid_only=True) if c.mode != "seed"]
        assert archive.record_sizes()[0] == len(valid) > 3
    recorded, pool = analyses(path, toy_graph)
    # every original was the search's: only the features' replays ran, one per seed
    assert {type(t.task).__name__ for t in pool.tasks} == {"ReplayTask"}
    assert len(pool.tasks) == 30 * len(valid)
    simulated, again = analyses(copy, toy_graph)
    assert {type(t.task).__name__ for t in again.tasks} == {"AblatedTask"}
    assert recorded == simulated


def test_an_ablation_of_a_recorded_run_runs_the_replays_of_its_compare_seeds(
    tmp_path, toy_graph
) -> None:
    path = searched_run(tmp_path / "run", toy_graph, record_seeds=COMPARE_SEEDS)
    copy = without_records(path, tmp_path / "copy")
    run = load_run(path, graph=toy_graph)
    pool = CountingExecutor()
    result = ablation_study([run], pool, top=2, bottom=2).to_json()
    assert {type(t.task).__name__ for t in pool.tasks} == {"ReplayTask"}
    assert len(pool.tasks) == 4 * len(COMPARE_SEEDS)
    alone = CountingExecutor()
    expected = ablation_study([load_run(copy, graph=toy_graph)], alone, top=2, bottom=2)
    assert json.dumps(result).replace(str(path), "") == json.dumps(expected.to_json()).replace(
        str(copy), ""
    )
    # the features need seeds 0-14 too: those pairs run whole, the rest replay only
    features = CountingExecutor()
    feature_study([run], features)
    kinds = [type(t.task).__name__ for t in features.tasks]
    assert kinds.count("AblatedTask") == 15 * len(run.protocols)
    assert kinds.count("ReplayTask") == 15 * len(run.protocols)


def test_records_of_other_settings_are_not_taken(tmp_path, toy_graph) -> None:
    path = searched_run(tmp_path / "run", toy_graph)
    pool = CountingExecutor()
    volume_study([load_run(path, graph=toy_graph, n_steps=4)], pool, n_sims=2)
    assert {type(t.task).__name__ for t in pool.tasks} == {"SimTask"}
    pool = CountingExecutor()
    volume_study([load_run(path, graph=toy_graph)], pool, n_sims=2)
    assert pool.tasks == []  # the search's records are the whole simulation


def test_features_run_in_batches_of_whole_protocols_and_a_failure_stops_only_its_own(
    tmp_path, toy_graph, monkeypatch
) -> None:
    path = make_run(tmp_path / "run", n_protocols=5)
    broken = CODE.replace("return out", "return {99: []} if i_step == 3 else out")
    add_bad_protocol(path, broken.replace("K", "1"), n_seeds=4)
    run = load_run(path, graph=toy_graph)
    monkeypatch.setattr(simulate, "TALLIED_BATCH", 8)
    runs_of_executor: list[int] = []

    class Batches(CountingExecutor):
        def run(self, tasks, on_result=None):
            runs_of_executor.append(len(tasks))
            return super().run(tasks, on_result)

    study = feature_study([run], Batches(), n_sims=4)
    # whole protocols of 4 seeds, at least 8 pairs a batch: 2 + 2 + the last 2
    assert runs_of_executor == [8, 8, 8]
    assert study.n_protocols == 5 and list(study.failed) == [f"{path}:bad"]
    assert "99" in study.failed[f"{path}:bad"]
    with AnalysisStore(run.archive_path) as store:
        key = store.register(run.settings)
        stored = store.features(key, [p.id for p in run.protocols], seeds=[0, 1, 2, 3])
        assert sorted(stored) == [p.id for p in run.protocols if p.name != "bad"]


TINY = ["--sims", "2", "--steps", "8", "--agents", "4", "--agent-type", "stochastic"]


def test_commands_on_a_generation_only_run(tmp_path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    run_dir = tmp_path / "run"
    made = runner.invoke(
        app,
        [
            "evolve",
            "--run-dir",
            str(run_dir),
            "--recipes",
            str(recipes),
            "--generation-only",
            "--iterations",
            "4",
            *TINY,
            "--executor",
            "serial",
        ],
    )
    assert made.exit_code == 0, made.output
    common = ["--recipes", str(recipes), "--executor", "serial", "--plot", str(tmp_path / "fig")]

    out = tmp_path / "ablation.json"
    args = [
        "analyze",
        "ablation",
        str(run_dir),
        "--top",
        "2",
        "--bottom",
        "2",
        "--sims",
        "2",
        "--steps",
        "5",
        "--json",
        str(out),
        *common,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    for name in ("top", "bottom"):
        assert {"n", "original_mean", "ablated_mean", "delta", "p"} <= set(data["sets"][name])
    assert data["sets"]["top"]["n"] == 2 and data["compare_seeds"] == [15, 16]
    assert "2 of the ranking seeds" in result.stderr
    assert (tmp_path / "fig" / "ablation.png").stat().st_size > 0
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "stored already" in again.stderr

    out = tmp_path / "volume.json"
    result = runner.invoke(
        app, ["analyze", "volume", str(run_dir), "--steps", "5", "--json", str(out), *common]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert {"n", "rho", "p", "points"} <= set(data) and data["n"] == 4
    assert (tmp_path / "fig" / "volume.png").stat().st_size > 0

    missing = runner.invoke(app, ["analyze", "volume", str(tmp_path / "nowhere"), *common])
    assert missing.exit_code == 1 and "not a run directory" in missing.stderr


def test_features_and_volume_take_protocol_files_and_baselines(tmp_path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    protocol = tmp_path / "my_protocol.py"
    protocol.write_text(CODE.replace("K", "2"))
    common = ["--recipes", str(recipes), "--executor", "serial", "--agent-type", "stochastic"]
    common += ["--agents", "3", "--steps", "6"]

    out = tmp_path / "f.json"
    args = ["analyze", "features", str(protocol), "asocial", "--sims", "2", "--json", str(out)]
    result = runner.invoke(app, [*args, *common])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["n_protocols"] == 2
    assert [p["name"] for p in data["protocols"]] == ["my_protocol", "asocial"]
    for p in data["protocols"]:
        # no archive: fitness from the original simulations, at most every element of the toy
        assert p["run"] == "given protocols" and 4 <= p["fitness"] <= 16
        assert set(p["original"]) == set(p["ablated"]) and len(p["original"]) == 23
    assert "Feature values per protocol" in result.stdout and "my_protocol" in result.stdout

    out = tmp_path / "v.json"
    args = ["analyze", "volume", str(protocol), "paired", "asocial", "--json", str(out)]
    result = runner.invoke(app, [*args, "--sims", "3", *common])
    assert result.exit_code == 0, result.output
    points = json.loads(out.read_text())["points"]
    assert [(p["name"], p["sims"], p["archive_fitness"]) for p in points] == [
        ("my_protocol", 3, None),
        ("paired", 3, None),
        ("asocial", 3, None),
    ]
    assert next(p for p in points if p["name"] == "asocial")["novel_per_agent"] == 0

    nowhere = runner.invoke(app, ["analyze", "volume", "nosuchthing", *common])
    assert nowhere.exit_code == 1 and "nor a baseline name (looked for" in nowhere.stderr


def test_simulation_options_reach_given_protocols_and_override_a_run(tmp_path, toy_graph) -> None:
    from tpdisc.analysis.simulate import given_protocols
    from tpdisc.sim.config import EvaluationConfig

    sim = SimConfig(n_agents=4, n_steps=3, agent_type="stochastic")
    config = EvaluationConfig(protocols=("paired", "asocial"), sims=2, seed=7, sim=sim)
    given = given_protocols(config, toy_graph, tmp_path)
    assert given.sim == sim and [p.seeds for p in given.protocols] == [(7, 8), (7, 8)]
    run = load_run(
        make_run(tmp_path / "run"), graph=toy_graph, sim_overrides={"n_steps": 4, "n_agents": 5}
    )
    assert (run.sim.n_steps, run.sim.n_agents, run.sim.agent_type) == (4, 5, "stochastic")
    # the run's model is spelled out field by field; choices and a new name still reach it
    stored = run.sim.params.empowerment
    chosen = load_run(
        run.path,
        graph=toy_graph,
        sim_overrides={"params": {"empowerment": {"choices": "remember=step"}}},
    ).sim.params.empowerment
    assert (stored.remember, chosen.remember, chosen.name) == ("always", "step", stored.name)
    renamed = load_run(
        run.path, graph=toy_graph, sim_overrides={"params": {"empowerment": {"name": "calibrated"}}}
    ).sim.params.empowerment
    assert (stored.failures, renamed.failures) == ("step", "always")
    assert renamed == replace(named_model("calibrated"), prior=stored.prior)


@pytest.mark.parametrize(
    ("command", "kind", "forge", "message"),
    [
        ("volume", ORIGINAL, lambda v: {**v, "final": 10**400, "curve": []}, "field final: "),
        ("volume", ORIGINAL, lambda v: {**v, "n_agents": 2}, "not the simulation's 3"),
        ("volume", ORIGINAL, lambda v: {**v, "curve": [*v["curve"][:2], v["final"]]},
         "field curve: 3 points"),
        ("features", FEATURES + "original",
         lambda v: {**v, "features": {"n": "many"}}, "features: 'n': expected a finite"),
        ("features", FEATURES + "original",
         lambda v: {**v, "features": {"n": 1e308 * 10}}, "expected a finite number"),
    ],
)  # fmt: skip
def test_hand_made_stored_results_are_one_line(
    tmp_path: Path, command: str, kind: str, forge: Any, message: str
) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    run_dir = make_run(tmp_path / "run", n_protocols=3)
    args = ["analyze", command, str(run_dir), "--sims", "2", "--recipes", str(recipes),
            "--executor", "serial"]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    with AnalysisStore(run_dir / Archive.FILE_NAME) as store:
        (value,) = store.db.execute(
            "SELECT value FROM analysis WHERE kind=? AND protocol_id=1 LIMIT 1", (kind,)
        ).fetchone()
        forged = json.dumps(forge(json.loads(value)))
        store.db.execute("UPDATE analysis SET value=? WHERE kind=?", (forged, kind))
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"{run_dir / Archive.FILE_NAME}: analysis row (1, " in result.stderr
    assert message in result.stderr
