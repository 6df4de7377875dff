"""The ways out of the allowed modules, refused with the line named; real code passes."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from tests.helpers import APPENDIX
from tpdisc.sandbox import precheck
from tpdisc.sandbox.escapes import escape_problems, module_holders, reached_module
from tpdisc.search import blocks
from tpdisc.testing.fake_author import _CRASH, _INVALID_EXCHANGE

PROTOCOL = (
    "\n\nclass TransmissionProtocol:\n"
    "    def share_memories(self, i_step, agent_states):\n"
    "        return {}\n"
)


def problems(source: str) -> list[str]:
    return [p for _, p in sorted(escape_problems(list(ast.walk(ast.parse(source)))))]


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "import random\nx = random._os.sys.modules['os']",
            "line 2: random._os: private attributes of modules are not allowed",
        ),
        (
            "import random as r\nm = r\nx = m._inst",
            "line 3: m._inst: private attributes of modules are not allowed",
        ),
        (
            "import random\nclass A:\n    def f(self):\n        self.m = random\n"
            "        return self.m._os",
            "line 5: self.m._os: private attributes of modules are not allowed",
        ),
        (
            "import random\nmods = [random]\nx = mods[0]._os",
            "line 3: mods[...]._os: private attributes of modules are not allowed",
        ),
        (
            "import random\nx = getattr(random, '_os')",
            "line 2: random._os: private attributes of modules are not allowed",
        ),
        (
            "import math\nx = math.__loader__",
            "line 2: math.__loader__: dunder attributes of modules are not allowed",
        ),
        (
            "import dataclasses\nx = dataclasses.sys.modules",
            "line 2: dataclasses.sys is the module sys, which is not allowed",
        ),
        (
            "import dataclasses as d\nx = d.inspect",
            "line 2: d.inspect is the module inspect, which is not allowed",
        ),
        ("from typing import sys", "line 1: typing.sys is the module sys, which is not allowed"),
        (
            "import numpy as np\nx = np.ctypeslib.ctypes",
            "line 2: np.ctypeslib is the module numpy.ctypeslib, which is not allowed",
        ),
        (
            "n = '_os'\nx = getattr(object, n)",
            "line 2: getattr needs a literal attribute name (a computed name cannot be checked)",
        ),
        (
            "class A:\n    pass\nsetattr(A, input, 1)",
            "line 3: setattr needs a literal attribute name (a computed name cannot be checked)",
        ),
        ("g = getattr", "line 1: getattr may only be called directly"),
        (
            "x = vars(object)",
            "line 1: vars() of anything but self is not allowed (it reads attributes by "
            "computed name)",
        ),
        (
            "x = type.__dict__",
            "line 1: .__dict__ of anything but self is not allowed (it reads attributes by "
            "computed name)",
        ),
        (
            "import operator\nf = operator.attrgetter(input)",
            "line 2: attrgetter needs literal public attribute names",
        ),
        (
            "import random\nmatch random:\n    case object(_os=o):\n        pass",
            "line 3: a class pattern may not read the private or dunder attribute _os",
        ),
        (
            "import random\nx = random.SystemRandom()",
            "line 2: SystemRandom is not allowed (it reads OS entropy; use random or "
            "np.random, which are seeded for each simulation)",
        ),
        (
            "from random import SystemRandom",
            "line 1: SystemRandom is not allowed (it reads OS entropy; use random or "
            "np.random, which are seeded for each simulation)",
        ),
    ],
)
def test_ways_out_are_refused_with_their_line(source: str, problem: str) -> None:
    assert problems(source) == [problem]


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\nx = np.select, np.array, np.random.default_rng(3), np.__version__",
        "import random\nr = random.Random(7)\nx = r.random(), random.seed(5)",
        # Unseeded generators are common in written protocols; the worker seeds them from
        # the simulation's seed (test_hostile_entropy.py), so they are reproducible.
        "import numpy as np\nimport random\nx = np.random.default_rng(), random.Random(None)",
        "import collections\nx = collections.abc.Mapping",
        "from sklearn.neighbors import KDTree\nx = getattr(KDTree, 'query')",
        "class A:\n    def __init__(self):\n        self._x = 1\n        self.__dict__.update({})\n"
        "    def f(self):\n        return self._x, vars(self), hasattr(self, input)",
    ],
)
def test_ordinary_code_is_not_refused(source: str) -> None:
    assert problems(source) == []


def test_assignments_propagate_module_paths() -> None:
    tree = ast.parse("import numpy as np\nr = np.random\nclass A:\n    g = r\n")
    modules = module_holders(list(ast.walk(tree)))
    assert modules.names["r"] == {("numpy", ("random",))}
    assert modules.names["g"] == {("numpy", ("random",))}


def test_modules_are_resolved_on_the_host() -> None:
    assert reached_module("dataclasses", ("sys",)) == "sys"
    assert reached_module("numpy", ("random",)) is None
    assert reached_module("numpy", ("no_such_thing", "x")) is None
    assert reached_module("os", ("path",)) is None  # the import is what is refused


def test_the_reported_escapes_of_issue_13_are_refused_by_the_precheck() -> None:
    source = (
        "import random\n"
        "x = random._os.sys.modules\n"
        "y = ().__class__.__base__.__subclasses__()\n"
        "name = 'system'\n"
        "z = getattr(x, name)\n"
    )
    assert precheck(source + PROTOCOL) == [
        "line 2: random._os: private attributes of modules are not allowed",
        "line 3: .__base__ is not allowed (no introspection of internals)",
        "line 3: .__subclasses__ is not allowed (no introspection of internals)",
        "line 5: getattr needs a literal attribute name (a computed name cannot be checked)",
    ]


def test_what_the_offline_proposer_writes_passes() -> None:
    rng = np.random.default_rng(13)
    for _ in range(200):
        assert precheck(blocks.render(blocks.random_genome(rng))) == []


def test_the_test_protocols_pass() -> None:
    for source in (APPENDIX, _CRASH, _INVALID_EXCHANGE):
        assert precheck(source) == []
