"""Reading a model's answer: the four tagged sections, tolerant of how models write them.

Accepted: tags in any case, with spaces or attributes (``<Code lang="python">``), a final
``</code>`` lost to truncation, code wrapped in Markdown fences inside the tag, extra text
around the sections, and, when the code tag is missing altogether, a fenced Python block
defining ``share_memories``. An answer with no code at all is rejected with a message that
can be sent back to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tpdisc.errors import TpdiscError

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


class AnswerFormatError(TpdiscError):
    """The answer cannot be used: its message says what was missing."""


@dataclass(frozen=True)
class ParsedAnswer:
    code: str
    description: str = ""
    logging: str = ""
    reasoning: str = ""


def _sections(text: str, tag: str) -> list[str]:
    """Contents of every ``<tag>…</tag>``; an unclosed last one runs to the end."""
    opening = re.compile(rf"<\s*{tag}\b[^>]*>", re.IGNORECASE)
    closing = re.compile(rf"<\s*/\s*{tag}\s*>", re.IGNORECASE)
    found: list[str] = []
    position = 0
    while (start := opening.search(text, position)) is not None:
        end = closing.search(text, start.end())
        content = text[start.end() : end.start()] if end is not None else text[start.end() :]
        # A tag quoted earlier in the prose ("put it in <code>") opens too soon: the section
        # starts after the last opening tag before its closing one.
        inner = list(opening.finditer(content))
        found.append(content[inner[-1].end() :] if inner else content)
        if end is None:
            break
        position = end.end()
    return found


def _unfence(block: str) -> str:
    """The code inside Markdown fences, if there are any; the block itself otherwise."""
    fenced = [body for _, body in _FENCE.findall(block)]
    if not fenced:
        return block.strip().removesuffix("```").strip()
    with_class = [b for b in fenced if "class " in b]
    return (with_class or fenced)[-1].strip()


def _looks_like_protocol(code: str) -> bool:
    return "share_memories" in code


def extract_code(text: str) -> str:
    """The protocol source in ``text``; :class:`AnswerFormatError` if there is none."""
    candidates = [_unfence(s) for s in _sections(text, "code")]
    candidates = [c for c in candidates if c]
    if candidates:
        protocols = [c for c in candidates if _looks_like_protocol(c)]
        return (protocols or candidates)[-1]
    fenced = [
        body.strip()
        for language, body in _FENCE.findall(text)
        if language.lower() in ("", "python", "py", "python3") and _looks_like_protocol(body)
    ]
    if fenced:
        return fenced[-1]
    raise AnswerFormatError(
        "the answer has no <code> section: put the complete Python source of the "
        "TransmissionProtocol class between <code> and </code>"
    )


def _section(text: str, tag: str) -> str:
    found = [s.strip() for s in _sections(text, tag) if s.strip()]
    return found[0] if found else ""


def parse_answer(text: str) -> ParsedAnswer:
    """The code (required) and the description, logging notes and reasoning (optional)."""
    if not text or not text.strip():
        raise AnswerFormatError("the answer was empty; reply with the four tagged sections")
    return ParsedAnswer(
        code=extract_code(text),
        description=_section(text, "description"),
        logging=_section(text, "logging"),
        reasoning=_section(text, "reasoning"),
    )


def render_answer(answer: ParsedAnswer) -> str:
    """An answer in the requested format (what the offline proposer and tests produce)."""
    return (
        f"<reasoning>\n{answer.reasoning}\n</reasoning>\n"
        f"<description>\n{answer.description}\n</description>\n"
        f"<logging>\n{answer.logging}\n</logging>\n"
        f"<code>\n{answer.code}\n</code>\n"
    )
