"""The import allow-list shared by the pre-check and the worker."""

from __future__ import annotations

import pytest

from tpdisc.sandbox.allowlist import SPEC_MODULES, disallowed_import, import_message


@pytest.mark.parametrize(
    ("name", "fromlist"),
    [(m, ()) for m in SPEC_MODULES]
    + [
        ("numpy.linalg", ()),
        ("collections.abc", ()),
        ("sklearn.neighbors._kd_tree", ()),
        ("sklearn", ("neighbors", "metrics")),
        ("typing", ("Dict",)),
        ("__future__", ("annotations",)),
    ],
)
def test_allowed(name: str, fromlist: tuple[str, ...]) -> None:
    assert disallowed_import(name, fromlist) is None


@pytest.mark.parametrize(
    ("name", "fromlist", "refused"),
    [
        ("os", (), "os"),
        ("os.path", (), "os.path"),
        ("sklearn", (), "sklearn"),
        ("sklearn", ("neighbors", "svm"), "sklearn.svm"),
        ("sklearn.svm", (), "sklearn.svm"),
        ("numpyx", (), "numpyx"),
        ("importlib", (), "importlib"),
    ],
)
def test_refused(name: str, fromlist: tuple[str, ...], refused: str) -> None:
    assert disallowed_import(name, fromlist) == refused
    assert import_message(refused) == f"{refused} is not allowed"


@pytest.mark.parametrize(
    ("name", "fromlist", "refused"),
    [
        ("random", ["_os"], "random._os"),
        ("random", ["random", "_inst"], "random._inst"),
        ("numpy.ctypeslib", [], "numpy.ctypeslib"),
        ("numpy", ["ctypeslib"], "numpy.ctypeslib"),
        ("numpy.testing.overrides", [], "numpy.testing"),
        ("numpy", ["random", "linalg"], None),
        ("__future__", ["annotations"], None),
    ],
)
def test_private_names_and_ways_out_of_numpy_are_refused(
    name: str, fromlist: list[str], refused: str | None
) -> None:
    assert disallowed_import(name, fromlist) == refused
