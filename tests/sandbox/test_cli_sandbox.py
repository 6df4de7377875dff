"""``tpdisc evaluate`` with untrusted files: sandboxed by default, failures in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tpdisc.sandbox
import tpdisc.sandbox.runner
from tests.conftest import TOY
from tpdisc.cli import app
from tpdisc.sandbox import SandboxWarning

RANDOM_SHARING = """
import random


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        out = {}
        for agent in range(self.n_agents):
            teacher = random.randrange(self.n_agents)
            if agent_states[teacher]["memories"]:
                out[agent] = [(teacher, random.randrange(len(agent_states[teacher]["memories"])))]
        return out
"""


@pytest.fixture
def toy_recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def evaluate(recipes: Path, *args: str) -> tuple[int, str]:
    common = ["--sims", "2", "--steps", "6", "--agents", "3", "--executor", "serial"]
    result = CliRunner().invoke(app, ["evaluate", *args, *common, "--recipes", str(recipes)])
    return result.exit_code, result.output


def test_a_failing_untrusted_file_exits_with_its_one_line_reason(
    tmp_path: Path, toy_recipes: Path
) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text(
        RANDOM_SHARING.replace("out = {}", "out = {}\n        while i_step == 2:\n            pass")
    )
    code, output = evaluate(toy_recipes, str(slow), "--time-limit", "1")
    assert code == 1
    assert output.strip().splitlines()[-1] == (
        f"error: {slow}: timeout after 1 s in share_memories at step 2"
    )


def test_a_good_untrusted_file_runs_sandboxed_like_trusted(
    tmp_path: Path, toy_recipes: Path
) -> None:
    good = tmp_path / "good.py"
    good.write_text(RANDOM_SHARING)
    json_sandboxed, json_trusted = tmp_path / "s.json", tmp_path / "t.json"
    assert evaluate(toy_recipes, str(good), "--json", str(json_sandboxed))[0] == 0
    assert evaluate(toy_recipes, str(good), "--trusted", "--json", str(json_trusted))[0] == 0
    sandboxed = json.loads(json_sandboxed.read_text())["results"]
    trusted = json.loads(json_trusted.read_text())["results"]
    assert sandboxed == trusted


def test_without_seccomp_untrusted_files_are_refused_unless_unsafe(
    tmp_path: Path, toy_recipes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = tmp_path / "good.py"
    good.write_text(RANDOM_SHARING)
    unsupported = lambda: (False, "no seccomp (test)")  # noqa: E731
    monkeypatch.setattr(tpdisc.sandbox, "sandbox_support", unsupported)
    monkeypatch.setattr(tpdisc.sandbox.runner, "seccomp_support", unsupported)
    code, output = evaluate(toy_recipes, str(good), "paired")
    assert code == 1
    assert output.strip().splitlines()[-1] == (
        f"error: {good}: refusing to run untrusted code: the seccomp sandbox is unavailable "
        "(no seccomp (test)); --unsafe-no-sandbox runs it with the weaker layers only"
    )
    # Baselines alone need no sandbox.
    assert evaluate(toy_recipes, "paired")[0] == 0
    with pytest.warns(SandboxWarning, match="WITHOUT the seccomp sandbox"):
        code, output = evaluate(toy_recipes, str(good), "--unsafe-no-sandbox")
    assert code == 0, output


def test_a_file_the_pre_check_refuses_is_refused_before_it_runs(
    tmp_path: Path, toy_recipes: Path
) -> None:
    walk = tmp_path / "walk.py"
    walk.write_text(
        RANDOM_SHARING.replace(
            "out = {}",
            "out = {}\n        system = next(c for c in ().__class__.__base__.__subclasses__()"
            " if c.__name__ == '_wrap_close').__init__.__globals__['system']",
        )
    )
    code, output = evaluate(toy_recipes, str(walk))
    assert code == 1
    assert output.strip().splitlines() == [
        f"error: {walk}: refused by the pre-check: line 11: .__base__ is not allowed "
        "(no introspection of internals) (and 2 more)"
    ]
