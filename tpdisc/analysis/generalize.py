"""Generalization (SPEC §5–§6): the best protocols against the baselines in 11 settings.

Each setting is data — a frozen :class:`Setting` saying how it changes the evaluation a
user configured (its "base") — so that a test can read the population and the variant a
setting plays without running it, and a reader sees every setting in one table
(:data:`SETTINGS`).

Per setting, every protocol and baseline runs on the same seeds. The evolved side is the
mean of the given protocols' means; its sample for the test pools every simulation of every
given protocol (each protocol has the same seeds, so the pooled mean equals the mean of
means), and is compared with the best baseline's simulations by a one-sided Welch t-test.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tpdisc.agents.llm.config import LLMAgentConfig
from tpdisc.analysis.plots import plain_figures, save_figure, short_label
from tpdisc.analysis.stats import mean_above, stars, welch_greater
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.executors.base import Executor
from tpdisc.protocols.baselines import BASELINES, STANDARD_BASELINES
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.search.pick import run_references
from tpdisc.sim.config import EvaluationConfig, SimConfig
from tpdisc.sim.evaluate import Evaluation, sem
from tpdisc.sim.run import prepare_evaluation

# The shares of the mixed population, applied to the base population's size. The spec
# asks for "a mixed population" without a composition; half empowerment, half stochastic
# (5 + 5 at the default 10 agents) mixes the two offline models and needs no endpoint, so
# the setting means the same with or without an LLM.
MIXED_SHARES: tuple[tuple[str, float], ...] = (("empowerment", 0.5), ("stochastic", 0.5))


@dataclass(frozen=True)
class Setting:
    """One generalization setting: what it changes in the base simulation (None: keeps it).

    ``reference_gain`` is the study's improvement over the best baseline, in %, to compare
    against (SPEC §5), never used in a computation.
    """

    name: str
    description: str
    reference_gain: float
    n_agents: int | None = None
    agent_type: str | None = None
    mixed: tuple[tuple[str, float], ...] | None = None
    beta_factor: float | None = None
    p_social: float | None = None
    variant: str | None = None

    @property
    def needs_llm(self) -> bool:
        kinds = [self.agent_type, *(kind for kind, _ in self.mixed or ())]
        return "llm" in kinds

    def sim_config(self, base: SimConfig, llm: LLMAgentConfig | None = None) -> SimConfig:
        """``base`` changed as this setting says. ``llm``: the LLM agents' endpoint, which
        a base without LLM agents cannot carry (SimConfig drops settings no agent reads)."""
        if self.needs_llm and llm is None:
            raise ConfigError(
                f"setting {self.name!r} needs a chat endpoint: give --llm-base-url and --llm-model"
            )
        params = base.params
        if self.beta_factor is not None:
            model = params.empowerment
            params = replace(params, empowerment=replace(model, beta=model.beta * self.beta_factor))
        if self.p_social is not None:
            params = replace(params, p_social=self.p_social)
        if self.needs_llm:
            params = replace(params, llm=llm)
        # One replace: every intermediate config would be checked (LLM agents, no endpoint).
        changes: dict[str, Any] = {"params": params}
        if self.n_agents is not None and base.population is not None:
            # A mixed base keeps its proportions at the new size.
            shares = [(kind, n / base.n_agents) for kind, n in base.population]
            changes["population"] = mixed_population(shares, self.n_agents)
        elif self.n_agents is not None:
            changes["n_agents"] = self.n_agents
        if self.agent_type is not None:
            changes.update(agent_type=self.agent_type, n_agents=base.n_agents, population=None)
        if self.mixed is not None:
            changes["population"] = mixed_population(self.mixed, base.n_agents)
        if self.variant is not None:
            changes["variant"] = replace(base.variant, name=self.variant)
        return replace(base, **changes)

    def apply(
        self,
        base: EvaluationConfig,
        protocols: Sequence[str],
        llm: LLMAgentConfig | None = None,
    ) -> EvaluationConfig:
        """The evaluation of ``protocols`` in this setting (seeds, sandbox, executor and
        recipes as in ``base``)."""
        return replace(base, protocols=tuple(protocols), sim=self.sim_config(base.sim, llm))


def mixed_population(shares: Sequence[tuple[str, float]], size: int) -> tuple[tuple[str, int], ...]:
    """Groups of ``shares`` of ``size`` agents: every type but the first gets its share
    rounded down (at least one), the first type the rest."""
    rest = [max(1, math.floor(share * size)) for _, share in shares[1:]]
    counts = [size - sum(rest), *rest]
    if counts[0] < 1:
        raise ConfigError(
            f"a mixed population of {len(shares)} types needs more than {size} agents"
        )
    return tuple((kind, n) for (kind, _), n in zip(shares, counts, strict=True))


SETTINGS: tuple[Setting, ...] = (
    Setting("6-agents", "6 agents", 17.0, n_agents=6),
    Setting("20-agents", "20 agents", 49.0, n_agents=20),
    Setting("stochastic", "stochastic agents", 18.0, agent_type="stochastic"),
    Setting("llm", "LLM agents (needs --llm-base-url and --llm-model)", 16.0, agent_type="llm"),
    Setting("mixed", "half empowerment, half stochastic agents", 24.0, mixed=MIXED_SHARES),
    Setting("beta-half", "empowerment softmax temperature β halved", 25.0, beta_factor=0.5),
    Setting("p-social-0.9", "social bias p_social = 0.9", 27.0, p_social=0.9),
    Setting(
        "depth-limited", "elements within 3 steps of the base ones", 12.0, variant="depth-limited"
    ),
    Setting("3-item", "each agent starts with 3 of the 4 base elements", 25.0, variant="3-item"),
    Setting(
        "heterogeneous",
        "each agent starts with a pair of base elements",
        20.0,
        variant="heterogeneous",
    ),
    Setting("dropout", "random elements removed until < 300 reachable", 18.0, variant="dropout"),
)
SETTING_NAMES: tuple[str, ...] = tuple(s.name for s in SETTINGS)
BASELINE_SETS: dict[str, tuple[str, ...]] = {
    "standard": STANDARD_BASELINES,
    "extended": tuple(name for name in BASELINES if name not in STANDARD_BASELINES),
    "all": tuple(BASELINES),
}


def select_settings(names: Iterable[str] | None = None) -> tuple[Setting, ...]:
    """The settings named (in the registry's order; commas separate names too), or all of
    them when none is named."""
    wanted = [n.strip() for text in names or () for n in text.split(",") if n.strip()]
    if not wanted:
        return SETTINGS
    unknown = [n for n in wanted if n not in SETTING_NAMES]
    if unknown:
        raise ConfigError(
            f"unknown setting {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(SETTING_NAMES)}"
        )
    return tuple(s for s in SETTINGS if s.name in wanted)


def resolve_baselines(text: str) -> tuple[str, ...]:
    """``standard``, ``extended``, ``all`` or baseline names separated by commas."""
    if text in BASELINE_SETS:
        return BASELINE_SETS[text]
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in BASELINES]
    if unknown or not names:
        raise ConfigError(
            f"--baselines {text!r}: give {', '.join(BASELINE_SETS)} or names among "
            f"{', '.join(BASELINES)}"
        )
    return names


@dataclass(frozen=True)
class SettingResult:
    """One setting's outcome: the evolved protocols' and the baselines' final coverage."""

    setting: Setting
    evolved: tuple[Evaluation, ...]
    baselines: tuple[Evaluation, ...]
    reachable: int

    @property
    def name(self) -> str:
        return self.setting.name

    @property
    def evolved_sample(self) -> list[float]:
        return [float(v) for ev in self.evolved for v in ev.final]

    @property
    def evolved_mean(self) -> float:
        return float(np.mean([ev.mean for ev in self.evolved]))

    @property
    def evolved_sem(self) -> float:
        return sem(self.evolved_sample)

    @property
    def best_baseline(self) -> Evaluation:
        return max(self.baselines, key=lambda ev: ev.mean)

    @property
    def improvement(self) -> float:
        """In % of the best baseline's mean (nan when that mean is 0)."""
        best = self.best_baseline.mean
        return 100.0 * (self.evolved_mean - best) / best if best else float("nan")

    @property
    def p(self) -> float:
        return welch_greater(self.evolved_sample, self.best_baseline.final)

    @property
    def p_protocols(self) -> float:
        """With the protocol as the unit (as the reference tests): a one-sided one-sample
        t-test of the evolved protocols' means against the best baseline's mean (nan with
        fewer than two protocols)."""
        return mean_above([ev.mean for ev in self.evolved], self.best_baseline.mean)

    def to_json(self) -> dict[str, Any]:
        best = self.best_baseline

        def number(value: float) -> float | None:
            return float(value) if np.isfinite(value) else None

        return {
            "name": self.name,
            "description": self.setting.description,
            "evolved_mean": self.evolved_mean,
            "evolved_sem": self.evolved_sem,
            "best_baseline": best.protocol,
            "best_baseline_mean": best.mean,
            "best_baseline_sem": best.sem,
            "improvement": number(self.improvement),
            "p": number(self.p),
            "stars": stars(self.p),
            "p_protocols": number(self.p_protocols),
            "stars_protocols": stars(self.p_protocols),
            "n_protocols": len(self.evolved),
            "reference_improvement": self.setting.reference_gain,
            "reachable": self.reachable,
            "evolved": {ev.protocol: {"mean": ev.mean, "sem": ev.sem} for ev in self.evolved},
            "baselines": {ev.protocol: {"mean": ev.mean, "sem": ev.sem} for ev in self.baselines},
        }


@dataclass(frozen=True)
class Generalization:
    """The whole study: settings run, settings skipped (with why), and how."""

    results: tuple[SettingResult, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    protocols: tuple[str, ...] = ()
    baseline_names: tuple[str, ...] = ()
    sims: int = 0
    base: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": [r.to_json() for r in self.results],
            "skipped": [{"name": n, "reason": why} for n, why in self.skipped],
            "protocols": list(self.protocols),
            "baselines": list(self.baseline_names),
            "sims": self.sims,
            "test": "one-sided Welch t-test, evolved (every simulation of every given "
            "protocol, pooled) > best baseline; p_protocols: the protocol as the unit, a "
            "one-sided one-sample t-test of the protocols' means > the best baseline's mean; "
            "stars * p<.05 ** p<.01 *** p<.001",
            "base": self.base,
        }


# Called with the setting's and the protocol's names as each simulation finishes.
OnSimulation = Callable[[str, str], None]


NO_LLM = "no LLM endpoint given (--llm-base-url, --llm-model)"


def runnable(
    settings: Sequence[Setting], llm: LLMAgentConfig | None, no_llm: str = NO_LLM
) -> tuple[list[Setting], list[tuple[str, str]]]:
    """The settings that can run, and the skipped ones with the reason (``no_llm`` for
    those that need LLM agents when there is no endpoint)."""
    run, skipped = [], []
    for setting in settings:
        if setting.needs_llm and llm is None:
            skipped.append((setting.name, no_llm))
        else:
            run.append(setting)
    return run, skipped


def generalize(
    protocols: Sequence[str],
    baselines: Sequence[str],
    settings: Sequence[Setting],
    base: EvaluationConfig,
    graph: RecipeGraph,
    executor: Executor,
    *,
    llm: LLMAgentConfig | None = None,
    on_simulation: OnSimulation | None = None,
    resolved: Mapping[str, ProtocolSpec] | None = None,
) -> Generalization:
    """Run ``protocols`` (files, sandboxed unless ``base.trusted``, or a search's protocols:
    ``RUN_DIR:NAME``, ``RUN_DIR`` for its pick; ``resolved`` when they were looked up
    already) and ``baselines`` in each of ``settings`` that can run (LLM settings only with
    ``llm``)."""
    if not protocols:
        raise ConfigError("generalize: give at least one protocol file")
    if resolved is None:
        resolved = run_references(protocols, trusted=base.trusted)
    if not baselines:
        raise ConfigError("generalize: give at least one baseline")
    active, skipped = runnable(settings, llm)
    results = []
    for setting in active:
        config = setting.apply(base, [*protocols, *baselines], llm)
        domain = make_domain(graph, config.sim.variant)
        prepared = prepare_evaluation(config, domain, resolved)

        def tell(name: str, _result: Any, setting: str = setting.name) -> None:
            if on_simulation is not None:
                on_simulation(setting, name)

        evaluations = prepared.run(executor, tell)
        k = len(protocols)
        results.append(
            SettingResult(
                setting, tuple(evaluations[:k]), tuple(evaluations[k:]), len(domain.reachable)
            )
        )
    return Generalization(
        tuple(results),
        tuple(skipped),
        tuple(protocols),
        tuple(baselines),
        base.sims,
        base.to_dict(),
    )


def generalization_figure(study: Generalization, path: str | Path) -> Path:
    """Grouped bars per setting: the evolved protocols' mean and the best baseline's mean,
    each ± sem over simulations, with the improvement and the test's stars above."""
    import matplotlib.pyplot as plt

    plain_figures()

    results = study.results
    n = len(results)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * n + 2.5), 4.6), layout="constrained")
    x = np.arange(n)
    width = 0.38
    evolved = [r.evolved_mean for r in results]
    evolved_err = [r.evolved_sem for r in results]
    best = [r.best_baseline.mean for r in results]
    best_err = [r.best_baseline.sem for r in results]
    ax.bar(x - width / 2, evolved, width, yerr=evolved_err, capsize=3, label="evolved (mean)")
    ax.bar(x + width / 2, best, width, yerr=best_err, capsize=3, label="best baseline")
    tops = np.maximum(np.add(evolved, evolved_err), np.add(best, best_err)).tolist()
    for i, r in enumerate(results):
        gain = "" if not np.isfinite(r.improvement) else f"{r.improvement:+.0f}%"
        ax.annotate(
            f"{gain} {stars(r.p)}".strip(), (x[i], tops[i]), textcoords="offset points",
            xytext=(0, 3), ha="center", va="bottom", fontsize=8,
        )  # fmt: skip
        ax.annotate(
            short_label(r.best_baseline.protocol, 12), (x[i] + width / 2, 0),
            textcoords="offset points", xytext=(0, 3), ha="center", va="bottom",
            fontsize=6, rotation=90, color="white",
        )  # fmt: skip
    ax.set_xticks(x, [short_label(r.name, 14) for r in results], rotation=30, ha="right")
    ax.set_ylabel("final coverage (mean ± sem over simulations)")
    ax.set_ylim(0, max([*tops, 1.0]) * 1.15)
    ax.set_title(
        f"Evolved protocols vs best baseline, {study.sims} sims each\n"
        "bars: mean ± sem; above: gain over the best baseline,\n"
        "one-sided Welch: * p<.05  ** p<.01  *** p<.001",
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return save_figure(fig, path)
