"""The offline proposer's building blocks: every design renders to a working protocol."""

from __future__ import annotations

import ast
from dataclasses import replace

import numpy as np
import pytest

from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.search import blocks
from tpdisc.search.prompts import ALLOWED_IMPORTS
from tpdisc.search.validation import precheck_problems
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import run_simulation


def designs() -> list[blocks.Genome]:
    """Random designs plus one of every route and schedule, so each block is rendered."""
    rng = np.random.default_rng(3)
    out = [blocks.random_genome(rng) for _ in range(10)]
    base = blocks.Genome(weights=tuple((f, 1.0) for f in blocks.FEATURES), p_share=0.7)
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
