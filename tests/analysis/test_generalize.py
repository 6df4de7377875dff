"""Generalization: the settings registry (what each setting plays) and the command on the
toy game."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.conftest import TOY
from tpdisc.agents.llm.config import LLMAgentConfig
from tpdisc.analysis.generalize import (
    SETTING_NAMES,
    SETTINGS,
    Setting,
    mixed_population,
    resolve_baselines,
    runnable,
    select_settings,
)
from tpdisc.cli.analyze_models import register
from tpdisc.errors import ConfigError
from tpdisc.llm_client import LLMConfig
from tpdisc.protocols.baselines import STANDARD_BASELINES
from tpdisc.sim.config import EvaluationConfig, SimConfig

EXAMPLES = Path(__file__).parents[2] / "examples" / "protocols"
BASE = EvaluationConfig(sims=3, sim=SimConfig(n_agents=10, n_steps=12))
LLM = LLMAgentConfig(LLMConfig("http://localhost:1/v1", "toy-model"))

# setting -> (population, variant) it must play from BASE (10 empowerment agents, full game)
EXPECTED = {
    "6-agents": ((("empowerment", 6),), "full"),
    "20-agents": ((("empowerment", 20),), "full"),
    "stochastic": ((("stochastic", 10),), "full"),
    "llm": ((("llm", 10),), "full"),
    "mixed": ((("empowerment", 5), ("stochastic", 5)), "full"),
    "beta-half": ((("empowerment", 10),), "full"),
    "p-social-0.9": ((("empowerment", 10),), "full"),
    "depth-limited": ((("empowerment", 10),), "depth-limited"),
    "3-item": ((("empowerment", 10),), "3-item"),
    "heterogeneous": ((("empowerment", 10),), "heterogeneous"),
    "dropout": ((("empowerment", 10),), "dropout"),
}


def setting(name: str) -> Setting:
    (found,) = select_settings([name])
    return found


def test_the_registry_holds_the_eleven_settings_of_the_spec() -> None:
    assert len(SETTINGS) == 11 and set(SETTING_NAMES) == set(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_setting_plays_its_population_and_variant(name: str) -> None:
    config = setting(name).apply(BASE, ["x.py", "paired"], LLM)
    population, variant = EXPECTED[name]
    assert config.sim.agents == population
    assert config.sim.variant.name == variant
    # everything else is the base's
    assert (config.sims, config.seed, config.sim.n_steps) == (3, 0, 12)
    assert config.protocols == ("x.py", "paired")
    assert config.sim.params.llm == (LLM if name == "llm" else None)


def test_agent_parameter_settings() -> None:
    default = BASE.sim.params
    halved = setting("beta-half").sim_config(BASE.sim).params.empowerment
    assert halved.beta == default.empowerment.beta / 2
    assert halved.name == default.empowerment.name
    assert setting("p-social-0.9").sim_config(BASE.sim).params.p_social == 0.9
    assert setting("stochastic").sim_config(BASE.sim).params == default
    # a changed base is halved too: the setting is relative to what the user runs
    model = replace(BASE.sim.params.empowerment, beta=0.2)
    base = SimConfig(params=replace(BASE.sim.params, empowerment=model))
    assert setting("beta-half").sim_config(base).params.empowerment.beta == pytest.approx(0.1)


def test_sizes_keep_a_mixed_base_mixed() -> None:
    base = SimConfig.with_population("empowerment:5,stochastic:5")
    assert setting("20-agents").sim_config(base).agents == (
        ("empowerment", 10),
        ("stochastic", 10),
    )
    assert mixed_population((("empowerment", 0.5), ("stochastic", 0.5)), 3) == (
        ("empowerment", 2),
        ("stochastic", 1),
    )


def test_llm_setting_is_skipped_without_an_endpoint() -> None:
    run, skipped = runnable(SETTINGS, None)
    assert [s.name for s in run] == [n for n in SETTING_NAMES if n != "llm"]
    assert skipped == [("llm", "no LLM endpoint given (--llm-base-url, --llm-model)")]
    with pytest.raises(ConfigError, match="needs a chat endpoint"):
        setting("llm").sim_config(BASE.sim)


def test_names_of_settings_and_baselines() -> None:
    assert [s.name for s in select_settings(["3-item,6-agents"])] == ["6-agents", "3-item"]
    assert select_settings(None) == SETTINGS
    with pytest.raises(ConfigError, match="unknown setting 'seven-agents'"):
        select_settings(["seven-agents"])
    assert resolve_baselines("standard") == STANDARD_BASELINES
    assert resolve_baselines("paired, ring") == ("paired", "ring")
    assert len(resolve_baselines("all")) == 10
    with pytest.raises(ConfigError, match="--baselines 'nope'"):
        resolve_baselines("nope")


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def test_generalize_command_on_the_toy_game(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    out = tmp_path / "general.json"
    result = CliRunner().invoke(
        cli(),
        [
            "generalize",
            str(EXAMPLES / "rarity_first.py"),
            "--trusted",
            "--baselines",
            "asocial,paired",
            "--settings",
            "6-agents",
            "--settings",
            "3-item,llm",
            "--sims",
            "2",
            "--steps",
            "6",
            "--agents",
            "4",
            "--agent-type",
            "stochastic",
            "--executor",
            "serial",
            "--recipes",
            str(recipes),
            "--json",
            str(out),
            "--plot",
            str(tmp_path / "figs"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "skipping setting llm" in result.stderr
    data = json.loads(out.read_text())
    assert [s["name"] for s in data["settings"]] == ["6-agents", "3-item"]
    for row in data["settings"]:
        assert {"evolved_mean", "best_baseline", "best_baseline_mean", "improvement", "p"} <= set(
            row
        )
        assert row["best_baseline"] in ("asocial", "paired")
        assert row["evolved"].keys() == {"rarity_first"}
        # one protocol: nothing to test with the protocol as the unit
        assert row["n_protocols"] == 1 and row["p_protocols"] is None
    reason = result.stderr.splitlines()[0].split(": ", 1)[1]
    assert data["skipped"] == [{"name": "llm", "reason": reason}]
    assert (tmp_path / "figs" / "generalization.png").stat().st_size > 0


def test_generalize_runs_protocol_files_sandboxed(tmp_path: Path) -> None:
    from tpdisc.sandbox import sandbox_support

    if not sandbox_support()[0]:
        pytest.skip("the sandbox cannot confine protocols on this platform")
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    result = CliRunner().invoke(
        cli(),
        [
            "generalize",
            str(EXAMPLES / "rarity_first.py"),
            "--settings",
            "3-item",
            "--sims",
            "2",
            "--steps",
            "6",
            "--agents",
            "4",
            "--agent-type",
            "stochastic",
            "--executor",
            "serial",
            "--recipes",
            str(recipes),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3-item" in result.stdout and "error" not in result.stderr


def test_domain_settings_build_on_the_real_game(real_graph) -> None:  # type: ignore[no-untyped-def]
    """Each variant setting makes a playable domain of the real game (the toy graph is too
    small for depth limits and dropout to mean anything)."""
    from tpdisc.domain.variants import make_domain

    reachable = {}
    for name in ("depth-limited", "3-item", "heterogeneous", "dropout"):
        sim = setting(name).sim_config(BASE.sim)
        reachable[name] = len(make_domain(real_graph, sim.variant).reachable)
    assert 0 < reachable["depth-limited"] < 300
    assert 270 <= reachable["dropout"] < 300
    assert reachable["3-item"] > 300 and reachable["heterogeneous"] > 300
