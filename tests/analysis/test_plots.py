"""Figures: coverage curves (mean ± sem) and the pairwise matrix, saved as PNG."""

from __future__ import annotations

import ast
from pathlib import Path

import matplotlib.image
import matplotlib.pyplot as plt
import numpy as np
import pytest

import tpdisc
from tpdisc.analysis import plots
from tpdisc.analysis.plots import plain_figures
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


LONG = ["ingredient_productivity", "ingredient_productivity (ablated)", "recency_router (ablated)"]


def inside_canvas(fig: plt.Figure) -> None:
    """Every title and tick label is drawn within the saved canvas (nothing is cut)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    # The figure was closed after saving: draw it again, as saved, on a canvas of its own.
    fig.set_dpi(130)
    canvas_agg = FigureCanvasAgg(fig)
    canvas_agg.draw()
    renderer = canvas_agg.get_renderer()
    canvas = fig.bbox
    texts = [ax.title for ax in fig.axes] + [
        label for ax in fig.axes for label in ax.get_xticklabels() + ax.get_yticklabels()
    ]
    for text in texts:
        if not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        assert box.x0 >= -1 and box.y0 >= -1, text.get_text()
        assert box.x1 <= canvas.x1 + 1 and box.y1 <= canvas.y1 + 1, text.get_text()
    whole = fig.get_tightbbox(renderer)
    assert whole.x0 >= -0.05 and whole.y0 >= -0.05
    assert whole.x1 <= fig.get_figwidth() + 0.05 and whole.y1 <= fig.get_figheight() + 0.05


def test_pairwise_figure_with_long_names_fits(tmp_path: Path, figures: list[plt.Figure]) -> None:
    evs = [evaluation(name, 3 + 3 * k, seeds=8) for k, name in enumerate(LONG)]
    comparison = pairwise([e.protocol for e in evs], [e.final for e in evs])
    path = plots.pairwise_figure(comparison, tmp_path / "pairwise.png")
    assert_png(path)
    (fig,) = figures
    inside_canvas(fig)
    height, width, _ = matplotlib.image.imread(path).shape
    assert abs(width - fig.get_figwidth() * 130) <= 1
    assert abs(height - fig.get_figheight() * 130) <= 1
    ax, bar = fig.axes
    assert bar.get_ylabel()  # the colour bar says what it shows
    # the matrix keeps readable cells: at least half an inch each
    cell = ax.get_window_extent().width / len(LONG) / 130
    assert cell >= 0.5
    # labels are wrapped, never cut: every word of every name is there
    shown = [t.get_text().replace("\n", "").replace(" ", "") for t in ax.get_yticklabels()]
    assert shown == [name.replace(" ", "") for name in LONG]


def test_coverage_figure_with_long_names_fits(tmp_path: Path, figures: list[plt.Figure]) -> None:
    evs = [evaluation(name, 3 + 3 * k) for k, name in enumerate(LONG)]
    title = "10 agents (empowerment×10), 150 steps, 30 sims, variant full; " * 2
    plots.coverage_figure(evs, tmp_path / "coverage.png", title)
    (fig,) = figures
    inside_canvas(fig)
    legend = fig.axes[0].get_legend()
    assert "mean ± sem" in legend.get_title().get_text()
    assert "sem" in fig.axes[0].get_ylabel()
    box = legend.get_window_extent(fig.canvas.get_renderer())  # type: ignore[attr-defined]
    assert box.x1 <= fig.bbox.x1 + 1


def test_short_label_wraps_on_word_breaks() -> None:
    assert plots.short_label("asocial") == "asocial"
    assert plots.short_label("ingredient_productivity (ablated)", 22) == (
        "ingredient_\nproductivity (ablated)"
    )
    assert plots.short_label("x" * 100, 10, max_lines=2) == "x" * 10 + "\n" + "x" * 9 + "…"


def test_pairwise_colours_are_pale_where_the_difference_is_noise() -> None:
    difference = np.array([[np.nan, 1.4, 10.0], [-1.4, np.nan, 8.6], [-10.0, -8.6, np.nan]])
    p = np.array([[np.nan, 0.8, 0.001], [0.9, np.nan, 0.01], [0.99, 0.99, np.nan]])
    rgba = plots.pairwise_colours(difference, p, limit=10.0)
    white = np.ones(3)
    # significant either way: full colour; noise: close to white, however large its share
    assert np.abs(rgba[0, 2, :3] - white).sum() > 1.0
    assert np.abs(rgba[2, 0, :3] - white).sum() > 1.0
    assert np.abs(rgba[0, 1, :3] - white).sum() < 0.1
    assert rgba[1, 1, :3].tolist() == [1.0, 1.0, 1.0]
    noise_only = plots.pairwise_colours(difference[:2, :2], p[:2, :2], limit=1.4)
    assert np.abs(noise_only[0, 1, :3] - white).max() < 0.25  # the largest cell stays pale


def test_every_module_that_draws_names_turns_mathtext_off() -> None:
    # A text reads the setting when it is made: a module drawing without it would read a
    # protocol's name "$\\notacommand$" as mathtext and crash.
    package = Path(tpdisc.__file__).parent
    # It draws fixed texts and mode names checked against the archive's list only.
    no_names = {Path("search/plots.py")}
    drawing = []
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        if "matplotlib.pyplot" in imports and path.relative_to(package) not in no_names:
            drawing.append(path)
            calls = {
                node.func.id
                for node in ast.walk(tree)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            }
            assert "plain_figures" in calls, f"{path}: draws without plain_figures()"
    assert len(drawing) >= 8


def test_figures_draw_names_as_they_are(tmp_path: Path) -> None:
    plain_figures()
    fig, ax = plt.subplots()
    ax.set_title("$\\notacommand{x}$")
    ax.plot([0, 1], label="$\\frac")
    ax.legend()
    fig.savefig(tmp_path / "f.png")
    plt.close(fig)
    assert (tmp_path / "f.png").read_bytes().startswith(b"\x89PNG")
