"""The settings of a whole study: one frozen tree, loaded from YAML over a shipped preset.

A study's file names only what differs from its starting point: the built-in defaults
(the study's own sizes, the ``paper`` preset) or the preset given with ``--preset``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from tpdisc.analysis.ablation import COMPARE_SEEDS
from tpdisc.analysis.embeddings import BACKENDS
from tpdisc.analysis.generalize import resolve_baselines, select_settings
from tpdisc.config_tree import decode, encode_fields, flatten, read_yaml, with_value
from tpdisc.errors import ConfigError, unknown
from tpdisc.search.config import SearchConfig
from tpdisc.sim.config import ExecutorConfig

RUN_SETS = ("evolution", "generation", "all")


def _check_runs(name: str, runs: str) -> None:
    if runs not in RUN_SETS:
        raise ConfigError(f"{name}.runs: choose from {', '.join(RUN_SETS)}, got {runs!r}")


def _check_positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ConfigError(f"{name} must be at least 1, got {value}")


@dataclass(frozen=True)
class BaselinesStage:
    """The baselines simulated over the long horizon (standard, extended, all, or names
    separated by commas)."""

    protocols: str = "all"
    sims: int = 30

    def __post_init__(self) -> None:
        resolve_baselines(self.protocols)
        _check_positive("baselines.sims", self.sims)


@dataclass(frozen=True)
class BestStage:
    """Each run's best protocol (by archive fitness) simulated over the long horizon."""

    sims: int = 30

    def __post_init__(self) -> None:
        _check_positive("best.sims", self.sims)


@dataclass(frozen=True)
class AblationStage:
    """The matched state-awareness ablation (docs/analysis.md): the ``top`` and ``bottom``
    protocols of each run, compared on the first ``sims`` of seeds 15–29."""

    runs: str = "all"
    top: int = 20
    bottom: int = 20
    sims: int = len(COMPARE_SEEDS)

    def __post_init__(self) -> None:
        _check_runs("ablation", self.runs)
        if not 1 <= self.sims <= len(COMPARE_SEEDS):
            raise ConfigError(f"ablation.sims must lie in 1..{len(COMPARE_SEEDS)}")
        if self.top < 0 or self.bottom < 0 or self.top + self.bottom == 0:
            raise ConfigError("ablation: top and bottom must not be negative, nor both 0")


@dataclass(frozen=True)
class RunsStage:
    """An analysis over the protocols of some of the runs (features, volume), with the
    first ``sims`` evaluation seeds of each protocol (None: all of them)."""

    runs: str = "generation"
    sims: int | None = None

    def __post_init__(self) -> None:
        _check_runs("analysis", self.runs)
        _check_positive("sims", self.sims)


@dataclass(frozen=True)
class EmbeddingsStage:
    runs: str = "generation"
    backend: str = "tfidf"
    seed: int = 0  # of the t-SNE map

    def __post_init__(self) -> None:
        _check_runs("embeddings", self.runs)
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"embeddings.backend: choose from {', '.join(BACKENDS)}, got {self.backend!r}"
            )


@dataclass(frozen=True)
class GeneralizationStage:
    """The best protocol of each run of ``runs`` against ``baselines`` in each setting
    (empty: all that can run without an LLM endpoint)."""

    runs: str = "evolution"
    settings: tuple[str, ...] = ()
    baselines: str = "standard"
    sims: int = 30

    def __post_init__(self) -> None:
        _check_runs("generalization", self.runs)
        select_settings(self.settings)
        resolve_baselines(self.baselines)
        _check_positive("generalization.sims", self.sims)


@dataclass(frozen=True)
class StudyConfig:
    """A study (docs/study.md): ``runs`` evolution runs and as many generation-only runs of
    ``search``, then the analyses of what they found.

    ``long_steps`` is the horizon of the coverage curves of baselines and best protocols
    (None: twice ``search.sim.n_steps``). ``executor`` runs every stage's simulations (it
    replaces ``search.executor``); ``recipes`` as everywhere (None: ``$TPDISC_RECIPES``,
    the user cache, then the checked download).
    """

    runs: int = 5
    long_steps: int | None = None
    search: SearchConfig = field(default_factory=SearchConfig)
    baselines: BaselinesStage = field(default_factory=BaselinesStage)
    best: BestStage = field(default_factory=BestStage)
    ablation: AblationStage = field(default_factory=AblationStage)
    features: RunsStage = field(default_factory=RunsStage)
    volume: RunsStage = field(default_factory=RunsStage)
    embeddings: EmbeddingsStage = field(default_factory=EmbeddingsStage)
    generalization: GeneralizationStage = field(default_factory=GeneralizationStage)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    recipes: str | None = None

    def __post_init__(self) -> None:
        _check_positive("runs", self.runs)
        if self.long_steps is None:
            object.__setattr__(self, "long_steps", 2 * self.search.sim.n_steps)
        if self.horizon_long < self.search.sim.n_steps:
            raise ConfigError(
                f"long_steps ({self.long_steps}) must be at least search.sim.n_steps "
                f"({self.search.sim.n_steps})"
            )

    @property
    def horizon(self) -> int:
        return self.search.sim.n_steps

    @property
    def horizon_long(self) -> int:
        assert self.long_steps is not None  # resolved in __post_init__
        return self.long_steps

    def run_config(self, generation_only: bool, index: int) -> SearchConfig:
        """The search of run ``index`` (0-based) of its kind: its own proposer seed, and
        the seeds it keeps records of for the analyses (unless ``search.record_seeds``
        says): those the study's features, volume and ablation use of that kind of run."""
        record_seeds = self.search.record_seeds
        if record_seeds is None:
            record_seeds = self.analysed_seeds("generation" if generation_only else "evolution")
        return replace(
            self.search,
            generation_only=generation_only,
            seed=self.search.seed + index,
            executor=self.executor,
            record_seeds=record_seeds,
        )

    def analysed_seeds(self, kind: str) -> tuple[int, ...]:
        """The evaluation seeds of a run of ``kind`` (evolution, generation) whose
        simulations the study's analyses use: the first seeds of the features and volume
        stages, the ablation's compare seeds."""
        seeds: set[int] = set()
        for stage in (self.features, self.volume):
            if stage.runs in (kind, "all"):
                seeds.update(range(stage.sims or self.search.sims))
        if self.ablation.runs in (kind, "all"):
            seeds.update(COMPARE_SEEDS[: self.ablation.sims])
        return tuple(sorted(s for s in seeds if s < self.search.sims))

    def to_dict(self) -> dict[str, Any]:
        data = encode_fields(self)
        # The study's executor runs the searches too: a second one would only mislead.
        del data["search"]["executor"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "study") -> StudyConfig:
        return decode(cls, data, where)


# Settings a study resumed from its folder may change: they never change a result.
RESUMABLE = ("executor", "recipes")


def preset_names() -> list[str]:
    folder = resources.files("tpdisc.study") / "presets"
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


def preset_data(name: str) -> dict[str, Any]:
    """The settings of a shipped preset, as written in its file."""
    if name not in preset_names():
        raise ConfigError(unknown("preset", name, preset_names()))
    path = resources.files("tpdisc.study") / "presets" / f"{name}.yaml"
    with resources.as_file(path) as file:
        return read_yaml(file)


def load_study_config(
    path: Path | None = None,
    preset: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> StudyConfig:
    """The preset's settings (none: the defaults), with the file's and then ``overrides``'
    (dotted keys, None: not given) on top."""
    raw: dict[str, Any] = preset_data(preset) if preset else {}
    where = f"preset {preset}" if preset else "study"
    if path is not None:
        where = str(path)
        for key, value in flatten(read_yaml(path)).items():
            raw = with_value(raw, key, value)
    for key, value in (overrides or {}).items():
        if value is not None:
            raw = with_value(raw, key, value)
    return StudyConfig.from_dict(raw, where)


def resumed_config(stored: StudyConfig, requested: StudyConfig | None) -> StudyConfig:
    """The stored config of a study folder, with what a rerun may change taken from
    ``requested``; any other difference is an error naming the setting."""
    if requested is None:
        return stored
    old, new = flatten(stored.to_dict()), flatten(requested.to_dict())
    for key in sorted(set(old) | set(new)):
        if key.split(".")[0] in RESUMABLE or old.get(key) == new.get(key):
            continue
        raise ConfigError(
            f"this study was started with {key}={old.get(key)!r}; a rerun cannot change it "
            f"to {new.get(key)!r} (use another --out folder)"
        )
    return replace(stored, executor=requested.executor, recipes=requested.recipes)
