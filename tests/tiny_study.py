"""A whole study small enough for a module fixture: one run of each kind on the toy game,
stochastic agents, the serial executor; a few seconds, offline."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import TOY
from tpdisc.study.config import StudyConfig
from tpdisc.study.layout import StudyDir
from tpdisc.study.runner import run_study

LONG_STEPS = 12


def tiny_study(tmp: Path) -> StudyDir:
    recipes = tmp / "toy.json"
    recipes.write_text(json.dumps(TOY))
    config = StudyConfig.from_dict(
        {
            "runs": 1,
            "long_steps": LONG_STEPS,
            "recipes": str(recipes),
            "search": {
                "iterations": 4,
                "sims": 3,
                "sim": {"n_agents": 4, "n_steps": 8, "agent_type": "stochastic"},
            },
            "baselines": {"protocols": "standard", "sims": 3},
            "best": {"sims": 3},
            "ablation": {"top": 2, "bottom": 2, "sims": 3},
            "generalization": {"sims": 2, "settings": ["6-agents", "depth-limited"]},
            "executor": {"kind": "serial"},
        }
    )
    run_study(tmp / "study", config)
    return StudyDir(tmp / "study")


def keep_only(folder: StudyDir, stages: set[str]) -> None:
    """Forget every stage's result but ``stages``' (the study as if stopped earlier)."""
    for path in folder.results.glob("*.json"):
        if path.stem not in stages:
            path.unlink()
