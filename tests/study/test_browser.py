"""The smoke study's report in a real headless Chromium.

The study runs as a user runs it (``tpdisc study --preset smoke``, every stage, in a
process of its own), with one change: stochastic agents instead of empowerment ones,
because tests never build the real game's prior (minutes of CPU; see ``conftest``), so its
generalization leaves out the settings that play empowerment agents whatever the base
(the mixed population). The report has the same pages, sections and figures either way.
It takes 4 to 5 minutes on 2 busy cores, less on quiet ones (docs/testing.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.chromium import check_site
from tests.report import test_browser as report_browser
from tpdisc.analysis.generalize import SETTINGS
from tpdisc.sim.config import SimConfig

chromium = report_browser.chromium

SECTIONS = (
    "performance",
    "search",
    "ablation",
    "features",
    "volume",
    "generalization",
    "embeddings",
)


@pytest.fixture(scope="module")
def smoke_study(tmp_path_factory: pytest.TempPathFactory, real_recipes: Path) -> Path:
    root = tmp_path_factory.mktemp("smoke")
    overrides = root / "stochastic.yaml"
    settings = ", ".join(without_empowerment_agents())
    overrides.write_text(
        f"search:\n  sim:\n    agent_type: stochastic\ngeneralization:\n  settings: [{settings}]\n"
    )
    out = root / "study"
    command = [sys.executable, "-m", "tpdisc.cli", "study", str(overrides), "--preset", "smoke"]
    result = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def without_empowerment_agents() -> list[str]:
    """The generalization settings that play no empowerment agent on a stochastic base."""
    base = SimConfig(agent_type="stochastic")
    return [
        s.name
        for s in SETTINGS
        if not s.needs_llm and all(kind != "empowerment" for kind, _ in s.sim_config(base).agents)
    ]


def test_the_smoke_study_here_plays_no_empowerment_agent() -> None:
    assert "mixed" not in without_empowerment_agents()
    assert {"6-agents", "stochastic", "depth-limited"} <= set(without_empowerment_agents())


class Sections(HTMLParser):
    """Per ``<section id=…>`` of a page, the tags inside it."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.tags: dict[str, list[str]] = {}
        self.current: str | None = None
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "section":
            self.current = dict(attrs).get("id") or ""
            self.tags[self.current] = []
        elif self.current is not None:
            self.tags[self.current].append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.current = None


def test_the_smoke_report_passes_in_chromium(
    chromium: str, smoke_study: Path, tmp_path: Path
) -> None:
    # TPDISC_REPORT_SCREENSHOT keeps the first page's picture (docs/study_report.png).
    shot = Path(os.environ.get("TPDISC_REPORT_SCREENSHOT") or tmp_path / "report.png")
    assert check_site(smoke_study / "report" / "index.html", shot, binary=chromium) == []
    assert shot.read_bytes().startswith(b"\x89PNG")


def test_every_section_of_the_study_has_its_figure_and_its_numbers(smoke_study: Path) -> None:
    sections = Sections(smoke_study / "report" / "index.html").tags
    for name in SECTIONS:
        assert name in sections, f"no section {name}"
        assert "img" in sections[name] and "table" in sections[name], name


def test_every_stage_ran_once_and_the_exports_are_written(smoke_study: Path) -> None:
    from tpdisc.study.layout import StudyDir
    from tpdisc.study.runner import STAGE_NAMES
    from tpdisc.study.store import StudyStore

    with StudyStore(StudyDir(smoke_study).database) as store:
        finished = [e["stage"] for e in store.events() if e["event"] == "finished"]
    assert sorted(finished) == sorted(STAGE_NAMES)
    for table in ("coverage", "fitness", "features", "generalization"):
        for suffix in ("parquet", "csv"):
            assert (smoke_study / "exports" / f"{table}.{suffix}").stat().st_size > 0
