"""The command line with LLM agents: --agent-type llm, mixed populations, the LLM options,
what the results JSON records (never the key), reruns from the cache, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tests.helpers import APPENDIX
from tpdisc.cli import app
from tpdisc.testing.chat_server import FakeChatServer, Reply
from tpdisc.testing.llm_player import ScriptedPlayer

runner = CliRunner()
FAST = ["--steps", "4", "--sims", "2", "--executor", "serial"]


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


@pytest.fixture
def server():
    with FakeChatServer(ScriptedPlayer(invalid=0.3, invalid_reask=0.5)) as running:
        yield running


def llm_options(server: FakeChatServer, tmp_path: Path) -> list[str]:
    return [
        "--llm-base-url", server.base_url, "--llm-model", "fake-model",
        "--llm-cache", str(tmp_path / "answers.sqlite"),
    ]  # fmt: skip


def evaluate(*args: str | Path):
    return runner.invoke(app, ["evaluate", *map(str, args)])


def test_mixed_population_json_records_population_and_llm_settings(
    recipes: Path, tmp_path: Path, server: FakeChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TPDISC_TEST_AGENT_KEY", "sk-do-not-store-me")
    out = tmp_path / "out.json"
    result = evaluate(
        "paired", "asocial", *FAST, "--population", "stochastic:3,llm:3",
        *llm_options(server, tmp_path), "--llm-api-key-env", "TPDISC_TEST_AGENT_KEY",
        "--llm-concurrency", "2", "--llm-temperature", "0.7",
        "--llm-price-input", "1.5", "--llm-price-output", "6",
        "--recipes", recipes, "--json", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "LLM agents made" in result.stdout and "fallbacks" in result.stdout
    text = out.read_text()
    assert "sk-do-not-store-me" not in text
    assert "sk-do-not-store-me" not in (tmp_path / "answers.sqlite").read_bytes().decode("latin1")
    config = json.loads(text)["config"]
    assert config["n_agents"] == 6
    assert config["population"] == [["stochastic", 3], ["llm", 3]]
    llm = config["params"]["llm"]
    assert llm["concurrency"] == 2 and llm["cache"] is True
    assert llm["cache_path"] == str(tmp_path / "answers.sqlite")
    client = llm["client"]
    assert (client["base_url"], client["model"]) == (server.base_url, "fake-model")
    assert client["api_key_env"] == "TPDISC_TEST_AGENT_KEY" and client["temperature"] == 0.7
    assert client["prices"] == {"fake-model": {"input": 1.5, "output": 6.0}}
    sent = server.requests
    assert sent[0].body["temperature"] == 0.7
    headers = {k.lower(): v for k, v in sent[0].headers.items()}
    assert headers["authorization"] == "Bearer sk-do-not-store-me"
    results = json.loads(text)["results"]
    total_requests = sum(r["agent_stats"]["llm_requests"] for r in results)
    assert total_requests == len(sent)
    for r in results:
        stats = r["agent_stats"]
        assert stats["llm_choices"] == 3 * 4 * 2  # LLM agents × steps × simulations
        assert stats["llm_prompt_tokens"] > 0
        expected = (stats["llm_prompt_tokens"] * 1.5 + stats["llm_completion_tokens"] * 6) / 1e6
        assert stats["llm_cost"] == pytest.approx(expected)


def test_agent_type_llm_reruns_from_the_cache(
    recipes: Path, tmp_path: Path, server: FakeChatServer
) -> None:
    outs = [tmp_path / "first.json", tmp_path / "second.json"]
    args = ["stochastic", *FAST, "--agents", "3", "--agent-type", "llm"]
    first = evaluate(*args, *llm_options(server, tmp_path), "--recipes", recipes, "--json", outs[0])
    assert first.exit_code == 0, first.output
    sent = len(server.requests)
    assert sent > 0
    again = evaluate(*args, *llm_options(server, tmp_path), "--recipes", recipes, "--json", outs[1])
    assert again.exit_code == 0, again.output
    assert len(server.requests) == sent
    a, b = (json.loads(p.read_text())["results"][0] for p in outs)
    assert a["final"] == b["final"] and a["curve_mean"] == b["curve_mean"]
    assert b["agent_stats"]["llm_cache_hits"] == sent and b["agent_stats"]["llm_requests"] == 0
    assert json.loads(outs[0].read_text())["config"]["population"] == [["llm", 3]]


def test_no_cache_asks_every_time(recipes: Path, tmp_path: Path, server: FakeChatServer) -> None:
    args = ["asocial", *FAST, "--agents", "2", "--agent-type", "llm", "--llm-no-cache"]
    for _ in range(2):
        result = evaluate(*args, *llm_options(server, tmp_path), "--recipes", recipes)
        assert result.exit_code == 0, result.output
    assert len(server.requests) >= 2 * 2 * 4 * 2
    assert not (tmp_path / "answers.sqlite").exists()


def test_sandboxed_protocol_file_with_a_mixed_population(
    recipes: Path, tmp_path: Path, server: FakeChatServer
) -> None:
    protocol = tmp_path / "appendix.py"
    protocol.write_text(APPENDIX)
    out = tmp_path / "out.json"
    result = evaluate(
        protocol, *FAST, "--population", "stochastic:2,llm:2", *llm_options(server, tmp_path),
        "--recipes", recipes, "--json", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    stats = json.loads(out.read_text())["results"][0]["agent_stats"]
    assert stats["llm_choices"] == 2 * 4 * 2


def test_compare_passes_the_llm_options_on(
    recipes: Path, tmp_path: Path, server: FakeChatServer
) -> None:
    result = runner.invoke(
        app,
        [
            "compare", "paired", "--out", str(tmp_path / "cmp"), *FAST,
            "--population", "stochastic:1,llm:2", *llm_options(server, tmp_path),
            "--recipes", str(recipes),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "cmp" / "results.json").read_text())["config"]
    assert config["params"]["llm"]["client"]["model"] == "fake-model"
    assert len(server.requests) > 0


def test_options_of_other_agent_types_are_not_recorded(recipes: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = evaluate(
        "paired", *FAST, "--agent-type", "stochastic", "--llm-base-url", "http://127.0.0.1:9/v1",
        "--llm-model", "m", "--recipes", recipes, "--json", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["config"]["params"]["llm"] is None


def one_line_error(result, *fragments: str) -> None:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--agent-type", "llm"], ["needs a chat endpoint", "--llm-base-url"]),
        (["--population", "stochastic:2,llm:1"], ["needs a chat endpoint"]),
        (
            ["--agent-type", "llm", "--llm-model", "m"],
            ["need both --llm-base-url and --llm-model"],
        ),
        (
            ["--agent-type", "llm", "--llm-base-url", "localhost:8000", "--llm-model", "m"],
            ["base_url 'localhost:8000' must start with http://"],
        ),
        (
            ["--agent-type", "llm", "--llm-base-url", "http://x/v1", "--llm-model", "m",
             "--llm-api-key-env", "MY-KEY"],
            ["api_key_env 'MY-KEY' is not a variable name"],
        ),
    ],
)  # fmt: skip
def test_bad_llm_options_are_one_line_errors(
    recipes: Path, args: list[str], fragments: list[str]
) -> None:
    one_line_error(evaluate("paired", *FAST, *args, "--recipes", recipes), *fragments)


def test_dead_endpoint_is_a_one_line_error(recipes: Path, tmp_path: Path) -> None:
    with FakeChatServer(lambda request: Reply.error(401, "bad key")) as dead:
        result = evaluate(
            "paired", *FAST, "--agent-type", "llm", *llm_options(dead, tmp_path),
            "--recipes", recipes,
        )  # fmt: skip
    one_line_error(result, "LLM agent", "HTTP 401", "OPENAI_API_KEY")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("[" * 1_000_000 + "]" * 1_000_000, "JSON nested too deep"),
        (b'{"choices": [{"message": {"content": "\xff"}}]}', "not JSON"),
        ('{"choices": [], "model": "[/]\\u001b[2J"}', None),  # a reply, shown as text
    ],
    ids=["deep", "utf-8", "markup"],
)
def test_a_hostile_reply_to_llm_agents_is_a_one_line_error_or_plain_text(
    recipes: Path, tmp_path: Path, body: str | bytes, reason: str | None
) -> None:
    config = tmp_path / "once.yaml"  # no retries: each request fails for good at once
    config.write_text("sim: {params: {llm: {client: {max_retries: 0}}}}\n")
    with FakeChatServer(lambda request: Reply(raw_body=body)) as hostile:
        result = evaluate(
            "paired", *FAST, "--agent-type", "llm", *llm_options(hostile, tmp_path),
            "--config", config, "--recipes", recipes,
        )  # fmt: skip
    if reason is None:  # empty answers: the agents fall back, the run completes
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output
    else:
        one_line_error(result, "LLM agent", "reply refused", reason)
