"""Where a study keeps what it makes: one folder, the same names in every study.

::

    DIR/study.yaml              the config (a rerun resumes from it)
    DIR/study.sqlite            every simulation of the study's own stages, and the log
    DIR/runs/evolve-K/          the searches: run folders of tpdisc evolve
    DIR/runs/generate-K/
    DIR/best/LABEL.py           each run's best protocol, as a runnable file
    DIR/results/STAGE.json      a stage's numbers; written last, it marks the stage done
    DIR/figures/*.png
    DIR/exports/*.parquet|csv   long-format tables for pandas or R
    DIR/report/index.html       the browsable report

A study folder may come from anyone: nothing below ``DIR`` is read or written through a
symbolic link (:mod:`tpdisc.safefiles`), so a folder made elsewhere cannot lead a report
to read files outside it, or a rerun to write outside it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpdisc.config_tree import read_yaml
from tpdisc.errors import ConfigError, excerpt
from tpdisc.safefiles import (
    FileRefused,
    checked,
    inside,
    make_dirs,
    read_capped,
    safe_name,
    write_file,
)

MAX_RESULT_BYTES = 200_000_000


class _NotFinite(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a JSON text."""


def _not_finite(name: str) -> Any:
    raise _NotFinite(name)


# What a stage writes under these keys: final coverages (how many elements a group found),
# and means and standard errors of coverage, none of which can be negative.
COVERAGE_COUNTS = frozenset({"final_horizon", "final_long"})
NONNEGATIVE = frozenset(
    {"mean", "sem", "fitness", "archive_fitness", "best_so_far", "best_baseline"}
)
# Whole numbers beyond this are no count or id a study makes (and overflow a float).
_LARGEST = 2**53


def number_fault(data: Any) -> str | None:
    """What is wrong with the numbers of a stage's results, as read back (None: nothing):
    every number finite, coverages whole numbers from 0, means and errors of coverage not
    negative. Walked without recursion: a file may nest deep."""
    stack: list[tuple[str, Any, str]] = [("", data, "")]
    while stack:
        where, value, key = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{where}.{k}" if where else str(k), v, str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", v, key) for i, v in enumerate(value))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            fault = _number_fault(value, key)
            if fault is not None:
                return f"{where[:100]}: {fault}, got {excerpt(value)}"
    return None


def _number_fault(value: float, key: str) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "expected a finite number"
    if abs(value) > _LARGEST:
        return "expected a number of at most 2**53"
    if key in COVERAGE_COUNTS and (not isinstance(value, int) or value < 0):
        return "a coverage is a whole number from 0"
    if (key in NONNEGATIVE or key.endswith(("_mean", "_sem"))) and value < 0:
        return "a mean or error of coverage cannot be negative"
    return None


@dataclass(frozen=True)
class RunRef:
    """One search run of the study."""

    label: str  # evolve-1, generate-2, ...
    kind: str  # evolution or generation
    index: int  # 0-based within its kind
    path: Path


@dataclass(frozen=True)
class StudyDir:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "study.yaml"

    @property
    def database(self) -> Path:
        return self.root / "study.sqlite"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def exports(self) -> Path:
        return self.root / "exports"

    @property
    def report(self) -> Path:
        return self.root / "report"

    @property
    def best(self) -> Path:
        return self.root / "best"

    def result(self, stage: str) -> Path:
        return self.results / f"{stage}.json"

    def settings(self) -> dict[str, Any]:
        """What ``study.yaml`` holds, as written."""
        return read_yaml(self.config, self.root)

    def folder(self, path: Path) -> Path:
        """The folder ``path`` below the study's, made if missing, reached without
        following a link (one is refused in one line naming it)."""
        try:
            return make_dirs(path, self.root)
        except FileRefused as err:
            raise ConfigError(str(err)) from None

    def figure(self, name: str) -> Path:
        """Where the figure ``name`` goes (``figures/`` made if missing)."""
        return self.folder(self.figures) / name

    def runs(self, k: int) -> list[RunRef]:
        """The ``k`` evolution runs, then the ``k`` generation-only runs; a run folder
        that is a link (or lies under one) is refused."""
        refs = []
        for kind, prefix in (("evolution", "evolve"), ("generation", "generate")):
            for i in range(k):
                label = f"{prefix}-{i + 1}"
                path = self.root / "runs" / label
                try:
                    checked(path, self.root)
                except FileRefused as err:
                    raise ConfigError(str(err)) from None
                refs.append(RunRef(label, kind, i, path))
        return refs

    def read_result(self, stage: str) -> dict[str, Any] | None:
        """A stage's results, None when not done; a study folder may come from anyone, so
        what is not a JSON object is refused in one line naming the file."""
        path = self.result(stage)
        if not os.path.lexists(path):
            return None
        try:
            data = json.loads(
                read_capped(path, MAX_RESULT_BYTES, root=self.root), parse_constant=_not_finite
            )
        except FileRefused as err:
            raise ConfigError(str(err)) from None
        except _NotFinite as err:
            raise ConfigError(f"{path}: holds {err}, where every number must be finite") from None
        except (ValueError, RecursionError) as err:  # RecursionError: nesting thousands deep
            reason = str(err).splitlines()[0][:100] if str(err) else type(err).__name__
            raise ConfigError(f"{path}: not a stage's results ({reason})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object, got {excerpt(data)}")
        fault = number_fault(data)
        if fault is not None:
            raise ConfigError(f"{path}: {fault}")
        return data

    @contextmanager
    def reading(self, *stages: str) -> Iterator[None]:
        """Where the block reads the results of ``stages``: a value there that is not what
        the stage writes (a hand-made or damaged file: a missing key, a text for a list)
        is one line naming the file, not a traceback from deep in a figure or a table."""
        try:
            yield
        except (
            KeyError,
            TypeError,
            ValueError,
            IndexError,
            AttributeError,
            ArithmeticError,
        ) as err:
            files = ", ".join(str(self.result(stage)) for stage in stages)
            reason = f"{type(err).__name__}: {excerpt(str(err), 80)}"
            raise ConfigError(f"{files}: not what the study writes there ({reason})") from None

    def run_folder(self, run: Any) -> tuple[str, Path]:
        """The label and folder of a run listed in ``results/search.json``: the label must
        be a plain name (it names folders of the report) and the folder inside the study's."""
        where = self.result("search")
        label = run.get("label") if isinstance(run, dict) else None
        path = run.get("path") if isinstance(run, dict) else None
        if not isinstance(label, str) or safe_name(label) != label:
            raise ConfigError(f"{where}: a run's label must be a plain name, got {excerpt(label)}")
        if not isinstance(path, str):
            raise ConfigError(f"{where}: run {label}: expected a path, got {excerpt(path)}")
        try:
            return label, inside(self.root, path, f"folder of run {label}")
        except FileRefused as err:
            raise ConfigError(f"{where}: {err}") from None

    def write_result(self, stage: str, data: dict[str, Any]) -> Path:
        """Atomically: a killed study leaves no half-written result, so a result's presence
        means its stage is done."""
        try:
            return write_file(self.result(stage), json.dumps(data, indent=2) + "\n", self.root)
        except FileRefused as err:
            raise ConfigError(str(err)) from None


def select_runs(refs: list[RunRef], which: str) -> list[RunRef]:
    """``evolution``, ``generation`` or ``all`` of a study's runs."""
    return [r for r in refs if which == "all" or r.kind == which]
