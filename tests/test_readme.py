"""The README and the docs it leads to: the README's first lines are the two commands, its
first screen says what tpdisc is and holds no measurement diary, every command it shows
parses; the Python examples (docs/python.md) run as written (saved to a file and run with
``python``); docs/development.md matches the tree."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer

from tests.conftest import TOY
from tpdisc.analysis.published import HEADLINES
from tpdisc.cli import app
from tpdisc.cli.output import bare_json_to_stdout

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PYTHON_DOC = ROOT / "docs" / "python.md"
DEVELOPMENT_DOC = ROOT / "docs" / "development.md"
# The project's rule for the README's first lines: install and run the main job on its
# built-in defaults, then the tests (.ci/run runs exactly the second).
TWO_COMMANDS = (
    "pip install -c constraints.txt -e . && tpdisc data install ../shared/data/alchemy2.json "
    "--or-download && tpdisc compare",
    'pip install -c constraints.txt -e ".[dev]" && python -m pytest -q',
)
FIRST_SCREEN = 60  # lines: what a browser shows of the page before one scrolls
FIDELITY = ROOT / "docs" / "fidelity.json"


def python_block(containing: str) -> str:
    """The fenced Python block of docs/python.md that contains ``containing``."""
    blocks = re.findall(r"```python\n(.*?)```", PYTHON_DOC.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if containing in b]
    assert len(found) == 1, f"{len(found)} Python blocks of {PYTHON_DOC.name} hold {containing!r}"
    return found[0]


def test_the_readme_opens_with_the_two_commands_then_says_what_tpdisc_is() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    first_block = lines[lines.index("```bash") + 1 : lines.index("```")]
    assert [line.split("#")[0].strip() for line in first_block] == list(TWO_COMMANDS)
    assert lines.index("```bash") < 5  # the first thing a reader can run
    screen = "\n".join(lines[:FIRST_SCREEN])
    assert "tpdisc finds *transmission protocols*" in screen
    # a welcome, not a measurement diary: no commit hash, no date
    assert not re.search(r"\b[0-9a-f]{7,40}\b", screen), "a commit hash on the first screen"
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", screen), "a date on the first screen"


def test_ci_runs_the_readme_s_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert TWO_COMMANDS[1].split("&& ", 1)[1] in ci


def test_the_readme_and_ci_install_under_the_lock_at_the_top_of_the_repository() -> None:
    """pyproject.toml allows ranges; the README's installs and .ci/run take the exact
    versions of constraints.txt, so a fresh install is the tested one."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[dev]"' in ci
    assert all(command.startswith("pip install -c constraints.txt ") for command in TWO_COMMANDS)
    locked = {
        line.split("==")[0].lower()
        for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    }
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    names = {re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0].lower() for spec in wanted}
    assert names - locked == set(), "not pinned in constraints.txt"
    pinned = [spec for spec in project["dependencies"] if "==" in spec]
    assert pinned == [], f"pyproject.toml pins {pinned}: give a range, the lock pins"


def test_the_first_screen_says_what_is_needed_and_where_the_data_comes_from() -> None:
    screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    for needed in ("Python ≥ 3.11", "libseccomp2", "macOS", "chromium", "constraints.txt"):
        assert needed in screen, needed
    for data in ("minqi/wordcraft", "licence", "`tpdisc data install`", "offline"):
        assert data in screen, data


def reproduces_table() -> str:
    """The README's "What reproduces" table: the reference's headline results
    (tpdisc.analysis.published) beside tpdisc's recorded ones (docs/fidelity.json)."""
    recorded = json.loads(FIDELITY.read_text(encoding="utf-8"))
    rows = {row["key"]: row for row in recorded["rows"]}
    lines = [
        f"| the reference found | its figure | tpdisc, default agents (`{recorded['model']}`) | |",
        "| --- | --- | --- | --- |",
    ]
    for headline in HEADLINES:
        row = rows[headline.key]
        lines.append(
            f"| {headline.finding} | {headline.figure} | {row['tpdisc']}: {row['what']} "
            f"| {row['verdict']} |"
        )
    return "\n".join(lines)


def test_what_reproduces_on_the_first_screen_is_the_recorded_results() -> None:
    """When the recorded results change (docs/fidelity.json), the README's table follows:
    the message holds the table to paste."""
    table = reproduces_table()
    screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    assert table in screen, f"the README's table should read:\n{table}"


def test_the_recorded_results_are_those_of_their_pages() -> None:
    """Each figure of docs/fidelity.json stands in the page that measured it, and every
    headline of the reference has one."""
    recorded = json.loads(FIDELITY.read_text(encoding="utf-8"))
    assert [row["key"] for row in recorded["rows"]] == [h.key for h in HEADLINES]
    for row in recorded["rows"]:
        page = (ROOT / row["source"]).read_text(encoding="utf-8")
        assert row["tpdisc"] in page, f"{row['key']}: {row['tpdisc']!r} is not in {row['source']}"
    assert f"**The default model is `{recorded['model']}`**" in (
        ROOT / "docs" / "fidelity.md"
    ).read_text(encoding="utf-8")


def readme_commands() -> list[list[str]]:
    """Every ``tpdisc …`` line of the README's shell blocks, as arguments."""
    text = README.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in line.split("#")[0].split("&&"):
                words = shlex.split(part)
                if words[:1] == ["tpdisc"]:
                    commands.append(words[1:])
    return commands


@pytest.mark.parametrize("args", readme_commands(), ids=" ".join)
def test_every_command_the_readme_shows_parses(args: list[str]) -> None:
    """Each command, option and value the README shows exists (nothing is run)."""
    command: Any = typer.main.get_command(app)
    ctx = command.make_context("tpdisc", bare_json_to_stdout(list(args)))
    while hasattr(command, "resolve_command"):  # a group: down to the command it names
        name, command, rest = command.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        ctx = command.make_context(name, rest, parent=ctx)


def test_the_readme_shows_a_command_of_each_step() -> None:
    shown = {tuple(args[:1]) for args in readme_commands()}
    for step in ("data", "compare", "evaluate", "inspect", "evolve", "archive", "report", "study"):
        assert (step,) in shown, step


def run_script(code: str, folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = folder / "example.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_long_tables_of_results_json(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    from typer.testing import CliRunner

    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    out = tmp_path / "results" / "compare"
    args = ["compare", "asocial", "paired", "--agents", "3", "--steps", "5", "--sims", "3"]
    args += ["--agent-type", "stochastic", "--executor", "serial", "--recipes", str(recipes)]
    assert CliRunner().invoke(app, [*args, "--out", str(out)]).exit_code == 0
    code = python_block("mechanism_per_simulation")
    code += "\nprint(len(curves), len(mechanism), sorted(mechanism.columns)[:3])\n"
    done = run_script(code, tmp_path)
    assert done.returncode == 0, done.stderr
    # 2 protocols × 3 seeds × 6 points; one agent type: 2 × 3 rows
    assert done.stdout.split()[:2] == ["36", "6"]


API_EXAMPLE = "evaluate_config(config)"


def test_python_example_runs_as_a_script(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    code = python_block(API_EXAMPLE).replace("sims=10", "sims=2")  # the same, shorter
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,  # where the README says to run it: its paths are the repository's
        env={**os.environ, "TPDISC_RECIPES": str(recipes)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == [
        "asocial",
        "paired",
        "rarity_first",
    ]
    assert "guard" not in done.stderr  # it has one: the workers ran it


def test_a_script_without_the_guard_is_told_in_one_line_and_still_runs(tmp_path: Path) -> None:
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    code = (
        "from tpdisc import EvaluationConfig, SimConfig, evaluate_config\n"
        "config = EvaluationConfig(protocols=('asocial', 'paired'), sims=3,\n"
        "    sim=SimConfig(n_agents=3, n_steps=5, agent_type='stochastic'))\n"
        "for evaluation in evaluate_config(config):\n"
        "    print(evaluation.protocol, evaluation.final)\n"
    )
    done = run_script(code, tmp_path, TPDISC_RECIPES=str(recipes))
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "example.py has no 'if __name__" in lines[0], done.stderr


def test_the_development_page_names_every_room_and_only_what_exists() -> None:
    """Every path docs/development.md names exists, and it names every top-level
    subpackage and module of the package."""
    section = DEVELOPMENT_DOC.read_text(encoding="utf-8")
    package = ROOT / "tpdisc"
    named = set(re.findall(r"`(tpdisc/[\w/.]*)`", section))
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, f"{DEVELOPMENT_DOC.name} names what is not there: {missing}"
    # Rooms: `tpdisc/NAME/` or `tpdisc/NAME.py`; foundations by their file names.
    rooms = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    unnamed = sorted(
        [r for r in rooms if f"`tpdisc/{r}/`" not in section]
        + [m for m in modules if f"`tpdisc/{m}`" not in section and f"`{m}`" not in section]
    )
    assert not unnamed, f"{DEVELOPMENT_DOC.name} leaves out {unnamed}"


def slug(heading: str) -> str:
    """A heading's anchor, as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.M)
                if anchor not in {slug(h) for h in headings}:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_no_page_or_help_cites_a_specification_the_reader_does_not_have() -> None:
    """The project's specification is not in the repository: pages and --help name what
    they mean, or link the doc that has it, instead of "SPEC §N"."""
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    cited = [p.name for p in pages if "SPEC" in p.read_text(encoding="utf-8")]
    helps: list[str] = []

    def visit(command: Any, words: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            visit(sub, (*words, name))
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        if any("SPEC" in text for text in texts):
            helps.append(" ".join(words))

    visit(typer.main.get_command(app), ("tpdisc",))
    assert not cited and not helps, (cited, helps)
