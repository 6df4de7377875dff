"""How close the agents' empowerment values are to the exact sum over all 700 results.

The agents use the prior's summary of P(r | a, b): the exact expectation of the children
counts, the top k results, and an even spread of the remaining mass (see
tpdisc/agents/empowerment/agent.py). This script records real candidate sets (10 empowerment
agents, paired baseline, a few seeds, at several steps), rebuilds the default prior keeping
the full distributions of those pairs (same seed: the same predictions), and compares, per
candidate set, the approximate values with the exact ones for k = 0, 4, 8, 16 (default)
and 32:

- median and 95th percentile of the relative error of the values;
- Spearman correlation between approximate and exact values;
- total-variation distance between the softmax choice distributions (beta = 0.05,
  z-scored), i.e. how differently the agent would choose.

    python benchmarks/prior_accuracy.py [--seeds 3] [--recipes PATH]

Takes one prior build (several minutes).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from tpdisc.agents.empowerment.agent import EmpowermentAgent
from tpdisc.agents.empowerment.options import softmax_probabilities
from tpdisc.agents.empowerment.prior.build import PriorSettings, build_prior
from tpdisc.agents.empowerment.prior.dataset import pair_index_table
from tpdisc.agents.empowerment.prior.store import ensure_prior
from tpdisc.agents.empowerment.prior.vectors import backend_from_spec
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.game import Game

STEPS_RECORDED = (10, 50, 100, 149)
KS = (0, 4, 8, 16, 32)


@dataclass
class Snapshot:
    step: int
    pairs: np.ndarray  # pair ids of untried candidates
    values: np.ndarray  # the agent's values for them
    owned: np.ndarray
    item: np.ndarray  # EmpItem before ownership (children x noise)


def record(seeds: int, recipes: str | None) -> list[Snapshot]:
    graph = default_graph(recipes)
    domain = make_domain(graph)
    config = SimConfig()
    table = pair_index_table(graph.n_elements)
    shots: list[Snapshot] = []
    for seed in range(seeds):
        game = Game(domain, config, seed)
        protocol = BaselineProtocol("paired").open(config.n_agents, config.n_steps, seed)
        for step in range(config.n_steps):
            game.attempts(step, game.choose())
            if step in STEPS_RECORDED:
                for agent in game.agents[:3]:
                    assert isinstance(agent, EmpowermentAgent)
                    pairs, values, untried = agent.candidate_values([])
                    keep = untried & (values > 0)
                    shots.append(
                        Snapshot(
                            step,
                            table[pairs.lo[keep], pairs.hi[keep]],
                            values[keep].copy(),
                            agent.owned.copy(),
                            agent.item.copy(),
                        )
                    )
            game.deliver(step, protocol.share(step, game.agent_states()))
    return shots


def summary_value(
    p_success: float,
    dist: np.ndarray,
    children: np.ndarray,
    worth: np.ndarray,
    owned: np.ndarray,
    k: int,
    renormalise: bool,
) -> float:
    """The agent's formula with a top-k summary of ``dist``: the children expectation
    exact, the adjustment u = worth - children exact on the top k, mean-field elsewhere;
    with ``renormalise``, the owned mass approximated the same way."""
    u = worth - children
    top = np.argsort(-dist)[:k]
    rho = (1.0 - dist[top].sum()) / (dist.size - k)
    adjust = (dist[top] - rho) @ u[top] + rho * u.sum()
    value = dist @ children + adjust
    if renormalise:
        owned_mass = (dist[top] - rho) @ owned[top] + rho * owned.sum()
        value /= max(1.0 - owned_mass, 1e-9)
    return float(p_success * max(value, 0.0))


def exact_value(
    p_success: float, dist: np.ndarray, worth: np.ndarray, owned: np.ndarray, renormalise: bool
) -> float:
    value = dist @ worth
    if renormalise:
        value /= dist[~owned].sum()
    return float(p_success * value)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--recipes", default=None)
    args = p.parse_args()
    graph = default_graph(args.recipes)
    cached, _ = ensure_prior(graph, "ngram")
    shots = record(args.seeds, args.recipes)
    wanted = np.unique(np.concatenate([s.pairs for s in shots]))
    print(f"{len(shots)} candidate sets, {wanted.size} distinct pairs; rebuilding the prior")
    prior, exact = build_prior(
        graph, backend_from_spec("ngram"), PriorSettings(), exact_pairs=wanted
    )
    assert exact is not None
    if not np.array_equal(prior.p_success, cached.p_success):
        raise SystemExit("the rebuilt prior differs from the cached one; cannot compare")
    row = {int(p): i for i, p in enumerate(wanted)}
    renorm = SimConfig().params.empowerment.owned == "renormalise"
    print(f"agents' choices: {SimConfig().params.empowerment.label()}")
    lines = [
        "| k | median rel. error | 95th pct rel. error | Spearman (median) | "
        "choice TV distance (median / 95th) |",
        "|---|---|---|---|---|",
    ]
    for k in KS:
        errors, rhos, tvs = [], [], []
        for s in shots:
            worth = s.item * ~s.owned
            children = graph.children_count.astype(float)
            ps = prior.p_success[s.pairs].astype(float)
            dists = exact[[row[int(p)] for p in s.pairs]].astype(float)
            true = np.array(
                [exact_value(ps[i], dists[i], worth, s.owned, renorm) for i in range(ps.size)]
            )
            approx = np.array(
                [
                    summary_value(ps[i], dists[i], children, worth, s.owned, k, renorm)
                    for i in range(ps.size)
                ]
            )
            errors.extend(np.abs(approx - true) / np.maximum(true, 1e-9))
            if s.pairs.size > 2:
                rhos.append(spearmanr(approx, true).statistic)
                p_true = softmax_probabilities(true, 0.05, True)
                p_approx = softmax_probabilities(np.maximum(approx, 1e-12), 0.05, True)
                tvs.append(0.5 * np.abs(p_true - p_approx).sum())
            if k == cached.top_k:  # the agent's own values use this k
                assert np.allclose(approx, s.values, rtol=1e-3, atol=1e-4)
        e = np.asarray(errors)
        lines.append(
            f"| {k} | {np.median(e):.2%} | {np.percentile(e, 95):.2%} | "
            f"{np.median(rhos):.4f} | {np.median(tvs):.3f} / {np.percentile(tvs, 95):.3f} |"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
