"""The stages of a study that analyse the runs' protocols: the matched ablation, the
behavioural features, volume and code embeddings.

They re-simulate through :mod:`tpdisc.analysis`, which stores each protocol's results in
its run's archive as soon as they are in: a killed stage resumes protocol by protocol.
What the searches recorded of their own simulations is not run again (only the replays of
the ablated condition are): the stage log counts it apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from tpdisc.analysis.ablation import COMPARE_SEEDS, ablation_figure, ablation_study
from tpdisc.analysis.embeddings import embed_runs, embedding_map_figure, make_backend, mmd_figure
from tpdisc.analysis.feature_study import feature_figure, feature_study, missing_features
from tpdisc.analysis.simulate import Run, load_run
from tpdisc.analysis.volume import volume_figure, volume_study
from tpdisc.study.context import StudyContext
from tpdisc.study.layout import RunRef


def _open(ctx: StudyContext, refs: list[RunRef]) -> list[Run]:
    return [load_run(ref.path, graph=ctx.graph) for ref in refs]


def _labelled(ctx: StudyContext, data: Any) -> Any:
    """``data`` with run folders written as the runs' labels (``evolve-1``), which is how
    the report and the exports name runs."""
    names = {str(ref.path): ref.label for ref in ctx.runs}
    if isinstance(data, dict):
        return {names.get(k, k): _labelled(ctx, v) for k, v in data.items()}
    if isinstance(data, list):
        return [_labelled(ctx, v) for v in data]
    if isinstance(data, str):
        for path, label in names.items():
            data = data.replace(path, label)
    return data


@contextmanager
def _late_progress(
    ctx: StudyContext, description: str
) -> Iterator[tuple[Callable[[int], None], Callable[[str], None]]]:
    """``(start, advance)``: the bar opens once the analysis knows how many simulations
    its runs' stores lack."""
    with ExitStack() as stack:
        bar: list[Callable[[str], None]] = []

        def start(total: int) -> None:
            bar.append(stack.enter_context(ctx.ui.progress(total, description)))

        def advance(label: str) -> None:
            if bar:
                bar[0](label)

        yield start, advance


def ablation_stage(ctx: StudyContext) -> dict[str, Any]:
    stage = ctx.config.ablation
    runs = _open(ctx, ctx.runs_of(stage.runs))
    with _late_progress(ctx, "ablation") as (start, advance):
        result = ablation_study(
            runs,
            ctx.executor,
            top=stage.top,
            bottom=stage.bottom,
            compare_seeds=COMPARE_SEEDS[: stage.sims],
            on_start=start,
            on_simulation=advance,
            on_recorded=ctx.ui.reuse,
        )
    ablation_figure(result, ctx.folder.figure("ablation.png"))
    return dict(_labelled(ctx, result.to_json()))


def features_stage(ctx: StudyContext) -> dict[str, Any]:
    stage = ctx.config.features
    runs = _open(ctx, ctx.runs_of(stage.runs))
    total = sum(len(seeds) for seeds in missing_features(runs, stage.sims).values())
    with ctx.ui.progress(total, "features") as advance:
        study = feature_study(
            runs, ctx.executor, n_sims=stage.sims, on_simulation=advance, on_recorded=ctx.ui.reuse
        )
    feature_figure(study, ctx.folder.figure("features.png"))
    return dict(_labelled(ctx, study.to_json()))


def volume_stage(ctx: StudyContext) -> dict[str, Any]:
    stage = ctx.config.volume
    runs = _open(ctx, ctx.runs_of(stage.runs))
    with _late_progress(ctx, "volume") as (start, advance):
        result = volume_study(
            runs,
            ctx.executor,
            n_sims=stage.sims,
            on_start=start,
            on_simulation=advance,
            on_recorded=ctx.ui.reuse,
        )
    volume_figure(result, ctx.folder.figure("volume.png"))
    return dict(_labelled(ctx, result.to_json()))


def embeddings_stage(ctx: StudyContext) -> dict[str, Any]:
    stage = ctx.config.embeddings
    refs = ctx.runs_of(stage.runs)
    study = embed_runs([ref.path for ref in refs], make_backend(stage.backend), stage.seed)
    figure = ctx.folder.figure
    embedding_map_figure(study, figure("embedding_map.png"))
    mmd_figure(study.mmd, study.runs, figure("mmd_runs.png"), "between runs")
    if len(study.kinds) > 1:
        mmd_figure(study.mmd_kinds, study.kinds, figure("mmd_kinds.png"), "between kinds")
    return dict(study.to_json())
