"""Options declared once, YAML configs for every command, flags over files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from tests.conftest import TOY
from tpdisc.cli import app
from tpdisc.config_tree import decode
from tpdisc.search.config import SearchConfig
from tpdisc.sim.config import EvaluationConfig

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def printed(*args: str | Path) -> dict:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return yaml.safe_load(result.stdout)


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_print_config_round_trips_and_flags_override_the_file(command, tmp_path) -> None:
    flags = ["--population", "empowerment:2,stochastic:3", "--beta", "0.1", "--variant", "3-item"]
    first = printed(command, "--print-config", *flags, "--executor", "serial", "paired")
    assert first["protocols"] == ["paired"] and first["sim"]["params"]["empowerment"]["beta"] == 0.1
    assert first["sim"]["population"] == [["empowerment", 2], ["stochastic", 3]]
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(first))
    assert printed(command, "--config", path, "--print-config") == first
    changed = printed(command, "--config", path, "--print-config", "--beta", "0.7", "--sims", "3")
    assert changed["sim"]["params"]["empowerment"]["beta"] == 0.7 and changed["sims"] == 3
    assert changed["sim"]["variant"] == first["sim"]["variant"]  # the file's, not the default
    assert decode(EvaluationConfig, changed).sim.n_agents == 5
    # a model named on the command line replaces the file's model settings, not its prior
    named = printed(
        command, "--config", path, "--print-config", "--empowerment-model", "paper-literal"
    )
    model = named["sim"]["params"]["empowerment"]
    assert (model["name"], model["beta"], model["owned"]) == ("paper-literal", 0.05, "zero")
    assert model["prior"] == first["sim"]["params"]["empowerment"]["prior"]
    tuned = printed(
        command, "--empowerment-model", "paper-literal", "--beta", "0.1", "--print-config"
    )
    assert tuned["sim"]["params"]["empowerment"]["beta"] == 0.1
    assert tuned["sim"]["params"]["empowerment"]["name"] == "paper-literal"
    # choices given on the command line win over the file's spelled-out fields
    chosen = printed(
        command, "--config", path, "--print-config", "--empowerment-choices", "remember=step"
    )
    assert chosen["sim"]["params"]["empowerment"]["remember"] == "step"
    assert first["sim"]["params"]["empowerment"]["remember"] == "always"


def test_a_run_from_a_file_is_the_run_of_the_same_flags(recipes, tmp_path) -> None:
    flags = ["--sims", "2", "--steps", "6", "--agents", "3", "--agent-type", "stochastic"]
    flags += ["--executor", "serial", "--recipes", str(recipes), "paired"]
    path = tmp_path / "exp.yaml"
    path.write_text(runner.invoke(app, ["evaluate", "--print-config", *flags]).stdout)
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    assert runner.invoke(app, ["evaluate", *flags, "--json", str(outs[0])]).exit_code == 0
    from_file = runner.invoke(app, ["evaluate", "--config", str(path), "--json", str(outs[1])])
    assert from_file.exit_code == 0, from_file.output
    a, b = (json.loads(p.read_text()) for p in outs)
    assert a["results"][0]["final"] == b["results"][0]["final"] and a["config"] == b["config"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sim:\n  params:\n    beta: high\n", "sim.params.empowerment.beta: expected a number"),
        (
            "sim:\n  params:\n    empowerment: {name: wild}\n",
            "unknown empowerment model 'wild'",
        ),
        ("sims: 3\nbogus: 1\n", "unknown setting bogus"),
        ("sim:\n  population: robots:3\n", "robots"),
        ("executor:\n  kind: cloud\n", "unknown executor 'cloud'"),
    ],
)
def test_mistakes_in_a_file_are_one_line(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["evaluate", "--config", str(path), "--print-config"])
    assert result.exit_code == 1 and message in result.stderr and str(path) in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_the_examples_load() -> None:
    for command, name in (("evaluate", "evaluate.yaml"), ("evolve", "evolve.yaml")):
        args = [command, "--config", ROOT / "examples" / name, "--print-config"]
        data = printed(*args, *(["--run-dir", "/nonexistent/run"] if command == "evolve" else []))
        assert data["sim"]["params"]["empowerment"]["beta"] == 0.5
        for protocol in data.get("protocols", []):  # files beside the example, found from here
            assert protocol in ("asocial", "stochastic", "graph") or Path(protocol).is_file()
    assert not Path("/nonexistent/run").exists()


def test_protocol_paths_in_a_file_are_relative_to_its_folder(recipes, tmp_path) -> None:
    folder = tmp_path / "study" / "configs"
    (folder / "mine").mkdir(parents=True)
    (folder / "mine" / "p.py").write_text((ROOT / "examples/protocols/rarity_first.py").read_text())
    config = folder / "exp.yaml"
    config.write_text("protocols: [asocial, mine/p.py]\nsims: 2\nsim: {n_agents: 3, n_steps: 4}\n")
    data = printed("evaluate", "--config", config, "--print-config")
    assert data["protocols"] == ["asocial", str(folder / "mine" / "p.py")]
    out = tmp_path / "out.json"
    args = ["evaluate", "--config", str(config), "--recipes", str(recipes), "--json", str(out)]
    result = runner.invoke(app, [*args, "--agent-type", "stochastic", "--executor", "serial"])
    assert result.exit_code == 0, result.output
    assert [r["protocol"] for r in json.loads(out.read_text())["results"]] == ["asocial", "p"]
    from tpdisc import load_config

    assert load_config(EvaluationConfig, config).protocols[1] == str(folder / "mine" / "p.py")


def test_a_missing_protocol_file_says_where_it_looked(recipes, tmp_path) -> None:
    config = tmp_path / "sub" / "exp.yaml"
    config.parent.mkdir()
    config.write_text("protocols: [gone.py]\n")
    result = runner.invoke(app, ["evaluate", "--config", str(config), "--recipes", str(recipes)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"no such protocol file (looked for {tmp_path / 'sub' / 'gone.py'})" in result.stderr
    missing = runner.invoke(app, ["evaluate", "--config", str(tmp_path / "nope.yaml")])
    assert f"looked for {tmp_path / 'nope.yaml'}" in missing.stderr


def test_evolve_takes_every_simulation_option_and_keeps_it(recipes, tmp_path) -> None:
    run_dir = tmp_path / "run"
    args = ["evolve", "--run-dir", str(run_dir), "--recipes", str(recipes), "--iterations", "2"]
    args += ["--sims", "2", "--steps", "8", "--executor", "serial"]
    setting = ["--population", "empowerment:2,stochastic:2", "--beta", "0.1", "--p-social", "0.9"]
    setting += ["--empowerment-choices", "owned=zero", "--time-limit", "10"]
    result = runner.invoke(app, [*args, *setting])
    assert result.exit_code == 0, result.output
    config = SearchConfig.load(run_dir / "config.yaml")
    assert config.sim.agents == (("empowerment", 2), ("stochastic", 2))
    assert (config.sim.params.empowerment.beta, config.sim.params.p_social) == (0.1, 0.9)
    assert config.sim.params.empowerment.owned == "zero" and config.sandbox.time_limit == 10
    resumed = runner.invoke(app, [*args, "--beta", "0.2"])
    assert resumed.exit_code == 1 and "sim.params.empowerment.beta=0.1" in resumed.stderr
    longer = runner.invoke(app, [*args[:-4], "--iterations", "3", "--executor", "serial"])
    assert longer.exit_code == 0, longer.output
    assert SearchConfig.load(run_dir / "config.yaml").iterations == 3


def test_every_option_is_in_its_command_help() -> None:
    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        subcommands = getattr(command, "commands", {name: command})
        for sub_name, sub in subcommands.items():
            path = [name] if sub is command else [name, sub_name]
            text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output
            for param in sub.params:
                if getattr(param, "hidden", False):  # an old name, kept working
                    continue
                for flag in param.opts:
                    if flag.startswith("--"):
                        assert flag in text, f"{' '.join(path)} --help misses {flag}"


def test_brackets_in_help_texts_are_shown() -> None:
    assert "tpdisc[sentence]" in runner.invoke(app, ["prior", "build", "--help"]).output
    assert "tpdisc[ray]" in runner.invoke(app, ["evaluate", "--help"]).output


def _laughs(levels: int) -> str:
    """Nested aliases in one flow value, each level nine of the one below."""
    text = "&a0 [" + ", ".join(["lol"] * 9) + "]"
    for i in range(1, levels):
        text = f"&a{i} [{text}, " + ", ".join([f"*a{i - 1}"] * 8) + "]"
    return text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sandbox:\n  time_limit: .inf\n", "line 2: .inf is not a finite number"),
        ("sims: " + "[" * 3000 + "]" * 3000 + "\n", "nested more than 64 deep"),
        (
            # 9**5 values under a known key: read, then refused with an excerpt only.
            "sim:\n  n_agents: " + _laughs(5) + "\n",
            "sim.n_agents: expected a whole number, got [[",
        ),
    ],
    ids=["infinity", "deep", "bomb under a key"],
)
def test_hostile_files_are_one_line(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    result = runner.invoke(app, ["evaluate", "--config", str(path), "--print-config"])
    assert result.exit_code == 1 and message in result.stderr, result.output
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert len(result.stderr) < 300


def test_an_infinite_time_limit_option_is_one_line() -> None:
    result = runner.invoke(app, ["evaluate", "asocial", "--time-limit", "inf", "--print-config"])
    assert result.exit_code == 1, result.output
    assert "sandbox.time_limit: expected a finite number, got inf" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
