"""The ``inspect`` command: a portrait page per protocol, to see what it does over a game."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from tpdisc.cli.options import (
    CONFIG_OPTIONS,
    PROTOCOL_GROUPS,
    Opt,
    RecipesOpt,
    SimsOpt,
)
from tpdisc.cli.output import (
    JsonTarget,
    err_console,
    human_console,
    json_on_stdout,
    json_option,
    progress_bar,
    user_errors,
)
from tpdisc.cli.runs import describe_run, run_references
from tpdisc.cli.settings import Options, print_yaml, with_options
from tpdisc.cli.tables import portrait_accounting_table
from tpdisc.safefiles import hold_outputs
from tpdisc.sim.config import EvaluationConfig
from tpdisc.sim.provenance import provenance

# Three games per seed (the protocol, its ablation, asocial play): fewer seeds than
# evaluate's 30 keep a look at one protocol under a minute.
INSPECT_SIMS = 5
INSPECT_OPTIONS: tuple[Opt, ...] = (
    Opt("sims", SimsOpt, "sims"),
    Opt("recipes", RecipesOpt, "recipes"),
)
INSPECT_GROUPS = (CONFIG_OPTIONS, INSPECT_OPTIONS, *PROTOCOL_GROUPS)


@user_errors
@with_options(*INSPECT_GROUPS, defaults=EvaluationConfig(sims=INSPECT_SIMS))
def inspect_cmd(
    protocols: Annotated[
        list[str],
        typer.Argument(
            help="Baseline names, protocol .py files, or a search's protocols: RUN_DIR:NAME "
            "(runs/first:i0007), or RUN_DIR for its pick (the best on fresh seeds where it "
            "re-scored any); two or more are also set side by side.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for index.html (the protocols side by side) and a folder per "
            "protocol with its page, its figures (PNG) and portrait.json. Files there are "
            "overwritten.",
        ),
    ] = Path("results/inspect"),
    json_out: Annotated[
        str | None,
        json_option(
            "every number the pages show (flow matrices as lists of rows, sender x "
            "recipient; curves per step)"
        ),
    ] = None,
    *,
    options: Options,
) -> None:
    """See protocols at work: simulate each one with its transmission log, its
    schedule-replay ablation and asocial play on the same seeds, and write a page per
    protocol: who sent to whom (early, middle, late), what was sent over the steps, the
    agents' inventories (competence against diversity), coverage beside the ablation, its
    get_logs() metrics over steps and its source."""
    from tpdisc.analysis.portrait import build_portraits
    from tpdisc.domain.data import default_graph
    from tpdisc.domain.variants import make_domain
    from tpdisc.report.portrait_pages import write_portraits
    from tpdisc.sim.run import prepare_evaluation

    arguments: dict[str, object] = {"protocols": protocols}
    if "sims" not in options.given and "sims" not in options.file_settings():
        arguments["sims"] = INSPECT_SIMS
    config = options.config(EvaluationConfig, arguments)
    target = JsonTarget.parse(json_out)
    out_console = human_console(target)
    if options["print_config"]:
        print_yaml(config)
        return
    started = datetime.now(UTC)
    sim = config.sim
    if sim.n_agents == 1:
        err_console.print("warning: with 1 agent no one shares: the flow will be empty")
    with hold_outputs(out):
        graph = default_graph(config.recipes)
        domain = make_domain(graph, sim.variant)
        resolved = run_references(config.protocols, config.trusted)
        # Before the bar: a first run builds the empowerment prior here, with its display.
        prepared = prepare_evaluation(config, domain, resolved)
        named = list(zip(prepared.names, prepared.specs, strict=True))
        with (
            config.executor.open() as pool,
            progress_bar(len(named) * config.sims, "inspecting") as advance,
        ):
            portraits = build_portraits(domain, sim, named, config.seeds, pool, advance)
        index = write_portraits(portraits, out)
    if not json_on_stdout(target):
        out_console.print(portrait_accounting_table(portraits))
    out_console.print(f"pages written to {index}", highlight=False, soft_wrap=True)
    if target is not None:
        payload = {
            "run": provenance(started),
            "config": describe_run(sim, domain, graph, config.seeds),
            "evaluation": config.to_dict(),
            "portraits": [p.to_json() for p in portraits],
        }
        target.write(payload, indent=1, say=out_console)
