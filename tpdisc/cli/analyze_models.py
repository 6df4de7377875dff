"""The ``generalize`` and ``embeddings`` analysis commands, added to an app by
:func:`register` (the ``analyze`` group calls it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tpdisc.cli.options import (
    CONFIG_OPTIONS,
    LLM_AGENT,
    PROTOCOL_GROUPS,
    Opt,
    RecipesOpt,
    SimsOpt,
)
from tpdisc.cli.output import (
    JsonTarget,
    err_console,
    holding,
    human_console,
    json_on_stdout,
    json_option,
    progress_bar,
    user_errors,
)
from tpdisc.cli.runs import run_references
from tpdisc.cli.settings import Options, print_yaml, with_options
from tpdisc.config_tree import section

__all__ = ["embeddings_cmd", "generalize_cmd", "register"]


def register(app: typer.Typer) -> None:
    """Add ``generalize`` and ``embeddings`` to ``app``."""
    app.command("generalize")(generalize_cmd)
    app.command("embeddings")(embeddings_cmd)


# --- generalize --------------------------------------------------------------------------------

GeneralizeProtocolsArg = Annotated[
    list[str],
    typer.Argument(
        help="The evolved protocols: .py files, or a search's protocols: RUN_DIR:NAME "
        "(runs/first:i0007), or RUN_DIR for its pick (the best on fresh seeds where it "
        "re-scored any). Run sandboxed unless --trusted.",
        show_default=False,
    ),
]
BaselinesOpt = Annotated[
    str,
    typer.Option(
        "--baselines",
        help="Baselines to beat: standard (asocial, paired, dynamic, graph, stochastic), "
        "extended, all, or names separated by commas.",
    ),
]
SettingsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--settings",
        help="Settings to run (repeat the option or separate by commas): 6-agents, 20-agents, "
        "stochastic, llm, mixed, beta-half, p-social-0.9, depth-limited, 3-item, "
        "heterogeneous, dropout. Default: all; llm only with --llm-base-url and --llm-model.",
        show_default=False,
    ),
]
GeneralizePlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Save generalization.png here (bars: mean ± sem per setting).",
        show_default=False,
    ),
]
GENERALIZE_OPTIONS: tuple[Opt, ...] = (
    Opt("sims", SimsOpt, "sims"),
    Opt("recipes", RecipesOpt, "recipes"),
)


def _defaults() -> Any:
    from tpdisc.sim.config import EvaluationConfig

    return EvaluationConfig()


@user_errors
@with_options(
    CONFIG_OPTIONS,
    GENERALIZE_OPTIONS,
    *PROTOCOL_GROUPS,
    defaults=_defaults(),
)
@holding("plot")
def generalize_cmd(
    protocols: GeneralizeProtocolsArg,
    baselines: BaselinesOpt = "standard",
    settings: SettingsOpt = None,
    json_out: Annotated[
        str | None,
        json_option("every setting's protocols and baselines, with the study's gains"),
    ] = None,
    plot: GeneralizePlotOpt = None,
    *,
    options: Options,
) -> None:
    """Generalization: the evolved protocols against the best baseline in each of 11
    settings (population size, agent models, agent parameters, domain variants), each
    relative to the simulation the options describe; one-sided Welch tests."""
    from tpdisc.agents.llm.config import LLMAgentConfig
    from tpdisc.analysis.generalize import (
        generalization_figure,
        generalize,
        resolve_baselines,
        runnable,
        select_settings,
    )
    from tpdisc.domain.data import default_graph
    from tpdisc.sim.config import EvaluationConfig

    base = options.config(EvaluationConfig)
    target = JsonTarget.parse(json_out)
    if options["print_config"]:
        print_yaml(base)
        return
    # The base simulation drops the LLM agents' settings (its agents do not read them):
    # the llm setting takes them from the options directly.
    llm_data = _llm_settings(options)
    llm = LLMAgentConfig.from_dict(llm_data, "llm agents") if llm_data else None
    chosen = select_settings(settings)
    names = resolve_baselines(baselines)
    active, skipped = runnable(chosen, llm)
    for name, why in skipped:
        err_console.print(f"skipping setting {name}: {why}", highlight=False)
    graph = default_graph(base.recipes)
    resolved = run_references(tuple(protocols), base.trusted)
    total = len(active) * (len(protocols) + len(names)) * base.sims
    with progress_bar(total, "generalizing") as advance, base.executor.open() as pool:
        study = generalize(
            protocols,
            names,
            chosen,
            base,
            graph,
            pool,
            llm=llm,
            on_simulation=lambda setting, name: advance(f"{setting}: {name}"),
            resolved=resolved,
        )
    out = human_console(target)
    if not json_on_stdout(target):
        out.print(_generalization_table(study))
    if target is not None:
        target.write(study.to_json(), say=out)
    if plot and study.results:
        path = generalization_figure(study, plot / "generalization.png")
        out.print(f"figure saved to {path}")


def _llm_settings(options: Options) -> dict[str, Any]:
    """The LLM agents' settings of the ``--config`` file and the options, as a mapping."""
    return dict(section(options.settings(), LLM_AGENT) or {})


def _generalization_table(study: Any) -> Table:
    from tpdisc.analysis.stats import stars

    table = Table(
        title=f"Generalization ({study.sims} sims per protocol and setting)",
        caption="evolved: mean over the given protocols ± sem over their pooled simulations; "
        "p: one-sided Welch t-test, evolved > best baseline (simulations pooled); p (N): the "
        "protocol as the unit, one-sample t-test of the protocols' means; reach.: elements "
        "the setting's game lets the group reach. The study's gains are in the --json output.",
    )
    table.add_column("setting", no_wrap=True)
    for header in ("reach.", "evolved", "best baseline", "its mean", "gain", "p", "p (N)"):
        # numbers stay whole on narrow terminals; baseline names give way
        table.add_column(header, justify="right", no_wrap=header != "best baseline")
    for r in study.results:
        best = r.best_baseline
        table.add_row(
            r.name,
            str(r.reachable),
            f"{r.evolved_mean:.1f} ± {r.evolved_sem:.1f}",
            best.protocol,
            f"{best.mean:.1f} ± {best.sem:.1f}",
            f"{r.improvement:+.1f}%",
            f"{r.p:.2g} {stars(r.p)}".strip(),
            f"{r.p_protocols:.2g} {stars(r.p_protocols)}".strip(),
        )
    return table


# --- embeddings --------------------------------------------------------------------------------

RunDirsArg = Annotated[
    list[Path],
    typer.Argument(help="Run directories of 'tpdisc evolve' (archive.sqlite).", show_default=False),
]
BackendOpt = Annotated[
    str,
    typer.Option(
        "--backend",
        help="Code embedding: tfidf (TF-IDF over Python tokens reduced by SVD; offline) or "
        "minilm (all-MiniLM-L6-v2; needs pip install 'tpdisc[sentence]').",
    ),
]
EmbeddingsPlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Save embedding_map.png (t-SNE), mmd_runs.png and mmd_kinds.png here.",
        show_default=False,
    ),
]
MapSeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Seed of the t-SNE map.")]


@user_errors
@holding("plot")
def embeddings_cmd(
    run_dirs: RunDirsArg,
    backend: BackendOpt = "tfidf",
    json_out: Annotated[
        str | None, json_option("every protocol's map position and the MMD² matrices")
    ] = None,
    plot: EmbeddingsPlotOpt = None,
    seed: MapSeedOpt = 0,
) -> None:
    """Code embeddings: every valid protocol of the runs embedded, mapped by t-SNE, and
    MMD² (cosine kernel) between every pair of runs and of kinds (evolved, generated,
    warm-up)."""
    from tpdisc.analysis.embeddings import (
        embed_runs,
        embedding_map_figure,
        make_backend,
        mmd_figure,
    )

    target = JsonTarget.parse(json_out)
    out = human_console(target)
    study = embed_runs(run_dirs, make_backend(backend), seed)
    table = Table(title=f"MMD² between runs ({study.backend} embedding, cosine kernel)")
    table.add_column("run")
    table.add_column("protocols", justify="right")
    for run in study.runs:
        table.add_column(run, justify="right")
    for i, run in enumerate(study.runs):
        count = sum(p.run == run for p in study.protocols)
        table.add_row(run, str(count), *(f"{v:.4f}" for v in study.mmd[i]))
    if not json_on_stdout(target):
        out.print(table)
    if target is not None:
        target.write(study.to_json(), say=out)
    if plot:
        paths = [embedding_map_figure(study, plot / "embedding_map.png")]
        paths.append(mmd_figure(study.mmd, study.runs, plot / "mmd_runs.png", "between runs"))
        if len(study.kinds) > 1:
            paths.append(
                mmd_figure(study.mmd_kinds, study.kinds, plot / "mmd_kinds.png", "between kinds")
            )
        for path in paths:
            out.print(f"figure saved to {path}")
