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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpdisc.errors import ConfigError, excerpt
from tpdisc.safefiles import FileRefused, inside, read_capped, safe_name

MAX_RESULT_BYTES = 200_000_000


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

    def runs(self, k: int) -> list[RunRef]:
        """The ``k`` evolution runs, then the ``k`` generation-only runs."""
        refs = []
        for kind, prefix in (("evolution", "evolve"), ("generation", "generate")):
            for i in range(k):
                label = f"{prefix}-{i + 1}"
                refs.append(RunRef(label, kind, i, self.root / "runs" / label))
        return refs

    def read_result(self, stage: str) -> dict[str, Any] | None:
        """A stage's results, None when not done; a study folder may come from anyone, so
        what is not a JSON object is refused in one line naming the file."""
        path = self.result(stage)
        if not path.exists():
            return None
        try:
            data = json.loads(read_capped(path, MAX_RESULT_BYTES))
        except FileRefused as err:
            raise ConfigError(str(err)) from None
        except (ValueError, RecursionError) as err:  # RecursionError: nesting thousands deep
            reason = str(err).splitlines()[0][:100] if str(err) else type(err).__name__
            raise ConfigError(f"{path}: not a stage's results ({reason})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object, got {excerpt(data)}")
        return data

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
        path = self.result(stage)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.part")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, path)
        return path


def select_runs(refs: list[RunRef], which: str) -> list[RunRef]:
    """``evolution``, ``generation`` or ``all`` of a study's runs."""
    return [r for r in refs if which == "all" or r.kind == which]
