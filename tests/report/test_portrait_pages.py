"""Portrait pages (tpdisc.report.portrait_pages): every figure and section present, untrusted
text escaped, the stored data read back, several protocols set side by side."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.analysis.test_portrait import CONFIG, SEEDS, zero_to_one
from tpdisc.analysis.portrait import build_portraits
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import VariantSpec, make_domain
from tpdisc.executors.make import make_executor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.report.portrait_pages import read_portrait, slug, write_portrait, write_portraits


def made(toy_graph: RecipeGraph):
    domain = make_domain(toy_graph, VariantSpec())
    named = [("zero_to_one", zero_to_one()), ("stochastic", BaselineProtocol("stochastic"))]
    return build_portraits(domain, CONFIG, named, SEEDS, make_executor("serial"))


def test_a_portrait_page_has_every_section_and_its_figures(
    toy_graph: RecipeGraph, tmp_path: Path
) -> None:
    p = made(toy_graph)[0]
    index = write_portrait(p, tmp_path / "one", ("../index.html", "back"))
    text = index.read_text()
    for ident in ("coverage", "flow", "content", "agents", "metrics", "source"):
        assert f'<section id="{ident}">' in text
    for name in ("coverage", "flow", "flow_thirds", "content", "agents", "metrics"):
        assert f'src="{name}.png"' in text and (tmp_path / "one" / f"{name}.png").is_file()
    assert "Agent 0 tells agent 1" in text and "memories sent so far" in text
    assert "Where the elements come from" in text and "used a received element it lacks" in text
    assert read_portrait(tmp_path / "one") == p
    assert read_portrait(tmp_path / "nowhere") is None


def test_untrusted_names_and_code_are_escaped(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    p = made(toy_graph)[0]
    evil = replace(p, name="<script>alert(1)</script>", docstring="<b>x</b>",
                   source="# <img src=x onerror=alert(1)>\n")  # fmt: skip
    index = write_portraits([evil], tmp_path)
    pages = index.read_text() + (tmp_path / slug(evil.name) / "index.html").read_text()
    assert "<script>alert" not in pages and "<b>x</b>" not in pages
    assert "<img src=x" not in pages
    assert slug(evil.name) == "script-alert-1-script"


def test_two_protocols_are_set_side_by_side(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    index = write_portraits(made(toy_graph), tmp_path)
    text = index.read_text()
    assert 'href="zero_to_one/index.html"' in text and 'href="stochastic/index.html"' in text
    assert 'id="side-by-side"' in text and (tmp_path / "comparison.png").is_file()
    assert 'src="stochastic/flow.png"' in text
