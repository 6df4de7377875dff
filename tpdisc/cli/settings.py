"""From command-line options to a config tree: the defaults, then the ``--config`` file, then
the options given on the command line."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import typer

from tpdisc.cli.options import NEEDS, Opt
from tpdisc.config_tree import decode, encode, flatten, merged, read_yaml, with_value
from tpdisc.errors import ConfigError
from tpdisc.sim.config import MODEL_SECTION, anchor_protocols, with_changes

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# Names of click's ParameterSource members (typer ships its own copy of click).
_FROM_USER = ("COMMANDLINE", "ENVIRONMENT")
_CONTEXT = "typer_context"


@dataclass(frozen=True)
class Options:
    """The values of a command's shared options, and which of them the user gave."""

    values: Mapping[str, Any]
    given: frozenset[str]
    specs: tuple[Opt, ...]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def overrides(self, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The settings the given options set, as a nested mapping (the file's form).

        A path that names a setting in braces takes its value from these options over
        ``base`` (default: the ``--config`` file's settings), as do the checks of
        :data:`~tpdisc.cli.options.NEEDS`."""
        given = [s for s in self.specs if s.path is not None and s.name in self.given]
        data: dict[str, Any] = {}
        for spec in given:
            if "{" not in str(spec.path):
                data = with_value(data, str(spec.path), encode(self._setting(spec)))
        names = {spec.name for spec in given}
        if any("{" in str(s.path) for s in given) or any(set(n.options) & names for n in NEEDS):
            known = flatten(base if base is not None else self.file_settings())
            known.update(flatten(data))
            for spec in given:
                if "{" in str(spec.path):
                    keys = _filled(str(spec.path), known, self.specs)
                    data = merged(data, _nested(keys, encode(self._setting(spec))))
            known.update(flatten(data))
            for needs in NEEDS:
                if set(needs.options) & names and not set(needs.paths) <= set(known):
                    raise ConfigError(needs.message)
        return data

    def _setting(self, spec: Opt) -> Any:
        value = self.values[spec.name]
        return spec.setting(value) if spec.setting is not None else value

    def settings(self, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``base`` (default: the ``--config`` file, if any) with the given options applied."""
        data = dict(base) if base is not None else self.file_settings()
        return with_changes(data, self.overrides(data), f"sim.{MODEL_SECTION}")

    def file_settings(self) -> dict[str, Any]:
        """The ``--config`` file's settings; its protocol paths relative to its folder."""
        path = self.values.get("config_file")
        return anchor_protocols(read_yaml(path), Path(path).parent) if path is not None else {}

    def config(self, cls: type[T], arguments: Mapping[str, Any] | None = None) -> T:
        """The config tree ``cls`` the options and the ``--config`` file describe
        (``arguments``: top-level settings given as command arguments, which win)."""
        where = str(self.values.get("config_file") or "options")
        return decode(cls, {**self.settings(), **(arguments or {})}, where)


def with_options(*groups: tuple[Opt, ...], defaults: Any) -> Callable[[F], F]:
    """Add the options of ``groups`` to a command, which receives them as ``options``.

    Each option shows, in ``--help``, the value it has in the config tree ``defaults``.
    """
    specs = tuple(spec for group in groups for spec in group)
    default_values = flatten(encode(defaults))

    def shown_default(spec: Opt) -> Any:
        value = default_values.get(spec.path) if spec.path is not None else None
        return spec.default if value is None else value

    def wrap(func: F) -> F:
        signature = inspect.signature(func, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "options"]
        context = inspect.Parameter(
            _CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context
        )
        added = [
            inspect.Parameter(
                spec.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=spec.annotation,
                default=shown_default(spec),
            )
            for spec in specs
        ]

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            # Called by typer: the context says which options the user gave. Called from
            # Python, only the keywords passed count as given.
            context = kwargs.pop(_CONTEXT, None)
            values = {spec.name: kwargs.pop(spec.name, shown_default(spec)) for spec in specs}
            given = frozenset(
                name
                for name in values
                if context is not None and _source(context, name) in _FROM_USER
            )
            return func(*args, options=Options(values, given, specs), **kwargs)

        parameters = [*own, context, *added]
        command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in parameters}
        command.__annotations__["return"] = signature.return_annotation
        return command  # type: ignore[return-value]

    return wrap


def _source(context: typer.Context, name: str) -> str | None:
    source = context.get_parameter_source(name)
    return source.name if source is not None else None


def _filled(path: str, known: Mapping[str, Any], specs: Sequence[Opt]) -> list[str]:
    """The keys of ``path``, each ``{setting}`` replaced by that setting's value in
    ``known`` (one key, whatever it holds: model names have dots)."""
    keys = []
    for key in re.split(r"\.(?![^{]*\})", path):
        if key.startswith("{") and key.endswith("}"):
            found = known.get(key[1:-1])
            if found is None:
                needing = [_flag(s) for s in specs if key in str(s.path)]
                setting = [_flag(s) for s in specs if s.path == key[1:-1]]
                verb = "needs" if len(needing) == 1 else "need"
                raise ConfigError(f"{' and '.join(needing)} {verb} {' or '.join(setting)}")
            key = str(found)
        keys.append(key)
    return keys


def _nested(keys: Sequence[str], value: Any) -> dict[str, Any]:
    for key in reversed(keys):
        value = {key: value}
    return value


def _flag(spec: Opt) -> str:
    return "--" + spec.name.replace("_", "-")


def print_yaml(config: Any) -> None:
    """The config as YAML on stdout, for ``--print-config``."""
    import sys

    from tpdisc.config_tree import dump_yaml

    sys.stdout.write(dump_yaml(config))
