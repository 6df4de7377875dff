"""``tpdisc.study``: presets and config, the store of the study's simulations, and a tiny
study run, interrupted and resumed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.tiny_study import keep_only
from tpdisc.errors import ConfigError
from tpdisc.executors.serial import SerialExecutor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.safefiles import FolderBusy
from tpdisc.search.archive import Archive
from tpdisc.sim.config import SimConfig
from tpdisc.study.config import (
    StudyConfig,
    load_study_config,
    preset_names,
    resumed_config,
)
from tpdisc.study.layout import StudyDir
from tpdisc.study.publish import publish
from tpdisc.study.runner import STAGE_NAMES, hold_study, run_study, study_status
from tpdisc.study.store import Cell, StudyStore

TINY = """
runs: 1
search:
  iterations: 4
  sims: 3
  sim: {n_agents: 4, n_steps: 10, agent_type: stochastic}
baselines: {protocols: standard, sims: 3}
best: {sims: 3}
ablation: {top: 2, bottom: 2, sims: 3}
generalization: {sims: 2, settings: [6-agents, depth-limited]}
executor: {kind: serial}
"""


def tiny_config(tmp_path: Path) -> StudyConfig:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return load_study_config(path)


def test_the_paper_preset_has_the_studys_sizes() -> None:
    config = load_study_config(preset="paper")
    assert (config.runs, config.search.iterations, config.search.sims) == (5, 200, 30)
    assert (config.search.sim.n_agents, config.search.sim.n_steps) == (10, 150)
    assert config.horizon_long == 300
    assert config.search.proposer == "offline"
    assert set(preset_names()) == {"paper", "smoke"}


def test_a_users_file_overrides_any_key_of_the_preset(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "search:\n  sim:\n    n_steps: 60\n    params: {empowerment: {beta: 0.05}}\nruns: 3\n"
    )
    config = load_study_config(path, "smoke")
    smoke = load_study_config(preset="smoke")
    assert config.runs == 3 and config.search.sim.n_steps == 60
    assert config.search.sim.params.empowerment.beta == 0.05
    assert config.horizon_long == 120  # twice the horizon, unless set
    assert config.search.iterations == smoke.search.iterations  # the rest from the preset


def test_bad_settings_are_one_line_errors_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("ablation: {runs: some}\n")
    with pytest.raises(ConfigError, match=r"ablation\.runs: choose from evolution"):
        load_study_config(path)
    path.write_text("search: {itrations: 3}\n")
    with pytest.raises(ConfigError, match="unknown setting itrations"):
        load_study_config(path)
    with pytest.raises(ConfigError, match="unknown preset 'big'"):
        load_study_config(preset="big")


def test_a_rerun_may_change_the_executor_but_nothing_that_changes_a_result(
    tmp_path: Path,
) -> None:
    stored = tiny_config(tmp_path)
    moved = load_study_config(tmp_path / "tiny.yaml", overrides={"executor.kind": "processes"})
    assert resumed_config(stored, moved).executor.kind == "processes"
    other = load_study_config(tmp_path / "tiny.yaml", overrides={"search.sims": 4})
    with pytest.raises(ConfigError, match=r"search\.sims=3.*cannot change it to 4"):
        resumed_config(stored, other)


class Interrupt(Exception):
    pass


def test_the_store_keeps_each_simulation_and_a_rerun_runs_only_the_missing(
    tmp_path: Path, real_graph: Any
) -> None:
    from tpdisc.domain.variants import make_domain

    sim = SimConfig(n_agents=3, n_steps=5, agent_type="stochastic")
    domain = make_domain(real_graph, sim.variant)
    cells = [Cell(n, domain, sim, BaselineProtocol(n), (0, 1, 2)) for n in ("asocial", "paired")]
    seen: list[str] = []

    def stop_after_four(item: str) -> None:
        seen.append(item)
        if len(seen) == 4:
            raise Interrupt

    with StudyStore(tmp_path / "s.sqlite") as store, pytest.raises(Interrupt):
        store.log("x", "started")
        store.simulate("x", cells, SerialExecutor(), stop_after_four)
    with StudyStore(tmp_path / "s.sqlite") as store:
        assert store.session == 2
        assert store.missing("x", cells) == 2
        store.log("x", "resumed")
        got = store.simulate("x", cells, SerialExecutor())
        assert store.sessions_of("x") == {1: 4, 2: 2}
        assert all(
            s.summary is not None and len(s.summary.curve) == 6 for s in got["paired"].values()
        )
        again = store.simulate("x", cells, SerialExecutor(), lambda item: seen.append("rerun"))
    assert "rerun" not in seen
    assert again == got


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory: pytest.TempPathFactory, real_recipes: Path) -> Path:
    root = tmp_path_factory.mktemp("study")
    config = tiny_config(root)
    out = root / "out"

    def stop_after_search(stage: str) -> None:
        if stage == "search":
            raise Interrupt

    with pytest.raises(Interrupt):
        run_study(out, config, after_stage=stop_after_search)
    states = {s.name: s.state for s in study_status(out)}
    assert states["search"] == "done" and states["best"] == "pending"
    run_study(out)  # resumes from the folder's own config
    return out


def test_every_stage_writes_its_result_and_figures(tiny_study: Path) -> None:
    folder = StudyDir(tiny_study)
    for name in STAGE_NAMES:
        assert folder.read_result(name) is not None, name
    figures = {p.name for p in folder.figures.glob("*.png")}
    assert {"coverage.png", "pairwise.png", "search.png", "ablation.png", "features.png",
            "volume.png", "generalization.png", "embedding_map.png"} <= figures  # fmt: skip
    best = folder.read_result("best")
    assert best is not None
    assert {p["name"] for p in best["protocols"]} == {"evolve-1", "generate-1"}
    for protocol in best["protocols"]:
        assert len(protocol["curve_mean"]) == 21  # long horizon: twice 10 steps, and step 0
        assert (folder.root / protocol["file"]).is_file()
    assert best["pairwise"]["names"]


def test_a_study_leaves_no_wal_or_shm_file_behind(tiny_study: Path) -> None:
    # Every database it wrote or read (study.sqlite, each run's archive) was closed, and a
    # read-only opening removes what it made.
    left = sorted(p.relative_to(tiny_study) for p in tiny_study.rglob("*.sqlite-*"))
    assert not left


def test_a_rerun_redoes_no_finished_stage(tiny_study: Path) -> None:
    with StudyStore(StudyDir(tiny_study).database) as store:
        events = store.events()
        sessions = {name: store.sessions_of(name) for name in ("baselines", "best")}
    finished = [e["stage"] for e in events if e["event"] == "finished"]
    assert sorted(finished) == sorted(STAGE_NAMES)  # each stage finished exactly once
    # the ablation comes after the features, whose stored pairs it reuses
    assert finished.index("features") < finished.index("ablation")
    second = [e for e in events if e["session"] == 2]
    assert {e["stage"] for e in second if e["event"] == "skipped"} == {"baselines", "search"}
    assert not [
        e for e in second if e["stage"] in ("baselines", "search") and e["event"] != "skipped"
    ]
    assert set(sessions["baselines"]) == {1} and set(sessions["best"]) == {2}
    run_study(tiny_study)
    with StudyStore(StudyDir(tiny_study).database) as store:
        third = [e for e in store.events() if e["session"] == 3]
    assert {e["event"] for e in third} == {"skipped"}
    assert len(third) == len(STAGE_NAMES)


def test_the_analyses_take_the_originals_the_searches_recorded(tiny_study: Path) -> None:
    folder = StudyDir(tiny_study)
    config = StudyConfig.from_dict(folder.settings())
    # the features and volume read the generation-only run on its 3 seeds; the ablation's
    # compare seeds (15-17) are beyond them: the evolution run keeps nothing
    assert config.analysed_seeds("generation") == (0, 1, 2)
    assert config.analysed_seeds("evolution") == ()
    with StudyStore(folder.database) as store:
        finished = {e["stage"]: e["detail"] for e in store.events() if e["event"] == "finished"}
    features = folder.read_result("features")
    assert features is not None
    n = features["n_protocols"]
    assert n > 0
    assert finished["features"] == (
        f"{3 * n} simulations this session, {3 * n} more taken from the search's records"
    )
    statuses = {s.name: s.detail for s in study_status(tiny_study)}
    assert f", {3 * n:,} taken from the search's records)" in statuses["features"]
    for ref in folder.runs(1):
        with Archive(ref.path / Archive.FILE_NAME, readonly=True) as archive:
            count, size = archive.record_sizes()
        assert (count > 0 and size > 0) if ref.kind == "generation" else count == 0


def test_a_folder_that_is_not_a_study_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    config = tiny_config(tmp_path / "config")
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty and not a study folder"):
        run_study(out, config)
    with pytest.raises(ConfigError, match="not a study folder"):
        study_status(out)


def test_stage_timings_count_the_sessions_that_finished_a_stage() -> None:
    from tpdisc.study.runner import stage_timings

    def event(session: int, time: str, stage: str, kind: str, detail: str = "") -> dict:
        return {
            "session": session,
            "time": f"2026-11-25T10:{time}+00:00",
            "stage": stage,
            "event": kind,
            "detail": detail,
        }

    events = [
        event(1, "00:00", "baselines", "started"),
        event(1, "00:30", "baselines", "finished", "300 simulations this session"),
        event(1, "00:30", "search", "started"),  # killed inside the stage
        event(2, "10:00", "baselines", "skipped", "done in an earlier session"),
        event(2, "10:00", "search", "resumed"),
        event(2, "12:05", "search", "finished", "1020 simulations this session"),
        event(2, "12:05", "features", "started"),
        event(
            2,
            "13:05",
            "features",
            "finished",
            "600 simulations this session, 540 more taken from the search's records",
        ),
    ]
    timings = stage_timings(events)
    assert timings["baselines"].seconds == 30 and timings["baselines"].simulations == 300
    assert timings["search"].seconds == 125 and timings["search"].simulations == 1020
    assert timings["search"].recorded == 0
    assert timings["features"].simulations == 600 and timings["features"].recorded == 540
    assert set(timings) == {"baselines", "search", "features"}


def test_status_says_how_long_each_done_stage_took(tiny_study: Path) -> None:
    done = [s for s in study_status(tiny_study) if s.state == "done" and s.name != "report"]
    assert done
    for status in done:
        assert "finished" in status.detail
        assert " simulations)" in status.detail or "taken from the search's records)" in (
            status.detail
        )


def test_a_resumed_study_writes_no_code_through_a_link(tiny_study: Path, tmp_path: Path) -> None:
    copy = StudyDir(tmp_path / "copy")
    shutil.copytree(tiny_study, copy.root)
    keep_only(copy, {"baselines", "search"})
    victim = tmp_path / "bashrc"
    victim.write_text("alias ls='ls -F'\n")
    best = copy.best / "evolve-1.py"
    best.unlink()
    best.symlink_to(victim)
    run_study(copy.root)
    assert victim.read_text() == "alias ls='ls -F'\n"
    assert not best.is_symlink() and "def share_memories" in best.read_text()


def test_two_sessions_of_one_study_at_once_are_refused_in_one_line(tiny_study: Path) -> None:
    folder = StudyDir(tiny_study)
    with hold_study(folder), pytest.raises(FolderBusy) as info:
        run_study(tiny_study)
    assert str(info.value) == (
        f"{tiny_study}: another tpdisc study is running in this folder (pid {os.getpid()}); "
        "wait for it to end ('tpdisc study --status' shows how far it is)"
    )
    with hold_study(folder), pytest.raises(FolderBusy):
        publish(folder)
