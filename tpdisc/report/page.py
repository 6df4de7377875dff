"""What every static HTML page of tpdisc shares: the page template with its inline style,
and escaping (Jinja2's, see :mod:`tpdisc.report.templates`). Pages are opened from disk,
zipped and mailed, so nothing here refers to the network."""

from __future__ import annotations

from collections.abc import Iterable

import markupsafe
from markupsafe import Markup
from pygments.formatters import HtmlFormatter

from tpdisc.report.templates import ENVIRONMENT, render

CODE_FORMATTER = HtmlFormatter(cssclass="hl", linenos="table")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; }
table.protocols { border-collapse: collapse; width: 100%; }
table.protocols th, table.protocols td { padding: .25em .6em; border-bottom: 1px solid #ddd; }
table.protocols th { cursor: pointer; text-align: left; background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.invalid td { color: #a33; }
pre.error { background: #fff0f0; padding: .6em; white-space: pre-wrap; }
.description { white-space: pre-wrap; }
dl.facts { display: grid; grid-template-columns: minmax(10em, max-content) minmax(0, 1fr);
  gap: .15em 1em; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.hl { overflow-x: auto; }
""" + CODE_FORMATTER.get_style_defs(".hl")


def escape(value: object) -> Markup:
    """``value`` as HTML text (Jinja2's escaping, the same the templates apply)."""
    return markupsafe.escape(value)


def page(title: str, body: str, style: str = "") -> str:
    """A whole page; ``body`` is HTML already (built from escaped pieces), ``style`` is CSS
    added to the shared rules."""
    return render("page.html", title=title, style=Markup(STYLE + style), body=Markup(body))


def facts(items: Iterable[tuple[str, object]]) -> Markup:
    """A definition list; a value that is not Markup is escaped."""
    macros = ENVIRONMENT.get_template("macros.html").module
    return Markup(macros.facts(list(items)))  # type: ignore[attr-defined]
