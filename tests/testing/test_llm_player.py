"""The scripted player that stands in for a chat model in LLM agent tests."""

from __future__ import annotations

import pytest

from tpdisc.agents.llm.prompt import (
    PromptView,
    UnusableAnswer,
    messages_for,
    parse_answer,
    reask_message,
)
from tpdisc.testing.chat_server import ChatRequest
from tpdisc.testing.llm_player import ScriptedPlayer, usable_elements


def request(messages: list[dict[str, str]]) -> ChatRequest:
    return ChatRequest("/v1/chat/completions", {"model": "m", "messages": messages}, {}, 0)


def view(step: int, borrowed: list[str]) -> PromptView:
    inventory = ["air", "earth", "fire", "water", "mac and cheese"]
    return PromptView(step, 50, inventory, borrowed, [], [])


def test_reads_the_usable_elements_from_prompts_and_reasks() -> None:
    first = messages_for(view(0, ["mud", "double rainbow!"]))
    names = ["air", "earth", "fire", "water", "mac and cheese", "mud", "double rainbow!"]
    assert usable_elements(request(first)) == names
    assert usable_elements(request(messages_for(view(0, [])))) == names[:5]
    reask = [*first, {"role": "assistant", "content": "?"}, reask_message("why", ["air", "mud"])]
    assert usable_elements(request(reask)) == ["air", "mud"]
    with pytest.raises(ValueError, match="not an LLM agent's prompt"):
        usable_elements(request([{"role": "user", "content": "hello"}]))


def test_answers_are_usable_and_fixed_by_the_prompt() -> None:
    player = ScriptedPlayer()
    for step in range(40):
        messages = messages_for(view(step, ["mud"]))
        text = player.answer(request(messages))
        assert text == player.answer(request(messages))
        a, b = parse_answer(text, view(step, ["mud"]).usable)
        assert {a, b} <= set(view(step, ["mud"]).usable)


def test_invalid_fractions() -> None:
    player = ScriptedPlayer(invalid=0.5, invalid_reask=1.0)
    bad = 0
    for step in range(200):
        messages = messages_for(view(step, []))
        try:
            parse_answer(player.answer(request(messages)), view(step, []).usable)
        except UnusableAnswer as err:
            assert ScriptedPlayer.BOGUS in str(err)
            bad += 1
        reask = [*messages, {"role": "assistant", "content": "?"}, reask_message("x", ["air"])]
        with pytest.raises(UnusableAnswer, match="no <answer>"):
            parse_answer(player.answer(request(reask)), ["air"])
    assert 100 - 6 * 7.1 < bad < 100 + 6 * 7.1  # binomial(200, 0.5): sd 7.1
