"""A fast, readable pre-check of protocol source, for feedback to whoever wrote it.

It is not a security layer (the worker's seccomp filter is): it catches the usual mistakes
of generated code early, in messages an LLM can act on during repair.
"""

from __future__ import annotations

import ast

from tpdisc.sandbox.allowlist import (
    ALLOWED_TEXT,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_NAMES,
    disallowed_import,
    import_message,
)
from tpdisc.sandbox.bounds import SourceRejected, bounded_nodes, parse_bounded
from tpdisc.sandbox.classgraph import class_count_problem, protocol_class_problem
from tpdisc.sandbox.determinism import determinism_problems
from tpdisc.sandbox.escapes import escape_problems

MAX_PROBLEMS = 20


def _import_problems(node: ast.Import | ast.ImportFrom) -> list[str]:
    line = f"line {node.lineno}"
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return [f"{line}: relative imports are not allowed"]
        module = node.module or ""
        bad = disallowed_import(module, [a.name for a in node.names])
        return [] if bad is None else [f"{line}: {import_message(bad)} (allowed: {ALLOWED_TEXT})"]
    problems = []
    for alias in node.names:
        bad = disallowed_import(alias.name)
        if bad is not None:
            problems.append(f"{line}: {import_message(bad)} (allowed: {ALLOWED_TEXT})")
    return problems


def precheck(source: str) -> list[str]:
    """Problems visible without running ``source``, each one line; empty when none found."""
    try:
        tree = parse_bounded(source)
        nodes = bounded_nodes(tree)
    except SourceRejected as err:
        return [str(err)]
    too_many = class_count_problem(nodes)
    if too_many is not None:
        return [too_many]
    found: list[tuple[int, str]] = []
    for node in nodes:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.extend((line, p) for p in _import_problems(node))
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append(
                (line, f"line {line}: {node.id} is not allowed ({FORBIDDEN_NAMES[node.id]})")
            )
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(
                (line, f"line {line}: .{node.attr} is not allowed (no introspection of internals)")
            )
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in FORBIDDEN_ATTRIBUTES
        ):
            found.append(
                (
                    line,
                    f"line {line}: {node.value!r} is not allowed (no introspection of internals)",
                )
            )
    found.extend(escape_problems(nodes))
    found.extend(determinism_problems(nodes))
    problems = [p for _, p in sorted(set(found))]
    try:
        class_problem = protocol_class_problem(tree)
    except SourceRejected as err:
        class_problem = str(err)
    if class_problem is not None:
        problems.append(class_problem)
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more"]
    return problems
