"""Settings of LLM agents: validation, serialisation (never the key), pickling."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tpdisc.agents.base import AgentParams
from tpdisc.agents.llm.config import CACHE_FILE, LLMAgentConfig
from tpdisc.errors import ConfigError
from tpdisc.llm_client import LLMConfig
from tpdisc.sim.config import SimConfig


def test_llm_agents_need_an_endpoint() -> None:
    with pytest.raises(ConfigError, match="agent type 'llm' needs a chat endpoint"):
        SimConfig.with_population("stochastic:2,llm:1")
    with pytest.raises(ConfigError, match="needs a chat endpoint"):
        SimConfig(agent_type="llm")


def test_other_agent_types_do_not_record_llm_settings() -> None:
    assert SimConfig().to_dict()["params"]["llm"] is None


def test_cache_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = LLMConfig("http://127.0.0.1:9/v1", "m")
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path))
    assert LLMAgentConfig(client).resolved_cache_path() == tmp_path / CACHE_FILE
    assert LLMAgentConfig(client, cache_path="x.sqlite").resolved_cache_path() == Path("x.sqlite")
    assert LLMAgentConfig(client, cache=False).resolved_cache_path() is None


def test_config_serialises_without_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TPDISC_AGENT_KEY", "sk-very-secret")
    client = LLMConfig("http://127.0.0.1:9/v1", "m", api_key_env="TPDISC_AGENT_KEY")
    llm = LLMAgentConfig(client, concurrency=4, cache_path=str(tmp_path / "c.sqlite"))
    config = SimConfig.with_population("stochastic:1,llm:2", params=AgentParams(llm=llm))
    data = config.to_dict()
    assert data["population"] == [["stochastic", 1], ["llm", 2]]
    assert data["params"]["llm"]["concurrency"] == 4
    assert data["params"]["llm"]["client"]["api_key_env"] == "TPDISC_AGENT_KEY"
    assert "sk-very-secret" not in repr(data)
    assert LLMAgentConfig.from_dict(data["params"]["llm"]) == llm
    assert pickle.loads(pickle.dumps(config)) == config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"concurrency": 0}, "concurrency must be at least 1"),
        ({"cache_path": " "}, "cache path is empty"),
    ],
)
def test_bad_llm_agent_settings(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LLMAgentConfig(LLMConfig("http://127.0.0.1:9/v1", "m"), **changes)


def test_unknown_llm_settings_are_named() -> None:
    data = {"client": {"base_url": "http://x/v1", "model": "m"}, "concurency": 3}
    with pytest.raises(ConfigError, match=r"llm: unknown setting.*concurency"):
        LLMAgentConfig.from_dict(data)
