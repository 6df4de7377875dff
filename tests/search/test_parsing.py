"""Reading models' answers: tolerant of form, strict about the code."""

from __future__ import annotations

import textwrap

import pytest

from tests.search.answers import (
    DRAFT,
    FINAL,
    HELPERS,
    KEY_CHANGE,
    OTHER,
    QUOTES_A_FENCE,
    USAGE,
    USES_HELPERS,
)
from tpdisc.protocols.loader import load_protocol_class
from tpdisc.search.parsing import AnswerFormatError, ParsedAnswer, parse_answer, render_answer
from tpdisc.testing.fake_author import ProtocolAuthor

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


def test_the_fences_of_one_code_section_are_one_program() -> None:
    text = f"<code>```\nhelper = 1\n```\n```python\n{CODE}\n```</code>"
    assert parse_answer(text).code == f"helper = 1\n\n{CODE}"


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


# --- answers in the styles real models use ------------------------------------------------
# The tests check both which code is taken and that it loads (a helper dropped would be a
# NameError, a draft a different class).


def loads(code: str) -> type:
    return load_protocol_class(code, "answer.py")


def taken(text: str, expected: str) -> type:
    """The protocol class of the code taken from ``text``, which must be ``expected``."""
    code = parse_answer(text).code
    assert code == expected
    return loads(code)


@pytest.mark.parametrize(
    "text",
    [
        # the requested tags, a draft in the reasoning, the final in a fence after them
        "<reasoning>\nThe paired baseline wastes the bottleneck. A first sketch:\n"
        f"<code>\n{DRAFT}\n</code>\nThis sends a stale memory and crashes without "
        "memories; the final version below fixes both.\n</reasoning>\n"
        "<description>Ring neighbours pass on their latest successes.</description>\n"
        f"<logging>Counts the memories sent.</logging>\n\n```python\n{FINAL}\n```\n",
        # a <think> preamble, then the answer as a fence
        f"<think>\nMaybe:\n<code>{DRAFT}</code>\nNo: index 0 is stale.\n</think>\n\n"
        f"Here is the protocol.\n\n```python\n{FINAL}\n```",
        # an untagged preamble: a tagged draft, then "Final version"
        f"Reasoning: start simple.\n\n<code>\n{DRAFT}\n</code>\n\nWait, that always sends "
        f"memory 0. Final version:\n\n```python\n{FINAL}\n```\n",
        # a fence opened in the reasoning and never closed there ends with it
        f"<think>\nSomething like ```python\nshare = 1\n</think>\n```python\n{FINAL}\n```",
        # a draft and its correction, the line before it naming the draft
        f"```python\n{DRAFT}\n```\nHere is the corrected code (the previous version "
        f"crashed):\n```python\n{FINAL}\n```",
        # a draft under another name, then the final version
        f"```python\n{DRAFT.replace('TransmissionProtocol', 'RingSketch')}\n```\n\n"
        f"**Final version:**\n\n```python\n{FINAL}\n```",
        # draft and final both tagged, in a preamble and in the answer
        f"<thinking>\n```python\n{DRAFT}\n```\n</thinking>\n<code>\n{FINAL}\n</code>",
    ],
)
def test_the_final_class_is_taken_not_the_draft_before_it(text: str) -> None:
    assert taken(text, FINAL)(3, 5).sent == 0  # FINAL's own attribute, not the draft's


def test_a_draft_in_the_reasoning_is_taken_when_there_is_nothing_else() -> None:
    text = f"<reasoning>\n<code>\n{FINAL}\n</code>\n</reasoning>\n<description>d</description>"
    assert parse_answer(text).code == FINAL


@pytest.mark.parametrize(
    "text",
    [
        f"<code>\n{FINAL}\n</code>\n\nAlternatively, a mirror-image design:\n\n"
        f"```python\n{OTHER}\n```",
        f"Two options.\n\n```python\n{FINAL.replace('TransmissionProtocol', 'RingShare')}\n```"
        f"\n\n```python\n{OTHER.replace('TransmissionProtocol', 'BackShare')}\n```",
        f"```python\n{FINAL}\n```\n\nFor reference, the parent protocol:\n\n"
        f"```python\n{OTHER}\n```",
    ],
)
def test_several_protocols_without_a_clear_choice_are_refused(text: str) -> None:
    with pytest.raises(AnswerFormatError, match="not clear which one is meant") as info:
        parse_answer(text)
    assert "line " in str(info.value) and "alone in the <code> section" in str(info.value)


def test_the_same_class_repeated_is_no_ambiguity() -> None:
    again = f"The whole code again, for reference:\n```python\n{FINAL}\n```"
    text = f"<code>\n{FINAL}\n</code>\n{again}"
    assert parse_answer(text).code == FINAL


@pytest.mark.parametrize(
    "text",
    [
        f"```python\n{FINAL}\n```\n\nUsage:\n\n```python\n{USAGE}\n```",
        f"```python\n{FINAL}\n```\n\nThe key change:\n\n```python\n{KEY_CHANGE}\n```",
        f"```python\n{FINAL}\n```\n\n```python\n{textwrap.dedent(KEY_CHANGE)}\n```",
        f"## Code\n```py\n{FINAL}\n```\n## Example\n```\n{USAGE}\n```\n",
    ],
)
def test_without_tags_the_fence_with_the_class_wins_over_snippets(text: str) -> None:
    assert parse_answer(text).code == FINAL


@pytest.mark.parametrize("snippet", [KEY_CHANGE, USAGE])
def test_a_snippet_alone_is_refused_as_part_of_a_protocol(snippet: str) -> None:
    with pytest.raises(AnswerFormatError, match="only part of a protocol"):
        parse_answer(f"Change this:\n```python\n{snippet}\n```")


def test_an_inline_code_tag_in_prose_does_not_replace_the_code() -> None:
    text = (
        f"<reasoning>r</reasoning>\n<code>\n{FINAL}\n</code>\n"
        "The heart of it is <code>share_memories</code>, which keeps the last three "
        "<code>wins</code> of <code>agent_states[teacher]</code>."
    )
    assert parse_answer(text).code == FINAL


def test_helpers_in_their_own_fence_inside_code_are_kept_in_order() -> None:
    text = (
        "<code>\nFirst the helpers:\n```python\n"
        f"{HELPERS}\n```\nThen the protocol:\n```python\n{USES_HELPERS}\n```\n"
        f"Try it:\n```python\n{USAGE}\n```\n</code>"
    )
    protocol = taken(text, f"{HELPERS}\n\n{USES_HELPERS}")(3, 5)
    states = {i: {"inventory": (), "memories": (("a", "b", "c"),)} for i in range(3)}
    assert protocol.share_memories(0, states) == {0: [(1, 0)], 1: [(2, 0)], 2: [(0, 0)]}


@pytest.mark.parametrize(
    "text",
    [
        f"```python\n{QUOTES_A_FENCE}\n```\n",
        f"<code>\n```python\n{QUOTES_A_FENCE}\n```\n</code>",
        f"<code>\n{QUOTES_A_FENCE}\n</code>",
        f"Here it is:\n````python\n{QUOTES_A_FENCE}\n````\nDone.",
    ],
)
def test_a_fence_in_a_docstring_does_not_close_the_code(text: str) -> None:
    assert taken(text, QUOTES_A_FENCE).share_memories.__doc__.strip().endswith("```")


@pytest.mark.parametrize(
    "text",
    [
        "<code>\n<<<<<<< SEARCH\n        wins = [k for k, m in enumerate(memories)]\n=======\n"
        "        wins = [k for k, m in enumerate(memories) if m[2]]\n>>>>>>> REPLACE\n</code>",
        "Apply this patch:\n```diff\n--- a/protocol.py\n+++ b/protocol.py\n@@ -12,3 +12,3 @@\n"
        "-            wins = memories[-3:]\n+            wins = memories[-5:]\n```",
        "<code>\n--- protocol.py\n+++ protocol.py\n@@ -1,4 +1,4 @@\n class TransmissionProtocol:\n"
        "-    LIMIT = 3\n+    LIMIT = 5\n</code>",
        "<code>\n*** Begin Patch\n*** Update File: protocol.py\n@@\n-    LIMIT = 3\n"
        "+    LIMIT = 5\n*** End Patch\n</code>",
    ],
)
def test_edits_instead_of_a_class_are_refused_asking_for_the_whole_class(text: str) -> None:
    with pytest.raises(AnswerFormatError, match=r"edits .* instead of a program") as info:
        parse_answer(text)
    assert "complete Python source of the TransmissionProtocol class" in str(info.value)


def test_edits_beside_the_whole_class_leave_the_class() -> None:
    diff = "```diff\n-            wins = memories[-3:]\n+            wins = memories[-5:]\n```"
    assert parse_answer(f"{diff}\n\nThe whole class:\n<code>\n{FINAL}\n</code>").code == FINAL


def test_a_broken_protocol_is_still_taken_for_validation_to_report() -> None:
    broken = FINAL.replace("def share_memories(self, i_step, agent_states):", "def share_memories(")
    text = f"<reasoning>\n```python\n{DRAFT}\n```\n</reasoning>\n<code>\n{broken}\n</code>"
    assert parse_answer(text).code == broken


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        (f"<code>\n{FINAL}\n</code>", True),
        (f"<code>\n```python\n{FINAL}\n```\n", True),  # cut after the fence
        (f"<code>\n{FINAL[:200]}", False),
        (f"<code>\n```python\n{FINAL[:200]}", False),
        (f"```python\n{FINAL[:200]}", False),
    ],
)
def test_whether_the_code_was_closed_is_known(text: str, complete: bool) -> None:
    assert parse_answer(text).complete is complete


def test_answers_in_the_requested_format_read_as_before() -> None:
    author = ProtocolAuthor(seed=3)
    for n in range(40):
        answer = author.good_answer(n, repair=n % 2 == 1)
        code = answer.split("```python\n")[1].split("```")[0]
        assert parse_answer(answer).code == code.strip()
    for kind in ("syntax", "crash", "invalid-exchange"):
        assert "class TransmissionProtocol" in parse_answer(author.broken_answer(kind)).code
