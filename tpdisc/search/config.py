"""The settings of a protocol search: plain, frozen, loadable from and saved as YAML."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tpdisc.config_tree import (
    decode,
    encode,
    encode_fields,
    flatten,
    read_yaml,
    with_value,
    write_yaml,
)
from tpdisc.errors import ConfigError
from tpdisc.llm_client import LLMConfig
from tpdisc.sandbox.config import SandboxConfig
from tpdisc.sim.config import ExecutorConfig, SimConfig

PROPOSERS: tuple[str, ...] = ("offline", "llm")
# What a stored run's settings that lack these meant: it was begun before they existed
# (a received memory made a stochastic agent's pair tried for good then).
LEGACY: dict[str, Any] = {
    "racing": False,
    "surrogate_screen": 1,
    "sim.params.stochastic.received": "always",
}
# Racing stops a candidate whose first-round mean plus this many standard errors is below
# the bar: one whose true fitness equals the bar is stopped about 2 % of the time.
RACE_Z = 2.0

# Settings a resumed run may change: they do not alter what a protocol's fitness means.
RESUMABLE_CHANGES = ("iterations", "llm", "executor", "batch", "record_seeds")

# Where the settings of files written before the config tree (tpdisc ≤ 0.1) now live.
_FLAT_SETTINGS = {
    "n_agents": "sim.n_agents",
    "n_steps": "sim.n_steps",
    "agent_type": "sim.agent_type",
    "variant": "sim.variant.name",
    "prior_seed": "sim.params.prior_seed",
    "time_limit": "sandbox.time_limit",
}


@dataclass(frozen=True)
class SearchConfig:
    """Everything that, with the archive so far, fixes what the search does next.

    ``sim`` is the simulation every candidate is scored on (agents, their parameters and
    prior, variant, steps), the same tree ``tpdisc evaluate`` reads; fitness is the mean
    final coverage over seeds ``0..sims-1``. ``sandbox`` bounds each candidate's run
    (``time_limit`` is also quoted to the LLM); ``sandboxed=False`` runs candidates
    in-process, for tests of trusted code only.
    """

    iterations: int = 200
    warmup: int | None = None  # None: a quarter of the iterations (SPEC §4: 50 of 200)
    generation_only: bool = False
    sims: int = 30
    seed: int = 0
    thompson_lambda: float = 3.0
    contrast_temperature: float = 0.4
    n_contrasts: int = 2
    p_improve: float = 0.5
    max_repairs: int = 3
    check_steps: int = 10  # length of the short validation run
    # Iterations proposed from the same archive and scored together (1: each iteration sees
    # every one before it, as SPEC §4 describes).
    batch: int = 1
    # Racing: a candidate is scored on its first ``race_sims`` seeds, and stopped there
    # (status ``raced``) when clearly below the ``race_rank``-th best valid protocol: its
    # mean plus RACE_Z standard errors under that protocol's fitness. Every valid protocol
    # keeps its fitness over all ``sims`` seeds. None: on for the offline proposer's
    # evolution runs; off for LLM runs (the reference scores every candidate fully, and a
    # model's call costs more than its simulations) and generation-only runs (their
    # archives feed analyses that need every protocol's full fitness).
    racing: bool | None = None
    race_sims: int = 10
    race_rank: int = 10
    # The offline proposer's children of a parent per improve iteration, of which a model
    # of the archive's fitness picks the one to score (1: no model, the first child).
    surrogate_screen: int = 24
    # The evaluation seeds on which each valid protocol's simulations are kept for the
    # analyses (its schedule, outcome and transmission tally: tpdisc.sim.records), so that
    # they need not run them again. None: every seed; empty: none.
    record_seeds: tuple[int, ...] | None = None
    proposer: str = "offline"
    sim: SimConfig = field(default_factory=SimConfig)
    sandboxed: bool = True
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    llm: LLMConfig | None = None

    def __post_init__(self) -> None:
        if self.warmup is None:
            object.__setattr__(self, "warmup", self.iterations // 4)
        positive = {
            "iterations": self.iterations,
            "sims": self.sims,
            "check_steps": self.check_steps,
            "batch": self.batch,
            "race_sims": self.race_sims,
            "race_rank": self.race_rank,
            "surrogate_screen": self.surrogate_screen,
        }
        for name, value in positive.items():
            if value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if not 0 <= self.warmup_iterations <= self.iterations:
            raise ConfigError(f"warmup must lie in 0..iterations, got {self.warmup}")
        if self.seed < 0:
            raise ConfigError(f"seed must not be negative, got {self.seed}")
        if self.thompson_lambda <= 0:
            raise ConfigError(f"thompson_lambda must be positive, got {self.thompson_lambda}")
        if self.contrast_temperature <= 0:
            raise ConfigError(
                f"contrast_temperature must be positive, got {self.contrast_temperature}"
            )
        if self.n_contrasts < 0:
            raise ConfigError(f"n_contrasts must not be negative, got {self.n_contrasts}")
        if not 0 <= self.p_improve <= 1:
            raise ConfigError(f"p_improve must lie in [0, 1], got {self.p_improve}")
        if self.max_repairs < 0:
            raise ConfigError(f"max_repairs must not be negative, got {self.max_repairs}")
        if any(seed < 0 for seed in self.record_seeds or ()):
            raise ConfigError(f"record_seeds must not be negative, got {self.record_seeds}")
        if self.proposer not in PROPOSERS:
            raise ConfigError(
                f"unknown proposer {self.proposer!r}; choose from {', '.join(PROPOSERS)}"
            )
        if self.proposer == "llm" and self.llm is None:
            raise ConfigError("the llm proposer needs an LLM: give a base URL and a model")

    def sim_config(self, n_steps: int | None = None) -> SimConfig:
        """The simulation candidates are scored on (``n_steps``: a shorter check run)."""
        return replace(self.sim, n_steps=n_steps) if n_steps else self.sim

    @property
    def seeds(self) -> list[int]:
        return list(range(self.sims))

    @property
    def recorded_seeds(self) -> tuple[int, ...]:
        """The evaluation seeds whose simulations are kept for the analyses."""
        if self.record_seeds is None:
            return tuple(self.seeds)
        return tuple(s for s in self.seeds if s in self.record_seeds)

    @property
    def races(self) -> bool:
        """Whether candidates are raced (``racing``, or its default for this run)."""
        if self.racing is not None:
            return self.racing
        return self.proposer == "offline" and not self.generation_only

    @property
    def bottleneck(self) -> int:
        return self.sim.bottleneck

    @property
    def warmup_iterations(self) -> int:
        assert self.warmup is not None  # resolved in __post_init__
        return self.warmup

    def is_warmup(self, iteration: int) -> bool:
        return self.generation_only or iteration <= self.warmup_iterations

    def to_dict(self) -> dict[str, Any]:
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "config") -> SearchConfig:
        return decode(cls, upgraded(data), where)

    @classmethod
    def load(cls, path: str | Path) -> SearchConfig:
        """A run folder's stored settings, not read through a link (the folder may come
        from anyone). A run begun before a setting existed goes on as it began: without
        racing, without the surrogate (``LEGACY``)."""
        data = upgraded(read_yaml(path, Path(path).parent))
        given = flatten(data)
        for name, value in LEGACY.items():
            if name not in given:
                data = with_value(data, name, value)
        return cls.from_dict(data, str(path))

    def save(self, path: str | Path) -> None:
        write_yaml(path, self)

    def updated(self, **changes: Any) -> SearchConfig:
        return replace(self, **changes)

    def resumed_with(self, requested: Mapping[str, Any]) -> SearchConfig:
        """This stored config with the settings given on resumption (a nested mapping, as
        in the file; None: not given).

        Only the number of iterations, the LLM connection, the executor, the batch and the
        seeds recorded for the analyses may change; asking for a different value of
        anything else is an error naming the setting.
        """
        stored = flatten(encode(self))
        merged = encode(self)
        for name, value in flatten(encode(dict(requested))).items():
            if value is None or name.split(".")[0] in RESUMABLE_CHANGES:
                continue
            if name not in stored:
                raise ConfigError(f"unknown setting {name}")
            if value == stored[name]:
                continue
            if name not in RESUMABLE_CHANGES:
                raise ConfigError(
                    f"this run was started with {name}={stored[name]!r}; a resumed run "
                    f"cannot change it to {value!r} (start a new --run-dir instead)"
                )
        for name in RESUMABLE_CHANGES:
            if requested.get(name) is not None:
                merged[name] = encode(requested[name])
        return SearchConfig.from_dict(merged) if merged != encode(self) else self


def upgraded(data: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as written before the config tree moved to where they now live."""
    data = dict(data)
    for old, new in _FLAT_SETTINGS.items():
        if old in data and not (old == "variant" and isinstance(data[old], Mapping)):
            data = with_value(data, new, data.pop(old))
    return data
