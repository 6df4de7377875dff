"""Which class of a source the loader would pick, worked out from the syntax tree alone.

This mirrors :func:`tpdisc.protocols.loader.find_protocol_class` so that the pre-check can
say early that a source has no protocol class, or several. Generated sources can hold any
class graph (long chains, ladders where each class inherits from the two before, names
reused so that the names form cycles), so the analysis is linear in classes plus base
references: one pass in file order, then one traversal with a visited set. It spends its
steps from a :class:`~tpdisc.sandbox.bounds.Budget`, which tests read.
"""

from __future__ import annotations

import ast

from tpdisc.protocols.loader import CONVENTIONAL_NAME
from tpdisc.sandbox.bounds import MAX_AST_NODES, MAX_CLASSES, Budget


def _defines_share(node: ast.ClassDef) -> bool:
    return any(
        isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "share_memories"
        for item in node.body
    )


def _binds_conventional_name(node: ast.stmt) -> bool:
    """``TransmissionProtocol = SomeClass`` at the top level also names the protocol."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    else:
        return False
    return any(isinstance(t, ast.Name) and t.id == CONVENTIONAL_NAME for t in targets)


def class_count_problem(nodes: list[ast.AST]) -> str | None:
    """Too many classes for a protocol (checked before any graph work)."""
    count = sum(isinstance(node, ast.ClassDef) for node in nodes)
    if count > MAX_CLASSES:
        return f"the source defines {count:,} classes; the limit is {MAX_CLASSES:,}"
    return None


def protocol_class_problem(tree: ast.Module, budget: Budget | None = None) -> str | None:
    """What the loader would reject, seen early: no class with ``share_memories`` (own or
    inherited from a class of the file), or several, a subclass winning over its bases."""
    # Each base reference is a syntax node, and is pushed and visited at most twice.
    budget = budget or Budget(4 * MAX_AST_NODES, "the class analysis")
    statements = tree.body
    if any(
        (isinstance(s, ast.ClassDef) and s.name == CONVENTIONAL_NAME) or _binds_conventional_name(s)
        for s in statements
    ):
        return None
    # Class statements in file order; a base name means the latest class of that name
    # defined before (what the name is bound to when the class statement runs). Base
    # indices are therefore always smaller: the graph is acyclic whatever the names do.
    defs = [s for s in statements if isinstance(s, ast.ClassDef)]
    latest: dict[str, int] = {}
    bases: list[list[int]] = []
    has_share: list[bool] = []
    for index, node in enumerate(defs):
        budget.spend(1 + len(node.bases))
        own = [latest[b.id] for b in node.bases if isinstance(b, ast.Name) and b.id in latest]
        bases.append(own)
        has_share.append(_defines_share(node) or any(has_share[b] for b in own))
        latest[node.name] = index
    # The module's namespace keeps the last class of each name.
    candidates = [index for index in latest.values() if has_share[index]]
    # A candidate another candidate inherits from is not the protocol: mark every strict
    # ancestor of a candidate, visiting each class once.
    ancestors: set[int] = set()
    stack = [b for c in candidates for b in bases[c]]
    while stack:
        budget.spend()
        index = stack.pop()
        if index not in ancestors:
            ancestors.add(index)
            stack.extend(bases[index])
    chosen = sorted(defs[c].name for c in candidates if c not in ancestors)
    if not chosen:
        return f"no class defines share_memories (name it {CONVENTIONAL_NAME})"
    if len(chosen) > 1:
        return (
            f"several classes define share_memories ({', '.join(chosen)}); "
            f"name the one to use {CONVENTIONAL_NAME}"
        )
    return None
