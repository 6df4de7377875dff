"""The reference study's headline results, as it reports them: the figures that the README's
"What reproduces" table and a study's report set beside tpdisc's own.

These are the published study's numbers and do not change with tpdisc's agents; tpdisc's
side is measured (a study's report computes it, ``docs/fidelity.json`` records the
default model's).
"""

from __future__ import annotations

from dataclasses import dataclass

# Each evolved protocol against the best standard baseline: the mean gain, in %.
BEST_GAIN_PERCENT = 33.0
# The state-agnostic ablation of the top protocols: coverage before and after, and the fall.
ABLATION_TOP = (88.0, 67.0)
ABLATION_TOP_DELTA = ABLATION_TOP[1] - ABLATION_TOP[0]
# The evolved protocols' gain over the best baseline in the other groups and games (the
# smallest and largest setting; each setting's in tpdisc.analysis.generalize.SETTINGS).
GENERALIZATION_GAINS = (12.0, 49.0)
# The same with stochastic agents, in %.
STOCHASTIC_GAIN_PERCENT = 18.0
# Random sharing: the standard baselines against asocial play (about 67), within this %.
RANDOM_SHARING_WITHIN_PERCENT = 5.0


@dataclass(frozen=True)
class Headline:
    """One headline result: its key (as ``docs/fidelity.json`` names it), what the
    reference found, and its figure."""

    key: str
    finding: str
    figure: str


HEADLINES: tuple[Headline, ...] = (
    Headline(
        "random_sharing",
        "random sharing is worth about nothing",
        f"the baselines within {RANDOM_SHARING_WITHIN_PERCENT:g} % of asocial play",
    ),
    Headline(
        "evolved_gain",
        "every evolved protocol beats every baseline",
        f"+{BEST_GAIN_PERCENT:g} % over the best baseline",
    ),
    Headline(
        "ablation",
        "with random content (the state-agnostic ablation) they fall back to asocial play",
        f"top protocols −{-ABLATION_TOP_DELTA:g} ({ABLATION_TOP[0]:g} → {ABLATION_TOP[1]:g})",
    ),
    Headline(
        "generalization",
        "the gain holds in other groups and games",
        f"+{GENERALIZATION_GAINS[0]:g} … +{GENERALIZATION_GAINS[1]:g} %",
    ),
    Headline(
        "stochastic",
        "and with stochastic agents",
        f"+{STOCHASTIC_GAIN_PERCENT:g} %",
    ),
)
