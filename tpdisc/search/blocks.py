"""A typed library of protocol building blocks, rendered as readable Python.

A :class:`Genome` says, in a few typed genes, *to whom* memories go (routing), *what* is
sent (a weighted score over features of each memory, among each sender's most recent
ones, and filters a memory must pass at all), *how much* and *when* (a schedule).
:func:`render` turns a genome into an ordinary protocol source file that uses only the
allowed imports, with comments saying what each part does; it goes through the same
sandbox, archive and fitness path as any other code. :func:`mutate` and :func:`crossover`
are the search operators of the offline proposer; :func:`numeric_genes` and
:func:`with_numbers` expose the numeric genes, with their ranges, to a numeric optimiser.
The options of the choice genes (routes, score features, filters, schedules) are entries
of :mod:`tpdisc.search.genes`, each with its own description and code.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from tpdisc.errors import ConfigError
from tpdisc.search.genes import (
    FEATURES,
    FILTERS,
    INPUTS,
    RECORDS,
    ROUTES,
    SCHEDULES,
    expand,
    fill,
)

# The range of every numeric gene (INTEGER_GENES take whole numbers).
LIMITS: dict[str, tuple[float, float]] = {
    "peers": (1, 9),
    "group_size": (2, 6),
    "regroup_every": (0, 60),
    # up to a whole 150-step game's memories
    "horizon": (3, 150),
    "n_memories": (1, 20),
    "p_share": (0.1, 1.0),
    "period": (2, 8),
    "window": (2, 12),
    "noise": (0.0, 2.0),
    "rare_below": (0.05, 1.0),
    "failure_share": (0.0, 1.0),
    "mate_share": (0.0, 1.0),
}
WEIGHT_RANGE = (-1.0, 3.0)
# Shared by random designs and mutations, so both explore the same values.
REGROUP_EVERY_VALUES = (0, 5, 10, 20, 40)
NOISE_VALUES = (0.0, 0.05, 0.1, 0.3, 1.0)
SHARE_STEPS = (-0.2, -0.1, 0.1, 0.2)  # mutations of a share (p_share, failure_share...)


@dataclass(frozen=True)
class Genome:
    """The genes of a block-built protocol; see the module docstring. Genes added since
    the first archives have defaults that render what those archives' designs did, so
    their JSON still loads."""

    route: str = "random_peers"
    peers: int = 3  # senders per recipient (random_peers, ring, rotating, richest)
    group_size: int = 3  # groups (the route, or features and filters about group mates)
    regroup_every: int = 0  # groups: steps between reshuffles, 0 for fixed groups
    weights: tuple[tuple[str, float], ...] = ()  # feature → weight; none means random picks
    filters: tuple[str, ...] = ()  # rules a memory must pass to be sent, in FILTERS' order
    rare_below: float = 0.3  # rare: share of the agents owning a result that makes it common
    horizon: int = 30  # candidates are each sender's last ``horizon`` memories
    n_memories: int = 10  # memories per recipient in a full step
    schedule: str = "always"
    p_share: float = 1.0  # chance that a recipient is served in an active step
    failure_share: float = 1.0  # most of a recipient's quota that failures may take
    mate_share: float = 1.0  # most of it that group mates may take (1: no groups needed)
    period: int = 3  # periodic: share every ``period`` steps
    window: int = 5  # adaptive: steps without group progress that make a stall
    noise: float = 0.1  # random jitter added to scores

    def __post_init__(self) -> None:
        if self.route not in ROUTES:
            raise ConfigError(f"genome: unknown route {self.route!r}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"genome: unknown schedule {self.schedule!r}")
        for name, _ in self.weights:
            if name not in FEATURES:
                raise ConfigError(f"genome: unknown feature {name!r}")
        for name in self.filters:
            if name not in FILTERS:
                raise ConfigError(f"genome: unknown filter {name!r}")
        # one order, so that equal designs compare (and render) equal
        object.__setattr__(self, "filters", tuple(f for f in FILTERS if f in self.filters))
        for name, (low, high) in LIMITS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ConfigError(f"genome: {name}={value} outside [{low}, {high}]")

    @property
    def weight_map(self) -> dict[str, float]:
        return dict(self.weights)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["weights"] = [[k, v] for k, v in self.weights]
        data["filters"] = list(self.filters)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Genome:
        data = dict(data)
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"genome: unknown gene(s) {', '.join(sorted(unknown))}")
        data["weights"] = tuple((str(k), float(v)) for k, v in data.get("weights", ()))
        data["filters"] = tuple(str(f) for f in data.get("filters", ()))
        return cls(**data)

    def key(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


# Closest block-built counterparts of the standard baselines, so the offline proposer can
# take a seed protocol as a parent.
BASELINE_GENOMES: dict[str, Genome] = {
    "paired": Genome(
        route="groups", group_size=2, horizon=60, n_memories=10, p_share=0.5, noise=1.0
    ),
    "dynamic": Genome(
        route="groups",
        group_size=2,
        regroup_every=20,
        horizon=60,
        n_memories=10,
        p_share=0.5,
        noise=1.0,
    ),
    "graph": Genome(route="random_peers", peers=1, horizon=60, n_memories=10, p_share=0.5),
    "stochastic": Genome(route="everyone", horizon=60, n_memories=20, noise=1.0),
}


INTEGER_GENES = frozenset(f.name for f in fields(Genome) if f.type == "int")


# --- what a design uses ------------------------------------------------------------------


def inputs_used(g: Genome) -> list[str]:
    """The inputs the features and filters in use read, in the order they are built."""
    read = {i for f, _ in g.weights for i in FEATURES[f].reads}
    read |= {i for f in g.filters for i in FILTERS[f].reads}
    return [name for name in INPUTS if name in read]


def records_used(g: Genome) -> list[str]:
    """What the design keeps from step to step beyond every design's state."""
    used = set(ROUTES[g.route].records)
    if g.mate_share < 1:
        used.add("groups")
    used |= {r for i in inputs_used(g) for r in INPUTS[i].records}
    return [name for name in RECORDS if name in used]


# --- random genomes and operators ---------------------------------------------------------


def _int(rng: np.random.Generator, name: str) -> int:
    low, high = LIMITS[name]
    return int(rng.integers(int(low), int(high) + 1))


def _horizon(rng: np.random.Generator) -> int:
    """Log-uniform: short windows as often as long ones, a whole game's history at times."""
    low, high = LIMITS["horizon"]
    return round(math.exp(rng.uniform(math.log(low), math.log(high))))


def _share(rng: np.random.Generator) -> float:
    """No cap two times in three."""
    return 1.0 if rng.random() < 2 / 3 else round(float(rng.uniform(0.0, 0.8)), 2)


def _weight(rng: np.random.Generator) -> float:
    return round(float(rng.uniform(*WEIGHT_RANGE)), 2)


def random_weights(rng: np.random.Generator) -> tuple[tuple[str, float], ...]:
    names = list(FEATURES)
    k = int(rng.integers(1, 4))
    chosen = sorted(rng.choice(len(names), size=k, replace=False))
    return tuple((names[i], _weight(rng)) for i in chosen)


def random_filters(rng: np.random.Generator) -> tuple[str, ...]:
    """None half the time, else one or two."""
    if rng.random() < 0.5:
        return ()
    names = list(FILTERS)
    return tuple(
        names[i] for i in rng.choice(len(names), size=int(rng.integers(1, 3)), replace=False)
    )


def random_genome(rng: np.random.Generator) -> Genome:
    return Genome(
        route=str(rng.choice(list(ROUTES))),
        peers=_int(rng, "peers"),
        group_size=_int(rng, "group_size"),
        regroup_every=int(rng.choice(REGROUP_EVERY_VALUES)),
        weights=random_weights(rng),
        filters=random_filters(rng),
        rare_below=round(float(rng.uniform(0.1, 0.6)), 2),
        horizon=_horizon(rng),
        n_memories=_int(rng, "n_memories"),
        schedule=str(rng.choice(list(SCHEDULES))),
        p_share=round(float(rng.uniform(0.3, 1.0)), 2),
        failure_share=_share(rng),
        mate_share=_share(rng),
        period=_int(rng, "period"),
        window=_int(rng, "window"),
        noise=float(rng.choice(NOISE_VALUES)),
    )


def _clip(name: str, value: float) -> float:
    low, high = LIMITS[name]
    return min(high, max(low, value))


def expressed_genes(genome: Genome) -> list[str]:
    """Genes that change the rendered protocol, weighted by how often to mutate them
    (a gene listed twice is drawn twice as often). Genes of blocks not in use (the group
    size of a ring, the period of an adaptive schedule) are left alone, since changing
    them would only produce a copy of the parent."""
    genes = ["route", "weights", "weights", "weights", "filters", "filters", "horizon"]
    genes += ["n_memories", "n_memories", "schedule", "p_share", "noise"]
    genes += ["failure_share", "mate_share"]
    genes += ROUTES[genome.route].genes
    for record in records_used(genome):
        genes += RECORDS[record].genes
    for name in genome.filters:
        genes += FILTERS[name].genes
    return [*genes, *SCHEDULES[genome.schedule].genes]


def numeric_genes(genome: Genome) -> dict[str, tuple[float, float]]:
    """The numeric genes that change this design's protocol, with their ranges, for a
    numeric optimiser: scalar genes by name (whole numbers for :data:`INTEGER_GENES`), and
    each feature weight in use as ``weight:<feature>``. :func:`with_numbers` sets them."""
    expressed = set(expressed_genes(genome))
    out = {name: LIMITS[name] for name in LIMITS if name in expressed}
    out.update({f"weight:{name}": WEIGHT_RANGE for name, _ in genome.weights})
    return out


def with_numbers(genome: Genome, values: Mapping[str, float]) -> Genome:
    """``genome`` with the numeric genes of ``values`` (names as :func:`numeric_genes`
    gives them) set: clipped to their range, integer genes rounded, weights to 0.01."""
    changes: dict[str, Any] = {}
    weights = genome.weight_map
    for name, value in values.items():
        if name.startswith("weight:"):
            feature = name.removeprefix("weight:")
            if feature not in weights:
                raise ConfigError(f"genome: no weight for {feature!r} in this design")
            low, high = WEIGHT_RANGE
            weights[feature] = round(min(high, max(low, float(value))), 2)
        elif name in LIMITS:
            clipped = _clip(name, float(value))
            changes[name] = round(clipped) if name in INTEGER_GENES else round(clipped, 3)
        else:
            raise ConfigError(f"genome: {name!r} is not a numeric gene")
    changes["weights"] = tuple((f, weights[f]) for f, _ in genome.weights)
    return replace(genome, **changes)


def mutate(genome: Genome, rng: np.random.Generator) -> tuple[Genome, str]:
    """One random change of one expressed gene, and a sentence saying what changed."""
    genes = expressed_genes(genome)
    gene = genes[int(rng.integers(len(genes)))]
    if gene == "route":
        new: Any = str(rng.choice([r for r in ROUTES if r != genome.route]))
    elif gene == "schedule":
        new = str(rng.choice([s for s in SCHEDULES if s != genome.schedule]))
    elif gene == "regroup_every":
        new = int(rng.choice([v for v in REGROUP_EVERY_VALUES if v != genome.regroup_every]))
    elif gene == "weights":
        return _mutate_weights(genome, rng)
    elif gene == "filters":
        return _mutate_filters(genome, rng)
    elif gene == "horizon":
        new = int(_clip("horizon", round(genome.horizon * float(rng.choice([0.5, 0.7, 1.4, 2])))))
    elif gene in ("p_share", "failure_share", "mate_share"):
        new = round(_clip(gene, getattr(genome, gene) + float(rng.choice(SHARE_STEPS))), 2)
    elif gene == "rare_below":
        step = float(rng.choice([-0.1, -0.05, 0.05, 0.1]))
        new = round(_clip("rare_below", genome.rare_below + step), 2)
    elif gene == "noise":
        new = float(rng.choice([v for v in NOISE_VALUES if v != genome.noise]))
    else:
        step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        new = int(_clip(gene, getattr(genome, gene) + step))
    old = getattr(genome, gene)
    if new == old:
        return _mutate_weights(genome, rng)
    return replace(genome, **{gene: new}), f"changed {gene} from {old} to {new}"


def tune(genome: Genome, rng: np.random.Generator, scale: float = 0.15) -> tuple[Genome, str]:
    """Move the design's numeric genes (:func:`numeric_genes`) at once: each, with
    probability one half (at least one), by a normal step of ``scale`` times its range.
    A local step in every numeric direction, for a surrogate to choose among (a mutation
    changes one gene by a fixed amount)."""
    ranges = numeric_genes(genome)
    if not ranges:
        return mutate(genome, rng)
    names = sorted(ranges)
    moved = rng.random(len(names)) < 0.5
    moved[int(rng.integers(len(names)))] = True
    steps = rng.normal(0.0, scale, len(names))
    current = {
        **{n: float(getattr(genome, n)) for n in names if n in LIMITS},
        **{f"weight:{f}": w for f, w in genome.weights},
    }
    values = {
        n: _stepped(n, current[n], step, ranges[n])
        for n, step, move in zip(names, steps, moved, strict=True)
        if move
    }
    tuned = with_numbers(genome, values)
    changed = [n for n in values if _number(tuned, n) != current[n]]
    if not changed:
        return mutate(genome, rng)
    return tuned, "tuned " + ", ".join(
        f"{n} from {current[n]:g} to {_number(tuned, n):g}" for n in changed
    )


def _stepped(name: str, value: float, step: float, limits: tuple[float, float]) -> float:
    """``value`` moved by ``step`` of its range: on a log scale for the window, whose
    random draws are log-uniform too (3 to 6 attempts is as big a change as 75 to 150)."""
    low, high = limits
    if name == "horizon":
        return value * math.exp(step * math.log(high / low))
    return value + step * (high - low)


def _number(genome: Genome, name: str) -> float:
    if name.startswith("weight:"):
        return genome.weight_map[name.removeprefix("weight:")]
    return float(getattr(genome, name))


def _mutate_weights(genome: Genome, rng: np.random.Generator) -> tuple[Genome, str]:
    weights = genome.weight_map
    absent = [f for f in FEATURES if f not in weights]
    action = str(rng.choice(["add", "drop", "tune", "tune"]))
    if (action == "add" and absent) or not weights:
        name = str(rng.choice(absent))
        weights[name] = _weight(rng)
        note = f"started favouring {FEATURES[name].description} (weight {weights[name]})"
    elif action == "drop" and len(weights) > 1:
        name = str(rng.choice(sorted(weights)))
        del weights[name]
        note = f"stopped scoring {FEATURES[name].description}"
    else:
        name = str(rng.choice(sorted(weights)))
        old = weights[name]
        low, high = WEIGHT_RANGE
        new = round(min(high, max(low, old + float(rng.normal(0, 0.7)))), 2)
        if new == old:  # clipped at a bound: step back inside instead
            new = round(old - 0.5 if old >= high else old + 0.5, 2)
        weights[name] = new
        note = f"changed the weight of {FEATURES[name].description} from {old} to {weights[name]}"
    ordered = tuple((f, weights[f]) for f in FEATURES if f in weights)
    return replace(genome, weights=ordered), note


def _mutate_filters(genome: Genome, rng: np.random.Generator) -> tuple[Genome, str]:
    """Add a filter or drop one."""
    absent = [f for f in FILTERS if f not in genome.filters]
    if genome.filters and (not absent or rng.random() < 0.5):
        name = str(rng.choice(list(genome.filters)))
        kept = tuple(f for f in genome.filters if f != name)
        return replace(genome, filters=kept), f"stopped requiring {_filter_text(name, genome)}"
    name = str(rng.choice(absent))
    return replace(genome, filters=(*genome.filters, name)), (
        f"started sending only {_filter_text(name, genome)} (of that kind)"
    )


def _filter_text(name: str, g: Genome) -> str:
    return expand(FILTERS[name].description, g)


ROUTE_GENES = ("route", "peers", "group_size", "regroup_every")
CONTENT_GENES = ("weights", "filters", "rare_below", "horizon", "noise")
VOLUME_GENES = (
    "n_memories",
    "schedule",
    "p_share",
    "period",
    "window",
    "failure_share",
    "mate_share",
)


BLOCKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("routing", ROUTE_GENES),
    ("content", CONTENT_GENES),
    ("volume", VOLUME_GENES),
)


def crossover(a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, str]:
    """Routing, content and volume blocks each taken whole from one parent or the other,
    at least one from each (otherwise the child would be a copy of one of them)."""
    from_b = rng.random(len(BLOCKS)) < 0.5
    if from_b.all() or not from_b.any():
        flip = int(rng.integers(len(BLOCKS)))
        from_b[flip] = not from_b[flip]
    child: dict[str, Any] = {}
    for (_, genes), use_b in zip(BLOCKS, from_b, strict=True):
        source = b if use_b else a
        child.update({g: getattr(source, g) for g in genes})
    taken = [label for (label, _), use_b in zip(BLOCKS, from_b, strict=True) if use_b]
    return Genome(**child), f"took its {' and '.join(taken)} from the second parent"


def _jaccard_distance(a: set[str], b: set[str]) -> float:
    return 1.0 - len(a & b) / max(1, len(a | b))


def distance(a: Genome, b: Genome) -> float:
    """How different two designs are: differing block kinds count most."""
    d = 2.0 * (a.route != b.route) + 1.5 * (a.schedule != b.schedule)
    d += _jaccard_distance(set(a.weight_map), set(b.weight_map))
    d += _jaccard_distance(set(a.filters), set(b.filters))
    d += abs(a.n_memories - b.n_memories) / 20
    low, high = LIMITS["horizon"]
    d += abs(math.log(a.horizon / b.horizon)) / math.log(high / low)
    return d


# --- rendering ---------------------------------------------------------------------------


def _groups_sentence(g: Genome) -> str:
    regroup = f", regrouped every {g.regroup_every} steps" if g.regroup_every else ""
    return f"Agents form groups of {g.group_size}{regroup}"


def _what_is_sent(g: Genome) -> str:
    """What the filters let through, by kind: ": successes whose result ..., and failures
    of pairs ..." ("" without filters: any memory may go)."""
    if not g.filters:
        return ""
    rules = [FILTERS[f] for f in g.filters]

    def conditions(kind: str) -> list[str]:
        return [expand(r.condition, g) for r in rules if r.applies == kind and r.condition]

    successes = conditions("successes")
    if "successes" in g.filters:
        sent = " ".join(["only successes", " and ".join(successes)]).strip() + ", no failures"
    else:
        sent = "successes " + " and ".join(successes) if successes else "any success"
        failures = conditions("failures")
        sent += ", and " + ("failures " + " and ".join(failures) if failures else "any failure")
    both = conditions("memories")
    if both:
        sent += ", only memories " + " and ".join(both)
    return f": {sent};"


def _preferences(g: Genome) -> str:
    """How the memories that may go are ordered: the features by weight, largest first."""
    weights = sorted(g.weight_map.items(), key=lambda item: -abs(item[1]))
    liked = [f"{FEATURES[f].description} (weight {w:g})" for f, w in weights if w > 0]
    disliked = [f"{FEATURES[f].description} (weight {w:g})" for f, w in weights if w < 0]
    if not liked and not disliked:
        return "chosen at random"
    text = "favouring " + (", then ".join(liked) if liked else "nothing in particular")
    return text + (" and avoiding " + ", then ".join(disliked) if disliked else "")


def describe(g: Genome) -> str:
    """What the rendered protocol does, in plain words: who hears whom, what may be sent
    (by kind), in which order it is preferred, how much and when."""
    schedule = SCHEDULES[g.schedule]
    sent = _what_is_sent(g)
    passing = ""
    chance = f", each recipient with probability {g.p_share:g}" if g.p_share < 1 else ""
    caps = [
        f"at most {share:.0%} {kind}"
        for share, kind in ((g.failure_share, "failures"), (g.mate_share, "from group mates"))
        if share < 1
    ]
    if caps:
        passing += f" A recipient's memories are {' and '.join(caps)}."
    if "groups" in records_used(g) and g.route != "groups":
        passing += f" {_groups_sentence(g)}, for the rules about group mates."
    return (
        f"{expand(ROUTES[g.route].describe, g)}. Each recipient gets up to {g.n_memories} "
        f"memories from their last {g.horizon} attempts{sent or ','} {_preferences(g)}."
        f"{passing} Sharing happens {expand(schedule.when or schedule.summary, g)}{chance}."
    )


# Templates at column 0: fill() indents each block to its placeholder's column.
_MODULE = '''"""$doc

Built by tpdisc's offline proposer from its library of building blocks.
"""

import numpy as np


class TransmissionProtocol:
    $methods
'''
_METHOD = """def $signature:
    $doc
    $body"""
_INIT = """self.n_agents = n_agents
self.n_steps = n_steps
# np.random is seeded before each simulation, so this stream is reproducible
self.rng = np.random.default_rng(np.random.randint(2**31))
self.horizon = $horizon
self.memories_sent = 0
self.active_steps = 0
self.agents = np.arange(n_agents)
# What the agents own and attempted, as arrays over ids, taken in as it comes:
# states only ever grow, so a step costs what it added, not all made before it.
self.ids = {None: 0}  # element name -> id; 0 stands for a failure's missing result
self.pairs = {}  # (lower, higher) ingredient ids -> id of the unordered pair
self.items_read = [0] * n_agents
self.count = np.zeros(n_agents, dtype=np.int64)  # memories read, per agent
self.owned = np.zeros((n_agents, 64), dtype=bool)  # owned[agent, element]
# memory[:, agent, k]: ids of the first ingredient, the second, the result and
# the pair of the agent's k-th attempt
self.memory = np.zeros((4, n_agents, n_steps), dtype=np.int64)
$records
$route
$schedule"""
# Every design shares the same way; the genes decide who hears whom, which memories may go,
# how they are ranked and how many go.
_SHARE_MEMORIES = """self.read(agent_states)
$per_step
quota = self.quota(i_step)
if quota <= 0:
    return {}
self.active_steps += 1
sender, index = self.window()
first, second, result, recipe = self.memory[:, sender, index]
$step_inputs
$prefilter
if not sender.size:
    return {}
$inputs
# rows are recipients, columns candidates
score = np.zeros((self.n_agents, sender.size))
$score
# nothing from agents the recipient does not hear (nor from itself)
blocked = ~self.senders(i_step)[:, sender]
$filters
score[blocked] = -np.inf
$caps
return self.pick(score, sender, index, result, recipe, quota)"""
_PREFILTER = """# rules that hold for every recipient drop candidates before anything is scored
keep = np.ones(sender.size, dtype=bool)
$code
sender, index, first, second, result, recipe = (
    a[keep] for a in (sender, index, first, second, result, recipe)
)"""
_READ = """for agent in range(self.n_agents):
    state = agent_states[agent]
    items = state["inventory"]
    for name in items[self.items_read[agent] :]:
        e = self.id_of(name)
        self.owned[agent, e] = True
    self.items_read[agent] = len(items)
    memories = state["memories"]
    for k in range(self.count[agent], len(memories)):
        e1, e2, result = memories[k]
        a, b, r = self.id_of(e1), self.id_of(e2), self.id_of(result)
        pair = self.pairs.setdefault((min(a, b), max(a, b)), len(self.pairs))
        if k == self.memory.shape[2]:  # more attempts than steps: make room
            self.memory = np.pad(self.memory, ((0, 0), (0, 0), (0, k)))
        self.memory[:, agent, k] = a, b, r, pair
        $on_memory
    self.count[agent] = len(memories)"""
_ID_OF = """e = self.ids.get(name)
if e is None:
    e = self.ids[name] = len(self.ids)
    if e == self.owned.shape[1]:  # double every array over elements
        more = e
        self.owned = np.pad(self.owned, ((0, 0), (0, more)))
        $grow
return e"""
_WINDOW = """width = min(self.horizon, int(self.count.max()))
index = (self.count - 1 - np.arange(width)[:, None]).ravel()
sender = np.tile(self.agents, width)
made = index >= 0  # agents with fewer memories than the window
return sender[made], index[made]"""
_PICK = """rows = self.agents[:, None]
size = score.shape[1]
# order only each row's best few, with room for copies of one recipe (twice as many
# while copies leave a row short)
look = min(size, 2 * quota + 4)
while True:
    top = np.argpartition(-score, look - 1, axis=1)[:, :look]
    top = top[rows, np.argsort(-score[rows, top], axis=1)]
    usable = score[rows, top] > -np.inf
    # the first (best) copy of each recipe in each row
    key = recipe[top] + rows * (int(recipe.max()) + 1)
    best = np.zeros(key.size, dtype=bool)
    best[np.unique(key, return_index=True)[1]] = True
    keep = best.reshape(key.shape) & usable
    short = (keep.sum(axis=1) < quota) & usable[:, -1]
    if look == size or not short.any():
        break
    look = min(size, 2 * look)
keep &= np.cumsum(keep, axis=1) <= quota
$sampling
who, rank = np.nonzero(keep)
chosen = top[who, rank]
$on_send
pairs = list(zip(sender[chosen].tolist(), index[chosen].tolist()))
exchanges = {}
start = 0
for recipient, n_sent in enumerate(keep.sum(axis=1).tolist()):
    if n_sent:
        exchanges[recipient] = pairs[start : start + n_sent]
        start += n_sent
self.memories_sent += len(pairs)
return exchanges"""
# A cap keeps each row's best few of a kind (copies of a recipe count each), by
# ruling out the rest before anything is picked: (cap + 1)-th best and below.
_FAILURE_CAP = """# failures take at most $share of the quota (the best ones)
cap = int($share * quota)
if cap < sender.size:
    failed = result == 0
    bar = -np.partition(-np.where(failed, score, -np.inf), cap, axis=1)[:, cap : cap + 1]
    score[failed & (score <= bar)] = -np.inf"""
_MATE_CAP = """# group mates take at most $share of the quota (their best ones), others the rest
cap = int($share * quota)
if cap < sender.size:
    mate = self.mates[:, sender]
    bar = -np.partition(-np.where(mate, score, -np.inf), cap, axis=1)[:, cap : cap + 1]
    score[mate & (score <= bar)] = -np.inf"""
_SAMPLING = """# each recipient is served with probability $p_share
keep &= (self.rng.random(self.n_agents) < $p_share)[:, None]"""
_GET_LOGS = """return [
    {
        "metric_name": "memories_sent",
        "metric_description": "memories sent over the whole game, all recipients",
        "metric_value": float(self.memories_sent),
    },
    {
        "metric_name": "active_steps",
        "metric_description": "steps in which the schedule allowed sharing",
        "metric_value": float(self.active_steps),
    },
]"""


def _method(signature: str, body: str, doc: str = "") -> str:
    return fill(_METHOD, signature=signature, doc=f'"""{doc}"""' if doc else "", body=body)


def _score_code(g: Genome) -> str:
    if g.noise:
        lines = [
            "# a little randomness breaks ties and keeps exploring",
            f"score += {g.noise:g} * self.rng.random(score.shape)",
        ]
    else:
        lines = [
            "# among equal scores, the most recent memory first",
            "score -= 1e-9 * np.arange(sender.size)",
        ]
    for name, weight in g.weights:
        feature = FEATURES[name]
        lines.append(f"# {feature.comment}" + (" count against a memory" if weight < 0 else ""))
        lines.append(fill(feature.code, op="-=" if weight < 0 else "+=", w=f"{abs(weight):g}"))
    return "\n".join(lines)


def _filter_code(g: Genome, per: str) -> list[str]:
    lines = []
    for name in g.filters:
        rule = FILTERS[name]
        if rule.per == per:
            lines += [f"# only {_filter_text(name, g)}", expand(rule.code, g)]
    return lines


def _prefilter(g: Genome) -> str:
    code = _filter_code(g, "candidate")
    return fill(_PREFILTER, code="\n".join(code)) if code else ""


def _inputs(g: Genome, per: str) -> str:
    return "\n".join(INPUTS[i].code for i in inputs_used(g) if INPUTS[i].per == per)


def _records(g: Genome, part: str) -> str:
    lines = []
    for name in records_used(g):
        snippet = getattr(RECORDS[name], part)
        if snippet:
            lines.append(expand(snippet, g))
    return "\n".join(lines)


def render(g: Genome) -> str:
    """Readable protocol source for genome ``g``."""
    route, schedule = ROUTES[g.route], SCHEDULES[g.schedule]
    caps = "\n".join(
        fill(template, share=f"{share:g}")
        for share, template in ((g.failure_share, _FAILURE_CAP), (g.mate_share, _MATE_CAP))
        if share < 1
    )
    share = fill(
        _SHARE_MEMORIES,
        per_step=_records(g, "per_step"),
        step_inputs=_inputs(g, "step"),
        prefilter=_prefilter(g),
        inputs=_inputs(g, "candidate"),
        score=_score_code(g),
        filters="\n".join(_filter_code(g, "recipient")),
        caps=caps,
    )
    init = fill(
        _INIT,
        horizon=g.horizon,
        records=_records(g, "init"),
        route=expand(route.init, g),
        schedule=expand(schedule.init, g),
    )
    sampling = fill(_SAMPLING, p_share=f"{g.p_share:g}") if g.p_share < 1 else ""
    methods = [
        _method("__init__(self, n_agents, n_steps)", init),
        _method("share_memories(self, i_step, agent_states)", share),
        _method(
            "read(self, agent_states)",
            fill(_READ, on_memory=_records(g, "on_memory")),
            "Take in what each agent owns and attempted since the last step.",
        ),
        _method(
            "id_of(self, name)",
            fill(_ID_OF, grow=_records(g, "grow")),
            "An element's id, given on first sight; arrays over elements grow with the ids.",
        ),
        _method(
            "window(self)",
            _WINDOW,
            "The candidates: every agent's last `horizon` memories, most recent first, as\n"
            "(sender, memory index) arrays.",
        ),
        _method(
            "senders(self, i_step)",
            expand(route.senders, g),
            f"hears[recipient, sender]: {expand(route.summary, g)}.",
        ),
        _method(
            "quota(self, i_step)",
            expand(schedule.quota, g),
            f"Memories per recipient now: {expand(schedule.summary, g)}.",
        ),
        _method(
            "pick(self, score, sender, index, result, recipe, quota)",
            fill(_PICK, sampling=sampling, on_send=_records(g, "on_send")),
            "Each recipient's `quota` best candidates, the best copy of each recipe only,\n"
            "none scored -inf: {recipient: [(sender, memory index), ...]}.",
        ),
    ]
    methods += [expand(RECORDS[r].methods, g) for r in records_used(g) if RECORDS[r].methods]
    methods.append(_method("get_logs(self)", _GET_LOGS))
    return fill(_MODULE, doc=textwrap.fill(describe(g), 88), methods="\n\n".join(methods))


def logging_notes() -> str:
    return (
        "get_logs records memories_sent (total memories routed, a measure of volume) and "
        "active_steps (steps where the schedule shared), to tell volume from content."
    )


def seed_genome(name: str) -> Genome | None:
    return BASELINE_GENOMES.get(name)


def most_different(explored: Sequence[Genome], rng: np.random.Generator, tries: int = 24) -> Genome:
    """The random genome farthest from everything ``explored`` (max of min distance)."""
    best: Genome | None = None
    best_d = -1.0
    for _ in range(tries):
        candidate = random_genome(rng)
        d = min((distance(candidate, e) for e in explored), default=0.0)
        if d > best_d:
            best, best_d = candidate, d
    assert best is not None
    return best
