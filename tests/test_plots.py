"""Figures: coverage curves (mean ± sem) and the pairwise matrix, saved as PNG."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pytest

from tpdisc.analysis import plots
from tpdisc.analysis.stats import pairwise
from tpdisc.sim.evaluate import Evaluation


def evaluation(name: str, level: int, seeds: int = 4, steps: int = 6) -> Evaluation:
    rng = np.random.default_rng(level)
    curves = [
        [4 + min(t * level // 3, 40) + int(rng.integers(3)) for t in range(steps + 1)]
        for _ in range(seeds)
    ]
    return Evaluation(name, list(range(seeds)), [c[-1] for c in curves], curves)


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[plt.Figure]:
    """Every figure saved, inspected before it is closed."""
    saved: list[plt.Figure] = []
    save = plots._save

    def keep(fig: plt.Figure, path: str | Path) -> Path:
        saved.append(fig)
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return saved


def assert_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = matplotlib.image.imread(path).shape
    assert height > 100 and width > 100


def test_coverage_figure(tmp_path: Path, figures: list[plt.Figure]) -> None:
    evs = [evaluation("low", 3), evaluation("high", 9), evaluation("mid", 6)]
    path = plots.coverage_figure(evs, tmp_path / "new" / "coverage.png", "toy run")
    assert path == tmp_path / "new" / "coverage.png"
    assert_png(path)
    (ax,) = figures[0].axes
    assert ax.get_title() == "toy run"
    labels = [line.get_label() for line in ax.get_lines()]
    # best first, with mean ± sem in the legend
    assert [label.split(" ")[0] for label in labels] == ["high", "mid", "low"]
    high = evs[1]
    assert labels[0] == f"high ({high.mean:.1f} ± {high.sem:.1f})"
    assert ax.get_lines()[0].get_ydata().tolist() == pytest.approx(high.curve_mean())
    assert len(ax.collections) == 3  # one sem band per protocol
    assert plt.get_fignums() == []  # closed after saving


def test_pairwise_figure(tmp_path: Path, figures: list[plt.Figure]) -> None:
    evs = [evaluation("a", 2, seeds=10), evaluation("b", 9, seeds=10)]
    comparison = pairwise([e.protocol for e in evs], [e.final for e in evs])
    path = plots.pairwise_figure(comparison, tmp_path / "pairwise.png")
    assert_png(path)
    texts = [t.get_text() for t in figures[0].axes[0].texts]
    assert len(texts) == 2  # off-diagonal cells only
    assert any(t.endswith("***") and t.startswith("+") for t in texts)
    assert any(t.startswith("-") and not t.endswith("*") for t in texts)
