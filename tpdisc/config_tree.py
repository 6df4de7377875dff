"""Config trees: frozen dataclasses to and from the plain mappings of a YAML file.

Every setting of tpdisc lives in a frozen dataclass; nested dataclasses make one tree
(:class:`~tpdisc.search.config.SearchConfig` holds a :class:`~tpdisc.sim.config.SimConfig`,
which holds :class:`~tpdisc.agents.base.AgentParams`, …). :func:`decode` reads a mapping
into such a tree, checking every key and type so that a mistake in a file is one line
naming it (``exp.yaml: sim.n_steps: expected a whole number, got 'long'``); :func:`encode`
writes the tree back, so that what ``--print-config`` prints can be fed back.

A class with its own file form (the LLM client's prices, say) defines ``to_dict()`` and a
classmethod ``from_dict(data, where)``. A field whose value may also be written as text
names its parser in ``field(metadata={"from_text": parse})``; a field whose type is
imported lazily (to keep a heavy client out of every run) names its reader in
``field(metadata={"decode": read})``, called with the value and its place.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from tpdisc.errors import ConfigError, excerpt
from tpdisc.safefiles import FileRefused, write_file

T = TypeVar("T")


def decode(cls: type[T], data: Any, where: str = "config") -> T:
    """The dataclass ``cls`` from a mapping; unknown keys and wrong types are errors."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping of settings, got {excerpt(data)}")
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(map(str, data)) - set(known))
    if unknown:
        raise ConfigError(
            f"{where}: unknown setting {', '.join(unknown)} (known: {', '.join(known)})"
        )
    values = {}
    for name, value in data.items():
        spec, place = known[str(name)], _inside(where, str(name))
        parse, read = spec.metadata.get("from_text"), spec.metadata.get("decode")
        if parse is not None and isinstance(value, str):
            try:
                values[spec.name] = parse(value)
            except ConfigError as err:
                raise ConfigError(f"{place}: {err}") from None
        elif read is not None:
            values[spec.name] = None if value is None else read(value, place)
        else:
            values[spec.name] = _value(_hint(cls, spec), value, place)
    missing = [
        f.name
        for f in known.values()
        if f.name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where}: missing setting {', '.join(missing)}")
    try:
        return cls(**values)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None


def encode(obj: Any) -> Any:
    """Plain data (mappings, lists, numbers, text) for a config tree or a value in it."""
    custom = getattr(obj, "to_dict", None)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return custom() if callable(custom) else encode_fields(obj)
    if isinstance(obj, Mapping):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, tuple | list):
        return [encode(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def encode_fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields, each encoded (for classes whose ``to_dict`` is the plain one)."""
    return {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"sim": {"params": {"p_social": 0.5}}}`` as ``{"sim.params.p_social": 0.5}``."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, path + "."))
        else:
            flat[path] = value
    return flat


def with_value(data: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of nested ``data`` with the dotted ``path`` set (missing levels created)."""
    head, _, rest = path.partition(".")
    copy = dict(data)
    if rest:
        inner = copy.get(head)
        copy[head] = with_value(inner if isinstance(inner, Mapping) else {}, rest, value)
    else:
        copy[head] = value
    return copy


def merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with every setting of the nested ``changes`` put in: a mapping is merged
    into the one it meets, anything else replaces what is there. Keys are taken whole (a
    model's name may hold dots)."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and value:
            inner = out.get(key)
            out[key] = merged(inner if isinstance(inner, Mapping) else {}, value)
        else:
            out[key] = value
    return out


def section(data: Mapping[str, Any], path: str) -> Mapping[str, Any] | None:
    """The mapping at the dotted ``path`` of nested ``data`` (None where there is none)."""
    found: Any = data
    for key in path.split("."):
        found = found.get(key) if isinstance(found, Mapping) else None
    return found if isinstance(found, Mapping) else None


def read_yaml(path: str | Path, root: str | Path | None = None) -> dict[str, Any]:
    """The settings in a YAML file, as written (defaults not filled in); the file is
    untrusted input, read through :mod:`tpdisc.yamlsafe`."""
    # PyYAML costs a process about 0.1 G instructions to import: only those that read a
    # file pay it, not every command that merely decodes settings.
    from tpdisc.yamlsafe import YamlRefused, read_yaml_file

    path = Path(path)
    try:
        data = read_yaml_file(path, root)
    except YamlRefused as err:
        reason = err.reason
        if not path.exists() and not path.is_symlink():
            reason += f"; looked for {path.absolute()}"
        raise ConfigError(f"{path}: cannot read the config ({reason})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings, got {excerpt(data)}")
    return data


def dump_yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(encode(data), sort_keys=False, allow_unicode=True)


def write_yaml(path: str | Path, data: Any, root: str | Path | None = None) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of one;
    no link followed below ``root`` (default: the file's folder)."""
    try:
        write_file(path, dump_yaml(data), root)
    except FileRefused as err:
        raise ConfigError(str(err)) from None


def _hint(cls: type, spec: dataclasses.Field[Any]) -> Any:
    """A field's type, from its annotation text (``from __future__ import annotations``)."""
    if not isinstance(spec.type, str):
        return spec.type
    return eval(spec.type, vars(sys.modules[cls.__module__]))  # annotations of our own source


def _value(kind: Any, value: Any, where: str) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _value(options[0], value, where)
        for option in options:
            try:
                return _value(option, value, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {excerpt(value)} is not a valid value")
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        custom: Callable[..., Any] | None = getattr(kind, "from_dict", None)
        if custom is not None and isinstance(value, Mapping):
            return custom(value, where)
        return decode(kind, value, where)
    if kind is Any:
        return value
    if kind is bool:
        return _checked(value, isinstance(value, bool), "true or false", where)
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return _checked(value, ok, "a whole number", where)
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        _checked(value, ok, "a number", where)
        # inf passes every "> 0" check, then overflows whatever counts with it.
        return float(_checked(value, math.isfinite(value), "a finite number", where))
    if kind is str:
        return _checked(value, isinstance(value, str), "text", where)
    if kind is Path:
        return Path(_checked(value, isinstance(value, str), "a path", where))
    if origin is tuple:
        _checked(value, isinstance(value, list | tuple), "a list", where)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise ConfigError(f"{where}: expected a list of {len(args)}, got {excerpt(value)}")
        return tuple(
            _value(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if origin in (Mapping, dict) or kind in (Mapping, dict):
        _checked(value, isinstance(value, Mapping), "a mapping", where)
        inner = args[1] if len(args) == 2 else Any
        return {str(k): _value(inner, v, _inside(where, str(k))) for k, v in value.items()}
    raise ConfigError(f"{where}: cannot read a setting of type {kind}")  # a tpdisc bug


def _inside(where: str, name: str) -> str:
    """``exp.yaml`` + ``sim`` → ``exp.yaml: sim``; ``exp.yaml: sim`` + ``beta`` → ``… sim.beta``."""
    return f"{where}.{name}" if ": " in where else f"{where}: {name}"


def _checked(value: Any, ok: bool, expected: str, where: str) -> Any:
    if not ok:
        raise ConfigError(f"{where}: expected {expected}, got {excerpt(value)}")
    return value
