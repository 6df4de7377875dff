"""A fast, readable pre-check of protocol source, for feedback to whoever wrote it.

It is not a security layer (the worker's seccomp filter is): it catches the usual mistakes
of generated code early, in messages an LLM can act on during repair.
"""

from __future__ import annotations

import ast

from tpdisc.protocols.loader import CONVENTIONAL_NAME
from tpdisc.sandbox.allowlist import (
    ALLOWED_TEXT,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_NAMES,
    disallowed_import,
    import_message,
)

MAX_SOURCE_CHARS = 1_000_000
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


def _protocol_class_problem(tree: ast.Module) -> str | None:
    """What :func:`tpdisc.protocols.loader.find_protocol_class` would reject, seen early:
    classes with ``share_memories`` (own or inherited from a class of the file), a subclass
    winning over its bases."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    if CONVENTIONAL_NAME in classes:
        return None

    def ancestors(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found: set[str] = set()
        for base in classes[name].bases:
            if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                found |= {base.id} | ancestors(base.id, seen | {name})
        return found

    def defines_share(name: str) -> bool:
        return any(
            isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            and item.name == "share_memories"
            for item in classes[name].body
        )

    lineage = {name: ancestors(name) for name in classes}
    candidates = [
        name
        for name in classes
        if defines_share(name) or any(defines_share(a) for a in lineage[name])
    ]
    candidates = [c for c in candidates if not any(c in lineage[o] for o in candidates)]
    if not candidates:
        return f"no class defines share_memories (name it {CONVENTIONAL_NAME})"
    if len(candidates) > 1:
        return (
            f"several classes define share_memories ({', '.join(sorted(candidates))}); "
            f"name the one to use {CONVENTIONAL_NAME}"
        )
    return None


def precheck(source: str) -> list[str]:
    """Problems visible without running ``source``, each one line; empty when none found."""
    if len(source) > MAX_SOURCE_CHARS:
        return [f"the source has {len(source):,} characters; the limit is {MAX_SOURCE_CHARS:,}"]
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        return [f"SyntaxError at line {err.lineno}: {err.msg}"]
    except (ValueError, RecursionError, MemoryError) as err:
        return [f"the source cannot be parsed: {type(err).__name__}: {err}"]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
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
    problems = [p for _, p in sorted(set(found))]
    class_problem = _protocol_class_problem(tree)
    if class_problem is not None:
        problems.append(class_problem)
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more"]
    return problems
