"""The empowerment agents' offline prior: cross-validated P(success) and P(result) per pair.

See ``docs/prior.md`` for the procedure (after Brändle et al. 2023) and its measured
quality per element-vector backend.
"""

from tpdisc.agents.empowerment.prior.build import Prior, PriorSettings, build_prior
from tpdisc.agents.empowerment.prior.store import ensure_prior, load_prior, prior_key
from tpdisc.agents.empowerment.prior.vectors import backend_from_spec

__all__ = [
    "Prior",
    "PriorSettings",
    "backend_from_spec",
    "build_prior",
    "ensure_prior",
    "load_prior",
    "prior_key",
]
