"""A model of fitness over designs, to choose which of many candidate designs to score.

Scoring a design costs 30 simulations; rating one with a model of the archive costs
microseconds. The offline proposer makes many children of a parent (mutations, numeric
tuning, crossover) and scores only the one :class:`Surrogate` rates best: an ensemble of
randomised trees (scikit-learn's ``ExtraTreesRegressor``) over a design's genes, fitted
on every design the archive has scored (raced ones too: their fitness over the race's
first seeds is noisier, and still says the design is poor). Its rating is the trees' mean
plus their spread, so that a child unlike anything scored (where the trees disagree) gets
its chance: an upper confidence bound, as in model-based optimisation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.ensemble import ExtraTreesRegressor
from sklearn.feature_extraction import DictVectorizer

from tpdisc.search.blocks import LIMITS, Genome

MIN_DESIGNS = 20  # below, the model would rate by chance: no screening
TREES = 48


def design_features(g: Genome) -> dict[str, float]:
    """A design as named numbers: its choices one-hot (route, schedule, each filter), each
    feature weight (absent: 0) and each numeric gene."""
    out: dict[str, float] = {f"route={g.route}": 1.0, f"schedule={g.schedule}": 1.0}
    out.update({f"filter={f}": 1.0 for f in g.filters})
    out.update({f"weight={f}": w for f, w in g.weights})
    out.update({name: float(getattr(g, name)) for name in LIMITS})
    out["horizon"] = float(np.log(g.horizon))
    return out


class Surrogate:
    """Fitness predicted from a design's genes, fitted on ``(design, fitness)`` pairs."""

    def __init__(self, designs: Sequence[Genome], fitness: Sequence[float], seed: int) -> None:
        self.vectorizer = DictVectorizer(sparse=False)
        x = self.vectorizer.fit_transform([design_features(g) for g in designs])
        self.model = ExtraTreesRegressor(
            n_estimators=TREES, min_samples_leaf=2, random_state=seed, n_jobs=1
        )
        self.model.fit(x, np.asarray(fitness, dtype=float))

    def rate(self, designs: Sequence[Genome]) -> np.ndarray:
        """Each design's rating: the trees' mean prediction plus their standard deviation."""
        x = self.vectorizer.transform([design_features(g) for g in designs])
        per_tree = np.stack([tree.predict(x) for tree in self.model.estimators_])
        rating: np.ndarray = per_tree.mean(axis=0) + per_tree.std(axis=0)
        return rating
