"""The options of the offline proposer's choice genes, each defined in one entry.

A route (to whom memories go), a feature (what makes a memory worth sending), a filter
(what is never sent) and a schedule (how many memories, when) each say in one place what
they are called, how they read in a description and which code they render to. Adding an
option is adding an entry to :data:`ROUTES`, :data:`FEATURES`, :data:`FILTERS` or
:data:`SCHEDULES`; the genome, the search operators and the renderer of
:mod:`tpdisc.search.blocks` take it from there. What the options read is built only when
one in use reads it: :data:`INPUTS` (arrays built at each step) and :data:`RECORDS`
(what a protocol keeps from step to step).

The rendered code works on arrays over integer ids (elements, agents, candidate memories)
so that each step costs a few numpy calls over every recipient at once, and keeps what it
knows up to date from what is new at each step: no Python loop over every candidate for
every recipient, no draw per memory, no pass over the whole history.

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
    @property
    def rare_below(self) -> float: ...


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
class Record:
    """What a protocol keeps from step to step beyond what every design keeps (who owns
    which element, every memory as ids), updated from what is new at each step or from
    what it sent, never rebuilt from the whole history."""

    name: str
    init: Snippet  # lines of ``__init__``
    grow: str = ""  # lines of ``grow``: arrays over elements get ``more`` columns
    on_memory: str = ""  # lines of ``read`` for each new memory (agent, k, a, b, r, pair)
    on_send: str = ""  # lines of ``pick`` once the memories sent are known
    per_step: Snippet = ""  # lines at the start of each step
    methods: Snippet = ""  # further methods, at column 0
    genes: tuple[str, ...] = ()  # genes it reads; only these are worth mutating


@dataclass(frozen=True)
class Input:
    """A named array the features and filters read, built once per step only when one in
    use reads it: ``step`` inputs are over elements, the others over candidates (a row per
    recipient where they depend on it)."""

    name: str
    per: str  # "step" (before candidates are filtered) or "candidate"
    code: str
    records: tuple[str, ...] = ()  # the records it reads


@dataclass(frozen=True)
class Route:
    """Who each recipient hears: ``senders`` returns ``hears[recipient, sender]``."""

    name: str
    summary: Snippet  # the docstring of the rendered senders method
    describe: Snippet  # the opening sentence of the protocol's description
    senders: Snippet  # body of ``senders(self, i_step)``
    init: Snippet = ""  # lines of ``__init__``
    records: tuple[str, ...] = ()
    genes: tuple[str, ...] = ()  # genes the route reads; only these are worth mutating


@dataclass(frozen=True)
class Feature:
    """One term of the score that orders candidate memories for each recipient."""

    name: str
    description: str  # what a positive weight favours, in descriptions and notes
    comment: str  # the comment above the rendered term
    # ``$op`` is ``+=`` or ``-=`` by the weight's sign and ``$w`` its magnitude; the term
    # is an array over candidates, or over recipients and candidates
    code: str
    reads: tuple[str, ...] = ()  # names of the INPUTS the term needs


@dataclass(frozen=True)
class Filter:
    """A rule a memory must pass to be sent at all. A rule about successes lets failures
    through and the other way round, so that rules on both kinds combine."""

    name: str
    # Which memories the rule is about: "successes", "failures" or "memories" (both); a
    # rule on one kind lets the other through.
    applies: str
    condition: Snippet  # what a memory of that kind must be: "whose result ..."
    # ``candidate`` rules narrow the candidates for every recipient (``keep &= ...``),
    # ``recipient`` rules rule candidates out for some (``blocked |= ...``)
    per: str
    code: str
    reads: tuple[str, ...] = ()
    genes: tuple[str, ...] = ()

    @property
    def description(self) -> Snippet:
        """The rule as a noun phrase, "successes whose result ...": "only ..." in comments
        and notes."""
        condition = self.condition
        if callable(condition):
            return lambda genome: f"{self.applies} {condition(genome)}".strip()
        return f"{self.applies} {condition}".strip()


@dataclass(frozen=True)
class Schedule:
    """How many memories each recipient gets at a step."""

    name: str
    summary: Snippet  # the docstring of the rendered quota method
    quota: Snippet  # body of ``quota(self, i_step)``
    init: Snippet = ""  # lines of ``__init__``
    when: Snippet = ""  # "Sharing happens ..." in the description; the summary if empty
    genes: tuple[str, ...] = ()  # genes the schedule reads; only these are worth mutating


_Option = TypeVar("_Option", Record, Input, Route, Feature, Filter, Schedule)


def _by_name(*options: _Option) -> dict[str, _Option]:
    return {option.name: option for option in options}


def _groups_per_step(g: Genome) -> str:
    if not g.regroup_every:
        return ""
    return (
        f"if i_step and i_step % {g.regroup_every} == 0:\n"  # i_step 0 has fresh groups
        "    self.mates = self.make_groups()"
    )


RECORDS: dict[str, Record] = _by_name(
    Record(
        "groups",
        init="self.mates = self.make_groups()",
        per_step=_groups_per_step,
        methods=(
            "def make_groups(self):\n"
            '    """Random groups of $group_size, nobody alone; mates[a, b]: b is in a\'s'
            ' group."""\n'
            "    group = np.empty(self.n_agents, dtype=np.int64)\n"
            "    group[self.rng.permutation(self.n_agents)] = np.arange(self.n_agents) //"
            " $group_size\n"
            "    # a last group of one joins the one before\n"
            "    group = np.minimum(group, (self.n_agents - 2) // $group_size)\n"
            "    mates = group[:, None] == group[None, :]\n"
            "    np.fill_diagonal(mates, False)\n"
            "    return mates"
        ),
        genes=("group_size", "regroup_every"),
    ),
    Record(
        "sent",
        init=(
            "# sent[recipient, element]: a memory making it was sent to the recipient\n"
            "self.sent = np.zeros((n_agents, 64), dtype=bool)"
        ),
        grow="self.sent = np.pad(self.sent, ((0, 0), (0, more)))",
        on_send="self.sent[who, result[chosen]] = True",
    ),
    Record(
        "uses",
        init=(
            "# uses[element]: how often it was an ingredient of a success\nself.uses = np.zeros(64)"
        ),
        grow="self.uses = np.pad(self.uses, (0, more))",
        on_memory="if r:\n    self.uses[a] += 1\n    self.uses[b] += 1",
    ),
    Record(
        "tried",
        init=(
            "# tried[agent, pair]: the agent attempted that pair itself\n"
            "self.tried = np.zeros((n_agents, 64), dtype=bool)"
        ),
        on_memory=(
            "if pair == self.tried.shape[1]:\n"
            "    self.tried = np.pad(self.tried, ((0, 0), (0, pair)))\n"
            "self.tried[agent, pair] = True"
        ),
    ),
)

# In the order they are built.
INPUTS: dict[str, Input] = _by_name(
    Input("holders", "step", "holders = self.owned.sum(axis=0)  # agents owning each element"),
    Input("success", "candidate", "success = result > 0"),
    Input("age", "candidate", "age = self.count[sender] - 1 - index  # 0: the latest attempt"),
    # [recipient, candidate] from here on
    Input("has_first", "candidate", "has_first = self.owned[:, first]"),
    Input("has_second", "candidate", "has_second = self.owned[:, second]"),
    Input("has_result", "candidate", "has_result = self.owned[:, result]"),
    Input(
        "group_has",
        "candidate",
        "group_has = ((self.mates @ self.owned) | self.owned)[:, result]",
        records=("groups",),
    ),
    Input("mate", "candidate", "mate = self.mates[:, sender]", records=("groups",)),
    Input("unsent", "candidate", "unsent = ~self.sent[:, result]", records=("sent",)),
    Input("untried", "candidate", "untried = ~self.tried[:, recipe]", records=("tried",)),
    Input(
        "used",
        "candidate",
        "used = self.uses[result] / (1.0 + self.uses[result])  # 0, 1/2, 2/3...",
        records=("uses",),
    ),
)


def _ring_init(g: Genome) -> str:
    offsets = tuple((k // 2 + 1) * (1 if k % 2 == 0 else -1) for k in range(g.peers))
    return fill(
        "# the $peers nearest seats on the ring, alternating right and left\n"
        "self.hears = np.zeros((n_agents, n_agents), dtype=bool)\n"
        "for a in range(n_agents):\n"
        "    for d in $offsets:\n"
        "        self.hears[a, (a + d) % n_agents] = True\n"
        "np.fill_diagonal(self.hears, False)  # on a small ring an offset comes back round",
        peers=g.peers,
        offsets=offsets,
    )


def _groups_describe(g: Genome) -> str:
    regroup = f", regrouped every {g.regroup_every} steps" if g.regroup_every else ""
    return f"Agents form groups of {g.group_size} and learn from their group mates{regroup}"


ROUTES: dict[str, Route] = _by_name(
    Route(
        "everyone",
        summary="every recipient learns from all other agents",
        describe="Every agent learns from all the others",
        init="self.hears = ~np.eye(n_agents, dtype=bool)",
        senders="return self.hears",
    ),
    Route(
        "random_peers",
        summary="every recipient learns from a fresh random set of peers each step",
        describe="Every agent learns from $peers randomly drawn peers each step",
        senders=(
            "draw = self.rng.random((self.n_agents, self.n_agents))\n"
            "np.fill_diagonal(draw, np.inf)  # never itself\n"
            "k = min($peers, self.n_agents - 1)\n"
            "# the k lowest draws of each row\n"
            "return draw < np.sort(draw, axis=1)[:, k : k + 1]"
        ),
        genes=("peers",),
    ),
    Route(
        "ring",
        summary="agents sit on a ring and learn from their nearest neighbours",
        describe="Agents sit on a ring and each learns from its $peers nearest neighbours",
        init=_ring_init,
        senders="return self.hears",
        genes=("peers",),
    ),
    Route(
        "rotating",
        summary="every recipient learns from $peers partners that change every step",
        describe="Every agent learns from $peers partners, the next ones round the table each step",
        senders=(
            "# at step t, agent a hears a + 1 + (t * $peers + j) mod (n - 1), j < $peers\n"
            "shift = (i_step * $peers + np.arange($peers)) % max(1, self.n_agents - 1) + 1\n"
            "hears = np.zeros((self.n_agents, self.n_agents), dtype=bool)\n"
            "hears[self.agents[:, None], (self.agents[:, None] + shift) % self.n_agents] = True\n"
            "np.fill_diagonal(hears, False)  # with one agent, the shift comes back round\n"
            "return hears"
        ),
        genes=("peers",),
    ),
    Route(
        "groups",
        summary="agents form small groups and learn from their group mates",
        describe=_groups_describe,
        senders="return self.mates",
        records=("groups",),
    ),
    Route(
        "richest",
        summary="every recipient learns from the agents owning most elements it lacks",
        describe="Every agent learns from the $peers agents owning most elements it lacks",
        senders=(
            "# gain[recipient, sender]: elements the sender owns and the recipient lacks\n"
            "gain = (~self.owned).astype(np.int64) @ self.owned.T.astype(np.int64)\n"
            "np.fill_diagonal(gain, 0)\n"
            'best = np.argsort(-gain, axis=1, kind="stable")[:, : $peers]\n'
            "hears = np.zeros((self.n_agents, self.n_agents), dtype=bool)\n"
            "hears[self.agents[:, None], best] = True\n"
            "return hears & (gain > 0)"
        ),
        genes=("peers",),
    ),
)

FEATURES: dict[str, Feature] = _by_name(
    Feature(
        "recency",
        description="recent attempts",
        comment="recent attempts",
        code="score $op $w / (1.0 + age)",
        reads=("age",),
    ),
    Feature(
        "success",
        description="successful attempts",
        comment="successes",
        code="score $op $w * success",
        reads=("success",),
    ),
    Feature(
        "failure",
        description="failed attempts",
        comment="failures",
        code="score $op $w * ~success",
        reads=("success",),
    ),
    Feature(
        "lacking_result",
        description="successes whose result the recipient lacks",
        comment="results the recipient lacks",
        code="score $op $w * (success & ~has_result)",
        reads=("success", "has_result"),
    ),
    Feature(
        "actionable",
        description="attempts whose ingredients the recipient owns",
        comment="ingredients the recipient owns",
        code="score $op $w * (0.5 * has_first + 0.5 * has_second)",
        reads=("has_first", "has_second"),
    ),
    Feature(
        "reachable",
        description="results the recipient lacks but owns an ingredient of",
        comment="results the recipient lacks although it owns an ingredient",
        code="score $op $w * (success & ~has_result & (has_first | has_second))",
        reads=("success", "has_first", "has_second", "has_result"),
    ),
    Feature(
        "repeatable",
        description="failures the recipient could repeat (it owns both ingredients)",
        comment="failures the recipient could repeat",
        code="score $op $w * (~success & has_first & has_second)",
        reads=("success", "has_first", "has_second"),
    ),
    Feature(
        "rarity",
        description="results few agents own",
        comment="results few agents own",
        code="score $op $w * success * (1.0 - holders[result] / self.n_agents)",
        reads=("success", "holders"),
    ),
    Feature(
        "group_lacks",
        description="results nobody in the recipient's group owns",
        comment="results nobody in the recipient's group owns",
        code="score $op $w * (success & ~group_has)",
        reads=("success", "group_has"),
    ),
    Feature(
        "pivotal",
        description="results often used as ingredients",
        comment="results often used as ingredients",
        code="score $op $w * success * used",
        reads=("success", "used"),
    ),
    Feature(
        "unsent",
        description="results not yet sent to the recipient",
        comment="results not yet sent to the recipient",
        code="score $op $w * (success & unsent)",
        reads=("success", "unsent"),
    ),
    Feature(
        "untried",
        description="pairs the recipient has not tried",
        comment="pairs the recipient never tried",
        code="score $op $w * untried",
        reads=("untried",),
    ),
    Feature(
        "mate",
        description="memories of the recipient's group mates",
        comment="memories of the recipient's group mates",
        code="score $op $w * mate",
        reads=("mate",),
    ),
)


def _rare_condition(g: Genome) -> str:
    return f"whose result fewer than {g.rare_below:.0%} of the agents own"


FILTERS: dict[str, Filter] = _by_name(
    # Successes only: no rule beyond the kind, and every failure held back.
    Filter("successes", "successes", "", per="candidate", code="keep &= result > 0"),
    Filter(
        "rare",
        "successes",
        _rare_condition,
        per="candidate",
        code="keep &= (result == 0) | (holders[result] < $rare_below * self.n_agents)",
        reads=("holders",),
        genes=("rare_below",),
    ),
    Filter(
        "lacking",
        "successes",
        "whose result the recipient lacks",
        per="recipient",
        code="blocked |= success & has_result",
        reads=("success", "has_result"),
    ),
    Filter(
        "owns_ingredient",
        "successes",
        "the recipient owns an ingredient of",
        per="recipient",
        code="blocked |= success & ~(has_first | has_second)",
        reads=("success", "has_first", "has_second"),
    ),
    Filter(
        "group_lacks",
        "successes",
        "whose result nobody in the recipient's group owns",
        per="recipient",
        code="blocked |= success & group_has",
        reads=("success", "group_has"),
    ),
    Filter(
        "unsent",
        "successes",
        "whose result was never sent to the recipient",
        per="recipient",
        code="blocked |= success & ~unsent",
        reads=("success", "unsent"),
    ),
    Filter(
        "repeatable",
        "failures",
        "of pairs the recipient owns both ingredients of",
        per="recipient",
        code="blocked |= ~success & ~(has_first & has_second)",
        reads=("success", "has_first", "has_second"),
    ),
    Filter(
        "untried",
        "memories",
        "of pairs the recipient never tried",
        per="recipient",
        code="blocked |= ~untried",
        reads=("untried",),
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
            "self.coverage_history.append(int(self.owned.any(axis=0).sum()))\n"
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
