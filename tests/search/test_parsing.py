"""Reading models' answers: tolerant of form, strict about the code."""

from __future__ import annotations

import pytest

from tpdisc.search.parsing import AnswerFormatError, ParsedAnswer, parse_answer, render_answer

CODE = (
    "class TransmissionProtocol:\n"
    "    def share_memories(self, i_step, agent_states):\n"
    "        return {}"
)


def test_clean_answer_round_trips() -> None:
    answer = ParsedAnswer(code=CODE, description="d", logging="l", reasoning="r")
    assert parse_answer(render_answer(answer)) == answer


def test_fences_case_attributes_and_chatter() -> None:
    text = (
        "Sure! Here you go.\n<Reasoning>why</Reasoning>\n<DESCRIPTION >what</DESCRIPTION>\n"
        f'<logging>logs</logging>\n<code lang="python">\n```python\n{CODE}\n```\n</ code>\nBye.'
    )
    parsed = parse_answer(text)
    assert parsed.code == CODE
    assert (parsed.description, parsed.logging, parsed.reasoning) == ("what", "logs", "why")


def test_truncated_code_section() -> None:
    parsed = parse_answer(f"<description>x</description><code>\n```python\n{CODE}\n")
    assert parsed.code == CODE


def test_tag_quoted_in_prose_does_not_swallow_text() -> None:
    text = f"<reasoning>I put the class in the <code> section.</reasoning><code>{CODE}</code>"
    assert parse_answer(text).code == CODE


def test_fenced_block_without_code_tag() -> None:
    text = f"<description>x</description>\n```python\nimport math\n```\n```python\n{CODE}\n```"
    assert parse_answer(text).code == CODE


def test_several_fences_inside_code_prefer_the_class() -> None:
    text = f"<code>```\nhelper = 1\n```\n```python\n{CODE}\n```</code>"
    assert parse_answer(text).code == CODE


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "<reasoning>r</reasoning><description>d</description>",
        "```python\nprint('no protocol here')\n```",
        "<code>  </code>",
    ],
)
def test_answers_without_code_are_rejected(text: str) -> None:
    with pytest.raises(AnswerFormatError, match=r"code|empty"):
        parse_answer(text)


def test_missing_optional_sections_are_empty() -> None:
    parsed = parse_answer(f"<code>{CODE}</code>")
    assert (parsed.description, parsed.logging, parsed.reasoning) == ("", "", "")
