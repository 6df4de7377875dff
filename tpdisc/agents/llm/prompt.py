"""What an LLM agent is told each step, and how its answer is read.

The prompt is a pure function of what the agent knows (the step, its inventory in order of
discovery, its own attempts, its borrowed elements and the records it received), so a rerun
of a seeded game sends byte-identical prompts and the response cache can answer them.

Answers are read tolerantly: ``<answer>Fire + "water"</answer>`` is fire and water. Tags in
any case, quotes, brackets, Markdown emphasis, extra spaces, either order, a predicted result
after ``=`` or ``->``, a final tag left unclosed by truncation, and ``and``/``,``/``&``/
``with`` instead of ``+`` (only where the split leaves two element names, so that
"mac and cheese" stays one element) are all accepted. Names match ignoring case and any
character that is not a letter or digit; no two Little Alchemy 2 names collide that way.
When several ``<answer>`` tags appear (a model quoting the format while reasoning), the last
usable one wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tpdisc.errors import TpdiscError

NamedMemory = tuple[str, str, str | None]  # (element, element, result or None on failure)

SYSTEM_PROMPT = """\
You are one player in a team playing an alchemy game: elements are combined two at a time \
to create new elements.

Rules:
- Each step you try exactly one combination of two elements.
- The order of the two elements does not matter, and an element may be combined with itself.
- Combinations are deterministic: a pair always gives the same outcome. Many pairs give \
nothing; some give a new element.
- You can always use the elements in your inventory. An element you create yourself joins \
your inventory for good.
- Teammates sometimes show you records of their own attempts. Every element named in those \
records is borrowed: you may use it in this step only, and it is gone the step after unless \
you create it yourself.

Goal: the team wants to discover as many different elements as possible. Prefer \
combinations likely to give an element you do not have yet, and avoid pairs whose outcome \
you already know.

How to answer: reason briefly about two to five candidate pairs and what each might \
produce, then give your choice as <answer>element1 + element2</answer>, writing the \
element names as they appear in your lists."""

USER_QUESTION = "Which two elements do you combine this step?"


@dataclass(frozen=True)
class PromptView:
    """Everything the agent knows at one step, as element names."""

    step: int  # 0-based
    n_steps: int
    inventory: Sequence[str]  # in order of discovery
    borrowed: Sequence[str]  # social inventory not already owned, usable this step only
    own_memories: Sequence[NamedMemory]  # oldest first
    received: Sequence[NamedMemory]  # the records shown to the agent since its last attempt

    @property
    def usable(self) -> list[str]:
        return [*self.inventory, *self.borrowed]


def _record(memory: NamedMemory) -> str:
    a, b, result = memory
    return f"{a} + {b} -> {result if result is not None else 'nothing'}"


def _listing(items: Iterable[str], empty: str) -> str:
    text = ", ".join(items)
    return text or empty


def user_prompt(view: PromptView) -> str:
    lines = [
        f"Step {view.step + 1} of {view.n_steps}.",
        "",
        "Your inventory (in the order you obtained the elements): "
        + _listing(view.inventory, "empty"),
        "Borrowed elements (usable this step only): " + _listing(view.borrowed, "none"),
        "",
        "Your past attempts (oldest first):",
    ]
    if view.own_memories:
        lines += [f"{i}. {_record(m)}" for i, m in enumerate(view.own_memories, 1)]
    else:
        lines.append("none yet")
    lines += ["", "Records your teammates showed you since your last attempt:"]
    lines += [f"- {_record(m)}" for m in view.received] if view.received else ["none"]
    lines += ["", USER_QUESTION]
    return "\n".join(lines)


def messages_for(view: PromptView) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": user_prompt(view)},
    ]


def reask_message(reason: str, usable: Sequence[str]) -> dict[str, str]:
    """The follow-up after an unusable answer: why, and what the agent may use."""
    return {
        "role": "user",
        "content": (
            f"That answer cannot be used: {reason}. The elements you can use now are: "
            f"{', '.join(usable)}. Choose again and end with "
            "<answer>element1 + element2</answer>."
        ),
    }


class UnusableAnswer(TpdiscError):
    """The answer names no usable pair; the message is the reason sent back to the model."""


_OPEN = re.compile(r"<\s*answer\b[^>]*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
# A predicted result after the pair ("fire + water = steam") is not part of the choice.
_RESULT = re.compile(
    r"\s*(?:=|->|→|=>|⇒|\bgives\b|\bmakes\b|\byields\b).*\Z", re.IGNORECASE | re.DOTALL
)
_FALLBACK_SEPARATORS = re.compile(r"\s*(?:,|&|\band\b|\bwith\b|\bplus\b)\s*", re.IGNORECASE)
_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "`": "'"})


def loose_key(name: str) -> str:
    """A name reduced to lowercase letters and digits: how answers are matched to elements."""
    return re.sub(r"[^0-9a-z]", "", name.translate(_QUOTES).casefold())


def _answers(text: str) -> list[str]:
    """Contents of every ``<answer>`` tag in order; an unclosed last one runs to the end."""
    found: list[str] = []
    position = 0
    while (start := _OPEN.search(text, position)) is not None:
        end = _CLOSE.search(text, start.end())
        stop = end.start() if end is not None else len(text)
        following = _OPEN.search(text, start.end())
        if following is not None and following.start() < stop:
            stop = following.start()
        found.append(text[start.end() : stop])
        position = stop
    return found


def _split(body: str, usable: dict[str, str]) -> tuple[str, str]:
    body = _RESULT.sub("", body.translate(_QUOTES)).strip()
    if not body:
        raise UnusableAnswer("the <answer> tag is empty")
    parts = body.split("+")
    if len(parts) == 2:
        return _resolve(parts[0], usable), _resolve(parts[1], usable)
    if len(parts) > 2:
        raise UnusableAnswer(f"{body!r} names more than two elements; name exactly two")
    # No "+": try every other separator position; keep a split that names two elements.
    for sep in _FALLBACK_SEPARATORS.finditer(body):
        left, right = loose_key(body[: sep.start()]), loose_key(body[sep.end() :])
        if left in usable and right in usable:
            return usable[left], usable[right]
    if loose_key(body) in usable:
        raise UnusableAnswer(
            f"{body!r} names one element; name two, separated by '+' (an element may be "
            "combined with itself)"
        )
    raise UnusableAnswer(f"{body!r} is not two element names separated by '+'")


def _resolve(part: str, usable: dict[str, str]) -> str:
    key = loose_key(part)
    if not key:
        raise UnusableAnswer("one side of '+' is empty")
    if key not in usable:
        shown = part.strip().strip("\"'*[]()<>{}.").strip()
        raise UnusableAnswer(f"{shown!r} is not one of the elements you can use now")
    return usable[key]


def parse_answer(text: str, usable: Sequence[str]) -> tuple[str, str]:
    """The two usable element names chosen in ``text``, or :class:`UnusableAnswer` saying why."""
    names = {loose_key(n): n for n in usable}
    bodies = _answers(text)
    if not bodies:
        raise UnusableAnswer("no <answer>element1 + element2</answer> was given")
    reason: UnusableAnswer | None = None
    for body in reversed(bodies):
        try:
            return _split(body, names)
        except UnusableAnswer as err:
            reason = reason or err  # report the last answer's problem, which is the final one
    assert reason is not None
    raise reason
