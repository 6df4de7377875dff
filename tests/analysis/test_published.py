"""The reference study's headline figures: one of each, and the same as the per-setting
figures the generalization compares against."""

from __future__ import annotations

from tpdisc.analysis import published
from tpdisc.analysis.generalize import SETTINGS


def test_the_generalization_range_is_that_of_the_settings() -> None:
    gains = [s.reference_gain for s in SETTINGS if s.name != "llm"]
    assert (min(gains), max(gains)) == published.GENERALIZATION_GAINS
    stochastic = next(s for s in SETTINGS if s.name == "stochastic")
    assert stochastic.reference_gain == published.STOCHASTIC_GAIN_PERCENT


def test_each_headline_once_with_its_figure() -> None:
    keys = [h.key for h in published.HEADLINES]
    assert len(keys) == len(set(keys)) == 5
    figures = {h.key: h.figure for h in published.HEADLINES}
    assert figures["evolved_gain"].startswith("+33 %")
    assert figures["ablation"] == "top protocols −21 (88 → 67)"
    assert figures["generalization"] == "+12 … +49 %"
