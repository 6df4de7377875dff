"""The settings of a protocol search: plain, frozen, loadable from and saved as YAML."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from tpdisc.errors import ConfigError
from tpdisc.llm.client import LLMConfig
from tpdisc.sim.config import BOTTLENECK, SimConfig

PROPOSERS: tuple[str, ...] = ("offline", "llm")

# Settings a resumed run may change: they do not alter what a protocol's fitness means.
RESUMABLE_CHANGES = frozenset({"iterations", "llm"})


def _default_agent_type() -> str:
    return SimConfig().agent_type


@dataclass(frozen=True)
class SearchConfig:
    """Everything that, with the archive so far, fixes what the search does next.

    ``agent_type`` is resolved when the config is made (from :class:`SimConfig`'s default)
    and then stored, so a resumed run keeps the agents it started with.
    """

    iterations: int = 200
    warmup: int | None = None  # None: a quarter of the iterations (SPEC §4: 50 of 200)
    generation_only: bool = False
    sims: int = 30  # fitness = mean final coverage over seeds 0..sims-1, like the baselines
    n_agents: int = 10
    n_steps: int = 150
    agent_type: str = field(default_factory=_default_agent_type)
    variant: str = "full"
    prior_seed: int = 0  # the empowerment agents' prior (see tpdisc prior build --seed)
    seed: int = 0
    thompson_lambda: float = 3.0
    contrast_temperature: float = 0.4
    n_contrasts: int = 2
    p_improve: float = 0.5
    max_repairs: int = 3
    check_steps: int = 10  # length of the short validation run
    time_limit: float = 20.0  # sandbox CPU seconds per simulation, also quoted to the LLM
    sandboxed: bool = True  # False runs candidates in-process: tests of trusted code only
    proposer: str = "offline"
    llm: LLMConfig | None = None

    def __post_init__(self) -> None:
        if self.warmup is None:
            object.__setattr__(self, "warmup", self.iterations // 4)
        positive = {
            "iterations": self.iterations,
            "sims": self.sims,
            "n_agents": self.n_agents,
            "n_steps": self.n_steps,
            "check_steps": self.check_steps,
        }
        for name, value in positive.items():
            if value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}")
        if not 0 <= self.warmup_iterations <= self.iterations:
            raise ConfigError(f"warmup must lie in 0..iterations, got {self.warmup}")
        if self.seed < 0:
            raise ConfigError(f"seed must not be negative, got {self.seed}")
        if self.prior_seed < 0:
            raise ConfigError(f"prior_seed must not be negative, got {self.prior_seed}")
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
        if self.time_limit <= 0:
            raise ConfigError(f"time_limit must be positive, got {self.time_limit}")
        if self.proposer not in PROPOSERS:
            raise ConfigError(
                f"unknown proposer {self.proposer!r}; choose from {', '.join(PROPOSERS)}"
            )
        if self.proposer == "llm" and self.llm is None:
            raise ConfigError("the llm proposer needs an LLM: give a base URL and a model")
        self.sim_config()  # agent type and variant checked where they are defined

    def sim_config(self, n_steps: int | None = None) -> SimConfig:
        from tpdisc.agents.base import AgentParams
        from tpdisc.domain.variants import VariantSpec

        return SimConfig(
            n_agents=self.n_agents,
            n_steps=n_steps or self.n_steps,
            agent_type=self.agent_type,
            params=AgentParams(prior_seed=self.prior_seed),
            variant=VariantSpec(self.variant),
        )

    @property
    def seeds(self) -> list[int]:
        return list(range(self.sims))

    @property
    def bottleneck(self) -> int:
        return BOTTLENECK

    @property
    def warmup_iterations(self) -> int:
        assert self.warmup is not None  # resolved in __post_init__
        return self.warmup

    def is_warmup(self, iteration: int) -> bool:
        return self.generation_only or iteration <= self.warmup_iterations

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "llm"}
        data["llm"] = self.llm.to_dict() if self.llm is not None else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "config") -> SearchConfig:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of settings")
        data = dict(data)
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ConfigError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}")
        llm = data.pop("llm", None)
        if llm is not None:
            data["llm"] = (
                llm if isinstance(llm, LLMConfig) else LLMConfig.from_dict(llm, f"{where}: llm")
            )
        try:
            return cls(**data)
        except TypeError as err:
            raise ConfigError(f"{where}: {err}") from None

    @staticmethod
    def read_yaml(path: str | Path) -> dict[str, Any]:
        """The settings in a YAML file, as written (defaults not filled in)."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"{path}: cannot read search config ({err})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of settings")
        return data

    @classmethod
    def load(cls, path: str | Path) -> SearchConfig:
        return cls.from_dict(cls.read_yaml(path), str(path))

    def save(self, path: str | Path) -> None:
        """Write atomically: a crash leaves the old file or the new one, never half of one."""
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False), encoding="utf-8")
        os.replace(tmp, path)

    def updated(self, **changes: Any) -> SearchConfig:
        return replace(self, **changes)

    def resumed_with(self, requested: Mapping[str, Any]) -> SearchConfig:
        """This stored config with the options given on resumption.

        Only the number of iterations and the LLM connection may change; asking for a
        different value of anything else is an error naming the setting.
        """
        changes: dict[str, Any] = {}
        for name, value in requested.items():
            if value is None or value == getattr(self, name):
                continue
            if name not in RESUMABLE_CHANGES:
                raise ConfigError(
                    f"this run was started with {name}={getattr(self, name)!r}; a resumed run "
                    f"cannot change it to {value!r} (start a new --run-dir instead)"
                )
            changes[name] = value
        return replace(self, **changes) if changes else self
