"""A typed library of protocol building blocks, rendered as readable Python.

A :class:`Genome` says, in a few typed genes, *to whom* memories go (routing), *what* is
sent (a weighted score over features of each memory, among each sender's most recent
ones), *how much* and *when* (a schedule). :func:`render` turns a genome into an ordinary
protocol source file that uses only the allowed imports, with comments saying what each
part does; it goes through the same sandbox, archive and fitness path as any other code.
:func:`mutate` and :func:`crossover` are the search operators of the offline proposer.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from tpdisc.errors import ConfigError

ROUTES: dict[str, str] = {
    "everyone": "every recipient learns from all other agents",
    "random_peers": "every recipient learns from a fresh random set of peers each step",
    "ring": "agents sit on a ring and learn from their nearest neighbours",
    "groups": "agents form small groups and learn from their group mates",
    "richest": "every recipient learns from the agents owning most elements it lacks",
}
FEATURES: dict[str, str] = {
    "recency": "recent attempts",
    "success": "successful attempts",
    "failure": "failed attempts",
    "lacking_result": "successes whose result the recipient lacks",
    "actionable": "attempts whose ingredients the recipient owns",
    "rarity": "results few agents own",
    "untried": "pairs the recipient has not tried",
}
SCHEDULES: dict[str, str] = {
    "always": "every step",
    "periodic": "every few steps",
    "adaptive": "in full when the group stalls, a little otherwise",
    "ramp_up": "more and more as the game goes on",
    "ramp_down": "a lot early, less and less later",
}

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
        regroup_every=int(rng.choice([0, 5, 10, 20, 40])),
        weights=random_weights(rng),
        horizon=_int(rng, "horizon"),
        n_memories=_int(rng, "n_memories"),
        schedule=str(rng.choice(list(SCHEDULES))),
        p_share=round(float(rng.uniform(0.3, 1.0)), 2),
        period=_int(rng, "period"),
        window=_int(rng, "window"),
        noise=float(rng.choice([0.0, 0.05, 0.1, 0.3, 1.0])),
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
    if genome.route in ("random_peers", "ring", "richest"):
        genes.append("peers")
    if genome.route == "groups":
        genes += ["group_size", "regroup_every"]
    if genome.schedule == "periodic":
        genes.append("period")
    if genome.schedule == "adaptive":
        genes.append("window")
    return genes


def mutate(genome: Genome, rng: np.random.Generator) -> tuple[Genome, str]:
    """One random change of one expressed gene, and a sentence saying what changed."""
    genes = expressed_genes(genome)
    gene = genes[int(rng.integers(len(genes)))]
    if gene == "route":
        new: Any = str(rng.choice([r for r in ROUTES if r != genome.route]))
    elif gene == "schedule":
        new = str(rng.choice([s for s in SCHEDULES if s != genome.schedule]))
    elif gene == "regroup_every":
        new = int(rng.choice([v for v in (0, 5, 10, 20, 40) if v != genome.regroup_every]))
    elif gene == "weights":
        return _mutate_weights(genome, rng)
    elif gene == "horizon":
        new = int(_clip("horizon", round(genome.horizon * float(rng.choice([0.5, 0.7, 1.4, 2])))))
    elif gene == "p_share":
        new = round(_clip("p_share", genome.p_share + float(rng.choice([-0.2, -0.1, 0.1, 0.2]))), 2)
    elif gene == "noise":
        new = float(rng.choice([v for v in (0.0, 0.05, 0.1, 0.3, 1.0) if v != genome.noise]))
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
        note = f"started favouring {FEATURES[name]} (weight {weights[name]})"
    elif action == "drop" and len(weights) > 1:
        name = str(rng.choice(sorted(weights)))
        del weights[name]
        note = f"stopped scoring {FEATURES[name]}"
    else:
        name = str(rng.choice(sorted(weights)))
        old = weights[name]
        low, high = WEIGHT_RANGE
        new = round(min(high, max(low, old + float(rng.normal(0, 0.7)))), 2)
        if new == old:  # clipped at a bound: step back inside instead
            new = round(old - 0.5 if old >= high else old + 0.5, 2)
        weights[name] = new
        note = f"changed the weight of {FEATURES[name]} from {old} to {weights[name]}"
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
    who = {
        "everyone": "Every agent learns from all the others",
        "random_peers": f"Every agent learns from {g.peers} randomly drawn peers each step",
        "ring": f"Agents sit on a ring and each learns from its {g.peers} nearest neighbours",
        "groups": (
            f"Agents form groups of {g.group_size} and learn from their group mates"
            + (f", regrouped every {g.regroup_every} steps" if g.regroup_every else "")
        ),
        "richest": (f"Every agent learns from the {g.peers} agents owning most elements it lacks"),
    }[g.route]
    weights = g.weight_map
    if weights:
        liked = [FEATURES[f] for f, w in weights.items() if w > 0]
        disliked = [FEATURES[f] for f, w in weights.items() if w < 0]
        what = "favouring " + (", ".join(liked) if liked else "nothing in particular")
        if disliked:
            what += " and avoiding " + ", ".join(disliked)
    else:
        what = "chosen at random"
    when = SCHEDULES[g.schedule]
    if g.schedule == "periodic":
        when = f"every {g.period} steps"
    chance = f", each recipient with probability {g.p_share:g}" if g.p_share < 1 else ""
    return (
        f"{who}. Each recipient gets up to {g.n_memories} memories from their last {g.horizon} "
        f"attempts, {what}. Sharing happens {when}{chance}."
    )


def _senders_code(g: Genome) -> tuple[str, str]:
    """(lines for __init__, body of the senders method)."""
    if g.route == "everyone":
        return "", "return [a for a in range(self.n_agents) if a != recipient]"
    if g.route == "random_peers":
        return "", (
            "others = [a for a in range(self.n_agents) if a != recipient]\n"
            f"k = min({g.peers}, len(others))\n"
            "picked = self.rng.choice(len(others), size=k, replace=False)\n"
            "return [others[int(i)] for i in picked]"
        )
    if g.route == "ring":
        offsets = tuple((k // 2 + 1) * (1 if k % 2 == 0 else -1) for k in range(g.peers))
        init = (
            f"# the {g.peers} nearest seats on the ring, alternating right and left\n"
            f"offsets = {offsets}\n"
            "self.neighbours = [\n"
            "    sorted({(a + d) % n_agents for d in offsets} - {a}) for a in range(n_agents)\n"
            "]"
        )
        return init, "return self.neighbours[recipient]"
    if g.route == "groups":
        init = "self.mates = self.make_groups()"
        return init, "return self.mates[recipient]"
    return "", (
        "lacking = {\n"
        "    a: len(owned[a] - owned[recipient]) for a in range(self.n_agents) if a != recipient\n"
        "}\n"
        "ranked = sorted(lacking, key=lambda a: (-lacking[a], a))\n"
        f"return [a for a in ranked[:{g.peers}] if lacking[a] > 0]"
    )


_FEATURE_CODE = {
    "recency": ("score += {w} / (1.0 + age)", "recent attempts"),
    "success": ("if result is not None:\n    score += {w}", "successes"),
    "failure": ("if result is None:\n    score += {w}", "failures"),
    "lacking_result": (
        "if result is not None and result not in mine:\n    score += {w}",
        "results the recipient lacks",
    ),
    "actionable": (
        "score += {w} * ((e1 in mine) + (e2 in mine)) / 2",
        "ingredients the recipient owns",
    ),
    "rarity": (
        "if result is not None:\n    score += {w} * (1.0 - holders.get(result, 0) / self.n_agents)",
        "results few agents own",
    ),
    "untried": (
        "if frozenset((e1, e2)) not in tried:\n    score += {w}",
        "pairs the recipient never tried",
    ),
}


def _score_code(g: Genome) -> str:
    lines = ["score = 0.0"]
    for name, weight in g.weights:
        code, why = _FEATURE_CODE[name]
        lines.append(f"# {why}" + (" count against a memory" if weight < 0 else ""))
        if weight < 0:
            code = code.replace("score += {w}", "score -= {w}")
        lines += code.format(w=f"{abs(weight):g}").split("\n")
    if g.noise:
        lines.append("# a little randomness breaks ties and keeps exploring")
        lines.append(f"score += {g.noise:g} * self.rng.random()")
    lines.append("return score")
    return "\n".join(lines)


def _quota_code(g: Genome) -> tuple[str, str]:
    """(lines for __init__, body of the quota method)."""
    n = g.n_memories
    if g.schedule == "always":
        return "", f"return {n}"
    if g.schedule == "periodic":
        return "", f"return {n} if (i_step + 1) % {g.period} == 0 else 0"
    if g.schedule == "ramp_up":
        return "", f"return max(1, round({n} * (i_step + 1) / self.n_steps))"
    if g.schedule == "ramp_down":
        return "", f"return max(1, round({n} * (1 - i_step / self.n_steps)))"
    init = "self.coverage_history = []"
    body = (
        "# group progress: how many distinct elements the agents own together\n"
        "coverage = len(set().union(*owned.values()))\n"
        "self.coverage_history.append(coverage)\n"
        f"stalled = len(self.coverage_history) > {g.window} and (\n"
        f"    self.coverage_history[-1] == self.coverage_history[-1 - {g.window}]\n"
        ")\n"
        f"return {n} if stalled else max(1, {n} // 3)"
    )
    return init, body


def _indent(code: str, spaces: int) -> str:
    return textwrap.indent(code, " " * spaces) if code else ""


def render(g: Genome) -> str:
    """Readable protocol source for genome ``g``."""
    features = g.weight_map
    route_init, senders_body = _senders_code(g)
    quota_init, quota_body = _quota_code(g)
    init_lines = [
        "self.n_agents = n_agents",
        "self.n_steps = n_steps",
        "# np.random is seeded before each simulation, so this stream is reproducible",
        "self.rng = np.random.default_rng(np.random.randint(2**31))",
        f"self.horizon = {g.horizon}",
        "self.memories_sent = 0",
        "self.active_steps = 0",
    ]
    if route_init:
        init_lines += route_init.split("\n")
    if quota_init:
        init_lines += quota_init.split("\n")
    per_step = ['owned = {a: set(s["inventory"]) for a, s in agent_states.items()}']
    if "rarity" in features:
        per_step += [
            "holders = {}",
            "for items in owned.values():",
            "    for item in items:",
            "        holders[item] = holders.get(item, 0) + 1",
        ]
    else:
        per_step.append("holders = {}")
    if g.route == "groups" and g.regroup_every:
        per_step += [
            f"if i_step and i_step % {g.regroup_every} == 0:",
            "    self.mates = self.make_groups()",
        ]
    per_recipient = []
    if g.p_share < 1:
        per_recipient += [f"if self.rng.random() >= {g.p_share:g}:", "    continue"]
    per_recipient.append("mine = owned[recipient]")
    if "untried" in features:
        per_recipient.append(
            'tried = {frozenset((m[0], m[1])) for m in agent_states[recipient]["memories"]}'
        )
    else:
        per_recipient.append("tried = set()")
    groups_method = ""
    if g.route == "groups":
        groups_method = f'''
    def make_groups(self):
        """Random groups of {g.group_size}; each agent's mates are the rest of its group."""
        order = [int(a) for a in self.rng.permutation(self.n_agents)]
        groups = [order[i : i + {g.group_size}] for i in range(0, self.n_agents, {g.group_size})]
        if len(groups) > 1 and len(groups[-1]) < 2:  # nobody stays alone
            last = groups.pop()
            groups[-1] += last
        return {{a: [b for b in group if b != a] for group in groups for a in group}}
'''
    return f'''"""{textwrap.fill(describe(g), 88, subsequent_indent="")}

Built by tpdisc's offline proposer from its library of building blocks.
"""

import numpy as np


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
{_indent(chr(10).join(init_lines), 8)}

    def share_memories(self, i_step, agent_states):
{_indent(chr(10).join(per_step), 8)}
        quota = self.quota(i_step, owned)
        if quota <= 0:
            return {{}}
        self.active_steps += 1
        exchanges = {{}}
        for recipient in range(self.n_agents):
{_indent(chr(10).join(per_recipient), 12)}
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
                    score = self.score(e1, e2, result, age, mine, tried, holders)
                    pool.append((score, sender, index))
            pool.sort(reverse=True)
            chosen = [(sender, index) for _, sender, index in pool[:quota]]
            if chosen:
                exchanges[recipient] = chosen
                self.memories_sent += len(chosen)
        return exchanges

    def senders(self, i_step, recipient, owned):
        """Who the recipient learns from: {ROUTES[g.route]}."""
{_indent(senders_body, 8)}

    def quota(self, i_step, owned):
        """Memories per recipient now: {SCHEDULES[g.schedule]}."""
{_indent(quota_body, 8)}

    def score(self, e1, e2, result, age, mine, tried, holders):
        """How useful a memory is to this recipient (higher is sent first)."""
{_indent(_score_code(g), 8)}
{groups_method}
    def get_logs(self):
        return [
            {{
                "metric_name": "memories_sent",
                "metric_description": "memories sent over the whole game, all recipients",
                "metric_value": float(self.memories_sent),
            }},
            {{
                "metric_name": "active_steps",
                "metric_description": "steps in which the schedule allowed sharing",
                "metric_value": float(self.active_steps),
            }},
        ]
'''


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
