"""From command-line options to a config tree: the defaults, then the ``--config`` file, then
the options given on the command line."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import typer

from tpdisc.cli.options import LLM_AGENT, Opt
from tpdisc.config_tree import decode, encode, flatten, read_yaml, with_value
from tpdisc.errors import ConfigError
from tpdisc.sim.config import anchor_protocols

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

    def overrides(self) -> dict[str, Any]:
        """The settings the given options set, as a nested mapping (the file's form)."""
        data: dict[str, Any] = {}
        for spec in self.specs:
            if spec.path is not None and spec.name in self.given:
                data = with_value(data, spec.path, encode(self.values[spec.name]))
        return _llm_agent_extras(self, data)

    def settings(self, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``base`` (default: the ``--config`` file, if any) with the given options applied."""
        data = dict(base) if base is not None else self.file_settings()
        if "empowerment_model" in self.given:
            data = _without_model_choices(data)
        for path, value in flatten(self.overrides()).items():
            data = with_value(data, path, value)
        return data

    def file_settings(self) -> dict[str, Any]:
        """The ``--config`` file's settings; its protocol paths relative to its folder."""
        path = self.values.get("config_file")
        return anchor_protocols(read_yaml(path), Path(path).parent) if path is not None else {}

    def config(self, cls: type[T], arguments: Mapping[str, Any] | None = None) -> T:
        """The config tree ``cls`` the options and the ``--config`` file describe
        (``arguments``: top-level settings given as command arguments, which win)."""
        where = str(self.values.get("config_file") or "options")
        return decode(cls, {**self.settings(), **(arguments or {})}, where)


def _without_model_choices(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` without the empowerment model's settings but its prior: a model named on
    the command line is that model, not the one a file (say, printed by --print-config)
    spelled out field by field."""
    section: Any = data
    for key in ("sim", "params", "empowerment"):
        section = section.get(key) if isinstance(section, Mapping) else None
    if not isinstance(section, Mapping):
        return dict(data)
    kept = {k: v for k, v in section.items() if k == "prior"}
    return with_value(data, "sim.params.empowerment", kept)


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


def _llm_agent_extras(options: Options, data: dict[str, Any]) -> dict[str, Any]:
    """The LLM agents' options that are not one setting each: ``--llm-no-cache`` negates
    ``cache``, and the prices belong to the model in use."""
    given = options.given
    in_file = flatten(options.file_settings())
    if "llm_no_cache" in given:
        data = with_value(data, f"{LLM_AGENT}.cache", not options["llm_no_cache"])
    prices = {"llm_price_input": "input", "llm_price_output": "output"}
    if given & set(prices):
        model = options["llm_model"] or in_file.get(f"{LLM_AGENT}.client.model")
        if model is None:
            raise ConfigError("--llm-price-input and --llm-price-output need --llm-model")
        for name, side in prices.items():
            if name in given:
                path = f"{LLM_AGENT}.client.prices.{model}.{side}"
                data = with_value(data, path, options[name])
    if any(name.startswith("llm_") for name in given):
        known = set(flatten(data)) | set(in_file)
        if not {f"{LLM_AGENT}.client.base_url", f"{LLM_AGENT}.client.model"} <= known:
            raise ConfigError("LLM agents need both --llm-base-url and --llm-model")
    return data


def print_yaml(config: Any) -> None:
    """The config as YAML on stdout, for ``--print-config``."""
    import sys

    from tpdisc.config_tree import dump_yaml

    sys.stdout.write(dump_yaml(config))
