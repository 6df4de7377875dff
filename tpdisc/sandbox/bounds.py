"""Reading untrusted source on the host within fixed bounds of size, shape and work.

The pre-check parses and walks generated code in the search's own process, before any
sandbox is involved. A hostile (or merely runaway) source must not hang or crash the run
there, so every step is iterative (no Python recursion over the tree: a 3,000-deep chain
of anything would raise RecursionError), counts its work against a fixed budget, and turns
every way of failing, ``ast.parse``'s own RecursionError and MemoryError included, into a
one-line reason.
"""

from __future__ import annotations

import ast
import warnings

from tpdisc.python_source import PARSING

# Real protocols are a few kilobytes; a model's answer is capped by its output tokens
# (about 64 kB). Parsing is the one step the host cannot interrupt, and costs about 500
# bytes of memory per byte of dense source, so the size bound is what bounds it.
MAX_SOURCE_BYTES = 100_000
# The example protocols have under 1,000 nodes, nested at most 14 deep.
MAX_AST_NODES = 50_000
MAX_DEPTH = 100
MAX_CLASSES = 256


class SourceRejected(Exception):
    """The source is beyond the bounds, or cannot be parsed; ``str(err)`` is one line."""


class Budget:
    """A count of steps of work that stops the caller once ``limit`` is passed.

    Algorithms over generated graphs spend one step per edge or node they visit, so a test
    can assert that the work stays proportional to the input (wall time would be flaky).
    """

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.spent = 0

    def spend(self, steps: int = 1) -> None:
        self.spent += steps
        if self.spent > self.limit:
            raise SourceRejected(f"{self.what} takes more than {self.limit:,} steps")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def parse_bounded(source: str) -> ast.Module:
    """``ast.parse(source)`` after the size check, with every failure a one-line reason."""
    # len() first: a string of over MAX_SOURCE_BYTES characters is refused without the
    # cost of encoding it (a character is at least one byte).
    size = len(source)
    if size <= MAX_SOURCE_BYTES:
        try:
            size = len(source.encode("utf-8"))
        except UnicodeEncodeError as err:
            raise SourceRejected(f"the source is not valid text ({err.reason})") from None
    if size > MAX_SOURCE_BYTES:
        raise SourceRejected(f"the source has {size:,} bytes; the limit is {MAX_SOURCE_BYTES:,}")
    try:
        # Warnings about the source (invalid escapes, ...) are no business of the host's.
        with PARSING, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except SyntaxError as err:
        where = f" at line {err.lineno}" if err.lineno else ""
        raise SourceRejected(f"SyntaxError{where}: {_one_line(err.msg)}") from None
    except (RecursionError, MemoryError):
        # CPython's parser and its AST builder give up on deep nesting this way.
        raise SourceRejected(
            "the source is nested too deeply to parse (simplify the deepest expression)"
        ) from None
    except ValueError as err:  # null bytes, among others
        raise SourceRejected(f"the source cannot be parsed: {_one_line(str(err))}") from None


def bounded_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` in pre-order (parents before children), iteratively.

    Refuses trees of more than :data:`MAX_AST_NODES` nodes or deeper than
    :data:`MAX_DEPTH` levels. Expression contexts (shared Load/Store singletons) are left
    out: they carry nothing to check.
    """
    nodes: list[ast.AST] = []
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            line = getattr(node, "lineno", "?")
            raise SourceRejected(
                f"line {line}: the code is nested more than {MAX_DEPTH} levels deep"
            )
        nodes.append(node)
        if len(nodes) > MAX_AST_NODES:
            raise SourceRejected(
                f"the source has more than {MAX_AST_NODES:,} syntax nodes; simplify it"
            )
        children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context)]
        # Reversed so that children come out in source order.
        stack.extend((child, depth + 1) for child in reversed(children))
    return nodes
