"""The LLM agent's prompt (content, determinism) and the tolerant answer parser."""

from __future__ import annotations

import pytest

from tpdisc.agents.llm.prompt import (
    SYSTEM_PROMPT,
    PromptView,
    UnusableAnswer,
    loose_key,
    messages_for,
    parse_answer,
    reask_message,
    user_prompt,
)

VIEW = PromptView(
    step=2,
    n_steps=20,
    inventory=["air", "earth", "fire", "water", "steam"],
    borrowed=["mud"],
    own_memories=[("fire", "water", "steam"), ("air", "air", None)],
    received=[("earth", "water", "mud")],
)
USABLE = ["air", "earth", "fire", "water", "mac and cheese", "double rainbow!", "dry ice"]


def test_rules_and_answer_format_are_stated() -> None:
    text = SYSTEM_PROMPT.lower()
    assert "order of the two elements does not matter" in text
    assert "combined with itself" in text
    assert "deterministic" in text
    assert "this step only" in text
    assert "as many different elements as possible" in text
    assert "two to five candidate pairs" in text
    assert "<answer>element1 + element2</answer>" in SYSTEM_PROMPT


def test_user_prompt_lists_the_state_in_order() -> None:
    text = user_prompt(VIEW)
    assert text.startswith("Step 3 of 20.")
    assert "obtained the elements): air, earth, fire, water, steam\n" in text
    assert "usable this step only): mud\n" in text
    assert "1. fire + water -> steam\n2. air + air -> nothing\n" in text
    assert "- earth + water -> mud\n" in text


def test_empty_state_is_said_plainly() -> None:
    view = PromptView(0, 5, ["air"], [], [], [])
    text = user_prompt(view)
    assert "usable this step only): none" in text
    assert "oldest first):\nnone yet" in text
    assert "last attempt:\nnone" in text


def test_prompt_is_a_pure_function_of_the_view() -> None:
    copy = PromptView(
        2, 20, list(VIEW.inventory), ["mud"], list(VIEW.own_memories), list(VIEW.received)
    )
    assert messages_for(copy) == messages_for(VIEW)
    assert [m["role"] for m in messages_for(VIEW)] == ["system", "user"]
    assert VIEW.usable == ["air", "earth", "fire", "water", "steam", "mud"]


def test_reask_gives_the_reason_and_the_usable_elements() -> None:
    message = reask_message("'gold' is not one of the elements you can use now", ["air", "fire"])
    assert message["role"] == "user"
    assert "'gold' is not one of" in message["content"]
    assert "use now are: air, fire." in message["content"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer>fire + water</answer>", ("fire", "water")),
        ("reasoning...\n<ANSWER> Water+FIRE </Answer>", ("water", "fire")),
        ("<answer>\"fire\" + 'water'</answer>", ("fire", "water")),
        ("<answer>“Fire” + ‘Water’</answer>", ("fire", "water")),
        ("<answer>**fire** + `water`</answer>", ("fire", "water")),
        ("<answer>[fire] + [water]</answer>", ("fire", "water")),
        ("<answer>fire + fire</answer>", ("fire", "fire")),
        ("<answer>fire + water = steam</answer>", ("fire", "water")),
        ("<answer>fire + water -> steam</answer>", ("fire", "water")),
        ("<answer>Mac  And Cheese + dry-ice</answer>", ("mac and cheese", "dry ice")),
        ("<answer>double rainbow + air</answer>", ("double rainbow!", "air")),
        ("<answer>fire and water</answer>", ("fire", "water")),
        ("<answer>mac and cheese and water</answer>", ("mac and cheese", "water")),
        ("<answer>fire, water.</answer>", ("fire", "water")),
        ("<answer>fire & water</answer>", ("fire", "water")),
        ("the end <answer>fire + water", ("fire", "water")),  # truncated closing tag
        (
            "Format: <answer>item1 + item2</answer>. So: <answer>air + earth</answer>",
            ("air", "earth"),
        ),
        ("<answer>air + earth</answer> ... <answer>gold + air</answer>", ("air", "earth")),
    ],
)
def test_tolerant_parsing(text: str, expected: tuple[str, str]) -> None:
    assert parse_answer(text, USABLE) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("fire + water", "no <answer>"),
        ("<answer></answer>", "empty"),
        ("<answer>gold + fire</answer>", "'gold' is not one of the elements you can use now"),
        ("<answer>fire</answer>", "names one element"),
        ("<answer>fire + water + air</answer>", "more than two"),
        ("<answer>fire + </answer>", "one side of '+' is empty"),
        ("<answer>something clever</answer>", "not two element names"),
    ],
)
def test_unusable_answers_say_why(text: str, reason: str) -> None:
    with pytest.raises(UnusableAnswer) as info:
        parse_answer(text, USABLE)
    assert reason in str(info.value)


def test_last_answer_problem_is_reported() -> None:
    with pytest.raises(UnusableAnswer, match="'gold'"):
        parse_answer("<answer>lead + air</answer> then <answer>gold + air</answer>", USABLE)


def test_loose_key_ignores_case_spacing_and_punctuation() -> None:
    assert loose_key(" Frankenstein’s  Monster ") == loose_key("frankenstein's monster")
    assert loose_key("Dry-Ice") == "dryice"
