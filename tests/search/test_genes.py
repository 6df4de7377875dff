"""Every registered route, feature, filter and schedule renders a valid protocol and says what
it is; what the options read is built only when one in use reads it."""

from __future__ import annotations

import ast
from dataclasses import fields, replace

import pytest

from tpdisc.domain.variants import make_domain
from tpdisc.executors.serial import SerialExecutor
from tpdisc.search import blocks, genes
from tpdisc.search.config import SearchConfig
from tpdisc.search.validation import CandidateEvaluator
from tpdisc.sim.config import SimConfig

# In-process (trusted) checks keep this fast; the sandbox is tested on its own.
CONFIG = SearchConfig(
    sims=1,
    check_steps=10,
    sim=SimConfig(n_agents=5, n_steps=10, agent_type="stochastic"),
    sandboxed=False,
)
GENE_NAMES = {f.name for f in fields(blocks.Genome)}


def unindented(code: str) -> str:
    """Code without indentation, to find a snippet wherever the skeleton put it."""
    return "\n".join(line.strip() for line in code.split("\n"))


def option_designs() -> list[tuple[str, blocks.Genome]]:
    """One design per option, with every other gene set so the option's code runs."""
    base = blocks.Genome(p_share=0.8, noise=0.1, period=2, regroup_every=3)
    out = [(f"route-{r}", replace(base, route=r)) for r in genes.ROUTES]
    out.append(("route-groups-fixed", replace(base, route="groups", regroup_every=0)))
    for name in genes.FEATURES:
        out.append((f"feature-{name}", replace(base, weights=((name, 1.5),))))
        out.append((f"feature-{name}-against", replace(base, weights=((name, -0.5),))))
    for name in genes.FILTERS:
        out.append((f"filter-{name}", replace(base, filters=(name,), noise=0.0)))
    return out + [(f"schedule-{s}", replace(base, schedule=s)) for s in genes.SCHEDULES]


@pytest.mark.parametrize(
    ("label", "genome"), option_designs(), ids=lambda x: x if isinstance(x, str) else None
)
def test_every_option_renders_a_protocol_that_passes_validation(
    label: str, genome: blocks.Genome, toy_graph
) -> None:
    source = blocks.render(genome)
    ast.parse(source)
    evaluator = CandidateEvaluator(make_domain(toy_graph), CONFIG, SerialExecutor())
    assert evaluator.check(label, source) is None


@pytest.mark.parametrize("route", genes.ROUTES.values(), ids=lambda r: r.name)
def test_routes_describe_themselves(route: genes.Route) -> None:
    genome = blocks.Genome(route=route.name, peers=4, group_size=5)
    assert route.summary and genes.expand(route.summary, genome) in blocks.render(genome)
    assert genes.expand(route.describe, genome) in blocks.describe(genome)
    assert set(route.genes) <= GENE_NAMES


@pytest.mark.parametrize("feature", genes.FEATURES.values(), ids=lambda f: f.name)
def test_features_describe_themselves(feature: genes.Feature) -> None:
    genome = blocks.Genome(weights=((feature.name, 2.0),))
    assert feature.description and feature.description in blocks.describe(genome)
    assert f"# {feature.comment}" in blocks.render(genome)
    assert feature.reads and set(feature.reads) <= set(genes.INPUTS)


@pytest.mark.parametrize("rule", genes.FILTERS.values(), ids=lambda f: f.name)
def test_filters_describe_themselves(rule: genes.Filter) -> None:
    genome = blocks.Genome(filters=(rule.name,))
    text = genes.expand(rule.description, genome)
    assert text in blocks.describe(genome) and f"only {text}" in blocks.render(genome)
    assert rule.per in ("candidate", "recipient") and set(rule.reads) <= set(genes.INPUTS)
    assert set(rule.genes) <= GENE_NAMES


@pytest.mark.parametrize("schedule", genes.SCHEDULES.values(), ids=lambda s: s.name)
def test_schedules_describe_themselves(schedule: genes.Schedule) -> None:
    genome = blocks.Genome(schedule=schedule.name)
    assert genes.expand(schedule.summary, genome) in blocks.render(genome)
    assert genes.expand(schedule.when or schedule.summary, genome) in blocks.describe(genome)
    assert set(schedule.genes) <= GENE_NAMES


def test_inputs_and_records_are_built_only_for_options_that_read_them() -> None:
    plain = unindented(blocks.render(blocks.Genome(weights=(("recency", 1.0),))))
    readers = [*genes.FEATURES.values(), *genes.FILTERS.values()]
    for name, score_input in genes.INPUTS.items():
        code = unindented(score_input.code)
        assert (code in plain) == (name == "age")
        reader = next(r for r in readers if name in r.reads)
        design = blocks.Genome(
            weights=((reader.name, 1.0),) if isinstance(reader, genes.Feature) else (),
            filters=(reader.name,) if isinstance(reader, genes.Filter) else (),
        )
        assert code in unindented(blocks.render(design))
    for name, record in genes.RECORDS.items():
        init = unindented(genes.expand(record.init, blocks.Genome()))
        assert init not in plain
        reader = next(f for f in genes.FEATURES.values() if name in records_read(f.reads))
        assert init in unindented(blocks.render(blocks.Genome(weights=((reader.name, 1.0),))))


def records_read(inputs: tuple[str, ...]) -> set[str]:
    return {r for i in inputs for r in genes.INPUTS[i].records}


def test_fill_indents_blocks_and_drops_empty_ones() -> None:
    template = "def f():\n    $body\n    $nothing\n    return $value"
    filled = genes.fill(template, body="a = 1\nif a:\n    a += 1", nothing="", value=2)
    assert filled == "def f():\n    a = 1\n    if a:\n        a += 1\n    return 2"
    with pytest.raises(KeyError):
        genes.fill("$unknown", value=1)
