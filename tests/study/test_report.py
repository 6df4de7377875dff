"""A study's report: a section per stage with its figures and numbers, run browsers linked
both ways, every link inside the report folder, every text from archives escaped."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.tiny_study import keep_only, tiny_study
from tpdisc.config_tree import read_yaml, write_yaml
from tpdisc.errors import ConfigError, TpdiscError
from tpdisc.report.markup import num, pval, starred
from tpdisc.report.search_run import page_name
from tpdisc.safefiles import LinkRefused
from tpdisc.search.archive import Archive, Candidate
from tpdisc.study.layout import StudyDir
from tpdisc.study.publish import publish
from tpdisc.study.report import SECTIONS, _agents_line
from tpdisc.study.sections import _signed

EVIL = '<script>alert("x")</script> & <b>bold</b>'
SECTION_IDS = ["findings", *(ident for ident, *_ in SECTIONS), "overview"]


class Page(HTMLParser):
    """The links, ids, images and the text of each section of one page."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0
        self.sections: dict[str, list[str]] = {}
        self.tags: dict[str, list[str]] = {}  # section -> tags within it
        self.section: str | None = None
        self.text: list[str] = []
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.links += [v for k, v in attrs if k in ("href", "src") and v]
        if tag == "img":
            self.images.append(values.get("src") or "")
        if values.get("id"):
            self.ids.add(values["id"] or "")
        self.scripts += tag == "script"
        if tag == "section":
            self.section = values.get("id")
            self.sections[self.section or ""] = []
            self.tags[self.section or ""] = []
        elif self.section is not None:
            self.tags[self.section].append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self.section = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.section is not None and data.strip():
            self.sections[self.section].append(data.strip())


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> StudyDir:
    """The tiny study, with a hostile protocol in a run's archive and as a run's best."""
    folder = tiny_study(tmp_path_factory.mktemp("report"))
    with Archive(folder.root / "runs" / "evolve-1" / Archive.FILE_NAME) as archive:
        hostile = archive.add_seed(
            Candidate(name=EVIL, iteration=4, attempt=1, mode="repair", status="invalid",
                      proposer="offline", code="# </pre><script>alert(1)</script>\n",
                      error=f"SyntaxError: {EVIL}", description=EVIL)
        )  # fmt: skip
    search = folder.read_result("search")
    assert search is not None
    # pages are named by protocol name (by id for a name that makes no file name)
    search["runs"][0]["best"].update(name=EVIL, id=hostile)
    folder.write_result("search", search)
    generalization = folder.read_result("generalization")
    assert generalization is not None
    generalization["skipped"].append({"name": "llm-agents", "reason": f"no endpoint {EVIL}"})
    folder.write_result("generalization", generalization)
    return folder


@pytest.fixture(scope="module")
def report(study: StudyDir) -> Path:
    index = publish(study)
    assert index == study.report / "index.html"
    return index


def pages(report: Path) -> list[Path]:
    return sorted(report.parent.rglob("*.html"))


def test_every_section_is_there_with_a_heading_and_content(report: Path) -> None:
    page = Page(report)
    assert list(page.sections) == SECTION_IDS
    for ident in SECTION_IDS:
        heading, *content = page.sections[ident]
        assert heading and content, ident
        assert "not run yet" not in " ".join(content), ident
        assert "table" in page.tags[ident] or "dl" in page.tags[ident], ident
        if ident != "overview":
            assert "img" in page.tags[ident], ident
    assert f"llm-agents: no endpoint {EVIL}" in page.sections["generalization"]
    # the agent model first: a study's numbers mean what its agents make of them
    assert any("agents" in text and "steps" in text for text in page.sections["findings"][1:3])
    for figure in ("coverage", "pairwise", "search", "ablation", "features", "volume",
                   "generalization", "embedding_map", "mmd_runs"):  # fmt: skip
        assert f"figures/{figure}.png" in page.images


def test_every_link_and_image_resolves_inside_the_report(report: Path) -> None:
    root = report.parent.resolve()
    checked = 0
    for path in pages(report):
        page = Page(path)
        for link in page.links:
            assert not re.match(r"[a-z]+:", link), f"{path}: external {link}"
            target, _, fragment = link.partition("#")
            resolved = (path.parent / target).resolve() if target else path.resolve()
            assert resolved.is_file(), f"{path}: broken link {link}"
            assert resolved.is_relative_to(root), f"{path}: {link} leaves the report folder"
            if fragment:
                assert fragment in Page(resolved).ids, f"{path}: no #{fragment}"
            checked += 1
    assert checked > 50
    for path in [*pages(report), *report.parent.rglob("*.css")]:
        text = path.read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text, path
        assert "url(" not in text, path


def test_exports_and_figures_are_copied_into_the_report(study: StudyDir, report: Path) -> None:
    index = Page(report)
    for export in study.exports.iterdir():
        assert f"exports/{export.name}" in index.links
        assert (report.parent / "exports" / export.name).read_bytes() == export.read_bytes()
    for figure in study.figures.glob("*.png"):
        assert (report.parent / "figures" / figure.name).is_file()


def test_each_run_has_a_browser_linked_both_ways(study: StudyDir, report: Path) -> None:
    index = Page(report)
    search = study.read_result("search")
    assert search is not None
    for run in search["runs"]:
        browser = report.parent / "runs" / run["label"] / "index.html"
        assert f"runs/{run['label']}/index.html" in index.links
        page = page_name(run["best"]["name"], run["best"]["id"])
        assert f"runs/{run['label']}/protocols/{page}" in index.links
        assert "../../index.html" in Page(browser).links


def test_text_from_archives_and_results_is_escaped(report: Path) -> None:
    browser = report.parent / "runs" / "evolve-1" / "index.html"
    for path in (report, browser):
        raw = path.read_text(encoding="utf-8")
        assert "<script>alert" not in raw and "<b>bold" not in raw, path
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in raw, path
        assert EVIL in "".join(Page(path).text), path  # shown as text, as stored
    assert Page(report).scripts == 0


def test_numbers_are_formatted(report: Path) -> None:
    page = Page(report)
    words = " ".join(" ".join(texts) for texts in page.sections.values())
    assert not re.search(r"\b(nan|None|inf)\b", words)
    for number in re.findall(r"\d+\.\d+", words):  # 2 decimals, or 3 significant digits
        decimals = number.split(".")[1]
        assert len(decimals) <= 2 or len(number.replace(".", "").lstrip("0")) <= 3, number
    assert re.search(r"\d+\.\d\d ± \d+\.\d\d", " ".join(page.sections["performance"]))


def test_formatting_of_single_numbers() -> None:
    assert (num(None), num(float("nan")), num(3), num(2.0 / 3)) == ("–", "–", "3", "0.67")
    assert (pval(None), pval(0.012345), pval(0.5)) == ("–", "0.0123", "0.5")
    assert (starred(0.0004), starred(0.2), starred(None)) == ("0.0004 ***", "0.2", "–")
    assert (_signed(-1e-16), _signed(-0.333), _signed(None)) == ("+0.00", "-0.33", "–")


def test_a_stage_not_done_says_so(study: StudyDir, report: Path, tmp_path: Path) -> None:
    early = StudyDir(tmp_path / "early")
    shutil.copytree(study.root, early.root, ignore=shutil.ignore_patterns("report", "exports"))
    keep_only(early, {"baselines"})
    page = Page(publish(early))
    assert list(page.sections) == SECTION_IDS
    for ident in SECTION_IDS[2:-1]:
        assert "not run yet" in " ".join(page.sections[ident]), ident
    performance = " ".join(page.sections["performance"])
    assert "asocial" in performance and "The best protocols: not run yet." in performance
    assert not (early.report / "runs").exists()
    assert [link for link in page.links if link.startswith("exports/")] == [
        "exports/coverage.csv",
        "exports/coverage.parquet",
    ]


def test_the_findings_name_the_empowerment_model(tmp_path: Path) -> None:
    folder = StudyDir(tmp_path)
    folder.root.mkdir(exist_ok=True)
    data = {"search": {"sim": {"n_agents": 3, "agent_type": "empowerment"}}}
    data["search"]["sim"]["params"] = {"empowerment": {"name": "paper-literal"}}
    write_yaml(folder.config, data)
    assert read_yaml(folder.config)["search"]["sim"]["agent_type"] == "empowerment"
    line = str(_agents_line(folder))
    assert "3 empowerment agents" in line and "paper-literal (β 0.05)" in line


# --- a study folder made elsewhere: links inside it lead nowhere -----------------------


@pytest.fixture
def copied(study: StudyDir, report: Path, tmp_path: Path) -> StudyDir:
    """A copy of the finished study (its report built), to tamper with."""
    copy = StudyDir(tmp_path / "copy")
    shutil.copytree(study.root, copy.root)
    return copy


@pytest.mark.parametrize("place", ["exports/leak.csv", "figures/leak.png"])
def test_a_link_in_the_study_is_never_copied_into_the_report(copied: StudyDir, place: str) -> None:
    (copied.root / place).symlink_to("/proc/self/environ")
    with pytest.raises(LinkRefused, match=f"^{copied.root / place}: a symbolic link"):
        publish(copied)
    assert not (copied.report / place).exists()
    assert "leak" not in (copied.report / "index.html").read_text()


def test_a_report_folder_that_is_a_link_is_refused(copied: StudyDir, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(copied.report)
    copied.report.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(TpdiscError, match=f"^{copied.report}: a symbolic link"):
        publish(copied)
    assert not list(elsewhere.iterdir())


def test_a_run_folder_that_is_a_link_is_refused(copied: StudyDir, study: StudyDir) -> None:
    run = copied.root / "runs" / "evolve-1"
    shutil.rmtree(run)
    run.symlink_to(study.root / "runs" / "evolve-1", target_is_directory=True)
    with pytest.raises(TpdiscError, match=f"{run}: a symbolic link"):
        publish(copied)


@pytest.mark.parametrize(
    ("stage", "change"),
    [
        ("features", lambda d: d.update(features=3)),
        ("volume", lambda d: d.pop("rho")),
        ("best", lambda d: d["protocols"][0].update(seeds=[99])),
        ("search", lambda d: d["runs"][0].pop("kind")),
    ],
)
def test_hand_made_stage_results_are_one_line_naming_the_file(
    copied: StudyDir, stage: str, change: Any
) -> None:
    data = copied.read_result(stage)
    assert data is not None
    change(data)
    copied.write_result(stage, data)
    with pytest.raises(ConfigError) as info:
        publish(copied)
    assert str(copied.result(stage)) in str(info.value)
    assert "not what the study writes there" in str(info.value)
    assert "\n" not in str(info.value)


def _set(path: str, value: Any) -> Any:
    """A change to a stage's results: ``value`` at ``path`` (keys and list indices)."""

    def change(data: Any) -> None:
        *parents, last = path.split(".")
        for key in parents:
            data = data[int(key)] if isinstance(data, list) else data[key]
        data[int(last) if isinstance(data, list) else last] = value

    return change


@pytest.mark.parametrize(
    ("stage", "change", "message"),
    [
        ("baselines", _set("protocols.0.curve_mean.3", float("nan")),
         "holds NaN, where every number must be finite"),
        ("generalization", _set("settings.0.evolved_mean", float("inf")),
         "holds Infinity, where every number must be finite"),
        ("best", _set("protocols.0.final_horizon.0", -3),
         "protocols[0].final_horizon[0]: a coverage is a whole number from 0, got -3"),
        ("baselines", _set("protocols.1.final_long.2", 2.5),
         "protocols[1].final_long[2]: a coverage is a whole number from 0, got 2.5"),
        ("ablation", _set("sets.top.original_sem", -1.0),
         "sets.top.original_sem: a mean or error of coverage cannot be negative, got -1.0"),
        ("search", _set("runs.0.best.fitness", "1e400"),
         "runs[0].best.fitness: expected a finite number, got inf"),
    ],
)  # fmt: skip
def test_stored_results_that_are_not_finite_or_not_coverages_are_one_line(
    copied: StudyDir, stage: str, change: Any, message: str
) -> None:
    data = copied.read_result(stage)
    assert data is not None
    change(data)
    text = json.dumps(data, indent=2)  # NaN and Infinity as Python writes them
    copied.result(stage).write_text(text.replace('"1e400"', "1e400"))
    with pytest.raises(ConfigError) as info:
        publish(copied)
    assert str(info.value) == f"{copied.result(stage)}: {message}"


def test_a_best_protocol_with_mathtext_in_its_metrics_is_drawn_as_written(
    copied: StudyDir,
) -> None:
    from tests.cli.test_inspect import ODD_METRIC

    (copied.best / "evolve-1.py").write_text(ODD_METRIC)
    publish(copied)
    folder = copied.report / "portraits" / "evolve-1"
    assert (folder / "metrics.png").read_bytes().startswith(b"\x89PNG")
    assert "pwned" in (folder / "index.html").read_text()  # the docstring, escaped
