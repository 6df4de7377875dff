"""Which imports protocol code may use, and the names the pre-check flags.

The import allow-list is SPEC §3's, plus a few modules with no I/O that externally written
protocol files commonly import for annotations and small data structures. It is enforced
inside the worker (as fast feedback: Python-level restrictions can be bypassed; seccomp is
what actually stops files, sockets and processes).
"""

from __future__ import annotations

from collections.abc import Iterable

SPEC_MODULES = (
    "numpy",
    "random",
    "collections",
    "statistics",
    "math",
    "itertools",
    "heapq",
    "functools",
    "sklearn.neighbors",
    "sklearn.metrics",
)
HARMLESS_EXTRAS = (
    "__future__",
    "typing",
    "dataclasses",
    "abc",
    "enum",
    "copy",
    "bisect",
    "operator",
)
SKLEARN_SUBMODULES = frozenset(m.partition(".")[2] for m in SPEC_MODULES if "." in m)
_TOP_LEVEL = frozenset(m for m in SPEC_MODULES + HARMLESS_EXTRAS if "." not in m)

ALLOWED_TEXT = ", ".join(SPEC_MODULES)

# Builtins that reach files, dynamic code or the interpreter's internals.
FORBIDDEN_NAMES = {
    "open": "no file access",
    "exec": "no dynamic code",
    "eval": "no dynamic code",
    "compile": "no dynamic code",
    "__import__": "use import statements",
    "breakpoint": "no interaction",
    "input": "no interaction",
    "exit": "a protocol returns exchanges; it does not end the process",
    "quit": "a protocol returns exchanges; it does not end the process",
    "globals": "no access to the interpreter's internals",
    "__builtins__": "no access to the interpreter's internals",
    "__loader__": "no access to the import system",
    "__spec__": "no access to the import system",
}

# Attributes that walk from an ordinary object to modules, frames or code.
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "__subclasses__",
        "__globals__",
        "__builtins__",
        "__code__",
        "__closure__",
        "__base__",
        "__bases__",
        "__mro__",
        "__loader__",
        "__spec__",
        "__reduce__",
        "__reduce_ex__",
        # From a bound method or wrapper back to its module or function.
        "__self__",
        "__func__",
        "__wrapped__",
        "__objclass__",
        # Attribute access by a name held in a variable, which no check can read.
        "__getattribute__",
        "__getattr__",
        "__setattr__",
        "__delattr__",
        # Frames, tracebacks and code objects, each a step to globals and builtins.
        "__traceback__",
        "tb_frame",
        "tb_next",
        "f_globals",
        "f_locals",
        "f_back",
        "f_builtins",
        "f_code",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "ag_await",
    }
)
# Submodules of an allowed package that are ways out of it: C pointers and library
# loading (numpy.ctypeslib imports ctypes), build and test machinery running processes.
DENIED_SUBMODULES = ("numpy.ctypeslib", "numpy.testing", "numpy.f2py", "numpy.distutils")


def _denied_submodule(name: str) -> str | None:
    for denied in DENIED_SUBMODULES:
        if name == denied or name.startswith(denied + "."):
            return denied
    return None


def disallowed_import(name: str, fromlist: Iterable[str] = ()) -> str | None:
    """The module name to refuse for ``import name`` / ``from name import fromlist``."""
    fromlist = list(fromlist)
    for item in fromlist:
        # ``from random import _os``: a private name of a module is a way into its imports.
        if item.startswith("_") and not (item.startswith("__") and item.endswith("__")):
            return f"{name}.{item}"
    denied = _denied_submodule(name) or next(
        (d for n in fromlist if (d := _denied_submodule(f"{name}.{n}"))), None
    )
    if denied is not None:
        return denied
    top = name.partition(".")[0]
    if top == "sklearn":
        if name == "sklearn":
            names = [n for n in fromlist if n != "*"]
            if not names:
                return "sklearn"
            for n in names:
                if n not in SKLEARN_SUBMODULES:
                    return f"sklearn.{n}"
            return None
        sub = name.split(".")[1]
        return None if sub in SKLEARN_SUBMODULES else f"sklearn.{sub}"
    return None if top in _TOP_LEVEL else name


def import_message(module: str) -> str:
    """The one message for a refused import, the same from the pre-check and the worker."""
    return f"{module} is not allowed"
