"""Empowerment agents (after Brändle et al. 2023): the model's parameter section
(:mod:`.model`), the agent (:mod:`.agent`), its options and softmax (:mod:`.options`),
the tables it reads (:mod:`.tables`), the compiled kernels (:mod:`.kernels`) and the
offline prior they come from (:mod:`.prior`).

Kept free of imports: :class:`~tpdisc.agents.base.AgentParams` reads the model section
from here without loading numpy's share of the agent.
"""
