"""What in a protocol's source would make the same seed give different simulations,
refused statically: memory addresses taken as values, and the wall clock through numpy.

The worker already serves every entropy read from the simulation's seed and runs without
address-space randomisation (see ``docs/security.md``, *Determinism*), so heap addresses
repeat from run to run; but they still follow what the worker's zygote did before the
fork (which protocols ran, which libraries it loaded), so a simulation that reads one
would change with the order of a run's simulations. The wall clock cannot be pinned at
all: numpy reads it in C, through the vDSO, when a string ``'now'`` or ``'today'`` becomes
a datetime. Refusing both in one line each tells whoever wrote the protocol why.

Like the rest of the pre-check this reads names and literals: a datetime dtype spelled by
a computed string, or an address read through ``hash()`` or ``repr()`` of a plain object,
still gets through (and still repeats run to run in the same order, see above).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

# Names whose value is a memory address.
ADDRESS_NAMES = frozenset({"id"})
# numpy's datetime type, and the literals that make a datetime of the wall clock or name
# a datetime dtype (from which ``astype`` parses 'now').
DATETIME_NAMES = frozenset({"datetime64", "datetime_data", "busdaycalendar"})
CLOCK_WORDS = frozenset({"now", "today"})
DATETIME_DTYPE = re.compile(r"^[<>=|]?(M8|datetime64)(\[\w*\])?$")

_CLOCK_REASON = "numpy reads the wall clock for 'now' and 'today', which no seed can replay"


def determinism_problems(nodes: Iterable[ast.AST]) -> list[tuple[int, str]]:
    """``(line, one-line problem)`` for every non-reproducible read found among ``nodes``."""
    found: list[tuple[int, str]] = []
    for node in nodes:
        line = getattr(node, "lineno", 0)
        name = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else node.name
            if isinstance(node, ast.alias)  # from numpy import datetime64
            else None
        )
        if isinstance(node, ast.Name) and node.id in ADDRESS_NAMES:
            found.append(
                (
                    line,
                    f"line {line}: {node.id}() is not allowed (it returns a memory address, "
                    "which changes from run to run; keep your own counter)",
                )
            )
        elif name in DATETIME_NAMES:
            found.append((line, f"line {line}: numpy datetimes are not allowed ({_CLOCK_REASON})"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            word = text.strip().lower()
            if word in CLOCK_WORDS:
                found.append(
                    (
                        line,
                        f"line {line}: the literal {node.value!r} is not allowed ({_CLOCK_REASON})",
                    )
                )
            elif DATETIME_DTYPE.match(text.strip()):
                found.append(
                    (
                        line,
                        f"line {line}: the datetime dtype {node.value!r} is not allowed "
                        f"({_CLOCK_REASON})",
                    )
                )
    return found
