"""Python source into ``ast`` trees, one thread at a time.

CPython 3.11 keeps the AST builder's recursion depth in state that all threads share
(gh-106905 mended one cause, not this one): while one thread turns source into ``ast``
objects, a collection can run a finaliser, the interpreter can switch threads there, and a
second thread's parse then leaves the first with ``SystemError: AST constructor recursion
depth mismatch``. A study runs its searches in threads, and each parses sources (the
sandbox's pre-check, the baselines' code shown in prompts), so every parse in the package
holds :data:`PARSING`: through :func:`parse`, or around ``inspect``'s lookup of a class's
source, which parses the class's module.
"""

from __future__ import annotations

import ast
import threading

PARSING = threading.Lock()


def parse(source: str) -> ast.Module:
    """``ast.parse(source)``, never beside another thread's parse."""
    with PARSING:
        return ast.parse(source)
