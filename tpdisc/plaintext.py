"""Text from outside shown as plain text: a model's replies, protocol names, docstrings,
metric names, file names, whatever a stored folder holds.

On a terminal such text must not act: an escape sequence can clear the screen, retitle
the window or forge a hyperlink, a carriage return or a right-to-left override can hide
what a line says, and rich markup (``[/]``, ``[link=…]``) is read as commands. So it is
printed with its control characters made visible (``\\x1b``, ``\\u202e``) and never parsed as
markup: :func:`visible` here, which the command line's consoles apply to everything they
print (:mod:`tpdisc.cli.output`).

In a figure, ``$…$`` would be read as mathtext (a bad command crashes the drawing):
:func:`plain_figures` turns mathtext off (and needs no display) before tpdisc draws.
"""

from __future__ import annotations

import re
import warnings

# C0 and C1 controls and DEL; the invisible characters that reorder or hide text (bidi
# marks, embeddings, overrides and isolates, zero-width spaces and joiners, the BOM);
# line and paragraph separators; lone surrogates, which no terminal can even be sent.
_HIDDEN = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff"
)
_IN_TEXT = re.compile(f"[{_HIDDEN}]")
_IN_LINE = re.compile(f"[{_HIDDEN}\t\n]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, lines: bool = True) -> str:
    """``text`` with every control or invisible formatting character written as its escape
    (``\\x1b``); with ``lines`` False, newlines and tabs too (for one-line messages, where
    a newline could forge a line of its own)."""
    return (_IN_TEXT if lines else _IN_LINE).sub(_shown, text)


def one_line(text: str, limit: int = 300) -> str:
    """``text`` as one visible line of at most ``limit`` characters."""
    shown = visible(text, lines=False)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def plain_figures() -> None:
    """Set matplotlib up as tpdisc draws: no display needed (Agg), and text drawn as it is
    written, never as mathtext or TeX: names in figures come from protocols and archives.
    Every module that draws calls it before drawing (a text reads the setting when made)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False
    matplotlib.rcParams["text.usetex"] = False
    # Its warning quotes the character it cannot draw: a control character from a name
    # would reach the terminal raw.
    warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
