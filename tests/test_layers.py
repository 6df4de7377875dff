"""The package reads top-down: no module imports from a higher layer, and no imports go in
a circle.

Layers, bottom first: the shared errors, readers of untrusted files, config trees, the
parsing of Python source, SQLite's lifecycle (``storage``) and the BLAS kernels' pin
(``portable_blas``); ``domain``; ``executors``
(where simulations run: serial, process pool, Ray); ``llm_client`` (the chat client);
``agents`` and ``protocols`` (side by side, neither importing the other's in a circle);
``sandbox``; ``sim``; ``search``; ``analysis``; ``report``; ``study``; and on top ``cli``
beside ``testing`` (the stand-ins for the outside world that tests and benchmarks use: no
module of the package imports them, and nothing under ``tpdisc/`` or ``benchmarks/``
imports from ``tests/``). A module belongs to the layer of its top-level subpackage.

Every import statement counts: at module level, inside functions (a lazy import is still
a dependency, only hidden) and under ``TYPE_CHECKING`` (not exempt: an annotation's import
is something a reader must follow too, and its cycle turns real the day the name is needed
at run time). Only the implicit import of a package's ``__init__`` by its own submodules
is left out, which would make every package that re-exports its submodules a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

import tpdisc

PACKAGE = Path(tpdisc.__file__).parent
# Bottom first; names on one line share a level.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "safefiles",
        "yamlsafe",
        "config_tree",
        "storage",
        "python_source",
        "portable_blas",
        "random_draws",
    ),
    ("domain",),
    ("executors",),
    ("llm_client",),
    ("agents", "protocols"),
    ("sandbox",),
    ("sim",),
    ("search",),
    ("analysis",),
    ("report",),
    ("study",),
    ("cli", "testing"),
    ("",),  # tpdisc/__init__.py: the public API, names imported from every layer on use
)
LEVEL = {part: level for level, parts in enumerate(LAYERS) for part in parts}


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (a package's __init__ when a name is taken from it)
    line: int

    def where(self) -> str:
        return f"{self.source}:{self.line}"


def part_of(module: str) -> str:
    """The top-level subpackage (or module) of ``tpdisc`` that ``module`` is in."""
    return module.split(".")[1] if "." in module else ""


def level_of(module: str) -> int:
    try:
        return LEVEL[part_of(module)]
    except KeyError:
        raise AssertionError(
            f"{module}: tpdisc.{part_of(module)} is in no layer; add it to LAYERS in {__file__}"
        ) from None


def package_modules(root: Path = PACKAGE) -> dict[str, tuple[str, bool]]:
    """Every module of the package: name -> (source, whether it is a package)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        modules[name] = (path.read_text(encoding="utf-8"), is_package)
    return modules


def imports(modules: Mapping[str, tuple[str, bool]]) -> list[Import]:
    """Every import between the given modules, wherever in a module it is written."""
    found = []
    for name, (source, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(source, name)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                # ``from package import submodule`` imports the submodule.
                targets = [
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                while target not in modules and "." in target:  # ``import a.b`` of a name
                    target = target.rpartition(".")[0]
                if target in modules and target != name:
                    found.append(Import(name, target, node.lineno))
    return found


def upward(found: Iterable[Import]) -> list[str]:
    return [
        f"{i.where()} imports {i.target}: layer {part_of(i.target) or 'tpdisc'} "
        f"({level_of(i.target)}) is above {part_of(i.source) or 'tpdisc'} ({level_of(i.source)})"
        for i in found
        if level_of(i.target) > level_of(i.source)
    ]


def cycles(edges: Iterable[tuple[str, str, str]]) -> list[str]:
    """One cycle per group of nodes that reach each other, each edge with where it is."""
    graph = nx.DiGraph()
    for a, b, where in edges:
        graph.add_edge(a, b, where=where)
    found = []
    for group in nx.strongly_connected_components(graph):
        if len(group) > 1:
            # Rebuilt in sorted order: the same cycle reported on every run.
            sub = nx.DiGraph(sorted((a, b) for a, b in graph.edges if a in group and b in group))
            cycle = nx.find_cycle(sub, source=min(group))
            steps = [f"{a} ({graph.edges[a, b]['where']})" for a, b in cycle]
            found.append(" -> ".join([*steps, cycle[0][0]]))
    return sorted(found)


def module_cycles(found: Iterable[Import]) -> list[str]:
    return cycles((i.source, i.target, f"line {i.line}") for i in found)


def package_cycles(found: Iterable[Import]) -> list[str]:
    """Cycles between top-level subpackages (agents and protocols, on one level)."""
    return cycles(
        (part_of(i.source), part_of(i.target), i.where())
        for i in found
        if part_of(i.source) != part_of(i.target)
    )


def test_no_module_imports_from_a_higher_layer() -> None:
    problems = upward(imports(package_modules()))
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def test_no_import_cycle_between_modules() -> None:
    problems = module_cycles(imports(package_modules()))
    assert not problems, "import cycles:\n" + "\n".join(problems)


def test_no_import_cycle_between_subpackages() -> None:
    problems = package_cycles(imports(package_modules()))
    assert not problems, "subpackages importing each other:\n" + "\n".join(problems)


def test_only_tests_and_benchmarks_use_the_stand_ins() -> None:
    problems = [
        f"{i.where()} imports {i.target}"
        for i in imports(package_modules())
        if part_of(i.target) == "testing" and part_of(i.source) != "testing"
    ]
    assert not problems, "the package imports its stand-ins:\n" + "\n".join(problems)


def test_no_module_of_the_package_or_benchmark_imports_from_tests() -> None:
    problems = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "benchmarks").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if any(name == "tests" or name.startswith("tests.") for name in names):
                problems.append(f"{path}:{node.lineno}")
    assert not problems, "imports from tests/:\n" + "\n".join(problems)


def test_every_subpackage_has_a_layer() -> None:
    for name in package_modules():
        level_of(name)


# The checks themselves, on a made-up package.
FAKE = {
    "tpdisc": ("", True),
    "tpdisc.errors": ("", False),
    "tpdisc.domain": ("", True),
    "tpdisc.domain.graph": ("from tpdisc.errors import E\n", False),
    "tpdisc.agents": ("", True),
    "tpdisc.agents.a": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tpdisc.protocols import p\n",
        False,
    ),
    "tpdisc.protocols": ("", True),
    "tpdisc.protocols.p": ("def f():\n    from ..agents.a import x\n", False),
    "tpdisc.sim": ("from tpdisc.sim import game\n", True),
    "tpdisc.sim.game": ("import tpdisc.domain.graph\nimport tpdisc.sim.log\n", False),
    "tpdisc.sim.log": ("def f():\n    from tpdisc.sim.game import run\n", False),
}


def test_the_checks_see_lazy_relative_and_type_checking_imports() -> None:
    found = imports(FAKE)
    assert Import("tpdisc.agents.a", "tpdisc.protocols.p", 3) in found
    assert Import("tpdisc.protocols.p", "tpdisc.agents.a", 2) in found
    assert Import("tpdisc.sim", "tpdisc.sim.game", 1) in found
    assert upward(found) == []
    assert module_cycles(found) == [
        "tpdisc.agents.a (line 3) -> tpdisc.protocols.p (line 2) -> tpdisc.agents.a",
        "tpdisc.sim.game (line 2) -> tpdisc.sim.log (line 2) -> tpdisc.sim.game",
    ]
    assert package_cycles(found) == [
        "agents (tpdisc.agents.a:3) -> protocols (tpdisc.protocols.p:2) -> agents"
    ]


def test_an_upward_import_is_named_with_its_line() -> None:
    fake = {**FAKE, "tpdisc.domain.graph": ("\ndef f():\n    import tpdisc.sim.game\n", False)}
    assert upward(imports(fake)) == [
        "tpdisc.domain.graph:3 imports tpdisc.sim.game: layer sim (6) is above domain (1)"
    ]
