"""The options of the offline proposer's choice genes, each defined in one entry.

A route (to whom memories go), a feature (what makes a memory worth sending) and a
schedule (how many memories, when) each say in one place what they are called, how they
read in a description and which code they render to. Adding an option is adding an entry
to :data:`ROUTES`, :data:`FEATURES` or :data:`SCHEDULES`; the genome, the search
operators and the renderer of :mod:`tpdisc.search.blocks` take it from there.

Code and text are templates over the genome's genes (``$peers``, ``$n_memories``...; see
:func:`fill`), or functions of the genome where a part depends on a gene's value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol, TypeVar


class Genome(Protocol):
    """What the snippets read of a :class:`tpdisc.search.blocks.Genome` (named here so that
    this module, which blocks imports, does not import blocks)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def peers(self) -> int: ...
    @property
    def group_size(self) -> int: ...
    @property
    def regroup_every(self) -> int: ...


# Template text over the genes, or a function of the genome for parts with conditions.
Snippet = str | Callable[[Genome], str]

_BLOCK = re.compile(r"( *)\$(\w+)")
_INLINE = re.compile(r"\$(\w+)")


def fill(template: str, **values: object) -> str:
    """``$name`` substitution as in :class:`string.Template`, except that a placeholder
    alone on its line takes a block of code indented as the placeholder, or is dropped
    with its line if the block is empty: snippets drop into a skeleton in place."""
    lines: list[str] = []
    for line in template.split("\n"):
        if block := _BLOCK.fullmatch(line):
            text = str(values[block[2]])
            lines += [block[1] + s if s.strip() else s for s in text.split("\n")] if text else []
        else:
            lines.append(_INLINE.sub(lambda m: str(values[m[1]]), line))
    return "\n".join(lines)


def gene_values(genome: Genome) -> dict[str, str]:
    """Each scalar gene as rendered in code and text (floats without trailing zeros)."""
    out = {}
    for f in fields(genome):
        value = getattr(genome, f.name)
        if isinstance(value, float):
            out[f.name] = f"{value:g}"
        elif isinstance(value, int | str):
            out[f.name] = str(value)
    return out


def expand(snippet: Snippet, genome: Genome) -> str:
    return snippet(genome) if callable(snippet) else fill(snippet, **gene_values(genome))


@dataclass(frozen=True)
class Route:
    """Who each recipient learns from."""

    name: str
    summary: Snippet  # the docstring of the rendered senders method
    describe: Snippet  # the opening sentence of the protocol's description
    senders: Snippet  # body of ``senders(self, i_step, recipient, owned)``
    init: Snippet = ""  # lines of ``__init__``
    per_step: Snippet = ""  # lines at the start of each step, after ``owned``
    methods: Snippet = ""  # further methods, at column 0
    genes: tuple[str, ...] = ()  # genes the route reads; only these are worth mutating
    costly: bool = False  # scans every agent per recipient: replaced when a run times out


@dataclass(frozen=True)
class Feature:
    """One term of the score that orders a sender's memories for a recipient."""

    name: str
    description: str  # what a positive weight favours, in descriptions and notes
    comment: str  # the comment above the rendered term
    # ``$op`` is ``+=`` or ``-=`` by the weight's sign and ``$w`` its magnitude
    code: str
    reads: tuple[str, ...] = ()  # names of the SCORE_INPUTS the term needs
    costly: bool = False  # dropped when a run times out


@dataclass(frozen=True)
class Schedule:
    """How many memories each recipient gets at a step."""

    name: str
    summary: Snippet  # the docstring of the rendered quota method
    quota: Snippet  # body of ``quota(self, i_step, owned)``
    init: Snippet = ""  # lines of ``__init__``
    when: Snippet = ""  # "Sharing happens ..." in the description; the summary if empty
    genes: tuple[str, ...] = ()  # genes the schedule reads; only these are worth mutating


@dataclass(frozen=True)
class ScoreInput:
    """An argument of ``score`` that costs time to build: only built when a feature in use
    reads it, else an empty stand-in keeps the signature the same."""

    name: str
    per: str  # "step" (built once per step) or "recipient" (once per recipient)
    code: str
    stand_in: str


_Option = TypeVar("_Option", Route, Feature, Schedule, ScoreInput)


def _by_name(*options: _Option) -> dict[str, _Option]:
    return {option.name: option for option in options}


def _ring_init(g: Genome) -> str:
    offsets = tuple((k // 2 + 1) * (1 if k % 2 == 0 else -1) for k in range(g.peers))
    return fill(
        "# the $peers nearest seats on the ring, alternating right and left\n"
        "offsets = $offsets\n"
        "self.neighbours = [\n"
        "    sorted({(a + d) % n_agents for d in offsets} - {a}) for a in range(n_agents)\n"
        "]",
        peers=g.peers,
        offsets=offsets,
    )


def _groups_describe(g: Genome) -> str:
    regroup = f", regrouped every {g.regroup_every} steps" if g.regroup_every else ""
    return f"Agents form groups of {g.group_size} and learn from their group mates{regroup}"


def _groups_per_step(g: Genome) -> str:
    if not g.regroup_every:
        return ""
    return (
        f"if i_step and i_step % {g.regroup_every} == 0:\n"  # i_step 0 has fresh groups
        "    self.mates = self.make_groups()"
    )


ROUTES: dict[str, Route] = _by_name(
    Route(
        "everyone",
        summary="every recipient learns from all other agents",
        describe="Every agent learns from all the others",
        senders="return [a for a in range(self.n_agents) if a != recipient]",
        costly=True,
    ),
    Route(
        "random_peers",
        summary="every recipient learns from a fresh random set of peers each step",
        describe="Every agent learns from $peers randomly drawn peers each step",
        senders=(
            "others = [a for a in range(self.n_agents) if a != recipient]\n"
            "k = min($peers, len(others))\n"
            "picked = self.rng.choice(len(others), size=k, replace=False)\n"
            "return [others[int(i)] for i in picked]"
        ),
        genes=("peers",),
    ),
    Route(
        "ring",
        summary="agents sit on a ring and learn from their nearest neighbours",
        describe="Agents sit on a ring and each learns from its $peers nearest neighbours",
        init=_ring_init,
        senders="return self.neighbours[recipient]",
        genes=("peers",),
    ),
    Route(
        "groups",
        summary="agents form small groups and learn from their group mates",
        describe=_groups_describe,
        init="self.mates = self.make_groups()",
        senders="return self.mates[recipient]",
        per_step=_groups_per_step,
        methods=(
            "def make_groups(self):\n"
            '    """Random groups of $group_size; each agent\'s mates are the rest of its'
            ' group."""\n'
            "    order = [int(a) for a in self.rng.permutation(self.n_agents)]\n"
            "    groups = [order[i : i + $group_size] for i in range(0, self.n_agents,"
            " $group_size)]\n"
            "    if len(groups) > 1 and len(groups[-1]) < 2:  # nobody stays alone\n"
            "        last = groups.pop()\n"
            "        groups[-1] += last\n"
            "    return {a: [b for b in group if b != a] for group in groups for a in group}"
        ),
        genes=("group_size", "regroup_every"),
    ),
    Route(
        "richest",
        summary="every recipient learns from the agents owning most elements it lacks",
        describe="Every agent learns from the $peers agents owning most elements it lacks",
        senders=(
            "lacking = {\n"
            "    a: len(owned[a] - owned[recipient]) for a in range(self.n_agents)"
            " if a != recipient\n"
            "}\n"
            "ranked = sorted(lacking, key=lambda a: (-lacking[a], a))\n"
            "return [a for a in ranked[:$peers] if lacking[a] > 0]"
        ),
        genes=("peers",),
        costly=True,
    ),
)

# In the order of score's parameters, after ``mine``.
SCORE_INPUTS: dict[str, ScoreInput] = _by_name(
    ScoreInput(
        "tried",
        per="recipient",
        code='tried = {frozenset((m[0], m[1])) for m in agent_states[recipient]["memories"]}',
        stand_in="tried = set()",
    ),
    ScoreInput(
        "holders",
        per="step",
        code=(
            "holders = {}\n"
            "for items in owned.values():\n"
            "    for item in items:\n"
            "        holders[item] = holders.get(item, 0) + 1"
        ),
        stand_in="holders = {}",
    ),
)

FEATURES: dict[str, Feature] = _by_name(
    Feature(
        "recency",
        description="recent attempts",
        comment="recent attempts",
        code="score $op $w / (1.0 + age)",
    ),
    Feature(
        "success",
        description="successful attempts",
        comment="successes",
        code="if result is not None:\n    score $op $w",
    ),
    Feature(
        "failure",
        description="failed attempts",
        comment="failures",
        code="if result is None:\n    score $op $w",
    ),
    Feature(
        "lacking_result",
        description="successes whose result the recipient lacks",
        comment="results the recipient lacks",
        code="if result is not None and result not in mine:\n    score $op $w",
    ),
    Feature(
        "actionable",
        description="attempts whose ingredients the recipient owns",
        comment="ingredients the recipient owns",
        code="score $op $w * ((e1 in mine) + (e2 in mine)) / 2",
    ),
    Feature(
        "rarity",
        description="results few agents own",
        comment="results few agents own",
        code=(
            "if result is not None:\n"
            "    score $op $w * (1.0 - holders.get(result, 0) / self.n_agents)"
        ),
        reads=("holders",),
    ),
    Feature(
        "untried",
        description="pairs the recipient has not tried",
        comment="pairs the recipient never tried",
        code="if frozenset((e1, e2)) not in tried:\n    score $op $w",
        reads=("tried",),
        costly=True,
    ),
)

SCHEDULES: dict[str, Schedule] = _by_name(
    Schedule("always", summary="every step", quota="return $n_memories"),
    Schedule(
        "periodic",
        summary="every few steps",
        quota="return $n_memories if (i_step + 1) % $period == 0 else 0",
        when="every $period steps",
        genes=("period",),
    ),
    Schedule(
        "adaptive",
        summary="in full when the group stalls, a little otherwise",
        init="self.coverage_history = []",
        quota=(
            "# group progress: how many distinct elements the agents own together\n"
            "coverage = len(set().union(*owned.values()))\n"
            "self.coverage_history.append(coverage)\n"
            "stalled = len(self.coverage_history) > $window and (\n"
            "    self.coverage_history[-1] == self.coverage_history[-1 - $window]\n"
            ")\n"
            "return $n_memories if stalled else max(1, $n_memories // 3)"
        ),
        genes=("window",),
    ),
    Schedule(
        "ramp_up",
        summary="more and more as the game goes on",
        quota="return max(1, round($n_memories * (i_step + 1) / self.n_steps))",
    ),
    Schedule(
        "ramp_down",
        summary="a lot early, less and less later",
        quota="return max(1, round($n_memories * (1 - i_step / self.n_steps)))",
    ),
)
