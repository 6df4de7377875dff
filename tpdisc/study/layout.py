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
        path = self.result(stage)
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text())
        return data

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
