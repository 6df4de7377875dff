"""The one way tpdisc reads YAML: configuration files are untrusted input.

``yaml.safe_load`` builds no arbitrary objects, but it is not safe against a hostile file:
a kilobyte of nested aliases ("billion laughs") composes cheaply into a tree that shares
its branches, and explodes into billions of values the moment anything walks it (the
config's flattening, an error message's ``repr``); 3,000 nested lists exhaust the
composer's recursion; ``.inf`` passes every ``> 0`` check.

So the document is composed here, iteratively, from the parser's events, counting as it
goes, before anything walks the tree: the file's size, the nesting depth, the number of
values the tree would have with every alias expanded (a recursive alias is infinite) and
every number's finiteness are checked first. Each refusal is a :class:`YamlRefused` of one
line naming the file and the line.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from yaml import events, nodes

from tpdisc.errors import TpdiscError
from tpdisc.safefiles import read_capped

MAX_BYTES = 1_000_000
MAX_DEPTH = 64
# Values of the tree with every alias expanded: settings files have hundreds.
MAX_VALUES = 100_000
_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FLOAT = "tag:yaml.org,2002:float"


class YamlRefused(TpdiscError):
    """A YAML file that cannot or must not be read: ``where`` (the file), and why."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


def read_yaml_file(path: str | Path, root: str | Path | None = None) -> Any:
    """The data of the YAML file ``path`` (None when it holds no document); with ``root``,
    no link below it is followed (:func:`tpdisc.safefiles.open_regular`)."""
    path = Path(path)
    try:
        text = read_capped(path, MAX_BYTES, root=root).decode("utf-8")
    except UnicodeDecodeError as err:
        raise YamlRefused(str(path), f"not UTF-8 text (byte {err.start})") from None
    except TpdiscError as err:
        reason = str(err).removeprefix(f"{path}: ")
        raise YamlRefused(str(path), reason) from None
    return load_text(text, str(path))


def load_text(text: str, where: str = "<yaml>") -> Any:
    """The data of one YAML document in ``text``, checked as :mod:`tpdisc.yamlsafe` says."""
    if len(text) > MAX_BYTES:
        raise YamlRefused(where, f"more than {MAX_BYTES:,} characters")
    loader = _Loader(text)
    try:
        root = _compose(loader, where)
        return None if root is None else loader.construct_document(root)
    except yaml.YAMLError as err:
        raise YamlRefused(where, f"not valid YAML ({_first_line(err)})") from None
    except (ValueError, OverflowError, TypeError) as err:  # e.g. an int of 10,000 digits
        raise YamlRefused(where, f"a value cannot be read ({_first_line(err)})") from None
    finally:
        loader.dispose()


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    text = "; ".join(lines[:3]) or type(err).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _line(event: events.Event) -> int:
    mark = getattr(event, "start_mark", None)
    return int(mark.line) + 1 if mark is not None else 0


def _compose(loader: Any, where: str) -> nodes.Node | None:
    """The node tree of the stream's single document, or None for an empty stream.

    An explicit stack instead of the composer's recursion; ``total`` counts the values of
    the expanded tree so far, so that an alias costs the size of what it names.
    """
    loader.get_event()  # StreamStart
    if loader.check_event(events.StreamEndEvent):
        return None
    loader.get_event()  # DocumentStart
    anchors: dict[str, nodes.Node] = {}
    sizes: dict[int, int] = {}  # expanded size of each finished anchored node
    # Open collections: the node, the total when it opened, a mapping's pending key.
    stack: list[tuple[Any, int, list[nodes.Node]]] = []
    total = 0
    root: nodes.Node | None = None
    while not loader.check_event(events.DocumentEndEvent):
        event = loader.get_event()
        line = _line(event)
        start: Any = event.start_mark  # the C parser's marks are not yaml.Mark
        end: Any = event.end_mark
        node: nodes.Node
        if isinstance(event, events.AliasEvent):
            target = anchors.get(str(event.anchor))
            if target is None:
                raise YamlRefused(where, f"line {line}: unknown alias *{_cut(event.anchor)}")
            if id(target) not in sizes:
                raise YamlRefused(
                    where,
                    f"line {line}: the alias *{_cut(event.anchor)} is inside what "
                    "it names (an infinite value)",
                )
            node, total = target, total + sizes[id(target)]
        elif isinstance(event, events.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(nodes.ScalarNode, event.value, event.implicit)
            node = nodes.ScalarNode(tag, event.value, start, end, event.style)
            if tag == _FLOAT and not math.isfinite(loader.construct_yaml_float(node)):
                raise YamlRefused(where, f"line {line}: {_cut(event.value)} is not a finite number")
            total += 1
            if event.anchor is not None:
                anchors[str(event.anchor)] = node
                sizes[id(node)] = 1
        elif isinstance(event, events.SequenceStartEvent | events.MappingStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise YamlRefused(where, f"line {line}: nested more than {MAX_DEPTH} deep")
            is_seq = isinstance(event, events.SequenceStartEvent)
            kind = nodes.SequenceNode if is_seq else nodes.MappingNode
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(kind, None, event.implicit)
            collection = kind(tag, [], start, None, flow_style=event.flow_style)
            if event.anchor is not None:
                anchors[str(event.anchor)] = collection
            stack.append((collection, total, []))
            total += 1
            _check_total(total, where, line)
            continue
        elif isinstance(event, events.SequenceEndEvent | events.MappingEndEvent):
            collection, opened, pending = stack.pop()
            collection.end_mark = end
            if pending:
                raise YamlRefused(where, f"line {line}: a key without a value")
            sizes[id(collection)] = total - opened
            node = collection
        else:
            raise YamlRefused(where, f"line {line}: unexpected {type(event).__name__}")
        _check_total(total, where, line)
        if not stack:
            root = node
        elif isinstance(stack[-1][0], nodes.SequenceNode):
            stack[-1][0].value.append(node)
        else:
            pending = stack[-1][2]
            if pending:
                stack[-1][0].value.append((pending.pop(), node))
            else:
                pending.append(node)
    loader.get_event()  # DocumentEnd
    if not loader.check_event(events.StreamEndEvent):
        raise YamlRefused(where, "expected one YAML document, found more")
    return root


def _check_total(total: int, where: str, line: int) -> None:
    if total > MAX_VALUES:
        raise YamlRefused(
            where,
            f"line {line}: more than {MAX_VALUES:,} values, counting each alias as what it names",
        )


def _cut(text: object, width: int = 40) -> str:
    shown = str(text)
    return shown if len(shown) <= width else shown[: width - 3] + "..."
