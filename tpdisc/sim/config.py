"""The settings of a simulation: plain, frozen, serialisable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpdisc.agents.base import AgentParams
from tpdisc.agents.empowerment.model import overridden
from tpdisc.agents.population import AGENT_TYPES, Population, parse_population, population_size
from tpdisc.config_tree import decode, encode_fields, merged, section, with_value
from tpdisc.domain.variants import VariantSpec
from tpdisc.errors import ConfigError, unknown
from tpdisc.protocols.baselines import BASELINES, STANDARD_BASELINES
from tpdisc.sandbox.config import SandboxConfig

if TYPE_CHECKING:
    from tpdisc.executors.base import Executor

BOTTLENECK = 20
# Where a simulation's settings hold the empowerment model's section.
MODEL_SECTION = "params.empowerment"


@dataclass(frozen=True)
class SimConfig:
    """Everything that, with a seed, fixes a simulation's outcome: the one description of a
    simulation, nested in the configs of evaluations and searches.

    ``population`` (groups of (agent type, count), or text such as
    ``'empowerment:5,stochastic:5'`` in a file) replaces ``n_agents`` and ``agent_type``.
    """

    n_agents: int = 10
    n_steps: int = 150
    agent_type: str = "empowerment"
    population: Population | None = field(default=None, metadata={"from_text": parse_population})
    params: AgentParams = field(default_factory=AgentParams)
    bottleneck: int = BOTTLENECK
    variant: VariantSpec = field(default_factory=VariantSpec)

    def __post_init__(self) -> None:
        if self.population is not None:
            object.__setattr__(self, "n_agents", population_size(self.population))
        elif self.agent_type not in AGENT_TYPES:
            raise ConfigError(unknown("agent type", self.agent_type, AGENT_TYPES))
        if self.n_agents < 1:
            raise ConfigError(f"n_agents must be at least 1, got {self.n_agents}")
        if self.n_steps < 1:
            raise ConfigError(f"n_steps must be at least 1, got {self.n_steps}")
        if self.bottleneck < 1:
            raise ConfigError(f"bottleneck must be at least 1, got {self.bottleneck}")
        if not 0.0 <= self.params.p_social <= 1.0:
            raise ConfigError(f"p_social must lie in [0, 1], got {self.params.p_social}")
        uses_llm = any(kind == "llm" for kind, _ in self.agents)
        if self.params.llm is None and uses_llm:
            raise ConfigError(
                "agent type 'llm' needs a chat endpoint: give --llm-base-url and --llm-model"
            )
        if self.params.llm is not None and not uses_llm:
            # Settings no agent reads are not part of what the simulation is.
            object.__setattr__(self, "params", replace(self.params, llm=None))

    @classmethod
    def with_population(cls, text: str, **kwargs: Any) -> SimConfig:
        return cls(population=parse_population(text), **kwargs)

    @property
    def agents(self) -> Population:
        """The population as (type, count) groups."""
        return self.population or ((self.agent_type, self.n_agents),)

    def to_dict(self) -> dict[str, Any]:
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "sim") -> SimConfig:
        return decode(cls, data, where)


@dataclass(frozen=True)
class ExecutorConfig:
    """Where simulations run: ``serial``, ``processes`` (``workers`` of them, default all
    cores) or ``ray`` (``workers`` tasks in flight at most; ``address`` the cluster to
    join, default a local one, given up after ``connect_timeout`` seconds without an
    answer). It never changes a result."""

    kind: str = "processes"
    workers: int | None = None
    address: str | None = None
    connect_timeout: float = 30.0

    def __post_init__(self) -> None:
        from tpdisc.executors.make import EXECUTORS
        from tpdisc.executors.ray import check_address

        if self.kind not in EXECUTORS:
            raise ConfigError(unknown("executor", self.kind, EXECUTORS))
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"workers must be at least 1, got {self.workers}")
        if self.address is not None and self.kind != "ray":
            raise ConfigError(f"address {self.address!r} only applies to the ray executor")
        check_address(self.address)
        if not 0 < self.connect_timeout < 86_400:
            raise ConfigError(
                f"connect timeout must be above 0 and under a day, got {self.connect_timeout}"
            )

    def open(self) -> Executor:
        from tpdisc.executors.make import make_executor

        return make_executor(self.kind, self.workers, self.address, self.connect_timeout)


@dataclass(frozen=True)
class EvaluationConfig:
    """An evaluation (``tpdisc evaluate`` and ``compare``): which protocols, on which
    simulation, over which seeds, run where. ``tpdisc evaluate --print-config`` prints it as
    YAML, and ``--config FILE`` reads it back.

    ``protocols`` are baseline names or protocol files; ``trusted`` runs the files in this
    process instead of the sandbox (only for code one has read); ``recipes`` is the recipe
    file (None: ``$TPDISC_RECIPES``, the user cache, then the checked download).
    """

    protocols: tuple[str, ...] = STANDARD_BASELINES
    sims: int = 30
    seed: int = 0
    ablate: bool = False
    sim: SimConfig = field(default_factory=SimConfig)
    trusted: bool = False
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    recipes: str | None = None

    def __post_init__(self) -> None:
        if not self.protocols:
            raise ConfigError("protocols: name at least one baseline or protocol file")
        if self.sims < 1:
            raise ConfigError(f"sims must be at least 1, got {self.sims}")
        if self.seed < 0:
            raise ConfigError(f"seed must not be negative, got {self.seed}")

    @property
    def seeds(self) -> list[int]:
        return list(range(self.seed, self.seed + self.sims))

    def to_dict(self) -> dict[str, Any]:
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "config") -> EvaluationConfig:
        return decode(cls, data, where)


def anchor_protocols(data: Mapping[str, Any], folder: str | Path) -> dict[str, Any]:
    """``data``, read from a file in ``folder``, with its relative protocol paths made
    relative to that folder: a config file names its protocols wherever it is run from,
    as a file beside it would expect. Baseline names and absolute paths stay as written."""
    out = dict(data)
    protocols = out.get("protocols")
    if isinstance(protocols, list | tuple):
        out["protocols"] = [
            p
            if not isinstance(p, str) or p in BASELINES or Path(p).is_absolute()
            else str(Path(folder) / p)
            for p in protocols
        ]
    return out


def with_changes(
    base: Mapping[str, Any], changes: Mapping[str, Any], model_at: str = MODEL_SECTION
) -> dict[str, Any]:
    """Settings ``base`` (a file's, a run's) with ``changes`` (the command line's) put in,
    the empowerment model's section at ``model_at`` as :func:`overridden` means it: a
    model named anew does not keep the old one's spelled-out fields, and choices text
    wins over them."""
    out = merged(base, changes)
    model = section(changes, model_at)
    if model is not None:
        out = with_value(out, model_at, overridden(section(base, model_at) or {}, model))
    return out
