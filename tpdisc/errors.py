"""Errors the command line reports as one line (no traceback)."""


class TpdiscError(Exception):
    """Base of every error whose message is meant for the user as it is."""


class RecipeDataError(TpdiscError):
    """The recipe data is missing, unreadable or malformed."""


class ConfigError(TpdiscError):
    """A setting or option has a value the tool cannot use."""


class ProtocolError(TpdiscError):
    """A transmission protocol failed to load, crashed, or returned a malformed exchange."""
