"""Starting or resuming a search from command-line options (what ``tpdisc evolve`` does)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from tpdisc.config_tree import encode, read_yaml, section
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.errors import ConfigError, TpdiscError, visible
from tpdisc.executors.base import Executor
from tpdisc.llm_client import LLMClient, LLMConfig
from tpdisc.safefiles import read_capped, write_file
from tpdisc.search.archive import Archive
from tpdisc.search.config import SearchConfig, upgraded
from tpdisc.search.loop import CONFIG_FILE, Event, RunSummary, SearchLoop, open_run_dir
from tpdisc.search.prompts import PromptSettings
from tpdisc.search.proposers import LLMProposer, OfflineProposer, Proposer

FIGURE_NAME = "best_fitness.png"
AGENT_MODELS_FILE = "agent_models.json"


def default_run_dir() -> Path:
    return Path("runs") / f"evolve-{datetime.now():%Y%m%d-%H%M%S}"


class GivenSettings(Protocol):
    """The settings given on the command line (:class:`tpdisc.cli.settings.Options`)."""

    def overrides(self, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What they set, nested as in the file, over the settings ``base``."""
        ...

    def settings(self, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``base`` with them applied."""
        ...


def resolve_config(
    run_dir: Path,
    given: GivenSettings,
    config_file: Path | None = None,
    *,
    write: bool = True,
) -> tuple[SearchConfig, bool]:
    """The run's config and whether the run resumes (``write``: save it in ``run_dir``).

    A new run starts from ``config_file`` (or the defaults) with the ``given`` settings
    applied; the proposer is the LLM when one is configured, the offline proposer
    otherwise. A resumed run keeps its stored settings: see
    :meth:`SearchConfig.resumed_with` for what may change.
    """
    if os.path.lexists(run_dir / CONFIG_FILE):
        if config_file is not None:
            raise ConfigError(f"{run_dir} already holds a run; --config only applies to a new run")
        stored = SearchConfig.load(run_dir / CONFIG_FILE)
        llm = section(given.settings(encode(stored)), "llm")
        new_llm = LLMConfig.from_dict(llm, "options: llm") if llm is not None else None
        if new_llm is not None and stored.proposer != "llm":
            raise ConfigError(
                f"{run_dir} is a run of the offline proposer; an LLM cannot join it "
                "(start a new --run-dir instead)"
            )
        wanted = {**given.overrides(encode(stored)), "llm": new_llm}
        if not write:
            return stored.resumed_with(wanted), True
        return open_run_dir(run_dir, None, wanted), True
    # Unset settings keep their defaults, which may depend on others (the warm-up length
    # on the number of iterations), so build from the raw settings, not from a config.
    where = str(config_file) if config_file is not None else "options"
    raw = given.settings(upgraded(read_yaml(config_file)) if config_file is not None else {})
    if raw.get("llm") is not None:
        raw["proposer"] = "llm"
    config = SearchConfig.from_dict(raw, where)
    return (open_run_dir(run_dir, config, {}) if write else config), False


def make_proposer(config: SearchConfig, spent: float) -> Proposer:
    if config.proposer == "llm":
        if config.llm is None:
            raise ConfigError("the llm proposer needs an LLM: give --base-url and --model")
        client = LLMClient(config.llm, spent=spent)
        return LLMProposer(client, PromptSettings.from_config(config))
    return OfflineProposer(config.surrogate_screen)


def _recorded(path: Path) -> Any:
    """What ``agent_models.json`` holds; a damaged or odd file counts as other models."""
    try:
        return json.loads(read_capped(path, 10_000_000, root=path.parent))
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
    if not os.path.lexists(path):
        write_file(path, json.dumps(described, indent=2))
    elif _recorded(path) != described:
        print(
            f"warning: {visible(str(path), lines=False)} records other agent models than this "
            "machine's (a prior with other bytes?): fitness values of this session may not "
            "compare with earlier ones",
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
