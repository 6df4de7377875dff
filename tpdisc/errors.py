"""Errors the command line reports as one line (no traceback), and text from outside made
plain for them and for the terminal.

Text from outside (a model's replies, protocol names, docstrings, metric names, file
names, whatever a stored folder holds) must not act on a terminal: an escape sequence can
clear the screen, retitle the window or forge a hyperlink, a carriage return or a
right-to-left override can hide what a line says. :func:`visible` shows such characters as
their escapes (``\\x1b``, ``\\u202e``); the command line's consoles apply it to everything
they print and read no markup (:mod:`tpdisc.cli.output`).
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Iterable
from typing import Any


class TpdiscError(Exception):
    """Base of every error whose message is meant for the user as it is."""


class RecipeDataError(TpdiscError):
    """The recipe data is missing, unreadable or malformed."""


class ConfigError(TpdiscError):
    """A setting or option has a value the tool cannot use."""


class ProtocolError(TpdiscError):
    """A transmission protocol failed to load, crashed, or returned a malformed exchange."""


def did_you_mean(text: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'dynamic'?)`` when a choice is close to ``text`` (a typo), else ""."""
    import difflib  # only on the way to an error message: not at every process's start

    close = difflib.get_close_matches(str(text), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown(what: str, text: str, choices: Iterable[str]) -> str:
    """The message for a name that is none of ``choices``: the closest one, then all."""
    choices = [str(c) for c in choices]
    return f"unknown {what} {text!r}{did_you_mean(text, choices)}; choose from {', '.join(choices)}"


# Never a whole value: a value from a file may be huge, or a tree sharing its branches.
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 2, 4, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 50


def excerpt(value: Any, width: int = 60) -> str:
    """A bounded repr of ``value`` for a one-line message, at most ``width`` characters."""
    text = _REPR.repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


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
