"""The ways out of the allowed modules, refused statically: private module attributes,
modules reached through attributes, dynamic attribute names and OS entropy.

The import filter alone is porous: ``random._os.sys.modules`` reaches every module of the
worker, ``dataclasses.sys`` and ``from typing import sys`` too, and ``getattr(x, name)``
with a computed name defeats any check of attribute names. The worker's seccomp filter is
what contains such code; refusing it here tells whoever wrote it, in one line naming the
line, and keeps it out of the search.

What counts as a module here is tracked flow-insensitively by name: a name bound by an
import, or assigned (anywhere, from any scope) from an expression that holds one, is a
module for every use of that name; so is an attribute name assigned one (``self.m =
random`` makes every ``.m`` a module). That over-approximates, harmlessly: real protocols
do not reach for private attributes of what they imported.
"""

from __future__ import annotations

import ast
import functools
import importlib
import types
import warnings
from collections import deque
from collections.abc import Iterable, Iterator

from tpdisc.sandbox.allowlist import disallowed_import

# Harmless dunders of a module or of what it exports (everything else, from __dict__ to
# __loader__, leads back to the module's namespace or the import system).
SAFE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__version__", "__all__"})
# Called by name, these read or write attributes whose names the pre-check cannot see.
DYNAMIC_ATTRIBUTE_CALLS = ("getattr", "setattr", "delattr")
NAME_TAKERS = ("attrgetter", "methodcaller")
# OS entropy: the simulation must follow its seed, and the worker denies the syscall.
ENTROPY_NAMES = frozenset({"SystemRandom", "urandom", "getrandom", "getentropy"})
MAX_PATHS = 8  # known module paths kept per name; beyond, the name is a module of any kind

Path = tuple[str, tuple[str, ...]]  # a module and the attributes taken from it


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _bad_step(name: str) -> str | None:
    """Why ``module.name`` is refused whatever the module, or None."""
    if _private(name):
        return "private attributes of modules are not allowed"
    if name.startswith("__") and name not in SAFE_DUNDERS:
        return "dunder attributes of modules are not allowed"
    return None


@functools.lru_cache(maxsize=4096)
def reached_module(module: str, attrs: tuple[str, ...]) -> str | None:
    """The name of a module outside the allow-list that ``module.attr1.attr2...`` is, if any.

    Resolved against the real modules on the host: the modules of the allow-list are
    trusted code, importing them here is what the simulation does anyway, and no static
    rule knows that ``dataclasses.inspect`` is a module but ``numpy.select`` a function.
    """
    if disallowed_import(module) is not None:
        return None  # the import itself is refused
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value: object = importlib.import_module(module)
            for attr in attrs:
                if not isinstance(value, types.ModuleType):
                    return None
                value = getattr(value, attr)
        except Exception:  # not there on this host: the worker will say so
            return None
    if isinstance(value, types.ModuleType) and disallowed_import(value.__name__) is not None:
        return value.__name__
    return None


class _Modules:
    """Which names and attribute names hold modules (or things taken from them)."""

    def __init__(self) -> None:
        self.names: dict[str, set[Path] | None] = {}
        self.attrs: dict[str, set[Path] | None] = {}

    def get(self, key: tuple[str, str]) -> set[Path] | None:
        table = self.names if key[0] == "name" else self.attrs
        return table.get(key[1], set())

    def holds(self, key: tuple[str, str]) -> bool:
        table = self.names if key[0] == "name" else self.attrs
        return key[1] in table

    def add(self, key: tuple[str, str], paths: set[Path] | None) -> bool:
        """Merge ``paths`` (None: unknown) into ``key``; True when that changed anything."""
        table = self.names if key[0] == "name" else self.attrs
        if key[1] not in table:
            table[key[1]] = None if paths is None else set(paths)
            return True
        old = table[key[1]]
        if old is None:
            return False
        if paths is None or len(old | paths) > MAX_PATHS:
            table[key[1]] = None
            return True
        if paths <= old:
            return False
        old |= paths
        return True


def chain(node: ast.expr) -> tuple[ast.expr, list[tuple[str | None, ast.expr]]]:
    """The root of an attribute chain and its steps, innermost first.

    A step is an attribute name (``.a``, or ``getattr(x, "a")``) or None for a subscript
    (``x[0]``: an element of a container of modules is a module too). Iterative.
    """
    steps: list[tuple[str | None, ast.expr]] = []
    while True:
        if isinstance(node, ast.Attribute):
            steps.append((node.attr, node))
            node = node.value
        elif isinstance(node, ast.Subscript):
            steps.append((None, node))
            node = node.value
        elif (literal := _literal_getattr(node)) is not None:
            steps.append((literal[1], node))
            node = literal[0]
        else:
            steps.reverse()
            return node, steps


def _literal_getattr(node: ast.expr) -> tuple[ast.expr, str] | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[0], node.args[1].value
    return None


def _carriers(value: ast.expr) -> Iterator[tuple[tuple[str, str], tuple[str, ...] | None]]:
    """What in ``value`` could hand a module on, each with the steps taken from it.

    ``x = random.Random`` carries ``random`` with steps ("Random",); ``x = (random, m)``
    carries both; ``x = f(random)`` carries nothing (a call returns something new).
    """
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            stack.extend(node.elts)
        elif isinstance(node, ast.Dict):
            stack.extend(node.values)
        elif isinstance(node, ast.IfExp):
            stack.extend((node.body, node.orelse))
        elif isinstance(node, ast.BoolOp):
            stack.extend(node.values)
        elif isinstance(node, ast.NamedExpr | ast.Starred):
            stack.append(node.value)
        elif isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call):
            root, steps = chain(node)
            if not steps and not isinstance(root, ast.Name):
                continue
            names = [s for s, _ in steps]
            if isinstance(root, ast.Name):
                known = None if None in names else tuple(n for n in names if n is not None)
                yield ("name", root.id), known
            # Any attribute along the way may itself hold a module: ``self.m.x``.
            for k, name in enumerate(names):
                if name is not None:
                    rest = names[k + 1 :]
                    known = None if None in rest else tuple(n for n in rest if n is not None)
                    yield ("attr", name), known


def _targets(target: ast.expr) -> Iterator[tuple[str, str]]:
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            yield ("name", node.id)
        elif isinstance(node, ast.Attribute):
            yield ("attr", node.attr)
        elif isinstance(node, ast.Tuple | ast.List):
            stack.extend(node.elts)
        elif isinstance(node, ast.Starred | ast.Subscript):
            stack.append(node.value)


def _assignments(nodes: Iterable[ast.AST]) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs, flow-insensitively: what may be bound to what."""
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield target, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            if node.value is not None:
                yield node.target, node.value
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            yield node.target, node.iter
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            yield node.optional_vars, node.context_expr
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            for arg, default in zip(positional[::-1], node.defaults[::-1], strict=False):
                yield ast.Name(id=arg.arg), default
            for arg, kw_default in zip(node.kwonlyargs, node.kw_defaults, strict=True):
                if kw_default is not None:
                    yield ast.Name(id=arg.arg), kw_default


def _import_bindings(nodes: Iterable[ast.AST]) -> Iterator[tuple[tuple[str, str], Path]]:
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module, _, rest = alias.name.partition(".")
                    path: Path = (module, tuple(rest.split(".")) if rest else ())
                    yield ("name", alias.asname), path
                else:
                    top = alias.name.partition(".")[0]
                    yield ("name", top), (top, ())
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name != "*":
                    yield ("name", alias.asname or alias.name), (node.module, (alias.name,))


def module_holders(nodes: list[ast.AST]) -> _Modules:
    """Names and attribute names that hold modules, propagated through assignments.

    A worklist over (carrier -> target) edges: each key is requeued only when its set of
    known paths grows, which it does at most :data:`MAX_PATHS` + 1 times.
    """
    modules = _Modules()
    edges: dict[tuple[str, str], list[tuple[tuple[str, str], tuple[str, ...] | None]]] = {}
    for target, value in _assignments(nodes):
        carried = list(_carriers(value))
        for key in _targets(target):
            for carrier, steps in carried:
                edges.setdefault(carrier, []).append((key, steps))
    queue: deque[tuple[str, str]] = deque()
    for key, path in _import_bindings(nodes):
        if modules.add(key, {path}):
            queue.append(key)
    while queue:
        carrier = queue.popleft()
        paths = modules.get(carrier)
        for key, steps in edges.get(carrier, ()):
            if paths is None or steps is None:
                new = None
            else:
                new = {(module, (*attrs, *steps)) for module, attrs in paths}
            if modules.add(key, new):
                queue.append(key)
    return modules


_NOT_A_MODULE = "not a module"  # the chain state before any module is involved


def _label(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _chain_problems(node: ast.expr, modules: _Modules) -> list[tuple[int, str]]:
    """The first refused step of the chain ending at ``node``, if any."""
    root, steps = chain(node)
    state: set[Path] | str | None = _NOT_A_MODULE
    text = "(...)"
    if isinstance(root, ast.Name):
        text = root.id
        if modules.holds(("name", root.id)):
            state = modules.get(("name", root.id))
    for step, step_node in steps:
        line = getattr(step_node, "lineno", 0)
        text = f"{text}.{step}" if step is not None else f"{text}[...]"
        if step is not None and state is not _NOT_A_MODULE:
            why = _bad_step(step)
            if why is not None:
                return [(line, f"line {line}: {_label(text)}: {why}")]
            if isinstance(state, set):
                for module, attrs in sorted(state):
                    reached = reached_module(module, (*attrs, step))
                    if reached is not None:
                        return [
                            (
                                line,
                                f"line {line}: {_label(text)} is the module {reached}, "
                                "which is not allowed",
                            )
                        ]
                state = {(module, (*attrs, step)) for module, attrs in state}
        if step is not None and modules.holds(("attr", step)):
            held = modules.get(("attr", step))
            if state is _NOT_A_MODULE:
                state = held
            elif isinstance(state, set) and held is not None:
                state = state | held
            else:
                state = None
    return []


def _call_problems(call: ast.Call) -> list[tuple[int, str]]:
    line = call.lineno
    func = call.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else None
    )
    if isinstance(func, ast.Name) and name in DYNAMIC_ATTRIBUTE_CALLS:
        if len(call.args) < 2 or not (
            isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)
        ):
            return [
                (
                    line,
                    f"line {line}: {name} needs a literal attribute name "
                    "(a computed name cannot be checked)",
                )
            ]
    elif isinstance(func, ast.Name) and name == "vars":
        if call.args and not (
            len(call.args) == 1 and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"
        ):
            return [
                (
                    line,
                    f"line {line}: vars() of anything but self is not allowed "
                    "(it reads attributes by computed name)",
                )
            ]
    elif name in NAME_TAKERS:
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            text = arg.value if isinstance(arg, ast.Constant) else None
            if not isinstance(text, str) or any(p.startswith("_") for p in text.split(".")):
                return [(line, f"line {line}: {name} needs literal public attribute names")]
    return []


def _entropy(name: str, line: int) -> tuple[int, str]:
    return (
        line,
        f"line {line}: {name} is not allowed (it reads OS entropy; use random or "
        "np.random, which are seeded for each simulation)",
    )


def escape_problems(nodes: list[ast.AST]) -> list[tuple[int, str]]:
    """``(line, one-line problem)`` for every way out found among ``nodes``."""
    modules = module_holders(nodes)
    found: list[tuple[int, str]] = []
    inner: set[int] = set()  # nodes inside a longer chain: the chain is checked whole
    called: set[int] = set()  # names used as the function of a call
    for node in nodes:
        if isinstance(node, ast.Attribute | ast.Subscript):
            inner.add(id(node.value))
        elif isinstance(node, ast.Call):
            called.add(id(node.func))
            literal = _literal_getattr(node)
            if literal is not None:
                inner.add(id(literal[0]))
            found.extend(_call_problems(node))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name in ENTROPY_NAMES:
                    found.append(_entropy(alias.name, node.lineno))
                elif not _private(alias.name):
                    reached = reached_module(node.module, (alias.name,))
                    if reached is not None:
                        found.append(
                            (
                                node.lineno,
                                f"line {node.lineno}: {node.module}."
                                f"{alias.name} is the module {reached}, which is not allowed",
                            )
                        )
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:
                if attr.startswith("_") and attr not in SAFE_DUNDERS:
                    found.append(
                        (
                            node.lineno,
                            f"line {node.lineno}: a class pattern may not "
                            f"read the private or dunder attribute {attr}",
                        )
                    )
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            if node.id in ENTROPY_NAMES:
                found.append(_entropy(node.id, line))
            elif node.id in (*DYNAMIC_ATTRIBUTE_CALLS, "vars") and id(node) not in called:
                found.append((line, f"line {line}: {node.id} may only be called directly"))
        elif isinstance(node, ast.Attribute):
            if node.attr in ENTROPY_NAMES:
                found.append(_entropy(node.attr, line))
            elif node.attr == "__dict__" and not (
                isinstance(node.value, ast.Name) and node.value.id == "self"
            ):
                found.append(
                    (
                        line,
                        f"line {line}: .__dict__ of anything but self is not "
                        "allowed (it reads attributes by computed name)",
                    )
                )
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Call) and id(node) not in inner:
            found.extend(_chain_problems(node, modules))
    return found
