"""A typed library of protocol building blocks, rendered as readable Python.

A :class:`Genome` says, in a few typed genes, *to whom* memories go (routing), *what* is
sent (a weighted score over features of each memory, among each sender's most recent
ones), *how much* and *when* (a schedule). :func:`render` turns a genome into an ordinary
protocol source file that uses only the allowed imports, with comments saying what each
part does; it goes through the same sandbox, archive and fitness path as any other code.
:func:`mutate` and :func:`crossover` are the search operators of the offline proposer.
The options of the choice genes (routes, score features, schedules) are entries of
:mod:`tpdisc.search.genes`, each with its own description and code.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from tpdisc.errors import ConfigError
from tpdisc.search.genes import FEATURES, ROUTES, SCHEDULES, SCORE_INPUTS, expand, fill

LIMITS: dict[str, tuple[float, float]] = {
    "peers": (1, 9),
    "group_size": (2, 6),
    "regroup_every": (0, 60),
    "horizon": (3, 60),
    "n_memories": (1, 20),
    "p_share": (0.1, 1.0),
    "period": (2, 8),
    "window": (2, 12),
    "noise": (0.0, 2.0),
}
WEIGHT_RANGE = (-1.0, 3.0)
# Shared by random designs and mutations, so both explore the same values.
REGROUP_EVERY_VALUES = (0, 5, 10, 20, 40)
NOISE_VALUES = (0.0, 0.05, 0.1, 0.3, 1.0)


@dataclass(frozen=True)
class Genome:
    """The genes of a block-built protocol; see the module docstring."""

    route: str = "random_peers"
    peers: int = 3  # senders per recipient (random_peers, ring, richest)
    group_size: int = 3  # groups
    regroup_every: int = 0  # groups: steps between reshuffles, 0 for fixed groups
    weights: tuple[tuple[str, float], ...] = ()  # feature → weight; none means random picks
    horizon: int = 30  # candidates are each sender's last ``horizon`` memories
    n_memories: int = 10  # memories per recipient in a full step
    schedule: str = "always"
    p_share: float = 1.0  # chance that a recipient is served in an active step
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
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Genome:
        data = dict(data)
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"genome: unknown gene(s) {', '.join(sorted(unknown))}")
        data["weights"] = tuple((str(k), float(v)) for k, v in data.get("weights", ()))
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


# --- random genomes and operators ---------------------------------------------------------


def _int(rng: np.random.Generator, name: str) -> int:
    low, high = LIMITS[name]
    return int(rng.integers(int(low), int(high) + 1))


def _weight(rng: np.random.Generator) -> float:
    return round(float(rng.uniform(*WEIGHT_RANGE)), 2)


def random_weights(rng: np.random.Generator) -> tuple[tuple[str, float], ...]:
    names = list(FEATURES)
    k = int(rng.integers(1, 4))
    chosen = sorted(rng.choice(len(names), size=k, replace=False))
    return tuple((names[i], _weight(rng)) for i in chosen)


def random_genome(rng: np.random.Generator) -> Genome:
    return Genome(
        route=str(rng.choice(list(ROUTES))),
        peers=_int(rng, "peers"),
        group_size=_int(rng, "group_size"),
        regroup_every=int(rng.choice(REGROUP_EVERY_VALUES)),
        weights=random_weights(rng),
        horizon=_int(rng, "horizon"),
        n_memories=_int(rng, "n_memories"),
        schedule=str(rng.choice(list(SCHEDULES))),
        p_share=round(float(rng.uniform(0.3, 1.0)), 2),
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
    genes = ["route", "weights", "weights", "weights", "horizon", "n_memories", "n_memories"]
    genes += ["schedule", "p_share", "noise"]
    return [*genes, *ROUTES[genome.route].genes, *SCHEDULES[genome.schedule].genes]


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
    elif gene == "horizon":
        new = int(_clip("horizon", round(genome.horizon * float(rng.choice([0.5, 0.7, 1.4, 2])))))
    elif gene == "p_share":
        new = round(_clip("p_share", genome.p_share + float(rng.choice([-0.2, -0.1, 0.1, 0.2]))), 2)
    elif gene == "noise":
        new = float(rng.choice([v for v in NOISE_VALUES if v != genome.noise]))
    else:
        step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        new = int(_clip(gene, getattr(genome, gene) + step))
    old = getattr(genome, gene)
    if new == old:
        return _mutate_weights(genome, rng)
    return replace(genome, **{gene: new}), f"changed {gene} from {old} to {new}"


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


ROUTE_GENES = ("route", "peers", "group_size", "regroup_every")
CONTENT_GENES = ("weights", "horizon", "noise")
VOLUME_GENES = ("n_memories", "schedule", "p_share", "period", "window")


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


def distance(a: Genome, b: Genome) -> float:
    """How different two designs are: differing block kinds count most."""
    d = 2.0 * (a.route != b.route) + 1.5 * (a.schedule != b.schedule)
    fa, fb = set(a.weight_map), set(b.weight_map)
    d += 1.0 - len(fa & fb) / max(1, len(fa | fb))
    d += abs(a.n_memories - b.n_memories) / 20 + abs(a.horizon - b.horizon) / 60
    return d


# --- rendering ---------------------------------------------------------------------------


def describe(g: Genome) -> str:
    """What the rendered protocol does, in plain words."""
    schedule = SCHEDULES[g.schedule]
    weights = g.weight_map
    if weights:
        liked = [FEATURES[f].description for f, w in weights.items() if w > 0]
        disliked = [FEATURES[f].description for f, w in weights.items() if w < 0]
        what = "favouring " + (", ".join(liked) if liked else "nothing in particular")
        if disliked:
            what += " and avoiding " + ", ".join(disliked)
    else:
        what = "chosen at random"
    chance = f", each recipient with probability {g.p_share:g}" if g.p_share < 1 else ""
    return (
        f"{expand(ROUTES[g.route].describe, g)}. Each recipient gets up to {g.n_memories} "
        f"memories from their last {g.horizon} attempts, {what}. "
        f"Sharing happens {expand(schedule.when or schedule.summary, g)}{chance}."
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
$route
$schedule"""
# Every design shares the same way; the genes decide who the senders are, how many
# memories go and how they are ranked.
_SHARE_MEMORIES = """owned = {a: set(s["inventory"]) for a, s in agent_states.items()}
$step_inputs
$route_step
quota = self.quota(i_step, owned)
if quota <= 0:
    return {}
self.active_steps += 1
exchanges = {}
for recipient in range(self.n_agents):
    $sampling
    mine = owned[recipient]
    $recipient_inputs
    pool = []
    seen = set()
    for sender in self.senders(i_step, recipient, owned):
        memories = agent_states[sender]["memories"]
        for index in range(max(0, len(memories) - self.horizon), len(memories)):
            e1, e2, result = memories[index]
            pair = (min(e1, e2), max(e1, e2))
            if pair in seen:  # one copy of each recipe is enough
                continue
            seen.add(pair)
            age = len(memories) - 1 - index
            score = self.score(e1, e2, result, age, $score_args)
            pool.append((score, sender, index))
    pool.sort(reverse=True)
    chosen = [(sender, index) for _, sender, index in pool[:quota]]
    if chosen:
        exchanges[recipient] = chosen
        self.memories_sent += len(chosen)
return exchanges"""
_SAMPLING = """if self.rng.random() >= $p_share:
    continue"""
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
    lines = ["score = 0.0"]
    for name, weight in g.weights:
        feature = FEATURES[name]
        lines.append(f"# {feature.comment}" + (" count against a memory" if weight < 0 else ""))
        lines.append(fill(feature.code, op="-=" if weight < 0 else "+=", w=f"{abs(weight):g}"))
    if g.noise:
        lines.append("# a little randomness breaks ties and keeps exploring")
        lines.append(f"score += {g.noise:g} * self.rng.random()")
    lines.append("return score")
    return "\n".join(lines)


def _score_inputs(g: Genome, per: str) -> str:
    read = {name for feature, _ in g.weights for name in FEATURES[feature].reads}
    return "\n".join(
        i.code if i.name in read else i.stand_in for i in SCORE_INPUTS.values() if i.per == per
    )


def render(g: Genome) -> str:
    """Readable protocol source for genome ``g``."""
    route, schedule = ROUTES[g.route], SCHEDULES[g.schedule]
    score_args = ", ".join(["mine", *SCORE_INPUTS])
    share = fill(
        _SHARE_MEMORIES,
        step_inputs=_score_inputs(g, "step"),
        route_step=expand(route.per_step, g),
        sampling=fill(_SAMPLING, p_share=f"{g.p_share:g}") if g.p_share < 1 else "",
        recipient_inputs=_score_inputs(g, "recipient"),
        score_args=score_args,
    )
    init = fill(
        _INIT, horizon=g.horizon, route=expand(route.init, g), schedule=expand(schedule.init, g)
    )
    methods = [
        _method("__init__(self, n_agents, n_steps)", init),
        _method("share_memories(self, i_step, agent_states)", share),
        _method(
            "senders(self, i_step, recipient, owned)",
            expand(route.senders, g),
            f"Who the recipient learns from: {expand(route.summary, g)}.",
        ),
        _method(
            "quota(self, i_step, owned)",
            expand(schedule.quota, g),
            f"Memories per recipient now: {expand(schedule.summary, g)}.",
        ),
        _method(
            f"score(self, e1, e2, result, age, {score_args})",
            _score_code(g),
            "How useful a memory is to this recipient (higher is sent first).",
        ),
    ]
    if route.methods:
        methods.append(expand(route.methods, g))
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
