"""``tpdisc study``: the whole study from one YAML file — baselines, searches, the best
protocols over a long horizon, the analyses, exports and a browsable report — every stage
resumable."""
