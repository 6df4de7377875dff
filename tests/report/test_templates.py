"""The page templates escape every value they are given; only Markup goes in as it is."""

from __future__ import annotations

import jinja2
import pytest
from markupsafe import Markup

from tpdisc.report.page import facts, page
from tpdisc.report.templates import render

EVIL = '<script>alert("x")</script>'


def test_values_are_escaped_and_markup_is_kept() -> None:
    html = render("page.html", title=EVIL, style=Markup("a > b {}"), body=EVIL)
    assert "<script>" not in html and html.count("&lt;script&gt;") == 2
    assert "a > b {}" in html


def test_the_shared_helpers_escape_too() -> None:
    assert "<script>" not in page(EVIL, facts([(EVIL, 3), ("ok", Markup("<b>b</b>"))]))
    assert "<dd><b>b</b></dd>" in facts([("ok", Markup("<b>b</b>"))])


def test_a_misspelt_name_is_an_error_not_an_empty_cell() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render("page.html", title="t", style="")
