"""The offline proposer's building blocks: every design renders to a working protocol that
does what its description says, at a cost that does not grow with the history."""

from __future__ import annotations

import ast
import dataclasses
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.protocols.loader import SourceProtocol, load_protocol_class
from tpdisc.search import blocks
from tpdisc.search.genes import FILTERS
from tpdisc.search.prompts import ALLOWED_IMPORTS
from tpdisc.search.validation import precheck_problems
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation


def designs() -> list[blocks.Genome]:
    """Random designs plus one of every route and schedule, so each block is rendered."""
    rng = np.random.default_rng(3)
    out = [blocks.random_genome(rng) for _ in range(10)]
    base = blocks.Genome(
        weights=tuple((f, 1.0) for f in blocks.FEATURES),
        filters=("rare", "unsent", "repeatable"),
        p_share=0.7,
    )
    out += [replace(base, route=r, regroup_every=5) for r in blocks.ROUTES]
    out += [replace(base, schedule=s) for s in blocks.SCHEDULES]
    out += [replace(base, weights=(("success", -0.5),), noise=0.0)]
    return out


@pytest.mark.parametrize("genome", designs(), ids=lambda g: f"{g.route}-{g.schedule}")
def test_rendered_design_is_a_working_protocol(genome: blocks.Genome, toy_graph) -> None:
    source = blocks.render(genome)
    tree = ast.parse(source)
    imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imports <= set(ALLOWED_IMPORTS)
    assert precheck_problems(source) == []
    spec = SourceProtocol("g", source, "g", trusted=True)
    config = SimConfig(n_agents=5, n_steps=12)
    first = run_simulation(make_domain(toy_graph), config, spec, 1)
    again = run_simulation(make_domain(toy_graph), config, spec, 1)
    assert first.curve == again.curve  # reproducible from the seed
    logs = {entry["metric_name"]: entry["metric_value"] for entry in first.protocol_logs}
    assert set(logs) == {"memories_sent", "active_steps"}
    assert logs["memories_sent"] == first.schedule.total_sent()


def test_description_and_code_say_the_same_thing() -> None:
    genome = blocks.Genome(
        route="ring",
        peers=4,
        weights=(("recency", 2.0), ("failure", -1.0)),
        n_memories=7,
        horizon=12,
        schedule="periodic",
        period=4,
    )
    text = blocks.describe(genome)
    assert "ring" in text and "4 nearest" in text and "up to 7 memories" in text
    assert "favouring recent attempts" in text and "avoiding failed attempts" in text
    assert "every 4 steps" in text
    source = blocks.render(genome)
    assert "score += 2 / (1.0 + age)" in source and "score -= 1" in source
    assert "% 4 == 0" in source and "self.horizon = 12" in source


def test_genome_json_round_trip_and_validation() -> None:
    genome = blocks.random_genome(np.random.default_rng(0))
    assert blocks.Genome.from_json(genome.to_json()) == genome
    with pytest.raises(ConfigError, match="route"):
        blocks.Genome(route="telepathy")
    with pytest.raises(ConfigError, match="n_memories"):
        blocks.Genome(n_memories=50)
    with pytest.raises(ConfigError, match="feature"):
        blocks.Genome(weights=(("luck", 1.0),))
    with pytest.raises(ConfigError, match="gene"):
        blocks.Genome.from_json({"colour": "blue"})


def test_mutation_changes_one_gene_and_says_so() -> None:
    rng = np.random.default_rng(5)
    genome = blocks.random_genome(rng)
    for _ in range(200):
        child, note = blocks.mutate(genome, rng)
        changed = [f for f in genome.to_json() if getattr(child, f) != getattr(genome, f)]
        assert len(changed) == 1, (changed, note)
        assert note
        assert blocks.render(child) != blocks.render(genome), note  # no silent copies
        genome = child


def test_crossover_takes_whole_blocks_from_both_parents() -> None:
    rng = np.random.default_rng(2)
    a, b = blocks.random_genome(rng), blocks.random_genome(rng)
    for _ in range(30):
        child, note = blocks.crossover(a, b, rng)
        sources = []
        for _, genes in blocks.BLOCKS:
            values = [getattr(child, g) for g in genes]
            assert values in ([getattr(a, g) for g in genes], [getattr(b, g) for g in genes])
            sources.append(values == [getattr(b, g) for g in genes])
        assert any(sources) and not all(sources), note
        assert "from the second parent" in note


def test_most_different_is_far_from_what_was_explored() -> None:
    rng = np.random.default_rng(4)
    explored = [blocks.random_genome(rng) for _ in range(3)]
    far = blocks.most_different(explored, rng)
    near_distances = [
        min(blocks.distance(blocks.random_genome(rng), e) for e in explored) for _ in range(50)
    ]
    assert min(blocks.distance(far, e) for e in explored) >= np.median(near_distances)


def test_baseline_counterparts_exist_for_sharing_baselines() -> None:
    assert set(blocks.BASELINE_GENOMES) == {"paired", "dynamic", "graph", "stochastic"}
    assert blocks.seed_genome("asocial") is None


def test_old_genome_json_loads_with_defaults_for_new_genes() -> None:
    # as archived before filters existed
    stored = {
        "route": "ring",
        "peers": 2,
        "group_size": 3,
        "regroup_every": 0,
        "weights": [["recency", 1.5], ["untried", -0.5]],
        "horizon": 20,
        "n_memories": 8,
        "schedule": "periodic",
        "p_share": 0.9,
        "period": 4,
        "window": 5,
        "noise": 0.3,
    }
    genome = blocks.Genome.from_json(stored)
    new = {"filters": [], "rare_below": 0.3, "failure_share": 1.0, "mate_share": 1.0}
    assert genome.to_json() == {**stored, **new}
    assert precheck_problems(blocks.render(genome)) == []


def test_filters_have_one_order() -> None:
    a = blocks.Genome(filters=("unsent", "rare"))
    assert a == blocks.Genome(filters=("rare", "unsent")) and a.filters == ("rare", "unsent")


def test_numeric_genes_are_the_expressed_ones_with_their_ranges() -> None:
    genome = blocks.Genome(
        route="groups", weights=(("rarity", 1.0),), filters=("rare",), schedule="periodic"
    )
    ranges = blocks.numeric_genes(genome)
    assert {"group_size", "regroup_every", "rare_below", "period", "weight:rarity"} <= set(ranges)
    assert "peers" not in ranges and "window" not in ranges  # not used by this design
    assert ranges["horizon"] == blocks.LIMITS["horizon"]
    assert {
        "horizon",
        "group_size",
    } <= blocks.INTEGER_GENES and "rare_below" not in blocks.INTEGER_GENES
    current = {
        name: genome.weight_map[name[7:]] if name.startswith("weight:") else getattr(genome, name)
        for name in ranges
    }
    assert blocks.with_numbers(genome, current) == genome
    tuned = blocks.with_numbers(
        genome, {"group_size": 4.4, "rare_below": 7.0, "weight:rarity": -2.0, "noise": 0.123}
    )
    assert (tuned.group_size, tuned.rare_below, tuned.weight_map["rarity"]) == (4, 1.0, -1.0)
    assert tuned.noise == 0.123 and tuned.route == "groups"
    with pytest.raises(ConfigError, match="numeric gene"):
        blocks.with_numbers(genome, {"route": 1.0})
    with pytest.raises(ConfigError, match="no weight"):
        blocks.with_numbers(genome, {"weight:recency": 1.0})


# --- what the rendered code does, against a plain restatement -----------------------------

N_AGENTS = 4


def play_states(seed: int, n_steps: int) -> list[dict[int, dict[str, tuple[Any, ...]]]]:
    """Made-up agent states, step by step: one attempt per agent and step over a small set
    of elements, about a third of them successes (some making what others already own)."""
    rng = random.Random(seed)
    names = [f"e{i}" for i in range(14)]
    inventories = [[*names[:3], names[3 + a]] for a in range(N_AGENTS)]
    memories: list[list[tuple[str, str, str | None]]] = [[] for _ in range(N_AGENTS)]
    out = []
    for _ in range(n_steps):
        for a in range(N_AGENTS):
            e1, e2 = rng.choice(inventories[a]), rng.choice(inventories[a])
            result = rng.choice(names) if rng.random() < 0.35 else None
            memories[a].append((e1, e2, result))
            if result is not None and result not in inventories[a]:
                inventories[a].append(result)
        out.append(
            {
                a: {"inventory": tuple(inventories[a]), "memories": tuple(memories[a])}
                for a in range(N_AGENTS)
            }
        )
    return out


class Reference:
    """What a design (without noise, every recipient served) sends, computed memory by
    memory from the states as its description says; the route's choice is the protocol's
    own (it may be random), read from it."""

    def __init__(self, genome: blocks.Genome) -> None:
        self.g = genome
        self.sent: list[set[str]] = [set() for _ in range(N_AGENTS)]

    def share(
        self, states: dict[int, dict[str, tuple[Any, ...]]], hears: Any, mates: Any, quota: int
    ) -> dict[int, list[tuple[int, int]]]:
        g = self.g
        owned = [set(states[a]["inventory"]) for a in range(N_AGENTS)]
        holders = {e: sum(e in o for o in owned) for o in owned for e in o}
        uses: dict[str, int] = {}
        for a in range(N_AGENTS):
            for e1, e2, result in states[a]["memories"]:
                if result is not None:
                    uses[e1] = uses.get(e1, 0) + 1
                    uses[e2] = uses.get(e2, 0) + 1
        out = {}
        for r in range(N_AGENTS):
            tried = {frozenset(m[:2]) for m in states[r]["memories"]}
            team = [r] + [m for m in range(N_AGENTS) if mates is not None and mates[r][m]]
            ranked = []
            for s in range(N_AGENTS):
                memories = states[s]["memories"]
                for k in range(max(0, len(memories) - g.horizon), len(memories)):
                    e1, e2, result = memories[k]
                    success = result is not None
                    has1, has2 = e1 in owned[r], e2 in owned[r]
                    lacks = success and result not in owned[r]
                    group_lacks = success and not any(result in owned[m] for m in team)
                    rare = success and holders.get(result, 0) < g.rare_below * N_AGENTS
                    unsent = success and result not in self.sent[r]
                    untried = frozenset((e1, e2)) not in tried
                    passes = {
                        "successes": success,
                        "rare": not success or rare,
                        "lacking": not success or lacks,
                        "owns_ingredient": not success or has1 or has2,
                        "group_lacks": not success or group_lacks,
                        "unsent": not success or unsent,
                        "repeatable": success or (has1 and has2),
                        "untried": untried,
                    }
                    if not hears[r][s] or not all(passes[f] for f in g.filters):
                        continue
                    used = uses.get(result, 0) if success else 0
                    value = {
                        "recency": 1 / (1 + len(memories) - 1 - k),
                        "success": success,
                        "failure": not success,
                        "lacking_result": lacks,
                        "actionable": (has1 + has2) / 2,
                        "reachable": lacks and (has1 or has2),
                        "repeatable": not success and has1 and has2,
                        "rarity": success and 1 - holders.get(result, 0) / N_AGENTS,
                        "group_lacks": group_lacks,
                        "pivotal": used / (1 + used),
                        "unsent": unsent,
                        "untried": untried,
                        "mate": s in team[1:],
                    }
                    score = sum(w * value[f] for f, w in g.weights)
                    age = len(memories) - 1 - k
                    ranked.append((-round(score, 9), age, s, k, frozenset((e1, e2)), result))
            caps = {
                kind: int(share * quota)
                for share, kind in ((g.failure_share, "failure"), (g.mate_share, "mate"))
                if share < 1
            }

            # each cap in its order keeps the best few of its kind (copies count), then
            # the best copy of each recipe, then the quota
            order = sorted(ranked)
            for kind, cap in caps.items():
                of_kind = [m for m in order if kind in kinds(m[2], m[5], team)]
                order = [m for m in order if m not in of_kind[cap:]]
            distinct, recipes = [], set()
            for *_, s, k, recipe, result in order:
                if recipe not in recipes:
                    recipes.add(recipe)
                    distinct.append((s, k, result))
            chosen = [(s, k) for s, k, _ in distinct[:quota]]
            self.sent[r] |= {result for _, _, result in distinct[:quota] if result is not None}
            if chosen:
                out[r] = chosen
        return out


def kinds(sender: int, result: str | None, team: list[int]) -> set[str]:
    """The capped classes a memory belongs to, for a recipient whose group is ``team``
    (the recipient first)."""
    return ({"failure"} if result is None else set()) | ({"mate"} if sender in team[1:] else set())


def reference_designs() -> list[blocks.Genome]:
    """Random designs with small windows and quotas, so that choices matter; every
    feature and filter appears in some."""
    rng = np.random.default_rng(11)
    out = []
    for k in range(24):
        g = blocks.random_genome(rng)
        out.append(
            replace(
                g,
                noise=0.0,
                p_share=1.0,
                schedule="always",
                n_memories=int(rng.integers(2, 6)),
                # caps that leave room for something, or (in a few) for nothing
                failure_share=0.1 if k in (2, 7) else max(0.5, g.failure_share),
                mate_share=0.1 if k in (3, 8, 13) else max(0.5, g.mate_share),
                group_size=2 if k in (3, 8, 13) else g.group_size,  # non-mates among 4
                horizon=int(rng.choice([3, 5, 8, 150])),
                filters=g.filters or (list(FILTERS)[k % len(FILTERS)],),
                rare_below=0.5,
            )
        )
    return out


def test_reference_designs_cover_every_feature_and_filter() -> None:
    designs = reference_designs()
    assert {f for g in designs for f, _ in g.weights} == set(blocks.FEATURES)
    assert {f for g in designs for f in g.filters} == set(FILTERS)
    assert {g.route for g in designs} == set(blocks.ROUTES)


@pytest.mark.parametrize("genome", reference_designs(), ids=lambda g: f"{g.route}-{g.horizon}")
def test_rendered_design_sends_what_its_description_says(genome: blocks.Genome) -> None:
    np.random.seed(0)  # as the runner does; the routes may draw from it
    protocol = load_protocol_class(blocks.render(genome), "g")(N_AGENTS, 12)
    hears: list[Any] = []
    senders = protocol.senders

    def kept_senders(i_step: int) -> Any:
        hears.append(senders(i_step))
        return hears[-1]

    protocol.senders = kept_senders
    reference = Reference(genome)
    sent_any = 0
    for step, states in enumerate(play_states(5, 12)):
        hears.clear()
        got = protocol.share_memories(step, states)
        # no route was asked when no candidate passed the filters: then none may pass
        heard = hears[0] if hears else ~np.eye(N_AGENTS, dtype=bool)
        want = reference.share(states, heard, getattr(protocol, "mates", None), genome.n_memories)
        assert got == want, step
        sent_any += sum(len(v) for v in got.values())
    assert sent_any  # the comparison covered real choices


class WatchedMemories(Sequence[Any]):
    """A state's memories that remember the lowest index read."""

    def __init__(self, items: tuple[Any, ...], watch: list[int]) -> None:
        self.items, self.watch = items, watch

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: Any) -> Any:
        first = index.start or 0 if isinstance(index, slice) else index
        self.watch[0] = min(self.watch[0], first % max(1, len(self.items)))
        return self.items[index]


@pytest.mark.parametrize("genome", designs()[:10], ids=lambda g: f"{g.route}-{g.schedule}")
def test_a_step_reads_only_what_is_new_and_draws_a_few_times(genome: blocks.Genome) -> None:
    np.random.seed(0)
    protocol = load_protocol_class(blocks.render(genome), "g")(N_AGENTS, 12)
    draws = [0]
    rng = protocol.rng

    class CountingRng:
        def __getattr__(self, name: str) -> Any:
            draws[0] += 1
            return getattr(rng, name)

    protocol.rng = CountingRng()
    for step, states in enumerate(play_states(2, 12)):
        watch = [10**9]
        watched = {
            a: {**state, "memories": WatchedMemories(state["memories"], watch)}
            for a, state in states.items()
        }
        draws[0] = 0
        protocol.share_memories(step, watched)
        assert watch[0] >= step  # no memory of an earlier step is read again
        assert draws[0] <= 3  # the route's, the noise's and the sampling's, whatever the size


def test_copies_of_one_recipe_do_not_crowd_out_the_others() -> None:
    # every agent's latest attempts are all the same pair; older ones differ
    old = [("e0", f"e{a + 2}", None) for a in range(N_AGENTS)]
    memories = [(*old[a : a + 1], *[("e0", "e1", None)] * 10) for a in range(N_AGENTS)]
    states = {
        a: {"inventory": ("e0", "e1", f"e{a + 2}"), "memories": memories[a]}
        for a in range(N_AGENTS)
    }
    genome = blocks.Genome(
        route="everyone", weights=(("recency", 1.0),), noise=0.0, n_memories=3, horizon=150
    )
    protocol = load_protocol_class(blocks.render(genome), "g")(N_AGENTS, 12)
    got = protocol.share_memories(10, states)
    hears = ~np.eye(N_AGENTS, dtype=bool)
    assert got == Reference(genome).share(states, hears, None, 3)
    assert all(len(sent) == 3 for sent in got.values())  # one copy and two older recipes


def test_tune_moves_only_expressed_numbers_within_their_ranges() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        g = blocks.random_genome(rng)
        tuned, note = blocks.tune(g, rng)
        assert tuned != g and note
        ranges = blocks.numeric_genes(g)
        if not note.startswith("tuned"):
            continue  # nothing numeric to move: a mutation instead
        changed = {
            f.name
            for f in dataclasses.fields(g)
            if f.name != "weights" and getattr(g, f.name) != getattr(tuned, f.name)
        }
        assert changed <= set(ranges), (changed, ranges)
        assert [f for f, _ in tuned.weights] == [f for f, _ in g.weights]
        for name in changed:
            low, high = blocks.LIMITS[name]
            assert low <= getattr(tuned, name) <= high


def test_tune_steps_the_window_on_a_log_scale() -> None:
    rng = np.random.default_rng(6)
    short, long = blocks.Genome(horizon=20), blocks.Genome(horizon=100)
    ratios = {"short": [], "long": []}
    for _ in range(300):
        for key, g in (("short", short), ("long", long)):
            tuned, _ = blocks.tune(g, rng)
            if tuned.horizon != g.horizon:
                ratios[key].append(abs(np.log(tuned.horizon / g.horizon)))
    # the same relative steps at both ends (within sampling and rounding)
    assert abs(np.median(ratios["short"]) - np.median(ratios["long"])) < 0.15


def test_a_description_says_what_is_sent_by_kind_then_in_which_order() -> None:
    """A rule on failures lets successes through (and the other way round): the text says
    what may go of each kind, then the preferences, largest weight first (issue 47)."""
    genome = blocks.Genome(
        weights=(("recency", 0.5), ("success", 2.0), ("failure", -1.0)),
        filters=("unsent", "repeatable"),
    )
    text = blocks.describe(genome)
    assert (
        "attempts: successes whose result was never sent to the recipient, and failures of "
        "pairs the recipient owns both ingredients of; favouring successful attempts "
        "(weight 2), then recent attempts (weight 0.5) and avoiding failed attempts (weight -1)."
    ) in text
    assert "lets failures through" not in text
    only = blocks.describe(blocks.Genome(filters=("successes", "lacking")))
    assert "only successes whose result the recipient lacks, no failures;" in only
    failures_rule = blocks.describe(blocks.Genome(filters=("repeatable",)))
    assert ": any success, and failures of pairs the recipient owns both" in failures_rule
