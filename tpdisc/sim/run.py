"""An evaluation from its config alone: what ``tpdisc evaluate`` does, for Python callers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tpdisc.config_tree import decode, read_yaml
from tpdisc.domain.data import default_graph
from tpdisc.domain.variants import Domain, make_domain
from tpdisc.executors.base import Executor
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.protocols.resolve import unique_names
from tpdisc.sandbox import load_protocols
from tpdisc.sim.config import EvaluationConfig, anchor_protocols
from tpdisc.sim.evaluate import Evaluation, evaluate, evaluate_ablated, prepare_simulation

T = TypeVar("T")
# Called with the protocol's (unique) name and each simulation's result as it arrives: a
# SimResult, or (protocol's, ablation's) with ``config.ablate``.
OnResult = Callable[[str, Any], None]


def load_config(cls: type[T], path: str | Path) -> T:
    """A config tree (``EvaluationConfig``, ``SearchConfig``, ``SimConfig``…) from YAML;
    relative protocol paths in it are relative to the file's folder."""
    return decode(cls, anchor_protocols(read_yaml(path), Path(path).parent), str(path))


@dataclass(frozen=True)
class PreparedEvaluation:
    """An evaluation whose protocols are loaded and whose agents' models are built (a first
    run builds the empowerment prior), ready to simulate."""

    config: EvaluationConfig
    domain: Domain
    specs: tuple[ProtocolSpec, ...]
    names: tuple[str, ...]  # unique display names, in the order of ``config.protocols``

    @property
    def n_simulations(self) -> int:
        return len(self.specs) * self.config.sims

    def run(
        self,
        executor: Executor,
        on_result: OnResult | None = None,
        record_log: bool = False,
        log_dir: Path | None = None,
    ) -> list[Evaluation]:
        """One :class:`Evaluation` per protocol (and one per ablation), in order; with
        ``log_dir``, each simulation streams its transmission log there as
        NAME[-ablated]-seedN.parquet (NAME the protocol's unique name)."""
        run = evaluate_ablated if self.config.ablate else evaluate
        evaluations: list[Evaluation] = []
        for spec, name in zip(self.specs, self.names, strict=True):

            def tell(result: Any, name: str = name) -> None:
                if on_result is not None:
                    on_result(name, result)

            done = run(
                self.domain,
                self.config.sim,
                spec,
                self.config.seeds,
                executor=executor,
                on_result=tell,
                record_log=record_log,
                log_to=None if log_dir is None else log_dir / name,
            )
            for evaluation in done if isinstance(done, tuple) else (done,):
                evaluation.protocol = evaluation.protocol.replace(spec.name, name, 1)
                evaluations.append(evaluation)
        return evaluations


def prepare_evaluation(
    config: EvaluationConfig,
    domain: Domain | None = None,
    resolved: Mapping[str, ProtocolSpec] | None = None,
) -> PreparedEvaluation:
    """Load ``config``'s protocols (files sandboxed unless ``config.trusted``) and build its
    agents' models; ``domain`` defaults to the config's recipes and variant. ``resolved``:
    protocols a layer above found for some of the texts (a search's, by run)."""
    if domain is None:
        domain = make_domain(default_graph(config.recipes), config.sim.variant)
    specs = load_protocols(
        list(config.protocols), trusted=config.trusted, sandbox=config.sandbox, resolved=resolved
    )
    prepare_simulation(domain, config.sim)
    return PreparedEvaluation(config, domain, tuple(specs), tuple(unique_names(specs)))


def evaluate_config(
    config: EvaluationConfig, on_result: OnResult | None = None
) -> list[Evaluation]:
    """Every protocol of ``config`` (and its ablation, with ``config.ablate``) over its
    seeds, on its executor: one :class:`Evaluation` per protocol, in order."""
    prepared = prepare_evaluation(config)
    with config.executor.open() as pool:
        return prepared.run(pool, on_result)
