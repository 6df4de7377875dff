"""One-line errors, and text from outside shown with its control characters visible."""

from __future__ import annotations

import pytest

from tpdisc.errors import did_you_mean, excerpt, unknown, visible


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


def test_a_line_stays_one_line() -> None:
    assert visible("error\nall good\tok", lines=False) == "error\\x0aall good\\x09ok"


def test_an_excerpt_is_bounded() -> None:
    assert len(excerpt(list(range(10**5)), 30)) <= 30


def test_did_you_mean_names_the_closest_choice_or_nothing() -> None:
    assert did_you_mean("dynamc", ["asocial", "paired", "dynamic"]) == " (did you mean 'dynamic'?)"
    assert did_you_mean("zzz", ["asocial", "paired"]) == ""


def test_unknown_names_the_closest_then_every_choice() -> None:
    assert unknown("variant", "ful", ["full", "3-item"]) == (
        "unknown variant 'ful' (did you mean 'full'?); choose from full, 3-item"
    )
