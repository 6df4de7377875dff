"""Text from outside is shown as plain text: control characters visible, no mathtext."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tpdisc
from tpdisc.plaintext import one_line, plain_figures, visible


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[2J\x1b]0;pwned\x07", "\\x1b[2J\\x1b]0;pwned\\x07"),  # clear screen, retitle
        ("ok\rFAKE", "ok\\x0dFAKE"),  # a carriage return would overwrite the line
        ("\u202egnp.exe", "\\u202egnp.exe"),  # a right-to-left override
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("\x9b31m", "\\x9b31m"),  # the C1 form of an escape sequence
        ("lone \ud800", "lone \\ud800"),  # no terminal could even be sent it
        ("café ✓ 名前\n\tindented", "café ✓ 名前\n\tindented"),  # text stays text
    ],
)
def test_control_characters_are_made_visible(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert visible(shown) == shown  # once is enough: showing again changes nothing


def test_one_line_makes_newlines_visible_and_bounds_the_length() -> None:
    assert one_line("error\nall good") == "error\\x0aall good"
    assert one_line("x" * 1000, 10) == "x" * 9 + "…"


def test_every_module_that_draws_turns_mathtext_off() -> None:
    # A text reads the setting when it is made: a module drawing without it would read a
    # protocol's name "$\\notacommand$" as mathtext and crash.
    package = Path(tpdisc.__file__).parent
    drawing = []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        if "matplotlib.pyplot" in imports:
            drawing.append(path.relative_to(package))
            calls = {
                node.func.id
                for node in ast.walk(tree)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            }
            assert "plain_figures" in calls, f"{path}: draws without plain_figures()"
    assert len(drawing) >= 8


def test_figures_draw_names_as_they_are(tmp_path: Path) -> None:
    plain_figures()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_title("$\\notacommand{x}$")
    ax.plot([0, 1], label="$\\frac")
    ax.legend()
    fig.savefig(tmp_path / "f.png")
    plt.close(fig)
    assert (tmp_path / "f.png").read_bytes().startswith(b"\x89PNG")
