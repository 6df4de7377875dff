"""The portrait's figures: drawn from the plain data, for any number of agents and with or
without metrics."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from tests.analysis.test_portrait import CONFIG, SEEDS, zero_to_one
from tpdisc.analysis import portrait_plots as plots
from tpdisc.analysis.portrait import build_portraits
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import VariantSpec, make_domain
from tpdisc.executors.make import make_executor
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig

PNG = b"\x89PNG\r\n\x1a\n"


def test_smooth_skips_undefined_steps() -> None:
    assert plots.smooth([1.0, None, 3.0], 1)[1] != plots.smooth([1.0, None, 3.0], 1)[1]  # NaN
    assert plots.smooth([1.0, None, 3.0], 3).tolist() == [1.0, 2.0, 3.0]
    assert np.isnan(plots.smooth([None, None], 3)).all()
    assert plots.smoothing_window(150) == 6 and plots.smoothing_window(10) == 1


@pytest.mark.parametrize("n_agents", [1, 4, 25])
def test_every_figure_is_drawn(toy_graph: RecipeGraph, tmp_path: Path, n_agents: int) -> None:
    domain = make_domain(toy_graph, VariantSpec())
    config = SimConfig(n_agents=n_agents, n_steps=6, agent_type="stochastic")
    named = [("zero", zero_to_one()), ("paired", BaselineProtocol("paired"))]
    if n_agents == 1:
        named = [("asocial", BaselineProtocol("asocial"))]
    got = build_portraits(domain, config, named, SEEDS[:2], make_executor("serial"))
    for draw in (plots.coverage_figure, plots.flow_figure, plots.flow_thirds_figure,
                 plots.content_figure, plots.agents_figure):  # fmt: skip
        path = draw(got[0], tmp_path / f"{draw.__name__}.png")
        assert path.read_bytes().startswith(PNG)
    metrics = plots.metrics_figure(got[0], tmp_path / "metrics.png")
    assert (metrics is None) == (n_agents == 1)  # asocial reports no metric
    assert plots.comparison_figure(got, tmp_path / "c.png").read_bytes().startswith(PNG)


def test_the_known_config_draws_too(toy_graph: RecipeGraph, tmp_path: Path) -> None:
    domain = make_domain(toy_graph, VariantSpec())
    (p,) = build_portraits(domain, CONFIG, [("z", zero_to_one())], SEEDS, make_executor("serial"))
    assert plots.metrics_figure(p, tmp_path / "m.png") is not None


def test_an_empty_flow_panel_has_no_colour_scale(
    toy_graph: RecipeGraph, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain = make_domain(toy_graph, VariantSpec())
    config = SimConfig(n_agents=4, n_steps=6, agent_type="stochastic")
    (p,) = build_portraits(domain, config, [("zero", zero_to_one())], SEEDS[:2],
                           make_executor("serial"))  # fmt: skip
    p.flow["failures"] = [[0.0] * 4 for _ in range(4)]  # a protocol that sends no failure
    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or path)
    plots.flow_figure(p, tmp_path / "flow.png")
    (fig,) = figures
    panels = [ax.get_title() for ax in fig.axes]
    assert panels[1] == "failures: none delivered" and len(fig.axes) == 3  # one colour bar
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert not any("e-" in t for t in ticks), ticks  # no 1e-9 scale


def test_names_are_drawn_as_written_never_as_mathtext(
    toy_graph: RecipeGraph, tmp_path: Path
) -> None:
    domain = make_domain(toy_graph, VariantSpec())
    (p,) = build_portraits(domain, CONFIG, [("z", zero_to_one())], SEEDS, make_executor("serial"))
    odd = "$\\notacommand{x}$ \x1b[2J $\\frac"
    metric = {"description": odd, "mean_per_step": [1.0] * CONFIG.n_steps}
    p = replace(p, name=odd, metrics={odd: metric, "$x$": metric})
    for draw in (plots.coverage_figure, plots.flow_figure, plots.content_figure,
                 plots.agents_figure, plots.metrics_figure):  # fmt: skip
        assert draw(p, tmp_path / f"{draw.__name__}.png").read_bytes().startswith(PNG)
    assert plots.comparison_figure([p, p], tmp_path / "c.png").read_bytes().startswith(PNG)


def test_a_figure_shows_a_few_metrics_however_many_there_are(
    toy_graph: RecipeGraph, tmp_path: Path
) -> None:
    domain = make_domain(toy_graph, VariantSpec())
    (p,) = build_portraits(domain, CONFIG, [("z", zero_to_one())], SEEDS, make_executor("serial"))
    metric = {"description": "", "mean_per_step": [1.0] * CONFIG.n_steps}
    many = replace(p, metrics={f"m{k}": metric for k in range(100)})
    path = plots.metrics_figure(many, tmp_path / "metrics.png")
    assert path is not None
    height, width, _ = plt.imread(path).shape
    assert height < 2_000 and width < 2_000  # 12 panels: readable, and no gigabytes
