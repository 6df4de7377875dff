"""tpdisc: discover transmission protocols for groups that innovate together.

The Python API, for notebooks and scripts (each name is imported on first use, so that
``import tpdisc`` stays quick)::

    from tpdisc import EvaluationConfig, SimConfig, default_graph, evaluate_config

    config = EvaluationConfig(protocols=("asocial", "paired"), sims=10,
                              sim=SimConfig(agent_type="stochastic"))
    for evaluation in evaluate_config(config):
        print(evaluation.protocol, evaluation.mean, evaluation.sem)

Configs: :class:`SimConfig` (one simulation: agents, their parameters and prior, variant,
steps), :class:`EvaluationConfig` (``tpdisc evaluate``) and :class:`SearchConfig`
(``tpdisc evolve``); ``load_config(cls, path)`` reads any of them from YAML. Lower-level
pieces: :func:`default_graph`, :func:`make_domain`, :func:`load_protocols`,
:func:`evaluate`, :func:`evaluate_ablated`, :func:`run_simulation`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tpdisc.portable_blas import pin

# Before anything loads numpy: the prior is then built with the same kernels on every
# x86-64 machine with AVX2 (tpdisc.portable_blas).
pin()

_PUBLIC = {
    "AgentParams": "tpdisc.agents.base",
    "Domain": "tpdisc.domain.variants",
    "Evaluation": "tpdisc.sim.evaluate",
    "EvaluationConfig": "tpdisc.sim.config",
    "ExecutorConfig": "tpdisc.sim.config",
    "RecipeGraph": "tpdisc.domain.recipes",
    "SandboxConfig": "tpdisc.sandbox.config",
    "SearchConfig": "tpdisc.search.config",
    "SimConfig": "tpdisc.sim.config",
    "SimResult": "tpdisc.sim.game",
    "VariantSpec": "tpdisc.domain.variants",
    "default_graph": "tpdisc.domain.data",
    "evaluate": "tpdisc.sim.evaluate",
    "evaluate_ablated": "tpdisc.sim.evaluate",
    "evaluate_config": "tpdisc.sim.run",
    "load_config": "tpdisc.sim.run",
    "load_protocols": "tpdisc.sandbox",
    "load_recipes": "tpdisc.domain.recipes",
    "make_domain": "tpdisc.domain.variants",
    "make_executor": "tpdisc.executors.make",
    "run_simulation": "tpdisc.sim.game",
}
__all__ = [
    "AgentParams",
    "Domain",
    "Evaluation",
    "EvaluationConfig",
    "ExecutorConfig",
    "RecipeGraph",
    "SandboxConfig",
    "SearchConfig",
    "SimConfig",
    "SimResult",
    "VariantSpec",
    "__version__",
    "default_graph",
    "evaluate",
    "evaluate_ablated",
    "evaluate_config",
    "load_config",
    "load_protocols",
    "load_recipes",
    "make_domain",
    "make_executor",
    "run_simulation",
]

if TYPE_CHECKING:
    from tpdisc.agents.base import AgentParams
    from tpdisc.domain.data import default_graph
    from tpdisc.domain.recipes import RecipeGraph, load_recipes
    from tpdisc.domain.variants import Domain, VariantSpec, make_domain
    from tpdisc.executors.make import make_executor
    from tpdisc.sandbox import load_protocols
    from tpdisc.sandbox.config import SandboxConfig
    from tpdisc.search.config import SearchConfig
    from tpdisc.sim.config import EvaluationConfig, ExecutorConfig, SimConfig
    from tpdisc.sim.evaluate import Evaluation, evaluate, evaluate_ablated
    from tpdisc.sim.game import SimResult, run_simulation
    from tpdisc.sim.run import evaluate_config, load_config


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read on first use: importlib.metadata takes 10 ms to load
        from tpdisc.sim.provenance import version

        globals()[name] = value = version()
        return value
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'tpdisc' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
