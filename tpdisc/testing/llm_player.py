"""A scripted player for the local test server (:mod:`tpdisc.testing.chat_server`).

:class:`ScriptedPlayer` is a responder for :class:`~tpdisc.testing.chat_server.FakeChatServer`
that plays Collective Little Alchemy the way an LLM agent's endpoint would be asked to: it
reads the elements the agent may use from the prompt and answers with a pair of them. Every
choice is a function of the request's text (a hash), never of arrival order, so results do
not depend on how many requests are in flight. Chosen fractions of first answers name an
element the agent does not have, and of re-asks give no answer at all, to exercise the
re-ask and the fallback. Nothing here talks to the internet.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time

from tpdisc.testing.chat_server import ChatRequest, Reply

_INVENTORY = re.compile(r"^Your inventory \([^)]*\): (.*)$", re.MULTILINE)
_BORROWED = re.compile(r"^Borrowed elements \([^)]*\): (.*)$", re.MULTILINE)
_REASK_USABLE = re.compile(r"The elements you can use now are: (.*?)\. Choose again")


def usable_elements(request: ChatRequest) -> list[str]:
    """The elements an LLM agent's request says it may use now."""
    reask = _REASK_USABLE.findall(request.last_user_text)
    if reask:
        return str(reask[-1]).split(", ")
    text = request.text("user")
    inventory = _INVENTORY.search(text)
    borrowed = _BORROWED.search(text)
    if inventory is None or borrowed is None:
        raise ValueError("the request is not an LLM agent's prompt")
    names = inventory.group(1).split(", ")
    if borrowed.group(1) != "none":
        names += borrowed.group(1).split(", ")
    return names


class ScriptedPlayer:
    """Answers LLM agents' requests; see the module docstring.

    ``invalid`` is the fraction of first answers that name an element the agent does not
    have; ``invalid_reask`` the fraction of re-asks answered without any ``<answer>`` tag.
    ``delay`` (seconds) makes each answer slow, and ``max_in_flight`` records the most
    requests the player was answering at once.
    """

    BOGUS = "philosopher's stone"

    def __init__(
        self, invalid: float = 0.0, invalid_reask: float = 0.0, delay: float = 0.0
    ) -> None:
        self.invalid = invalid
        self.invalid_reask = invalid_reask
        self.delay = delay
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()

    @staticmethod
    def draw(request: ChatRequest, salt: str) -> float:
        """A number in [0, 1) fixed by the request's text."""
        digest = hashlib.sha256((salt + request.text()).encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def answer(self, request: ChatRequest) -> str:
        names = usable_elements(request)
        is_reask = len(request.messages) > 2
        if is_reask and self.draw(request, "reask") < self.invalid_reask:
            return "I cannot decide between these."
        if not is_reask and self.draw(request, "first") < self.invalid:
            return f"Let me try something bold.\n<answer>{self.BOGUS} + {names[0]}</answer>"
        first = names[int(self.draw(request, "a") * len(names))]
        second = names[int(self.draw(request, "b") * len(names))]
        return (
            f"{first} and {second} might make something new.\n"
            f"<answer>{first.title()} + '{second}'</answer>"
        )

    def __call__(self, request: ChatRequest) -> Reply:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.delay > 0:
                time.sleep(self.delay)
            return Reply.text(self.answer(request))
        finally:
            with self._lock:
                self._in_flight -= 1
