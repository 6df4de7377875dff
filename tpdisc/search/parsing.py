"""Reading a model's answer: the four tagged sections, and the program the model meant.

Models write code in many ways besides the requested ``<code>`` section: reasoning
preambles with drafts, then a final version; Markdown fences with or without tags; helpers
in fences of their own; usage examples and "key change" snippets beside the class; edits
instead of a class. The answer is read as a list of *programs*: each ``<code>`` section
(its Markdown fences joined in order, as one program) and each Markdown fence outside
them. A program is a *protocol* when it defines a class with ``share_memories`` (or a
``TransmissionProtocol``), even one with a syntax error, which the repair prompt then
reports.

The protocol taken is the last one, with these precedences:

- code inside ``<think>``, ``<thinking>`` or ``<reasoning>`` is a draft, used only when the
  answer has no protocol outside them;
- several different protocols are a draft revised when they define the same class and the
  last is not offered as an alternative (or quoted for reference); otherwise it is not
  clear which one is meant, and the answer is refused, never guessed;
- snippets are never programs: a ``share_memories`` method without its class, a usage
  example, a name in ``<code>`` within prose, helpers without a class.

Refused, each with a message the repair prompt carries: no code, only fragments, edits
(SEARCH/REPLACE blocks, diffs) instead of a class, several protocols with no clear choice.
Tags may be in any case, with spaces or attributes (``<Code lang="python">``); a final
``</code>`` or closing fence may be lost to truncation. A fence ends at a closing line
(backticks alone on a line, indented no deeper than the opening), never at backticks
inside a string of the code.
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from dataclasses import dataclass

from tpdisc.errors import TpdiscError
from tpdisc.sandbox.bounds import MAX_SOURCE_BYTES, SourceRejected, parse_bounded

CONVENTIONAL_NAME = "TransmissionProtocol"
PYTHON_LANGUAGES = frozenset({"", "python", "py", "python3", "py3"})
EDIT_LANGUAGES = frozenset({"diff", "patch", "udiff"})
REASONING_TAGS = ("think", "thinking", "reasoning")
# Lines of backticks read in one text: real answers have a few, a hostile one costs no more.
MAX_FENCE_LINES = 2000
NO_CODE = (
    "the answer has no <code> section: put the complete Python source of the "
    "TransmissionProtocol class between <code> and </code>"
)

# A line that opens a fence (indent, marker, language) or, with nothing after, closes one.
_FENCE_LINE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([\w+.-]*)([^\n]*)$", re.MULTILINE)
_STRING_START = re.compile(r"[#'\"]")
_NOT_A_LINE_BREAK = re.compile(r"[^\r\n]")
_CLASS_LINE = re.compile(r"^class\s+(\w+)", re.MULTILINE)
_METHOD_LINE = re.compile(r"^[ \t]+def\s+share_memories\s*\(", re.MULTILINE)
_SEARCH_REPLACE = re.compile(r"^<{5,}[ \t]*SEARCH\b|^>{5,}[ \t]*REPLACE\b", re.MULTILINE)
_DIFF = re.compile(
    r"^@@ .*@@|^@@$|^\*\*\* (Begin Patch|Update File:|Add File:)|^--- \S.*\n\+\+\+ \S",
    re.MULTILINE,
)


def _phrases(*phrases: str) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(phrases) + r")\b", re.IGNORECASE)


# Words on the line before a later program that say what it is: another option (it is not
# clear which is meant), the final version (it is), or a quote of an earlier protocol.
_ALTERNATIVE = _phrases(
    r"alternative(ly)?",
    r"another (option|approach|variant|version|idea|design)",
    r"option\s*(2|b|two)",
    r"variant\s*(2|b)",
    r"you (could|can|may) (also|instead)",
)
_FINAL = _phrases(r"final|corrected|fixed|revised|improved|updated|complete|full|finished")
_QUOTED = _phrases(
    r"for (comparison|reference)",
    r"(original|parent|baseline|previous|old|earlier) (version|protocol|code|class|solution)",
)


class AnswerFormatError(TpdiscError):
    """The answer cannot be used: its message says what was missing."""


@dataclass(frozen=True)
class ParsedAnswer:
    code: str
    description: str = ""
    logging: str = ""
    reasoning: str = ""
    complete: bool = True  # False: the code's section or fence was never closed


@dataclass(frozen=True)
class _Span:
    start: int  # where the content begins in the text
    end: int  # where it ends (before a closing tag or fence)
    closed: bool
    outer_start: int  # the opening tag or fence
    outer_end: int  # after the closing tag or fence


@dataclass(frozen=True)
class _Fence:
    span: _Span
    language: str
    body: str


@dataclass(frozen=True)
class _Program:
    code: str
    kind: str  # see _kind
    name: str | None  # the protocol class, for protocols
    span: _Span
    where: str  # "a <code> section" or "a fence", for messages
    draft: bool


# --- sections and fences ------------------------------------------------------------------


def _tag_spans(text: str, tag: str) -> list[_Span]:
    """Every ``<tag>…</tag>``; an unclosed last one runs to the end."""
    opening = re.compile(rf"<\s*{tag}\b[^>]*>", re.IGNORECASE)
    closing = re.compile(rf"<\s*/\s*{tag}\s*>", re.IGNORECASE)
    found: list[_Span] = []
    position = 0
    while (start := opening.search(text, position)) is not None:
        end = closing.search(text, start.end())
        stop = end.start() if end is not None else len(text)
        # A tag quoted earlier in the prose ("put it in <code>") opens too soon: the section
        # starts after the last opening tag before its closing one.
        inner = list(opening.finditer(text, start.end(), stop))
        begin = inner[-1] if inner else start
        after = end.end() if end is not None else len(text)
        found.append(_Span(begin.end(), stop, end is not None, begin.start(), after))
        if end is None:
            break
        position = end.end()
    return found


def _sections(text: str, tag: str) -> list[str]:
    return [text[s.start : s.end] for s in _tag_spans(text, tag)]


def _open_quote(quote: str | None, code: str) -> str | None:
    """The triple quote still open after ``code``, given the one open before it (None when
    outside a string). Comments and one-line strings are skipped; escapes never close."""
    i = 0
    while i < len(code):
        if quote is None:
            found = _STRING_START.search(code, i)
            if found is None:
                return None
            i = found.start()
            if code[i] == "#":
                i = code.find("\n", i)
                if i < 0:
                    return None
                continue
            quote = code[i : i + 3] if code[i : i + 3] in ('"""', "'''") else code[i]
            i += len(quote)
            continue
        ends = re.compile(r"\\.|" + re.escape(quote) + ("" if len(quote) == 3 else r"|\n"), re.S)
        found = ends.search(code, i)
        if found is None:
            return quote if len(quote) == 3 else None
        i = found.end()
        if not found.group().startswith("\\"):
            quote = None
    return quote if quote is not None and len(quote) == 3 else None


def _fences(text: str, offset: int = 0) -> list[_Fence]:
    """The Markdown fences of ``text`` (offsets shifted by ``offset``). A fence opens at a
    line of three or more backticks (or tildes) and an optional language, and closes at a
    line of at least as many of them alone, indented no deeper than three spaces past the
    opening, outside any string of the code so far; an unclosed fence runs to the end.
    The first :data:`MAX_FENCE_LINES` lines of backticks only."""
    found: list[_Fence] = []
    lines = itertools.islice(_FENCE_LINE.finditer(text), MAX_FENCE_LINES)
    for opening in lines:
        indent, marker, language = opening.group(1, 2, 3)
        python = language.lower() in PYTHON_LANGUAGES
        body_start = min(opening.end() + 1, len(text))
        quote, scanned, closing = None, body_start, None
        for line in lines:
            close_indent, close_marker, info, rest = line.groups()
            if (
                not (info + rest).strip()
                and close_marker[0] == marker[0]
                and len(close_marker) >= len(marker)
                and len(close_indent.expandtabs()) <= len(indent.expandtabs()) + 3
            ):
                if python:
                    quote, scanned = _open_quote(quote, text[scanned : line.start()]), line.start()
                if quote is None:
                    closing = line
                    break
        body_end = closing.start() if closing is not None else len(text)
        body = text[body_start:body_end]
        if closing is None:  # truncated, or closed at the end of the last line: "code```"
            body = body.rstrip().removesuffix(marker)
        body = textwrap.dedent(body) if indent else body
        after = min(closing.end() + 1, len(text)) if closing is not None else len(text)
        span = _Span(
            offset + body_start,
            offset + body_end,
            closing is not None,
            offset + opening.start(),
            offset + after,
        )
        found.append(_Fence(span, language.lower(), body))
    return found


def _blank(text: str, spans: list[_Span]) -> str:
    """``text`` with the given spans blanked out (offsets and line breaks kept)."""
    pieces, position = [], 0
    for span in sorted(spans, key=lambda s: s.outer_start):
        start = max(span.outer_start, position)
        pieces += [text[position:start], _NOT_A_LINE_BREAK.sub(" ", text[start : span.outer_end])]
        position = max(position, span.outer_end)
    return "".join(pieces) + text[position:]


# --- what a piece of code is --------------------------------------------------------------


def _parse(code: str) -> ast.Module | None:
    """The tree of ``code``; None when it does not parse or is beyond the pre-check's size
    (it is then refused when validated: answers cost no more to read than to check)."""
    try:
        return parse_bounded(code)
    except SourceRejected:
        return None


def _protocol_classes(tree: ast.Module) -> list[str]:
    """Names of the top-level classes that are protocols: ``TransmissionProtocol`` (a class
    or an assignment) first, else those that define ``share_memories``."""
    defining = [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(
            isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            and item.name == "share_memories"
            for item in node.body
        )
    ]
    conventional = any(
        (isinstance(node, ast.ClassDef) and node.name == CONVENTIONAL_NAME)
        or (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == CONVENTIONAL_NAME for t in node.targets)
        )
        for node in tree.body
    )
    return [CONVENTIONAL_NAME] if conventional else defining


def _is_method(node: ast.stmt) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    arguments = node.args.posonlyargs + node.args.args
    return bool(arguments) and arguments[0].arg == "self"


def _uses_protocol(tree: ast.Module) -> bool:
    """Whether the code calls a protocol (a usage example): instantiates one, or calls
    ``share_memories``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == CONVENTIONAL_NAME:
                return True
            if isinstance(func, ast.Attribute) and func.attr == "share_memories":
                return True
    return False


def _kind(code: str, language: str = "") -> tuple[str, str | None]:
    """What ``code`` is, and the protocol class it defines, if it is one:

    - ``protocol``: defines a protocol class (parsed, or unparseable but with a class line
      and a ``share_memories`` method: a broken protocol, which validation reports);
    - ``edit``: SEARCH/REPLACE blocks or a diff;
    - ``snippet``: methods without their class, a usage example, a bare name;
    - ``program``: other Python (helpers; a protocol written some other way);
    - ``other``: neither Python nor an edit.
    """
    if language in EDIT_LANGUAGES or _SEARCH_REPLACE.search(code) or _DIFF.search(code):
        return "edit", None
    if language not in PYTHON_LANGUAGES or not code.strip():
        return "other", None
    tree = _parse(code)
    if tree is None:
        classes = _CLASS_LINE.findall(code)
        if classes and _METHOD_LINE.search(code, code.find(f"class {classes[0]}")):
            name = CONVENTIONAL_NAME if CONVENTIONAL_NAME in classes else classes[-1]
            return "protocol", name
        # an indented method, out of its class
        dedented = _parse(textwrap.dedent(code)) if len(code) <= MAX_SOURCE_BYTES else None
        if dedented is None:
            return ("snippet" if "share_memories" in code else "other"), None
        return ("snippet" if any(map(_is_method, dedented.body)) else "other"), None
    protocols = _protocol_classes(tree)
    if protocols:
        return "protocol", protocols[-1]
    if any(map(_is_method, tree.body)) or _uses_protocol(tree):
        return "snippet", None
    if all(isinstance(node, ast.Expr) for node in tree.body):
        return "snippet", None  # a name or an expression quoted in <code>
    return "program", None


# --- finding the programs of an answer ----------------------------------------------------


def _programs(text: str) -> list[_Program]:
    """Every program of ``text``, in order: each code section, and each fence outside one."""
    reasoning = [s for tag in REASONING_TAGS for s in _tag_spans(text, tag)]

    def draft(span: _Span) -> bool:
        return any(r.outer_start < span.outer_start < r.outer_end for r in reasoning)

    sections = _tag_spans(text, "code")
    found: list[_Program] = []
    for span in sections:
        block = text[span.start : span.end]
        raw = block.strip().removesuffix("```").strip()
        fences = _fences(block, span.start)
        code, (kind, name), closed = raw, _kind(raw), span.closed
        # Fenced code, unless the section is a whole protocol whose docstrings quote fences.
        if fences and not (kind == "protocol" and _parse(raw) is not None):
            code, kind, name, closed = _fenced_program(fences)
        spot = _Span(span.start, span.end, closed, span.outer_start, span.outer_end)
        found.append(_Program(code, kind, name, spot, "a <code> section", draft(span)))
    # Fences outside the code sections; none runs across a reasoning region's border.
    without_code = _blank(text, sections)
    regions = [
        r
        for r in reasoning
        if not any(o is not r and o.outer_start <= r.outer_start < o.outer_end for o in reasoning)
    ]
    fences = _fences(_blank(without_code, regions))
    for region in regions:
        fences += _fences(without_code[region.start : region.end], region.start)
    for fence in fences:
        kind, name = _kind(fence.body, fence.language)
        code = fence.body.strip()
        found.append(_Program(code, kind, name, fence.span, "a fence", draft(fence.span)))
    return sorted(found, key=lambda p: p.span.outer_start)


def _fenced_program(fences: list[_Fence]) -> tuple[str, str, str | None, bool]:
    """The program of a code section written in fences: code, kind, protocol class, and
    whether it is complete (its fences closed)."""
    parts = [(f, *_kind(f.body, f.language)) for f in fences]
    kept = [(f, kind, name) for f, kind, name in parts if kind in ("protocol", "program")]
    protocols = [name for _, kind, name in kept if kind == "protocol"]
    if protocols:  # the fences of one section are one program, helpers included
        code = "\n\n".join(f.body.strip("\n") for f, _, _ in kept).strip()
        return code, "protocol", protocols[-1], all(f.span.closed for f, _, _ in kept)
    # No class among them: an edit, else the last program, else the last fence speaks.
    for wanted in ("edit", "program"):
        chosen = [p for p in parts if p[1] == wanted]
        if chosen:
            break
    fence, kind, name = (chosen or parts)[-1]
    return fence.body.strip(), kind, name, fence.span.closed


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _choose(text: str, protocols: list[_Program]) -> _Program:
    """The protocol meant among ``protocols`` (all drafts or none), or a refusal."""
    distinct: list[_Program] = []
    for program in protocols:
        same = [p for p in distinct if _normal(p.code) == _normal(program.code)]
        if same:
            distinct.remove(same[0])
        distinct.append(program)
    distinct.sort(key=lambda p: p.span.outer_start)
    last = distinct[-1]
    if len(distinct) == 1:
        return last
    # The line leading into the last one says what it is ("Final version:", "Alternatively:").
    gap = text[distinct[-2].span.outer_end : last.span.outer_start]
    lead_in = ([line for line in gap.splitlines() if line.strip()] or [""])[-1]
    if not _ALTERNATIVE.search(lead_in) and (
        _FINAL.search(lead_in)
        or (len({p.name for p in distinct}) == 1 and not _QUOTED.search(lead_in))
    ):
        return last  # a draft, then its final version
    listed = "; ".join(
        f"{p.name} in {p.where} at line {_line(text, p.span.outer_start)}" for p in distinct
    )
    raise AnswerFormatError(
        f"the answer holds {len(distinct)} different protocols ({listed}) and it is not "
        "clear which one is meant: answer with the one complete TransmissionProtocol class, "
        "alone in the <code> section"
    )


def _normal(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.strip().splitlines())


def _code(text: str) -> tuple[str, bool]:
    """The protocol source in ``text`` and whether its section or fence was closed;
    :class:`AnswerFormatError` if there is none or it is unclear which."""
    programs = _programs(text)
    protocols = [p for p in programs if p.kind == "protocol"]
    final = [p for p in protocols if not p.draft]
    if protocols:
        chosen = _choose(text, final or protocols)
        return chosen.code, chosen.span.closed
    if any(p.kind == "edit" for p in programs) or _SEARCH_REPLACE.search(text):
        raise AnswerFormatError(
            "the answer gives edits (SEARCH/REPLACE blocks or a diff) instead of a program: "
            "edits are not applied; put the complete Python source of the "
            "TransmissionProtocol class, with your changes made, between <code> and </code>"
        )
    # A <code> section holding other Python (a protocol written as functions, say) is still
    # this answer's code: validation says what is missing.
    tagged = [p for p in programs if p.where == "a <code> section" and p.kind == "program"]
    if tagged:
        chosen = ([p for p in tagged if not p.draft] or tagged)[-1]
        return chosen.code, chosen.span.closed
    if any(p.kind == "snippet" and "share_memories" in p.code for p in programs):
        raise AnswerFormatError(
            "the answer's code is only part of a protocol (a share_memories method or a "
            "usage example, without the class): put the complete Python source, imports "
            "then the whole TransmissionProtocol class, between <code> and </code>"
        )
    raise AnswerFormatError(NO_CODE)


def extract_code(text: str) -> str:
    """The protocol source in ``text``; :class:`AnswerFormatError` if there is none."""
    return _code(text)[0]


def _section(text: str, tag: str) -> str:
    found = [s.strip() for s in _sections(text, tag) if s.strip()]
    return found[0] if found else ""


def parse_answer(text: str) -> ParsedAnswer:
    """The code (required) and the description, logging notes and reasoning (optional)."""
    if not text or not text.strip():
        raise AnswerFormatError("the answer was empty; reply with the four tagged sections")
    code, complete = _code(text)
    return ParsedAnswer(
        code=code,
        description=_section(text, "description"),
        logging=_section(text, "logging"),
        reasoning=_section(text, "reasoning"),
        complete=complete,
    )


def render_answer(answer: ParsedAnswer) -> str:
    """An answer in the requested format (what the offline proposer and tests produce)."""
    return (
        f"<reasoning>\n{answer.reasoning}\n</reasoning>\n"
        f"<description>\n{answer.description}\n</description>\n"
        f"<logging>\n{answer.logging}\n</logging>\n"
        f"<code>\n{answer.code}\n</code>\n"
    )
