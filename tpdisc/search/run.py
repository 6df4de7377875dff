"""Starting or resuming a search from command-line options (what ``tpdisc evolve`` does)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tpdisc.config_tree import encode, flatten, read_yaml, with_value
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.errors import ConfigError, TpdiscError
from tpdisc.executors.base import Executor
from tpdisc.llm_client import LLMClient, LLMConfig, ModelPrice
from tpdisc.safefiles import read_capped
from tpdisc.search.archive import Archive
from tpdisc.search.config import SearchConfig, upgraded
from tpdisc.search.loop import CONFIG_FILE, Event, RunSummary, SearchLoop, open_run_dir
from tpdisc.search.prompts import PromptSettings
from tpdisc.search.proposers import LLMProposer, OfflineProposer, Proposer

FIGURE_NAME = "best_fitness.png"
AGENT_MODELS_FILE = "agent_models.json"


@dataclass(frozen=True)
class LLMOptions:
    """The LLM options given on the command line (None: not given)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    max_cost: float | None = None
    price_input: float | None = None  # dollars per million prompt tokens of ``model``
    price_output: float | None = None

    def given(self) -> bool:
        return any(v is not None for v in vars(self).values())

    def apply(self, current: LLMConfig | None) -> LLMConfig | None:
        """``current`` updated with the options given; a new config needs URL and model."""
        if not self.given():
            return current
        if current is None:
            if self.base_url is None or self.model is None:
                raise ConfigError("an LLM needs both --base-url and --model")
            current = LLMConfig(base_url=self.base_url, model=self.model)
        changes: dict[str, Any] = {
            k: v
            for k, v in {
                "base_url": self.base_url,
                "model": self.model,
                "api_key_env": self.api_key_env,
            }.items()
            if v is not None
        }
        model = changes.get("model", current.model)
        prices = dict(current.prices)
        if self.price_input is not None or self.price_output is not None:
            old = prices.get(model, ModelPrice())
            prices[model] = ModelPrice(
                self.price_input if self.price_input is not None else old.input_per_million,
                self.price_output if self.price_output is not None else old.output_per_million,
            )
        changes["prices"] = prices
        if self.max_cost is not None:
            changes["max_cost"] = self.max_cost
        # Re-validate as a whole: a cap needs a price for the model in use.
        return LLMConfig(**{**vars(current), **changes})


def default_run_dir() -> Path:
    return Path("runs") / f"evolve-{datetime.now():%Y%m%d-%H%M%S}"


def resolve_config(
    run_dir: Path,
    requested: Mapping[str, Any],
    llm: LLMOptions,
    config_file: Path | None = None,
    *,
    write: bool = True,
) -> tuple[SearchConfig, bool]:
    """The run's config and whether the run resumes (``write``: save it in ``run_dir``).

    ``requested`` holds the settings given on the command line, nested as in the file.
    A new run starts from ``config_file`` (or the defaults) with them applied; the proposer
    is the LLM when one is configured, the offline proposer otherwise. A resumed run keeps
    its stored settings: see :meth:`SearchConfig.resumed_with` for what may change.
    """
    if (run_dir / CONFIG_FILE).is_file():
        if config_file is not None:
            raise ConfigError(f"{run_dir} already holds a run; --config only applies to a new run")
        stored = SearchConfig.load(run_dir / CONFIG_FILE)
        new_llm = llm.apply(stored.llm)
        if new_llm is not None and stored.proposer != "llm":
            raise ConfigError(
                f"{run_dir} is a run of the offline proposer; an LLM cannot join it "
                "(start a new --run-dir instead)"
            )
        wanted = {**requested, "llm": new_llm}
        if not write:
            return stored.resumed_with(wanted), True
        return open_run_dir(run_dir, None, wanted), True
    # Unset settings keep their defaults, which may depend on others (the warm-up length
    # on the number of iterations), so build from the raw settings, not from a config.
    where = str(config_file) if config_file is not None else "options"
    raw = upgraded(read_yaml(config_file)) if config_file is not None else {}
    for path, value in flatten(dict(requested)).items():
        raw = with_value(raw, path, value)
    new_llm = llm.apply(SearchConfig.from_dict(raw, where).llm)
    raw["llm"] = encode(new_llm)
    if new_llm is not None:
        raw["proposer"] = "llm"
    config = SearchConfig.from_dict(raw, where)
    return (open_run_dir(run_dir, config, {}) if write else config), False


def make_proposer(config: SearchConfig, spent: float) -> Proposer:
    if config.proposer == "llm":
        if config.llm is None:
            raise ConfigError("the llm proposer needs an LLM: give --base-url and --model")
        client = LLMClient(config.llm, spent=spent)
        return LLMProposer(client, PromptSettings.from_config(config))
    return OfflineProposer()


def _recorded(path: Path) -> Any:
    """What ``agent_models.json`` holds; a damaged or odd file counts as other models."""
    try:
        return json.loads(read_capped(path, 10_000_000))
    except (TpdiscError, ValueError, RecursionError):
        return None


def record_agent_models(run_dir: Path, domain: Domain, config: SearchConfig) -> None:
    """Write what the agents' behaviour depends on beyond the config (the empowerment
    prior's fingerprint) to ``agent_models.json``, once; warn when a resumed run's agents
    would differ (a prior rebuilt with other bytes, on another kind of machine)."""
    from tpdisc.agents.population import describe_agents, prepare_agents

    sim = config.sim_config()
    kinds = [kind for kind, _ in sim.agents]
    prepare_agents(domain.graph, domain.source, kinds, sim.params)
    described = describe_agents(domain.graph, domain.source, kinds, sim.params)
    path = run_dir / AGENT_MODELS_FILE
    if not path.is_file():
        path.write_text(json.dumps(described, indent=2))
    elif _recorded(path) != described:
        print(
            f"warning: {path} records other agent models than this machine's (a prior with "
            "other bytes?): fitness values of this session may not compare with earlier ones",
            file=sys.stderr,
        )


def evolve(
    run_dir: Path,
    config: SearchConfig,
    executor: Executor,
    *,
    recipes: str | Path | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_simulation: Callable[[], None] | None = None,
) -> RunSummary:
    """Run (or resume) the search in ``run_dir`` and draw its best-fitness figure."""
    from tpdisc.search.plots import best_fitness_figure

    domain = make_domain(default_graph(recipes), config.sim.variant)
    record_agent_models(run_dir, domain, config)
    with Archive(run_dir / Archive.FILE_NAME) as archive:
        spent = archive.spent()
    proposer = make_proposer(config, spent)
    try:
        with SearchLoop(
            run_dir,
            config,
            domain,
            proposer,
            executor,
            on_event=on_event,
            on_simulation=on_simulation,
        ) as loop:
            summary = loop.run()
            best_fitness_figure(loop.archive, run_dir / FIGURE_NAME)
    finally:
        proposer.close()
    return summary
