"""Errors the command line reports as one line (no traceback)."""

from __future__ import annotations

import reprlib
from typing import Any


class TpdiscError(Exception):
    """Base of every error whose message is meant for the user as it is."""


class RecipeDataError(TpdiscError):
    """The recipe data is missing, unreadable or malformed."""


class ConfigError(TpdiscError):
    """A setting or option has a value the tool cannot use."""


class ProtocolError(TpdiscError):
    """A transmission protocol failed to load, crashed, or returned a malformed exchange."""


# Never a whole value: a value from a file may be huge, or a tree sharing its branches.
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 2, 4, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 50


def excerpt(value: Any, width: int = 60) -> str:
    """A bounded repr of ``value`` for a one-line message, at most ``width`` characters."""
    text = _REPR.repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
