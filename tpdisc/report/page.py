"""What every static HTML page of tpdisc shares: the template with its inline style, and
escaping. Pages are opened from disk, zipped and mailed, so nothing here refers to the
network."""

from __future__ import annotations

import html
from collections.abc import Iterable

from pygments.formatters import HtmlFormatter

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
dl.facts dt { font-weight: bold; float: left; clear: left; width: 10em; }
dl.facts dd { margin-left: 11em; }
.hl { overflow-x: auto; }
""" + CODE_FORMATTER.get_style_defs(".hl")


def escape(value: object) -> str:
    return html.escape(str(value))


def page(title: str, body: str, style: str = "") -> str:
    """A whole page; ``style`` is CSS added to the shared rules."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}{style}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def facts(items: Iterable[tuple[str, str]]) -> str:
    """A definition list; the values are HTML already (escaped by the caller)."""
    inner = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="facts">{inner}</dl>'
