"""The HTML reports in a real headless Chromium (:mod:`tests.chromium`): first the checker
is shown to catch each defect on a hand-made site, then ``tpdisc report`` must have none."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.chromium import BINARIES, check_site, chromium_path, launch
from tests.conftest import TOY
from tests.report import test_search_run
from tpdisc.cli import app

# The small search run (with a hostile protocol) the report tests build, as a fixture here.
run_dir = test_search_run.run_dir

# A valid 1×1 PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2b6a1b50000000049454e44ae426082"
)


@pytest.fixture(scope="session")
def chromium() -> str:
    """The browser binary; without one the tests skip, or fail where CI requires it."""
    path = chromium_path()
    if path is None:
        reason = f"no Chromium binary on PATH (tried {', '.join(BINARIES)})"
        if os.environ.get("TPDISC_REQUIRE_CHROMIUM") == "1":
            pytest.fail(f"{reason}, and TPDISC_REQUIRE_CHROMIUM=1 requires one")
        pytest.skip(reason)
    return path


def site(tmp_path: Path, body: str, **files: str | bytes) -> Path:
    """A one-page site (plus ``files``) whose page holds ``body``; returns its index."""
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    index = tmp_path / "index.html"
    index.write_text(page("Index", body))
    return index


def page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"</head>\n<body>\n{body}\n</body></html>\n"
    )


CLEAN = (
    "<h1>Report</h1>\n"
    '<section id="figures"><h2>Figures</h2><img src="figure.png" alt="figure" width="40">'
    "</section>\n"
    '<section><h2>Pages</h2><p><a href="pages/a.html#part">A, part</a>, '
    '<a href="#figures">figures</a>, <a href="https://example.org/paper">the paper</a>, '
    '<a href="data.csv">data</a>, <a href="#top">top</a></p></section>\n'
    "<section><h2>Nested</h2><section><h3>Inner</h3><table><tr><td>1</td></tr></table>"
    "</section></section>\n"
    '<script>console.log("fine"); console.warn("fine too");</script>'
)
CLEAN_FILES: dict[str, str | bytes] = {
    "figure.png": PIXEL,
    "data.csv": "a,b\n1,2\n",
    "pages/a.html": page("A", '<p id="part">A</p><a href="../index.html">back</a>'),
}


def test_a_clean_site_has_no_problem_and_a_screenshot(chromium: str, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    index = site(tmp_path / "site", CLEAN, **CLEAN_FILES)
    assert check_site(index, shot, binary=chromium) == []
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000
    assert int.from_bytes(data[16:20], "big") == 1280  # IHDR width: the laptop viewport


@pytest.mark.parametrize(
    ("body", "files", "expected"),
    [
        ('<script>console.error("x")</script>', {}, "index.html: console error: x"),
        (
            '<script>throw new Error("boom")</script>',
            {},
            "index.html: uncaught exception: Error: boom",
        ),
        (
            '<img src="missing.png" alt="m">',
            {},
            "index.html: broken link missing.png: no file missing.png",
        ),
        (
            '<img src="corrupt.png" alt="c">',
            {"corrupt.png": b"\x89PNG\r\n\x1a\nnot really"},
            "index.html: image corrupt.png does not display (not an image?)",
        ),
        (
            '<a href="other.html">other</a>',
            {},
            "index.html: broken link other.html: no file other.html",
        ),
        (
            '<a href="other.html#results">results</a>',
            {"other.html": page("Other", '<p id="method">m</p>')},
            "index.html: broken link other.html#results: no id 'results' in other.html",
        ),
        (
            '<a href="#nowhere">here</a>',
            {},
            "index.html: broken link #nowhere: no id 'nowhere' in index.html",
        ),
        (
            "<section><h2>T</h2></section>",
            {},
            "index.html: empty section 'T': nothing but its heading",
        ),
        (
            '<script src="https://cdn.example.com/lib.js"></script>',
            {},
            "index.html: loads https://cdn.example.com/lib.js from the network",
        ),
        (
            '<style>body { background: url("http://example.com/bg.png") }</style><p>x</p>',
            {},
            "index.html: loads http://example.com/bg.png from the network",
        ),
        (
            '<a href="pages/b.html">b</a>',
            {"pages/b.html": page("B", '<img src="gone.png" alt="g">')},
            "pages/b.html: broken link gone.png: no file pages/gone.png",
        ),
        (
            "<style>dt { float: left; width: 4em } dd { margin-left: 5em }</style>"
            "<dl><dt>sim.params.empowerment.name</dt><dd>calibrated</dd></dl>",
            {},
            "index.html: 'sim.params.empowerment.name' is printed over its value",
        ),
    ],
    ids=[
        "console-error",
        "exception",
        "missing-image",
        "corrupt-image",
        "missing-page",
        "missing-anchor",
        "missing-local-anchor",
        "empty-section",
        "cdn-script",
        "css-from-network",
        "defect-on-a-linked-page",
        "overprinted-term",
    ],
)
def test_each_defect_is_one_problem(
    chromium: str, tmp_path: Path, body: str, files: dict[str, str | bytes], expected: str
) -> None:
    assert check_site(site(tmp_path, body, **files), binary=chromium) == [expected]


def test_every_defect_of_a_page_is_reported(chromium: str, tmp_path: Path) -> None:
    body = (
        '<img src="missing.png" alt="m"><section><h2>T</h2></section>'
        '<script>console.error("x")</script>'
    )
    problems = check_site(site(tmp_path, body), binary=chromium)
    assert sorted(p.split(": ")[1] for p in problems) == [
        "broken link missing.png",
        "console error",
        "empty section 'T'",
    ]


def test_the_crawl_stops_at_the_page_cap(chromium: str, tmp_path: Path) -> None:
    links = "".join(f'<a href="p{i}.html">{i}</a>' for i in range(3))
    files: dict[str, str | bytes] = {f"p{i}.html": page(str(i), "<p>x</p>") for i in range(3)}
    index = site(tmp_path, links, **files)
    assert check_site(index, binary=chromium, max_pages=2) == [
        "index.html: over 2 pages, 2 unchecked"
    ]
    assert check_site(index, binary=chromium, max_pages=4) == []


def test_a_hung_page_times_out_and_the_browser_is_gone(chromium: str, tmp_path: Path) -> None:
    index = site(tmp_path, "<script>while (true) {}</script>")
    with pytest.raises(TimeoutError, match="no answer"), launch(chromium, timeout=2) as browser:
        pid, profile = browser.pid, browser.profile
        assert (profile / "DevToolsActivePort").is_file()
        browser.send("Page.navigate", url=index.as_uri())
        browser.wait_for("Page.loadEventFired")
    assert not profile.parent.exists()
    deadline = time.monotonic() + 10  # SIGKILL is delivered, not awaited
    while running(group=pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(group=pid) == []


def running(group: int) -> list[int]:
    """The processes of a process group that still run. Chromium's helpers end up
    children of init, which may reap them late: zombies run nothing and do not count."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:  # it ended while we looked
            continue
        if int(pgrp) == group and state != "Z":
            pids.append(int(stat.parent.name))
    return pids


@pytest.fixture(scope="module")
def report_index(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "report"
    recipes = run_dir.parent / "toy.json"  # the run's: the best protocol gets its portrait
    args = ["report", str(run_dir), "--out", str(out), "--recipes", str(recipes)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "portraits").is_dir()
    return out / "index.html"


def test_tpdisc_report_has_no_problem(chromium: str, report_index: Path, tmp_path: Path) -> None:
    # Its configuration shows the longest keys (sim.params.empowerment.name) beside values.
    assert "sim.params.empowerment.name" in report_index.read_text()
    shot = tmp_path / "report.png"
    assert check_site(report_index, shot, binary=chromium) == []
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_a_defect_deep_in_the_report_is_found(
    chromium: str, report_index: Path, tmp_path: Path
) -> None:
    # Protocol pages are linked from the index only: the crawl must reach them.
    copy = tmp_path / "report"
    shutil.copytree(report_index.parent, copy)
    last = sorted((copy / "protocols").glob("*.html"))[-1]
    defect = '<script>console.error("deep")</script></body>'
    last.write_text(last.read_text().replace("</body>", defect))
    assert check_site(copy / "index.html", binary=chromium) == [
        f"protocols/{last.name}: console error: deep"
    ]


def test_tpdisc_inspect_pages_have_no_problem(chromium: str, tmp_path: Path) -> None:
    # The README's command on the toy game with stochastic agents (tests never build the
    # real game's prior); the example protocol runs in the sandbox, as it would there.
    recipes = tmp_path / "toy.json"
    recipes.write_text(json.dumps(TOY))
    example = Path(__file__).parent.parent.parent / "examples" / "protocols" / "rarity_first.py"
    out = tmp_path / "insp"
    fast = ["--sims", "3", "--steps", "12", "--agents", "5", "--agent-type", "stochastic"]
    args = [str(example), "stochastic", *fast, "--executor", "serial", "--recipes", str(recipes)]
    result = CliRunner().invoke(app, ["inspect", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert check_site(out / "index.html", binary=chromium) == []
    assert (out / "rarity_first" / "index.html").is_file()


def test_chromium_path_is_none_without_a_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert chromium_path() is None
