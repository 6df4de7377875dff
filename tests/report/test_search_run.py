"""``tpdisc report``: a static HTML browser of a search run, checked link by link."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
from tpdisc.cli import app
from tpdisc.report.search_run import page_name
from tpdisc.search.archive import Archive, Candidate

runner = CliRunner()
TINY = ["--sims", "2", "--steps", "8", "--agents", "4", "--agent-type", "stochastic"]
EVIL = '<script>alert("x")</script> & <b>bold</b>'


class Page(HTMLParser):
    """The links, the classes and the text of one page."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.links: list[str] = []
        self.classes: set[str] = set()
        self.text: list[str] = []
        self.scripts = 0
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.links += [v for k, v in attrs if k in ("href", "src") and v]
        self.classes.update((values.get("class") or "").split())
        self.scripts += tag == "script"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small offline search, plus a hostile protocol two generations below a seed."""
    tmp = tmp_path_factory.mktemp("html")
    recipes = tmp / "toy.json"
    recipes.write_text(json.dumps(TOY))
    run = tmp / "run"
    args = ["evolve", "--run-dir", str(run), "--recipes", str(recipes), "--iterations", "4"]
    result = runner.invoke(app, [*args, *TINY, "--executor", "serial"])
    assert result.exit_code == 0, result.output
    with Archive(run / Archive.FILE_NAME) as archive:
        child = next(c for c in archive.candidates() if c.parent_id is not None)
        assert child.id is not None
        archive.add_seed(
            Candidate(
                name=EVIL,
                iteration=4,
                attempt=1,
                mode="repair",
                status="invalid",
                proposer="offline",
                code=(child.code or "") + "\n# </pre><script>alert(1)</script>\n",
                error=f"SyntaxError: {EVIL}",
                description=EVIL,
                parent_id=child.id,
                lineage=[child.id, *child.lineage],
            )
        )
    return run


@pytest.fixture(scope="module")
def report(run_dir: Path) -> Path:
    result = runner.invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "index.html" in result.output
    return run_dir / "report"


def test_every_internal_link_resolves(report: Path) -> None:
    pages = [report / "index.html", *sorted((report / "protocols").glob("*.html"))]
    assert len(pages) > 2
    for page in pages:
        for link in Page(page).links:
            assert not re.match(r"[a-z]+:", link), f"{page}: external link {link}"
            assert (page.parent / link.split("#")[0]).is_file(), f"{page}: broken link {link}"


def test_every_protocol_has_a_page_linked_from_the_index(run_dir: Path, report: Path) -> None:
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        rows = archive.summaries()
    index = Page(report / "index.html")
    assert "best_fitness.png" in index.links and (report / "best_fitness.png").stat().st_size
    assert index.scripts == 1 and "protocols" in index.classes  # the sortable table
    # The sort keys are numbers JavaScript's parseFloat reads (not Python's "inf" or "nan").
    keys = re.findall(r'data-sort="([^"]*)"', (report / "index.html").read_text())
    assert keys and all(re.fullmatch(r"-?(\d+(\.\d+)?(e-?\d+)?|Infinity)", k) for k in keys)
    assert "-Infinity" in keys  # the hostile protocol has no fitness
    for c in rows:
        # named as the command line names them; the hostile name is no file name
        page = f"protocol-{c.id}.html" if c.name == EVIL else f"{c.name}.html"
        assert page_name(c.name, c.id) == page
        assert (report / "protocols" / page).is_file()
        assert f"protocols/{page}" in index.links
    assert (report / "protocols" / "i0002.html").is_file()


def test_lineage_links_up_the_parent_chain_and_diff(run_dir: Path, report: Path) -> None:
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        last = archive.candidates()[-1]
        names = {c.id: c.name for c in archive.summaries()}
    assert last.id is not None and len(last.lineage) == 2
    page = Page(report / "protocols" / f"protocol-{last.id}.html")
    for ancestor in last.lineage:
        assert f"{names[ancestor]}.html" in page.links
    assert "../index.html" in page.links
    text = "".join(page.text)
    assert last.parent_id is not None
    assert "Changes from the parent" in text and f"parent {names[last.parent_id]}" in text
    # one name per protocol: the lineage reads as names, never as row ids
    lineage = text[text.index("lineage") : text.index("Changes from the parent")]
    assert " ← ".join(names[i] for i in last.lineage) in lineage
    assert not re.search(r"\b\d+\b", lineage.split("\n")[0]), lineage
    assert "gi" in page.classes  # pygments' class for an inserted diff line


def test_code_is_highlighted(report: Path) -> None:
    page = Page(report / "protocols" / "asocial.html")
    assert {"hl", "k", "nc"} <= page.classes  # pygments: keywords, class names
    assert "class" in "".join(page.text) and "TransmissionProtocol" in "".join(page.text)
    assert ".hl .k" in (report / "protocols" / "asocial.html").read_text()  # its CSS is inline


def test_archive_text_is_escaped(run_dir: Path, report: Path) -> None:
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        hostile = archive.candidates()[-1].id
    for path in (report / "index.html", report / "protocols" / f"protocol-{hostile}.html"):
        raw = path.read_text()
        assert "<script>alert" not in raw and "<b>bold" not in raw
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in raw
        page = Page(path)
        assert EVIL in "".join(page.text)  # shown as text, exactly as stored
    assert Page(report / "protocols" / f"protocol-{hostile}.html").scripts == 0
    assert "error" in Page(report / "protocols" / f"protocol-{hostile}.html").classes


def test_out_option_and_a_directory_that_is_no_run(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "elsewhere"
    result = runner.invoke(app, ["report", str(run_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "index.html").is_file() and (out / "protocols" / "asocial.html").is_file()

    missing = runner.invoke(app, ["report", str(tmp_path)])
    assert missing.exit_code == 1
    assert "not a search run directory" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.output


def test_help_names_the_option() -> None:
    result = runner.invoke(app, ["report", "--help"])
    assert result.exit_code == 0 and "--out" in result.output and "RUN_DIR/report" in result.output


def test_report_shows_the_scores_on_fresh_seeds(run_dir: Path, tmp_path: Path) -> None:
    from tpdisc.search.archive import Rescore
    from tpdisc.search.pick import found, run_pick

    with Archive(run_dir / Archive.FILE_NAME) as archive:
        best = found(archive)[0]  # the best the search found (its baselines are not picked)
        archive.add_rescore(Rescore(best.id, [2, 3], [5.0, 7.0], 6.0, 1.0))
        pick = run_pick(archive)
    out = tmp_path / "fresh"
    assert runner.invoke(app, ["report", str(run_dir), "--out", str(out)]).exit_code == 0
    index = "".join(Page(out / "index.html").text)
    assert "fresh seeds" in index and "6.00 ± 1.00" in index
    # "Best" is the run's pick: the best on fresh seeds.
    assert f"best protocol{pick.name}: {pick.why()}" in index and pick.fresh is not None
    page = "".join(Page(out / "protocols" / page_name(best.name, best.id)).text)
    assert "6.00 ± 1.00 over seeds 2..3, which the search never used" in page
    with Archive(run_dir / Archive.FILE_NAME) as archive:  # the module's report stays as it was
        archive.db.execute("DELETE FROM rescores")
